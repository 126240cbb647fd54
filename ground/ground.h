/* SPDX-License-Identifier: MIT */
/*
 * ground.h - libground (prefix grd_), the ground station behind `railmon
 * recv`: the per-log state recv's callbacks share (its pointer is recv's
 * log_ctx), the records as text (ground/recv-text.c), a railmon log per
 * (vehicle, log id) and refused Batches kept as files (ground/logs.c).
 * The database is ground/db.h.  Nothing here prints: what cli/ should
 * say comes to on_note.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record/channels.h"
#include "record/format.h"
#include "storage/stor.h"
#include "uplink/recv.h"
#include "db.h"
#include "ledger.h"

#define GRD_KEEP_BYTES_DEFAULT (UINT64_C(64) << 20) /* refused Batches kept per run, bytes */

/* Why a Batch is not in a ground log (its records may still be in the
   text output), or was refused by the receiver. */
enum grd_why {
	GRD_CONFLICT = 0,    /* = GRD_LEDGER_CONFLICT ... GRD_LEDGER_BAD_VEHICLE */
	GRD_SEQ_JUMP,
	GRD_TOO_MANY_VEHICLES,
	GRD_NO_MEMORY,
	GRD_BAD_VEHICLE,     /* a vehicle name against the rule (basic/name.h) */
	GRD_LATE,            /* behind the ground log's end, over a hole: it only appends */
	GRD_DIFFERS,         /* the ground log holds other records for these seqs */
	GRD_TOO_BIG,         /* over the log's 1 MiB frame limit */
	GRD_BAD_NAME,        /* a vehicle id that cannot be a directory name */
	GRD_LOG_ERROR,       /* the ground log could not open or append (errno printed) */
	GRD_TIME,            /* record times outside the window (max_age_ns, max_skew_ns) */
	GRD_JUMP_DB,         /* a seq jump from what recv remembers, left to the database's
	                        ledger: not in the ground log or the text output */
	GRD_WHY_MAX,
	GRD_HAS_IT = GRD_WHY_MAX, /* not a refusal: the ground log holds these records already */
	GRD_CONTINUED,       /* not a refusal: a new ground log after a gap of over 2^32 */
	GRD_ANSWER,          /* not a refusal: records the ground log lacks over a range it holds,
	                        those it holds the same (a request's answer, whole or naming
	                        channels), for its answers log */
	GRD_NOTE_MAX
};

/* What cli/ may say: a refusal (why < GRD_WHY_MAX) or GRD_CONTINUED. */
struct grd_note {
	enum grd_why why;
	const struct rec_batch_info *info;
	const char *kept;         /* the file the Batch was kept in, or NULL */
	int err;                  /* -errno behind it, or 0 */
	const char *dir;          /* GRD_CONTINUED: the new ground log */
	uint64_t nth;             /* how many of this reason so far, this one included */
	bool db;                  /* recv --db: the Batch is not in the database either */
	size_t cut;               /* bytes of it left out of the kept file (its first
	                             GRD_KEEP_FILE_MAX kept), 0: kept whole */
	size_t len;               /* its size as received */
};

typedef void (*grd_note_fn)(void *ctx, const struct grd_note *note);

/* One (vehicle, log id): its channel names for the text output, its
   ground log with --log. */
struct grd_log {
	rec_channels_t *names;    /* what its dictionaries say; NULL until a record is written */
	uint64_t names_gen;       /* the retained dictionary names has taken (recv-text.c) */
	size_t text_idx;          /* recv-text.c: 1 + its index in the text output's logs, 0: none yet */
	char dir[PATH_MAX];
	stor_log_t *log;          /* NULL: not open (yet, or closed for file descriptors) */
	stor_log_t *answers;      /* dir/answers.<answers_n>: Batches with records the log
	                             lacks over ranges it holds (logs.c); NULL: not open */
	unsigned answers_n;       /* the newest answers log's n; 0: not looked for yet */
	bool unusable;            /* bad vehicle id: every Batch is refused */
	int64_t used_ns;
	uint64_t stored, not_stored; /* Batches */
};

