/* SPDX-License-Identifier: MIT */
/*
 * crc-slice8.h - the slicing-by-8 loop of a reflected CRC-32, once for
 * every table basic/gen-crc-table.py makes: trdp/'s header FCS (IEEE
 * 802.3) and storage/'s CRC-32C.  Each module keeps its own table (a
 * constant of its own format) and its own pre/post inversion; this is
 * only the fold.
 *
 * static inline so that each caller's table is a constant address again
 * (as when the loop was written out in each module): no indirection, the
 * same code as before.  Little-endian loads by bytes (basic_get_le32), so
 * no unaligned access on armhf and the same result on a big-endian host.
 * RT-safe, no state.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "basic/byteorder.h"

/* Fold len bytes at buf into crc (already inverted by the caller, if its
   CRC is) through table t, 8 bytes a step; returns the new value, not
   inverted. */
static inline uint32_t basic_crc32_slice8(const uint32_t t[8][256], uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	for (; len >= 8; p += 8, len -= 8) {
		uint32_t a = basic_get_le32(p) ^ crc, b = basic_get_le32(p + 4);

		crc = t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^
		      t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24];
	}
	while (len--)
		crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
	return crc;
}
