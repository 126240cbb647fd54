/* SPDX-License-Identifier: MIT */
/*
 * test-modbus-regmap.c - request planning, decoding and reply checking of
 * bus/regmap.c, without any server: every type x order, scale/offset, bit
 * fields, merge limits (125 registers, 2000 bits, gaps), grouping, reply
 * verdicts, truncated replies, RTU framing and CRC, and -EINVAL for every
 * bad argument.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bus/regmap.h"
#include "modbus-peers/mb-values.h"

static struct bus_mb_channel chan(uint32_t id, uint8_t unit, enum bus_mb_table table, uint16_t addr,
                                  enum bus_mb_type type)
{
	return (struct bus_mb_channel){ .id = id, .unit_id = unit, .table = table, .addr = addr,
	                                .type = type, .order = BUS_MB_ABCD, .scale = 1.0,
	                                .period_ms = 100 };
}

static void test_channel_check(void)
{
	struct bus_mb_channel c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16);

	assert(bus_mb_channel_check(&c) == 0);
	assert(bus_mb_channel_check(NULL) == -EINVAL);
	c.table = 0;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c.table = 5;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_TYPE_MAX);
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16);
	c.order = BUS_MB_ORDER_MAX;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_COIL, 0, BUS_MB_U16);
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_DISCRETE, 65535, BUS_MB_BIT);
	assert(bus_mb_channel_check(&c) == 0);
	c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_BIT);
	c.bit = 15;
	assert(bus_mb_channel_check(&c) == 0);
	c.bit = 16;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_INPUT, 65534, BUS_MB_U32);
	assert(bus_mb_channel_check(&c) == 0);
	c.addr = 65535;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_INPUT, 65532, BUS_MB_F64);
	assert(bus_mb_channel_check(&c) == 0);
	c.addr = 65533;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c = chan(1, 1, BUS_MB_INPUT, 0, BUS_MB_U16);
	c.period_ms = 0;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c.period_ms = 1;
	c.scale = NAN;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c.scale = 1;
	c.offset = INFINITY;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	assert(bus_mb_type_regs(BUS_MB_U64) == 4 && bus_mb_type_regs(BUS_MB_S32) == 2);
	assert(bus_mb_type_regs(BUS_MB_BIT) == 1 && bus_mb_type_regs(BUS_MB_TYPE_MAX) == 0);
	assert(bus_mb_type_regs(BUS_MB_S64) == 4 && bus_mb_type_regs(BUS_MB_U8) == 1 && bus_mb_type_regs(BUS_MB_S8) == 1);
	c.type = BUS_MB_U8;
	c.offset = 0;
	assert(bus_mb_channel_check(&c) == 0);
	c.byte = BUS_MB_BYTE_MAX;
	assert(bus_mb_channel_check(&c) == -EINVAL);
	c.byte = BUS_MB_BYTE_LOW;
	c.table = BUS_MB_COIL; /* a coil is one bit, not a byte */
	assert(bus_mb_channel_check(&c) == -EINVAL);
}

/* s64, u8 and s8 from register bytes as on the wire, in each byte order. */
static void test_decode_new_types(void)
{
	static const uint8_t d[8] = { 0xff, 0xfe, 0x00, 0x01, 0x80, 0x7f, 0x12, 0x34 };
	struct bus_mb_channel c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_S64);
	double v;
	uint32_t q;

	assert(bus_mb_decode(&c, d, 8, 0, &v, &q) == 0 && q == ACQ_Q_GOOD);
	assert(v == (double)(int64_t)0xfffe0001807f1234ull); /* negative */
	c.order = BUS_MB_DCBA;
	assert(bus_mb_decode(&c, d, 8, 0, &v, &q) == 0 && v == (double)(int64_t)0x34127f800100feffull);
	c.order = BUS_MB_CDAB;
	assert(bus_mb_decode(&c, d, 8, 0, &v, &q) == 0 && v == (double)(int64_t)0x1234807f0001fffeull);
	assert(bus_mb_decode(&c, d, 7, 0, &v, &q) == -ERANGE);
	c = chan(2, 1, BUS_MB_HOLDING, 0, BUS_MB_U8);
	assert(bus_mb_decode(&c, d, 8, 2, &v, &q) == 0 && v == 0x80); /* register 2 = 0x807f, high */
	c.byte = BUS_MB_BYTE_LOW;
	assert(bus_mb_decode(&c, d, 8, 2, &v, &q) == 0 && v == 0x7f);
	c.type = BUS_MB_S8;
	c.byte = BUS_MB_BYTE_HIGH;
	c.scale = 2;
	assert(bus_mb_decode(&c, d, 8, 2, &v, &q) == 0 && v == -256); /* (int8_t)0x80 * 2 */
	c.order = BUS_MB_BADC; /* 0x807f swapped: 0x7f80; high byte 0x7f */
	assert(bus_mb_decode(&c, d, 8, 2, &v, &q) == 0 && v == 254);
	assert(bus_mb_decode(&c, d, 5, 2, &v, &q) == -ERANGE);
}

