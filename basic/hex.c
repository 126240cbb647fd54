/* SPDX-License-Identifier: MIT */
/* hex.c - hex digits to bytes and back. */
#include <errno.h>

#include "hex.h"

const uint8_t basic_hex_tab[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

ssize_t basic_hex_decode(const char *s, size_t len, uint8_t *out, size_t max)
{
	if (!s || (!out && len) || len % 2)
		return -EINVAL;
	if (len / 2 > max)
		return -ENOSPC;
	for (size_t i = 0; i < len / 2; i++) {
		int hi = basic_hex_digit(s[2 * i]), lo = basic_hex_digit(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return (ssize_t)(len / 2);
}

void basic_hex_encode(const void *p, size_t n, bool upper, char *out)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	const uint8_t *d = p;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = 0;
}
