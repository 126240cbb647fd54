/* SPDX-License-Identifier: MIT */
/* utc.c - ns since the epoch as UTC text (floor before the epoch). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "utc.h"

/* v as exactly n decimal digits at p (leading zeros); past them. */
static char *digits_at(char *p, uint64_t v, unsigned n)
{
	for (unsigned i = n; i-- > 0; v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + n;
}

int basic_utc_format(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len)
{
	/* floor(t_ns / 1e9) and a fraction 0..999999999: t_ns % 1e9 is
	   negative before the epoch, and truncating that toward zero would
	   name a later second (or print "-250"). */
	int64_t sec = t_ns / BASIC_NS_PER_SEC - (t_ns % BASIC_NS_PER_SEC < 0);
	int64_t frac = t_ns % BASIC_NS_PER_SEC; /* not t_ns - sec * 1e9: that overflows at INT64_MIN */
	char text[BASIC_UTC_MAX], *p = text;
	time_t tt = (time_t)sec;
	struct tm tm;
	size_t n;

	if (!buf || (digits != 0 && digits != 3 && digits != 6 && digits != 9) ||
	    (flags & ~(unsigned)(BASIC_UTC_SPACE | BASIC_UTC_PG)))
		return -EINVAL;
	if (frac < 0)
		frac += BASIC_NS_PER_SEC;
	/* int64 ns reach the years 1677 to 2262: always 4 digits */
	if ((int64_t)tt != sec || !gmtime_r(&tt, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return -EOVERFLOW;
	/* digit by digit, not snprintf: export writes one per record */
	p = digits_at(p, (uint64_t)(tm.tm_year + 1900), 4);
	*p++ = '-';
	p = digits_at(p, (uint64_t)tm.tm_mon + 1, 2);
	*p++ = '-';
	p = digits_at(p, (uint64_t)tm.tm_mday, 2);
	*p++ = flags & BASIC_UTC_SPACE ? ' ' : 'T';
	p = digits_at(p, (uint64_t)tm.tm_hour, 2);
	*p++ = ':';
	p = digits_at(p, (uint64_t)tm.tm_min, 2);
	*p++ = ':';
	p = digits_at(p, (uint64_t)tm.tm_sec, 2);
	if (digits) {
		for (unsigned d = digits; d < 9; d++)
			frac /= 10; /* truncating a non-negative fraction: still the floor */
		*p++ = '.';
		p = digits_at(p, (uint64_t)frac, digits);
	}
	if (flags & BASIC_UTC_PG) {
		memcpy(p, "+00", 3);
		p += 3;
	} else {
		*p++ = 'Z';
	}
	n = (size_t)(p - text);
	if (n >= len)
		return -ENOSPC;
	memcpy(buf, text, n);
	buf[n] = '\0';
	return (int)n;
}

const char *basic_utc_text(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len)
{
	if (buf && len && basic_utc_format(t_ns, digits, flags, buf, len) < 0)
		snprintf(buf, len, "%" PRId64, t_ns);
	return buf;
}
