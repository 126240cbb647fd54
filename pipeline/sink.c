/* SPDX-License-Identifier: MIT */
/*
 * sink.c - decode -> encode -> append (sink.h).
 *
 * Runs on one thread at a time (the collector's), so the encoder, the DBC
 * tables and the log need no locks.  The counters cross threads through
 * relaxed atomics: each is a single word with a single writer.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/counter.h"
#include "pipeline/clockwatch.h"
#include "pipeline/faults.h"
#include "pipeline/watch.h"
#include "sink.h"
#include "evidence/evd.h"
#include "record/batch.h"
#include "record/seal.h"

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

/* ------------------------------------------------------------ Batches */

/* The dictionary rides along now and then, so a consumer that starts
   mid-stream (or a log trimmed by retention) learns the channel names
   within meta_interval_s.  A large board's does not fit in one Batch:
   each Batch takes the next slice. */
static void batch_dictionary(pl_sink_t *s)
{
	int n;

	if (basic_mono_ns() < s->meta_next_ns)
		return;
	n = rec_encoder_set_channels(s->enc, s->dict + s->meta_pos, s->ndict - s->meta_pos);
	if (n > 0)
		s->meta_pos += (size_t)n;
	if (n < 0 || s->meta_pos >= s->ndict) {
		s->meta_pos = 0;
		s->meta_next_ns = basic_mono_ns() + (int64_t)s->cfg.meta_interval_s * BASIC_NS_PER_SEC;
	}
}

/* Close the open Batch and append it to the log.  0 (or nothing to do),
   or the append's -errno: the records were refused, and the log counts
   them (log_take). */
static int batch_flush(pl_sink_t *s)
{
	struct stor_rec rec = { 0 };
	const uint8_t *buf;
	size_t len;
	int n, r;

	if (!rec_encoder_count(s->enc))
		return 0;
	batch_dictionary(s);
	/* A Batch that starts the next segment: the Seal closes this one
	   first, so every closed segment ends sealed. */
	if (evd_sealer_pending(s->sealer) &&
	    stor_log_would_roll(s->log, (uint32_t)rec_encoder_wire_max(s->enc) + SEAL_ROOM))
		pl_sink_seal(s);
	rec_encoder_span(s->enc, &rec.t_first_ns, &rec.t_last_ns);
	rec.first_seq = stor_log_next_seq(s->log);
	n = rec_encoder_finish(s->enc, rec.first_seq, &buf, &len);
	if (n <= 0)
		return 0;
	rec.count = (uint32_t)n;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	/* A refused Batch is counted by the log itself (with the records it
	   drops later, at a sync): log_take() turns that into the sink's
	   counter and, once the log takes records again, one event. */
	r = stor_log_append(s->log, &rec);
	if (r == 0) {
		evd_sealer_add(s->sealer, rec.first_seq, rec.count, buf, len);
		basic_counter_add(&s->records, (uint64_t)n);
		basic_counter_add(&s->batches, 1);
	} else {
		s->refused_appends += (uint64_t)n;
	}
	atomic_store_explicit(&s->next_seq, stor_log_next_seq(s->log), memory_order_relaxed);
	return r;
}

static void batch_opened(pl_sink_t *s, int64_t t_ns)
{
	s->batch_open_ns = basic_mono_ns();
	s->batch_data_t0 = t_ns;
}

/* A Batch holds records stamped with one offset (its mono_t0_ns): a
   record of another epoch closes it.  Slewing between two steps is not an
   epoch: the offset read at the Batch's first record stands for it. */
static void clock_class(pl_sink_t *s, const struct acq_item *it)
{
	int64_t off;
	uint64_t epoch;

	if (!s->cw)
		return;
	epoch = pl_clockwatch_which(s->cw, it->t_ns, &off);
	if (rec_encoder_count(s->enc) && epoch != s->batch_epoch)
		batch_flush(s);
	if (!rec_encoder_count(s->enc)) {
		s->batch_epoch = epoch;
		if (epoch)
			rec_encoder_set_clock_offset(s->enc, off);
		else
			rec_encoder_clear_clock_offset(s->enc);
	}
}

