/* SPDX-License-Identifier: MIT */
/*
 * test-source.c - acquisition's source side (source.h, acq-pace.h): the
 * loop (drop or wait for room, drain at stop, error pauses, the
 * gone/backoff/reopen cycle with its events and link state, latency
 * stamps, pacing), the monitor that runs link checks on its own thread
 * and never while a device is released or reopened, and the collector
 * that merges check events into the stream by time.  Fake sources only;
 * also run under ThreadSanitizer (suite acquisition).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq-pace.h"
#include "acquisition/source.h"
#include "basic/clock.h"
#include "tlib.h"

#define MS 1000000ll

static void test_pace_args(void)
{
	struct acq_pace p;

	assert(acq_pace_init(NULL, 1) == -EINVAL);
	assert(acq_pace_init(&p, 0) == -EINVAL);
	assert(acq_pace_init(&p, -1) == -EINVAL);
	assert(acq_pace_init(&p, NAN) == -EINVAL);
	assert(acq_pace_init(&p, INFINITY) == -EINVAL);
	assert(acq_pace_init(&p, 1e-12) == 0);
}

static void test_pace_due(void)
{
	struct acq_pace p;
	int64_t before = basic_mono_ns(), t0 = 1700000000123456789ll, m0;

	assert(acq_pace_init(&p, 2.0) == 0);
	m0 = acq_pace_due(&p, t0); /* the first item starts the clock, due now */
	assert(m0 >= before && m0 <= basic_mono_ns());
	assert(acq_pace_due(&p, t0 + 1000 * MS) == m0 + 500 * MS); /* exact at 2x */
	assert(acq_pace_due(&p, t0 + 1) == m0);                    /* 0.5 ns: truncated */
	assert(acq_pace_due(&p, t0 - 1000 * MS) == m0);            /* earlier: due at once */
	/* Stamps further apart than any replay: held at the limit, never an
	   overflow (UBSan would report the conversion). */
	assert(acq_pace_due(&p, INT64_MAX) == m0 + ACQ_PACE_MAX_NS);
	assert(acq_pace_due(&p, INT64_MIN) == m0);
	assert(acq_pace_init(&p, 1e-12) == 0);
	m0 = acq_pace_due(&p, 0);
	assert(acq_pace_due(&p, 1000 * MS) == m0 + ACQ_PACE_MAX_NS);
	/* restart: the next item is the new first */
	acq_pace_restart(&p);
	before = basic_mono_ns();
	assert(acq_pace_due(&p, 5000 * MS) >= before);
	assert(acq_pace_due(&p, 5000 * MS) <= basic_mono_ns());
}

static void test_pace_wait(void)
{
	struct acq_pace p;
	atomic_bool stop;
	int64_t t0 = 42 * 1000 * MS, start;

	atomic_init(&stop, false);
	assert(acq_pace_init(&p, 1.0) == 0);
	assert(acq_pace_wait(&p, t0, -1, NULL) == 1); /* the first: at once */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 30 * MS, -1, &stop) == 1);
	assert(basic_mono_ns() - start >= 29 * MS); /* ABSTIME sleeps never wake early */
	/* deadline 0: do not wait */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, 0, NULL) == 0);
	assert(basic_mono_ns() - start < 20 * MS);
	/* a deadline comes first */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, start + 20 * MS, NULL) == 0);
	assert(basic_mono_ns() - start >= 20 * MS && basic_mono_ns() - start < 500 * MS);
	/* an hour away and a stop: seen within a slice */
	atomic_store(&stop, true);
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, -1, &stop) == 0);
	assert(basic_mono_ns() - start < ACQ_PACE_SLICE_NS + 50 * MS);
}

/* ------------------------------------------------------- a fake source */

struct fake {
	/* what recv does: items 0, 1, ... up to gate (then it waits, a
	   quiet bus), -ENODATA at limit (0: never) */
	_Atomic uint64_t next;      /* seq of the next item */
	_Atomic uint64_t gate, limit;
	_Atomic uint32_t per_call;  /* items per recv, at most (0: max) */
	_Atomic int gap_us;         /* a pause after each call that delivered */
	_Atomic uint64_t queued;    /* items only a timeout of 0 gets (drain) */
	_Atomic int fail;           /* != 0: recv returns it */
	atomic_bool present;        /* false: recv says -ENODEV, reopen -ENOENT */
	_Atomic int reopen_err;     /* != 0 (present): reopen fails with it */
	atomic_bool sign;           /* await: the device's return was seen */
	_Atomic uint64_t awaits;    /* await calls */
	_Atomic int64_t t_base, t_step; /* stamps: base + seq * step; base 0: now */
	/* what happened */
	_Atomic uint64_t calls, releases, reopens, checks, pushed;
	atomic_bool in_check, overlap;
	_Atomic uint64_t rx_thread; /* pthread_t of the loop, as an integer */
	_Atomic int check_on_rx;    /* checks that ran on the loop's thread */
	_Atomic int check_elsewhere; /* checks on a thread not named "monitor" */
	_Atomic int64_t check_t;    /* stamp of the next check event (0: none) */
};

