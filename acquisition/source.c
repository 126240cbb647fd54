/* SPDX-License-Identifier: MIT */
/*
 * source.c - a source's loop (source.h): recv, stamp, push, count; the
 * error pauses, the gone/backoff/reopen cycle, the drain at stop, pacing.
 *
 * One job over ~600 lines: the realtime loop of a source, kept in one file so
 * the RT path (no allocation, no lock, bounded waits) can be checked whole.
 *
 * The loop is the realtime path of a live bus: no allocation (everything
 * is allocated by acq_source_new), no logging, no locks, no call that can
 * block other than recv() and the bounded waits below.  Link checks that
 * may block are the monitor's (monitor.c).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acq-pace.h"
#include "acq-private.h"
#include "basic/clock.h"
#include "basic/counter.h"

#define SRC_BATCH 64         /* items per recv() */
#define SRC_TIMEOUT_MS 100   /* so the loop sees a stop request */
#define SRC_DRAIN_MAX 1024   /* recv() calls at stop, at most */
#define SRC_CHECK_SLOTS 64   /* link-check events in flight to the collector */
#define MS_NS BASIC_NS_PER_MS
/* Device gone: reopen after a wait that doubles from 100 ms to 5 s (each
   wait drawn from the upper half of its step); other errors: a pause from
   10 ms to 1 s, so no error path spins. */
#define BACKOFF_MIN_NS (100 * MS_NS)
#define BACKOFF_MAX_NS (5000 * MS_NS)
#define PAUSE_MIN_NS (10 * MS_NS)
#define PAUSE_MAX_NS (1000 * MS_NS)
/* A coalescing wait longer than the stop poll would hold a stop back. */
#define COALESCE_MAX_NS (SRC_TIMEOUT_MS * MS_NS)
_Static_assert(COALESCE_MAX_NS == ACQ_SOURCE_COALESCE_MAX_NS, "source.h's bound is the stop poll's");

struct acq_source {
	struct acq_source_cfg cfg;
	acq_thread_t *thread;
	atomic_bool stop;
	atomic_bool done;          /* ended by itself (-ENODATA) */
	_Atomic uint64_t items, errors;
	struct acq_latency latency;
	/*
	 * The presence (struct acq_link_state), written by the source's
	 * thread only.  losses/reopens are stored last with release, so a
	 * reader that loads them with acquire sees the details that go with
	 * them.  link is also half of the hand-shake with the monitor (see
	 * source_quiesce).
	 */
	_Atomic uint32_t link;     /* enum acq_link */
	_Atomic uint64_t losses, reopens;
	_Atomic int cause, reopen_err;
	_Atomic uint32_t attempts;
	_Atomic int64_t gone_ns, back_ns;
	_Atomic uint32_t blind_ms;
	int64_t backoff_ns;        /* source thread: the next reopen step */
	uint64_t rng;              /* source thread: jitter */
	struct acq_pace pace;      /* source thread: pace_speed > 0 */
	/* Link checks (check != NULL only). */
	atomic_bool checking;      /* the monitor is inside check() */
	_Atomic int64_t watermark; /* see acq_source_watermark() */
	struct acq_ring check_ring;
	struct acq_item *check_buf;
};

static bool stopping(const acq_source_t *s)
{
	return atomic_load_explicit(&((acq_source_t *)s)->stop, memory_order_relaxed);
}

/* ------------------------------------------------------------ pushing */

/* A source that waits for room (a replay): until want slots are free, or
   once it has to wait, a quarter of the ring (acq_ring_room_wanted), on
   the ring's room bell, which the collector rings after a take that left
   that much (it looked every 100 us before, and slept meanwhile when the
   collector had already made room).  A stop is seen within
   SRC_TIMEOUT_MS.  False when stopping. */
