/* SPDX-License-Identifier: MIT */
/* regmap.c - Modbus request planning, reply checking, value decoding. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "regmap.h"
#include "basic/byteorder.h"

static bool table_is_bits(unsigned table)
{
	return table == BUS_MB_COIL || table == BUS_MB_DISCRETE;
}

unsigned bus_mb_type_regs(enum bus_mb_type type)
{
	switch (type) {
	case BUS_MB_U16:
	case BUS_MB_S16:
	case BUS_MB_BIT:
	case BUS_MB_U8:
	case BUS_MB_S8:
		return 1;
	case BUS_MB_U32:
	case BUS_MB_S32:
	case BUS_MB_F32:
		return 2;
	case BUS_MB_U64:
	case BUS_MB_S64:
	case BUS_MB_F64:
		return 4;
	default:
		return 0;
	}
}

unsigned bus_mb_channel_regs(const struct bus_mb_channel *ch)
{
	return ch->type == BUS_MB_STRING ? ch->count : bus_mb_type_regs(ch->type);
}

int bus_mb_channel_check(const struct bus_mb_channel *ch)
{
	unsigned regs;

	if (!ch)
		return -EINVAL;
	if (ch->table < BUS_MB_COIL || ch->table > BUS_MB_INPUT)
		return -EINVAL;
	if ((unsigned)ch->type >= BUS_MB_TYPE_MAX || (unsigned)ch->order >= BUS_MB_ORDER_MAX)
		return -EINVAL;
	/* A coil is one bit: any wider type would silently read neighbours. */
	if (table_is_bits(ch->table) && ch->type != BUS_MB_BIT)
		return -EINVAL;
	if (ch->type == BUS_MB_BIT && ch->bit > 15)
		return -EINVAL;
	if ((unsigned)ch->byte >= BUS_MB_BYTE_MAX)
		return -EINVAL;
	if (ch->type == BUS_MB_STRING && (ch->count < 1 || ch->count > BUS_MB_STRING_REGS_MAX))
		return -EINVAL;
	regs = bus_mb_channel_regs(ch);
	if ((uint32_t)ch->addr + regs > 65536u)
		return -EINVAL;
	if (ch->period_ms == 0 || !isfinite(ch->scale) || !isfinite(ch->offset))
		return -EINVAL;
	return 0;
}

