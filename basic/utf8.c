/* SPDX-License-Identifier: MIT */
/* utf8.c - RFC 3629's table of well-formed byte sequences. */
#include <stdint.h>
#include <string.h>

#include "utf8.h"

size_t basic_utf8_seq(const char *s, size_t left)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (!left)
		return 0;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2; /* 0xc0, 0xc1 lead only overlong forms of ASCII */
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4; /* 0xf5..0xff would be past U+10FFFF */
	else
		return 0;
	/* The second byte's range rules out the overlongs (e0, f0), the
	   surrogates (ed) and what is past U+10FFFF (f4). */
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

size_t basic_utf8_valid(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len && (n = basic_utf8_seq(s + i, len - i)))
		i += n;
	return i;
}

bool basic_utf8_ok(const char *s)
{
	size_t len;

	if (!s)
		return true;
	len = strlen(s);
	return basic_utf8_valid(s, len) == len;
}