static struct acq_item fake_item(struct fake *f)
{
	struct acq_item it = { .kind = ACQ_ITEM_CAN, .seq = atomic_fetch_add(&f->next, 1) };
	int64_t base = atomic_load(&f->t_base);

	it.t_ns = (base ? base : basic_realtime_ns()) + (int64_t)it.seq * atomic_load(&f->t_step);
	return it;
}

static int fake_recv(void *ctx, struct acq_item *items, size_t max, int timeout_ms)
{
	struct fake *f = ctx;
	uint64_t limit = atomic_load(&f->limit), gate = atomic_load(&f->gate), per = atomic_load(&f->per_call);
	size_t n = 0;

	atomic_store(&f->rx_thread, (uint64_t)pthread_self());
	atomic_fetch_add(&f->calls, 1);
	if (atomic_load(&f->fail))
		return atomic_load(&f->fail);
	if (!atomic_load(&f->present))
		return -ENODEV;
	if (timeout_ms == 0) { /* only what is queued: the drain at stop */
		for (; n < max && atomic_load(&f->queued); n++) {
			atomic_fetch_sub(&f->queued, 1);
			items[n] = fake_item(f);
		}
		return (int)n;
	}
	if (limit && atomic_load(&f->next) >= limit)
		return -ENODATA;
	if (limit && (!gate || gate > limit))
		gate = limit;
	if (atomic_load(&f->next) >= gate) { /* quiet */
		tlib_sleep_ms(timeout_ms <= 0 ? 0 : timeout_ms < 2 ? (unsigned)timeout_ms : 2);
		return 0;
	}
	if (per && max > per)
		max = per;
	for (; n < max && atomic_load(&f->next) < gate; n++)
		items[n] = fake_item(f);
	if (atomic_load(&f->gap_us))
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + atomic_load(&f->gap_us) * 1000ll);
	return (int)n;
}

static int fake_gone_cause(void *ctx)
{
	return -EPIPE;
}

static int fake_release(void *ctx)
{
	struct fake *f = ctx;

	if (atomic_load(&f->in_check))
		atomic_store(&f->overlap, true);
	atomic_fetch_add(&f->releases, 1);
	return 0;
}

static int fake_reopen(void *ctx)
{
	struct fake *f = ctx;

	if (atomic_load(&f->in_check))
		atomic_store(&f->overlap, true);
	if (!atomic_load(&f->present))
		return -ENOENT;
	if (atomic_load(&f->reopen_err))
		return atomic_load(&f->reopen_err);
	atomic_fetch_add(&f->reopens, 1);
	return 0;
}

/* A watch (inotify, rtnetlink) as a flag: blocks up to timeout_ms as the
   real one does, 1 as soon as the test raises sign. */
static int fake_await(void *ctx, int timeout_ms)
{
	struct fake *f = ctx;
	int64_t end = basic_mono_ns() + (int64_t)timeout_ms * 1000000;

	atomic_fetch_add(&f->awaits, 1);
	do {
		if (atomic_exchange(&f->sign, false))
			return 1;
		tlib_sleep_ms(1);
	} while (basic_mono_ns() < end);
	return 0;
}

static int fake_check(void *ctx, struct acq_item *events, size_t max)
{
	struct fake *f = ctx;
	char name[16] = "";
	int64_t t = atomic_load(&f->check_t);

	atomic_store(&f->in_check, true);
	atomic_fetch_add(&f->checks, 1);
	if ((uint64_t)pthread_self() == atomic_load(&f->rx_thread))
		atomic_fetch_add(&f->check_on_rx, 1);
	pthread_getname_np(pthread_self(), name, sizeof(name));
	if (strcmp(name, "monitor"))
		atomic_fetch_add(&f->check_elsewhere, 1);
	tlib_sleep_ms(2); /* a netlink round-trip */
	atomic_store(&f->in_check, false);
	if (!t || !max)
		return 0;
	events[0] = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = t,
	                               .event = { .code = ACQ_EV_CAN_BUS_OFF, .arg = 7 } };
	atomic_store(&f->check_t, 0); /* once */
	return 1;
}

static void fake_pushed(void *ctx, const struct acq_item *items, size_t n)
{
	atomic_fetch_add(&((struct fake *)ctx)->pushed, n);
}

