/* SPDX-License-Identifier: MIT */
/*
 * test-candump: the candump line parser/formatter and the trace driver
 * (pacing, loop, interface filter, bad lines with file:line, EOF).
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bus/bus.h"
#include "bus/can-trace.h"
#include "trace/candump.h"
#include "record/format.h"
#include "railmon-config.h"

struct good {
	const char *line;
	const char *canon; /* what format writes back; NULL = same as line */
	int64_t t_ns;
	const char *ifname;
	uint32_t id;
	uint8_t flags;
	uint8_t len;
	const char *hex;
};

static const struct good goods[] = {
	{ "(1436509052.249713) can0 123#DEADBEEF\n", NULL, 1436509052249713000, "can0", 0x123, 0, 4, "DEADBEEF" },
	{ "(0.000001) vcan1 7FF#", "(0.000001) vcan1 7FF#\n", 1000, "vcan1", 0x7ff, 0, 0, "" },
	{ "(1.5) c 001#0102030405060708", "(1.500000) c 001#0102030405060708\n", 1500000000, "c", 1, 0, 8, "0102030405060708" },
	{ "(10.000000) can0 1FFFFFFF#00\r\n", "(10.000000) can0 1FFFFFFF#00\n", 10000000000, "can0", 0x1fffffff, ACQ_CAN_EXT, 1, "00" },
	{ "(10.000000) can0 00000123#11\n", NULL, 10000000000, "can0", 0x123, ACQ_CAN_EXT, 1, "11" },
	{ "(2.000000) can0 123#R\n", NULL, 2000000000, "can0", 0x123, ACQ_CAN_RTR, 0, "" },
	{ "(2.000000) can0 123#r3\n", "(2.000000) can0 123#R3\n", 2000000000, "can0", 0x123, ACQ_CAN_RTR, 3, "" },
	{ "(2.000000) can0 12345678#R8\n", NULL, 2000000000, "can0", 0x12345678, ACQ_CAN_RTR | ACQ_CAN_EXT, 8, "" },
	{ "(3.000000) can0 20000004#0004000000000000\n", NULL, 3000000000, "can0", 4, ACQ_CAN_ERR, 8, "0004000000000000" },
	{ "(4.000000) can0 123##5112233445566778899AABBCC\n", NULL, 4000000000, "can0", 0x123,
	  ACQ_CAN_FD | ACQ_CAN_BRS, 12, "112233445566778899AABBCC" },
	{ "(4.000000) can0 123##0", "(4.000000) can0 123##4\n", 4000000000, "can0", 0x123, ACQ_CAN_FD, 0, "" },
	{ "(4.000000) can0 1ABCDEF0##7" "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
	  "202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F\n", NULL, 4000000000, "can0", 0x1abcdef0,
	  ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_ESI | ACQ_CAN_EXT, 64,
	  "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
	  "202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F" },
	{ "(5.000000) can0 123#11.22.33", "(5.000000) can0 123#112233\n", 5000000000, "can0", 0x123, 0, 3, "112233" },
	{ "(5.000000) can0 123#1122334455667788_C", "(5.000000) can0 123#1122334455667788\n", 5000000000, "can0",
	  0x123, 0, 8, "1122334455667788" },
	{ "(6.000000) can0 123#AA T\n", NULL, 6000000000, "can0", 0x123, ACQ_CAN_TX, 1, "AA" },
	{ "(6.000000) can0 123#AA R\n", "(6.000000) can0 123#AA\n", 6000000000, "can0", 0x123, 0, 1, "AA" },
	{ "(9223372035.999999) can0 123#aa", "(9223372035.999999) can0 123#AA\n", 9223372035999999000, "can0",
	  0x123, 0, 1, "AA" },
	/* the stamp candump writes, 10 + 6 digits (candump.c reads it with
	   8-byte loads): each digit in its place */
	{ "(1764748800.000371) can0 100#2291D8CDC310411E\n", NULL, 1764748800000371000, "can0", 0x100, 0, 8,
	  "2291D8CDC310411E" },
	{ "(0123456789.987654) c 123#", "(123456789.987654) c 123#\n", 123456789987654000, "c", 0x123, 0, 0, "" },
	/* hex pairs, then a separator: the pair loop hands over mid-payload */
	{ "(5.000000) can0 123#1122.3344", "(5.000000) can0 123#11223344\n", 5000000000, "can0", 0x123, 0, 4,
	  "11223344" },
	{ "(5.000000) can0 123#..aabb", "(5.000000) can0 123#AABB\n", 5000000000, "can0", 0x123, 0, 2, "AABB" },
};