struct grd {
	FILE *out;                /* the records as text, in fmt (with --format other than none) */
	enum rec_format fmt;
	struct grd_text *text;    /* recv-text.c's: a Batch's records put in time order */
	const char *dir;          /* one log per (vehicle, log id) below it; NULL: none */
	const char *keep_dir;     /* refused Batches go here */
	struct grd_log **logs; /* every ground log, to close them */
	size_t nlogs, cap;
	uint64_t appended, had;   /* Batches stored; found stored already */
	uint64_t answered;        /* of appended: Batches into answers logs */
	uint64_t refused[GRD_WHY_MAX];
	uint64_t kept, keep_failed;
	uint64_t kept_bytes;      /* written to keep_dir this run */
	uint64_t keep_budget;     /* bytes kept at most per run; 0 = GRD_KEEP_BYTES_DEFAULT */
	uint64_t keep_over;       /* refused Batches not kept: past the budget or GRD_KEEP_MAX files */
	int64_t max_age_ns, max_skew_ns; /* a ground log's record time window (the database's
	                             --max-age, --max-skew); both 0: none, one 0: its
	                             database default (GRD_DB_MAX_AGE_NS, GRD_DB_MAX_SKEW_NS) */
	grd_db_t *db;             /* with recv --db: every Batch committed before it is acknowledged */
	uint64_t gone, gone_bad;  /* "gone" ranges recorded; answers malformed or not recorded */
	uint64_t gone_unasked;    /* of gone_bad: ranges no receiver asked that vehicle for */
	uint64_t dict_refused;    /* retained dictionaries the database refused for good */
	uint64_t status_seen, status_bad, status_lost; /* status messages recorded (or kept to
	                             retry); malformed; lost (the retry table was full) */
	uint64_t status_unknown;  /* states of names no Batch brought, lost (status.c keeps
	                             the last 256 until their vehicle appears) */
	struct grd_status *status; /* states the database could not take yet (status.c) */
	uint64_t config_status_seen, config_status_bad, config_status_lost; /* remote
	                             configuration outcomes taken; refused (malformed,
	                             over 4096 bytes, not UTF-8); lost (no memory, or
	                             pushed out of the waiting table) */
	struct grd_config_status *config_status; /* outcomes waiting (config-status.c) */
	grd_note_fn on_note;      /* optional: refusals and continuations, to be said */
	void *note_ctx;
};

/* A reason in plain words, and as the short word of a kept file's name. */
const char *grd_why_text(enum grd_why why);
const char *grd_why_name(enum grd_why why);

/* g->text for g->out and g->fmt (before grd_text_record).  window_ns >= 0:
   each vehicle log's records in time order, merged over that window
   (record/order.h; a log's records wait until it has a record a window
   newer, or has been quiet a window: grd_text_tick()); < 0: as they come,
   each Batch in seq order.  0 or -ENOMEM. */
int grd_text_new(struct grd *g, int64_t window_ns);

/* recv's on_record (ctx: struct grd): the records of each Batch as text
   in g->fmt to g->out, in the order grd_text_new() chose, named by its log's
   dictionaries (or its vehicle's retained one), with its vehicle and log. */
int grd_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                    const struct acq_item *it, bool first, void **log_ctx);

/* recv's on_channels (ctx: struct grd): keep the vehicle's latest
   retained dictionary (railmon/<vehicle>/channels). */
void grd_text_channels(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b);

/* Write what is still held (the end of recv).
   0 or the first error of rec_format_item(). */
int grd_text_drain(struct grd *g);

/* recv's on_tick (ctx: struct grd): write what the logs quiet for a
   window hold. */
void grd_text_tick(void *ctx);

/* Records that came out of time order: more than the window behind their
   log's records already written (or the records held reached the bound). */
uint64_t grd_text_late(const struct grd *g);

/* Free g->text (NULL is fine) and set it NULL. */
void grd_text_free(struct grd *g);

/* The state of the Batch's log (recv's per-log pointer *log_ctx), made
   the first time: NULL if out of memory. */
struct grd_log *grd_log_get(struct grd *g, const struct rec_batch_info *info, void **log_ctx);

/* A Batch with new records (b as the receiver decoded it) into its
   ground log (ground/logs.c); what the log cannot take is kept, counted
   and said. */
int grd_append(struct grd *g, const struct rec_batch_info *info, const rec_batch_t *b, const void *payload,
               size_t len, void **log_ctx);

/* Count a refused Batch, keep it as a file (ground/logs.c, within the
   run's budget) and hand it to on_note. */
void grd_refuse(struct grd *g, enum grd_why why, const struct rec_batch_info *info, const void *payload,
                size_t len, int err);

