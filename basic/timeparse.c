/* SPDX-License-Identifier: MIT */
/* timeparse.c - points in time and durations in ns, as the reading
   commands take them (timeparse.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "basic/timeparse.h"

/* ".123" after the seconds -> ns, *end past it. */
static int64_t fraction_ns(const char *s, const char **end)
{
	int64_t ns = 0, scale = 100000000;

	*end = s;
	if (*s != '.')
		return 0;
	for (s++; isdigit((unsigned char)*s); s++) {
		ns += (*s - '0') * scale;
		scale /= 10;
	}
	*end = s;
	return ns;
}

/* "Z", "+01:00", "-0530", "" -> the zone: offset seconds east, or local. */
static int parse_zone(const char *s, bool *ret_local, long *ret_off)
{
	int h, m = 0, n = 0;

	*ret_local = !*s;
	*ret_off = 0;
	if (!*s || !strcmp(s, "Z") || !strcmp(s, "z"))
		return 0;
	if ((*s != '+' && *s != '-') ||
	    !(sscanf(s + 1, "%2d:%2d%n", &h, &m, &n) == 2 || sscanf(s + 1, "%2d%2d%n", &h, &m, &n) == 2 ||
	      sscanf(s + 1, "%2d%n", &h, &n) == 1) ||
	    s[1 + n] || h > 23 || m > 59)
		return -EINVAL;
	*ret_off = (*s == '-' ? -1 : 1) * (h * 3600L + m * 60L);
	return 0;
}

int basic_parse_time(const char *s, int64_t *ret_ns)
{
	struct tm tm = { 0 };
	const char *end;
	char *e;
	bool local;
	long off;
	int64_t frac, sec;
	double d;

	if (!s || !ret_ns)
		return -EINVAL;
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (end) {
		frac = fraction_ns(end, &end);
		if (parse_zone(end, &local, &off) < 0)
			return -EINVAL;
		if (local) {
			tm.tm_isdst = -1; /* the rules in force on that date */
			sec = (int64_t)mktime(&tm);
		} else {
			sec = (int64_t)timegm(&tm) - off;
		}
		*ret_ns = sec * 1000000000 + frac;
		return 0;
	}
	errno = 0;
	d = strtod(s, &e);
	if (e == s || *e || errno || !isfinite(d) || fabs(d) > 9.2e9)
		return -EINVAL;
	*ret_ns = (int64_t)llround(d * 1e9);
	return 0;
}

int basic_parse_duration_ns(const char *s, int64_t *ret_ns)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "min", 60e9 }, { "h", 3600e9 },
	};
	char *e;
	double v;

	if (!s || !ret_ns)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &e);
	if (e == s || errno || !(v > 0))
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(e, units[i].unit) && v * units[i].ns >= 1 && v * units[i].ns < 9.2e18) {
			*ret_ns = (int64_t)llround(v * units[i].ns);
			return 0;
		}
	return -EINVAL;
}