static void encode(pl_sink_t *s, const struct acq_item *it)
{
	clock_class(s, it);
	/* A replay closes Batches by the records' own time, not the wall
	   clock, so the same input always gives the same Batches and numbers. */
	if (s->cfg.deterministic && rec_encoder_count(s->enc) &&
	    llabs(it->t_ns - s->batch_data_t0) >= (int64_t)s->cfg.batch_ms * BASIC_NS_PER_MS)
		batch_flush(s);
	if (!rec_encoder_count(s->enc))
		batch_opened(s, it->t_ns);
	if (rec_encoder_add(s->enc, it) == -ENOBUFS) {
		batch_flush(s);
		s->batch_open_ns = basic_mono_ns();
		rec_encoder_add(s->enc, it);
	}
}

/* Triggers and required channels see the item; a channel back in time
   (CHANNEL_FRESH) is stored right after it. */
static void watch_item(pl_sink_t *s, const struct acq_item *it)
{
	struct acq_item ev[2];
	size_t n;

	if (!s->cfg.watch)
		return;
	n = pl_watch_item(s->cfg.watch, it, ev, 2);
	for (size_t k = 0; k < n; k++)
		encode(s, &ev[k]);
}

static void decode_frame(pl_sink_t *s, const struct acq_item *it)
{
	/* never -ENOBUFS: the scratch holds the largest message's signals */
	int n = s->ch ? pl_channels_decode(s->ch, it, s->decoded, s->decoded_max) : 0;

	for (int k = 0; k < n; k++) {
		encode(s, &s->decoded[k]);
		pl_channels_set_live(s->ch, &s->decoded[k]);
		watch_item(s, &s->decoded[k]);
	}
	if (n > 0)
		basic_counter_add(&s->decode_samples, (uint64_t)n);
}

/* Once per pass, before its records are classified: they were all read
   from the rings before this reading, so their stamps are of this offset
   or, within 2 s of a step, of the one before (pl_clockwatch_which). */
static void clock_pass(pl_sink_t *s)
{
	int64_t real, mono;

	if (!s->cw)
		return;
	pl_clock_read(&real, &mono);
	if (pl_clockwatch_check(s->cw, real, mono, &s->step_ns, &s->step_window_ns) == 1)
		s->step_pending = true;
}

/* The step as an event, after the pass's records, stamped now (the new
   clock); detail = the window it lies in, ms rounded up. */
static void clock_step_event(pl_sink_t *s)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };
	int64_t ms = (s->step_window_ns + BASIC_NS_PER_MS - 1) / BASIC_NS_PER_MS;

	s->step_pending = false;
	ev.event = (struct acq_event){ .code = ACQ_EV_CLOCK_STEP, .arg = s->step_ns,
	                               .detail = ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms };
	encode(s, &ev);
	pl_faults_note_item(s->cfg.faults, &ev); /* said on stderr, as faults are */
	basic_counter_add(&s->items, 1);
	atomic_store_explicit(&s->clock_last_step, s->step_ns, memory_order_relaxed);
	basic_counter_add(&s->clock_steps, 1);
}

int pl_sink_items(void *ctx, const struct acq_item *items, size_t n)
{
	pl_sink_t *s = ctx;

	clock_pass(s);
	for (size_t i = 0; i < n; i++) {
		const struct acq_item *it = &items[i];
		encode(s, it);
		pl_faults_note_item(s->cfg.faults, it);
		if (it->kind == ACQ_ITEM_CAN)
			decode_frame(s, it);
		else if ((it->kind == ACQ_ITEM_SAMPLE || it->kind == ACQ_ITEM_TEXT) && s->ch)
			pl_channels_set_live(s->ch, it);
		if (it->kind != ACQ_ITEM_CAN)
			watch_item(s, it);
	}
	basic_counter_add(&s->items, n);
	if (s->step_pending)
		clock_step_event(s);
	return 0;
}

