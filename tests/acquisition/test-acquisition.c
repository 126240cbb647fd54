/* SPDX-License-Identifier: MIT */
/*
 * test-acquisition.c - SPSC ring semantics, a two-thread stress test of
 * order and counts (also built with ThreadSanitizer), the collector and
 * the thread runtime.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "tlib.h"

ACQ_RING_DEFINE(u64, uint64_t)

static void test_bad_args(void)
{
	struct acq_ring r;
	uint64_t buf[8];
	struct acq_collector_cfg cc = { 0 };
	acq_collector_t *col;
	acq_thread_t *t;
	struct acq_thread_cfg tc = { .name = "x", .priority = 100, .cpu = -1 };

	assert(acq_ring_init(NULL, buf, 8, 8) == -EINVAL);
	assert(acq_ring_init(&r, NULL, 8, 8) == -EINVAL);
	assert(acq_ring_init(&r, buf, 0, 8) == -EINVAL);
	assert(acq_ring_init(&r, buf, 1, 8) == -EINVAL);
	assert(acq_ring_init(&r, buf, 6, 8) == -EINVAL);
	assert(acq_ring_init(&r, buf, 8, 0) == -EINVAL);
	assert(acq_ring_init(&r, buf, 8, 8) == 0);
	assert(acq_collector_new(NULL, &col) == -EINVAL);
	assert(acq_collector_new(&cc, &col) == -EINVAL); /* no sink */
	assert(acq_collector_new(&cc, NULL) == -EINVAL);
	assert(acq_collector_poll(NULL) == -EINVAL);
	assert(acq_collector_stop(NULL) == -EINVAL);
	assert(acq_collector_free(NULL) == NULL);
	assert(acq_thread_start(&tc, NULL, NULL, &t, NULL) == -EINVAL);
	assert(acq_thread_start(NULL, NULL, NULL, &t, NULL) == -EINVAL);
	assert(acq_thread_join(NULL) == NULL);
}

static void test_single_thread(void)
{
	struct acq_ring r;
	uint64_t buf[8], v, out[16];

	assert(acq_ring_init(&r, buf, 8, sizeof(uint64_t)) == 0);
	assert(!acq_ring_u64_pop(&r, &v));
	/* Fill, overflow (counted, never blocks), drain in order, several
	   times so indices wrap the buffer. */
	for (uint64_t round = 0; round < 5; round++) {
		for (uint64_t i = 0; i < 8; i++) {
			v = round * 100 + i;
			assert(acq_ring_u64_push(&r, &v));
		}
		assert(acq_ring_count(&r) == 8);
		v = 999;
		assert(!acq_ring_u64_push(&r, &v));
		assert(!acq_ring_u64_push(&r, &v));
		assert(acq_ring_drops(&r) == 2 * (round + 1));
		/* half by single pops, half by bulk, across the wrap point */
		for (uint64_t i = 0; i < 3; i++) {
			assert(acq_ring_u64_pop(&r, &v));
			assert(v == round * 100 + i);
		}
		assert(acq_ring_u64_pop_bulk(&r, out, 16) == 5);
		for (uint64_t i = 0; i < 5; i++)
			assert(out[i] == round * 100 + 3 + i);
		assert(acq_ring_count(&r) == 0);
		/* leave the ring offset by 3 so the next round wraps */
		for (int i = 0; i < 3; i++) {
			v = 7;
			assert(acq_ring_u64_push(&r, &v));
			assert(acq_ring_u64_pop(&r, &v) && v == 7);
		}
	}
	/* Bulk push: across the wrap point, then into too little room (the
	   rest refused and counted), then into a full ring. */
	{
		uint64_t in[10], drops = acq_ring_drops(&r);

		for (uint64_t i = 0; i < 10; i++)
			in[i] = 500 + i;
		assert(acq_ring_u64_push_bulk(&r, in, 6) == 6); /* starts at slot 7 of 8: wraps */
		assert(acq_ring_u64_push_bulk(&r, in + 6, 4) == 2);
		assert(acq_ring_drops(&r) == drops + 2);
		assert(acq_ring_u64_push_bulk(&r, in, 3) == 0);
		assert(acq_ring_drops(&r) == drops + 5);
		assert(acq_ring_u64_pop_bulk(&r, out, 16) == 8);
		for (uint64_t i = 0; i < 8; i++)
			assert(out[i] == 500 + i);
		assert(acq_ring_u64_push_bulk(&r, in, 0) == 0 && acq_ring_drops(&r) == drops + 5);
	}
}

