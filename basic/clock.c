/* SPDX-License-Identifier: MIT */
#include <errno.h>

#include "clock.h"

struct timespec basic_deadline_ms(clockid_t clk, unsigned ms)
{
	return basic_ns_to_ts(basic_now_ns(clk) + (int64_t)ms * BASIC_NS_PER_MS);
}

void basic_sleep_until(clockid_t clk, int64_t ns)
{
	struct timespec ts = basic_ns_to_ts(ns > 0 ? ns : 0);

	while (clock_nanosleep(clk, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}
