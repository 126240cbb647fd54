/* SPDX-License-Identifier: MIT */
/*
 * dbc-text.c - the text encoding of a DBC: Vector's tools write CP1252 (a
 * unit "°C" is the byte 0xB0), railmon's outputs are UTF-8.
 *
 * The conversion is a table of its own rather than iconv(3): glibc's
 * CP1252 converter is a gconv module that stripped target images may lack
 * (iconv_open fails at run time, on the train), and it refuses the five
 * bytes CP1252 leaves undefined, where a DBC should still load; those are
 * taken as Latin-1 (U+0081...), as Python's "latin-1" fallback does.
 */
#include <errno.h>
#include <stdlib.h>

#include "dbc-private.h"

/* CP1252 0x80..0x9F; 0 = undefined in CP1252, taken as Latin-1. */
static const uint16_t cp1252_high[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
};

/* Length of the UTF-8 sequence at p (RFC 3629: no overlongs, no
   surrogates, at most U+10FFFF), 0 if it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

size_t dbc_utf8_invalid_at(const char *text, size_t len)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0, n;

	while (i < len && (n = utf8_seq(p + i, len - i)))
		i += n;
	return i;
}

int dbc_cp1252_to_utf8(const char *text, size_t len, char **ret_text, size_t *ret_len)
{
	const unsigned char *p = (const unsigned char *)text;
	char *out = malloc(len * 3 + 1), *o = out;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		uint32_t cp = p[i] >= 0x80 && p[i] < 0xa0 && cp1252_high[p[i] - 0x80] ? cp1252_high[p[i] - 0x80] : p[i];

		if (cp < 0x80) {
			*o++ = (char)cp;
		} else if (cp < 0x800) {
			*o++ = (char)(0xc0 | cp >> 6);
			*o++ = (char)(0x80 | (cp & 0x3f));
		} else {
			*o++ = (char)(0xe0 | cp >> 12);
			*o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*o++ = (char)(0x80 | (cp & 0x3f));
		}
	}
	*o = '\0';
	*ret_text = out;
	*ret_len = (size_t)(o - out);
	return 0;
}