static const struct acq_source_ops fake_ops = { .recv = fake_recv, .pushed = fake_pushed };
static const struct acq_source_ops fake_gone_ops = { .recv = fake_recv, .check = fake_check,
	.gone_cause = fake_gone_cause, .release = fake_release, .reopen = fake_reopen, .pushed = fake_pushed };
static const struct acq_source_ops fake_watch_ops = { .recv = fake_recv, .gone_cause = fake_gone_cause,
	.release = fake_release, .reopen = fake_reopen, .await = fake_await, .pushed = fake_pushed };

struct rig {
	struct fake f;
	struct acq_ring ring;
	struct acq_item *buf;
	acq_source_t *src;
};

static void rig_init(struct rig *g, size_t slots, const struct acq_source_cfg *tmpl)
{
	struct acq_source_cfg cfg = *tmpl;

	memset(&g->f, 0, sizeof(g->f));
	atomic_store(&g->f.present, true);
	g->buf = calloc(slots, sizeof(*g->buf));
	assert(g->buf && acq_ring_init(&g->ring, g->buf, slots, sizeof(*g->buf)) == 0);
	cfg.ctx = &g->f;
	cfg.ring = &g->ring;
	if (!cfg.ops)
		cfg.ops = &fake_ops;
	assert(acq_source_new(&cfg, &g->src) == 0);
}

static void rig_done(struct rig *g)
{
	g->src = acq_source_free(g->src);
	free(g->buf);
}

static size_t pop_all(struct rig *g, struct acq_item *out, size_t max)
{
	size_t n = 0, k;

	while (n < max && (k = acq_ring_item_pop_bulk(&g->ring, out + n, max - n)) > 0) {
		acq_ring_took(&g->ring); /* as the collector: a source waiting for room goes on */
		n += k;
	}
	return n;
}

/* ------------------------------------------------------------ the loop */

static void test_source_args(void)
{
	struct acq_item buf[4];
	struct acq_ring ring;
	struct acq_source_ops no_recv = { 0 }, half = { .recv = fake_recv, .release = fake_release };
	struct acq_source_cfg cfg = { .ops = &fake_ops, .ring = &ring };
	struct acq_source_stats st;
	struct acq_link_state l;
	acq_source_t *s;
	acq_monitor_t *m;

	assert(acq_ring_init(&ring, buf, 4, sizeof(buf[0])) == 0);
	assert(acq_source_new(NULL, &s) == -EINVAL);
	assert(acq_source_new(&cfg, NULL) == -EINVAL);
	cfg.ops = NULL;
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.ops = &no_recv;
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.ops = &half; /* release without reopen */
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.ops = &fake_ops;
	cfg.pace_speed = NAN;
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.pace_speed = 0;
	cfg.coalesce_ns = -1;
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.coalesce_ns = 100 * MS + 1; /* longer than a stop may wait */
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	cfg.coalesce_ns = 0;
	cfg.ring = NULL;
	assert(acq_source_new(&cfg, &s) == -EINVAL);
	assert(acq_source_start(NULL, NULL, NULL) == -EINVAL);
	assert(acq_source_stop(NULL) == -EINVAL);
	assert(acq_source_stats(NULL, &st) == -EINVAL);
	assert(acq_source_link(NULL, &l) == -EINVAL);
	assert(acq_source_latency(NULL) == NULL);
	assert(acq_source_free(NULL) == NULL);
	acq_source_request_stop(NULL);
	assert(acq_source_done(NULL));
	assert(!strcmp(acq_link_name(ACQ_LINK_REOPENING), "reopening") && !strcmp(acq_link_name(ACQ_LINK_MAX), "?"));
	assert(acq_monitor_new(NULL, 1, 0, &m) == -EINVAL);
	assert(acq_monitor_new(NULL, 0, 0, NULL) == -EINVAL);
	assert(acq_monitor_poll(NULL) == -EINVAL);
	assert(acq_monitor_start(NULL, NULL) == -EINVAL && acq_monitor_stop(NULL) == -EINVAL);
	assert(acq_monitor_free(NULL) == NULL);
}