static struct bus_mb_regmap *plan(const struct bus_mb_channel *c, size_t n, uint16_t gap)
{
	struct bus_mb_regmap *m = NULL;

	assert(bus_mb_regmap_new(c, n, gap, &m) == 0);
	assert(m);
	return m;
}

static void test_plan_args(void)
{
	struct bus_mb_channel c[2] = { chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16),
	                               chan(2, 1, BUS_MB_HOLDING, 1, BUS_MB_U16) };
	struct bus_mb_regmap *m = (void *)1;

	assert(bus_mb_regmap_new(NULL, 1, 0, &m) == -EINVAL);
	assert(bus_mb_regmap_new(c, 0, 0, &m) == -EINVAL);
	assert(bus_mb_regmap_new(c, 2, 0, NULL) == -EINVAL);
	c[1].type = BUS_MB_TYPE_MAX;
	assert(bus_mb_regmap_new(c, 2, 0, &m) == -EINVAL);
	assert(m == (void *)1); /* untouched on failure */
	assert(bus_mb_regmap_free(NULL) == NULL);
}

/* Plan n channels and check the request boundaries: want[i] = {addr, count}. */
static void expect_reqs(const struct bus_mb_channel *c, size_t n, uint16_t gap,
                        const uint16_t (*want)[2], size_t nwant)
{
	struct bus_mb_regmap *m = plan(c, n, gap);

	assert(m->ngroups == 1);
	if (m->nreqs != nwant)
		fprintf(stderr, "got %zu requests, want %zu\n", m->nreqs, nwant);
	assert(m->nreqs == nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert(m->reqs[i].addr == want[i][0]);
		assert(m->reqs[i].count == want[i][1]);
	}
	assert(m->nslots == n);
	m = bus_mb_regmap_free(m);
}

