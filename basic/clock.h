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

/*
 * Both clocks at one instant: monotonic read before and after the
 * realtime, again (at most 4 times) when more than 200 us came between
 * them (a preemption), so realtime - monotonic is not off by a scheduling
 * delay.  *ret_mono is the middle of the two monotonic reads.  RT-safe.
 */
static inline void basic_clock_pair(int64_t *ret_real, int64_t *ret_mono)
{
	int64_t m0 = 0, r = 0, m1 = 0;

	for (int i = 0; i < 4; i++) {
		m0 = basic_mono_ns();
		r = basic_realtime_ns();
		m1 = basic_mono_ns();
		if (m1 - m0 <= 200000)
			break;
	}
	*ret_real = r;
	*ret_mono = m0 + (m1 - m0) / 2;
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