static int channel_cmp(const void *a, const void *b)
{
	const struct bus_mb_channel *x = *(const struct bus_mb_channel *const *)a;
	const struct bus_mb_channel *y = *(const struct bus_mb_channel *const *)b;

	if (x->unit_id != y->unit_id)
		return x->unit_id < y->unit_id ? -1 : 1;
	if (x->table != y->table)
		return x->table < y->table ? -1 : 1;
	if (x->period_ms != y->period_ms)
		return x->period_ms < y->period_ms ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Ties by id keep the plan independent of qsort's instability. */
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

static bool same_group(const struct bus_mb_channel *a, const struct bus_mb_channel *b)
{
	return a->unit_id == b->unit_id && a->table == b->table && a->period_ms == b->period_ms;
}

/*
 * Can ch join the request starting at start whose last register/bit is end?
 * end < start encodes "nothing yet".
 */
static bool request_fits(const struct bus_mb_channel *ch, uint32_t start, uint32_t end,
                         uint16_t max_gap)
{
	uint32_t limit = table_is_bits(ch->table) ? BUS_MB_BITS_MAX : BUS_MB_REGS_MAX;
	uint32_t last = ch->addr + bus_mb_channel_regs(ch) - 1;

	if (ch->addr > end + 1 && ch->addr - end - 1 > max_gap)
		return false;
	if (last < end)
		last = end;
	return last - start + 1 <= limit;
}

/* Append the slots of sorted[0..n) (one group) as requests to map. */
static void plan_group(struct bus_mb_regmap *map, const struct bus_mb_channel **sorted, size_t n,
                       uint16_t max_gap)
{
	struct bus_mb_group *g = &map->groups[map->ngroups++];
	struct bus_mb_request *r = NULL;
	uint32_t end = 0;

	*g = (struct bus_mb_group){ .unit_id = sorted[0]->unit_id, .table = (uint8_t)sorted[0]->table,
	                            .period_ms = sorted[0]->period_ms, .first_req = (uint32_t)map->nreqs,
	                            .nslots = (uint32_t)n };
	for (size_t i = 0; i < n; i++) {
		const struct bus_mb_channel *ch = sorted[i];
		uint32_t last = ch->addr + bus_mb_channel_regs(ch) - 1;

		if (!r || !request_fits(ch, r->addr, end, max_gap)) {
			r = &map->reqs[map->nreqs++];
			*r = (struct bus_mb_request){ .unit_id = ch->unit_id, .table = (uint8_t)ch->table,
			                              .addr = ch->addr, .first_slot = (uint32_t)map->nslots };
			end = ch->addr;
			g->nreqs++;
		}
		if (last > end)
			end = last;
		r->count = (uint16_t)(end - r->addr + 1);
		map->slots[map->nslots++] = (struct bus_mb_slot){ .ch = ch, .offset = (uint16_t)(ch->addr - r->addr) };
		r->nslots++;
	}
}

int bus_mb_regmap_new(const struct bus_mb_channel *channels, size_t n, uint16_t max_gap,
                      struct bus_mb_regmap **ret_map)
{
	const struct bus_mb_channel **sorted = NULL;
	struct bus_mb_regmap *map = NULL;
	int r = -ENOMEM;

	if (!channels || !n || !ret_map || n > UINT32_MAX / 2)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (bus_mb_channel_check(&channels[i]) < 0)
			return -EINVAL;
	sorted = calloc(n, sizeof(*sorted));
	map = calloc(1, sizeof(*map));
	if (!sorted || !map)
		goto out;
	/* At most one group and one request per channel. */
	map->groups = calloc(n, sizeof(*map->groups));
	map->reqs = calloc(n, sizeof(*map->reqs));
	map->slots = calloc(n, sizeof(*map->slots));
	if (!map->groups || !map->reqs || !map->slots)
		goto out;
	for (size_t i = 0; i < n; i++)
		sorted[i] = &channels[i];
	qsort(sorted, n, sizeof(*sorted), channel_cmp);
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && same_group(sorted[i], sorted[j]); j++)
			;
		plan_group(map, sorted + i, j - i, max_gap);
	}
	*ret_map = map;
	map = NULL;
	r = 0;
out:
	free(sorted);
	bus_mb_regmap_free(map);
	return r;
}

struct bus_mb_regmap *bus_mb_regmap_free(struct bus_mb_regmap *map)
{
	if (!map)
		return NULL;
	free(map->groups);
	free(map->reqs);
	free(map->slots);
	free(map);
	return NULL;
}

/* Assemble nregs registers from wire bytes w into one big-endian integer. */
static uint64_t assemble(const uint8_t *w, unsigned nregs, enum bus_mb_order order)
{
	bool byte_swap = order == BUS_MB_DCBA || order == BUS_MB_BADC;
	bool word_swap = order == BUS_MB_DCBA || order == BUS_MB_CDAB;
	uint64_t v = 0;

	for (unsigned i = 0; i < nregs; i++) {
		unsigned k = word_swap ? nregs - 1 - i : i;
		uint16_t reg = basic_get_be16(w + 2 * k);

		if (byte_swap)
			reg = (uint16_t)(reg >> 8 | reg << 8);
		v = v << 16 | reg;
	}
	return v;
}

static double raw_value(enum bus_mb_type type, uint64_t v, uint8_t bit, enum bus_mb_byte byte)
{
	uint8_t b8 = (uint8_t)(byte == BUS_MB_BYTE_HIGH ? v >> 8 : v);

	union { uint32_t u; float f; } f32 = { .u = (uint32_t)v };
	union { uint64_t u; double f; } f64 = { .u = v };

	switch (type) {
	case BUS_MB_U16: return (double)(uint16_t)v;
	case BUS_MB_S16: return (double)(int16_t)(uint16_t)v;
	case BUS_MB_U32: return (double)(uint32_t)v;
	case BUS_MB_S32: return (double)(int32_t)(uint32_t)v;
	case BUS_MB_U64: return (double)v;
	case BUS_MB_S64: return (double)(int64_t)v;
	case BUS_MB_U8: return (double)b8;
	case BUS_MB_S8: return (double)(int8_t)b8;
	case BUS_MB_F32: return (double)f32.f;
	case BUS_MB_F64: return f64.f;
	case BUS_MB_BIT: return (double)((v >> bit) & 1);
	default: return NAN;
	}
}

