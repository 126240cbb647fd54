/* SPDX-License-Identifier: MIT */
/*
 * clock.h - time in int64 nanoseconds, one copy for the whole tree.
 *
 * CLOCK_REALTIME stamps records (what a record says happened when);
 * CLOCK_MONOTONIC paces loops and measures durations, so a clock step
 * (NTP, GPS) never stretches a timeout or a poll period.  The readers are
 * inline and RT-safe (vDSO, no syscall on the usual targets).
 */
#pragma once

#include <stdint.h>
#include <time.h>

#define BASIC_NS_PER_SEC 1000000000ll
#define BASIC_NS_PER_MS 1000000ll

static inline int64_t basic_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * BASIC_NS_PER_SEC + ts.tv_nsec;
}

static inline int64_t basic_realtime_ns(void)
{
	return basic_now_ns(CLOCK_REALTIME);
}

static inline int64_t basic_mono_ns(void)
{
	return basic_now_ns(CLOCK_MONOTONIC);
}

/* One reading of both clocks: monotonic before and after the realtime. */
struct basic_clock_reading {
	int64_t mono_before, real, mono_after;
};

/*
 * Of n >= 1 readings, the one whose monotonic reads lie closest together
 * (the tightest bracket: the realtime read was least likely preempted, so
 * realtime - monotonic is off by the least); the first of equals.
 * *ret_mono is the middle of its two monotonic reads.
 */
static inline void basic_clock_pair_pick(const struct basic_clock_reading *r, int n, int64_t *ret_real,
                                         int64_t *ret_mono)
{
	int best = 0;

	for (int i = 1; i < n; i++)
		if (r[i].mono_after - r[i].mono_before < r[best].mono_after - r[best].mono_before)
			best = i;
	*ret_real = r[best].real;
	*ret_mono = r[best].mono_before + (r[best].mono_after - r[best].mono_before) / 2;
}

#define BASIC_CLOCK_PAIR_READS 4

/*
 * Both clocks at one instant: BASIC_CLOCK_PAIR_READS readings, the
 * tightest kept (basic_clock_pair_pick()), so a preemption inside one
 * reading does not put its scheduling delay into realtime - monotonic (a
 * reading kept because it came last would).  RT-safe: 12 vDSO reads.
 */
static inline void basic_clock_pair(int64_t *ret_real, int64_t *ret_mono)
{
	struct basic_clock_reading r[BASIC_CLOCK_PAIR_READS];

	for (int i = 0; i < BASIC_CLOCK_PAIR_READS; i++) {
		r[i].mono_before = basic_mono_ns();
		r[i].real = basic_realtime_ns();
		r[i].mono_after = basic_mono_ns();
	}
	basic_clock_pair_pick(r, BASIC_CLOCK_PAIR_READS, ret_real, ret_mono);
}

/* ns >= 0 only: a negative time has no timespec the kernel accepts. */
static inline struct timespec basic_ns_to_ts(int64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / BASIC_NS_PER_SEC), .tv_nsec = (long)(ns % BASIC_NS_PER_SEC) };
}

/* clk now plus ms, as an absolute timespec (pthread_cond_timedwait,
   mosquitto loops).  RT-safe. */
struct timespec basic_deadline_ms(clockid_t clk, unsigned ms);

/*
 * Sleep until the absolute time ns on clk (CLOCK_MONOTONIC for pacing).
 * A signal does not end the sleep early: the deadline is absolute, so it
 * simply sleeps again.  Callers that must notice a stop flag sleep in
 * slices.  RT-safe.
 */
void basic_sleep_until(clockid_t clk, int64_t ns);
