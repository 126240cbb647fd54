/* SPDX-License-Identifier: MIT */
/*
 * sink-private.h - the sink's state, shared by its files: sink.c (the
 * collector's pass: decode, watch, clock; tick, set-up), sink-batch.c (the
 * open Batch into the log, and the Seals that close segments) and
 * sink-log.c (what the log reports, stored as events once it takes
 * records again).  Not for use outside pipeline/.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/clock.h"
#include "pipeline/clockwatch.h"
#include "sink.h"
#include "evidence/evd.h"
#include "record/batch.h"

#define LOG_REPORT_RETRY_NS 1000000000ll /* a refused log report is tried again this often */
/* Room kept for the Seal that closes a segment: a seal Batch is ~330
   bytes with a 63-byte vehicle name, plus its frame. */
#define SEAL_ROOM 1024
/* The kernel's sync state is read this often (one adjtimex). */
#define CLOCK_SYNC_PERIOD_NS BASIC_NS_PER_SEC

/* Log events not yet on disk (see pl_sink.pend). */
struct log_pending {
	uint64_t dropped;     /* records refused, dropped or lost */
	uint64_t unforwarded; /* deleted by retention before being forwarded */
	uint64_t abandoned;   /* segments abandoned after an I/O error */
	uint64_t damaged;     /* damaged spots found (or set aside) at open */
	int err;              /* the last error, 0 if none */
};

struct pl_sink {
	struct pl_sink_cfg cfg;
	stor_log_t *log;
	pl_channels_t *ch;
	rec_encoder_t *enc;
	const struct rec_channel *dict;  /* the channel dictionary */
	size_t ndict;
	int64_t batch_open_ns;     /* monotonic time the open Batch got its first record */
	int64_t batch_data_t0;     /* the record time of that first record */
	int64_t classed_t;         /* the time pl_sink_encode classified last */
	int64_t meta_next_ns;      /* when to send the channel dictionary again */
	size_t meta_pos;           /* its first entry the next Batch carries */
	struct acq_item *decoded;  /* scratch for the samples of one frame */
	size_t decoded_max;        /* its size: the largest message of any DBC */

	/* collector-thread counters, published with relaxed stores */
	_Atomic uint64_t items, records, batches, log_dropped, decode_samples, next_seq;
	uint64_t first_seq;

	/* What the log reported that no durable record says yet: while the
	   disk is full every event would be refused with the Batch carrying
	   it, so the counts wait here and go out in one Batch, synced at
	   once, when the log takes records again. */
	struct log_pending pend;
	int64_t pend_retry_ns;
	uint64_t refused_appends;        /* refused by stor_log_append, not yet taken */
	int64_t hold_check_ns;           /* monotonic: the last look at the holds file's state */
	_Atomic uint64_t log_unreported; /* pend.dropped, for readers */
	_Atomic uint64_t log_damaged;    /* pend.damaged, for readers */
	_Atomic int log_error;           /* the log's last error, 0 if none */
	_Atomic uint32_t window_alarm;   /* the log's retention window alarm */
	_Atomic uint64_t window_need;

	/* Evidence: the chain and its Seals (seal_enc encodes the seal
	   Batches, so one never overwrites a data Batch being appended). */
	evd_sealer_t *sealer;
	rec_encoder_t *seal_enc;
	int64_t seal_next_ns;            /* monotonic: the next periodic Seal */
	_Atomic uint64_t seals;
	bool chain_restarted;            /* SEAL_CHAIN_NEW (detail 1) to be said */

	/* The clock (clockwatch.h; NULL in a replay, whose records carry the
	   trace's time): every Batch holds records of one offset epoch. */
	pl_clockwatch_t *cw;
	uint64_t batch_epoch;
	bool step_pending;               /* CLOCK_STEP to be recorded after this pass */
	int64_t step_ns, step_window_ns;
	int64_t sync_next_ns;
	_Atomic uint64_t clock_steps;
	_Atomic int64_t clock_last_step;
};

/* sink-batch.c: the open Batch, the records into it, the Seals */
int pl_sink_batch_flush(pl_sink_t *s);
void pl_sink_batch_opened(pl_sink_t *s, int64_t t_ns);
void pl_sink_clock_class(pl_sink_t *s, const struct acq_item *it);
void pl_sink_encode(pl_sink_t *s, const struct acq_item *it);
/* The same, quicker for a record stamped as the one pl_sink_encode took
   last (a frame's decoded samples); any other takes the whole path. */
void pl_sink_encode_same_time(pl_sink_t *s, const struct acq_item *it);
void pl_sink_seal_periodic(pl_sink_t *s);

/* sink-log.c: the log's reports */
void pl_sink_log_take(pl_sink_t *s);
void pl_sink_hold_watch(pl_sink_t *s);
void pl_sink_log_event(pl_sink_t *s, uint32_t code, int64_t arg, uint32_t detail);
void pl_sink_log_report(pl_sink_t *s, bool force);
