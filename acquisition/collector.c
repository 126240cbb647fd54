/* SPDX-License-Identifier: MIT */
/*
 * collector.c - drain every ring, report overruns, feed the sink.
 *
 * The collector is the single consumer of every ring.  It runs at normal
 * priority; it drains every ring once per idle_us (sooner when behind),
 * which bounds the added latency between acquisition and the log while
 * keeping an idle system idle and a busy one to one wakeup per burst.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acq-private.h"
#include "basic/clock.h"

/* A link-check event taken from a source's check ring, waiting for its
   place in the ring's stream (acq_collector_cfg.sources). */
struct held {
	struct acq_item it;
	bool valid;
};

struct acq_collector {
	struct acq_collector_cfg cfg;
	struct acq_item *buf;      /* drain_max items */
	uint64_t *drops_seen;      /* per ring: drops already reported */
	struct held *held;         /* per ring */
	int64_t next_tick_ns;
	bool behind;               /* this pass found a ring a quarter full */
	struct acq_bell bell;      /* the rings' data bell: sleeps between
	                              passes are cut short by a source that
	                              waits for room (acq_ring_nudge) */
	_Atomic uint32_t period_us; /* the thread's pass period now */
	struct acq_collector_stats stats;
	acq_thread_t *thread;
	atomic_bool stop;
};

int acq_collector_new(const struct acq_collector_cfg *cfg, acq_collector_t **ret_col)
{
	acq_collector_t *c;

	if (!cfg || !ret_col || !cfg->sink || (cfg->nrings && !cfg->rings))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->cfg = *cfg;
	if (!c->cfg.drain_max)
		c->cfg.drain_max = 1024;
	if (!c->cfg.idle_us)
		c->cfg.idle_us = 1000;
	if (!c->cfg.tick_ms)
		c->cfg.tick_ms = 50;
	c->buf = calloc(c->cfg.drain_max, sizeof(*c->buf));
	c->drops_seen = calloc(cfg->nrings ? cfg->nrings : 1, sizeof(uint64_t));
	c->held = calloc(cfg->nrings ? cfg->nrings : 1, sizeof(*c->held));
	if (!c->buf || !c->drops_seen || !c->held) {
		acq_collector_free(c);
		return -ENOMEM;
	}
	atomic_init(&c->stop, false);
	atomic_init(&c->period_us, c->cfg.idle_us);
	atomic_init(&c->bell.seq, 0);
	atomic_init(&c->bell.waiters, 0);
	/* Before any source starts (the daemon opens the collector first); a
	   source that starts earlier only goes unheard until the first pass. */
	for (size_t i = 0; i < c->cfg.nrings; i++)
		atomic_store_explicit(&c->cfg.rings[i]->data, &c->bell, memory_order_release);
	*ret_col = c;
	return 0;
}

acq_collector_t *acq_collector_free(acq_collector_t *c)
{
	if (!c)
		return NULL;
	if (c->thread)
		acq_collector_stop(c);
	/* The rings outlive us (a reload makes a new collector over them),
	   their sources are stopped: none may ring a freed bell. */
	for (size_t i = 0; i < c->cfg.nrings; i++)
		atomic_store_explicit(&c->cfg.rings[i]->data, NULL, memory_order_relaxed);
	free(c->buf);
	free(c->drops_seen);
	free(c->held);
	free(c);
	return NULL;
}

/* Up to drain_max items of ring i into buf; its source, if it waits for
   room, is woken at once to fill the ring again while we sink these. */
static size_t take(acq_collector_t *c, size_t i)
{
	size_t n = acq_ring_item_pop_bulk(c->cfg.rings[i], c->buf, c->cfg.drain_max);

	if (n)
		acq_ring_took(c->cfg.rings[i]);
	return n;
}

static int collector_sink(acq_collector_t *c, const struct acq_item *items, size_t n)
{
	int r = c->cfg.sink(c->cfg.ctx, items, n);

	if (r < 0)
		c->stats.sink_errors++;
	c->stats.items += n;
	return r;
}