static void test_merge(void)
{
	struct bus_mb_channel c[4];

	c[0] = chan(1, 1, BUS_MB_HOLDING, 2, BUS_MB_U16);
	c[1] = chan(2, 1, BUS_MB_HOLDING, 0, BUS_MB_U16);
	c[2] = chan(3, 1, BUS_MB_HOLDING, 1, BUS_MB_U16);
	expect_reqs(c, 3, 0, (const uint16_t[][2]){ { 0, 3 } }, 1);
	/* gap of 9 registers (1..9) between 0 and 10 */
	c[0] = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16);
	c[1] = chan(2, 1, BUS_MB_HOLDING, 10, BUS_MB_U16);
	expect_reqs(c, 2, 8, (const uint16_t[][2]){ { 0, 1 }, { 10, 1 } }, 2);
	expect_reqs(c, 2, 9, (const uint16_t[][2]){ { 0, 11 } }, 1);
	/* 125-register cap, with a wide type at the edge */
	c[1] = chan(2, 1, BUS_MB_HOLDING, 124, BUS_MB_U16);
	expect_reqs(c, 2, 200, (const uint16_t[][2]){ { 0, 125 } }, 1);
	c[1].addr = 125;
	expect_reqs(c, 2, 200, (const uint16_t[][2]){ { 0, 1 }, { 125, 1 } }, 2);
	c[1] = chan(2, 1, BUS_MB_HOLDING, 123, BUS_MB_U32);
	expect_reqs(c, 2, 200, (const uint16_t[][2]){ { 0, 125 } }, 1);
	c[1].addr = 124;
	expect_reqs(c, 2, 200, (const uint16_t[][2]){ { 0, 1 }, { 124, 2 } }, 2);
	/* 2000-bit cap on coils */
	c[0] = chan(1, 1, BUS_MB_COIL, 0, BUS_MB_BIT);
	c[1] = chan(2, 1, BUS_MB_COIL, 1999, BUS_MB_BIT);
	expect_reqs(c, 2, 5000, (const uint16_t[][2]){ { 0, 2000 } }, 1);
	c[1].addr = 2000;
	expect_reqs(c, 2, 5000, (const uint16_t[][2]){ { 0, 1 }, { 2000, 1 } }, 2);
	/* overlapping channels share registers; a u64 ending past a u16 */
	c[0] = chan(1, 1, BUS_MB_INPUT, 10, BUS_MB_U64);
	c[1] = chan(2, 1, BUS_MB_INPUT, 11, BUS_MB_U16);
	c[2] = chan(3, 1, BUS_MB_INPUT, 11, BUS_MB_BIT);
	c[2].bit = 3;
	c[3] = chan(4, 1, BUS_MB_INPUT, 14, BUS_MB_S16);
	expect_reqs(c, 4, 0, (const uint16_t[][2]){ { 10, 5 } }, 1);
	/* the highest possible address */
	c[0] = chan(1, 1, BUS_MB_HOLDING, 65532, BUS_MB_F64);
	expect_reqs(c, 1, 0, (const uint16_t[][2]){ { 65532, 4 } }, 1);
}

static void test_slots_and_groups(void)
{
	struct bus_mb_channel c[6] = {
		chan(10, 2, BUS_MB_HOLDING, 5, BUS_MB_U32),
		chan(11, 1, BUS_MB_HOLDING, 7, BUS_MB_U16),
		chan(12, 1, BUS_MB_HOLDING, 5, BUS_MB_U16),
		chan(13, 1, BUS_MB_INPUT, 5, BUS_MB_U16),
		chan(14, 1, BUS_MB_HOLDING, 6, BUS_MB_U16),
		chan(15, 1, BUS_MB_HOLDING, 6, BUS_MB_U16),
	};
	static const uint32_t ids[3] = { 12, 14, 11 };
	struct bus_mb_regmap *m;

	c[5].period_ms = 1000;
	m = plan(c, 6, 0);
	/* (1,holding,100) (1,holding,1000) (1,input,100) (2,holding,100) */
	assert(m->ngroups == 4 && m->nreqs == 4 && m->nslots == 6);
	assert(m->groups[0].unit_id == 1 && m->groups[0].table == BUS_MB_HOLDING);
	assert(m->groups[0].period_ms == 100 && m->groups[0].nslots == 3 && m->groups[0].nreqs == 1);
	assert(m->reqs[0].addr == 5 && m->reqs[0].count == 3 && m->reqs[0].nslots == 3);
	for (uint32_t i = 0; i < 3; i++) {
		const struct bus_mb_slot *s = &m->slots[m->reqs[0].first_slot + i];

		assert(s->offset == s->ch->addr - 5);
		assert(s->ch->id == ids[i]);
	}
	assert(m->groups[1].period_ms == 1000 && m->reqs[1].addr == 6 && m->reqs[1].count == 1);
	assert(m->groups[2].table == BUS_MB_INPUT);
	assert(m->groups[3].unit_id == 2 && m->reqs[3].count == 2);
	for (size_t g = 0; g < m->ngroups; g++)
		for (uint32_t r = 0; r < m->groups[g].nreqs; r++)
			assert(m->reqs[m->groups[g].first_req + r].unit_id == m->groups[g].unit_id);
	bus_mb_regmap_free(m);
}

