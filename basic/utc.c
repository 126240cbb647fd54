/* SPDX-License-Identifier: MIT */
/* utc.c - ns since the epoch as UTC text (floor before the epoch). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "utc.h"

int basic_utc_format(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len)
{
	/* floor(t_ns / 1e9) and a fraction 0..999999999: t_ns % 1e9 is
	   negative before the epoch, and truncating that toward zero would
	   name a later second (or print "-250"). */
	int64_t sec = t_ns / BASIC_NS_PER_SEC - (t_ns % BASIC_NS_PER_SEC < 0);
	int64_t frac = t_ns % BASIC_NS_PER_SEC; /* not t_ns - sec * 1e9: that overflows at INT64_MIN */
	char text[BASIC_UTC_MAX];
	time_t tt = (time_t)sec;
	struct tm tm;
	int n;

	if (!buf || (digits != 0 && digits != 3 && digits != 6 && digits != 9) ||
	    (flags & ~(unsigned)(BASIC_UTC_SPACE | BASIC_UTC_PG)))
		return -EINVAL;
	if (frac < 0)
		frac += BASIC_NS_PER_SEC;
	if ((int64_t)tt != sec || !gmtime_r(&tt, &tm))
		return -EOVERFLOW;
	n = snprintf(text, sizeof(text), "%04d-%02d-%02d%c%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1,
	             tm.tm_mday, flags & BASIC_UTC_SPACE ? ' ' : 'T', tm.tm_hour, tm.tm_min, tm.tm_sec);
	if (digits) {
		for (unsigned d = digits; d < 9; d++)
			frac /= 10; /* truncating a non-negative fraction: still the floor */
		n += snprintf(text + n, sizeof(text) - (size_t)n, ".%0*lld", (int)digits, (long long)frac);
	}
	n += snprintf(text + n, sizeof(text) - (size_t)n, "%s", flags & BASIC_UTC_PG ? "+00" : "Z");
	if ((size_t)n >= len)
		return -ENOSPC;
	memcpy(buf, text, (size_t)n + 1);
	return n;
}

const char *basic_utc_text(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len)
{
	if (buf && len && basic_utc_format(t_ns, digits, flags, buf, len) < 0)
		snprintf(buf, len, "%" PRId64, t_ns);
	return buf;
}