void pl_sink_event(pl_sink_t *s, uint32_t code, int64_t arg)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	ev.event.code = code;
	ev.event.arg = arg;
	pl_sink_items(s, &ev, 1);
}

/* ------------------------------------------------------------ Seals */

/*
 * The Seal goes as a Batch of its own (one record, the SEAL event) right
 * after the records it covers; the open data Batch stays open (its
 * records are not in the log yet, so the next Seal covers them).
 */
int pl_sink_seal(pl_sink_t *s)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .bus = ACQ_SOURCE_DAEMON };
	struct stor_rec rec = { 0 };
	struct rec_seal seal;
	const uint8_t *buf;
	size_t len;
	int64_t mono = 0;
	int n, r;

	if (!evd_sealer_pending(s->sealer))
		return 0;
	ev.t_ns = basic_realtime_ns();
	rec.first_seq = stor_log_next_seq(s->log);
	/* the Seal signs its own Batch's fields: the offset that Batch is
	   written with is chosen first */
	if (s->cw) {
		int64_t off;
		pl_clockwatch_which(s->cw, ev.t_ns, &off);
		rec_encoder_set_clock_offset(s->seal_enc, off);
		mono = rec_mono_t0(ev.t_ns, off);
	}
	r = evd_sealer_seal(s->sealer, rec.first_seq, ev.t_ns, mono, &seal);
	if (r < 0)
		return r;
	ev.event = (struct acq_event){ .code = ACQ_EV_SEAL, .arg = (int64_t)(seal.end_seq - seal.first_seq),
	                               .detail = seal.is_signed };
	rec_encoder_add(s->seal_enc, &ev);
	rec_encoder_set_seal(s->seal_enc, &seal);
	n = rec_encoder_finish(s->seal_enc, rec.first_seq, &buf, &len);
	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	rec.count = (uint32_t)n;
	rec.t_first_ns = rec.t_last_ns = ev.t_ns;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	r = stor_log_append(s->log, &rec);
	if (r == 0) {
		evd_sealer_add(s->sealer, rec.first_seq, rec.count, buf, len);
		basic_counter_add(&s->records, (uint64_t)n);
		basic_counter_add(&s->batches, 1);
		basic_counter_add(&s->seals, 1);
	} else {
		s->refused_appends += (uint64_t)n;
	}
	atomic_store_explicit(&s->next_seq, stor_log_next_seq(s->log), memory_order_relaxed);
	return r;
}

/* Every seal_interval_s (wall time: a replay seals at segment ends and
   close only, so its numbering depends on the input alone). */
static void seal_periodic(pl_sink_t *s)
{
	int64_t now;

	if (s->cfg.deterministic || !s->cfg.seal_interval_s)
		return;
	now = basic_mono_ns();
	if (now < s->seal_next_ns)
		return;
	s->seal_next_ns = now + (int64_t)s->cfg.seal_interval_s * BASIC_NS_PER_SEC;
	/* what the open Batch holds is covered too */
	batch_flush(s);
	pl_sink_seal(s);
}

int pl_sink_add_health(pl_sink_t *s, const struct rec_health *h)
{
	return rec_encoder_add_health(s->enc, h);
}

/* ------------------------------------------------------------ log faults */

/* An event of the daemon, now, through the encoder. */
static void daemon_event(pl_sink_t *s, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	encode(s, &it);
}

/*
 * The retention window and holds: an alarm (RETENTION_WINDOW, said on
 * stderr, and in Health through pl_sink_stats), segments deleted past a
 * held one, holds that expired, a holds file that cannot be read.  These
 * lose no records, so they are stored as they come (not through pend).
 */
