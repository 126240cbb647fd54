/* SPDX-License-Identifier: MIT */
/*
 * ledger.h - the ground's memory per (vehicle, log id) of what the
 * receiver (uplink/recv.h) brought: which seqs arrived, which Batches,
 * and so what is new, a duplicate, a conflict or a seq jump.
 *
 * Sequence numbers are per log: a vehicle whose log was replaced (new
 * flash card, wiped data) starts again at seq 1 under a new log id
 * (Batch.log_id), and is tracked as another log.  Within a log:
 * - a Batch seen before with the same records (a QoS 1 re-send) is a
 *   duplicate, skipped silently (counted);
 * - a Batch claiming records seen before but with other records (or cut
 *   differently) is a conflict: refused whole, counted and handed to
 *   on_refused so it can be kept for inspection;
 * - gaps are the holes between the ranges seen (a late Batch may fill one).
 * Every record to write out is handed to on_record (ground/recv-text.c writes
 * it as text), and every Batch with new records, or reduced with a new
 * range, to on_batch (ground/dispatch.c: the ground log and the database).
 * Nothing here formats or writes files.
 *
 * grd_ledger_feed() is the receiver's on_data: the session decodes each
 * payload once and hands it here.  Memory is bounded per log
 * (GRD_LEDGER_MAX_RANGES ranges, the contents of the last
 * GRD_LEDGER_MAX_DIGESTS Batches) and in the number of vehicles
 * (max_vehicles).  Anything refused is counted with its reason.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"

#define GRD_LEDGER_MAX_RANGES 1024      /* seq ranges remembered per log */
#define GRD_LEDGER_MAX_DIGESTS 1024     /* Batch contents remembered per log */
#define GRD_LEDGER_MAX_ONBOARD 16384    /* on-board seq ranges remembered per log (256 KiB) */
#define GRD_LEDGER_MAX_JUMP (UINT64_C(1) << 40) /* records a Batch may lie away from its log */
#define GRD_LEDGER_SEQ_LIMIT (UINT64_C(1) << 63) /* every seq is below this (railmon.proto) */
#define GRD_LEDGER_MAX_VEHICLES_DEFAULT 10000

/*
 * Called once per Batch that carries at least one record written out,
 * with the payload exactly as received and *b, the Batch as the receiver
 * decoded it (each payload is decoded once): the callback may keep it
 * past the call by taking it (*b = NULL; it frees it later with
 * rec_batch_free()), otherwise the receiver frees it after the call.
 * *log_ctx is one pointer per (vehicle, log id) for the callback's own
 * use (its ground log), NULL the first time; grd_ledger_log() gives it
 * back.  Runs on the thread of grd_ledger_feed(), with the ledger locked.
 * A negative return is counted in stats.sink_errors.
 */
typedef int (*grd_ledger_batch_fn)(void *ctx, const struct rec_batch_info *info, rec_batch_t **b,
                                   const void *payload, size_t len, void **log_ctx);

/*
 * Called for each record to write out (new, or below the remembered
 * ranges: stats.old), in seq order, before on_batch of its Batch, on the
 * same thread.  b is the decoded Batch (its channel dictionary:
 * rec_batch_channel()), valid during the call; first is true for the
 * first record written of a Batch (learn its dictionary then); log_ctx
 * as for on_batch.  A negative return is counted in stats.sink_errors,
 * once per Batch.
 */
typedef int (*grd_ledger_record_fn)(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                                    const struct acq_item *item, bool first, void **log_ctx);

/* Why a Batch was refused (nothing of it written, on_refused called). */
enum grd_ledger_refusal {
	GRD_LEDGER_CONFLICT = 0,        /* records seen before, with other content */
	GRD_LEDGER_SEQ_JUMP,            /* seq over GRD_LEDGER_MAX_JUMP away from its log (a
	                                   log's first Batch: from seq 1, until the next
	                                   Batch starts where it ended) */
	GRD_LEDGER_TOO_MANY_VEHICLES,   /* a new vehicle past max_vehicles */
	GRD_LEDGER_NO_MEMORY,           /* could not allocate its vehicle's or log's state */
	GRD_LEDGER_BAD_VEHICLE,         /* a vehicle name against the rule (basic/name.h) */
	GRD_LEDGER_REFUSAL_MAX
};

/* A refused Batch, payload as received and *b decoded, which the
   callback may take as on_batch's (same thread as on_batch). */
typedef void (*grd_ledger_refused_fn)(void *ctx, enum grd_ledger_refusal why,
                                      const struct rec_batch_info *info, rec_batch_t **b,
                                      const void *payload, size_t len);

struct grd_ledger_cfg {
	grd_ledger_record_fn on_record; /* optional */
	grd_ledger_batch_fn on_batch;   /* optional */
	grd_ledger_refused_fn on_refused; /* optional */
	grd_ledger_batch_fn on_jump; /* optional: a Batch over GRD_LEDGER_MAX_JUMP from the rest
	                             of its log as remembered goes here, payload as received,
	                             instead of being refused (its records are not written
	                             nor counted, nor remembered): for a caller that checks
	                             it against what survives a restart (recv --db: the
	                             database's ledger), so a bogus Batch that came first
	                             after a restart cannot make the real ones look like jumps */
	void *ctx;                /* for the callbacks */
	size_t max_vehicles;      /* distinct vehicle ids kept; 0 = GRD_LEDGER_MAX_VEHICLES_DEFAULT */
};

