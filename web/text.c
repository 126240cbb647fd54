/* SPDX-License-Identifier: MIT */
/*
 * text.c - where a client's bytes become railmon's: a time parameter
 * parsed (a string put into JSON is basic_json_string_buf, UTF-8 checked
 * by basic_utf8_ok).  Apart, so tests/fuzz/fuzz-web-text.c can hammer it
 * without a server.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "web/web-private.h"

int web_parse_time(const char *s, double *ret_t)
{
	struct tm tm = { 0 };
	const char *p;
	char *end;
	double t, frac = 0;

	if (!s || !*s)
		return -EINVAL;
	t = strtod(s, &end);
	if (end != s && !*end && strspn(s, "0123456789.") == strlen(s)) {
		if (!isfinite(t))
			return -EINVAL;
	} else {
		p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
		if (!p)
			return -EINVAL;
		if (*p == '.') {
			frac = strtod(p, &end);
			p = end;
		}
		if (*p == 'Z')
			p++;
		if (*p)
			return -EINVAL;
		t = (double)timegm(&tm) + frac;
	}
	/* 2000 .. 2100: anything else is a mistake, not a train's data */
	if (t < 946684800.0 || t > 4102444800.0)
		return -EINVAL;
	*ret_t = t;
	return 0;
}
