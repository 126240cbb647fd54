/* SPDX-License-Identifier: MIT */
/*
 * bench-ring.c - SPSC ring throughput against a mutex+condvar queue built
 * here, same process, same item sizes and slot counts.  Producer and
 * consumer are two threads, pinned to two CPUs; both queues are run to
 * completion without drops (the producer waits when full) so items/s
 * compare like for like.  Prints a table; the ratio column is ring / mutex
 * queue.
 *
 * Then the ring with real struct acq_item slots (96 bytes, what every
 * source pushes) against Concurrency Kit's ck_ring (Debian libck-dev, the
 * ring acq-ring.h is modelled on) holding the same struct by value
 * (CK_RING_PROTOTYPE), same slot counts: item by item on both sides, and
 * our ring in bulk as sources and the collector use it; the two sides on
 * two CPUs and on one.  Rounds of one run of each, interleaved; medians,
 * the spread, and the ratio within each round.  What keeps it fair is
 * listed where that part begins.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ck_ring.h>

#include "acquisition/acq.h"
#include "acquisition/acq-ring.h"

/* The spin-wait hint of the CPU: PAUSE on x86, YIELD on ARM (the
   benchmark builds for the cross targets too), nothing elsewhere. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Wait politely for the other side: a CPU pause for a while (the other
   thread is running on the other core), a yield only after that, in case
   it was preempted. */
static void backoff_n(unsigned *spins, unsigned limit)
{
	if (++*spins < limit) {
		cpu_relax();
		return;
	}
	*spins = 0;
	sched_yield();
}

static void backoff(unsigned *spins)
{
	backoff_n(spins, 256);
}

struct item8 { uint64_t v; };
struct item64 { uint64_t v; uint8_t pad[56]; };
ACQ_RING_DEFINE(i8, struct item8)
ACQ_RING_DEFINE(i64, struct item64)

/* Pin the calling thread to cpu (-1 leaves it where it is) and give it
   SCHED_FIFO at fifo_prio, or the default policy with 0. */
