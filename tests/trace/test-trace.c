/* SPDX-License-Identifier: MIT */
/*
 * test-trace: the trace formats other than candump (trace/trace-fmt.h) line
 * by line and byte by byte, what python-can does not write (TRC 1.0 to
 * 2.0 as PEAK's format description shows them, ASC in decimal, relative
 * stamps, German dates, CANFD lines of classic frames, BLF CAN_MESSAGE2
 * and CAN_FD_MESSAGE_64, stored containers, objects spanning containers),
 * detection by content, and damaged input: truncated BLF file header,
 * container and object, bad zlib data, an unknown compression, garbage
 * between objects; each said with its offset, and reading goes on; an ASC
 * trace from a FIFO whose writer stays open, told by its first lines;
 * record/'s ASC and BLF writers read back by these readers.
 * TZ=UTC (set by meson) makes the local dates of the files plain UTC.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <sys/stat.h>
#include <unistd.h>

#include "bus/bus.h"
#include "trace/trace-fmt.h"
#include "trace/trace.h"
#include "trace/trace-write.h"
#include "tests/lib/tlib.h"

#define NS 1000000000LL

static int line_of(int (*fn)(void *, const char *, size_t, struct acq_item *, unsigned *), void *st,
                   const char *line, struct acq_item *it, unsigned *ch)
{
	*ch = 0;
	memset(it, 0, sizeof(*it));
	return fn(st, line, strlen(line), it, ch);
}

static int asc(void *st, const char *l, size_t n, struct acq_item *it, unsigned *ch)
{
	return trace_asc_line(st, l, n, it, ch);
}

static int trc(void *st, const char *l, size_t n, struct acq_item *it, unsigned *ch)
{
	return trace_trc_line(st, l, n, it, ch);
}

static void expect(const struct acq_item *it, int64_t t_ns, uint32_t id, uint8_t flags, uint8_t len, const char *hex)
{
	char got[2 * ACQ_CAN_DATA_MAX + 1] = "";

	for (unsigned i = 0; !(flags & ACQ_CAN_RTR) && i < it->can.len; i++)
		sprintf(got + 2 * i, "%02x", it->can.data[i]);
	if (it->kind != ACQ_ITEM_CAN || it->t_ns != t_ns || it->can.id != id || it->can.flags != flags ||
	    it->can.len != len || strcmp(got, hex) != 0) {
		fprintf(stderr, "got t=%lld id=%x flags=%x len=%u %s; want t=%lld id=%x flags=%x len=%u %s\n",
		        (long long)it->t_ns, it->can.id, it->can.flags, it->can.len, got, (long long)t_ns, id, flags,
		        len, hex);
		abort();
	}
}

static void test_asc(void)
{
	struct trace_asc st;
	struct acq_item it;
	unsigned ch;
	/* 2026-12-03 15:30:00.250 UTC */
	const int64_t t0 = 1796311800LL * NS + 250000000;

	trace_asc_init(&st);
	assert(line_of(asc, &st, "date Thu Dec 3 03:30:00.250 pm 2026", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "base hex  timestamps absolute", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "// version 13.0.0", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "Begin Triggerblock Thu Dec 3 15:30:00.250 2026", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   0.000000 Start of measurement", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   0.001000 1  Statistic: D 0 R 0 XD 0 XR 0 E 0 O 0 B 0.00%", &it, &ch) == TRACE_SKIP);
	/* Vector's own classic line, with the trailing length/bit count */
	assert(line_of(asc, &st, "   0.010000 2  1F3             Rx   d 3 01 A2 FF  Length = 0 BitCount = 0 ID = 499",
	               &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 10000000, 0x1f3, 0, 3, "01a2ff");
	assert(ch == 2);
	assert(line_of(asc, &st, "   0.020000 1  18FEF100x       Tx   d 8 00 01 02 03 04 05 06 07", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 20000000, 0x18fef100, ACQ_CAN_EXT | ACQ_CAN_TX, 8, "0001020304050607");
	/* DLC 9..15 of a classic frame: 8 bytes */
	assert(line_of(asc, &st, "   0.021 1  100 Rx d F 00 01 02 03 04 05 06 07", &it, &ch) == TRACE_FRAME);
	assert(it.can.len == 8);
	assert(line_of(asc, &st, "   0.030000 1  123             Rx   r", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 30000000, 0x123, ACQ_CAN_RTR, 0, "");
	assert(line_of(asc, &st, "   0.031 1  123 Rx r 5", &it, &ch) == TRACE_FRAME && it.can.len == 5);
	assert(line_of(asc, &st, "   0.040000 3  ErrorFrame", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 40000000, 0x80, ACQ_CAN_ERR, 0, ""); /* CAN_ERR_BUSERROR */
	assert(ch == 3);
	/* CANFD with a symbolic name, BRS and ESI */
	assert(line_of(asc, &st, "   0.050000 CANFD   4 Rx 1abx  EngineData 1 1 9 12 00 01 02 03 04 05 06 07 08 09 0a 0b"
	               "  130000  130 3000 1234 46500250 4b000150 0 0", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 50000000, 0x1ab, ACQ_CAN_EXT | ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_ESI, 12,
	       "000102030405060708090a0b");
	assert(ch == 4);
	/* a CANFD line without EDL in its flags is a classic frame (RTR 0x10) */
	assert(line_of(asc, &st, "   0.060000 CANFD   1 Tx 12  0 0 2 2 aa bb  0 0 0 0 0 0 0 0", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 60000000, 0x12, ACQ_CAN_TX, 2, "aabb");
	assert(line_of(asc, &st, "   0.061 CANFD 1 Rx 12 0 0 3 0 0 0 10", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + 61000000, 0x12, ACQ_CAN_RTR, 3, "");
	assert(line_of(asc, &st, "   0.062 CANFD 2 Rx ErrorFrame 0 0", &it, &ch) == TRACE_FRAME && ch == 2 &&
	       it.can.flags == ACQ_CAN_ERR);
	assert(line_of(asc, &st, "End TriggerBlock", &it, &ch) == TRACE_SKIP);
	/* malformed: each -EBADMSG, never a frame */
	static const char *const bad[] = {
		"hello world",
		"   0.07 1 800 Rx d 1 00",            /* standard id above 0x7ff */
		"   0.07 1 123 Rx d 3 00 01",         /* fewer bytes than the DLC */
		"   0.07 1 123 Rx d 1 0G",            /* not hex */
		"   0.07 1 123 Rx q 1 00",
		"   0.07 CANFD 1 Rx 12 0 0 9 11 00",  /* DLC 9 is 12 bytes */
		"   0.07 CANFD 1 Rx 12 2 0 1 1 00",   /* BRS 2 */
		"   0.07 CANFD 1 Rx 12 0 0 9 12 00 01", /* 2 of 12 bytes */
		"   0.07 CANFD x Rx 12 0 0 1 1 00",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (line_of(asc, &st, bad[i], &it, &ch) != -EBADMSG) {
			fprintf(stderr, "ASC accepted '%s'\n", bad[i]);
			abort();
		}

	/* base dec, relative stamps, a German month */
	trace_asc_init(&st);
	assert(line_of(asc, &st, "date Do Dez 3 15:30:00.250 2026", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "base dec  timestamps relative", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "no internal events logged", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   1.000000 1  291 Rx d 2 1 255", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + NS, 291, 0, 2, "01ff");
	assert(line_of(asc, &st, "   0.500000 1  Statistic: D 0", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   0.250000 1  16777216x Rx d 0", &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + NS + 750000000, 16777216, ACQ_CAN_EXT, 0, "");
	/* base dec: a CANFD line's DLC in decimal too (as python-can reads it) */
	assert(line_of(asc, &st, "   0.000001 CANFD 1 Rx 291 0 0 10 16 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 255 0 0 1000",
	               &it, &ch) == TRACE_FRAME);
	expect(&it, t0 + NS + 750001000, 291, ACQ_CAN_FD, 16, "000102030405060708090a0b0c0d0eff");
	/* a date past 2116 or stamps near int64's end: no overflow, refused or epoch */
	trace_asc_init(&st);
	assert(line_of(asc, &st, "date Fri Dec 31 23:59:59.999 9999", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   1.5 1 10 Rx d 0", &it, &ch) == TRACE_FRAME && it.t_ns == 1500000000);
	assert(line_of(asc, &st, "   9999999999.5 1 10 Rx d 0", &it, &ch) == -EBADMSG);
	assert(line_of(asc, &st, "base hex  timestamps relative", &it, &ch) == TRACE_SKIP);
	assert(line_of(asc, &st, "   2000000000.0 1 10 Rx d 0", &it, &ch) == TRACE_FRAME);
	assert(line_of(asc, &st, "   2000000000.0 1 10 Rx d 0", &it, &ch) == -EBADMSG);
	printf("asc: header, classic, extended, remote, error, FD (name, BRS, ESI), classic in CANFD, "
	       "dec base, relative stamps, German date, %zu malformed lines refused\n", sizeof(bad) / sizeof(bad[0]));
}

/* Lines of each TRC version as PEAK's format description shows them. */
static void test_trc(void)
{
	struct trace_trc st;
	struct acq_item it;
	unsigned ch;

	/* 1.0: no version line, integer ms */
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";   Start time: 12.09.2018 14:47:59.345", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, "     1)      1841  0001  8  00 00 00 00 00 00 00 00", &it, &ch) == TRACE_FRAME);
	expect(&it, 1841000000, 1, 0, 8, "0000000000000000");
	assert(ch == 1);
	assert(line_of(trc, &st, "     2)      1842  00000100  2  01 02", &it, &ch) == TRACE_FRAME);
	expect(&it, 1842000000, 0x100, ACQ_CAN_EXT, 2, "0102");
	assert(line_of(trc, &st, "     3)      1843  FFFFFFFF  4  00 00 00 08", &it, &ch) == TRACE_SKIP);

	/* 1.1: type column, 0.1 ms, RTR */
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";$FILEVERSION=1.1", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, "     1)      1059.9  Rx         0300  8  00 00 00 00 04 00 00 00", &it, &ch) == TRACE_FRAME);
	expect(&it, 1059900000, 0x300, 0, 8, "0000000004000000");
	assert(line_of(trc, &st, "     2)      1283.2  Tx     1C000000  1  44", &it, &ch) == TRACE_FRAME);
	expect(&it, 1283200000, 0x1c000000, ACQ_CAN_EXT | ACQ_CAN_TX, 1, "44");
	assert(line_of(trc, &st, "     3)      1300.0  Rx         0100  3  RTR", &it, &ch) == TRACE_FRAME);
	expect(&it, 1300000000, 0x100, ACQ_CAN_RTR, 3, "");
	assert(line_of(trc, &st, "     4)      1400.0  Warng  FFFFFFFF  4  00 00 00 08  BUSHEAVY", &it, &ch) == TRACE_SKIP);

	/* 1.2: bus column; 1.3: and a reserved one */
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";$FILEVERSION=1.2", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, "     1)      1841.001 2  Rx         0001  1  AA", &it, &ch) == TRACE_FRAME);
	expect(&it, 1841001000, 1, 0, 1, "aa");
	assert(ch == 2);
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";$FILEVERSION=1.3", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, "     1)      1841.001 3  Tx         0001 -  1  BB", &it, &ch) == TRACE_FRAME);
	expect(&it, 1841001000, 1, ACQ_CAN_TX, 1, "bb");
	assert(ch == 3);

	/* 2.0: default columns N,O,T,I,d,l,D, FD types, start time (2018-05-08 15:36:38.1456 UTC) */
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";$FILEVERSION=2.0", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, ";$STARTTIME=43228.6504415972", &it, &ch) == TRACE_SKIP);
	{
		const int64_t start = 1525793798LL * NS + 153980800; /* 43228.650441597 days */

		assert(line_of(trc, &st, "      1      1059.900 DT     0300 Rx 7  00 00 00 00 04 00 00", &it, &ch) ==
		       TRACE_FRAME);
		assert(it.t_ns == start + 1059900000);
		assert(it.can.id == 0x300 && it.can.len == 7 && ch == 1);
	}
	assert(line_of(trc, &st, "      2      1060.000 FB     0400 Tx 12 00 01 02 03 04 05 06 07 08 09 0A 0B", &it, &ch) ==
	       TRACE_FRAME);
	assert(it.can.flags == (ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_TX) && it.can.len == 12 && it.can.data[11] == 0x0b);
	assert(line_of(trc, &st, "      3      1061.000 RR     0100 Rx 4", &it, &ch) == TRACE_FRAME);
	assert(it.can.flags == ACQ_CAN_RTR && it.can.len == 4);
	assert(line_of(trc, &st, "      4      1062.000 ER          Rx 04 00 02 00 00", &it, &ch) == TRACE_FRAME);
	assert(it.can.flags == ACQ_CAN_ERR);
	assert(line_of(trc, &st, "      5      1063.000 ST          Rx 00 00 00 08", &it, &ch) == TRACE_SKIP);
	/* 2.1: bus, reserved, DLC; FD by DLC */
	trace_trc_init(&st);
	assert(line_of(trc, &st, ";$FILEVERSION=2.1", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, ";$COLUMNS=N,O,T,B,I,d,R,L,D", &it, &ch) == TRACE_SKIP);
	assert(line_of(trc, &st, "      1         2.500 BI  2 18FF0000 Rx -  13   00 01 02 03 04 05 06 07 08 09 0A 0B"
	               " 0C 0D 0E 0F 10 11 12 13 14 15 16 17 18 19 1A 1B 1C 1D 1E 1F", &it, &ch) == TRACE_FRAME);
	expect(&it, 2500000, 0x18ff0000, ACQ_CAN_EXT | ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_ESI, 32,
	       "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
	assert(ch == 2);
	static const char *const bad[] = {
		"      2         2.600 FD  1 0100 Rx -  9  00 01 02 03 04 05 06 07 08", /* DLC 9: 12 bytes */
		"      2         2.600 XX  1 0100 Rx -  1  00",
		"      2         2.600 DT  1 0100 Rx -  2  00",
		"      2         2.600 DT  1 0100 Qx -  1  00",
		"      2         abc   DT  1 0100 Rx -  1  00",
		"      2         2.600 DT  1 0800 Rx -  1  00", /* standard id above 0x7ff */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (line_of(trc, &st, bad[i], &it, &ch) != -EBADMSG) {
			fprintf(stderr, "TRC accepted '%s'\n", bad[i]);
			abort();
		}
	assert(line_of(trc, &st, ";$FILEVERSION=3.0", &it, &ch) == -EBADMSG);
	printf("trc: 1.0, 1.1 (RTR, Warng), 1.2, 1.3, 2.0 (start time, FD, RR, ER, ST), 2.1 (bus, DLC 13), "
	       "%zu malformed lines refused\n", sizeof(bad) / sizeof(bad[0]));
}

/* ---- BLF files built byte by byte ---- */

struct blob {
	uint8_t p[1 << 16];
	size_t n;
};

static void put(struct blob *b, const void *d, size_t n)
{
	assert(b->n + n <= sizeof(b->p));
	if (d)
		memcpy(b->p + b->n, d, n);
	else
		memset(b->p + b->n, 0, n);
	b->n += n;
}

static void put16(struct blob *b, uint16_t v)
{
	put(b, (uint8_t[]){ (uint8_t)v, (uint8_t)(v >> 8) }, 2);
}

static void put32(struct blob *b, uint32_t v)
{
	put16(b, (uint16_t)v);
	put16(b, (uint16_t)(v >> 16));
}

static void put64(struct blob *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b, (uint32_t)(v >> 32));
}

/* file header: start 2026-12-03 15:30:00.250 (local time; TZ=UTC) */
static void blf_header(struct blob *f)
{
	static const uint16_t st[8] = { 2026, 12, 4, 3, 15, 30, 0, 250 };

	f->n = 0;
	put(f, "LOGG", 4);
	put32(f, 144);
	put(f, NULL, 32);
	for (int i = 0; i < 8; i++)
		put16(f, st[i]);
	put(f, NULL, 144 - f->n);
}

static const int64_t blf_t0 = 1796311800LL * NS + 250000000;

/* an object with a version 1 header (flags 2: ns, or 1: 10 us), padded as python-can pads */
static void blf_obj(struct blob *b, uint32_t type, uint32_t tflags, uint64_t ts, const struct blob *body)
{
	put(b, "LOBJ", 4);
	put16(b, 32);
	put16(b, 1);
	put32(b, (uint32_t)(32 + body->n));
	put32(b, type);
	put32(b, tflags);
	put32(b, 0);
	put64(b, ts);
	put(b, body->p, body->n);
	put(b, NULL, body->n % 4);
}

/* a container of inner[from, from + len), zlib (method 2) or stored (0) */
static void blf_container(struct blob *f, const struct blob *inner, size_t from, size_t len, int method)
{
	static struct blob z;
	uLongf zlen = sizeof(z.p);
	uint32_t size;

	if (method == 2)
		assert(compress(z.p, &zlen, inner->p + from, len) == Z_OK);
	else
		memcpy(z.p, inner->p + from, zlen = len);
	size = (uint32_t)(32 + zlen);
	put(f, "LOBJ", 4);
	put16(f, 16);
	put16(f, 1);
	put32(f, size);
	put32(f, 10);
	put16(f, (uint16_t)method);
	put(f, NULL, 6);
	put32(f, (uint32_t)len);
	put(f, NULL, 4);
	put(f, z.p, zlen);
	put(f, NULL, size % 4);
}

static void body_msg(struct blob *b, uint16_t ch, uint8_t flags, uint8_t dlc, uint32_t id, bool msg2)
{
	b->n = 0;
	put16(b, ch);
	put(b, &flags, 1);
	put(b, &dlc, 1);
	put32(b, id);
	for (uint8_t i = 0; i < 8; i++)
		put(b, (uint8_t[]){ (uint8_t)(0x10 + i) }, 1);
	if (msg2)
		put(b, NULL, 8); /* frame length, bit count, reserved */
}

static void body_fd64(struct blob *b, uint8_t ch, uint8_t dlc, uint8_t valid, uint32_t id, uint32_t flags, uint8_t dir)
{
	b->n = 0;
	put(b, (uint8_t[]){ ch, dlc, valid, 0 }, 4);
	put32(b, id);
	put32(b, 0);
	put32(b, flags);
	put(b, NULL, 16 + 2);
	put(b, &dir, 1);
	put(b, NULL, 1 + 4);
	for (uint8_t i = 0; i < valid; i++)
		put(b, &i, 1);
}

static void body_fd(struct blob *b, uint16_t ch, uint8_t dlc, uint32_t id, uint8_t fdflags, uint8_t valid)
{
	b->n = 0;
	put16(b, ch);
	put(b, (uint8_t[]){ 0, dlc }, 2);
	put32(b, id);
	put(b, NULL, 5);
	put(b, (uint8_t[]){ fdflags, valid }, 2);
	put(b, NULL, 5);
	for (uint8_t i = 0; i < 64; i++)
		put(b, (uint8_t[]){ (uint8_t)(0xa0 + i) }, 1);
}

/* the objects of the test file: 6 frames and a marker, on channels 1..3 */
static void blf_inner(struct blob *in)
{
	static struct blob body;

	in->n = 0;
	body_msg(&body, 1, 0, 2, 0x123, false);
	blf_obj(in, 1, 2, 1000, &body);                       /* +1 us */
	body_msg(&body, 2, 0x81, 4, 0x80000000u | 0x1abcdef, true);
	blf_obj(in, 86, 1, 200, &body);                       /* +2 ms, 10 us units; RTR, TX */
	body.n = 0;
	put(&body, NULL, 40);
	blf_obj(in, 96, 2, 3000000, &body);                   /* a global marker: skipped */
	body_fd64(&body, 3, 9, 12, 0x7ff, 0x1000 | 0x2000, 1);
	blf_obj(in, 101, 2, 4000000, &body);                  /* FD BRS, TX */
	body_fd(&body, 1, 15, 0x80000000u | 0x100, 0x1 | 0x4, 64);
	blf_obj(in, 100, 2, 5000000, &body);                  /* FD ESI 64 bytes */
	body_fd(&body, 2, 3, 0x55, 0, 3);
	blf_obj(in, 100, 2, 6000000, &body);                  /* classic in an FD object: valid bytes 3 */
	body.n = 0;
	put16(&body, 3);
	put(&body, NULL, 30);
	blf_obj(in, 73, 2, 7000000, &body);                   /* error frame */
}

struct mem {
	const uint8_t *p;
	size_t n, pos;
};

static ssize_t mem_read(void *ctx, void *buf, size_t len)
{
	struct mem *m = ctx;
	size_t k = m->n - m->pos < len ? m->n - m->pos : len;

	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (ssize_t)k;
}

/* Read a whole file: frames into it[], reasons of the -EBADMSG into why (joined by '|'). */
static int blf_read_all(const struct blob *f, struct acq_item *it, unsigned *ch, int max, char *why, size_t why_len)
{
	struct trace_blf *b;
	struct mem m = { f->p, f->n, 0 };
	int n = 0, r;

	why[0] = 0;
	assert(trace_blf_new(&b) == 0);
	for (int guard = 0; guard < 1000; guard++) {
		r = trace_blf_next(b, mem_read, &m, &it[n], &ch[n]);
		if (r == TRACE_FRAME && n < max - 1) {
			n++;
		} else if (r == -EBADMSG) {
			uint64_t off;
			const char *w = trace_blf_why(b, &off);

			snprintf(why + strlen(why), why_len - strlen(why), "%s@%llu|", w, (unsigned long long)off);
		} else {
			assert(r == 0);
			break;
		}
	}
	trace_blf_free(b);
	return n;
}

static void expect_blf_frames(const struct acq_item *it, const unsigned *ch, int first)
{
	if (first <= 0) {
		expect(&it[0], blf_t0 + 1000, 0x123, 0, 2, "1011");
		assert(ch[0] == 1);
	}
	if (first <= 1) {
		expect(&it[1 - first], blf_t0 + 2000000, 0x1abcdef, ACQ_CAN_EXT | ACQ_CAN_RTR | ACQ_CAN_TX, 4, "");
		assert(ch[1 - first] == 2);
	}
	if (first <= 2) {
		expect(&it[2 - first], blf_t0 + 4000000, 0x7ff, ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_TX, 12,
		       "000102030405060708090a0b");
		assert(ch[2 - first] == 3);
	}
	assert(it[3 - first].can.flags == (ACQ_CAN_EXT | ACQ_CAN_FD | ACQ_CAN_ESI) && it[3 - first].can.len == 64 &&
	       it[3 - first].can.data[63] == 0xa0 + 63 && it[3 - first].can.id == 0x100);
	expect(&it[4 - first], blf_t0 + 6000000, 0x55, 0, 3, "a0a1a2");
	expect(&it[5 - first], blf_t0 + 7000000, 0x80, ACQ_CAN_ERR, 0, "");
	assert(ch[5 - first] == 3);
}

static void test_blf(void)
{
	static struct blob in, f;
	struct acq_item it[16];
	unsigned ch[16];
	char why[512];
	size_t split, c2;
	int n;

	blf_inner(&in);
	/* two containers, the second stored, split inside the FD_MESSAGE_64 object */
	split = 32 + 16 + 32 + 24 + 32 + 40 + 20;
	blf_header(&f);
	blf_container(&f, &in, 0, split, 2);
	c2 = f.n;
	blf_container(&f, &in, split, in.n - split, 0);
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 6 && why[0] == 0);
	expect_blf_frames(it, ch, 0);
	assert(trace_format_detect(f.p, f.n) == TRACE_BLF);

	/* bad zlib in the first container: said at its offset (144), the
	   object it split is lost, the second container's frames follow */
	f.p[144 + 32 + 10] ^= 0x55;
	f.p[144 + 32 + 11] ^= 0xff;
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(strstr(why, "bad zlib data in container@144|") == why);
	assert(n == 3);
	expect_blf_frames(it, ch, 3);
	f.p[144 + 32 + 10] ^= 0x55;
	f.p[144 + 32 + 11] ^= 0xff;

	/* the same with a padded first container (its size not a multiple of
	   4): the padding after a skipped container is skipped too */
	{
		static struct blob p;
		size_t pad_split = split;

		do {
			blf_header(&p);
			blf_container(&p, &in, 0, ++pad_split, 2);
		} while ((p.n - 144) % 4 == 0);
		blf_container(&p, &in, pad_split, in.n - pad_split, 0);
		p.p[144 + 32 + 10] ^= 0x55;
		p.p[144 + 32 + 11] ^= 0xff;
		n = blf_read_all(&p, it, ch, 16, why, sizeof(why));
		assert(strcmp(why, "bad zlib data in container@144|") == 0 && n == 3);
	}

	/* the file cut inside the second container */
	f.n = c2 + 40;
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 2 && strstr(why, "file ends inside a container@"));

	/* cut inside the first object's header, inside the file header */
	f.n = 144 + 8;
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 0 && strcmp(why, "file ends inside an object header@144|") == 0);
	f.n = 100;
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 0 && strcmp(why, "truncated file header@0|") == 0);

	/* an unknown compression method: that container is skipped */
	blf_header(&f);
	blf_container(&f, &in, 0, split, 2);
	blf_container(&f, &in, split, in.n - split, 0);
	f.p[144 + 16] = 5;
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 3 && strcmp(why, "unknown compression method@144|") == 0);

	/* garbage between two objects inside a container: said, then resynced */
	{
		static struct blob g;
		size_t first = 32 + 16;

		g.n = 0;
		put(&g, in.p, first);
		put(&g, "garbage, garbage, garbage", 25);
		put(&g, in.p + first, in.n - first);
		blf_header(&f);
		blf_container(&f, &g, 0, g.n, 2);
		n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
		assert(n == 6 && strcmp(why, "no object where one should start in container@144|") == 0);
		expect_blf_frames(it, ch, 0);
	}

	/* the last container ends inside an object; garbage after the last container */
	blf_header(&f);
	blf_container(&f, &in, 0, split, 2);
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 2 && strstr(why, "file ends inside an object@") == why);
	put(&f, "this is no object at all", 24);
	n = blf_read_all(&f, it, ch, 16, why, sizeof(why));
	assert(n == 2 && strstr(why, "no LOBJ signature: the file ends here@") == why);
	/* the marker is counted by its type, once in each pass (a reset
	   starts the count again) */
	{
		struct trace_blf *b;
		struct trace_blf_skip sk;
		struct mem m;
		struct acq_item item;
		unsigned chan;

		blf_header(&f);
		blf_container(&f, &in, 0, in.n, 2);
		assert(trace_blf_new(&b) == 0);
		for (int pass = 0; pass < 2; pass++) {
			m = (struct mem){ f.p, f.n, 0 };
			while (trace_blf_next(b, mem_read, &m, &item, &chan) > 0)
				;
			assert(trace_blf_skipped(b, 0, &sk) == 0 && sk.type == 96 && sk.count == 1);
			assert(trace_blf_skipped(b, 1, &sk) == -ENOENT);
			trace_blf_reset(b);
		}
		assert(trace_blf_skipped(NULL, 0, &sk) == -EINVAL && trace_blf_skipped(b, 0, NULL) == -EINVAL);
		assert(strcmp(trace_blf_type_name(96), "global marker") == 0 && trace_blf_type_name(160) == NULL);
		trace_blf_free(b);
	}
	printf("blf: CAN_MESSAGE(2), CAN_FD_MESSAGE(_64), CAN_ERROR_EXT, marker skipped, zlib and stored "
	       "containers, object across containers; bad zlib, cut container, cut header, unknown "
	       "compression, garbage inside and after: each said with its offset\n");
}

