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
#include "basic/utf8.h"

/* CP1252 0x80..0x9F; 0 = undefined in CP1252, taken as Latin-1. */
static const uint16_t cp1252_high[32] = {
	0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
	0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
};

size_t dbc_utf8_invalid_at(const char *text, size_t len)
{
	return basic_utf8_valid(text, len);
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