/* A live bus drops and counts when its ring is full; a file waits. */
static void test_drop_or_wait(void)
{
	struct rig g;
	struct acq_item out[64];
	struct acq_source_stats st;
	uint64_t got = 0, expect = 0;

	rig_init(&g, 16, &(struct acq_source_cfg){ .bus = 3 });
	atomic_store(&g.f.limit, 1000);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_source_done(g.src), 5000));
	assert(acq_source_stats(g.src, &st) == 0 && st.items == 1000 && st.errors == 0);
	assert(acq_ring_count(&g.ring) == 16 && acq_ring_drops(&g.ring) == 1000 - 16);
	assert(pop_all(&g, out, 64) == 16 && out[0].seq == 0 && out[15].seq == 15 && out[0].bus == 3);
	assert(atomic_load(&g.f.pushed) == 1000);
	rig_done(&g);

	rig_init(&g, 16, &(struct acq_source_cfg){ .bus = 3, .backpressure = true });
	atomic_store(&g.f.limit, 100000);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	while (got < 100000) {
		size_t n = acq_ring_item_pop_bulk(&g.ring, out, 64);

		/* without it, the source would wait SRC_TIMEOUT_MS for each
		   batch of room: 100,000 items in 2.6 minutes, past the test's
		   timeout */
		if (n)
			acq_ring_took(&g.ring);
		for (size_t k = 0; k < n; k++)
			assert(out[k].seq == expect++);
		got += n;
		if (!n)
			sched_yield();
	}
	assert(WAIT_FOR(acq_source_done(g.src), 5000));
	assert(acq_ring_drops(&g.ring) == 0 && acq_source_stats(g.src, &st) == 0 && st.items == 100000);
	/* a full ring that stays full: the stop is still seen */
	rig_done(&g);
	rig_init(&g, 16, &(struct acq_source_cfg){ .backpressure = true });
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	atomic_store(&g.f.limit, 1000);
	assert(WAIT_FOR(acq_ring_count(&g.ring) == 16, 5000));
	assert(acq_source_stop(g.src) == 0);
	assert(acq_source_stats(g.src, &st) == 0 && st.items == 16 && atomic_load(&g.f.pushed) == 16);
	assert(acq_ring_drops(&g.ring) == 0);
	rig_done(&g);
	puts("source: a live bus drops and counts, a file waits for room, a stop is seen while waiting");
}

/* At stop, what the device already holds is read (drain_at_stop only). */
static void test_drain_at_stop(void)
{
	for (int drain = 0; drain < 2; drain++) {
		struct rig g;
		struct acq_source_stats st;

		rig_init(&g, 256, &(struct acq_source_cfg){ .drain_at_stop = drain });
		assert(acq_source_start(g.src, NULL, NULL) == 0);
		tlib_sleep_ms(20);
		atomic_store(&g.f.queued, 100);
		assert(acq_source_stop(g.src) == 0);
		assert(acq_source_stats(g.src, &st) == 0);
		assert(st.items == (drain ? 100u : 0u) && acq_ring_count(&g.ring) == st.items);
		rig_done(&g);
	}
}

/* Errors pause 10 ms doubling to 1 s: no spinning, and a stop is seen
   within the pause. */
static void test_error_pauses(void)
{
	struct rig g;
	struct acq_source_stats st;
	int64_t t0;

	rig_init(&g, 16, &(struct acq_source_cfg){ 0 });
	atomic_store(&g.f.fail, -EIO);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	tlib_sleep_ms(1500); /* 10+20+40+80+160+320+640 = 1270 ms: 8 calls */
	t0 = basic_mono_ns();
	assert(acq_source_stop(g.src) == 0);
	assert(basic_mono_ns() - t0 < 300 * MS); /* inside a 1 s pause */
	assert(acq_source_stats(g.src, &st) == 0);
	printf("source: %" PRIu64 " failed reads in 1.5 s (pauses 10 ms to 1 s)\n", st.errors);
	assert(st.errors >= 6 && st.errors <= 10 && st.errors == atomic_load(&g.f.calls));
	rig_done(&g);
}

/* Find the events of code in out[0..n). */
static const struct acq_item *find_event(const struct acq_item *out, size_t n, uint32_t code, size_t nth)
{
	for (size_t i = 0; i < n; i++)
		if (out[i].kind == ACQ_ITEM_EVENT && out[i].event.code == code && nth-- == 0)
			return &out[i];
	return NULL;
}

/*
 * The device goes away: GONE event with the cause, link state gone then
 * reopening, released once, reopened with jittered waits, BACK event with
 * the attempts; meanwhile the monitor checks (on its own thread, never the
 * loop's) and never while the device is released or reopened.
 */
