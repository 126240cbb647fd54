/* SPDX-License-Identifier: MIT */
/*
 * fwd-ahead.c - messages sent ahead of the backlog: live records (the
 * optional live_source) and held windows (upl_forwarder_hold(), the
 * optional hold_source), in the forwarder's ahead slots, and the set of
 * acknowledged ranges the backlog window then skips.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward-private.h"
#include "mqtt-private.h"
#include "basic/clock.h"

/* Remember [lo, hi) as acknowledged; merge with neighbours.  When the set
   is full the range is simply forgotten: the backlog sends it again
   (a duplicate), which is safe. */
static void ahead_add(upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	size_t i = 0;

	while (i < f->live.nahead && f->live.ahead[i].hi < lo)
		i++;
	if (i < f->live.nahead && f->live.ahead[i].lo <= hi) {
		if (lo < f->live.ahead[i].lo)
			f->live.ahead[i].lo = lo;
		if (hi > f->live.ahead[i].hi)
			f->live.ahead[i].hi = hi;
		/* It may now touch the next one. */
		if (i + 1 < f->live.nahead && f->live.ahead[i + 1].lo <= f->live.ahead[i].hi) {
			f->live.ahead[i].hi = f->live.ahead[i + 1].hi;
			memmove(&f->live.ahead[i + 1], &f->live.ahead[i + 2],
			        (f->live.nahead - i - 2) * sizeof(f->live.ahead[0]));
			f->live.nahead--;
		}
		return;
	}
	if (f->live.nahead == AHEAD_MAX)
		return;
	memmove(&f->live.ahead[i + 1], &f->live.ahead[i], (f->live.nahead - i) * sizeof(f->live.ahead[0]));
	f->live.ahead[i] = (struct range){ lo, hi };
	f->live.nahead++;
}

/* True if [lo, hi) was acknowledged live; drops ranges behind lo. */
bool upl_fwd_ahead_covers(upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	while (f->live.nahead && f->live.ahead[0].hi <= lo) {
		memmove(&f->live.ahead[0], &f->live.ahead[1], (f->live.nahead - 1) * sizeof(f->live.ahead[0]));
		f->live.nahead--;
	}
	return f->live.nahead && f->live.ahead[0].lo <= lo && hi <= f->live.ahead[0].hi;
}

bool upl_fwd_live_ack(upl_forwarder_t *f, int mid)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *s = &f->live.slot[i];

		if (s->used && s->state == SLOT_SENT && s->mid == mid) {
			ahead_add(f, s->first_seq, s->first_seq + s->count);
			s->used = false;
			pthread_mutex_lock(&f->lock);
			f->st.acked++;
			f->st.acked_bytes += s->len;
			pthread_mutex_unlock(&f->lock);
			return true;
		}
	}
	return false;
}

/* True if a slot ahead of the backlog carries the record starting at seq. */
static bool ahead_slot(const upl_forwarder_t *f, uint64_t seq)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live.slot[i].used && f->live.slot[i].first_seq == seq)
			return true;
	return false;
}

/* ahead_covers() without dropping anything: for readers other than the backlog. */
static bool ahead_has(const upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < f->live.nahead; i++)
		if (f->live.ahead[i].lo <= lo && hi <= f->live.ahead[i].hi)
			return true;
	return false;
}

/* Read live records into free live slots.  Stops for good once the
   backlog reader has caught up with the live one. */
static void live_read(upl_forwarder_t *f)
{
	for (unsigned i = 0; i < LIVE_SLOTS && f->live.on; i++) {
		struct slot *s = &f->live.slot[i];
		struct upl_rec rec = { 0 };
		int r;

		if (s->used)
			continue;
		if (basic_mono_ns() < f->live.poll_ns)
			return;
		r = f->cfg.live_source.next(f->cfg.live_source.ctx, &rec);
		if (r <= 0) {
			f->live.poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
			return;
		}
		if (rec.first_seq < f->win.read_seq) {
			f->live.on = false;
			return;
		}
		/* The hold reader has it (in flight or acknowledged): once is enough */
		if (ahead_slot(f, rec.first_seq) || ahead_has(f, rec.first_seq, rec.first_seq + rec.count)) {
			upl_reducer_reset(f->red_live); /* went whole, by a held window */
			continue;
		}
		if (rec.payload && rec.len && upl_fwd_slot_fill(f, f->red_live, s, &rec, false) == 0)
			s->used = true;
	}
}

/*
 * The backlog reached a record the live path holds (s, just staged from
 * the log).  Sent and not yet acknowledged: the window takes over that
 * publication (its message id, its bytes), so the record goes out once;
 * publishing it again would be a duplicate for every live record in
 * flight when the backlog catches up.  Not sent: the window sends it.
 * Returns true if s is already in flight.
 */