static double dec(const struct bus_mb_channel *c, const uint8_t *w, size_t len, uint16_t off,
                  uint32_t *q)
{
	double v = -12345;
	uint32_t qq = 99;

	assert(bus_mb_decode(c, w, len, off, &v, &qq) == 0);
	if (q)
		*q = qq;
	return v;
}

/* The wire bytes of big-endian value bytes be[0..n) in a given order. */
static void to_wire(const uint8_t *be, unsigned n, enum bus_mb_order o, uint8_t *w)
{
	for (unsigned i = 0; i < n; i++) {
		switch (o) {
		case BUS_MB_ABCD: w[i] = be[i]; break;
		case BUS_MB_DCBA: w[i] = be[n - 1 - i]; break;
		case BUS_MB_BADC: w[i] = be[i ^ 1]; break;
		case BUS_MB_CDAB: w[i] = be[(n - 2 - (i & ~1u)) | (i & 1u)]; break;
		default: assert(0);
		}
	}
}

static void test_decode_orders(void)
{
	static const uint8_t w32[BUS_MB_ORDER_MAX][4] = {
		{ 0x12, 0x34, 0x56, 0x78 }, { 0x78, 0x56, 0x34, 0x12 },
		{ 0x34, 0x12, 0x78, 0x56 }, { 0x56, 0x78, 0x12, 0x34 } };
	static const uint8_t w64[BUS_MB_ORDER_MAX][8] = {
		{ 1, 2, 3, 4, 5, 6, 7, 8 }, { 8, 7, 6, 5, 4, 3, 2, 1 },
		{ 2, 1, 4, 3, 6, 5, 8, 7 }, { 7, 8, 5, 6, 3, 4, 1, 2 } };
	struct bus_mb_channel c;

	for (unsigned o = 0; o < BUS_MB_ORDER_MAX; o++) {
		uint8_t w[8];

		/* the helper agrees with the hand-written vectors */
		to_wire((const uint8_t[]){ 0x12, 0x34, 0x56, 0x78 }, 4, o, w);
		assert(memcmp(w, w32[o], 4) == 0);
		to_wire((const uint8_t[]){ 1, 2, 3, 4, 5, 6, 7, 8 }, 8, o, w);
		assert(memcmp(w, w64[o], 8) == 0);

		c = chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U32);
		c.order = o;
		assert(dec(&c, w32[o], 4, 0, NULL) == 0x12345678);
		c.type = BUS_MB_U64;
		assert(dec(&c, w64[o], 8, 0, NULL) == (double)0x0102030405060708ull);
		c.type = BUS_MB_S32;
		to_wire((const uint8_t[]){ 0xff, 0xff, 0xff, 0xfe }, 4, o, w);
		assert(dec(&c, w, 4, 0, NULL) == -2);
		c.type = BUS_MB_F32; /* 1.5f = 0x3fc00000 */
		to_wire((const uint8_t[]){ 0x3f, 0xc0, 0x00, 0x00 }, 4, o, w);
		assert(dec(&c, w, 4, 0, NULL) == 1.5);
		c.type = BUS_MB_F64; /* -2.25 = 0xc002000000000000 */
		to_wire((const uint8_t[]){ 0xc0, 0x02, 0, 0, 0, 0, 0, 0 }, 8, o, w);
		assert(dec(&c, w, 8, 0, NULL) == -2.25);
		/* 16-bit: only the byte swap applies */
		c.type = BUS_MB_U16;
		w[0] = 0x12, w[1] = 0x34;
		assert(dec(&c, w, 2, 0, NULL) == (o == BUS_MB_DCBA || o == BUS_MB_BADC ? 0x3412 : 0x1234));
		c.type = BUS_MB_S16;
		w[0] = 0xff, w[1] = 0xfe;
		assert(dec(&c, w, 2, 0, NULL) == (o == BUS_MB_DCBA || o == BUS_MB_BADC ? -257 : -2));
	}
}