static void test_gone_cycle(void)
{
	static struct acq_item out[1 << 16];
	struct rig g;
	struct acq_link_state l;
	const struct acq_item *ev;
	acq_monitor_t *m;
	acq_source_t *srcs[1];
	size_t n;
	int64_t t0;

	rig_init(&g, 1 << 16, &(struct acq_source_cfg){ .ops = &fake_gone_ops, .bus = 5, .seed = 42 });
	atomic_store(&g.f.gate, UINT64_MAX);
	atomic_store(&g.f.per_call, 1);
	atomic_store(&g.f.gap_us, 1000);
	srcs[0] = g.src;
	assert(acq_monitor_new(srcs, 1, 5, &m) == 0);
	assert(acq_source_start(g.src, &(struct acq_thread_cfg){ .name = "rx-fake", .cpu = -1 }, NULL) == 0);
	assert(acq_monitor_start(m, NULL) == 0);
	assert(WAIT_FOR(atomic_load(&g.f.checks) >= 5, 5000));
	for (int round = 0; round < 3; round++) {
		atomic_store(&g.f.present, false);
		t0 = basic_mono_ns();
		assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.state == ACQ_LINK_REOPENING && l.attempts >= 2, 5000));
		/* two waits drawn from [50, 100] then [100, 200] ms */
		assert(basic_mono_ns() - t0 >= 150 * MS);
		assert(l.losses == (uint64_t)round + 1 && l.cause == -EPIPE && l.reopen_err == -ENOENT);
		assert(atomic_load(&g.f.releases) == (uint64_t)round + 1);
		atomic_store(&g.f.present, true);
		assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.state == ACQ_LINK_UP &&
		                l.reopens == (uint64_t)round + 1, 5000));
		assert(l.back_ns > l.gone_ns);
		tlib_sleep_ms(30);
	}
	acq_monitor_stop(m);
	assert(acq_source_stop(g.src) == 0);
	n = pop_all(&g, out, sizeof(out) / sizeof(out[0]));
	for (size_t k = 0; k < 3; k++) {
		assert((ev = find_event(out, n, ACQ_EV_CAN_GONE, k)) && ev->event.arg == -EPIPE && ev->bus == 5);
		/* no watch: reopened on a timed step, the return not seen */
		assert((ev = find_event(out, n, ACQ_EV_CAN_BACK, k)) && ev->event.arg >= 2 &&
		       ev->event.detail == ACQ_BLIND_UNKNOWN);
	}
	/* the checks ran on the monitor's thread, never on the loop's, and
	   never while the device was released or reopened */
	printf("source: 3 losses and reopens; %" PRIu64 " checks, all on the monitor, none during release/reopen\n",
	       atomic_load(&g.f.checks));
	assert(atomic_load(&g.f.check_on_rx) == 0 && atomic_load(&g.f.check_elsewhere) == 0);
	assert(!atomic_load(&g.f.overlap));
	acq_monitor_free(m);
	rig_done(&g);
}

/*
 * A device whose return is watched (ops->await): while it is absent the
 * loop waits for a sign, not for backoff steps (one timed attempt first,
 * then only a safety net seconds later); a sign reopens it at once; a
 * device that is there but fails to open is retried on timed steps only,
 * signs ignored (the watch is not even asked); a stop ends a wait for a
 * sign.
 */
static void test_gone_watched(void)
{
	struct rig g;
	struct acq_link_state l;
	uint64_t awaits;
	uint32_t attempts;
	int64_t t_sign, t_failed;

	rig_init(&g, 1 << 12, &(struct acq_source_cfg){ .ops = &fake_watch_ops, .bus = 2, .seed = 7 });
	atomic_store(&g.f.gate, UINT64_MAX);
	atomic_store(&g.f.per_call, 1);
	atomic_store(&g.f.gap_us, 1000);
	assert(acq_source_start(g.src, &(struct acq_thread_cfg){ .name = "rx-watch", .cpu = -1 }, NULL) == 0);
	assert(WAIT_FOR(atomic_load(&g.f.next) >= 10, 5000));

	/* absent: the first timed attempt, then waits for a sign (at least
	   five calls of up to 100 ms each: the old steps of 100, 200, 400 ms
	   would have made three more attempts by then) */
	atomic_store(&g.f.present, false);
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.state == ACQ_LINK_REOPENING, 5000));
	awaits = atomic_load(&g.f.awaits);
	assert(WAIT_FOR(atomic_load(&g.f.awaits) >= awaits + 5, 5000));
	assert(acq_source_link(g.src, &l) == 0 && l.reopen_err == -ENOENT);
	attempts = l.attempts;
	printf("source, watched: absent, %" PRIu32 " reopen attempt(s) over %" PRIu64 " waits for a sign\n", attempts,
	       atomic_load(&g.f.awaits) - awaits);
	assert(attempts <= 2);
	/* it returns: reopened on the sign, by one attempt */
	atomic_store(&g.f.present, true);
	atomic_store(&g.f.sign, true);
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.state == ACQ_LINK_UP && l.reopens == 1, 5000));
	assert(l.attempts == attempts + 1);
	/* the blind time runs from the sign: seen, and short of the 5 s the
	   safety net's step would take (a bound only a wrong start reaches) */
	assert(l.blind_ms != ACQ_BLIND_UNKNOWN && l.blind_ms < 5000);

	/* there but failing: timed steps, the watch is not asked */
	atomic_store(&g.f.reopen_err, -EIO);
	atomic_store(&g.f.present, false);
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.losses == 2 && l.reopen_err == -ENOENT, 5000));
	atomic_store(&g.f.present, true);
	t_sign = basic_mono_ns();
	atomic_store(&g.f.sign, true);
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.reopen_err == -EIO, 5000));
	t_failed = basic_mono_ns(); /* the sign was taken before this */
	awaits = atomic_load(&g.f.awaits);
	attempts = l.attempts;
	atomic_store(&g.f.sign, true); /* no news for a device that is there */
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.attempts >= attempts + 2, 5000));
	assert(atomic_load(&g.f.awaits) == awaits && atomic_load(&g.f.sign));
	atomic_store(&g.f.reopen_err, 0);
	assert(WAIT_FOR(acq_source_link(g.src, &l) == 0 && l.state == ACQ_LINK_UP && l.reopens == 2, 5000));
	/* there but failing from the sign on: blind from the sign, over the
	   failed attempts' timed steps, not from the last of them (ms are
	   truncated: one ms of slack) */
	assert(l.blind_ms != ACQ_BLIND_UNKNOWN && (int64_t)l.blind_ms * MS <= l.back_ns - t_sign &&
	       (int64_t)l.blind_ms * MS + MS >= l.back_ns - t_failed);

	/* a stop ends a wait for a sign */
	atomic_store(&g.f.sign, false);
	atomic_store(&g.f.present, false);
	awaits = atomic_load(&g.f.awaits);
	assert(WAIT_FOR(atomic_load(&g.f.awaits) > awaits + 1, 5000));
	assert(acq_source_stop(g.src) == 0);
	assert(acq_source_link(g.src, &l) == 0 && l.state != ACQ_LINK_UP);
	printf("source, watched: reopened on the sign; a device there but failing retried on timed steps, "
	       "signs ignored; a stop ends the wait\n");
	rig_done(&g);
}

