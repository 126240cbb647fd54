/* SPDX-License-Identifier: MIT */
/*
 * fwd-window.c - the backlog window: records read from the log at the
 * cursor into a ring of cfg.inflight slots, published in order, moved out
 * by PUBACKs, and the cursor (the lowest unacknowledged seq) written to its
 * file.  After a lost connection every unacknowledged message goes again.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "forward-private.h"
#include "mqtt-private.h"
#include "basic/clock.h"

static struct slot *slot_at(upl_forwarder_t *f, unsigned k)
{
	return &f->win.slots[(f->win.head + k) % f->cfg.inflight];
}

/* The file is written with fsyncs once cfg.cursor_interval_ms has passed
   (and at stop), and in between without them once this many acknowledged
   records are not yet in it: a backlog (after an outage, a restart) goes
   at the broker's speed, and one interval of it can be a whole outage's
   records, all sent again after a kill -9 (uplink-cursor-backlog: the
   file 40,000 records behind the acknowledgements with the timer alone).
   A kill -9 needs no fsync, the page cache outlives the process; only a
   power cut does, and for it the timed write stays: its fsyncs make the
   un-synced renames before it durable too, so after a power cut the file
   is at most one interval's acks old, as with the timer alone, or (on a
   filesystem that can put a rename on the disk before the file's data,
   basic/replace.h) empty or zeroed: cursor damage, the whole log sent
   again, never a gap.  An fsync per 2048 records cut a loopback backlog
   to a quarter of the timer alone's speed; the rename without it costs
   half (bench-uplink, figures.md). */
#define CURSOR_EVERY_RECORDS 2048

void upl_fwd_cursor_flush(upl_forwarder_t *f, bool force)
{
	int64_t now = basic_mono_ns();
	bool due = force || now >= f->win.cursor_due_ns;
	int r;

	if (f->win.cursor == f->win.cursor_synced)
		return;
	if (!due && (f->win.cursor_failing || f->win.cursor < f->win.cursor_written + CURSOR_EVERY_RECORDS))
		return;
	/* the count's write does not move the timer: a backlog's stream of
	   them must not put off the fsynced one */
	r = due ? upl_cursor_store(f->cfg.cursor_path, f->win.cursor)
	        : upl_cursor_store_nosync(f->cfg.cursor_path, f->win.cursor);
	f->win.cursor_failing = r < 0;
	if (r < 0) {
		/* Keep going: the in-memory cursor is right, the file only lags
		   (more duplicates after a crash).  Retry at most once a second:
		   a path that cannot be written (a directory in its place) must
		   not cost a create and an fsync per PUBACK. */
		STAT_ADD(f, cursor_errors, 1);
		stats_error(f, r);
		f->win.cursor_due_ns = now + (f->cfg.cursor_interval_ms > 1000 ? f->cfg.cursor_interval_ms : 1000) *
		                         INT64_C(1000000);
		return;
	}
	f->win.cursor_written = f->win.cursor;
	if (due) {
		f->win.cursor_synced = f->win.cursor;
		f->win.cursor_due_ns = now + (int64_t)f->cfg.cursor_interval_ms * 1000000;
	}
}

/* Drop acknowledged slots from the head: the cursor may only move over a
   contiguous run of acks, or a lost PUBACK for an older message would be
   skipped for good. */
