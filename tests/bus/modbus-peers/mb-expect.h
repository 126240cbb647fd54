/* SPDX-License-Identifier: MIT */
/*
 * mb-expect.h - what the test peers hold at every address, computed
 * independently of bus/regmap.c, and small helpers shared by the Modbus
 * tests and the benchmark.  Header-only test code.
 */
#pragma once

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "basic/clock.h"
#include "bus/bus.h"
#include "mb-values.h"

/* The value's bytes, most significant first, from the wire bytes of its
   registers by the order's letters (A = the first byte on the wire for
   ABCD): written from the definition, not from bus/regmap.c's swaps. */
static inline uint64_t mb_expect_bits(const struct bus_mb_channel *ch, unsigned nregs)
{
	uint8_t wire[8], val[8];
	unsigned n = 2 * nregs;
	uint64_t v = 0;

	for (unsigned i = 0; i < nregs; i++) {
		uint16_t r = mb_reg(ch->unit_id, ch->addr + i);
		wire[2 * i] = (uint8_t)(r >> 8);
		wire[2 * i + 1] = (uint8_t)r;
	}
	for (unsigned i = 0; i < n; i++) {
		switch (ch->order) {
		case BUS_MB_DCBA: val[i] = wire[n - 1 - i]; break;           /* D C B A: reversed */
		case BUS_MB_BADC: val[i] = wire[i ^ 1]; break;               /* B A D C: pairs swapped */
		case BUS_MB_CDAB: val[i] = wire[n - 2 - (i & ~1u) + (i & 1)]; break; /* C D A B: words reversed */
		default: val[i] = wire[i]; break;
		}
	}
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | val[i];
	return v;
}

/* The value a correct driver reports for ch (every integer type and bit). */
static inline double mb_expect(const struct bus_mb_channel *ch)
{
	unsigned u = ch->unit_id, a = ch->addr;
	uint32_t r0 = mb_reg(u, a);
	uint16_t v16 = (uint16_t)mb_expect_bits(ch, 1);
	uint8_t b8 = ch->byte == BUS_MB_BYTE_LOW ? (uint8_t)v16 : (uint8_t)(v16 >> 8);
	double raw;

	if (ch->table == BUS_MB_COIL || ch->table == BUS_MB_DISCRETE)
		raw = mb_bit(u, a);
	else if (ch->type == BUS_MB_U16)
		raw = v16;
	else if (ch->type == BUS_MB_S16)
		raw = (int16_t)v16;
	else if (ch->type == BUS_MB_U32)
		raw = (uint32_t)mb_expect_bits(ch, 2);
	else if (ch->type == BUS_MB_S32)
		raw = (int32_t)(uint32_t)mb_expect_bits(ch, 2);
	else if (ch->type == BUS_MB_U64)
		raw = (double)mb_expect_bits(ch, 4);
	else if (ch->type == BUS_MB_S64)
		raw = (double)(int64_t)mb_expect_bits(ch, 4);
	else if (ch->type == BUS_MB_U8)
		raw = b8;
	else if (ch->type == BUS_MB_S8)
		raw = (int8_t)b8;
	else if (ch->type == BUS_MB_BIT)
		raw = (r0 >> ch->bit) & 1;
	else
		assert(!"type not covered by mb_expect");
	return raw * ch->scale + ch->offset;
}

static inline struct bus_mb_channel mb_chan(uint32_t id, uint8_t unit, enum bus_mb_table table,
                                            uint16_t addr, enum bus_mb_type type, uint32_t period_ms)
{
	struct bus_mb_channel c = { .id = id, .unit_id = unit, .table = table, .addr = addr,
	                            .type = type, .order = BUS_MB_ABCD, .scale = 1.0,
	                            .period_ms = period_ms };

	return c;
}

static inline struct bus_cfg mb_tcp_cfg(int port, struct bus_mb_channel *ch, size_t n,
                                        uint32_t response_ms, uint16_t max_gap)
{
	struct bus_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.kind = BUS_KIND_MODBUS;
	strcpy(cfg.name, "mb-test");
	cfg.index = 3;
	strcpy(cfg.mb.host, "127.0.0.1");
	cfg.mb.port = (uint16_t)port;
	cfg.mb.response_timeout_ms = response_ms;
	cfg.mb.byte_timeout_ms = response_ms / 2;
	cfg.mb.max_gap = max_gap;
	cfg.mb.channels = ch;
	cfg.mb.nchannels = n;
	return cfg;
}

/* A Modbus RTU link on dev (a pty: 115200 8N1), as bus index 5. */
static inline struct bus_cfg mb_rtu_cfg(const char *dev, const struct bus_mb_channel *ch, size_t n,
                                        uint32_t response_ms, uint32_t byte_ms)
{
	struct bus_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.kind = BUS_KIND_MODBUS;
	strcpy(cfg.name, "mb-rtu");
	cfg.index = 5;
	cfg.mb.rtu = true;
	snprintf(cfg.mb.device, sizeof(cfg.mb.device), "%s", dev);
	cfg.mb.baud = 115200;
	cfg.mb.parity = 'N';
	cfg.mb.data_bits = 8;
	cfg.mb.stop_bits = 1;
	cfg.mb.response_timeout_ms = response_ms;
	cfg.mb.byte_timeout_ms = byte_ms;
	cfg.mb.channels = (struct bus_mb_channel *)ch;
	cfg.mb.nchannels = n;
	return cfg;
}

/* Poll dev for ms milliseconds; up to max items land in buf; the count. */
static inline size_t mb_run_for(bus_dev_t *dev, int ms, struct acq_item *buf, size_t max)
{
	int64_t end = basic_mono_ns() / BASIC_NS_PER_MS + ms;
	size_t n = 0;

	for (int64_t left; (left = end - basic_mono_ns() / BASIC_NS_PER_MS) > 0;) {
		struct acq_item it[64];
		int r = bus_dev_recv(dev, it, 64, (int)left);

		assert(r >= 0);
		for (int i = 0; i < r && n < max; i++)
			buf[n++] = it[i];
	}
	return n;
}

/*
 * Poll dev, appending to buf[n..max), until done(buf, count) holds or
 * timeout_ms have passed; the new count.  For a step that waits for what
 * the device must deliver (a changed value read, a peer that came up)
 * rather than for a fixed time a loaded machine may not meet.
 */
static inline size_t mb_run_until(bus_dev_t *dev, struct acq_item *buf, size_t n, size_t max,
                                  bool (*done)(const struct acq_item *buf, size_t n), int timeout_ms)
{
	int64_t end = basic_mono_ns() / BASIC_NS_PER_MS + timeout_ms;

	for (int64_t left; !done(buf, n) && (left = end - basic_mono_ns() / BASIC_NS_PER_MS) > 0;) {
		struct acq_item it[64];
		/* short waits: done() is looked at again after each wakeup */
		int r = bus_dev_recv(dev, it, 64, (int)(left < 20 ? left : 20));

		assert(r >= 0);
		for (int i = 0; i < r && n < max; i++)
			buf[n++] = it[i];
	}
	return n;
}