/* The latency of a wakeup: now minus the newest item's arrival stamp. */
static void test_latency(void)
{
	struct rig g;
	struct acq_latency *snap = calloc(1, sizeof(*snap));

	rig_init(&g, 1024, &(struct acq_source_cfg){ .stamp_latency = true });
	atomic_store(&g.f.t_base, basic_realtime_ns() - 3 * MS); /* arrived 3 ms ago */
	atomic_store(&g.f.limit, 100);
	atomic_store(&g.f.per_call, 10);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_source_done(g.src), 5000));
	acq_latency_snapshot(acq_source_latency(g.src), snap);
	assert(snap->count == 10 && acq_latency_percentile_us(snap, 50) > 3000);
	free(snap);
	rig_done(&g);
}

/* Releases one item every 100 us (a 10,000 frames/s bus) up to n. */
static void trickle(struct fake *f, uint64_t n)
{
	int64_t t = basic_mono_ns();

	for (uint64_t i = 1; i <= n; i++) {
		t += 100 * 1000;
		basic_sleep_until(CLOCK_MONOTONIC, t);
		atomic_store(&f->gate, i);
	}
}

/*
 * coalesce_ns: a bus that trickles frames is read once per wait, not once
 * per frame, and loses nothing; a full batch is read on at once.
 */
static void test_coalesce(void)
{
	struct rig g;
	struct acq_item *out = calloc(4096, sizeof(*out));
	uint64_t calls;
	size_t n;

	rig_init(&g, 4096, &(struct acq_source_cfg){ .coalesce_ns = 5 * MS });
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	trickle(&g.f, 2000); /* 200 ms: 2,000 wakeups without coalescing */
	assert(WAIT_FOR(acq_ring_count(&g.ring) == 2000, 5000));
	calls = atomic_load(&g.f.calls);
	assert(acq_source_stop(g.src) == 0);
	n = pop_all(&g, out, 4096);
	assert(n == 2000);
	for (size_t i = 0; i < n; i++)
		assert(out[i].seq == i);
	/* A read per 5 ms wait (and the quiet 2 ms reads once the gate is
	   reached): ~40, far from 2,000; 400 leaves room for a loaded host. */
	printf("coalesce: 2000 items in %" PRIu64 " reads\n", calls);
	assert(calls < 400);
	rig_done(&g);

	/* Full batches (64 items a read, more waiting): no wait between them,
	   else 100 reads would take 10 s at 100 ms each. */
	rig_init(&g, 8192, &(struct acq_source_cfg){ .coalesce_ns = 100 * MS });
	atomic_store(&g.f.limit, 6400);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_source_done(g.src), 3000));
	assert(acq_ring_count(&g.ring) == 6400);
	rig_done(&g);
	free(out);
}