static const char *const bads[] = {
	"",
	"\n",
	"garbage",
	"1436509052.249713 can0 123#00",
	"(1436509052.249713 can0 123#00",
	"(.5) can0 123#00",
	"(5.) can0 123#00",
	"(4.00001615) can0 123#00",
	"(4.0000001) can0 123#00",
	"(12345678901.0) can0 123#00",
	"(1.0)can0 123#00",
	"(1.0) can0",
	"(1.0) can0 123",
	"(1.0) can0 123#0",
	"(1.0) can0 123#0G",
	"(1.0) can0 800#00",
	"(1.0) can0 12#00",
	"(1.0) can0 1234#00",
	"(1.0) can0 123456789#00",
	"(1.0) can0 80000000#00",
	"(1.0) can0 40000000#00",
	"(1.0) can0 123#001122334455667788",
	"(1.0) can0 123#R9",
	"(1.0) can0 123#RX",
	"(1.0) can0 123##",
	"(1.0) can0 123##G00",
	"(1.0) can0 123##1000102030405060708",
	"(1.0) can0 123#0011_C",
	"(1.0) can0 123#1122334455667788_3",
	"(1.0) can0 20000004#R",
	"(1.0) can0 20000004##100",
	"(1.0) can0 123#00 X",
	"(1.0) can0 123#00 T trailing",
	"(1.0)  123#00",
	/* 10 + 6 digit stamps that are not quite one */
	"(9223372036.000000) can0 123#00",
	"(176474880a.000371) can0 123#00",
	"(1764748800,000371) can0 123#00",
	"(1764748800.00037a) can0 123#00",
	"(1764748800.000371] can0 123#00",
	"(1764748800.0003711) can0 123#00",
	"(1764748800.000371)\tcan0 123#00",
	"(1764748800.000371)",
	"(1764748800.000371) can0 123#112",
	"(1764748800.000371) can0 123#11.2",
	"(1764748800.000371) can0 123#11223344556677889",
};

static void hex2bin(const char *hex, uint8_t *out)
{
	for (size_t i = 0; hex[2 * i]; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

static void test_parse_format(void)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const struct good *g = &goods[i];
		struct acq_item it, it2;
		char ifname[16], buf[TRACE_CANDUMP_LINE_MAX];
		uint8_t data[64] = { 0 };
		int n;

		struct acq_item want = { .kind = ACQ_ITEM_CAN, .t_ns = g->t_ns };

		/* every byte of the item is written: what was in it before
		   never shows (a remote frame's length brings no bytes) */
		memset(&it, 0xa5, sizeof(it));
		if (trace_candump_parse(g->line, strlen(g->line), &it, ifname, sizeof(ifname)) != 0) {
			fprintf(stderr, "rejected good line %zu: %s\n", i, g->line);
			assert(0);
		}
		want.can.id = g->id;
		want.can.flags = g->flags;
		want.can.len = g->len;
		if (!(g->flags & ACQ_CAN_RTR))
			hex2bin(g->hex, want.can.data);
		if (memcmp(&it, &want, sizeof(it)) != 0) {
			fprintf(stderr, "good line %zu parsed to other bytes: %s\n", i, g->line);
			assert(0);
		}
		assert(it.kind == ACQ_ITEM_CAN && it.t_ns == g->t_ns && strcmp(ifname, g->ifname) == 0);
		assert(it.can.id == g->id && it.can.flags == g->flags && it.can.len == g->len);
		hex2bin(g->hex, data);
		assert((g->flags & ACQ_CAN_RTR) || memcmp(it.can.data, data, it.can.len) == 0);
		n = trace_candump_format(&it, ifname, buf, sizeof(buf));
		assert(n > 0 && (size_t)n == strlen(buf));
		if (strcmp(buf, g->canon ? g->canon : g->line) != 0) {
			fprintf(stderr, "format mismatch: '%s' vs '%s'\n", buf, g->canon ? g->canon : g->line);
			assert(0);
		}
		/* the round trip gives the identical frame */
		assert(trace_candump_parse(buf, (size_t)n, &it2, NULL, 0) == 0);
		assert(memcmp(&it, &it2, sizeof(it)) == 0);
		/* a buffer one byte short is refused, never truncated */
		assert(trace_candump_format(&it, ifname, buf, (size_t)n) == -ENOBUFS);
		/* len bounds the line: a cut line is either valid shorter or malformed, never read past */
		(void)trace_candump_parse(g->line, strlen(g->line) / 2, &it2, NULL, 0);
	}
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct acq_item it = { .seq = 77 };
		char ifname[16] = "keep";

		if (trace_candump_parse(bads[i], strlen(bads[i]), &it, ifname, sizeof(ifname)) != -EBADMSG) {
			fprintf(stderr, "accepted bad line '%s'\n", bads[i]);
			assert(0);
		}
		assert(it.seq == 77 && strcmp(ifname, "keep") == 0); /* nothing written */
	}
}

/* The driver's variant: len bytes exactly, a NUL anywhere is garbage. */
static void test_parse_bytes(void)
{
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		const char *line = goods[i].line;
		size_t n = strlen(line);
		struct acq_item a, b;
		char ia[16], ib[16], buf[TRACE_CANDUMP_LINE_MAX];

		assert(trace_candump_parse(line, n, &a, ia, sizeof(ia)) == 0);
		memset(&b, 0x5a, sizeof(b));
		assert(trace_candump_parse_bytes(line, n, &b, ib, sizeof(ib)) == 0);
		assert(memcmp(&a, &b, sizeof(a)) == 0 && strcmp(ia, ib) == 0);
		for (size_t k = 0; k < n; k++) {
			struct acq_item c = { .seq = 77 };
			char ic[16] = "keep";

			memcpy(buf, line, n);
			buf[k] = '\0';
			assert(trace_candump_parse_bytes(buf, n, &c, ic, sizeof(ic)) == -EBADMSG);
			assert(c.seq == 77 && strcmp(ic, "keep") == 0);
		}
	}
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct acq_item it;

		assert(trace_candump_parse_bytes(bads[i], strlen(bads[i]), &it, NULL, 0) == -EBADMSG);
	}
	assert(trace_candump_parse_bytes(NULL, 1, &(struct acq_item){ 0 }, NULL, 0) == -EINVAL);
}

