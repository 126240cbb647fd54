/* SPDX-License-Identifier: MIT */
/*
 * mb-values.h - what the Modbus test peers hold at every address, and the
 * pieces of a reply they build, written independently of bus/regmap.c so a
 * driver bug cannot hide behind the same mistake in the peer.  Shared by the
 * C peers (mb-fault-server.c, mb-rtu-slaves.c) and, through mb-expect.h, by
 * the tests; pymodbus-server.py holds the same values.  Header-only test code.
 *
 * Every register holds (unit * 1000 + address) & 0xffff and every coil or
 * discrete input the bit mb_bit(unit, address), so a value attributed to the
 * wrong device or register is caught.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline int mb_bit(unsigned unit, unsigned addr)
{
	uint32_t h = unit * 2654435761u ^ addr * 40503u;

	return (int)((h >> 13) & 1);
}

static inline uint16_t mb_reg(unsigned unit, unsigned addr)
{
	return (uint16_t)((unit * 1000 + addr) & 0xffff);
}

/* Modbus RTU CRC-16 (polynomial 0xa001, initial 0xffff); sent low byte first. */
static inline uint16_t mb_crc16(const uint8_t *b, size_t n)
{
	uint16_t crc = 0xffff;

	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (uint16_t)((crc >> 1) ^ 0xa001) : (uint16_t)(crc >> 1);
	}
	return crc;
}

/* The correct PDU answering a read of count items at addr; returns its length. */
static inline size_t mb_build_read(unsigned unit, unsigned fc, unsigned addr, unsigned count, uint8_t *pdu)
{
	size_t n = 2;

	pdu[0] = (uint8_t)fc;
	if (fc <= 2) {
		memset(pdu + 2, 0, (count + 7) / 8);
		for (unsigned i = 0; i < count; i++)
			pdu[2 + i / 8] |= (uint8_t)(mb_bit(unit, addr + i) << (i % 8));
		n += (count + 7) / 8;
	} else {
		for (unsigned i = 0; i < count; i++) {
			uint16_t v = mb_reg(unit, addr + i);

			pdu[n++] = (uint8_t)(v >> 8);
			pdu[n++] = (uint8_t)v;
		}
	}
	pdu[1] = (uint8_t)(n - 2);
	return n;
}