bool upl_fwd_live_adopt(upl_forwarder_t *f, struct slot *s)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *l = &f->live.slot[i];
		void *buf = s->buf;
		uint32_t cap = s->cap;

		if (!l->used || l->first_seq != s->first_seq || l->count != s->count)
			continue;
		l->used = false;
		if (l->state != SLOT_SENT) {
			s->ever_sent = l->ever_sent; /* its events went out already */
			return false;
		}
		/* Swap the buffers: what a resend after a reconnect sends is
		   what went out (without the historical flag). */
		*s = *l;
		l->buf = buf;
		l->cap = cap;
		return true;
	}
	return false;
}

/* The next window asked for, positioned at its start; false if none. */
static bool hold_take(upl_forwarder_t *f)
{
	struct upl_source *src = &f->cfg.hold_source;
	int r;

	pthread_mutex_lock(&f->lock);
	f->hold.on = f->nholdq > 0;
	if (f->hold.on) {
		f->hold.req = f->holdq[0];
		memmove(f->holdq, f->holdq + 1, (f->nholdq - 1) * sizeof(f->holdq[0]));
		f->nholdq--;
	}
	pthread_mutex_unlock(&f->lock);
	if (!f->hold.on)
		return false;
	f->hold.caught_up = false;
	r = src->seek_time(src->ctx, f->hold.req.from_ns);
	if (r < 0) {
		/* Nothing lost: the backlog still sends it, only not first. */
		STAT_ADD(f, source_errors, 1);
		stats_error(f, r);
		f->hold.on = false;
	}
	return f->hold.on;
}

/* A record already on its way: the backlog has taken it (acknowledged or in
   its window), or it is in a slot ahead of the backlog, or acknowledged
   there (sent live, or by an earlier hold). */
static bool hold_has_gone(const upl_forwarder_t *f, const struct upl_rec *rec)
{
	return rec->first_seq + rec->count <= f->win.read_seq || ahead_slot(f, rec->first_seq) ||
	       ahead_has(f, rec->first_seq, rec->first_seq + rec->count);
}

static struct slot *hold_free_slot(upl_forwarder_t *f)
{
	for (unsigned i = LIVE_SLOTS; i < AHEAD_SLOTS; i++)
		if (!f->live.slot[i].used)
			return &f->live.slot[i];
	return NULL;
}

/*
 * Stage the held window's stored records into free hold slots, each once.
 * The window ends at the first record starting after to_ns (or, when the
 * source does not know when records start, after the first one ending
 * past it: it may hold the window's last samples); while its end is not stored yet (the post
 * window is still being recorded) the reader looks again every
 * idle_poll_ms, until HOLD_WAIT_NS after to_ns.
 */
static void hold_read(upl_forwarder_t *f)
{
	struct upl_source *src = &f->cfg.hold_source;

	/* Bounded: skipping records the backlog already sent costs reads too. */
	for (unsigned reads = 0; reads < 256; reads++) {
		struct slot *s = hold_free_slot(f);
		struct upl_rec rec = { 0 };
		int r;

		if (!s || (!f->hold.on && !hold_take(f)) || basic_mono_ns() < f->hold.poll_ns)
			return;
		r = src->next(src->ctx, &rec);
		if (r < 0)
			STAT_ADD(f, source_errors, 1);
		if (r == -EBADMSG) /* the source skipped the damage */
			continue;
		if (r <= 0) {
			f->hold.caught_up = true;
			if (basic_realtime_ns() < f->hold.req.to_ns + HOLD_WAIT_NS)
				f->hold.poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
			else
				f->hold.on = false;
			return;
		}
		f->hold.caught_up = false;
		if (rec.t_first_ns && rec.t_first_ns > f->hold.req.to_ns) {
			f->hold.on = false; /* wholly past the window */
			return;
		}
		if (rec.payload && rec.len && !hold_has_gone(f, &rec)) {
			if (upl_fwd_slot_fill(f, NULL, s, &rec, rec.t_last_ns < basic_realtime_ns() - f->cfg.live_window_ns) < 0) {
				/* Read it again after a pause. */
				src->seek(src->ctx, rec.first_seq);
				f->hold.poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
				return;
			}
			s->used = true;
		}
		if (rec.t_last_ns > f->hold.req.to_ns)
			f->hold.on = false;
	}
}

/* True while the held window still has stored records to send: the
   backlog waits for them. */
bool upl_fwd_hold_ahead(const upl_forwarder_t *f)
{
	return f->hold.on && !f->hold.caught_up;
}

int upl_fwd_live_publish(upl_forwarder_t *f)
{
	int r;

	if (f->live.on && f->live.backlogged)
		live_read(f);
	if (f->cfg.hold_source.next)
		hold_read(f);
	/* Live first, then the held window (rate capped as the backlog is). */
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *s = &f->live.slot[i];

		if (!s->used || s->state != SLOT_STAGED)
			continue;
		if (i >= LIVE_SLOTS && !upl_fwd_rate_allows(f, s))
			break;
		if (!s->ever_sent && i < LIVE_SLOTS)
			STAT_ADD(f, live_ahead, 1);
		else if (!s->ever_sent)
			STAT_ADD(f, hold_batches, 1);
		r = upl_fwd_slot_publish(f, s);
		if (r < 0)
			return r;
	}
	return 0;
}