static void log_take_window(pl_sink_t *s, const struct stor_events *ev)
{
	if (ev->window_alarm) {
		daemon_event(s, ACQ_EV_RETENTION_WINDOW, (int64_t)ev->window_need_bytes, ev->window_alarm);
		pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_WINDOW, 1, (int64_t)ev->window_need_bytes,
		               ev->window_alarm);
	}
	if (ev->past_held)
		daemon_event(s, ACQ_EV_RETENTION_PAST_HELD, (int64_t)ev->past_held, 0);
	if (ev->holds_expired)
		daemon_event(s, ACQ_EV_HOLD_ENDED, (int64_t)ev->holds_expired, 1);
	if (ev->hold_error) {
		daemon_event(s, ACQ_EV_HOLD_FAULT, ev->hold_error, ev->hold_error_line);
		s->hold_check_ns = 0; /* hold_watch() says it now */
	}
}

/* A holds file that stays unreadable is noted once a second while it
   lasts (the log reads it again each second), not only when it broke: the
   fault reporter then says it again each minute, and "no more" only once
   it is readable again.  The HOLD_FAULT event in the log marks the change. */
static void hold_watch(pl_sink_t *s)
{
	struct stor_stats st;
	int64_t now = basic_mono_ns();

	if (now - s->hold_check_ns < BASIC_NS_PER_SEC)
		return;
	s->hold_check_ns = now;
	if (stor_log_stats(s->log, &st) == 0 && st.hold_error)
		pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_HOLD, 1, st.hold_error, st.hold_error_line);
}

/* What the log reports (ENOSPC, I/O errors, retention, recovery) goes to
   the counters and waits in pend until log_report() got it on disk. */
static void log_take(pl_sink_t *s)
{
	struct stor_events ev;
	uint64_t n, later, stored;

	if (stor_log_take_events(s->log, &ev) <= 0)
		return;
	n = ev.lost_unsynced + ev.dropped_nospace + ev.dropped_other;
	/* Records the log took and dropped later (ENOSPC at a sync, EIO) were
	   counted as stored: they are not. */
	later = n - (n < s->refused_appends ? n : s->refused_appends);
	s->refused_appends -= n - later;
	/* Those are in the hash chain but not in the log: no Seal could
	   match them.  A new chain starts at the log's end (they and the
	   records since the last Seal stay unsealed; the event says so). */
	if (later && s->sealer) {
		evd_sealer_restart(s->sealer, stor_log_next_seq(s->log), ev.lost_first_seq);
		s->chain_restarted = true;
	}
	stored = atomic_load_explicit(&s->records, memory_order_relaxed);
	atomic_store_explicit(&s->records, stored - (later < stored ? later : stored), memory_order_relaxed);
	basic_counter_add(&s->log_dropped, n);
	s->pend.dropped += n;
	s->pend.unforwarded += ev.retention_unforwarded;
	s->pend.abandoned += ev.segments_abandoned;
	s->pend.damaged += ev.recovered_damage;
	/* said on stderr too: ENOSPC refusals have their own message (run.c) */
	if (ev.retention_unforwarded)
		pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_RETENTION, ev.retention_unforwarded,
		                  (int64_t)ev.retention_unforwarded, 0);
	if (ev.segments_abandoned || (ev.last_error && ev.last_error != -ENOSPC))
		pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_LOG, 1, ev.last_error,
		                  (uint32_t)ev.segments_abandoned);
	log_take_window(s, &ev);
	if (ev.last_error) {
		s->pend.err = ev.last_error;
		atomic_store_explicit(&s->log_error, ev.last_error, memory_order_relaxed);
	}
	atomic_store_explicit(&s->log_unreported, s->pend.dropped, memory_order_relaxed);
	atomic_store_explicit(&s->log_damaged, s->pend.damaged, memory_order_relaxed);
}

