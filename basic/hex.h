/* SPDX-License-Identifier: MIT */
/*
 * hex.h - bytes as hex digits and back, one copy for the tree: log ids
 * (ground log directories, resend lines, the database's encode(..., 'hex')),
 * CAN payloads.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Each byte's hex digit value + 1, 0 for anything else: one load per digit
   (the candump reader's hottest loop reads ids and payloads through it). */
extern const uint8_t basic_hex_tab[256];

/* The value (0 to 15) of the hex digit c, either case; -1 for anything else. */
static inline int basic_hex_digit(char c)
{
	return (int)basic_hex_tab[(unsigned char)c] - 1;
}

/*
 * The len hex digits at s (either case, nothing else: no sign, no "0x",
 * no blank) as len / 2 bytes into out (room for max).  Returns how many
 * bytes, -EINVAL (NULL, an odd len, a byte that is not a hex digit),
 * -ENOSPC (more than max bytes).  out may be partly written on failure.
 */
ssize_t basic_hex_decode(const char *s, size_t len, uint8_t *out, size_t max);

/* The n bytes at p as 2n hex digits (upper case or lower) into out, which
   has room for 2n + 1: NUL-terminated. */
void basic_hex_encode(const void *p, size_t n, bool upper, char *out);