/* ---------------------------------------------------------- stress */

#define STRESS_N 4000000ull

struct stress {
	struct acq_ring ring;
	uint64_t pushed;     /* producer-local, read after join */
	uint64_t refused;
	bool push_bulk;      /* the producer pushes runs of 1..7 items */
};

static void *stress_producer(void *p)
{
	struct stress *s = p;
	struct acq_item it = { .kind = ACQ_ITEM_CAN }, run[7];
	size_t nrun = 0, want = 1;

	for (uint64_t i = 0; i < STRESS_N; i++) {
		if (s->push_bulk) {
			if (!nrun) /* runs of 1..7 items, so they start at every offset */
				want = 1 + i % 7;
			run[nrun] = (struct acq_item){ .kind = ACQ_ITEM_CAN, .seq = i };
			run[nrun].can.id = (uint32_t)(i * 2654435761u);
			run[nrun].can.len = (uint8_t)(i % 65);
			memset(run[nrun].can.data, (int)(i & 0xff), run[nrun].can.len);
			if (++nrun == want || i == STRESS_N - 1) {
				size_t k = acq_ring_item_push_bulk(&s->ring, run, nrun);

				s->pushed += k;
				s->refused += nrun - k;
				nrun = 0;
			}
			continue;
		}
		it.seq = i;
		it.can.id = (uint32_t)(i * 2654435761u);
		it.can.len = (uint8_t)(i % 65);
		memset(it.can.data, (int)(i & 0xff), it.can.len);
		/* Retry a bounded number of times, then count the drop: the
		   consumer must see exactly pushed items in increasing order. */
		if (acq_ring_item_push(&s->ring, &it))
			s->pushed++;
		else
			s->refused++;
	}
	return NULL;
}

static void test_stress(size_t nslots, bool bulk, bool push_bulk)
{
	struct stress s = { .push_bulk = push_bulk };
	struct acq_item *buf = calloc(nslots, sizeof(*buf)), out[64];
	pthread_t th;
	uint64_t got = 0, last = 0;
	bool first = true;

	assert(acq_ring_init(&s.ring, buf, nslots, sizeof(struct acq_item)) == 0);
	assert(pthread_create(&th, NULL, stress_producer, &s) == 0);
	for (;;) {
		size_t n = bulk ? acq_ring_item_pop_bulk(&s.ring, out, 64)
		                : (acq_ring_item_pop(&s.ring, out) ? 1 : 0);
		for (size_t k = 0; k < n; k++) {
			const struct acq_item *it = &out[k];
			/* strictly increasing: no duplicates, no reordering */
			assert(first || it->seq > last);
			assert(it->can.id == (uint32_t)(it->seq * 2654435761u));
			assert(it->can.len == it->seq % 65);
			for (int b = 0; b < it->can.len; b++)
				assert(it->can.data[b] == (it->seq & 0xff));
			first = false;
			last = it->seq;
			got++;
		}
		if (!n && last == STRESS_N - 1)
			break;
		if (!n && got + acq_ring_drops(&s.ring) == STRESS_N && acq_ring_count(&s.ring) == 0)
			break;
	}
	pthread_join(th, NULL);
	/* every item is either delivered or counted as a drop, never both */
	assert(got == s.pushed);
	assert(acq_ring_drops(&s.ring) == s.refused);
	assert(got + s.refused == STRESS_N);
	printf("stress %6zu slots %-6s %s: %llu delivered in order, %llu dropped and counted\n", nslots,
	       bulk ? "bulk" : "single", push_bulk ? "bulk push" : "", (unsigned long long)got, (unsigned long long)s.refused);
	free(buf);
}

/* --------------------------------------------------------- collector */

struct sink_ctx {
	uint64_t items, can, overrun_events, overrun_total, ticks;
	uint64_t next_expected[2];
};