static void test_decode_misc(void)
{
	const uint8_t regs[] = { 0x00, 0x64, 0x80, 0x01, 0x7f, 0xc0, 0x00, 0x00 };
	const uint8_t bits[] = { 0x05, 0x01 };
	struct bus_mb_channel c = chan(1, 1, BUS_MB_INPUT, 0, BUS_MB_U16);
	double v;
	uint32_t q;

	c.scale = 0.1, c.offset = -5;
	assert(fabs(dec(&c, regs, sizeof(regs), 0, &q) - 5.0) < 1e-9 && q == ACQ_Q_GOOD);
	c = chan(1, 1, BUS_MB_INPUT, 1, BUS_MB_BIT);
	c.bit = 15;
	assert(dec(&c, regs, sizeof(regs), 1, NULL) == 1);
	c.bit = 0;
	assert(dec(&c, regs, sizeof(regs), 1, NULL) == 1);
	c.bit = 1;
	assert(dec(&c, regs, sizeof(regs), 1, NULL) == 0);
	/* NaN float: kept, marked invalid, not scaled into a number */
	c = chan(1, 1, BUS_MB_INPUT, 2, BUS_MB_F32);
	v = dec(&c, regs, sizeof(regs), 2, &q);
	assert(isnan(v) && q == ACQ_Q_INVALID);
	c = chan(1, 1, BUS_MB_COIL, 0, BUS_MB_BIT);
	assert(dec(&c, bits, 2, 0, NULL) == 1 && dec(&c, bits, 2, 1, NULL) == 0);
	assert(dec(&c, bits, 2, 2, NULL) == 1 && dec(&c, bits, 2, 8, NULL) == 1);
	assert(dec(&c, bits, 2, 15, NULL) == 0);
	assert(bus_mb_decode(&c, bits, 2, 16, &v, &q) == -ERANGE);
	c = chan(1, 1, BUS_MB_INPUT, 0, BUS_MB_U32);
	assert(bus_mb_decode(&c, regs, 4, 1, &v, &q) == -ERANGE);
	assert(bus_mb_decode(&c, regs, 3, 0, &v, &q) == -ERANGE);
	assert(bus_mb_decode(NULL, regs, 4, 0, &v, &q) == -EINVAL);
	assert(bus_mb_decode(&c, NULL, 4, 0, &v, &q) == -EINVAL);
	assert(bus_mb_decode(&c, regs, 4, 0, NULL, &q) == -EINVAL);
	assert(bus_mb_decode(&c, regs, 4, 0, &v, NULL) == -EINVAL);
	c.type = BUS_MB_TYPE_MAX;
	assert(bus_mb_decode(&c, regs, 4, 0, &v, &q) == -EINVAL);
}

static enum bus_mb_verdict verdict(const struct bus_mb_expect *e, const uint8_t *adu, size_t len)
{
	struct bus_mb_reply r;

	assert(bus_mb_reply_check(e, adu, len, &r) == 0);
	return r.verdict;
}

static void test_reply_tcp(void)
{
	const struct bus_mb_expect e = { .tcp = 1, .tid = 7, .unit_id = 3, .function = 3, .count = 2 };
	uint8_t ok[] = { 0, 7, 0, 0, 0, 7, 3, 3, 4, 0xaa, 0xbb, 0xcc, 0xdd };
	uint8_t a[sizeof(ok)];
	struct bus_mb_reply r;

	assert(bus_mb_reply_check(&e, ok, sizeof(ok), &r) == 0);
	assert(r.verdict == BUS_MB_REPLY_OK && r.data_off == 9 && r.data_len == 4);
	/* no prefix of a good reply is good */
	for (size_t n = 0; n < sizeof(ok); n++)
		assert(verdict(&e, ok, n) != BUS_MB_REPLY_OK);
	memcpy(a, ok, sizeof(a)), a[1] = 6;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_STALE);
	memcpy(a, ok, sizeof(a)), a[3] = 1;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_PROTOCOL);
	memcpy(a, ok, sizeof(a)), a[5] = 9;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_LENGTH);
	memcpy(a, ok, sizeof(a)), a[6] = 4;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_UNIT);
	memcpy(a, ok, sizeof(a)), a[7] = 4;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_FUNCTION);
	memcpy(a, ok, sizeof(a)), a[7] = 0x84;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_FUNCTION);
	memcpy(a, ok, sizeof(a)), a[8] = 2;
	assert(verdict(&e, a, sizeof(a)) == BUS_MB_REPLY_BAD_LENGTH);
	/* one register short but self-consistent */
	memcpy(a, ok, sizeof(a)), a[5] = 5, a[8] = 2;
	assert(verdict(&e, a, sizeof(a) - 2) == BUS_MB_REPLY_BAD_LENGTH);
	{
		uint8_t ex[] = { 0, 7, 0, 0, 0, 3, 3, 0x83, 2 };

		assert(bus_mb_reply_check(&e, ex, sizeof(ex), &r) == 0);
		assert(r.verdict == BUS_MB_REPLY_EXCEPTION && r.exception == 2);
		ex[5] = 4;
		assert(verdict(&e, ex, sizeof(ex)) == BUS_MB_REPLY_BAD_LENGTH);
	}
}