static void window_advance(upl_forwarder_t *f)
{
	while (f->win.n && slot_at(f, 0)->state == SLOT_ACKED) {
		f->win.head = (f->win.head + 1) % f->cfg.inflight;
		f->win.n--;
	}
	f->win.cursor = f->win.n ? slot_at(f, 0)->first_seq : f->win.read_seq;
	/* the file before the stats: what they say acknowledged is never
	   CURSOR_EVERY_RECORDS or more ahead of it (uplink-cursor-backlog) */
	upl_fwd_cursor_flush(f, false);
	pthread_mutex_lock(&f->lock);
	f->st.cursor = f->win.cursor;
	f->st.inflight = f->win.n;
	/* Wake waiters only when one is satisfied: a broadcast per PUBACK
	   costs a context switch per message on a 2-core board. */
	if (f->wait_seq && f->win.cursor >= f->wait_seq) {
		f->wait_seq = 0;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
}

void upl_fwd_on_publish(struct mosquitto *mosq, void *arg, int mid)
{
	upl_forwarder_t *f = arg;

	if (upl_fwd_live_ack(f, mid) || upl_fwd_resend_acked(f, mid))
		return;
	for (unsigned k = 0; k < f->win.n; k++) {
		struct slot *s = slot_at(f, k);

		if (s->state == SLOT_SENT && s->mid == mid) {
			s->state = SLOT_ACKED;
			pthread_mutex_lock(&f->lock);
			f->st.acked++;
			f->st.acked_bytes += s->len;
			pthread_mutex_unlock(&f->lock);
			break;
		}
	}
	window_advance(f);
}

/* Take the next record from the log into a free slot.  1 if one was
   staged (or damage skipped), 0 if nothing can be taken now, -ENOMEM. */
static int window_stage(upl_forwarder_t *f)
{
	struct upl_rec rec;
	struct slot *s;
	int r;

	if (f->win.n == f->cfg.inflight || basic_mono_ns() < f->win.next_poll_ns)
		return 0;
	memset(&rec, 0, sizeof(rec));
	r = f->cfg.source.next(f->cfg.source.ctx, &rec);
	if (r <= 0) {
		if (r < 0) {
			STAT_ADD(f, source_errors, 1);
			stats_error(f, r);
		}
		/* -EBADMSG: the source already skipped the damage, go on; anything
		   else: retry after idle_poll_ms rather than spin on a failing
		   disk.  Never a reason to drop the connection. */
		if (r == -EBADMSG)
			return 1;
		f->win.next_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
		return 0;
	}
	/* Records wholly before the cursor were forwarded already (the source
	   seeks to the record containing the cursor, which may start earlier). */
	if (rec.first_seq + rec.count <= f->win.read_seq || !rec.payload || !rec.len)
		return 1;
	f->live.backlogged = rec.t_last_ns < basic_realtime_ns() - f->cfg.live_window_ns;
	/* Already delivered ahead of the backlog: acknowledged, skip it. */
	if (upl_fwd_ahead_covers(f, rec.first_seq, rec.first_seq + rec.count)) {
		f->win.read_seq = rec.first_seq + rec.count;
		STAT_ADD(f, skipped, rec.count);
		upl_reducer_reset(f->red_backlog);
		window_advance(f);
		return 1;
	}
	s = slot_at(f, f->win.n);
	if (upl_fwd_slot_fill(f, f->red_backlog, s, &rec, f->live.backlogged) < 0) {
		/* The source has moved past this record: rewind it, or the
		   record would be skipped for good.  Try again after a pause. */
		f->cfg.source.seek(f->cfg.source.ctx, f->win.read_seq);
		f->win.next_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
		return -ENOMEM;
	}
	if (upl_fwd_live_adopt(f, s)) {
		/* what goes is the live path's version of it */
		upl_reducer_reset(f->red_backlog);
		STAT_ADD(f, skipped, rec.count);
	}
	f->win.n++;
	f->win.read_seq = rec.first_seq + rec.count;
	return 1;
}

/* Publish staged slots in order while the rate cap allows, staging new
   records from the log as the window frees up.  0 or -errno. */
int upl_fwd_window_publish(upl_forwarder_t *f)
{
	for (;;) {
		unsigned k;
		int r;

		for (k = 0; k < f->win.n && slot_at(f, k)->state != SLOT_STAGED; k++)
			;
		if (k == f->win.n) {
			r = window_stage(f);
			if (r <= 0)
				return r;
			continue;
		}
		if (!upl_fwd_rate_allows(f, slot_at(f, k)))
			return 0;
		r = upl_fwd_slot_publish(f, slot_at(f, k));
		if (r < 0)
			return r;
	}
}

/* True if the oldest unacknowledged message waited too long: the broker
   is stopped or the TCP connection is half-open. */
bool upl_fwd_window_stalled(upl_forwarder_t *f)
{
	int64_t limit = basic_mono_ns() - (int64_t)f->cfg.ack_timeout_ms * 1000000;

	for (unsigned k = 0; k < f->win.n; k++) {
		struct slot *s = slot_at(f, k);

		if (s->state == SLOT_SENT && s->sent_ns < limit)
			return true;
	}
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live.slot[i].used && f->live.slot[i].state == SLOT_SENT && f->live.slot[i].sent_ns < limit)
			return true;
	return false;
}

/* After a lost connection every unacknowledged message goes out again. */
void upl_fwd_window_rewind(upl_forwarder_t *f)
{
	for (unsigned k = 0; k < f->win.n; k++)
		if (slot_at(f, k)->state == SLOT_SENT)
			slot_at(f, k)->state = SLOT_STAGED;
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live.slot[i].used && f->live.slot[i].state == SLOT_SENT)
			f->live.slot[i].state = SLOT_STAGED;
}