static void log_event(pl_sink_t *s, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	/* Straight into the (empty) encoder: encode() could close the Batch
	   between two of these (a replay closes Batches by record time). */
	clock_class(s, &it);
	if (!rec_encoder_count(s->enc))
		batch_opened(s, it.t_ns);
	rec_encoder_add(s->enc, &it);
}

static bool log_pending(const pl_sink_t *s)
{
	const struct log_pending *p = &s->pend;

	return p->dropped || p->unforwarded || p->abandoned || p->damaged || p->err;
}

/* The events for what is pending, into the (empty) encoder. */
static void log_events(pl_sink_t *s, const struct log_pending *sent)
{
	if (s->chain_restarted) {
		/* detail 1: after records the log lost (see log_take) */
		log_event(s, ACQ_EV_SEAL_CHAIN_NEW, (int64_t)evd_sealer_first(s->sealer), 1);
		s->chain_restarted = false;
	}
	if (sent->err || sent->abandoned)
		log_event(s, ACQ_EV_LOG_FAULT, sent->err, (uint32_t)sent->abandoned);
	else if (sent->damaged)
		log_event(s, ACQ_EV_LOG_FAULT, -EBADMSG, (uint32_t)sent->damaged);
	if (sent->dropped)
		log_event(s, ACQ_EV_LOG_DROPPED, (int64_t)sent->dropped, (uint32_t)(sent->err < 0 ? -sent->err : 0));
	if (sent->unforwarded)
		log_event(s, ACQ_EV_LOG_RETENTION, (int64_t)sent->unforwarded, 1);
}

/*
 * Turn what is pending into events: LOG_FAULT (arg -errno, detail segments
 * abandoned, or damaged spots found at open), LOG_DROPPED (arg the exact
 * number of records refused, dropped or lost, detail errno), LOG_RETENTION
 * (arg records deleted unforwarded).  They go in a Batch of their own,
 * synced at once: only when that Batch is durable are the counts taken off
 * pend.  If the log refuses it (the disk is still full), its own records
 * are counted with the rest and the next try, a second later, reports the
 * new total.  So the LOG_DROPPED args in the log add up to log_dropped.
 */
static void log_report(pl_sink_t *s, bool force)
{
	int64_t now = basic_mono_ns();
	struct log_pending sent;
	int r;

	if (!log_pending(s) || (!force && now < s->pend_retry_ns))
		return;
	s->pend_retry_ns = now + LOG_REPORT_RETRY_NS;
	/* The open Batch goes first, on its own: what it costs is counted
	   now and reported with the rest. */
	batch_flush(s);
	log_take(s);
	sent = s->pend;
	log_events(s, &sent);
	r = batch_flush(s);
	if (r == 0)
		r = stor_log_sync(s->log);
	log_take(s);
	if (r < 0)
		return; /* refused or dropped: counted, reported with the next try */
	s->pend.dropped -= sent.dropped;
	s->pend.unforwarded -= sent.unforwarded;
	s->pend.abandoned -= sent.abandoned;
	s->pend.damaged -= sent.damaged;
	if (s->pend.err == sent.err)
		s->pend.err = 0;
	atomic_store_explicit(&s->log_unreported, s->pend.dropped, memory_order_relaxed);
	atomic_store_explicit(&s->log_damaged, s->pend.damaged, memory_order_relaxed);
}

/* The kernel's sync flag, once a second: a change is an event. */
static void clock_sync(pl_sink_t *s)
{
	struct pl_clock_sync st;
	int64_t now = basic_mono_ns();
	int ev;

	if (!s->cw || now < s->sync_next_ns)
		return;
	s->sync_next_ns = now + CLOCK_SYNC_PERIOD_NS;
	if (pl_clock_sync_read(&st) < 0)
		return;
	ev = pl_clockwatch_sync(s->cw, &st);
	if (ev > 0)
		log_event(s, (uint32_t)ev, (int64_t)(ev == ACQ_EV_CLOCK_UNSYNCED ? st.max_error_us : st.est_error_us),
		          st.status);
}

