/* SPDX-License-Identifier: MIT */
/*
 * test-load.c - the bus load arithmetic (bus/load.h) that `check` prints
 * and `run` warns with: CAN frame times, the load of a DBC's cyclic
 * messages, Modbus ADU sizes and the load of a poll plan on a line.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "bus/load.h"
#include "railmon-config.h"

static bool near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * (fabs(b) > 1 ? fabs(b) : 1);
}

static void test_can_frame(void)
{
	/* classic: 44 / 64 bits of overhead, 8 a byte */
	assert(near(bus_can_frame_seconds(8, false, 500000, 500000), (44 + 64) / 500000.0));
	assert(near(bus_can_frame_seconds(0, true, 250000, 250000), 64 / 250000.0));
	/* FD: the arbitration at the nominal rate, data and CRC at the data rate */
	assert(near(bus_can_frame_seconds(12, false, 500000, 2000000), 29 / 500000.0 + (96 + 22) / 2000000.0));
	assert(near(bus_can_frame_seconds(64, true, 500000, 2000000), 49 / 500000.0 + (512 + 26) / 2000000.0));
}

static void test_can_load(void)
{
	struct bus_can_cfg cfg = { 0 };
	struct bus_can_load l;
	char why[256];
	dbc_t *dbc;

	assert(dbc_load(RAILMON_SOURCE_DIR "/cli/demo/train.dbc", &dbc, why, sizeof(why)) == 0);
	assert(bus_can_load(NULL, dbc, &l) == -EINVAL);
	assert(bus_can_load(&cfg, NULL, &l) == -EINVAL);
	assert(bus_can_load(&cfg, dbc, NULL) == -EINVAL);
	/* what `railmon check --board cli/demo.ini` prints: 6 of 6 messages
	   cyclic, 125 frames/s, about 3% of the bus at 500 kbit/s (the default) */
	assert(bus_can_load(&cfg, dbc, &l) == 0);
	assert(l.messages == 6 && l.cyclic == 6 && near(l.frames_s, 125) && l.bitrate == 500000);
	assert(l.load > 0.025 && l.load < 0.035 && l.load < BUS_LOAD_WARN);
	/* the same traffic on a 10 kbit/s bus: 50 times the share, over */
	cfg.bitrate = 10000;
	assert(bus_can_load(&cfg, dbc, &l) == 0 && l.bitrate == 10000 && l.load > BUS_LOAD_WARN);
	printf("demo DBC: %.1f%% of 500 kbit/s, %.0f%% of 10 kbit/s\n", l.load * 2, l.load * 100);
	dbc_free(dbc);
}

static void test_mb_adu(void)
{
	/* TCP: MBAP 7 + FC, address, count (5); MBAP 7 + FC, byte count + data */
	assert(bus_mb_adu_bytes(false, BUS_MB_HOLDING, 10) == 12 + 9 + 20);
	/* RTU: unit, FC, address, count, CRC (8); unit, FC, byte count, data, CRC */
	assert(bus_mb_adu_bytes(true, BUS_MB_INPUT, 1) == 8 + 5 + 2);
	/* bits are packed: 10 coils in 2 bytes, 8 in 1 */
	assert(bus_mb_adu_bytes(true, BUS_MB_COIL, 10) == 8 + 5 + 2);
	assert(bus_mb_adu_bytes(true, BUS_MB_DISCRETE, 8) == 8 + 5 + 1);
}

static struct bus_mb_channel chan(uint32_t id, enum bus_mb_table table, uint16_t addr, uint32_t period)
{
	return (struct bus_mb_channel){ .id = id, .unit_id = 1, .table = table, .addr = addr, .type = BUS_MB_U16,
	                                .scale = 1, .period_ms = period };
}

static void test_mb_load(void)
{
	/* two registers next to each other (one request every 100 ms) and
	   one far away every 50 ms: 10 + 20 requests/s */
	struct bus_mb_channel ch[3] = { chan(1, BUS_MB_HOLDING, 0, 100), chan(2, BUS_MB_HOLDING, 1, 100),
		                        chan(3, BUS_MB_INPUT, 500, 50) };
	struct bus_mb_cfg tcp = { .channels = ch, .nchannels = 3 };
	struct bus_mb_cfg rtu = { .rtu = true, .baud = 19200, .parity = 'E', .data_bits = 8, .stop_bits = 1,
		                  .channels = ch, .nchannels = 3 };
	struct bus_mb_regmap *map;
	struct bus_mb_load l;
	double bytes;

	assert(bus_mb_regmap_new(ch, 3, 0, &map) == 0 && map->nreqs == 2);
	assert(bus_mb_load(NULL, map, &l) == -EINVAL && bus_mb_load(&tcp, NULL, &l) == -EINVAL);
	assert(bus_mb_load(&tcp, map, NULL) == -EINVAL);
	assert(bus_mb_load(&tcp, map, &l) == 0);
	assert(near(l.requests_s, 30) && l.line_load == 0);
	assert(near(l.bytes_s, 10 * bus_mb_adu_bytes(false, BUS_MB_HOLDING, 2) + 20 * bus_mb_adu_bytes(false, BUS_MB_INPUT, 1)));
	assert(bus_mb_load(&rtu, map, &l) == 0);
	bytes = 10 * bus_mb_adu_bytes(true, BUS_MB_HOLDING, 2) + 20 * bus_mb_adu_bytes(true, BUS_MB_INPUT, 1);
	assert(near(l.bytes_s, bytes));
	/* 11 bits a character (start, 8 data, even parity, stop), and 3.5
	   characters of silence before and after each of the 30 frames */
	assert(near(l.line_load, (bytes + 2 * 30 * 3.5) * 11 / 19200)); /* 39% */
	assert(l.line_load < BUS_LOAD_WARN);
	rtu.baud = 1200;
	assert(bus_mb_load(&rtu, map, &l) == 0 && l.line_load > BUS_LOAD_WARN);
	rtu.baud = 0;
	assert(bus_mb_load(&rtu, map, &l) == -EINVAL);
	bus_mb_regmap_free(map);
}

int main(void)
{
	test_can_frame();
	test_can_load();
	test_mb_adu();
	test_mb_load();
	puts("test-load: ok");
	return 0;
}
