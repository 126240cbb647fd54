/* SPDX-License-Identifier: MIT */
/* hex.c - hex digits to bytes and back. */
#include <errno.h>

#include "hex.h"

int basic_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

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