static bool wait_room(acq_source_t *s, size_t want)
{
	struct acq_ring *ring = s->cfg.ring;

	if (ring->nslots - acq_ring_count(ring) >= want)
		return true;
	want = acq_ring_room_wanted(ring, want); /* now that it waits */
	while (ring->nslots - acq_ring_count(ring) < want) {
		uint32_t key;

		if (stopping(s))
			return false;
		/* Full enough to wait: the collector may be asleep below its
		   quarter mark (a ring of fewer than 4 batches). */
		acq_ring_wake_consumer(ring);
		key = acq_bell_prepare(&ring->room);
		if (ring->nslots - acq_ring_count(ring) < want)
			acq_bell_wait(&ring->room, key, basic_mono_ns() + SRC_TIMEOUT_MS * MS_NS);
		acq_bell_done(&ring->room);
	}
	return true;
}

/* One item in, waiting for room if this source may wait.  False only
   when a stop came while waiting. */
static bool push_one(acq_source_t *s, struct acq_item *it)
{
	struct acq_ring *ring = s->cfg.ring;

	if (!s->cfg.keep_bus)
		it->bus = s->cfg.bus;
	/* We are the only producer: once there is room it stays, so the push
	   below cannot fail (and count a drop that did not happen). */
	if (s->cfg.backpressure && !wait_room(s, 1))
		return false;
	acq_ring_item_push(ring, it); /* full (live): dropped, counted by the ring */
	if (s->cfg.backpressure)
		acq_ring_nudge(ring);
	return true;
}

/* How many items the next recv() may return.  A source that waits for room
   waits here, before reading, until a whole batch fits: what it reads is
   then always pushed, also when a stop comes.  0 when stopping. */
static size_t room(acq_source_t *s)
{
	struct acq_ring *ring = s->cfg.ring;
	size_t want = ring->nslots < SRC_BATCH ? ring->nslots : SRC_BATCH;

	if (s->cfg.pace_speed > 0)
		want = 1; /* each item waits for its time: read one, push one */
	if (s->cfg.backpressure && !wait_room(s, want))
		return 0;
	return want;
}

static void event(acq_source_t *s, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = s->cfg.bus };

	ev.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	push_one(s, &ev);
}

/* ------------------------------------------------------------ presence */

static void link_lost(acq_source_t *s, int cause, int64_t now)
{
	atomic_store_explicit(&s->cause, cause, memory_order_relaxed);
	atomic_store_explicit(&s->reopen_err, 0, memory_order_relaxed);
	atomic_store_explicit(&s->attempts, 0, memory_order_relaxed);
	atomic_store_explicit(&s->gone_ns, now, memory_order_relaxed);
	/* seq_cst: the first half of the hand-shake with the monitor. */
	atomic_store(&s->link, ACQ_LINK_GONE);
	atomic_store_explicit(&s->losses, atomic_load_explicit(&s->losses, memory_order_relaxed) + 1,
	                      memory_order_release);
}

static void link_back(acq_source_t *s, uint32_t attempts, uint32_t blind_ms, int64_t now)
{
	atomic_store_explicit(&s->attempts, attempts, memory_order_relaxed);
	atomic_store_explicit(&s->blind_ms, blind_ms, memory_order_relaxed);
	atomic_store_explicit(&s->back_ns, now, memory_order_relaxed);
	/* seq_cst (a release): the monitor that sees UP sees the device as
	   reopen() left it. */
	atomic_store(&s->link, ACQ_LINK_UP);
	atomic_store_explicit(&s->reopens, atomic_load_explicit(&s->reopens, memory_order_relaxed) + 1,
	                      memory_order_release);
}

/* A driver that reconnects by itself (Modbus): its events tell the presence. */
static void follow_link(acq_source_t *s, const struct acq_item *items, int n)
{
	for (int i = 0; i < n; i++) {
		if (items[i].kind != ACQ_ITEM_EVENT)
			continue;
		if (items[i].event.code == s->cfg.link_down_code)
			link_lost(s, (int)items[i].event.arg, basic_mono_ns());
		else if (items[i].event.code == s->cfg.link_up_code &&
		         atomic_load_explicit(&s->link, memory_order_relaxed) != ACQ_LINK_UP)
			link_back(s, (uint32_t)items[i].event.arg, items[i].event.detail, basic_mono_ns());
	}
}