static void test_detect(void)
{
	static const struct {
		const char *text;
		enum trace_format fmt;
	} cases[] = {
		{ "(1.000000) can0 123#00\n", TRACE_CANDUMP },
		{ "junk\n(1.000000) can0 123#00\n", TRACE_CANDUMP },
		{ "date Thu Dec 3 15:30:00 2026\nbase hex timestamps absolute\n", TRACE_ASC },
		{ "// a comment\n   0.010000 1  1F3 Rx d 1 00\n", TRACE_ASC },
		{ ";$FILEVERSION=2.1\n", TRACE_TRC },
		{ ";##########\n;   Start time: 1.1.2020\n     1)      1841  0001  8  00 00 00 00 00 00 00 00\n", TRACE_TRC },
		{ "", TRACE_EMPTY },
		{ "\n  \r\n", TRACE_EMPTY },
		{ "hello\nworld\n", TRACE_UNKNOWN },
		{ "\x7f" "ELF\x02\x01\x01", TRACE_UNKNOWN },
		{ "LOGG", TRACE_BLF },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (trace_format_detect(cases[i].text, strlen(cases[i].text)) != cases[i].fmt) {
			fprintf(stderr, "detect case %zu: %d\n", i, trace_format_detect(cases[i].text, strlen(cases[i].text)));
			abort();
		}
	printf("detect: %zu cases by content\n", sizeof(cases) / sizeof(cases[0]));
}

/*
 * A trace from a pipe whose writer stays: the format is told from the
 * first lines, not after 64 KiB or EOF (the open would never return: the
 * second frame is written only after it did), and the bytes detection
 * read are still frames.
 */
static void test_fifo(void)
{
	static const char head[] = "date Thu Dec 3 15:30:00.250 2026\nbase hex  timestamps absolute\n"
	                           "Begin Triggerblock Thu Dec 3 15:30:00.250 2026\n   0.001000 1  10 Rx d 1 AA\n";
	static const char more[] = "   0.002000 1  20 Rx d 1 BB\n";
	char dir[] = "/tmp/test-trace-XXXXXX", fifo[64], cmd[128];
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	struct tlib_peer cat;
	struct acq_item it[4];
	bus_dev_t *dev;
	int n = 0, r;

	assert(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert(mkfifo(fifo, 0600) == 0);
	snprintf(cmd, sizeof(cmd), "exec cat > %s", fifo);
	assert(tlib_peer_start(&cat, (char *const[]){ "sh", "-c", cmd, NULL }, TLIB_PEER_STDIN) == 0);
	assert(write(cat.in_fd, head, strlen(head)) == (ssize_t)strlen(head));
	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", fifo);
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(write(cat.in_fd, more, strlen(more)) == (ssize_t)strlen(more));
	assert(tlib_peer_finish(&cat, 5000) == 0); /* cat ends at EOF on its stdin: the FIFO's EOF */
	while ((r = bus_dev_recv(dev, it + n, 4 - (size_t)n, 1000)) > 0)
		n += r;
	assert(r == -ENODATA && n == 2);
	expect(&it[0], 1796311800LL * NS + 251000000, 0x10, 0, 1, "aa");
	expect(&it[1], 1796311800LL * NS + 252000000, 0x20, 0, 1, "bb");
	bus_dev_free(dev);
	unlink(fifo);
	rmdir(dir);
	printf("fifo: an ASC trace from a pipe told by its first lines, its frames all read\n");
}

/* frames of every kind on buses 0..2, at ns that ASC keeps to the us only */
static size_t writer_frames(struct acq_item *f)
{
	static const struct acq_can cans[] = {
		{ .id = 0x123, .len = 3, .data = { 1, 2, 3 } },
		{ .id = 0x1abcdef, .flags = ACQ_CAN_EXT | ACQ_CAN_TX, .len = 8, .data = { 9, 8, 7, 6, 5, 4, 3, 2 } },
		{ .id = 0x7ff, .flags = ACQ_CAN_RTR, .len = 5 },
		{ .id = 0x55, .flags = ACQ_CAN_FD | ACQ_CAN_BRS, .len = 12, .data = { [11] = 0xee } },
		{ .id = 0x1000, .flags = ACQ_CAN_EXT | ACQ_CAN_FD | ACQ_CAN_ESI | ACQ_CAN_TX, .len = 64, .data = { [63] = 1 } },
		{ .id = 0x80, .flags = ACQ_CAN_ERR },
		{ .id = 0x10, .len = 0 },
	};
	size_t n = sizeof(cans) / sizeof(cans[0]);

	for (size_t i = 0; i < n; i++)
		f[i] = (struct acq_item){ .kind = ACQ_ITEM_CAN, .bus = (uint16_t)(i % 3), .can = cans[i],
		                          .t_ns = 1796311800LL * NS + 250123456 + (int64_t)i * 1000001 };
	return n;
}

/* record/'s ASC and BLF writers read back by these readers: every frame,
   channel = bus + 1, times to the us (ASC) and the ns (BLF). */
static void test_writers(void)
{
	struct acq_item f[8], it;
	size_t n = writer_frames(f);
	unsigned ch;

	for (int fmt = TRACE_WRITE_ASC; fmt <= TRACE_WRITE_BLF; fmt++) {
		FILE *out = tmpfile();
		trace_writer_t *w;
		static struct blob file;
		size_t k = 0;

		assert(out && trace_writer_new(out, (enum trace_write_format)fmt, &w) == 0);
		for (size_t i = 0; i < n; i++)
			assert(trace_writer_frame(w, &f[i]) == 0);
		/* what a trace cannot hold is refused, the file goes on */
		it = (struct acq_item){ .kind = ACQ_ITEM_SAMPLE };
		assert(trace_writer_frame(w, &it) == -EINVAL);
		it = f[3];
		it.can.flags |= ACQ_CAN_RTR; /* FD has no remote frames */
		assert(trace_writer_frame(w, &it) == -EINVAL);
		it.can = (struct acq_can){ .id = 0x800, .len = 1 };
		assert(trace_writer_frame(w, &it) == -EINVAL);
		assert(trace_writer_close(w) == 0);
		rewind(out);
		file.n = fread(file.p, 1, sizeof(file.p), out);
		fclose(out);
		if (fmt == TRACE_WRITE_ASC) {
			struct trace_asc st;
			const char *s = (const char *)file.p, *end = s + file.n;

			assert(trace_format_detect(file.p, file.n) == TRACE_ASC);
			trace_asc_init(&st);
			while (s < end) {
				const char *nl = memchr(s, '\n', (size_t)(end - s));
				int r;

				assert(nl); /* every line ends */
				r = trace_asc_line(&st, s, (size_t)(nl - s), &it, &ch);
				assert(r >= 0);
				if (r == TRACE_FRAME) {
					assert(k < n && it.can.id == f[k].can.id && it.can.flags == f[k].can.flags);
					assert(it.can.len == f[k].can.len && ch == f[k].bus + 1u);
					assert((it.can.flags & ACQ_CAN_RTR) || memcmp(it.can.data, f[k].can.data, it.can.len) == 0);
					assert(it.t_ns == f[k].t_ns - f[k].t_ns % 1000);
					k++;
				}
				s = nl + 1;
			}
		} else {
			struct trace_blf *b;
			struct mem m = { file.p, file.n, 0 };
			int r;

			assert(trace_format_detect(file.p, file.n) == TRACE_BLF && trace_blf_new(&b) == 0);
			while ((r = trace_blf_next(b, mem_read, &m, &it, &ch)) == TRACE_FRAME) {
				assert(k < n && it.can.id == f[k].can.id && it.can.flags == f[k].can.flags);
				assert(it.can.len == f[k].can.len && ch == f[k].bus + 1u && it.t_ns == f[k].t_ns);
				assert((it.can.flags & ACQ_CAN_RTR) || memcmp(it.can.data, f[k].can.data, it.can.len) == 0);
				k++;
			}
			assert(r == 0);
			trace_blf_free(b);
		}
		assert(k == n);
	}
	printf("writers: ASC and BLF read back, %zu frames of every kind, channel = bus + 1, "
	       "ASC to the us, BLF to the ns; a sample, an FD remote frame, a bad id refused\n", n);
}

int main(void)
{
	test_fifo();
	test_writers();
	test_asc();
	test_trc();
	test_blf();
	test_detect();
	printf("test-trace: ok\n");
	return 0;
}