/*
 * recv's on_batch (ctx: struct grd; ground/dispatch.c): append the Batch
 * to its ground log if g->dir, then hand the decoded Batch (*b taken) to
 * the database's group (grd_db_store_batch(): a full group waits through
 * an outage, so the receiver reads and acknowledges nothing more
 * meanwhile).
 */
int grd_batch(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *payload, size_t len,
              void **log_ctx);

/* recv's on_jump with a database (ctx: struct grd): a Batch far from its
   log as the receiver remembers it goes to the database, whose ledger
   decides (a seq jump against the committed Batches is refused there);
   neither in a ground log nor in the text output, it is kept in the
   refused directory and counted (GRD_JUMP_DB), as without a database. */
int grd_jump(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *payload, size_t len,
             void **log_ctx);

/* recv's on_channels (ctx: struct grd): the retained dictionary into the
   text output's names (g->text) and the database's configs (g->db). */
void grd_channels(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b);

/* recv's on_idle (ctx: struct grd): commit the database's group once it
   is older than its time bound (grd_db_flush()). */
void grd_idle(void *ctx);

/* recv's on_status for railmon/+/status (ctx: struct grd): the vehicle's
   "online" or "offline" into the database's vehicle_status; a state the
   database cannot take now is kept (at most GRD_STATUS_PENDING_MAX
   vehicles) and written by grd_status_retry(). */
#define GRD_STATUS_PENDING_MAX 1024
void grd_on_status(void *ctx, const char *topic, const void *payload, size_t len);
/* Write the kept states (from grd_idle). */
void grd_status_retry(struct grd *g);
/* States of vehicles the database does not have (yet): lost, or still
   waiting for the vehicle's first Batch. */
uint64_t grd_status_unknown(const struct grd *g);
/* Free the kept states (from grd_free). */
void grd_status_free(struct grd *g);

/* Parse the payload (untrusted): a JSON object of exactly the members
   version (a whole number), outcome (one of the three) and why (a string),
   in any order; at most GRD_CONFIG_STATUS_MAX bytes of UTF-8.  0 and
   *ret_msg, or -EINVAL (NULL), -EMSGSIZE (too long), -EILSEQ (not UTF-8),
   -ERANGE (version over INT64_MAX), -EBADMSG (anything else). */
int grd_config_status_parse(const void *payload, size_t len, struct grd_config_status_msg *ret_msg);

/* recv's on_config_status for railmon/+/config/status (ctx: struct grd,
   with a database): the outcome into vehicle_config_status, the vehicle
   the topic's; one the database cannot take now (or of a vehicle it has
   no Batch of yet) waits, the newest per vehicle, for
   grd_config_status_retry() (from grd_idle). */
void grd_on_config_status(void *ctx, const char *topic, const void *payload, size_t len);
void grd_config_status_retry(struct grd *g);
/* Outcomes still waiting. */
uint64_t grd_config_status_waiting(const struct grd *g);
/* Free them (from grd_free). */
void grd_config_status_free(struct grd *g);

/* recv's on_aux for railmon/+/gone (ctx: struct grd): record each range
   the vehicle says it no longer holds (grd_db_gone()). */
void grd_on_gone(void *ctx, const char *topic, const void *payload, size_t len);

/*
 * One pass of gap repair: the holes older than grace_s (at most
 * GRD_REPAIR_MAX, oldest first) asked for again, on
 * railmon/<vehicle>/resend through r.  *ret_asked: ranges asked.  0,
 * -ENOBUFS (r's queue was full: the rest next pass), or grd_db_holes()'s
 * error.
 */
#define GRD_REPAIR_MAX 512
int grd_repair_pass(grd_db_t *db, upl_recv_t *r, unsigned grace_s, uint64_t *ret_asked);

/* recv's on_refused (ctx: struct grd): keep, count and say it; a conflict
   goes to the database's conflicts too. */
void grd_refused(void *ctx, enum grd_ledger_refusal why, const struct rec_batch_info *info, rec_batch_t **b,
                 const void *payload, size_t len);

/* Close (sync) every ground log and free the per-log state (not g->text:
   grd_text_free()). */
void grd_free(struct grd *g);

/* A log id in lower-case hex, "" for none. */
void grd_log_id_hex(const uint8_t *id, size_t len, char out[2 * REC_LOG_ID_LEN + 1]);