/* ------------------------------------------------------------ waiting */

/* Sleep ns on CLOCK_MONOTONIC, waking every SRC_TIMEOUT_MS to see a stop
   request (SIGTERM); false when stopping. */
static bool pause_ns(acq_source_t *s, int64_t ns)
{
	int64_t end = basic_mono_ns() + ns;

	for (;;) {
		int64_t now = basic_mono_ns(), until = now + SRC_TIMEOUT_MS * MS_NS;

		if (stopping(s))
			return false;
		if (now >= end)
			return true;
		basic_sleep_until(CLOCK_MONOTONIC, until < end ? until : end);
	}
}

/* A wait from the upper half of step (xorshift64): never shorter than half
   the step, and buses or boards that lost their devices together (a USB
   hub, a power dip) do not all retry in step. */
static int64_t jitter(acq_source_t *s, int64_t step)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return step / 2 + (int64_t)(s->rng % (uint64_t)(step / 2 + 1));
}

/*
 * The second half of the hand-shake with the monitor: link is already
 * GONE (seq_cst store), so a monitor that had not yet entered check()
 * will not; one that had is waited for here.  Either it sees GONE, or we
 * see it checking (both sides store, then load, seq_cst).  The wait is
 * one netlink round-trip at most; false when a stop came first (the
 * device then stays open until it is freed, after the monitor stopped).
 */
static bool quiesce(acq_source_t *s)
{
	while (atomic_load(&s->checking)) {
		if (stopping(s))
			return false;
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + MS_NS);
	}
	return true;
}

static void publish_watermark(acq_source_t *s, int64_t t)
{
	if (s->check_buf && t > atomic_load_explicit(&s->watermark, memory_order_relaxed))
		atomic_store_explicit(&s->watermark, t, memory_order_release);
}

/* A reopen that failed because the device is not there (its path or
   interface missing, down): its return is a sign ops->await sees. */
static bool absent(int r)
{
	return r == -ENOENT || r == -ENODEV || r == -ENXIO || r == -ENETDOWN;
}

/*
 * Wait until due, or, when watch, until ops->await sees a sign of the
 * device's return; in slices of SRC_TIMEOUT_MS, so a stop is seen.  True
 * when it is time to try the reopen, false when stopping.  A sign sets
 * *sign_ns (CLOCK_MONOTONIC) if it is 0: the first sign is when the
 * device came back, the start of the blind time.
 */
static bool await_back(acq_source_t *s, int64_t due, bool watch, int64_t *sign_ns)
{
	for (;;) {
		int64_t now = basic_mono_ns(), left = due - now;
		int w = -1;

		if (stopping(s))
			return false;
		if (left <= 0) {
			/* A sign already there when the timed step comes
			   still starts the blind time. */
			if (watch && !*sign_ns && s->cfg.ops->await(s->cfg.ctx, 0) > 0)
				*sign_ns = now;
			return true;
		}
		if (left > SRC_TIMEOUT_MS * MS_NS)
			left = SRC_TIMEOUT_MS * MS_NS;
		if (watch)
			w = s->cfg.ops->await(s->cfg.ctx, (int)((left + MS_NS - 1) / MS_NS));
		if (w > 0) {
			if (!*sign_ns)
				*sign_ns = basic_mono_ns();
			return !stopping(s);
		}
		if (w < 0) /* nothing watched (now): a timed wait */
			basic_sleep_until(CLOCK_MONOTONIC, now + left);
	}
}

/*
 * When to try again after a reopen that failed with r, and whether a sign
 * of the device's return may come first (*watch).  Absent, with a watch:
 * its return is the sign; the timed retry is only a safety net (a sign
 * missed, a watch that failed), at the longest step, and it does not
 * grow the backoff.  There but failing (an adapter that does not answer,
 * permissions): only the timed steps retry it, a sign of its path would
 * be no news; its steps start from the shortest when it has just come
 * back, since the waits for its return said nothing about it.
 */