static int sink(void *p, const struct acq_item *items, size_t n)
{
	struct sink_ctx *s = p;

	for (size_t i = 0; i < n; i++) {
		s->items++;
		if (items[i].kind == ACQ_ITEM_EVENT && items[i].event.code == ACQ_EV_RING_OVERRUN) {
			s->overrun_events++;
			s->overrun_total += (uint64_t)items[i].event.arg;
		} else {
			/* per-ring order is preserved */
			assert(items[i].seq >= s->next_expected[items[i].bus]);
			s->next_expected[items[i].bus] = items[i].seq + 1;
			s->can++;
		}
	}
	return 0;
}

static int tick(void *p)
{
	((struct sink_ctx *)p)->ticks++;
	return 0;
}

static void test_collector(void)
{
	struct acq_item b0[16], b1[16];
	struct acq_ring r0, r1, *rings[2] = { &r0, &r1 };
	uint16_t bus[2] = { 0, 1 };
	struct sink_ctx s = { 0 };
	struct acq_collector_cfg cfg = { .rings = rings, .nrings = 2, .ring_bus = bus,
	                                 .sink = sink, .tick = tick, .ctx = &s, .tick_ms = 1 };
	struct acq_collector_stats st;
	acq_collector_t *c;

	assert(acq_ring_init(&r0, b0, 16, sizeof(struct acq_item)) == 0);
	assert(acq_ring_init(&r1, b1, 16, sizeof(struct acq_item)) == 0);
	assert(acq_collector_new(&cfg, &c) == 0);
	/* overfill ring 0 by 4: those become one overrun event with arg 4 */
	for (uint64_t i = 0; i < 20; i++) {
		struct acq_item it = { .kind = ACQ_ITEM_CAN, .bus = 0, .seq = i };
		acq_ring_item_push(&r0, &it);
	}
	for (uint64_t i = 0; i < 5; i++) {
		struct acq_item it = { .kind = ACQ_ITEM_CAN, .bus = 1, .seq = i };
		assert(acq_ring_item_push(&r1, &it));
	}
	assert(acq_collector_poll(c) == 21);
	assert(s.can == 21 && s.overrun_events == 1 && s.overrun_total == 4);
	assert(s.ticks == 1);
	assert(acq_collector_poll(c) == 0);
	assert(s.overrun_events == 1); /* reported once only */

	/* threaded: the collector thread drains while we produce */
	assert(acq_collector_start(c, NULL) == 0);
	for (uint64_t i = 100; i < 20100; i++) {
		struct acq_item it = { .kind = ACQ_ITEM_CAN, .bus = 1, .seq = i };
		while (!acq_ring_item_push(&r1, &it))
			usleep(100);
	}
	assert(acq_collector_stop(c) == 0);
	assert(acq_collector_stats(c, &st) == 0);
	assert(s.next_expected[1] == 20100);
	assert(st.ring_drops == acq_ring_drops(&r0) + acq_ring_drops(&r1));
	/* the usleep-retry loop above may itself have been refused: those
	   refusals are counted drops too, and each produced one event */
	assert(s.overrun_total == st.ring_drops);
	acq_collector_free(c);
}

/* The period follows the rings: halved after a pass that found a ring a
   quarter full, down to idle/16, doubled back while they stay below. */
struct producer {
	struct acq_ring *ring;
	atomic_bool stop;
};

static void *produce(void *p)
{
	struct producer *pr = p;
	uint64_t seq = 16; /* after the first 16: the sink checks the order */

	/* 40 items every 5 ms (8,000/s): at the 80 ms idle period the 64-slot
	   ring would be full long before the next pass. */
	while (!atomic_load(&pr->stop)) {
		for (int k = 0; k < 40; k++) {
			struct acq_item it = { .kind = ACQ_ITEM_CAN, .seq = seq++ };
			acq_ring_item_push(pr->ring, &it);
		}
		usleep(5000);
	}
	return NULL;
}

static bool wait_period(acq_collector_t *c, uint32_t want_us)
{
	for (int i = 0; i < 600; i++) { /* 6 s: a loaded machine */
		if (acq_collector_period_us(c) == want_us)
			return true;
		usleep(10000);
	}
	return false;
}

