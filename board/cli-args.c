/* SPDX-License-Identifier: MIT */
/* cli-args.c - times, durations and near names for options (cli-args.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli-args.h"

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

int cli_parse_time(const char *s, int64_t *ret_ns)
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

int cli_parse_duration(const char *s, int64_t *ret_ns)
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

/* Levenshtein distance, case folded, two rows; long names capped. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[2][65];

	if (la > 64 || lb > 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = row[i & 1], *prev = row[(i - 1) & 1];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	}
	return row[la & 1][lb];
}

void cli_nearest_names(const char *want, const char *const *names, size_t n, char *buf, size_t len)
{
	enum { BEST = 5 };
	const char *best[BEST];
	size_t dist[BEST], nbest = 0, used = 0, limit = strlen(want) / 2 + 1;

	if (!len)
		return;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(want, names[i]), k;

		if (strcasestr(names[i], want) || strcasestr(want, names[i]))
			d = d < limit ? d : limit; /* a part of it: as near as the limit */
		if (d > limit)
			continue;
		/* insertion into the BEST nearest, nearest first */
		for (k = nbest; k > 0 && dist[k - 1] > d; k--)
			if (k < BEST) {
				best[k] = best[k - 1];
				dist[k] = dist[k - 1];
			}
		if (k < BEST) {
			best[k] = names[i];
			dist[k] = d;
			nbest += nbest < BEST;
		}
	}
	for (size_t k = 0; k < nbest && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "", best[k]);
}