static int64_t retry_due(acq_source_t *s, int r, bool *watch)
{
	int64_t now = basic_mono_ns(), step;

	if (s->cfg.ops->await && absent(r)) {
		*watch = true;
		return now + jitter(s, BACKOFF_MAX_NS);
	}
	if (*watch && s->cfg.ops->await)
		s->backoff_ns = BACKOFF_MIN_NS; /* it was absent until now */
	*watch = false;
	step = s->backoff_ns;
	s->backoff_ns = s->backoff_ns * 2 < BACKOFF_MAX_NS ? s->backoff_ns * 2 : BACKOFF_MAX_NS;
	return now + jitter(s, step);
}

/*
 * The device went away (recv said -ENODEV): say so (an event, the state
 * for stat and run), close it at once, and reopen it until it is back or
 * we stop.  An absent device is reopened as soon as ops->await sees it
 * return (a tty path created, an interface up), so the bus is not lost
 * for a backoff step after the return; besides, and alone for a device
 * that is there but fails to open (an adapter that does not answer), a
 * bounded, jittered, exponential wait.  The thread then sleeps all but a
 * few microseconds per attempt.  A device that delivered nothing and was
 * up for less than the longest wait keeps its step, so one that opens and
 * fails again at once (a flapping hub, a file that opens but does not
 * read) is retried every few seconds, not ten times a second.  Reopening
 * allocates nothing: the drivers keep their buffers across release().
 */
static void gone(acq_source_t *s)
{
	int64_t t0 = basic_mono_ns(), back = atomic_load_explicit(&s->back_ns, memory_order_relaxed), due, sign = 0;
	int cause = s->cfg.ops->gone_cause ? s->cfg.ops->gone_cause(s->cfg.ctx) : -ENODEV;
	uint32_t attempts = 0, blind = ACQ_BLIND_UNKNOWN;
	bool watch = s->cfg.ops->await != NULL;
	int r;

	if (!back || t0 - back >= BACKOFF_MAX_NS || s->backoff_ns < BACKOFF_MIN_NS)
		s->backoff_ns = BACKOFF_MIN_NS;
	event(s, ACQ_EV_CAN_GONE, cause, 0);
	link_lost(s, cause, t0);
	/* Everything it read is in the ring: checks found before now may go. */
	publish_watermark(s, basic_realtime_ns());
	if (!quiesce(s))
		return;
	s->cfg.ops->release(s->cfg.ctx);
	due = basic_mono_ns() + jitter(s, s->backoff_ns);
	s->backoff_ns = s->backoff_ns * 2 < BACKOFF_MAX_NS ? s->backoff_ns * 2 : BACKOFF_MAX_NS;
	do {
		if (!await_back(s, due, watch, &sign))
			return; /* stopping: leave it closed */
		r = s->cfg.ops->reopen(s->cfg.ctx);
		atomic_store_explicit(&s->attempts, ++attempts, memory_order_relaxed);
		if (r < 0) {
			/* Not there after all (a sign of another name's
			   change): the blind time starts at the next sign.
			   There but failing: it started at this one. */
			if (absent(r))
				sign = 0;
			atomic_store_explicit(&s->reopen_err, r, memory_order_relaxed);
			atomic_store_explicit(&s->link, ACQ_LINK_REOPENING, memory_order_relaxed);
			due = retry_due(s, r, &watch);
		}
	} while (r < 0);
	back = basic_mono_ns();
	if (sign)
		blind = (back - sign) / MS_NS < ACQ_BLIND_UNKNOWN ? (uint32_t)((back - sign) / MS_NS) : ACQ_BLIND_UNKNOWN - 1;
	link_back(s, attempts, blind, back);
	/* How long it was gone is the time between the GONE and BACK events;
	   the blind time after its return is known only here. */
	event(s, ACQ_EV_CAN_BACK, attempts, blind);
}

/* ------------------------------------------------------------ the loop */

/* Hand what recv gave to the ring: paced if asked, latency stamped,
   counted; and tell the collector how far the stream has come. */