static int count_sink(void *ctx, const struct acq_item *items, size_t n)
{
	atomic_fetch_add((_Atomic uint64_t *)ctx, n);
	return 0;
}

/*
 * The collector's thread passes over the rings once per idle_us while
 * they keep up: items trickling in at 10,000/s are taken a period's worth
 * at a time, not in a pass per item followed by an empty one.
 */
static void test_collector_period(void)
{
	struct acq_item *buf = calloc(4096, sizeof(*buf)), it = { .kind = ACQ_ITEM_CAN };
	struct acq_ring ring, *rings[1] = { &ring };
	_Atomic uint64_t got = 0;
	struct acq_collector_stats st;
	acq_collector_t *col;
	int64_t t0, t, elapsed;

	assert(acq_ring_init(&ring, buf, 4096, sizeof(*buf)) == 0);
	assert(acq_collector_new(&(struct acq_collector_cfg){ .rings = rings, .nrings = 1, .idle_us = 5000,
	                                                      .sink = count_sink, .ctx = &got }, &col) == 0);
	t0 = t = basic_mono_ns();
	assert(acq_collector_start(col, NULL) == 0);
	for (uint64_t i = 0; i < 2000; i++) {
		t += 100 * 1000;
		basic_sleep_until(CLOCK_MONOTONIC, t);
		it.t_ns = (int64_t)i;
		assert(acq_ring_item_push(&ring, &it));
	}
	assert(WAIT_FOR(atomic_load(&got) == 2000, 5000));
	assert(acq_collector_stop(col) == 0);
	elapsed = basic_mono_ns() - t0;
	assert(acq_collector_stats(col, &st) == 0 && st.items == 2000);
	/* At most one pass per period (and the drain at stop); a pass per
	   item would be 2,000, and a pass after each one that found items
	   twice the periods. */
	printf("collector: 2000 items in %" PRIu64 " passes over %.0f ms at a 5 ms period\n", st.loops,
	       (double)elapsed / MS);
	assert(st.loops <= (uint64_t)(elapsed / (5 * MS)) + 5);
	col = acq_collector_free(col);
	free(buf);
}

/* A driver that reconnects by itself: its own events tell the presence. */
static int follow_recv(void *ctx, struct acq_item *items, size_t max, int timeout_ms)
{
	_Atomic int *step = ctx;
	int k = atomic_fetch_add(step, 1);

	if (k > 1)
		return -ENODATA;
	items[0] = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(),
	                              .event = { .code = k ? ACQ_EV_MB_CONNECT : ACQ_EV_MB_DISCONNECT,
	                                         .arg = k ? 3 : -ECONNREFUSED } };
	return 1;
}

static void test_follow_events(void)
{
	static const struct acq_source_ops ops = { .recv = follow_recv };
	struct acq_item buf[8];
	struct acq_ring ring;
	struct acq_link_state l;
	_Atomic int step = 0;
	acq_source_t *s;

	assert(acq_ring_init(&ring, buf, 8, sizeof(buf[0])) == 0);
	assert(acq_source_new(&(struct acq_source_cfg){ .ops = &ops, .ctx = &step, .ring = &ring,
	                                                .link_down_code = ACQ_EV_MB_DISCONNECT,
	                                                .link_up_code = ACQ_EV_MB_CONNECT }, &s) == 0);
	assert(acq_source_start(s, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_source_done(s), 5000));
	assert(acq_source_link(s, &l) == 0 && l.state == ACQ_LINK_UP && l.losses == 1 && l.reopens == 1);
	assert(l.cause == -ECONNREFUSED && l.attempts == 3);
	acq_source_free(s);
}

/* A paced log replay: items wait for their time, stamps and bus kept; a
   stop is seen inside an hour's gap. */
static void test_paced(void)
{
	struct rig g;
	struct acq_item out[8];
	int64_t t0;

	rig_init(&g, 64, &(struct acq_source_cfg){ .pace_speed = 2.0, .keep_bus = true, .backpressure = true });
	atomic_store(&g.f.t_base, 1000 * MS);
	atomic_store(&g.f.t_step, 40 * MS); /* 20 ms apart at 2x */
	atomic_store(&g.f.limit, 5);
	t0 = basic_mono_ns();
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_source_done(g.src), 5000));
	assert(basic_mono_ns() - t0 >= 80 * MS);
	assert(pop_all(&g, out, 8) == 5 && out[4].t_ns == 1160 * MS && out[4].bus == 0);
	rig_done(&g);

	rig_init(&g, 64, &(struct acq_source_cfg){ .pace_speed = 1.0 });
	atomic_store(&g.f.t_base, 1000 * MS);
	atomic_store(&g.f.t_step, 3600 * 1000 * MS);
	atomic_store(&g.f.limit, 3);
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(acq_ring_count(&g.ring) == 1, 5000));
	t0 = basic_mono_ns();
	assert(acq_source_stop(g.src) == 0);
	assert(basic_mono_ns() - t0 < 300 * MS);
	assert(atomic_load(&g.f.pushed) == 1);
	rig_done(&g);
}