/* Holds for the triggers that fired, STALE events, the log's window state. */
static void watch_tick(pl_sink_t *s)
{
	struct acq_item ev[16];
	struct stor_stats st;
	size_t n;

	if (s->cfg.watch) {
		n = pl_watch_tick(s->cfg.watch, basic_realtime_ns(), ev, 16);
		for (size_t k = 0; k < n; k++) {
			encode(s, &ev[k]);
			/* a trigger whose hold could not be written: said too */
			if (ev[k].event.code == ACQ_EV_TRIGGER && ev[k].event.arg < 0)
				pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_TRIGGER, 1, ev[k].event.arg,
				               ev[k].event.detail);
		}
	}
	if (stor_log_stats(s->log, &st) == 0) {
		atomic_store_explicit(&s->window_alarm, st.window_alarm, memory_order_relaxed);
		atomic_store_explicit(&s->window_need, st.window_need_bytes, memory_order_relaxed);
	}
}

int pl_sink_tick(pl_sink_t *s)
{
	/* A quiet board has passes without records: the tick still reads the
	   clock, so a step is an event within a tick, not at the next record. */
	clock_pass(s);
	if (s->step_pending)
		clock_step_event(s);
	clock_sync(s);
	watch_tick(s);
	log_take(s);
	hold_watch(s);
	log_report(s, false);
	if (!s->cfg.deterministic && rec_encoder_count(s->enc) &&
	    basic_mono_ns() - s->batch_open_ns >= (int64_t)s->cfg.batch_ms * BASIC_NS_PER_MS)
		batch_flush(s);
	seal_periodic(s);
	return stor_log_tick(s->log);
}

void pl_sink_report(pl_sink_t *s)
{
	log_take(s);
	log_report(s, true);
}

int pl_sink_close(pl_sink_t *s)
{
	int r;

	pl_sink_event(s, ACQ_EV_STOP,
	                 (int64_t)(atomic_load(&s->records) + rec_encoder_count(s->enc) + 1));
	batch_flush(s);
	r = stor_log_sync(s->log);
	/* The last Batch may have been refused too: one more try, so the
	   counter and the log's events agree whenever the disk allows. */
	pl_sink_report(s);
	/* The last Seal covers everything, the report too. */
	if (pl_sink_seal(s) == 0)
		stor_log_sync(s->log);
	return r;
}

/* ------------------------------------------------------------ set-up */

/* The chain is taken up from the log; the first Batch says whether it was,
   and whether this run signs (events SEAL_CHAIN_NEW, SEAL_UNSIGNED). */
static int sink_sealer(pl_sink_t *s, const struct rec_batch_meta *meta)
{
	/* With a second core the hashing runs beside the collector (the
	   chain costs the collector a copy per Batch, not the hash). */
	struct evd_sealer_cfg sc = { .vehicle = meta->vehicle, .config_hash = meta->config_hash,
	                             .secret = s->cfg.seal_secret,
	                             .dir = s->cfg.log_dir, .next_seq = stor_log_next_seq(s->log),
	                             .threaded = sysconf(_SC_NPROCESSORS_ONLN) > 1 };
	int r;

	if (s->cfg.no_evidence)
		return 0;
	memcpy(sc.log_id, meta->log_id, REC_LOG_ID_LEN);
	memcpy(sc.boot_id, meta->boot_id, REC_BOOT_ID_LEN);
	r = evd_sealer_new(&sc, &s->sealer);
	if (r < 0)
		return r;
	s->seal_next_ns = basic_mono_ns() + (int64_t)s->cfg.seal_interval_s * BASIC_NS_PER_SEC;
	if (!evd_sealer_continued(s->sealer))
		log_event(s, ACQ_EV_SEAL_CHAIN_NEW, (int64_t)evd_sealer_first(s->sealer), 0);
	if (!s->cfg.seal_secret)
		log_event(s, ACQ_EV_SEAL_UNSIGNED, 0, 0);
	return 0;
}