/* The check ring of ring i's source, NULL if none. */
static struct acq_ring *check_ring(acq_collector_t *c, size_t i)
{
	return c->cfg.sources && c->cfg.sources[i] ? acq_source_check_ring(c->cfg.sources[i]) : NULL;
}

/* A ring that dropped since we last looked gets one overrun event, so the
   loss is in the record itself, not only in a counter (its source's check
   ring counts with it). */
static void collector_overruns(acq_collector_t *c, size_t i)
{
	struct acq_ring *side = check_ring(c, i);
	uint64_t d = acq_ring_drops(c->cfg.rings[i]) + (side ? acq_ring_drops(side) : 0);
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT };

	if (d == c->drops_seen[i])
		return;
	ev.t_ns = basic_realtime_ns();
	ev.bus = c->cfg.ring_bus ? c->cfg.ring_bus[i] : ACQ_SOURCE_DAEMON;
	ev.event.code = ACQ_EV_RING_OVERRUN;
	ev.event.arg = (int64_t)(d - c->drops_seen[i]);
	c->stats.ring_drops += d - c->drops_seen[i];
	c->drops_seen[i] = d;
	collector_sink(c, &ev, 1);
}

/* The next check event of ring i that may go now: stamped at or before
   the watermark w, or held long enough (a device stamping on another
   clock).  It stays in held[i] until the caller takes it. */
static bool next_check(acq_collector_t *c, size_t i, struct acq_ring *side, int64_t w, int64_t now)
{
	struct held *h = &c->held[i];

	if (!h->valid && !(h->valid = acq_ring_item_pop(side, &h->it)))
		return false;
	return h->it.t_ns <= w || now - h->it.t_ns >= ACQ_MERGE_HOLD_MAX_NS;
}

static size_t take_check(acq_collector_t *c, size_t i)
{
	c->held[i].valid = false;
	collector_sink(c, &c->held[i].it, 1);
	return 1;
}

/*
 * Drain ring i and merge its source's check events into the stream by
 * time.  w is read before the ring is drained: the source stores it after
 * pushing everything stamped before it, so once the ring is empty, every
 * check event up to w has found its place.
 */
static size_t drain_merged(acq_collector_t *c, size_t i, struct acq_ring *side)
{
	int64_t w = acq_source_watermark(c->cfg.sources[i]), now = basic_realtime_ns();
	size_t total = 0, n, k, j;

	for (int pass = 0; pass < 8; pass++) {
		n = take(c, i);
		if (!n)
			break;
		for (k = 0; next_check(c, i, side, w, now); k = j) {
			/* Its place: before the first item stamped after it.  None
			   in this batch: the next one (or an empty ring) decides. */
			for (j = k; j < n && c->buf[j].t_ns <= c->held[i].it.t_ns; j++)
				;
			if (j == n)
				break;
			if (j > k)
				collector_sink(c, c->buf + k, j - k);
			total += take_check(c, i);
		}
		collector_sink(c, c->buf + k, n - k);
		total += n;
	}
	if (!acq_ring_count(c->cfg.rings[i]))
		while (next_check(c, i, side, w, now))
			total += take_check(c, i);
	return total;
}

static size_t drain_ring(acq_collector_t *c, size_t i)
{
	struct acq_ring *side = check_ring(c, i);
	size_t total = 0, n;

	/* A ring a quarter full when we come: the period is too long for its
	   rate (a small ring_slots, a faster bus than the period assumes). */
	if (acq_ring_count(c->cfg.rings[i]) * 4 >= c->cfg.rings[i]->nslots)
		c->behind = true;
	if (side && (c->held[i].valid || acq_ring_count(side)))
		return drain_merged(c, i, side);
	/* Bounded per ring per pass so one flooded bus cannot starve the
	   others' rings. */
	for (int pass = 0; pass < 8; pass++) {
		n = take(c, i);
		if (!n)
			break;
		collector_sink(c, c->buf, n);
		total += n;
	}
	return total;
}