int bus_mb_decode(const struct bus_mb_channel *ch, const uint8_t *data, size_t len,
                  uint16_t offset, double *ret_value, uint32_t *ret_quality)
{
	double raw;

	if (!ch || !data || !ret_value || !ret_quality || bus_mb_channel_check(ch) < 0 || ch->type == BUS_MB_STRING)
		return -EINVAL;
	if (table_is_bits(ch->table)) {
		if ((size_t)offset / 8 >= len)
			return -ERANGE;
		raw = (double)((data[offset / 8] >> (offset % 8)) & 1);
	} else {
		unsigned nregs = bus_mb_channel_regs(ch);

		if (((size_t)offset + nregs) * 2 > len)
			return -ERANGE;
		raw = raw_value(ch->type, assemble(data + 2 * (size_t)offset, nregs, ch->order), ch->bit, ch->byte);
	}
	if (!isfinite(raw)) {
		/* NaN is the usual "not available" pattern of float registers. */
		*ret_value = raw;
		*ret_quality = ACQ_Q_INVALID;
		return 0;
	}
	*ret_value = raw * ch->scale + ch->offset;
	*ret_quality = ACQ_Q_GOOD;
	return 0;
}

int bus_mb_decode_text(const struct bus_mb_channel *ch, const uint8_t *data, size_t len, uint16_t offset,
                       char ret_text[BUS_MB_STRING_REGS_MAX * 2], uint8_t *ret_len, uint8_t *ret_quality)
{
	bool byte_swap, bad = false;
	size_t n = 0;

	if (!ch || !data || !ret_text || !ret_len || !ret_quality || bus_mb_channel_check(ch) < 0 ||
	    ch->type != BUS_MB_STRING)
		return -EINVAL;
	if (((size_t)offset + ch->count) * 2 > len)
		return -ERANGE;
	/* Registers in address order, the two bytes of each high first unless
	   the order swaps bytes (BADC, DCBA): a register order does not apply
	   to text, which is read first character first. */
	byte_swap = ch->order == BUS_MB_DCBA || ch->order == BUS_MB_BADC;
	for (unsigned i = 0; i < 2u * ch->count; i++) {
		uint8_t c = data[2 * (size_t)offset + (byte_swap ? i ^ 1u : i)];

		if (c == 0)
			break; /* a C string's end: what follows is padding */
		if (c < 0x20 || c > 0x7e) {
			c = '?';
			bad = true;
		}
		ret_text[n++] = (char)c;
	}
	while (n && ret_text[n - 1] == ' ')
		n--;
	*ret_len = (uint8_t)n;
	*ret_quality = bad ? ACQ_Q_INVALID : ACQ_Q_GOOD;
	return 0;
}

static size_t expected_bytes(const struct bus_mb_expect *exp)
{
	if (table_is_bits(exp->function))
		return ((size_t)exp->count + 7) / 8;
	return (size_t)exp->count * 2;
}

static bool expect_valid(const struct bus_mb_expect *exp)
{
	if (exp->function < BUS_MB_COIL || exp->function > BUS_MB_INPUT || exp->count == 0)
		return false;
	return exp->count <= (table_is_bits(exp->function) ? BUS_MB_BITS_MAX : BUS_MB_REGS_MAX);
}

size_t bus_mb_reply_bytes(const struct bus_mb_expect *exp)
{
	return exp && expect_valid(exp) ? expected_bytes(exp) : 0;
}

uint16_t bus_mb_crc16(const uint8_t *buf, size_t len)
{
	uint16_t crc = 0xffff;

	for (size_t i = 0; i < len; i++) {
		crc ^= buf[i];
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (uint16_t)((crc >> 1) ^ 0xa001) : (uint16_t)(crc >> 1);
	}
	return crc;
}

