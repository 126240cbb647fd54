/* SPDX-License-Identifier: MIT */
/*
 * sink.h - the heart of the pipeline: what the collector hands over is
 * decoded (CAN frames into samples with the bus's DBC), encoded into a
 * Batch, and the Batch, numbered, appended to the flash log.
 *
 * A Batch closes at batch_max records, 1 MiB, or batch_ms after its first
 * record (a replay: by the records' own time, so the same input always
 * gives the same Batches).  The channel dictionary rides along every
 * meta_interval_s.  What the log reports (records refused on a full disk,
 * lost on an I/O error, deleted by retention before being forwarded,
 * damage found at open) is counted exactly and written as events in a
 * Batch of their own, synced at once, taken off the counts only once it is
 * durable: the LOG_DROPPED args in a log add up to the records refused.
 *
 * One thread at a time: the collector's while it runs, the caller's before
 * start and after stop.  The counters may be read from any thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"
#include "channels.h"
#include "storage/stor.h"

struct pl_faults;
struct rec_batch_meta;
struct rec_health;

struct pl_sink_cfg {
	stor_log_t *log;                     /* the caller's; outlives the sink */
	pl_channels_t *channels;          /* decoding, dictionary, latest values;
	                                        NULL: none (raw records only) */
	const struct rec_batch_meta *meta;   /* vehicle, config hash, boot id (copied;
	                                        the log id is taken from log) */
	uint32_t batch_max;                  /* records per Batch */
	uint32_t batch_ms;                   /* close a Batch this long after its first record */
	uint32_t meta_interval_s;            /* the dictionary rides along this often */
	bool deterministic;                  /* a replay: close Batches by record time
	                                        (and seal only at segment ends and close) */
	/* Evidence (README "Evidence"): every Batch the log takes enters the
	   hash chain, and a Seal covers it every seal_interval_s, before a
	   segment closes and at close. */
	const uint8_t *seal_secret;          /* Ed25519 secret key (copied), NULL: unsigned */
	uint32_t seal_interval_s;            /* 0: only at segment ends and close */
	const char *log_dir;                 /* the log's directory: its chain is taken up */
	bool no_evidence;                    /* no chain, no Seals: the baseline of
	                                        tests/evidence/bench-evidence.c only
	                                        (no board key turns this on) */
	struct pl_faults *faults;            /* the caller's; the faults stored and the
	                                        log's are noted here (faults.h); NULL: none */
	/* The clock (clockwatch.h, docs/time.md), not in a deterministic
	   replay: CLOCK_REALTIME moving against CLOCK_MONOTONIC by this much
	   between two collector passes is a step (EVENT_CLOCK_STEP); 0 =
	   PL_SINK_CLOCK_STEP_NS.  Every Batch carries its monotonic base, and
	   the kernel's sync flag is read once a second (CLOCK_UNSYNCED/SYNCED). */
	int64_t clock_step_ns;
	struct pl_watch *watch;              /* the caller's: triggers and required channels
	                                        (watch.h) see every item; NULL: none */
	/* Per bus, where its TRDP telegrams' bytes are (pl_sources_bytes()):
	   released once a telegram is encoded; nbytes entries, NULL ones for
	   buses without.  The caller's; outlive the sink. */
	struct acq_bytes *const *bytes;
	size_t nbytes;
};

#define PL_SINK_CLOCK_STEP_NS 10000000ll /* 10 ms */

struct pl_sink_stats {
	uint64_t items;           /* handed to the sink */
	uint64_t records;         /* stored in the log (records the log dropped
	                             later, at a sync or an I/O error, taken off) */
	uint64_t batches;
	uint64_t decode_samples;  /* samples decoded from CAN frames */
	uint64_t log_dropped;     /* records the log refused, dropped or lost: exact */
	uint64_t log_unreported;  /* of those, not yet in a LOG_DROPPED event on disk */
	int log_error;            /* the log's last error (-errno), 0 if none */
	uint64_t log_damaged;     /* damaged spots found at open, not yet in an event */
	uint64_t seals;           /* Seals the log took this run */
	bool seals_signed;        /* with a key */
	bool chain_continued;     /* the log's last chain was taken up (else a new one) */
	uint32_t window_alarm;    /* enum stor_window_alarm the log raised last */
	uint64_t window_need_bytes;
	uint64_t first_seq;       /* the log's next seq when the sink was made */
	uint64_t next_seq;
	uint64_t clock_steps;     /* CLOCK_STEP events this run */
	int64_t clock_last_step_ns; /* the last one's size (new - old offset) */
};

typedef struct pl_sink pl_sink_t;

/* Make the sink; allocates the encoder for the whole dictionary now, so the
   collector never allocates for it, and takes up the log's hash chain
   (reading its newest segments).  0, -EINVAL, -ENOMEM, -EIO (libsodium). */
int pl_sink_new(const struct pl_sink_cfg *cfg, pl_sink_t **ret_sink);

/* Close nothing (see pl_sink_close), free; accepts NULL; returns NULL. */
pl_sink_t *pl_sink_free(pl_sink_t *s);

/* The collector's sink (acq_collector_cfg.sink; ctx = the sink): decode,
   encode, append full Batches.  Returns 0 (a refusal is counted, not an
   error of the pipeline). */
int pl_sink_items(void *ctx, const struct acq_item *items, size_t n);

/* An event of the daemon itself (START, STOP, CONFIG_RELOAD), now. */
void pl_sink_event(pl_sink_t *s, uint32_t code, int64_t arg);

/* Seal now everything the log took since the last Seal (nothing to seal:
   nothing done).  0, or the append's -errno (counted as refused). */
int pl_sink_seal(pl_sink_t *s);

/* Health entries ride in the next Batch. */
int pl_sink_add_health(pl_sink_t *s, const struct rec_health *h);

/* The collector's tick: what the log reported becomes events (retried
   every second while the log refuses), a Batch older than batch_ms
   closes, the log's sync window runs.  Returns stor_log_tick()'s result. */
int pl_sink_tick(pl_sink_t *s);

/* What the log refused, said now (at stop, before the STOP event). */
void pl_sink_report(pl_sink_t *s);

/* The end of a run: the STOP event (arg = records of the run), the last
   Batch, a sync, one more report if the disk allows, and the last Seal,
   synced.  Returns the first sync's result. */
int pl_sink_close(pl_sink_t *s);

/* Counters; any thread (each read atomically). */
int pl_sink_stats(const pl_sink_t *s, struct pl_sink_stats *ret_stats);
