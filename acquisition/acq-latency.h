/* SPDX-License-Identifier: MIT */
/*
 * acq-latency.h - wakeup-latency histogram, cyclictest style.
 *
 * 1 us buckets up to ACQ_LAT_BUCKETS-1 us, one overflow bucket, plus count,
 * sum and max.  One writer (the realtime thread that owns it), any number of
 * readers: every field is written with relaxed atomic stores by the single
 * writer, so readers see each counter untorn (a snapshot across fields may
 * be a few samples apart, which is fine for statistics).
 *
 * Header-only plain data like acq-item.h, so bus drivers that pace
 * themselves (Modbus) can record into it without depending on acquisition/.
 * RT-safe: no allocation, no locks, no syscalls.
 */
#pragma once

#include <stdint.h>
#include <string.h>

#define ACQ_LAT_BUCKETS 4096 /* 1 us each: 0..4095 us, then overflow */

struct acq_latency {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t overflow;  /* samples >= ACQ_LAT_BUCKETS us */
	uint64_t overruns;  /* periods missed entirely */
	uint32_t bucket[ACQ_LAT_BUCKETS];
};

static inline void acq_latency_reset(struct acq_latency *l)
{
	memset(l, 0, sizeof(*l));
}

/* Writer side: record one wakeup that came lat_ns after its deadline. */
static inline void acq_latency_add(struct acq_latency *l, int64_t lat_ns)
{
	uint64_t ns = lat_ns < 0 ? 0 : (uint64_t)lat_ns;
	uint64_t us = ns / 1000;

	/* Single writer: a relaxed load/store pair is an increment that
	   readers can never see torn. */
	__atomic_store_n(&l->count, __atomic_load_n(&l->count, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&l->sum_ns, __atomic_load_n(&l->sum_ns, __ATOMIC_RELAXED) + ns, __ATOMIC_RELAXED);
	if (ns > __atomic_load_n(&l->max_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&l->max_ns, ns, __ATOMIC_RELAXED);
	if (us >= ACQ_LAT_BUCKETS)
		__atomic_store_n(&l->overflow, __atomic_load_n(&l->overflow, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&l->bucket[us], __atomic_load_n(&l->bucket[us], __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static inline void acq_latency_overrun(struct acq_latency *l, uint64_t missed)
{
	__atomic_store_n(&l->overruns, __atomic_load_n(&l->overruns, __ATOMIC_RELAXED) + missed, __ATOMIC_RELAXED);
}

/* Reader side: copy a snapshot (each field read atomically). */
static inline void acq_latency_snapshot(const struct acq_latency *l, struct acq_latency *ret)
{
	ret->count = __atomic_load_n(&l->count, __ATOMIC_RELAXED);
	ret->sum_ns = __atomic_load_n(&l->sum_ns, __ATOMIC_RELAXED);
	ret->max_ns = __atomic_load_n(&l->max_ns, __ATOMIC_RELAXED);
	ret->overflow = __atomic_load_n(&l->overflow, __ATOMIC_RELAXED);
	ret->overruns = __atomic_load_n(&l->overruns, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < ACQ_LAT_BUCKETS; i++)
		ret->bucket[i] = __atomic_load_n(&l->bucket[i], __ATOMIC_RELAXED);
}

/*
 * Percentile p (0 < p <= 100) of a snapshot, in microseconds: the upper edge
 * of the bucket holding the p-th sample, like cyclictest's histogram.
 * Returns ACQ_LAT_BUCKETS when it falls into the overflow bucket, 0 when
 * the histogram is empty.
 */
static inline uint32_t acq_latency_percentile_us(const struct acq_latency *snap, double p)
{
	uint64_t seen = 0, want;

	if (!snap->count)
		return 0;
	want = (uint64_t)((double)snap->count * p / 100.0 + 0.999999);
	if (want == 0)
		want = 1;
	for (uint32_t i = 0; i < ACQ_LAT_BUCKETS; i++) {
		seen += snap->bucket[i];
		if (seen >= want)
			return i + 1;
	}
	return ACQ_LAT_BUCKETS;
}