/* ------------------------------------------------------- merge by time */

struct order {
	int64_t t[256];
	bool ev[256];
	size_t n;
};

static int order_sink(void *ctx, const struct acq_item *items, size_t n)
{
	struct order *o = ctx;

	for (size_t i = 0; i < n && o->n < 256; i++, o->n++) {
		o->t[o->n] = items[i].t_ns;
		o->ev[o->n] = items[i].kind == ACQ_ITEM_EVENT;
	}
	return 0;
}

/* Pass over the rings until the sink has n items: the fake's count says
   recv returned them, not that the source thread (which qemu and a loaded
   host may hold up for a while) has pushed them and passed their time. */
static bool collect(acq_collector_t *col, const struct order *o, size_t n)
{
	return WAIT_FOR((acq_collector_poll(col), o->n >= n), 5000);
}

/*
 * A check event stamped between frames goes to the sink between them:
 * held while the source has not yet read past its time, released once it
 * has, and after ACQ_MERGE_HOLD_MAX_NS at most when the source's stamps
 * run on another clock.
 */
static void test_merge(void)
{
	struct rig g;
	static struct order o;
	acq_collector_t *col;
	acq_monitor_t *m;
	acq_source_t *srcs[1];
	struct acq_ring *rings[1];
	int64_t base = basic_realtime_ns() + 60 * 1000 * MS; /* in the future: a quiet wait never passes them */
	size_t evs = 0;

	rig_init(&g, 64, &(struct acq_source_cfg){ .ops = &fake_gone_ops });
	srcs[0] = g.src;
	rings[0] = &g.ring;
	assert(acq_collector_new(&(struct acq_collector_cfg){ .rings = rings, .nrings = 1, .sources = srcs,
	                                                     .sink = order_sink, .ctx = &o }, &col) == 0);
	assert(acq_monitor_new(srcs, 1, 0, &m) == 0);
	atomic_store(&g.f.t_base, base);
	atomic_store(&g.f.t_step, 100);
	atomic_store(&g.f.gate, 3); /* frames at base + 0, 100, 200 */
	atomic_store(&g.f.check_t, base + 250);
	assert(acq_monitor_poll(m) == 1); /* a state change seen at 250 */
	assert(acq_source_start(g.src, NULL, NULL) == 0);
	assert(WAIT_FOR(atomic_load(&g.f.next) == 3, 5000));
	assert(collect(col, &o, 3));
	tlib_sleep_ms(20);
	acq_collector_poll(col);
	assert(o.n == 3 && !o.ev[0] && !o.ev[1] && !o.ev[2]); /* 250 not passed yet: held */
	atomic_store(&g.f.gate, 6);                             /* frames at 300, 400, 500 */
	assert(WAIT_FOR(atomic_load(&g.f.next) == 6, 5000));
	assert(collect(col, &o, 7));
	assert(o.n == 7 && o.ev[3] && o.t[3] == base + 250);
	for (size_t i = 0; i < 7; i++)
		assert(o.ev[i] == (i == 3) && (i == 0 || o.t[i] >= o.t[i - 1]));
	/* Stamps on another clock: the stream never passes the event's time
	   (it is ACQ_MERGE_HOLD_MAX_NS old already), so the hold ends it. */
	atomic_store(&g.f.check_t, basic_realtime_ns() - ACQ_MERGE_HOLD_MAX_NS);
	assert(acq_monitor_poll(m) == 1);
	atomic_store(&g.f.gate, 20);
	assert(WAIT_FOR(atomic_load(&g.f.next) == 20, 5000));
	assert(collect(col, &o, 22));
	for (size_t i = 0; i < o.n; i++)
		evs += o.ev[i];
	assert(o.n == 22 && evs == 2);
	acq_source_stop(g.src);
	acq_monitor_free(m);
	acq_collector_free(col);
	rig_done(&g);
	puts("collector: check events merged into the stream by time, held until the source passed them");
}

int main(void)
{
	test_pace_args();
	test_pace_due();
	test_pace_wait();
	test_source_args();
	test_drop_or_wait();
	test_drain_at_stop();
	test_error_pauses();
	test_gone_cycle();
	test_gone_watched();
	test_latency();
	test_coalesce();
	test_collector_period();
	test_follow_events();
	test_paced();
	test_merge();
	puts("test-source: ok");
	return 0;
}
