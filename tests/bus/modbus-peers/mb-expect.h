/* SPDX-License-Identifier: MIT */
/*
 * mb-expect.h - what the test peers hold at every address, computed
 * independently of bus/regmap.c, and small helpers shared by the Modbus
 * tests and the benchmark.  Header-only test code.
 */
#pragma once

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "basic/clock.h"
#include "bus/bus.h"
#include "mb-values.h"

/* The value a correct driver reports for ch (ABCD/CDAB, u16/s16/u32/s32/bit). */
static inline double mb_expect(const struct bus_mb_channel *ch)
{
	unsigned u = ch->unit_id, a = ch->addr;
	uint32_t r0 = mb_reg(u, a), r1 = mb_reg(u, a + 1);
	uint32_t w = ch->order == BUS_MB_CDAB ? (r1 << 16 | r0) : (r0 << 16 | r1);
	double raw;

	if (ch->table == BUS_MB_COIL || ch->table == BUS_MB_DISCRETE)
		raw = mb_bit(u, a);
	else if (ch->type == BUS_MB_U16)
		raw = r0;
	else if (ch->type == BUS_MB_S16)
		raw = (int16_t)r0;
	else if (ch->type == BUS_MB_U32)
		raw = w;
	else if (ch->type == BUS_MB_S32)
		raw = (int32_t)w;
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