static void test_reply_rtu_and_bits(void)
{
	const struct bus_mb_expect e = { .unit_id = 9, .function = 1, .count = 10 };
	const uint8_t ok[] = { 9, 1, 2, 0xff, 0x03, 0x12, 0x34 };
	const uint8_t ex[] = { 9, 0x81, 1, 0x12, 0x34 };
	const uint8_t bad[] = { 9, 1, 3, 0xff, 0x03, 0, 0x12, 0x34 };
	struct bus_mb_reply r;

	assert(bus_mb_reply_check(&e, ok, sizeof(ok), &r) == 0);
	assert(r.verdict == BUS_MB_REPLY_OK && r.data_off == 3 && r.data_len == 2);
	for (size_t n = 0; n < sizeof(ok); n++)
		assert(verdict(&e, ok, n) != BUS_MB_REPLY_OK);
	assert(bus_mb_reply_check(&e, ex, sizeof(ex), &r) == 0);
	assert(r.verdict == BUS_MB_REPLY_EXCEPTION && r.exception == 1);
	assert(verdict(&e, bad, sizeof(bad)) == BUS_MB_REPLY_BAD_LENGTH);
	assert(bus_mb_reply_check(NULL, ok, sizeof(ok), &r) == -EINVAL);
	assert(bus_mb_reply_check(&e, ok, sizeof(ok), NULL) == -EINVAL);
	assert(bus_mb_reply_check(&e, NULL, 3, &r) == -EINVAL);
	assert(bus_mb_reply_check(&e, NULL, 0, &r) == 0 && r.verdict == BUS_MB_REPLY_BAD_LENGTH);
	for (uint8_t fc = 0; fc < 20; fc++) {
		struct bus_mb_expect x = e;

		x.function = fc;
		assert((bus_mb_reply_check(&x, ok, sizeof(ok), &r) == 0) == (fc >= 1 && fc <= 4));
	}
	{
		struct bus_mb_expect x = e;

		x.count = 0;
		assert(bus_mb_reply_check(&x, ok, sizeof(ok), &r) == -EINVAL);
		x.count = 2001;
		assert(bus_mb_reply_check(&x, ok, sizeof(ok), &r) == -EINVAL);
		x.function = 3, x.count = 126;
		assert(bus_mb_reply_check(&x, ok, sizeof(ok), &r) == -EINVAL);
	}
}