static void test_collector_period(void)
{
	static struct acq_item buf[64];
	struct acq_ring r, *rings[1] = { &r };
	struct sink_ctx s = { 0 };
	struct acq_collector_cfg cfg = { .rings = rings, .nrings = 1, .sink = sink, .ctx = &s, .idle_us = 80000 };
	struct producer pr = { .ring = &r };
	pthread_t t;
	acq_collector_t *c;

	assert(acq_ring_init(&r, buf, 64, sizeof(struct acq_item)) == 0);
	assert(acq_collector_new(&cfg, &c) == 0);
	assert(acq_collector_period_us(c) == 80000);
	/* A quarter full at the first pass: the next comes after 40 ms;
	   empty then: back to 80 ms. */
	for (uint64_t i = 0; i < 16; i++)
		assert(acq_ring_item_push(&r, &(struct acq_item){ .kind = ACQ_ITEM_CAN, .seq = i }));
	assert(acq_collector_start(c, NULL) == 0);
	assert(wait_period(c, 40000));
	assert(wait_period(c, 80000));
	/* A fast producer: down to 1/16 (5 ms), and back once it stops. */
	atomic_init(&pr.stop, false);
	assert(pthread_create(&t, NULL, produce, &pr) == 0);
	assert(wait_period(c, 5000));
	atomic_store(&pr.stop, true);
	pthread_join(t, NULL);
	assert(wait_period(c, 80000));
	assert(acq_collector_stop(c) == 0);
	acq_collector_free(c);
}

/* ---------------------------------------------------------- threads */

static void *thread_fn(void *p)
{
	*(int *)p = 42;
	return NULL;
}

static void test_thread(void)
{
	struct acq_thread_cfg cfg = { .name = "rt-test", .priority = 10, .cpu = 0 };
	acq_thread_t *t;
	int flag = 0, degraded = 1;

	/* As root SCHED_FIFO is granted; without it, the thread must still
	   run and report why it is degraded. */
	assert(acq_thread_start(&cfg, thread_fn, &flag, &t, &degraded) == 0);
	acq_thread_join(t);
	assert(flag == 42);
	printf("SCHED_FIFO thread: %s\n", degraded ? strerror(-degraded) : "granted");
	assert(degraded == 0 || degraded == -EPERM);
}

/*
 * The PM QoS request: while held at 0 the kernel's limit (the smallest of
 * every process's requests) is 0; a larger request never raises another's;
 * freeing it closes the file, which is what ends the request.  Needs root
 * and a kernel with /dev/cpu_dma_latency (every CI stage has both).
 */
static void test_cpu_latency(void)
{
	acq_cpu_latency_t *q, *q2;
	int64_t before = acq_cpu_latency_current();

	assert(acq_cpu_latency_new(-1, &q) == -EINVAL);
	assert(acq_cpu_latency_new(0, NULL) == -EINVAL);
	assert(acq_cpu_latency_free(NULL) == NULL);
	assert(before >= 0);
	assert(acq_cpu_latency_new(0, &q) == 0);
	assert(acq_cpu_latency_current() == 0);
	assert(acq_cpu_latency_new(500000, &q2) == 0);
	assert(acq_cpu_latency_current() == 0); /* the smallest request wins */
	assert(tlib_fds_on("/dev/cpu_dma_latency") == 2);
	assert(acq_cpu_latency_free(q) == NULL);
	assert(acq_cpu_latency_current() <= 500000);
	assert(acq_cpu_latency_free(q2) == NULL);
	assert(tlib_fds_on("/dev/cpu_dma_latency") == 0);
	printf("PM QoS: limit %lld us before, 0 while held\n", (long long)before);
}

int main(void)
{
	test_bad_args();
	test_single_thread();
	test_stress(4, false, false);
	test_stress(64, true, false);
	test_stress(1024, true, false);
	test_stress(8, false, true);
	test_stress(1024, true, true);
	test_collector();
	test_collector_period();
	test_thread();
	test_cpu_latency();
	puts("test-acquisition: ok");
	return 0;
}
