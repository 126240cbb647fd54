/* SPDX-License-Identifier: MIT */
/*
 * byteorder.h - fixed-order integers in byte buffers: big-endian (network
 * order: TRDP headers, pcap's IPv4/UDP/TCP, Modbus ADUs, PostgreSQL's
 * binary COPY) and little-endian (BLF, storage/'s segments, a TRDP
 * header's FCS).
 *
 * Byte by byte, so any pointer will do: a field at an odd offset of a
 * packet or a file is read without an unaligned access (armhf traps
 * some), and the result is the same on a big- or little-endian host.
 * Every shift is on a widened unsigned value: a byte of 0x80 or more
 * never reaches an int's sign bit.  RT-safe, no state.  Not endian.h:
 * meson puts basic/ on libbasic's include path, where that name would
 * stand in for the C library's <endian.h>.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

static inline uint16_t basic_get_be16(const void *buf)
{
	const uint8_t *p = buf;

	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t basic_get_be32(const void *buf)
{
	const uint8_t *p = buf;

	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t basic_get_be64(const void *buf)
{
	const uint8_t *p = buf;

	return (uint64_t)basic_get_be32(p) << 32 | basic_get_be32(p + 4);
}

/* The first n bytes (0 to 8) as one big-endian number: a field whose
   width is data (a dataset element, a DBC signal's bytes). */
static inline uint64_t basic_get_ben(const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

static inline void basic_put_be16(void *buf, uint16_t v)
{
	uint8_t *p = buf;

	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void basic_put_be32(void *buf, uint32_t v)
{
	uint8_t *p = buf;

	basic_put_be16(p, (uint16_t)(v >> 16));
	basic_put_be16(p + 2, (uint16_t)v);
}

static inline void basic_put_be64(void *buf, uint64_t v)
{
	uint8_t *p = buf;

	basic_put_be32(p, (uint32_t)(v >> 32));
	basic_put_be32(p + 4, (uint32_t)v);
}

static inline uint16_t basic_get_le16(const void *buf)
{
	const uint8_t *p = buf;

	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t basic_get_le32(const void *buf)
{
	const uint8_t *p = buf;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t basic_get_le64(const void *buf)
{
	const uint8_t *p = buf;

	return (uint64_t)basic_get_le32(p) | (uint64_t)basic_get_le32(p + 4) << 32;
}

static inline void basic_put_le16(void *buf, uint16_t v)
{
	uint8_t *p = buf;

	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void basic_put_le32(void *buf, uint32_t v)
{
	uint8_t *p = buf;

	basic_put_le16(p, (uint16_t)v);
	basic_put_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void basic_put_le64(void *buf, uint64_t v)
{
	uint8_t *p = buf;

	basic_put_le32(p, (uint32_t)v);
	basic_put_le32(p + 4, (uint32_t)(v >> 32));
}