static void pin_self(int cpu, int fifo_prio)
{
	cpu_set_t set;
	struct sched_param sp = { .sched_priority = fifo_prio };

	pthread_setschedparam(pthread_self(), fifo_prio ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* The two CPUs the sides run on: the first two this process may use, or
   -1 -1 (not pinned) with fewer than two. */
static void pick_cpus(int cpus[2])
{
	cpu_set_t set;
	int k = 0;

	cpus[0] = cpus[1] = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[k++] = c;
	if (k < 2)
		cpus[0] = cpus[1] = -1;
}

/* ---------------------------------------------- mutex + condvar queue */

struct mq {
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	unsigned char *buf;
	size_t size, n, head, tail, slot;
};

static void mq_init(struct mq *q, size_t nslots, size_t slot)
{
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->buf = malloc(nslots * slot);
	q->size = nslots;
	q->slot = slot;
	q->n = q->head = q->tail = 0;
}

static void mq_push(struct mq *q, const void *item)
{
	pthread_mutex_lock(&q->lock);
	while (q->n == q->size)
		pthread_cond_wait(&q->not_full, &q->lock);
	memcpy(q->buf + q->head * q->slot, item, q->slot);
	q->head = (q->head + 1) % q->size;
	q->n++;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

static void mq_pop(struct mq *q, void *item)
{
	pthread_mutex_lock(&q->lock);
	while (q->n == 0)
		pthread_cond_wait(&q->not_empty, &q->lock);
	memcpy(item, q->buf + q->tail * q->slot, q->slot);
	q->tail = (q->tail + 1) % q->size;
	q->n--;
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
}

/* ---------------------------------------------------------- runs */

struct run {
	struct acq_ring ring;
	struct mq mq;
	size_t item;
	uint64_t n;
	uint64_t checksum;
	int cpu, fifo_prio;        /* the producer's placement (pin_self) */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *ring_producer(void *p)
{
	struct run *r = p;
	struct item64 it = { 0 };
	unsigned spins = 0;

	pin_self(r->cpu, r->fifo_prio);
	for (uint64_t i = 0; i < r->n; i++) {
		it.v = i;
		if (r->item == 8) {
			while (!acq_ring_i8_push(&r->ring, (struct item8 *)&it))
				backoff(&spins);
		} else {
			while (!acq_ring_i64_push(&r->ring, &it))
				backoff(&spins);
		}
	}
	return NULL;
}

static void ring_consume(struct run *r)
{
	struct item64 out[64];
	uint64_t got = 0, sum = 0;
	unsigned spins = 0;

	while (got < r->n) {
		size_t k = acq_ring_pop_bulk(&r->ring, out, r->item == 8 ? 64 * 8 / 8 : 64);
		if (!k) {
			backoff(&spins);
			continue;
		}
		for (size_t j = 0; j < k; j++)
			sum += r->item == 8 ? ((struct item8 *)out)[j].v : out[j].v;
		got += k;
		/* Like the collector: drain in bulk, and when the ring was nearly
		   empty, let the producer get ahead instead of pulling its head
		   index's cache line over after every single push. */
		if (k < 32)
			for (int i = 0; i < 64; i++)
				cpu_relax();
	}
	r->checksum = sum;
}

static void *mq_producer(void *p)
{
	struct run *r = p;
	struct item64 it = { 0 };

	pin_self(r->cpu, r->fifo_prio);
	for (uint64_t i = 0; i < r->n; i++) {
		it.v = i;
		mq_push(&r->mq, &it);
	}
	return NULL;
}

static void mq_consume(struct run *r)
{
	struct item64 it;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < r->n; i++) {
		mq_pop(&r->mq, &it);
		sum += it.v;
	}
	r->checksum = sum;
}

/* One run; cpus[0] consumes, cpus[1] produces (see versus_ck: left to the
   scheduler, some runs put both on one CPU, which changes what is
   measured), both under SCHED_FIFO at fifo_prio if not 0. */
static double run_once(bool ring, size_t item, size_t nslots, uint64_t n, const int cpus[2], int fifo_prio)
{
	struct run r = { .item = item, .n = n, .cpu = cpus[1], .fifo_prio = fifo_prio };
	void *buf = aligned_alloc(64, nslots * item);
	pthread_t th;
	double t0, t1;

	if (ring)
		acq_ring_init(&r.ring, buf, nslots, item);
	else
		mq_init(&r.mq, nslots, item);
	t0 = now_s();
	pthread_create(&th, NULL, ring ? ring_producer : mq_producer, &r);
	if (ring)
		ring_consume(&r);
	else
		mq_consume(&r);
	pthread_join(th, NULL);
	t1 = now_s();
	if (r.checksum != n * (n - 1) / 2) {
		fprintf(stderr, "checksum mismatch: items lost or duplicated\n");
		exit(1);
	}
	free(buf);
	if (!ring)
		free(r.mq.buf);
	if (fifo_prio) {
		/* as long again for the neighbours (versus_ck_slots) */
		double d = t1 - t0;
		struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };

		nanosleep(&ts, NULL);
	}
	return (double)n / (t1 - t0);
}

/* Best of three: these are shared VMs; the best run is the least disturbed. */
static double best_of(bool ring, size_t item, size_t nslots, uint64_t n, const int cpus[2], int fifo_prio)
{
	double best = 0;

	for (int i = 0; i < 3; i++) {
		double v = run_once(ring, item, nslots, n, cpus, fifo_prio);
		if (v > best)
			best = v;
	}
	return best;
}

/* ------------------------------------------ acq_item: ours and ck_ring */

/*
 * What makes the comparison fair, each point a way an earlier version of
 * this benchmark could favour one side:
 * - the same item (struct acq_item by value, 96 B), the same touching of it
 *   (the producer writes kind, seq and t_ns; the consumer adds up seq),
 *   and one copy in and one copy out per item on each side;
 * - the same buffer: one allocation per slot count, written through before
 *   every run, so no run pays first-touch page faults (a fresh buffer per
 *   run put them in whichever run got a newly mapped one) and each starts
 *   with the buffer in the same cache state;
 * - the same CPUs: consumer and producer pinned, to two CPUs for every run
 *   of the first rows and to one for the others.  Left to the scheduler,
 *   the threads of some runs shared one CPU: with 65,536 slots such a run
 *   is 4-8x faster than one on two CPUs (the producer fills the ring, yields,
 *   and the consumer drains it from its own cache), and the best of five
 *   could compare one ring's one-CPU run with the other's two-CPU run.
 *   The old benchmark's runs here fell into both (30-81 M items/s with
 *   ~8,000 waits a side, 256 per fill: one CPU; 6-18 M: two), which
 *   explains the 0.40x and 0.61x it gave at 65,536 slots item by item;
 * - under --fifo, SCHED_FIFO for both sides, so neighbours on a loaded
 *   machine do not deschedule one side in the middle of a run;
 * - the clock runs from the moment both threads are up to the last item
 *   consumed: thread creation is outside it;
 * - the same waiting when full or empty (backoff_n(): 256 pauses, then a
 *   yield, on two CPUs; a yield at once on one, where the other side
 *   cannot run while this one spins);
 * - rounds of one run of each kind, the order rotated from round to round,
 *   so a neighbour's load hits every kind alike, and the ratio is also
 *   taken within each round (paired), which cancels slow drifts in load.
 */
struct acq_item_ck { struct acq_item it; };
CK_RING_PROTOTYPE(item, acq_item_ck)

/* One item per operation on each side, or runs of BATCH items (see
   give_run_* and take_run_*). */
enum kind { OURS, CK, OURS_BATCH, CK_BATCH, KIND_MAX };
#define BATCH 16
#define ROUNDS_MAX 64
/* --fifo: low, so realtime threads of a daemon running beside the
   benchmark (board key rt_priority, 70-80 in the vehicle boards) still preempt it. */
#define FIFO_PRIO 10

/* Where and how the two sides run. */
struct place {
	int cpus[2];         /* consumer's, producer's; -1: not pinned */
	int fifo_prio;       /* SCHED_FIFO priority of both sides, 0: none */
	unsigned spin_limit; /* pauses before a yield when waiting */
};

struct irun {
	enum kind kind;
	struct acq_ring ring;
	struct ck_ring ck;
	struct acq_item_ck *ckbuf;
	uint64_t n;
	int cpu;                   /* the producer's CPU, -1: not pinned */
	int fifo_prio;             /* SCHED_FIFO priority of both sides, 0: none */
	unsigned spin_limit;       /* pauses before a yield when waiting */
	/* The start line: the producer says it is up, the consumer starts the clock. */
	_Alignas(64) atomic_int ready;
	atomic_int go;
	/* Each side's own line: times it found the ring full / empty. */
	_Alignas(64) uint64_t full_waits;
	_Alignas(64) uint64_t empty_waits;
	uint64_t checksum;
};


/*
 * Each kind has its own producer and consumer loop, generated from one
 * macro, with nothing of the other kinds in it: a loop that chose the ring
 * per item re-read the kind from memory every time (a slot copy may alias
 * anything) and took a different branch path for each kind, which could
 * favour one where an item costs ~15 ns (one CPU); the one-CPU rows came
 * out the same within their spread before and after.  Not inlined, so
 * each loop is compiled on its own, not into whichever caller it landed.
 */
static inline bool give_ours(struct irun *r, struct acq_item_ck *c)
{
	return acq_ring_item_push(&r->ring, &c->it);
}

static inline bool give_ck(struct irun *r, struct acq_item_ck *c)
{
	return ck_ring_enqueue_spsc_item(&r->ck, r->ckbuf, c);
}

/* (Not const: ck_ring's prototypes take a plain pointer.)  A run of n:
   ours in one bulk push (a source's recv batch), ck_ring
   (no SPSC bulk calls) with a loop of single ones. */
static inline size_t give_run_ours(struct irun *r, struct acq_item_ck *run, size_t n)
{
	/* struct acq_item_ck is one acq_item: same layout */
	return acq_ring_push_bulk_sized(&r->ring, &run->it, n, sizeof(*run));
}

static inline size_t give_run_ck(struct irun *r, struct acq_item_ck *run, size_t n)
{
	size_t k = 0;

	while (k < n && ck_ring_enqueue_spsc_item(&r->ck, r->ckbuf, &run[k]))
		k++;
	return k;
}

static inline bool take_ours(struct irun *r, struct acq_item_ck *c)
{
	return acq_ring_item_pop(&r->ring, &c->it);
}

static inline bool take_ck(struct irun *r, struct acq_item_ck *c)
{
	return ck_ring_dequeue_spsc_item(&r->ck, r->ckbuf, c);
}

/* Up to max into out: ours in one bulk pop (the collector's drain), ck_ring
   straight into the run with single ones: one copy per item each. */
static inline size_t take_run_ours(struct irun *r, struct acq_item_ck *out, size_t max)
{
	return acq_ring_pop_bulk(&r->ring, out, max);
}

static inline size_t take_run_ck(struct irun *r, struct acq_item_ck *out, size_t max)
{
	size_t k = 0;

	while (k < max && ck_ring_dequeue_spsc_item(&r->ck, r->ckbuf, &out[k]))
		k++;
	return k;
}

#define ITEM_LOOPS(name)                                                                        \
	static __attribute__((noinline)) void produce_##name(struct irun *r)                    \
	{                                                                                       \
		struct acq_item_ck c = { .it = { .kind = ACQ_ITEM_CAN } };                      \
		const uint64_t n = r->n;                                                        \
		unsigned spins = 0;                                                             \
                                                                                                \
		for (uint64_t i = 0; i < n; i++) {                                              \
			c.it.seq = i;                                                           \
			c.it.t_ns = (int64_t)i;                                                 \
			while (!give_##name(r, &c)) {                                           \
				r->full_waits++;                                                \
				backoff_n(&spins, r->spin_limit);                               \
			}                                                                       \
		}                                                                               \
	}                                                                                       \
	static __attribute__((noinline)) void produce_run_##name(struct irun *r)                \
	{                                                                                       \
		struct acq_item_ck run[BATCH];                                                  \
		const uint64_t total = r->n;                                                    \
		unsigned spins = 0;                                                             \
                                                                                                \
		memset(run, 0, sizeof(run));                                                    \
		for (uint64_t i = 0; i < total; i += BATCH) {                                   \
			size_t n = total - i < BATCH ? (size_t)(total - i) : BATCH;             \
			size_t done = 0;                                                        \
                                                                                                \
			for (size_t j = 0; j < n; j++) {                                        \
				run[j].it.kind = ACQ_ITEM_CAN;                                  \
				run[j].it.seq = i + j;                                          \
				run[j].it.t_ns = (int64_t)(i + j);                              \
			}                                                                       \
			while ((done += give_run_##name(r, &run[done], n - done)) < n) {        \
				r->full_waits++;                                                \
				backoff_n(&spins, r->spin_limit);                               \
			}                                                                       \
		}                                                                               \
	}                                                                                       \
	static __attribute__((noinline)) uint64_t consume_##name(struct irun *r)                \
	{                                                                                       \
		struct acq_item_ck c;                                                           \
		const uint64_t n = r->n;                                                        \
		uint64_t sum = 0;                                                               \
		unsigned spins = 0;                                                             \
                                                                                                \
		for (uint64_t got = 0; got < n;) {                                              \
			if (!take_##name(r, &c)) {                                              \
				r->empty_waits++;                                               \
				backoff_n(&spins, r->spin_limit);                               \
				continue;                                                       \
			}                                                                       \
			sum += c.it.seq;                                                        \
			got++;                                                                  \
		}                                                                               \
		return sum;                                                                     \
	}                                                                                       \
	static __attribute__((noinline)) uint64_t consume_run_##name(struct irun *r)            \
	{                                                                                       \
		struct acq_item_ck out[64];                                                     \
		const uint64_t n = r->n;                                                        \
		uint64_t sum = 0;                                                               \
		unsigned spins = 0;                                                             \
                                                                                                \
		for (uint64_t got = 0; got < n;) {                                              \
			size_t k = take_run_##name(r, out, 64);                                 \
                                                                                                \
			if (!k) {                                                               \
				r->empty_waits++;                                               \
				backoff_n(&spins, r->spin_limit);                               \
				continue;                                                       \
			}                                                                       \
			for (size_t j = 0; j < k; j++)                                          \
				sum += out[j].it.seq;                                           \
			got += k;                                                               \
		}                                                                               \
		return sum;                                                                     \
	}

ITEM_LOOPS(ours)
ITEM_LOOPS(ck)

static void *item_producer(void *p)
{
	struct irun *r = p;
	unsigned spins = 0;

	pin_self(r->cpu, r->fifo_prio);
	atomic_store(&r->ready, 1);
	/* backoff(), not a bare spin: on one CPU the consumer must get it
	   to start the clock. */
	while (!atomic_load_explicit(&r->go, memory_order_acquire))
		backoff_n(&spins, r->spin_limit);
	switch (r->kind) {
	case OURS: produce_ours(r); break;
	case CK: produce_ck(r); break;
	case OURS_BATCH: produce_run_ours(r); break;
	default: produce_run_ck(r); break;
	}
	return NULL;
}

static void item_consume(struct irun *r)
{
	switch (r->kind) {
	case OURS: r->checksum = consume_ours(r); break;
	case CK: r->checksum = consume_ck(r); break;
	case OURS_BATCH: r->checksum = consume_run_ours(r); break;
	default: r->checksum = consume_run_ck(r); break;
	}
}

struct iresult {
	double rate;               /* items/s */
	double full, empty;        /* waits per 1000 items */
};

/* One run of kind over buf (nslots acq_items), placed as pl says. */
static struct iresult item_run(enum kind kind, void *buf, size_t nslots, uint64_t n, const struct place *pl)
{
	struct irun r = { .kind = kind, .n = n, .cpu = pl->cpus[1], .fifo_prio = pl->fifo_prio,
	                  .spin_limit = pl->spin_limit };
	pthread_t th;
	double t0, t1;

	/* Every run starts from the same buffer state: written through by
	   the consumer's CPU, no stale items. */
	memset(buf, 0, nslots * sizeof(struct acq_item));
	if (kind == CK || kind == CK_BATCH) {
		ck_ring_init(&r.ck, (unsigned)nslots);
		r.ckbuf = buf;
	} else {
		acq_ring_init(&r.ring, buf, nslots, sizeof(struct acq_item));
	}
	pthread_create(&th, NULL, item_producer, &r);
	while (!atomic_load(&r.ready))
		sched_yield();
	t0 = now_s();
	atomic_store_explicit(&r.go, 1, memory_order_release);
	item_consume(&r);
	t1 = now_s();
	pthread_join(th, NULL);
	if (r.checksum != n * (n - 1) / 2) {
		fprintf(stderr, "checksum mismatch: items lost or duplicated\n");
		exit(1);
	}
	return (struct iresult){ (double)n / (t1 - t0), r.full_waits * 1000.0 / (double)n,
	                         r.empty_waits * 1000.0 / (double)n };
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of v[0..n), which it sorts. */
static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}


static double loadavg(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* The rounds for one slot count; prints its two rows, returns the lower of
   the two median paired ratios. */
static double versus_ck_slots(size_t nslots, uint64_t n, int rounds, const struct place *pl)
{
	static double rate[KIND_MAX][ROUNDS_MAX], full[KIND_MAX][ROUNDS_MAX], empty[KIND_MAX][ROUNDS_MAX];
	void *buf = aligned_alloc(64, nslots * sizeof(struct acq_item));
	double worst = 1e30;

	for (int rd = 0; rd < rounds; rd++)
		for (int j = 0; j < KIND_MAX; j++) {
			int k = (j + rd) % KIND_MAX;
			struct iresult res = item_run((enum kind)k, buf, nslots, n, pl);

			/* Under SCHED_FIFO the two sides shut everything else out of
			   both CPUs while they run: give the neighbours as long
			   again between runs. */
			if (pl->fifo_prio) {
				double d = (double)n / res.rate;
				struct timespec ts = { (time_t)d, (long)((d - (double)(time_t)d) * 1e9) };

				nanosleep(&ts, NULL);
			}

			rate[k][rd] = res.rate;
			full[k][rd] = res.full;
			empty[k][rd] = res.empty;
		}
	free(buf);
	for (int m = 0; m < 2; m++) {
		int o = m ? OURS_BATCH : OURS, c = m ? CK_BATCH : CK;
		double pair[ROUNDS_MAX], mo, mc, mp, lo, hi;
		double fo = median(full[o], rounds), eo = median(empty[o], rounds);
		double fc = median(full[c], rounds), ec = median(empty[c], rounds);

		for (int rd = 0; rd < rounds; rd++)
			pair[rd] = rate[o][rd] / rate[c][rd];
		mp = median(pair, rounds);
		lo = pair[0];
		hi = pair[rounds - 1];
		mo = median(rate[o], rounds);
		mc = median(rate[c], rounds);
		if (m)
			printf("    ");
		printf(" %7zu %-5s %7.1f [%5.1f-%5.1f] %7.1f [%5.1f-%5.1f] %7.2fx [%4.2f-%4.2f] %6.0f/%-6.0f %6.0f/%-6.0f\n",
		       nslots, m ? "16" : "1", mo / 1e6, rate[o][0] / 1e6, rate[o][rounds - 1] / 1e6,
		       mc / 1e6, rate[c][0] / 1e6, rate[c][rounds - 1] / 1e6, mp, lo, hi, fo, eo, fc, ec);
		if (mp < worst)
			worst = mp;
	}
	return worst;
}

/* Lowest median paired ratio ours / ck_ring over the slot counts, batch
   sizes and placements: the two sides on two CPUs (a source thread and the
   collector on a multi-core board), then both on one CPU, taking turns
   (a single-core board; with a 65,536-slot ring this is 4-8x faster than
   two CPUs here, since nothing crosses between cores: left to the
   scheduler, runs fell into either placement, and best-of-N then compared
   one ring's one-CPU run with the other's two-CPU run). */
static double versus_ck(uint64_t n, int rounds, const int cpus[2], int fifo_prio)
{
	size_t slots[] = { 1024, 65536 };
	double worst = 1e30;

	printf("\nstruct acq_item (96 B) slots against ck_ring: %llu items a run, %d rounds of one run each "
	       "(order rotated), CPUs %d and %d, %s, load average %.1f\n",
	       (unsigned long long)n, rounds, cpus[0], cpus[1], fifo_prio ? "SCHED_FIFO" : "default policy", loadavg());
	printf("M items/s as median [min-max]; ratio = ring/ck_ring within each round, median [min-max];\n"
	       "waits per 1000 items, medians: full = producer found the ring full, empty = consumer found it empty\n");
	printf("%-4s %7s %-5s %21s %21s %22s %13s %13s\n", "cpus", "slots", "items", "ring", "ck_ring", "ratio",
	       "ring full/empty", "ck full/empty");
	for (int place = 0; place < 2; place++) {
		/* On one CPU the other side cannot run while we spin: yield at
		   once, for both rings alike. */
		struct place pl = { { cpus[0], place ? cpus[0] : cpus[1] }, fifo_prio, place ? 1 : 256 };

		if (place && cpus[0] < 0)
			break;
		pin_self(pl.cpus[0], fifo_prio);
		for (int b = 0; b < 2; b++) {
			double w;

			printf("%-4s", place ? "1" : "2");
			fflush(stdout);
			w = versus_ck_slots(slots[b], n, rounds, &pl);
			if (w < worst)
				worst = w;
		}
	}
	printf("load average at the end %.1f\n", loadavg());
	printf("lowest median ratio ring/ck_ring: %.2fx (goal >= 1x)\n", worst);
	return worst;
}

/*
 * bench-ring [items [rounds]] [--ck] [--fifo]: items per run of the mutex
 * table (a quarter of it for acq_item runs), rounds of the acq_item
 * comparison; --ck runs that comparison alone; --fifo runs its two sides
 * under SCHED_FIFO, so that on a loaded machine they are not descheduled
 * in the middle of a run (root or CAP_SYS_NICE; refused: said, and the
 * default policy).
 */
int main(int argc, char **argv)
{
	uint64_t n = 20000000ull;
	int rounds = 9, npos = 0, fifo_prio = 0, cpus[2];
	bool ck_only = false;
	size_t items[] = { 8, 64 }, slots[] = { 1024, 65536 };
	double worst = 1e30;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ck"))
			ck_only = true;
		else if (!strcmp(argv[i], "--fifo"))
			fifo_prio = FIFO_PRIO;
		else if (npos++ == 0)
			n = strtoull(argv[i], NULL, 0);
		else
			rounds = atoi(argv[i]);
	}
	if (n < 2 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "usage: bench-ring [items >= 2 [rounds 1-%d]] [--ck] [--fifo]\n", ROUNDS_MAX);
		return 2;
	}
	if (fifo_prio) {
		/* Ask once here, so a refusal is said, not silently ignored. */
		struct sched_param sp = { .sched_priority = fifo_prio };
		int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);

		if (e) {
			fprintf(stderr, "bench-ring: --fifo: SCHED_FIFO %d refused (%s); default policy\n",
			        fifo_prio, strerror(e));
			fifo_prio = 0;
		}
		sp.sched_priority = 0;
		pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	}
	/* Before any pinning: the set asked is the calling thread's. */
	pick_cpus(cpus);
	if (!ck_only) {
		pin_self(cpus[0], fifo_prio);
		printf("ring against a mutex+condvar queue: consumer on CPU %d, producer on CPU %d, %s, "
		       "load average %.1f\n", cpus[0], cpus[1], fifo_prio ? "SCHED_FIFO" : "default policy", loadavg());
		printf("%-6s %-7s %16s %16s %8s\n", "item", "slots", "ring items/s", "mutex items/s", "ratio");
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2; b++) {
				double rr = best_of(true, items[a], slots[b], n, cpus, fifo_prio);
				double mm = best_of(false, items[a], slots[b], n / 8, cpus, fifo_prio);
				printf("%-6zu %-7zu %16.0f %16.0f %7.1fx\n", items[a], slots[b], rr, mm, rr / mm);
				if (rr / mm < worst)
					worst = rr / mm;
			}
		printf("lowest ratio ring/mutex: %.1fx (goal >= 20x)\n", worst);
	}
	versus_ck(n / 4, rounds, cpus, fifo_prio);
	return 0;
}