struct grd_ledger_stats {
	uint64_t batches;       /* Batches with something written */
	uint64_t records;       /* records written */
	uint64_t duplicates;    /* records seen before, skipped (with unverified) */
	uint64_t unverified;    /* of those, skipped without comparing their content:
	                           their Batch is older than the last GRD_LEDGER_MAX_DIGESTS */
	uint64_t old;           /* records below the ranges remembered (past
	                           GRD_LEDGER_MAX_RANGES): written again, may be duplicates */
	uint64_t missing;       /* records in the holes of all logs now (saturates) */
	uint64_t on_board;      /* records of reduced Batches' ranges not sent: on board */
	uint64_t reduced;       /* reduced Batches with something new */
	uint64_t refused[GRD_LEDGER_REFUSAL_MAX]; /* Batches refused, by reason */
	uint64_t conflict_records; /* records in the conflicting Batches */
	uint64_t vehicles;      /* distinct vehicle ids */
	uint64_t logs;          /* distinct (vehicle, log id) */
	uint64_t sink_errors;   /* Batches on_record or on_batch failed for */
};

/*
 * One log of one vehicle.  first_seq .. next_seq - 1 is the span seen;
 * records counts the distinct records in it, missing the others (holes).
 * Both stay exact when old ranges are forgotten: records that arrive below
 * the remembered ranges afterwards are counted in old, not records.
 */
struct grd_ledger_log {
	const char *vehicle;    /* valid until grd_ledger_free() */
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;      /* 0: Batches without a log id (older railmon) */
	uint64_t first_seq;     /* lowest record seen */
	uint64_t next_seq;      /* one past the highest record seen */
	uint64_t records;       /* distinct records seen */
	uint64_t duplicates;
	uint64_t unverified;
	uint64_t old;
	uint64_t missing;       /* next_seq - first_seq - records - on_board */
	uint64_t on_board;      /* seqs the vehicle sent reduced: in its log, not here */
	uint64_t reduced;       /* reduced Batches with something new */
	uint64_t conflicts;     /* Batches refused as conflicts */
	uint64_t seq_jumps;     /* Batches refused: too far from the rest */
	void *log_ctx;          /* what on_record or on_batch stored */
};

/* Per vehicle view: its newest log (first seen last), and how many logs. */
struct grd_ledger_vehicle {
	uint64_t first_seq;     /* lowest record seen */
	uint64_t next_seq;
	uint64_t records;       /* distinct records seen */
	uint64_t duplicates;
	uint64_t missing;       /* holes in [first_seq, next_seq) */
	uint64_t logs;
};

typedef struct grd_ledger grd_ledger_t;

/* 0, -EINVAL, -ENOMEM. */
int grd_ledger_new(const struct grd_ledger_cfg *cfg, grd_ledger_t **ret_ledger);
grd_ledger_t *grd_ledger_free(grd_ledger_t *l);

/*
 * One decoded Batch (payload as received) through the ledger; ledger is a
 * grd_ledger_t (void *: this is upl_recv_cfg.on_data as it is).  *b may
 * be taken by a callback.  Returns the records written (0 for
 * duplicates), -EBADMSG (no Batch info, seq 0 or past
 * GRD_LEDGER_SEQ_LIMIT: the receiver counts it as bad), or a refusal
 * (stats.refused): -EEXIST a conflict, -ERANGE a seq jump, -EUSERS too
 * many vehicles, -ENOMEM, -EPERM a vehicle name against the rule.
 */
int grd_ledger_feed(void *ledger, rec_batch_t **b, const void *payload, size_t len);

int grd_ledger_stats(grd_ledger_t *l, struct grd_ledger_stats *ret_stats);

/* The same without waiting: -EBUSY while a Batch goes through (the
   ledger is locked through on_batch, which may wait for a database). */
int grd_ledger_stats_try(grd_ledger_t *l, struct grd_ledger_stats *ret_stats);

/* 0, or -ENOENT if no Batch of that vehicle was seen. */
int grd_ledger_vehicle(grd_ledger_t *l, const char *vehicle, struct grd_ledger_vehicle *ret_vehicle);

/* The i-th (vehicle, log id) seen, in the order first seen: 0, or -ENOENT
   past the last. */
int grd_ledger_log(grd_ledger_t *l, size_t i, struct grd_ledger_log *ret_log);

/* Wait until at least n new records were written in total (or timeout_ms
   passes): 0 or -ETIMEDOUT. */
int grd_ledger_wait_records(grd_ledger_t *l, uint64_t n, unsigned timeout_ms);

/* Wait until every record of vehicle's newest log from the first one seen
   up to seq - 1 has arrived (no holes, next_seq >= seq): 0 or -ETIMEDOUT. */
int grd_ledger_wait_seq(grd_ledger_t *l, const char *vehicle, uint64_t seq, unsigned timeout_ms);

/*
 * Whether two encoded Batches hold the same records under the same seqs
 * (not the same bytes: a backlog re-send carries Batch.historical too):
 * 1 or 0, -EBADMSG if either does not decode, -EINVAL for NULL with a
 * length.
 */
int grd_ledger_same_records(const void *a, size_t alen, const void *b, size_t blen);
