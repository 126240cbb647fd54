/* SPDX-License-Identifier: MIT */
/*
 * text.c - the two places where a client's bytes become railmon's: a
 * time parameter parsed, and a string put into JSON (an error naming
 * the client's parameter, a vehicle's name in an SSE message).  Apart,
 * so tests/fuzz/fuzz-web-text.c can hammer them without a server.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "web/web-private.h"

/* Length of the valid UTF-8 sequence at s (1-4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;

	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

int web_json_string(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (len < 3)
		return -ENOSPC;
	buf[o++] = '"';
	while (*p) {
		char esc[8];
		size_t n, take = 1;

		if (*p == '"' || *p == '\\')
			n = (size_t)snprintf(esc, sizeof(esc), "\\%c", *p);
		else if (*p < 0x20)
			n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", *p);
		else if (*p < 0x80)
			n = (size_t)snprintf(esc, sizeof(esc), "%c", *p);
		else if ((take = utf8_len(p)))
			n = (size_t)snprintf(esc, sizeof(esc), "%.*s", (int)take, (const char *)p);
		else /* not UTF-8 (a client's raw bytes): JSON must be */
			n = (size_t)snprintf(esc, sizeof(esc), "\\ufffd"), take = 1;
		if (o + n + 2 > len)
			return -ENOSPC;
		memcpy(buf + o, esc, n);
		o += n;
		p += take;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return (int)o;
}

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
