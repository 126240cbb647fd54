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

/* Length of the valid UTF-8 sequence at s (1-4), or 0: RFC 3629's table,
   so no overlong form, no surrogate and nothing past U+10FFFF gets through
   (found by fuzz-web-text: 0xf5-0xff once passed as 3-byte leads). */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

bool web_utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = *p < 0x80 ? 1 : utf8_len(p);

		if (!n)
			return false;
		p += n;
	}
	return true;
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