int acq_collector_poll(acq_collector_t *c)
{
	size_t total = 0;
	int64_t now;

	if (!c)
		return -EINVAL;
	c->stats.loops++;
	c->behind = false;
	for (size_t i = 0; i < c->cfg.nrings; i++) {
		total += drain_ring(c, i);
		collector_overruns(c, i);
	}
	now = basic_mono_ns();
	if (c->cfg.tick && now >= c->next_tick_ns) {
		c->next_tick_ns = now + (int64_t)c->cfg.tick_ms * 1000000;
		if (c->cfg.tick(c->cfg.ctx) < 0)
			c->stats.sink_errors++;
	}
	return (int)total;
}

/* A ring a quarter full or more: the next pass is due now. */
static bool any_quarter(const acq_collector_t *c)
{
	for (size_t i = 0; i < c->cfg.nrings; i++)
		if (acq_ring_count(c->cfg.rings[i]) * 4 >= c->cfg.rings[i]->nslots)
			return true;
	return false;
}

/* Sleep until the period's end, or until a source that waits for room
   (a replay) rings: a ring is a quarter full, or it ended.  A live source
   never rings, so on a live board this is the period's sleep. */
static void collector_wait(acq_collector_t *c, int64_t until)
{
	uint32_t key = acq_bell_prepare(&c->bell);

	if (!any_quarter(c) && !atomic_load_explicit(&c->stop, memory_order_acquire))
		acq_bell_wait(&c->bell, key, until);
	acq_bell_done(&c->bell);
}

/*
 * One pass per period while the rings keep up: a pass that took less than
 * a full drain_max found every ring (nearly) empty, so the next one waits
 * for the period's end instead of coming back at once for the one item
 * that arrived meanwhile.  Each wakeup then takes a burst (a period of
 * every bus), not an item or two, and the added latency stays bounded by
 * idle_us.  A pass that took drain_max or more (a backlog) goes on at
 * once.  So does a pass that found a ring a quarter full, and it halves
 * the period (down to 1/16 of idle_us): a ring smaller or a bus faster
 * than idle_us assumes is drained before it overflows, and a replay's
 * source, which waits for room when its ring is full, is not held up for
 * a whole period.  A pass after a full sleep that found every ring below
 * a quarter doubles the period back.  The period is kept on
 * CLOCK_MONOTONIC from the pass's start, so the time the pass took is not
 * added to it.
 */
static void *collector_main(void *p)
{
	acq_collector_t *c = p;
	int64_t idle = (int64_t)c->cfg.idle_us * 1000, period = idle;
	bool slept = true;

	while (!atomic_load_explicit(&c->stop, memory_order_acquire)) {
		int64_t start = basic_mono_ns();
		bool backlog = (size_t)acq_collector_poll(c) >= c->cfg.drain_max;

		if (!backlog && c->behind)
			period = period / 2 > idle / 16 ? period / 2 : idle / 16;
		else if (!backlog && slept && period < idle)
			period = period * 2 < idle ? period * 2 : idle;
		atomic_store_explicit(&c->period_us, (uint32_t)(period / 1000), memory_order_relaxed);
		slept = !backlog && !c->behind;
		if (slept)
			collector_wait(c, start + period);
	}
	/* Producers are stopped before us: drain what they left. */
	while (acq_collector_poll(c) > 0)
		;
	return NULL;
}

int acq_collector_start(acq_collector_t *c, const struct acq_thread_cfg *tcfg)
{
	struct acq_thread_cfg def = { .name = "collector", .priority = 0, .cpu = -1 };

	if (!c || c->thread)
		return -EINVAL;
	atomic_store(&c->stop, false);
	return acq_thread_start(tcfg ? tcfg : &def, collector_main, c, &c->thread, NULL);
}

int acq_collector_stop(acq_collector_t *c)
{
	if (!c || !c->thread)
		return -EINVAL;
	atomic_store_explicit(&c->stop, true, memory_order_release);
	acq_bell_ring(&c->bell); /* not a whole period's wait */
	c->thread = acq_thread_join(c->thread);
	return 0;
}

uint32_t acq_collector_period_us(const acq_collector_t *c)
{
	return c ? atomic_load_explicit(&c->period_us, memory_order_relaxed) : 0;
}

int acq_collector_stats(const acq_collector_t *c, struct acq_collector_stats *ret)
{
	if (!c || !ret)
		return -EINVAL;
	*ret = c->stats;
	return 0;
}