static void test_bad_args(void)
{
	struct acq_item it = { .kind = ACQ_ITEM_CAN, .can = { .id = 1, .len = 1 } };
	char buf[TRACE_CANDUMP_LINE_MAX], small[4];
	const char *l = "(1.0) can0 123#00";

	assert(trace_candump_parse(NULL, 5, &it, NULL, 0) == -EINVAL);
	assert(trace_candump_parse(l, strlen(l), NULL, NULL, 0) == -EINVAL);
	assert(trace_candump_parse(l, strlen(l), &it, buf, 0) == -EINVAL);
	/* interface name longer than the caller's buffer */
	assert(trace_candump_parse(l, strlen(l), &it, small, sizeof(small)) == -EBADMSG);
	assert(trace_candump_format(NULL, "can0", buf, sizeof(buf)) == -EINVAL);
	assert(trace_candump_format(&it, NULL, buf, sizeof(buf)) == -EINVAL);
	assert(trace_candump_format(&it, "", buf, sizeof(buf)) == -EINVAL);
	assert(trace_candump_format(&it, "a b", buf, sizeof(buf)) == -EINVAL);
	assert(trace_candump_format(&it, "can0", NULL, sizeof(buf)) == -EINVAL);
	it.can.len = 9;
	assert(trace_candump_format(&it, "can0", buf, sizeof(buf)) == -EINVAL);
	it.can.len = 1;
	it.can.id = 0x800;
	assert(trace_candump_format(&it, "can0", buf, sizeof(buf)) == -EINVAL);
	it.can.id = 1;
	it.kind = ACQ_ITEM_SAMPLE;
	assert(trace_candump_format(&it, "can0", buf, sizeof(buf)) == -EINVAL);
	it.kind = ACQ_ITEM_CAN;
	it.can.flags = ACQ_CAN_FD;
	it.can.len = 9;
	assert(trace_candump_format(&it, "can0", buf, sizeof(buf)) == -EINVAL);
	it.can.len = 1;
	it.t_ns = -1;
	assert(trace_candump_format(&it, "can0", buf, sizeof(buf)) == -EINVAL);
	assert(bus_can_trace_first_bad(NULL, buf, sizeof(buf)) == -EINVAL);
	assert(bus_can_trace_skipped(NULL, buf, sizeof(buf)) == -EINVAL);
}

static char tmpdir[] = "/tmp/test-candump-XXXXXX";

static const char *write_tmp(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert(f);
	assert(fputs(text, f) >= 0);
	assert(fclose(f) == 0);
	return path;
}

static bus_dev_t *open_trace(const char *path, const char *ifname, double speed, bool loop)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN, .index = 3 };
	bus_dev_t *dev = NULL;

	cfg.can.driver = BUS_CAN_TRACE;
	cfg.can.trace_speed = speed;
	cfg.can.trace_loop = loop;
	cfg.can.listen_only = true;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", path);
	snprintf(cfg.can.ifname, sizeof(cfg.can.ifname), "%s", ifname);
	assert(bus_dev_new(&cfg, &dev) == 0 && dev);
	return dev;
}

static const char trace_text[] =
	"(100.000000) can0 100#01\n"
	"(100.010000) can1 200#02\n"
	"this is not a frame\n"
	"\n"
	"(100.020000) can0 18FF0121#0304\n"
	"(100.030000) can0 123##1AABB\n"
	"(100.040000) can0 20000040#0000000000000000\n"
	"(100.050000) can0 7FF#R2\n"
	"(100.060000) can0 7FF#XY\n"
	"(100.070000) can0 100#05"; /* no final newline */