static void test_request_build(void)
{
	struct bus_mb_expect e = { .tcp = 1, .tid = 0x0102, .unit_id = 5, .function = 4, .count = 125 };
	uint8_t buf[BUS_MB_ADU_MAX];
	const uint8_t tcp[] = { 1, 2, 0, 0, 0, 6, 5, 4, 0x12, 0x34, 0, 125 };
	const uint8_t rtu[] = { 5, 4, 0x12, 0x34, 0, 125 };

	assert(bus_mb_request_build(&e, 0x1234, buf, sizeof(buf)) == sizeof(tcp));
	assert(memcmp(buf, tcp, sizeof(tcp)) == 0);
	e.tcp = 0;
	assert(bus_mb_request_build(&e, 0x1234, buf, sizeof(buf)) == sizeof(rtu));
	assert(memcmp(buf, rtu, sizeof(rtu)) == 0);
	/* only read function codes can ever be built */
	for (unsigned fc = 0; fc < 256; fc++) {
		e.function = (uint8_t)fc;
		e.count = 1;
		assert((bus_mb_request_build(&e, 0, buf, sizeof(buf)) > 0) == (fc >= 1 && fc <= 4));
	}
	e.function = 3;
	assert(bus_mb_request_build(NULL, 0, buf, sizeof(buf)) == -EINVAL);
	assert(bus_mb_request_build(&e, 0, NULL, sizeof(buf)) == -EINVAL);
	assert(bus_mb_request_build(&e, 0, buf, 12) == -EINVAL);
	e.count = 0;
	assert(bus_mb_request_build(&e, 0, buf, sizeof(buf)) == -EINVAL);
}

/* RTU frames: length from the function code and byte count, and the CRC. */
static void test_rtu_framing(void)
{
	/* the frame every Modbus guide shows: read 10 holding registers */
	const uint8_t req[] = { 0x01, 0x03, 0x00, 0x00, 0x00, 0x0a, 0xc5, 0xcd };
	uint8_t b[BUS_MB_RTU_FRAME_MAX] = { 7, 3, 250 };
	uint16_t crc = bus_mb_crc16(req, 6);

	assert((crc & 0xff) == req[6] && crc >> 8 == req[7]);
	/* the same as the test peers' own, written apart */
	for (size_t n = 0; n < sizeof(b); n++)
		b[n] = (uint8_t)(n * 37 + 11);
	for (size_t n = 0; n <= sizeof(b); n++)
		assert(bus_mb_crc16(b, n) == mb_crc16(b, n));
	/* read replies: unit, function, byte count, data, CRC */
	for (uint8_t fc = 1; fc <= 4; fc++) {
		b[1] = fc, b[2] = 4;
		assert(bus_mb_rtu_frame_len(b, 0) == 2 && bus_mb_rtu_frame_len(b, 1) == 2);
		assert(bus_mb_rtu_frame_len(b, 2) == 3);
		assert(bus_mb_rtu_frame_len(b, 3) == 9 && bus_mb_rtu_frame_len(b, 9) == 9);
		b[2] = 255;
		assert(bus_mb_rtu_frame_len(b, 3) == BUS_MB_RTU_FRAME_MAX);
	}
	/* exceptions: unit, function | 0x80, code, CRC, whatever the function */
	for (unsigned fc = 0x80; fc <= 0xff; fc++) {
		b[1] = (uint8_t)fc;
		assert(bus_mb_rtu_frame_len(b, 2) == 5 && bus_mb_rtu_frame_len(b, 5) == 5);
	}
	/* nothing else answers a read: it cannot be framed */
	for (unsigned fc = 0; fc < 0x80; fc++) {
		b[1] = (uint8_t)fc;
		if (fc < 1 || fc > 4)
			assert(bus_mb_rtu_frame_len(b, 2) == -EBADMSG);
	}
	assert(bus_mb_rtu_frame_len(NULL, 3) == -EINVAL);
	/* the byte count a reply carries: the shape of a reply */
	{
		struct bus_mb_expect e = { .unit_id = 1, .function = 3, .count = 125 };

		assert(bus_mb_reply_bytes(&e) == 250);
		e.function = 1, e.count = 9;
		assert(bus_mb_reply_bytes(&e) == 2);
		e.count = 2001;
		assert(bus_mb_reply_bytes(&e) == 0);
		e.function = 5, e.count = 1;
		assert(bus_mb_reply_bytes(&e) == 0 && bus_mb_reply_bytes(NULL) == 0);
	}
}

int main(void)
{
	test_channel_check();
	test_plan_args();
	test_decode_new_types();
	test_merge();
	test_slots_and_groups();
	test_decode_orders();
	test_decode_misc();
	test_reply_tcp();
	test_reply_rtu_and_bits();
	test_request_build();
	test_rtu_framing();
	printf("test-modbus-regmap: ok\n");
	return 0;
}
