/* SPDX-License-Identifier: MIT */
/*
 * sink-log.c - what the log reports (ENOSPC, I/O errors, retention,
 * recovery, the window and holds) turned into counters, faults said in
 * words (pipeline/faults.c) and events in the log, stored once it takes
 * records again (sink-private.h).
 */
#include <errno.h>
#include <stdatomic.h>

#include "basic/counter.h"
#include "pipeline/faults.h"
#include "sink-private.h"

/* An event of the daemon, now, through the encoder. */
static void daemon_event(pl_sink_t *s, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	pl_sink_encode(s, &it);
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
		s->hold_check_ns = 0; /* pl_sink_hold_watch() says it now */
	}
}

/* A holds file that stays unreadable is noted once a second while it
   lasts (the log reads it again each second), not only when it broke: the
   fault reporter then says it again each minute, and "no more" only once
   it is readable again.  The HOLD_FAULT event in the log marks the change. */
void pl_sink_hold_watch(pl_sink_t *s)
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
   the counters and waits in pend until pl_sink_log_report() got it on disk. */
void pl_sink_log_take(pl_sink_t *s)
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

void pl_sink_log_event(pl_sink_t *s, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	/* Straight into the (empty) encoder: pl_sink_encode() could close the Batch
	   between two of these (a replay closes Batches by record time). */
	pl_sink_clock_class(s, &it);
	if (!rec_encoder_count(s->enc))
		pl_sink_batch_opened(s, it.t_ns);
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
		pl_sink_log_event(s, ACQ_EV_SEAL_CHAIN_NEW, (int64_t)evd_sealer_first(s->sealer), 1);
		s->chain_restarted = false;
	}
	if (sent->err || sent->abandoned)
		pl_sink_log_event(s, ACQ_EV_LOG_FAULT, sent->err, (uint32_t)sent->abandoned);
	else if (sent->damaged)
		pl_sink_log_event(s, ACQ_EV_LOG_FAULT, -EBADMSG, (uint32_t)sent->damaged);
	if (sent->dropped)
		pl_sink_log_event(s, ACQ_EV_LOG_DROPPED, (int64_t)sent->dropped, (uint32_t)(sent->err < 0 ? -sent->err : 0));
	if (sent->unforwarded)
		pl_sink_log_event(s, ACQ_EV_LOG_RETENTION, (int64_t)sent->unforwarded, 1);
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
void pl_sink_log_report(pl_sink_t *s, bool force)
{
	int64_t now = basic_mono_ns();
	struct log_pending sent;
	int r;

	if (!log_pending(s) || (!force && now < s->pend_retry_ns))
		return;
	s->pend_retry_ns = now + LOG_REPORT_RETRY_NS;
	/* The open Batch goes first, on its own: what it costs is counted
	   now and reported with the rest. */
	pl_sink_batch_flush(s);
	pl_sink_log_take(s);
	sent = s->pend;
	log_events(s, &sent);
	r = pl_sink_batch_flush(s);
	if (r == 0)
		r = stor_log_sync(s->log);
	pl_sink_log_take(s);
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