static void test_trace_fast(void)
{
	const char *path = write_tmp("t.log", trace_text);
	struct acq_item it[32];
	struct bus_stats st;
	char where[600], expect[600];
	bus_dev_t *dev = open_trace(path, "", 0, false);
	int n;

	assert(bus_can_trace_first_bad(dev, where, sizeof(where)) == -ENOENT);
	assert(bus_can_trace_first_bad(dev, NULL, 10) == -EINVAL);
	assert(bus_can_trace_first_bad(dev, where, 0) == -EINVAL);
	/* a candump log has no BLF objects to skip */
	assert(bus_can_trace_skipped(dev, where, sizeof(where)) == -ENOENT);
	assert(bus_can_trace_skipped(dev, NULL, 10) == -EINVAL);
	assert(bus_can_trace_skipped(dev, where, 0) == -EINVAL);
	assert(bus_dev_recv(dev, NULL, 3, 0) == -EINVAL);
	assert(bus_dev_recv(dev, it, 0, 0) == -EINVAL);
	assert(bus_dev_send(dev, &it[0]) == -EOPNOTSUPP); /* a trace is read-only */
	assert(bus_dev_check(dev, NULL, 0) == 0);
	assert(!bus_dev_has_check(dev) && !bus_dev_has_check(NULL)); /* nothing to poll: no monitor */
	/* deliver in small chunks: items must not depend on max */
	n = bus_dev_recv(dev, it, 3, 0);
	assert(n == 3);
	n += bus_dev_recv(dev, it + 3, 29, 0);
	assert(n == 9);
	assert(bus_dev_recv(dev, it, 32, 0) == -ENODATA);
	assert(bus_dev_recv(dev, it, 32, 0) == -ENODATA);
	assert(it[0].kind == ACQ_ITEM_CAN && it[0].t_ns == 100000000000 && it[0].bus == 3 && it[0].can.id == 0x100);
	assert(it[1].kind == ACQ_ITEM_CAN && it[1].can.id == 0x200);
	assert(it[2].kind == ACQ_ITEM_EVENT && it[2].event.code == ACQ_EV_CAN_BAD_LINE);
	assert(it[2].event.detail == 3 && it[2].event.arg == 1 && it[2].bus == 3);
	assert(it[2].t_ns == it[1].t_ns); /* deterministic at speed 0 */
	assert(it[3].can.flags == ACQ_CAN_EXT && it[3].can.id == 0x18ff0121 && it[3].can.len == 2);
	assert(it[4].can.flags == (ACQ_CAN_FD | ACQ_CAN_BRS) && it[4].can.len == 2);
	assert(it[5].can.flags == ACQ_CAN_ERR && it[5].can.id == 0x40);
	assert(it[6].can.flags == ACQ_CAN_RTR && it[6].can.len == 2);
	assert(it[7].kind == ACQ_ITEM_EVENT && it[7].event.detail == 9 && it[7].event.arg == 2);
	assert(it[8].can.id == 0x100 && it[8].can.data[0] == 5 && it[8].t_ns == 100070000000);
	assert(bus_dev_stats(dev, &st) == 0);
	assert(st.rx_frames == 7 && st.bad_input == 2 && st.rx_errors == 1);
	assert(bus_can_trace_first_bad(dev, where, sizeof(where)) == 0);
	snprintf(expect, sizeof(expect), "%s:3: malformed candump line", path);
	assert(strcmp(where, expect) == 0);
	bus_dev_free(dev);

	/* interface filter: can0's damaged line 9 is can0's to report, the
	   line naming no interface (3) is everyone's */
	dev = open_trace(path, "can1", 0, false);
	n = bus_dev_recv(dev, it, 32, 100);
	assert(n == 2 && it[0].can.id == 0x200 && it[1].kind == ACQ_ITEM_EVENT && it[1].event.detail == 3);
	assert(bus_dev_recv(dev, it, 32, 100) == -ENODATA);
	bus_dev_free(dev);
}

/* Board-file filters with CAN_RAW semantics. */
static void test_trace_filters(void)
{
	const char *path = write_tmp("filt.log",
	                             "(1.000000) c 100#01\n(1.000001) c 101#02\n(1.000002) c 00000100#03\n"
	                             "(1.000003) c 100#R\n(1.000004) c 20000004#0000000000000000\n"
	                             "(1.000005) c 1FFFFFFF#04\n(1.000006) c 7FF#05\n");
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	struct acq_item it[16];
	struct bus_stats st;
	bus_dev_t *dev = NULL;

	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", path);
	/* standard data frame 0x100 exactly (EFF and RTR must be clear) */
	cfg.can.filters[0] = (struct bus_can_filter){ 0x100, 0xc00007ff };
	/* any extended frame with the top id bits set */
	cfg.can.filters[1] = (struct bus_can_filter){ 0x80000000u | 0x1f000000, 0x80000000u | 0x1f000000 };
	cfg.can.nfilters = 2;
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(bus_dev_recv(dev, it, 16, 0) == 3);
	assert(it[0].can.id == 0x100 && it[0].can.flags == 0);
	assert(it[1].can.flags == ACQ_CAN_ERR); /* error frames always pass */
	assert(it[2].can.id == 0x1fffffff);
	assert(bus_dev_stats(dev, &st) == 0 && st.rx_frames == 3);
	bus_dev_free(dev);

	/* an inverted filter: everything but standard 0x100..0x1ff */
	cfg.can.filters[0] = (struct bus_can_filter){ 0x20000000u | 0x100, 0x80000700 };
	cfg.can.nfilters = 1;
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(bus_dev_recv(dev, it, 16, 0) == 4);
	assert(it[0].can.id == 0x100 && (it[0].can.flags & ACQ_CAN_EXT));
	assert(it[1].can.flags == ACQ_CAN_ERR && it[2].can.id == 0x1fffffff && it[3].can.id == 0x7ff);
	bus_dev_free(dev);
}

/* The interface filter takes the whole name: neither a longer nor a
   shorter one that shares its start. */
static void test_trace_ifname_exact(void)
{
	const char *path = write_tmp("names.log",
	                             "(1.000000) can10 100#01\n(1.000001) can 100#02\n(1.000002) can1 100#03\n"
	                             "(1.000003) cAn1 100#04\n(1.000004) can1 100#05\n(1.000005) can2 100#06\n");
	bus_dev_t *dev = open_trace(path, "can1", 0, false);
	struct acq_item it[8];

	assert(bus_dev_recv(dev, it, 8, 0) == 2);
	assert(it[0].can.data[0] == 3 && it[1].can.data[0] == 5);
	bus_dev_free(dev);
}

/* Another bus's lines are passed over unparsed: their damage is theirs
   (and the survey's); a line whose name is not where the parser looks is
   parsed, and judged by this bus. */
