/* SPDX-License-Identifier: MIT */
/*
 * test-basic-byteorder.c - basic/byteorder.h: fixed-order integers read and
 * written byte by byte, at every offset of a buffer (odd ones are
 * unaligned: UBSan's alignment check and armhf under qemu see a word
 * access), with bytes of 0x80 and more (a shift of an int into its sign
 * bit, or a 32-bit shift of a 64-bit value, gives the wrong number).  The
 * expected values are sums of byte * 256^k, not shifts.
 */
#include <stdint.h>
#include <string.h>

#include "basic/byteorder.h"
#include "tlib.h"

/* bytes of every high bit pattern: 0xff, 0x80, 0x7f next to 0x80, 0x00 */
static const uint8_t BYTES[8] = { 0xfe, 0x80, 0x7f, 0x98, 0x00, 0xff, 0x43, 0x81 };

/* The n bytes at p as a number, most significant first (or last). */
static uint64_t weigh(const uint8_t *p, unsigned n, int big)
{
	uint64_t v = 0, w = 1;

	for (unsigned i = 0; i < n; i++, w *= 256)
		v += (uint64_t)p[big ? n - 1 - i : i] * w;
	return v;
}

static void test_get(void)
{
	uint8_t buf[8 + 16];

	CHECK(basic_get_be16(BYTES) == 0xfe80);
	CHECK(basic_get_be32(BYTES) == 0xfe807f98u);
	CHECK(basic_get_be64(BYTES) == 0xfe807f9800ff4381ull);
	CHECK(basic_get_le16(BYTES) == 0x80fe);
	CHECK(basic_get_le32(BYTES) == 0x987f80feu);
	CHECK(basic_get_le64(BYTES) == 0x8143ff00987f80feull);
	/* the sign bit alone, and all ones */
	CHECK(basic_get_be32((const uint8_t[]){ 0x80, 0, 0, 0 }) == 0x80000000u);
	CHECK(basic_get_le32((const uint8_t[]){ 0, 0, 0, 0x80 }) == 0x80000000u);
	CHECK(basic_get_be64((const uint8_t[]){ 0x80, 0, 0, 0, 0, 0, 0, 0 }) == 0x8000000000000000ull);
	CHECK(basic_get_le64((const uint8_t[]){ 0, 0, 0, 0, 0, 0, 0, 0x80 }) == 0x8000000000000000ull);
	CHECK(basic_get_be64((const uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }) == UINT64_MAX);
	/* every offset of a buffer, so at least half are unaligned */
	for (unsigned off = 0; off < 16; off++) {
		const uint8_t *p = buf + off;

		memset(buf, 0x5a, sizeof(buf));
		memcpy(buf + off, BYTES, 8);
		CHECK(basic_get_be16(p) == weigh(p, 2, 1), "offset %u", off);
		CHECK(basic_get_be32(p) == weigh(p, 4, 1), "offset %u", off);
		CHECK(basic_get_be64(p) == weigh(p, 8, 1), "offset %u", off);
		CHECK(basic_get_le16(p) == weigh(p, 2, 0), "offset %u", off);
		CHECK(basic_get_le32(p) == weigh(p, 4, 0), "offset %u", off);
		CHECK(basic_get_le64(p) == weigh(p, 8, 0), "offset %u", off);
		for (unsigned n = 0; n <= 8; n++)
			CHECK(basic_get_ben(p, n) == weigh(p, n, 1), "offset %u, %u bytes", off, n);
	}
}

static void test_put(void)
{
	static const uint64_t values[] = { 0, 1, 0x80, 0xff, 0x8000, 0x80000000u, 0xfe807f9800ff4381ull,
	                                   0x8000000000000000ull, UINT64_MAX };
	uint8_t buf[8 + 16];

	for (size_t k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
		uint64_t v = values[k];

		for (unsigned off = 0; off < 8; off++) {
			uint8_t *p = buf + off;

			/* each writes its width and no more: the guard bytes stay */
#define PUT(fn, width, big, mask)                                                                     \
	do {                                                                                          \
		memset(buf, 0x5a, sizeof(buf));                                                       \
		fn(p, (mask)v);                                                                       \
		CHECK(weigh(p, width, big) == (uint64_t)(mask)v, #fn " of %#llx at offset %u",        \
		      (unsigned long long)v, off);                                                    \
		CHECK(p[width] == 0x5a && (off == 0 || p[-1] == 0x5a), #fn " wrote outside its bytes"); \
	} while (0)
			PUT(basic_put_be16, 2, 1, uint16_t);
			PUT(basic_put_be32, 4, 1, uint32_t);
			PUT(basic_put_be64, 8, 1, uint64_t);
			PUT(basic_put_le16, 2, 0, uint16_t);
			PUT(basic_put_le32, 4, 0, uint32_t);
			PUT(basic_put_le64, 8, 0, uint64_t);
#undef PUT
			/* and read back by the other half */
			basic_put_be64(p, v);
			CHECK(basic_get_be64(p) == v && basic_get_ben(p, 8) == v);
			basic_put_le64(p, v);
			CHECK(basic_get_le64(p) == v);
			basic_put_be32(p, (uint32_t)v);
			CHECK(basic_get_be32(p) == (uint32_t)v);
			basic_put_le32(p, (uint32_t)v);
			CHECK(basic_get_le32(p) == (uint32_t)v);
			basic_put_be16(p, (uint16_t)v);
			CHECK(basic_get_be16(p) == (uint16_t)v);
			basic_put_le16(p, (uint16_t)v);
			CHECK(basic_get_le16(p) == (uint16_t)v);
		}
	}
}

int main(void)
{
	test_get();
	test_put();
	printf("basic-byteorder: BE and LE 16/32/64 and n-byte, at 16 offsets, high bits: ok\n");
	return 0;
}
