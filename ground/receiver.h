/* SPDX-License-Identifier: MIT */
/*
 * receiver.h - the ground station's receiver as `railmon recv` runs it
 * (ground/receiver.c): the database and its gap repair, the text output,
 * the ground logs and the refused Batches wired to uplink's MQTT receiver,
 * its thread, the wait until stop, --count or --duration, and the end.
 * It prints nothing: the steps that fail are named (enum
 * grd_receiver_step), and what there is to say comes out as plain counters
 * (struct grd_receiver_stats, struct grd_receiver_log) that cli/recv-say.h
 * puts in words.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ground.h"

/* What recv's command line gives; strings must outlive the receiver. */
struct grd_receiver_cfg {
	struct upl_recv_cfg recv; /* broker, session, TLS, topic; the callbacks and
	                             ctx are set by grd_receiver_setup() */
	size_t max_vehicles;      /* the ledger's; 0 = GRD_LEDGER_MAX_VEHICLES_DEFAULT */
	const char *db_url;       /* NULL: no database */
	double repair_after;      /* gap repair's grace period, s; 0 = off */
	const char *share;        /* shared subscription's group, or NULL */
	FILE *out;                /* the records as text, unless output */
	const char *output;       /* a file for the records instead of out, or NULL */
	bool text;                /* records as text in fmt */
	enum rec_format fmt;
	int64_t window_ns;        /* the time order's window; < 0: as they come (--order seq) */
	const char *logdir;       /* a ground log per (vehicle, log id) below it, or NULL */
	const char *keep_dir;     /* refused Batches; NULL: logdir/refused or ./railmon-refused */
	uint64_t keep_budget;     /* bytes of refused Batches kept per run; 0 = GRD_KEEP_BYTES_DEFAULT */
	struct grd_db_cfg limits; /* the database's door: max_age_ns, max_skew_ns, max_channels,
	                             max_configs_day (0: the defaults); url and stop are set here */
	grd_note_fn on_note;      /* refusals and continuations, to be said */
	void *note_ctx;
	volatile sig_atomic_t *stop; /* required: set -> the wait ends, a commit gives up */
};

/* The step grd_receiver_setup() failed in. */
enum grd_receiver_step {
	GRD_RECEIVER_OK = 0,
	GRD_RECEIVER_DB,          /* the database handle (-ENOTSUP: not built, -ENOMEM) */
	GRD_RECEIVER_DB_CHECK,    /* the schema (grd_db_check(): -ENOENT, -ESTALE, -EPROTO...) */
	GRD_RECEIVER_REPAIR_DB,   /* gap repair's own connection (-ENOMEM) */
	GRD_RECEIVER_OUTPUT,      /* opening cfg->output (-errno) */
	GRD_RECEIVER_TEXT,        /* the text output (-ENOMEM) */
	GRD_RECEIVER_LOGDIR,      /* creating cfg->logdir (-errno) */
	GRD_RECEIVER_MQTT,        /* upl_recv_new() (-EINVAL, -ENOMEM) */
	GRD_RECEIVER_STEP_MAX
};

/* What the last connection attempt or session failed with, as recv tells them apart. */
enum grd_receiver_fail {
	GRD_RECEIVER_FAIL_NONE = 0,
	GRD_RECEIVER_FAIL_RESOLVE, /* the broker's host name */
	GRD_RECEIVER_FAIL_LOST,   /* an established session dropped */
	GRD_RECEIVER_FAIL_TLS,    /* the TLS handshake or certificate check */
	GRD_RECEIVER_FAIL_OTHER,  /* connect, CONNACK, subscription, timeout */
	GRD_RECEIVER_FAIL_MAX
};

#define GRD_RECEIVER_MAX_DIGESTS GRD_LEDGER_MAX_DIGESTS /* Batch contents compared per log */
#define GRD_RECEIVER_MAX_RANGES GRD_LEDGER_MAX_RANGES /* seq ranges remembered per log */

/* The receiver's counters (struct upl_recv_stats' and grd_ledger_stats' meaning); refused[] is
   indexed by enum grd_why GRD_CONFLICT .. GRD_NO_MEMORY. */
struct grd_receiver_stats {
	uint64_t messages, records, duplicates, missing, bad, vehicles, logs;
	uint64_t on_board;     /* seqs vehicles sent reduced: in their logs, not here */
	uint64_t unverified, old;
	uint64_t refused[GRD_LATE];
	uint64_t conflict_records, sink_errors;
	uint64_t connects, connect_failures, disconnects;
	enum grd_receiver_fail fail;
	char fail_text[sizeof(((struct upl_recv_stats *)0)->fail_text)];
	bool subscribed;
};