static void test_other_iface(void)
{
	static const struct {
		const char *line;
		bool other;
	} cases[] = {
		{ "(1.000000) can0 100#01", true },
		{ "(1.000000) can1 100#01", false },
		{ "(1.000000) can1 zz#damaged", false },    /* its own: parsed, bad */
		{ "(1.000000) can10 100#01", true },
		{ "(1.000000) can 100#01", true },
		{ "(1.000000) cAn1 100#01", true },
		{ "(1.000000) can2 100#zz", true },          /* damaged, not ours */
		{ "(x) can2 100#01", true },                 /* a damaged stamp, named can2 */
		{ "(1.000000)  can2 100#01", false },        /* no name where the parser looks */
		{ "(1.000000) can2", false },                /* no end to the name */
		{ "(1.000000)can2 100#01", false },
		{ "1.000000) can2 100#01", false },
		{ "(12345678901.1234567) can2 100#01", false }, /* ')' past the longest stamp */
		{ "", false },
		{ "(1.0) \x7f 1#", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert(trace_candump_other_iface(cases[i].line, strlen(cases[i].line), "can1") == cases[i].other);

	/* through the driver: can1 reads its own 2 frames and its own damaged
	   line; can2's damaged line is not can1's */
	const char *path = write_tmp("others.log", "(1.000000) can2 100#zz\n(1.000001) can1 100#01\n"
	                                           "(1.000002) can1 1zz#02\n(1.000003) can2 100#03\n"
	                                           "(1.000004) can1 100#04\n");
	bus_dev_t *dev = open_trace(path, "can1", 0, false);
	struct acq_item it[8];

	assert(bus_dev_recv(dev, it, 8, 0) == 3);
	assert(it[0].kind == ACQ_ITEM_CAN && it[0].can.data[0] == 1);
	assert(it[1].kind == ACQ_ITEM_EVENT && it[1].event.code == ACQ_EV_CAN_BAD_LINE && it[1].event.detail == 3);
	assert(it[2].kind == ACQ_ITEM_CAN && it[2].can.data[0] == 4);
	bus_dev_free(dev);
	puts("other interfaces: passed over unparsed; a name not where the parser looks: parsed");
}

static void test_trace_loop(void)
{
	const char *path = write_tmp("loop.log", "(1.000000) c 001#01\n(1.100000) c 002#02\n(1.200000) c 003#03\n");
	struct acq_item it[10];
	bus_dev_t *dev = open_trace(path, "", 0, true);
	int64_t prev = 0;

	assert(bus_dev_recv(dev, it, 10, 0) == 10);
	for (int i = 0; i < 10; i++) {
		assert(it[i].can.id == (uint32_t)(i % 3 + 1));
		assert(it[i].t_ns > prev);
		prev = it[i].t_ns;
	}
	/* second pass = first pass shifted by span + mean gap (0.3 s) */
	assert(it[3].t_ns == 1300000000 && it[6].t_ns == 1600000000 && it[9].t_ns == 1900000000);
	bus_dev_free(dev);

	/* a looping file without any frame ends instead of spinning */
	path = write_tmp("empty.log", "(1.000000) c 001#01\njunk\n");
	dev = open_trace(path, "nomatch", 0, true);
	assert(bus_dev_recv(dev, it, 10, 0) == 1 && it[0].kind == ACQ_ITEM_EVENT);
	assert(bus_dev_recv(dev, it, 10, 0) == -ENODATA);
	bus_dev_free(dev);
}

static int64_t mono_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void test_trace_paced(void)
{
	/* 5 frames 100 ms apart at speed 4: 25 ms of trace time between frames */
	const char *path = write_tmp("paced.log",
	                             "(50.000000) c 001#01\n(50.100000) c 001#02\n(50.200000) c 001#03\n"
	                             "(50.300000) c 001#04\n(50.400000) c 001#05\n(60.000000) c 001#06\n");
	struct acq_item it[8];
	bus_dev_t *dev = open_trace(path, "", 4.0, false);
	int64_t t0 = mono_ns(CLOCK_MONOTONIC), rt0 = mono_ns(CLOCK_REALTIME);
	int got = 0;

	while (got < 5) {
		int n = bus_dev_recv(dev, it + got, 5 - (size_t)got, 1000);

		assert(n > 0);
		got += n;
	}
	/* clock_nanosleep(ABSTIME) never wakes early: 4 gaps of 25 ms at least */
	assert(mono_ns(CLOCK_MONOTONIC) - t0 >= 100000000);
	for (int i = 0; i < 5; i++) {
		assert(it[i].can.data[0] == i + 1);
		assert(it[i].t_ns >= rt0); /* restamped with the time of delivery */
		assert(i == 0 || it[i].t_ns >= it[i - 1].t_ns);
	}
	/* the last frame is due 100 ms after the first was fetched, which was after rt0 */
	assert(it[4].t_ns >= rt0 + 100000000);
	/* the 6th frame is 2.4 s away: a 20 ms timeout returns 0, and the frame stays */
	assert(bus_dev_recv(dev, it, 8, 20) == 0);
	assert(bus_dev_recv(dev, it, 8, 0) == 0);
	bus_dev_free(dev);

	/* a tiny speed puts the 2nd frame centuries away: no overflow, just a timeout */
	dev = open_trace(path, "", 1e-12, false);
	assert(bus_dev_recv(dev, it, 8, 0) == 1);
	assert(bus_dev_recv(dev, it, 8, 5) == 0);
	bus_dev_free(dev);
}

/* A NUL byte inside a line of a file is garbage, not the end of the line. */
static void test_trace_nul(void)
{
	static const char text[] = "(1.000000) c 001#01\n(1.000001) c 002#02\0junk\n(1.000002) c 003#03\n";
	char path[512];
	struct acq_item it[4];
	bus_dev_t *dev;
	FILE *f;

	snprintf(path, sizeof(path), "%s/nul.log", tmpdir);
	f = fopen(path, "w");
	assert(f && fwrite(text, 1, sizeof(text) - 1, f) == sizeof(text) - 1 && fclose(f) == 0);
	dev = open_trace(path, "", 0, false);
	assert(bus_dev_recv(dev, it, 4, 0) == 3);
	assert(it[0].can.id == 1 && it[1].kind == ACQ_ITEM_EVENT && it[1].event.detail == 2 && it[2].can.id == 3);
	bus_dev_free(dev);
}

static void test_trace_overlong(void)
{
	size_t big = 200 * 1024;
	char *text = malloc(big + 64);
	struct acq_item it[4];
	struct bus_stats st;
	bus_dev_t *dev;
	const char *path;

	assert(text);
	strcpy(text, "(1.000000) c 001#01\n");
	memset(text + strlen(text), 'x', big);
	strcpy(text + 20 + big, "\n(2.000000) c 002#02\n");
	path = write_tmp("long.log", text);
	free(text);
	dev = open_trace(path, "", 0, false);
	assert(bus_dev_recv(dev, it, 4, 0) == 3);
	assert(it[0].can.id == 1 && it[1].kind == ACQ_ITEM_EVENT && it[1].event.detail == 2);
	assert(it[2].can.id == 2);
	assert(bus_dev_stats(dev, &st) == 0 && st.bad_input == 1 && st.rx_frames == 2);
	bus_dev_free(dev);
}

/* What the driver reads from a file: frames, malformed lines, the first. */
static struct trace_candump_tally driver_tally(const char *path)
{
	struct trace_candump_tally t = { 0 };
	struct acq_item it[64];
	bus_dev_t *dev = open_trace(path, "", 0, false);
	int n;

	while ((n = bus_dev_recv(dev, it, 64, 0)) > 0)
		for (int i = 0; i < n; i++) {
			t.frames += it[i].kind == ACQ_ITEM_CAN;
			if (it[i].kind == ACQ_ITEM_EVENT && !t.bad++)
				t.first_bad = it[i].event.detail;
		}
	assert(n == -ENODATA);
	bus_dev_free(dev);
	return t;
}

/* buf[0..len) tallied in blocks of block bytes, a cut line carried to the
   next block as the survey carries it */
static struct trace_candump_tally tally_blocks(const char *buf, size_t len, size_t block)
{
	struct trace_candump_tally t = { 0 };
	char *b = malloc(block);
	size_t keep = 0, at = 0;

	assert(b && block > BUS_CAN_TRACE_LINE_MAX);
	for (;;) {
		size_t n = len - at < block - keep ? len - at : block - keep;
		long used;

		memcpy(b + keep, buf + at, n);
		at += n;
		used = trace_candump_tally(b, keep + n, at == len, BUS_CAN_TRACE_LINE_MAX, &t);
		assert(used >= 0 && (size_t)used <= keep + n);
		if (at == len) {
			assert((size_t)used == keep + n);
			break;
		}
		keep = keep + n - (size_t)used;
		memmove(b, b + used, keep);
	}
	free(b);
	return t;
}

/*
 * The survey's tally against the driver on the same bytes: frames, blank
 * and CRLF lines, damage, a NUL, lines of the driver's buffer size and
 * one byte less, one far longer, no final newline.  Cut at every line
 * start into two parts (the survey's threads) and read in several block
 * sizes, the parts add up to the driver's counts and first damaged line.
 */
static void test_tally(void)
{
	size_t cap = 400 * 1024, len = 0, starts[64], nstarts = 0;
	char *text = malloc(cap);
	const char *path;
	struct trace_candump_tally d, w;
	FILE *f;

#define ADD(s) (starts[nstarts++] = len, memcpy(text + len, s, sizeof(s) - 1), len += sizeof(s) - 1)
#define ADD_LONG(n) (starts[nstarts++] = len, memset(text + len, 'x', n), len += n, text[len++] = '\n')
	assert(text);
	ADD("(1.000000) can0 100#01\n");
	ADD("\n");
	ADD("  \r\n");
	ADD("(1.000001) can1 18FF0121#0102\r\n");
	ADD("garbage\n");
	ADD_LONG(BUS_CAN_TRACE_LINE_MAX - 1);
	ADD("(1.000002) can0 123##1AABB\n");
	ADD_LONG(BUS_CAN_TRACE_LINE_MAX);
	ADD("(1.000003) can0 7FF#R2\n");
	ADD("(1.000004) c\0n0 100#01\n");
	ADD_LONG(3 * BUS_CAN_TRACE_LINE_MAX + 7);
	ADD("(1.000005) can0 100#0102 T\n");
	ADD("(1.000006) can0 100#XY\n");
	ADD("(1.000007) can0 100#05");
#undef ADD
#undef ADD_LONG
	assert(len < cap);
	path = write_tmp("tally.log", "");
	f = fopen(path, "w");
	assert(f && fwrite(text, 1, len, f) == len && fclose(f) == 0);
	d = driver_tally(path);
	/* written out by hand: 6 frames; garbage (line 5), the two lines of
	   the buffer's size or one less (6, 8: too long for a frame), NUL
	   (10), the far longer one (11), XY (13) */
	assert(d.frames == 6 && d.bad == 6 && d.first_bad == 5);
	for (size_t block = BUS_CAN_TRACE_LINE_MAX + 1; block < 2 * cap; block *= 3) {
		w = tally_blocks(text, len, block);
		assert(w.frames == d.frames && w.bad == d.bad && w.first_bad == d.first_bad && w.lines == 14);
	}
	for (size_t c = 0; c < nstarts; c++) {
		struct trace_candump_tally a = tally_blocks(text, starts[c], 1024 * 1024);
		struct trace_candump_tally b = tally_blocks(text + starts[c], len - starts[c], 1024 * 1024);
		uint64_t first = a.bad ? a.first_bad : a.lines + b.first_bad;

		assert(a.lines == c && a.lines + b.lines == 14);
		assert(a.frames + b.frames == d.frames && a.bad + b.bad == d.bad && first == d.first_bad);
	}
	w = (struct trace_candump_tally){ 0 };
	assert(trace_candump_tally(NULL, 1, true, 10, &w) == -EINVAL);
	assert(trace_candump_tally(text, 1, true, 10, NULL) == -EINVAL);
	assert(trace_candump_tally(text, 1, true, 0, &w) == -EINVAL);
	assert(trace_candump_blank("", 0) && trace_candump_blank(" \t\r", 3));
	assert(!trace_candump_blank(" x", 2) && !trace_candump_blank(NULL, 3));
	/* a cut line is left to the caller, not counted */
	assert(trace_candump_tally("(1.000000) c 1", 14, false, 64, &w) == 0 && w.lines == 0);
	free(text);
}

static void test_trace_open_errors(void)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	bus_dev_t *dev = NULL;

	cfg.can.driver = BUS_CAN_TRACE;
	assert(bus_dev_new(&cfg, &dev) == -EINVAL); /* no file */
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s/does-not-exist", tmpdir);
	assert(bus_dev_new(&cfg, &dev) == -ENOENT);
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", write_tmp("x.log", ""));
	cfg.can.trace_speed = -1;
	assert(bus_dev_new(&cfg, &dev) == -EINVAL);
	assert(dev == NULL);
	/* a file that is no trace in any format is refused, not read as garbage lines */
	cfg.can.trace_speed = 0;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", write_tmp("x.log", "junk\nmore junk\n"));
	assert(bus_dev_new(&cfg, &dev) == -EMEDIUMTYPE && dev == NULL);
}

/* The committed demo trace must be clean and in time order. */
static void test_demo_trace(void)
{
	struct acq_item it[256];
	struct bus_stats st;
	bus_dev_t *dev = open_trace(RAILMON_SOURCE_DIR "/cli/demo/train.log", "can0", 0, false);
	int64_t prev = 0, first = 0;
	size_t total = 0;
	int n;

	while ((n = bus_dev_recv(dev, it, 256, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			assert(it[i].kind == ACQ_ITEM_CAN && it[i].t_ns >= prev);
			prev = it[i].t_ns;
			if (!first)
				first = prev;
		}
		total += (size_t)n;
	}
	assert(n == -ENODATA);
	assert(bus_dev_stats(dev, &st) == 0 && st.bad_input == 0 && st.rx_frames == total);
	assert(total > 5000 && prev - first > 59000000000LL);
	bus_dev_free(dev);
}

static void cleanup_tmp(void)
{
	static const char *const names[] = { "t.log", "loop.log", "empty.log", "paced.log", "long.log", "x.log", "filt.log", "nul.log",
	                                       "names.log", "tally.log", "others.log" };
	char path[512];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	assert(rmdir(tmpdir) == 0);
}

/*
 * What candump prints on the terminal, each shape as can-utils' candump.c
 * and lib.c (snprintf_long_canframe) lay it out for interface "can0":
 * " " + stamp + " " + "%*s" name [+ "  TX|RX" + " B|- E|-"] + "  " +
 * the frame (id at column 0, or 5 when indented; "[n]" at id + 6, FD
 * "[nn]" at id + 5; data " %02X" from id + 10).
 */
struct screen {
	const char *line;
	int64_t t_ns;
	uint32_t id;
	uint8_t flags;
	uint8_t len;
	const char *hex;
};

static const struct screen screens[] = {
	/* default: no stamp */
	{ "  can0  100   [8]  00 00 FA FF 04 00 00 01", 0, 0x100, 0, 8, "0000FAFF04000001" },
	/* -ta, -td/-tz, -N, -tA (local time: TZ=UTC in this test) */
	{ " (1436509052.249713)  can0  123   [1]  0A", 1436509052249713000, 0x123, 0, 1, "0A" },
	{ " (000.000123)  can0  123   [0] ", 123000, 0x123, 0, 0, "" },
	{ " (1436509052.249713123)  can0  123   [1]  0A", 1436509052249713123, 0x123, 0, 1, "0A" },
	{ " (2015-07-10 06:17:32.249713)  can0  123   [1]  0A", 1436509052249713000, 0x123, 0, 1, "0A" },
	/* 29-bit id, then an 11-bit one indented as candump does after it */
	{ "  can0  12345678   [2]  11 22", 0, 0x12345678, ACQ_CAN_EXT, 2, "1122" },
	{ "  can0       123   [2]  11 22", 0, 0x123, 0, 2, "1122" },
	/* -x: direction, and an FD frame's BRS and ESI */
	{ "  can0  TX - -  123   [1]  0A", 0, 0x123, ACQ_CAN_TX, 1, "0A" },
	{ "  can0  RX B E  123  [12]  00 01 02 03 04 05 06 07 08 09 0A 0B", 0, 0x123,
	  ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_ESI, 12, "000102030405060708090A0B" },
	/* FD without -x: no BRS/ESI said; [08] is FD, [8] classic */
	{ "  can0  123  [08]  00 01 02 03 04 05 06 07", 0, 0x123, ACQ_CAN_FD, 8, "0001020304050607" },
	{ "  can0  1ABCDEF0  [64]  00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F 10 11 12 13 14 15 16 17 18 19 1A 1B"
	  " 1C 1D 1E 1F 20 21 22 23 24 25 26 27 28 29 2A 2B 2C 2D 2E 2F 30 31 32 33 34 35 36 37 38 39 3A 3B 3C 3D 3E 3F",
	  0, 0x1abcdef0, ACQ_CAN_FD | ACQ_CAN_EXT, 64,
	  "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
	  "202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F" },
	/* remote */
	{ "  can0  123   [3]  remote request", 0, 0x123, ACQ_CAN_RTR, 3, "" },
	/* -a, -8, -i, -S */
	{ "  can0  123   [2]  41 42                     'AB'", 0, 0x123, 0, 2, "4142" },
	{ "  can0  123   [1]  2E                        '.'", 0, 0x123, 0, 1, "2E" },
	{ "  can0  123   {F}  00 01 02 03 04 05 06 07", 0, 0x123, 0, 8, "0001020304050607" },
	{ "  can0  123   [2]  00001010 11111111", 0, 0x123, 0, 2, "0AFF" },
	{ "  can0  123   [3]  0C`0B`0A", 0, 0x123, 0, 3, "0A0B0C" },
	/* an error frame (-e's description follows on tab lines) */
	{ "  can0  20000080   [8]  00 00 00 00 00 00 00 00   ERRORFRAME", 0, 0x80, ACQ_CAN_ERR, 8,
	  "0000000000000000" },
};

static const char *const screen_bads[] = {
	"  can0  123   [2]  11",            /* fewer bytes than [2] */
	"  can0  123   [9]  11",            /* classic has at most 8 */
	"  can0  123  [13]  11",            /* no FD length */
	"  can0  800   [0] ",               /* 11-bit id above 0x7ff */
	"  can0  1234   [0] ",              /* 4 digits: neither */
	"  can0  123   [1]  11 trailing",
	"  can0  123  [08]  remote request", /* FD has no remote frames */
	"  can0  123   [1]  1G",
	" (12.3  can0  123   [0] ",
	"  can0  123   [2]  11`22`33",      /* 3 bytes for [2] */
	"hello",
};

static void test_screen(void)
{
	for (size_t i = 0; i < sizeof(screens) / sizeof(screens[0]); i++) {
		const struct screen *g = &screens[i];
		struct acq_item it;
		uint8_t want[64] = { 0 };
		char ifname[16];

		if (trace_candump_parse_screen(g->line, strlen(g->line), &it, ifname, sizeof(ifname)) != 0) {
			fprintf(stderr, "screen line refused: '%s'\n", g->line);
			abort();
		}
		hex2bin(g->hex, want);
		if (it.t_ns != g->t_ns || it.can.id != g->id || it.can.flags != g->flags || it.can.len != g->len ||
		    strcmp(ifname, "can0") != 0 || ((g->flags & ACQ_CAN_RTR) == 0 && memcmp(it.can.data, want, g->len))) {
			fprintf(stderr, "screen line '%s': t=%lld id=%x flags=%x len=%u\n", g->line, (long long)it.t_ns,
			        it.can.id, it.can.flags, it.can.len);
			abort();
		}
	}
	for (size_t i = 0; i < sizeof(screen_bads) / sizeof(screen_bads[0]); i++) {
		struct acq_item it;

		if (trace_candump_parse_screen(screen_bads[i], strlen(screen_bads[i]), &it, NULL, 0) != -EBADMSG) {
			fprintf(stderr, "screen line accepted: '%s'\n", screen_bads[i]);
			abort();
		}
	}
	assert(trace_candump_parse_screen(NULL, 0, &(struct acq_item){ 0 }, NULL, 0) == -EINVAL);
	assert(trace_candump_screen_cont("\tbus-error", 10) && !trace_candump_screen_cont("  can0", 6));
	printf("screen: %zu shapes candump prints (stamps -ta/-td/-N/-tA, -x, FD, remote, -a, -8, -i, -S, "
	       "error frame), %zu refused\n", sizeof(screens) / sizeof(screens[0]),
	       sizeof(screen_bads) / sizeof(screen_bads[0]));
}

int main(void)
{
	assert(mkdtemp(tmpdir));
	test_parse_format();
	test_screen();
	test_parse_bytes();
	test_bad_args();
	test_trace_fast();
	test_trace_loop();
	test_trace_ifname_exact();
	test_other_iface();
	test_trace_filters();
	test_trace_paced();
	test_trace_overlong();
	test_trace_nul();
	test_tally();
	test_trace_open_errors();
	test_demo_trace();
	cleanup_tmp();
	printf("test-candump: ok\n");
	return 0;
}