int bus_mb_rtu_frame_len(const uint8_t *buf, size_t have)
{
	if (!buf)
		return -EINVAL;
	if (have < 2)
		return 2;
	if (buf[1] & 0x80)
		return 5; /* unit, function | 0x80, exception code, CRC */
	if (buf[1] < BUS_MB_COIL || buf[1] > BUS_MB_INPUT)
		return -EBADMSG;
	if (have < 3)
		return 3;
	return 5 + buf[2]; /* unit, function, byte count, data, CRC */
}

/* The TCP header: transaction, protocol and the length it announces. */
static enum bus_mb_verdict check_mbap(const struct bus_mb_expect *exp, const uint8_t *adu, size_t len)
{
	if (len < BUS_MB_TCP_HEADER + 2)
		return BUS_MB_REPLY_BAD_LENGTH;
	/* Framing first: only a well-formed frame with another id is a stale
	   reply worth reading past; garbage is a bad reply and gets flushed. */
	if (adu[2] || adu[3])
		return BUS_MB_REPLY_BAD_PROTOCOL;
	/* The length field counts the unit id and the PDU. */
	if ((size_t)basic_get_be16(adu + 4) != len - 6)
		return BUS_MB_REPLY_BAD_LENGTH;
	if (basic_get_be16(adu) != exp->tid)
		return BUS_MB_REPLY_STALE;
	return BUS_MB_REPLY_OK;
}

static enum bus_mb_verdict check_pdu(const struct bus_mb_expect *exp, const uint8_t *pdu, size_t len,
                                     struct bus_mb_reply *rep)
{
	size_t want = expected_bytes(exp);

	if (pdu[0] == (exp->function | 0x80)) {
		if (len != 2)
			return BUS_MB_REPLY_BAD_LENGTH;
		rep->exception = pdu[1];
		return BUS_MB_REPLY_EXCEPTION;
	}
	if (pdu[0] != exp->function)
		return BUS_MB_REPLY_BAD_FUNCTION;
	if (len != 2 + want || pdu[1] != want)
		return BUS_MB_REPLY_BAD_LENGTH;
	return BUS_MB_REPLY_OK;
}

int bus_mb_reply_check(const struct bus_mb_expect *exp, const uint8_t *adu, size_t len,
                       struct bus_mb_reply *ret_reply)
{
	struct bus_mb_reply rep = { .verdict = BUS_MB_REPLY_OK };
	size_t hdr = exp && exp->tcp ? BUS_MB_TCP_HEADER : BUS_MB_RTU_HEADER;
	size_t trailer = exp && exp->tcp ? 0 : 2;

	if (!exp || !ret_reply || (!adu && len) || !expect_valid(exp))
		return -EINVAL;
	if (exp->tcp)
		rep.verdict = check_mbap(exp, adu, len);
	else if (len < hdr + 2 + trailer)
		rep.verdict = BUS_MB_REPLY_BAD_LENGTH;
	if (rep.verdict == BUS_MB_REPLY_OK && adu[hdr - 1] != exp->unit_id)
		rep.verdict = BUS_MB_REPLY_BAD_UNIT;
	if (rep.verdict == BUS_MB_REPLY_OK)
		rep.verdict = check_pdu(exp, adu + hdr, len - hdr - trailer, &rep);
	if (rep.verdict == BUS_MB_REPLY_OK) {
		rep.data_off = (uint16_t)(hdr + 2);
		rep.data_len = (uint16_t)expected_bytes(exp);
	}
	*ret_reply = rep;
	return 0;
}

int bus_mb_request_build(const struct bus_mb_expect *exp, uint16_t addr, uint8_t *buf, size_t size)
{
	size_t n = 0;

	if (!exp || !buf || size < BUS_MB_ADU_MAX || !expect_valid(exp))
		return -EINVAL;
	if (exp->tcp) {
		basic_put_be16(buf + n, exp->tid);
		n += 2;
		buf[n++] = 0;
		buf[n++] = 0;
		buf[n++] = 0;
		buf[n++] = 6; /* unit + function + address + count */
	}
	buf[n++] = exp->unit_id;
	buf[n++] = exp->function;
	basic_put_be16(buf + n, addr);
	basic_put_be16(buf + n + 2, exp->count);
	n += 4;
	return (int)n;
}