static void deliver(acq_source_t *s, struct acq_item *items, int n, int64_t before, int64_t now)
{
	int pushed = 0;

	if (s->cfg.link_down_code || s->cfg.link_up_code)
		follow_link(s, items, n);
	if (s->cfg.pace_speed <= 0 && n > 0) {
		if (!s->cfg.keep_bus)
			for (int i = 0; i < n; i++)
				items[i].bus = s->cfg.bus;
		/* One publish for the whole read (room() made room first;
		   full, a live bus: the rest dropped, counted by the ring). */
		acq_ring_item_push_bulk(s->cfg.ring, items, (size_t)n);
		if (s->cfg.backpressure)
			acq_ring_nudge(s->cfg.ring);
		pushed = n;
	}
	for (; pushed < n; pushed++) {
		if (s->cfg.pace_speed > 0 && !acq_pace_wait(&s->pace, items[pushed].t_ns, -1, &s->stop))
			break; /* stopping within a paced gap */
		if (!s->cfg.keep_bus)
			items[pushed].bus = s->cfg.bus;
		/* No wait here: room() made room for all of them first.  Full
		   (a live bus): dropped, counted by the ring. */
		acq_ring_item_push(s->cfg.ring, &items[pushed]);
	}
	if (s->cfg.stamp_latency && n > 0) {
		/* One clock read per batch (the loop's, right after recv):
		   the newest frame's age is the latency this wakeup added. */
		acq_latency_add(&s->latency, now - items[n - 1].t_ns);
	}
	basic_counter_add(&s->items, (uint64_t)pushed);
	if (s->cfg.ops->pushed && pushed)
		s->cfg.ops->pushed(s->cfg.ctx, items, (size_t)pushed);
	/* Items come in stamp order: all those stamped before the last one
	   are in the ring.  A wait that found nothing means all those stamped
	   before it began are. */
	publish_watermark(s, n > 0 ? items[n - 1].t_ns : before);
}

/*
 * A live bus at 8,000 frames/s wakes the thread once per frame if the next
 * recv follows at once: a wakeup, a poll and a recvmmsg for one frame each
 * time, most of the cost of acquisition.  After a wakeup that did not fill
 * its batch, wait coalesce_ns from the end of that recv so the frames that
 * arrive meanwhile come in one recvmmsg.  A frame waits at most coalesce_ns
 * longer (the latency histogram shows it); a full batch means more is
 * queued, and the loop reads on at once; a lone frame after a long wait
 * means a slow bus, read on at once too.  The socket queue holds the
 * frames of the wait (a 1 Mbit/s bus sends 8 per ms).  An idle bus still
 * sleeps in recv, and a stop is seen within one wait.
 */
