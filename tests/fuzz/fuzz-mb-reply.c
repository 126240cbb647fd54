/* SPDX-License-Identifier: MIT */
/*
 * fuzz-mb-reply.c - libFuzzer target for bus_mb_reply_check(),
 * bus_mb_decode() and the RTU framing (bus_mb_rtu_frame_len, bus_mb_crc16):
 * whatever bytes a Modbus peer sends, the checker reads only inside them, a
 * reply it accepts decodes every channel type and order at every offset the
 * request covers without reading past the data, and the framer asks for
 * more bytes only as far as one frame goes.
 *
 * Input: 6 bytes of expectation (flags, tid hi/lo, unit, count hi/lo), then
 * the ADU as libmodbus would hand it over.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus/regmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode_all(const struct bus_mb_expect *e, const uint8_t *d, size_t len)
{
	struct bus_mb_channel ch = { .id = 1, .unit_id = e->unit_id, .table = e->function,
	                             .scale = 1.0, .period_ms = 1 };
	bool bits = e->function <= BUS_MB_DISCRETE;

	for (unsigned type = 0; type < BUS_MB_TYPE_MAX; type++) {
		unsigned regs = bus_mb_type_regs(type);

		if (bits != (type == BUS_MB_BIT) || type == BUS_MB_STRING)
			continue;
		ch.type = type;
		for (unsigned o = 0; o < BUS_MB_ORDER_MAX; o++) {
			ch.order = o;
			for (unsigned off = 0; off + (bits ? 1 : regs) <= e->count; off++) {
				double v;
				uint32_t q;

				ch.bit = (uint8_t)(off % 16);
				ch.byte = (enum bus_mb_byte)(off & 1); /* u8/s8: high, low */
				assert(bus_mb_decode(&ch, d, len, (uint16_t)off, &v, &q) == 0);
				assert(q < ACQ_Q_MAX);
			}
		}
	}
}

/* Every string length and byte order at every offset: the text is as
   long as the registers allow or shorter, printable ASCII only. */
static void decode_texts(const struct bus_mb_expect *e, const uint8_t *d, size_t len)
{
	struct bus_mb_channel ch = { .id = 1, .unit_id = e->unit_id, .table = e->function, .type = BUS_MB_STRING,
	                             .scale = 1.0, .period_ms = 1 };

	if (e->function <= BUS_MB_DISCRETE)
		return;
	for (unsigned n = 1; n <= BUS_MB_STRING_REGS_MAX && n <= e->count; n++)
		for (unsigned o = 0; o < BUS_MB_ORDER_MAX; o++)
			for (unsigned off = 0; off + n <= e->count; off += 7) {
				char text[BUS_MB_STRING_REGS_MAX * 2];
				uint8_t tl, q;

				ch.count = (uint8_t)n;
				ch.order = o;
				assert(bus_mb_decode_text(&ch, d, len, (uint16_t)off, text, &tl, &q) == 0);
				assert(tl <= 2 * n && q < ACQ_Q_MAX && (tl == 0 || text[tl - 1] != ' '));
				for (unsigned i = 0; i < tl; i++)
					assert(text[i] >= 0x20 && text[i] <= 0x7e);
			}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bus_mb_expect e;
	struct bus_mb_reply r;
	uint8_t *adu;

	if (size < 6)
		return 0;
	e = (struct bus_mb_expect){ .tcp = data[0] & 1, .function = (uint8_t)(1 + (data[0] >> 1) % 4),
	                            .tid = (uint16_t)(data[1] << 8 | data[2]), .unit_id = data[3],
	                            .count = (uint16_t)(data[4] << 8 | data[5]) };
	/* an exact-size heap copy so ASan sees any read past the reply */
	adu = malloc(size - 6 ? size - 6 : 1);
	if (!adu)
		return 0;
	memcpy(adu, data + 6, size - 6);
	/* as the RTU reader grows a frame: every prefix, up to what it asks */
	for (size_t have = 0; have <= size - 6; have++) {
		int want = bus_mb_rtu_frame_len(adu, have);

		assert(want == -EBADMSG || (want >= 2 && want <= BUS_MB_RTU_FRAME_MAX));
		if (want < 0 || (size_t)want <= have)
			break;
	}
	(void)bus_mb_crc16(adu, size - 6);
	if (bus_mb_reply_check(&e, adu, size - 6, &r) == 0 && r.verdict == BUS_MB_REPLY_OK) {
		assert((size_t)r.data_off + r.data_len <= size - 6);
		decode_all(&e, adu + r.data_off, r.data_len);
		decode_texts(&e, adu + r.data_off, r.data_len);
	}
	free(adu);
	return 0;
}