/* One (vehicle, log id) the receiver saw (struct grd_ledger_log's meaning). */
struct grd_receiver_log {
	const char *vehicle;      /* valid until grd_receiver_free() */
	char log_id[2 * REC_LOG_ID_LEN + 1]; /* hex, "" for none */
	uint64_t first_seq, next_seq, missing, duplicates, conflicts;
	uint64_t on_board;     /* seqs sent reduced: in the vehicle's log, not here */
	const struct grd_log *ground; /* its ground log's state, or NULL */
};

typedef struct grd_receiver grd_receiver_t;

/* Gap repair's schedule for a grace period of after_s seconds (0 <
   after_s <= BASIC_SECONDS_MAX): *ret_grace_s the whole seconds the
   database query takes (at least 1), *ret_period_ns the time between
   passes, half the grace (at least 1 s).  0, or -EINVAL out of range. */
int grd_receiver_repair_period(double after_s, unsigned *ret_grace_s, int64_t *ret_period_ns);

/* Copy cfg and allocate; nothing is opened yet.  0, -EINVAL (no stop
   flag, or repair_after neither 0 nor what grd_receiver_repair_period()
   takes), -ENOMEM. */
int grd_receiver_new(const struct grd_receiver_cfg *cfg, grd_receiver_t **ret_rc);

/*
 * Open what cfg asks for, in this order: the database (its schema checked;
 * one that cannot be reached now is waited for when the first Batch comes:
 * grd_receiver_db_waiting()), gap repair's connection and the "gone"
 * subscription, the output, the text output (the format's header
 * written), the log directory, the MQTT receiver.  0, or the -errno of
 * the step grd_receiver_failed() names; free the receiver then.
 */
int grd_receiver_setup(grd_receiver_t *rc);
enum grd_receiver_step grd_receiver_failed(const grd_receiver_t *rc);

/* The database's check failed in a way that is waited out (-ECONNREFUSED,
   -EIO): true once grd_receiver_setup() has seen it. */
bool grd_receiver_db_waiting(const grd_receiver_t *rc);

/* The ground station's state (its database, ground logs, counters). */
const struct grd *grd_receiver_grd(const grd_receiver_t *rc);

/* Start the MQTT thread (after grd_receiver_setup()).  0 or -errno. */
int grd_receiver_start(grd_receiver_t *rc);

/*
 * Until *stop, count new records (0: no limit), duration_s (0: none) or
 * the MQTT thread's end, connected or not; gap repair every half grace
 * period.  on_pass (optional) is called about every 100 ms with the
 * counters, or NULL while a Batch is being committed (the counters are
 * busy).  *ret_last: the counters at the end.  1 if it ever got
 * connected, else 0.
 */
typedef void (*grd_receiver_pass_fn)(void *ctx, const struct grd_receiver_stats *st);
int grd_receiver_wait(grd_receiver_t *rc, uint64_t count, double duration_s, grd_receiver_pass_fn on_pass,
                      void *ctx, struct grd_receiver_stats *ret_last);

/* Set *stop (a commit waiting for the database gives up), stop the MQTT
   thread and join it: its upl_recv_run() result (< 0: it could not set
   up the client). */
int grd_receiver_stop(grd_receiver_t *rc);

/*
 * After grd_receiver_stop(): the last database group (one try, else
 * counted as not committed), what the text output still holds, the
 * output flushed.  *ret_late: records that came out later than the
 * window.  0 or the first write error of the text output.
 */
int grd_receiver_finish(grd_receiver_t *rc, uint64_t *ret_late);

/* The counters now (waits for a commit in progress). */
void grd_receiver_stats(grd_receiver_t *rc, struct grd_receiver_stats *ret_stats);

/* The i-th (vehicle, log id): 0, or -ENOENT past the last. */
int grd_receiver_log(grd_receiver_t *rc, size_t i, struct grd_receiver_log *ret_log);

/* Whether gap repair runs (it has its connection), and the ranges asked
   for again so far. */
bool grd_receiver_repairs(const grd_receiver_t *rc, uint64_t *ret_asked);

/* Close (sync) the ground logs, the database and the output; NULL is fine.
   Returns NULL. */
grd_receiver_t *grd_receiver_free(grd_receiver_t *rc);