static void coalesce(acq_source_t *s, int n, size_t max, int64_t waited)
{
	struct timespec ts;

	if (s->cfg.coalesce_ns <= 0 || n <= 0 || (size_t)n >= max || stopping(s))
		return;
	/* One frame that recv waited longer than the window for: the bus is
	   slower than a frame per window, and the wait would only add a
	   wakeup per frame (recv's own wait already was one). */
	if (n == 1 && waited >= s->cfg.coalesce_ns)
		return;
	/* Relative: the loop's clock reads already told how long recv took,
	   and a third read per burst only for an absolute deadline would cost
	   more than it buys (a signal ends the wait early: a shorter
	   window, nothing lost). */
	ts = basic_ns_to_ts(s->cfg.coalesce_ns);
	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* At stop, take what the device already holds (bounded): frames that
   reached the socket before SIGTERM were on the bus, so they are
   recorded, not left behind in a queue that is about to be closed. */
static void drain(acq_source_t *s)
{
	struct acq_item items[SRC_BATCH];
	int n;

	for (int k = 0; k < SRC_DRAIN_MAX && (n = s->cfg.ops->recv(s->cfg.ctx, items, SRC_BATCH, 0)) > 0; k++) {
		for (int i = 0; i < n; i++)
			push_one(s, &items[i]);
		basic_counter_add(&s->items, (uint64_t)n);
		if (s->cfg.ops->pushed)
			s->cfg.ops->pushed(s->cfg.ctx, items, (size_t)n);
	}
}

static void *source_main(void *p)
{
	acq_source_t *s = p;
	struct acq_item items[SRC_BATCH];
	int64_t pause = PAUSE_MIN_NS;
	size_t max;

	/* Two clock reads per burst, both CLOCK_REALTIME: before recv (the
	   watermark of an empty wait, the start of recv's wait) and after it
	   (the latency stamp, the end of the wait); a step in between
	   misjudges at most one coalescing wait. */
	bool clocked = s->check_buf || s->cfg.coalesce_ns > 0 || s->cfg.stamp_latency;

	while (!stopping(s) && (max = room(s)) > 0) {
		int64_t before = clocked ? basic_realtime_ns() : 0, now;
		int n = s->cfg.ops->recv(s->cfg.ctx, items, max, SRC_TIMEOUT_MS);

		if (n == -ENODATA) {
			atomic_store(&s->done, true);
			/* the last items, however few, are not held back */
			acq_ring_wake_consumer(s->cfg.ring);
			break;
		}
		if (n == -ENODEV && s->cfg.ops->release) {
			gone(s);
			continue;
		}
		if (n < 0) {
			basic_counter_add(&s->errors, 1);
			pause_ns(s, pause);
			pause = pause * 2 < PAUSE_MAX_NS ? pause * 2 : PAUSE_MAX_NS;
			continue;
		}
		pause = PAUSE_MIN_NS;
		if (n > 0) /* it delivers: the next loss starts the steps again */
			s->backoff_ns = BACKOFF_MIN_NS;
		now = clocked && n > 0 ? basic_realtime_ns() : before;
		deliver(s, items, n, before, now);
		coalesce(s, n, max, now - before);
	}
	if (s->cfg.drain_at_stop && !atomic_load(&s->done) &&
	    atomic_load_explicit(&s->link, memory_order_relaxed) == ACQ_LINK_UP)
		drain(s);
	/* Nothing more comes from this thread: every held check may go. */
	if (s->check_buf)
		atomic_store_explicit(&s->watermark, INT64_MAX, memory_order_release);
	return NULL;
}

/* ------------------------------------------------------------ set-up */

int acq_source_new(const struct acq_source_cfg *cfg, acq_source_t **ret)
{
	acq_source_t *s;

	if (!cfg || !ret || !cfg->ops || !cfg->ops->recv || !cfg->ring ||
	    !cfg->ops->release != !cfg->ops->reopen || !isfinite(cfg->pace_speed) ||
	    cfg->coalesce_ns < 0 || cfg->coalesce_ns > COALESCE_MAX_NS)
		return -EINVAL;
	/* aligned_alloc: the check ring pads its indices to cache lines. */
	s = aligned_alloc(_Alignof(acq_source_t), sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (cfg->pace_speed > 0)
		acq_pace_init(&s->pace, cfg->pace_speed);
	if (cfg->ops->check) {
		s->check_buf = calloc(SRC_CHECK_SLOTS, sizeof(*s->check_buf));
		if (!s->check_buf) {
			free(s);
			return -ENOMEM;
		}
		acq_ring_init(&s->check_ring, s->check_buf, SRC_CHECK_SLOTS, sizeof(*s->check_buf));
	}
	s->backoff_ns = BACKOFF_MIN_NS;
	s->rng = cfg->seed | 1; /* xorshift must not start at 0 */
	atomic_init(&s->watermark, INT64_MIN);
	atomic_init(&s->blind_ms, ACQ_BLIND_UNKNOWN);
	*ret = s;
	return 0;
}

acq_source_t *acq_source_free(acq_source_t *s)
{
	if (!s)
		return NULL;
	if (s->thread)
		acq_source_stop(s);
	free(s->check_buf);
	free(s);
	return NULL;
}

int acq_source_start(acq_source_t *s, const struct acq_thread_cfg *tcfg, int *ret_degraded)
{
	struct acq_thread_cfg def = { .name = "source", .cpu = -1 };

	if (!s || s->thread)
		return -EINVAL;
	atomic_store(&s->stop, false);
	return acq_thread_start(tcfg ? tcfg : &def, source_main, s, &s->thread, ret_degraded);
}

void acq_source_request_stop(acq_source_t *s)
{
	if (s)
		atomic_store_explicit(&s->stop, true, memory_order_relaxed);
}

int acq_source_stop(acq_source_t *s)
{
	if (!s || !s->thread)
		return -EINVAL;
	acq_source_request_stop(s);
	s->thread = acq_thread_join(s->thread);
	return 0;
}

bool acq_source_done(const acq_source_t *s)
{
	return !s || atomic_load(&((acq_source_t *)s)->done);
}

int acq_source_stats(const acq_source_t *s, struct acq_source_stats *ret)
{
	acq_source_t *m = (acq_source_t *)s;

	if (!s || !ret)
		return -EINVAL;
	*ret = (struct acq_source_stats){
		.items = atomic_load_explicit(&m->items, memory_order_relaxed),
		.errors = atomic_load_explicit(&m->errors, memory_order_relaxed),
		.check_drops = s->check_buf ? acq_ring_drops(&s->check_ring) : 0,
	};
	return 0;
}

int64_t acq_source_coalesce_ns(const acq_source_t *s)
{
	return s ? s->cfg.coalesce_ns : 0;
}

int acq_source_link(const acq_source_t *s, struct acq_link_state *ret)
{
	acq_source_t *m = (acq_source_t *)s;

	if (!s || !ret)
		return -EINVAL;
	ret->losses = atomic_load_explicit(&m->losses, memory_order_acquire);
	ret->reopens = atomic_load_explicit(&m->reopens, memory_order_acquire);
	ret->state = atomic_load_explicit(&m->link, memory_order_relaxed);
	ret->cause = atomic_load_explicit(&m->cause, memory_order_relaxed);
	ret->reopen_err = atomic_load_explicit(&m->reopen_err, memory_order_relaxed);
	ret->attempts = atomic_load_explicit(&m->attempts, memory_order_relaxed);
	ret->gone_ns = atomic_load_explicit(&m->gone_ns, memory_order_relaxed);
	ret->back_ns = atomic_load_explicit(&m->back_ns, memory_order_relaxed);
	ret->blind_ms = atomic_load_explicit(&m->blind_ms, memory_order_relaxed);
	return 0;
}

const struct acq_latency *acq_source_latency(const acq_source_t *s)
{
	return s ? &s->latency : NULL;
}

const char *acq_link_name(enum acq_link state)
{
	static const char *const names[ACQ_LINK_MAX] = { "up", "gone", "reopening" };

	return (unsigned)state < ACQ_LINK_MAX ? names[state] : "?";
}

/* ------------------------------------------------------ for the others */

struct acq_ring *acq_source_check_ring(acq_source_t *s)
{
	return s && s->check_buf ? &s->check_ring : NULL;
}

int64_t acq_source_watermark(const acq_source_t *s)
{
	return atomic_load_explicit(&((acq_source_t *)s)->watermark, memory_order_acquire);
}

/*
 * The monitor's side of the hand-shake (monitor.c): check() only while the
 * source is up, and never while the loop releases or reopens the device.
 * Returns the number of events put in the check ring.
 */
int acq_source_check(acq_source_t *s, struct acq_item *events, size_t max)
{
	int n;

	/* seq_cst store, then load: see quiesce(). */
	atomic_store(&s->checking, true);
	if (atomic_load(&s->link) != ACQ_LINK_UP || atomic_load(&s->done)) {
		atomic_store(&s->checking, false);
		return 0;
	}
	n = s->cfg.ops->check(s->cfg.ctx, events, max);
	atomic_store(&s->checking, false);
	for (int i = 0; i < n; i++) {
		if (!s->cfg.keep_bus)
			events[i].bus = s->cfg.bus;
		acq_ring_item_push(&s->check_ring, &events[i]); /* full: counted */
	}
	return n > 0 ? n : 0;
}