int pl_sink_new(const struct pl_sink_cfg *cfg, pl_sink_t **ret)
{
	struct rec_batch_meta meta;
	pl_sink_t *s;
	int r;

	if (!cfg || !ret || !cfg->log || !cfg->meta || !cfg->batch_max)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->log = cfg->log;
	s->ch = cfg->channels;
	s->ndict = pl_channels_list(s->ch, NULL);
	s->dict = pl_channels_dictionary(s->ch);
	/* Sized by the DBCs: a frame's samples all fit, so none is dropped
	   (a fixed 256 once lost the rest of a frame). */
	s->decoded_max = pl_channels_decode_max(s->ch);
	s->decoded = calloc(s->decoded_max ? s->decoded_max : 1, sizeof(*s->decoded));
	meta = *cfg->meta;
	/* Every Batch names its log, so the ground can tell a new log
	   (seq from 1 again) from records it already has. */
	_Static_assert(REC_LOG_ID_LEN == STOR_LOG_ID_BYTES, "one log id size");
	stor_log_id(s->log, meta.log_id);
	r = s->decoded ? rec_encoder_new(&meta, cfg->batch_max, &s->enc) : -ENOMEM;
	/* Sizes the encoder for the whole dictionary now, so the collector
	   never allocates for it; batch_flush() sets it for real. */
	if (r >= 0)
		r = rec_encoder_set_channels(s->enc, s->dict, s->ndict);
	if (r >= 0)
		r = rec_encoder_set_channels(s->enc, NULL, 0);
	if (r >= 0)
		r = rec_encoder_new(&meta, 16, &s->seal_enc);
	if (r >= 0 && !cfg->deterministic)
		r = pl_clockwatch_new(cfg->clock_step_ns > 0 ? cfg->clock_step_ns : PL_SINK_CLOCK_STEP_NS, &s->cw);
	/* The first reading now, so the first Batch (the sealer's events) has
	   its base. */
	clock_pass(s);
	if (r >= 0)
		r = sink_sealer(s, &meta);
	if (r < 0) {
		pl_sink_free(s);
		return r;
	}
	s->first_seq = stor_log_next_seq(s->log);
	atomic_store(&s->next_seq, s->first_seq);
	/* What recovery found at open is said at start and becomes an event. */
	log_take(s);
	*ret = s;
	return 0;
}

pl_sink_t *pl_sink_free(pl_sink_t *s)
{
	if (!s)
		return NULL;
	rec_encoder_free(s->enc);
	rec_encoder_free(s->seal_enc);
	evd_sealer_free(s->sealer);
	pl_clockwatch_free(s->cw);
	free(s->decoded);
	free(s);
	return NULL;
}

int pl_sink_stats(const pl_sink_t *s, struct pl_sink_stats *ret)
{
	pl_sink_t *m = (pl_sink_t *)s;

	if (!s || !ret)
		return -EINVAL;
	*ret = (struct pl_sink_stats){
		.items = atomic_load(&m->items),
		.records = atomic_load(&m->records),
		.batches = atomic_load(&m->batches),
		.decode_samples = atomic_load(&m->decode_samples),
		.log_dropped = atomic_load(&m->log_dropped),
		.log_unreported = atomic_load(&m->log_unreported),
		.log_error = atomic_load(&m->log_error),
		.log_damaged = atomic_load(&m->log_damaged),
		.seals = atomic_load(&m->seals),
		.seals_signed = s->cfg.seal_secret != NULL,
		.chain_continued = evd_sealer_continued(s->sealer),
		.window_alarm = atomic_load(&m->window_alarm),
		.window_need_bytes = atomic_load(&m->window_need),
		.first_seq = s->first_seq,
		.next_seq = atomic_load(&m->next_seq),
		.clock_steps = atomic_load(&m->clock_steps),
		.clock_last_step_ns = atomic_load(&m->clock_last_step),
	};
	return 0;
}
