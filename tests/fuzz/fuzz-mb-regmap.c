/* SPDX-License-Identifier: MIT */
/*
 * fuzz-mb-regmap.c - libFuzzer target for bus_mb_regmap_new(): for any
 * channel table it either refuses it (-EINVAL, exactly when some channel
 * fails bus_mb_channel_check) or returns a plan where every request stays
 * within the protocol limits, every channel sits inside its request, every
 * group is one (unit, table, period), requests come in address order and
 * every channel is planned exactly once.  (Requests may overlap by a few
 * registers when a wide value does not fit at the end of the previous one.)
 *
 * Input: 2 bytes max_gap, then 6 bytes per channel: unit, table, addr
 * hi/lo, type, bits (order in 0..1, period in 2..3, bit number in 4..7).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "bus/regmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t load(const uint8_t *d, size_t n, struct bus_mb_channel *ch, bool *ret_valid)
{
	bool valid = true;

	for (size_t i = 0; i < n; i++, d += 6) {
		ch[i] = (struct bus_mb_channel){ .id = (uint32_t)i, .unit_id = d[0] % 4,
		                                 .table = d[1] % 6, .addr = (uint16_t)(d[2] << 8 | d[3]),
		                                 .type = d[4] % (BUS_MB_TYPE_MAX + 1), .order = d[5] & 3,
		                                 .period_ms = (d[5] >> 2) & 3, .bit = d[5] >> 4,
		                                 .byte = d[0] >> 6, /* 2, 3: invalid, refused */
		                                 .count = d[3] % 40, /* strings: 0 and over 32 refused */
		                                 .scale = 1.0 };
		valid &= bus_mb_channel_check(&ch[i]) == 0;
	}
	*ret_valid = valid;
	return n;
}

static void check_request(const struct bus_mb_regmap *m, const struct bus_mb_group *g,
                          const struct bus_mb_request *r)
{
	bool bits = g->table <= BUS_MB_DISCRETE;

	assert(r->unit_id == g->unit_id && r->table == g->table);
	assert(r->count >= 1 && r->count <= (bits ? BUS_MB_BITS_MAX : BUS_MB_REGS_MAX));
	assert((uint32_t)r->addr + r->count <= 65536u);
	assert(r->nslots >= 1 && r->first_slot + r->nslots <= m->nslots);
	for (uint32_t i = 0; i < r->nslots; i++) {
		const struct bus_mb_slot *s = &m->slots[r->first_slot + i];

		assert(s->ch->unit_id == g->unit_id && s->ch->table == g->table);
		assert(s->ch->period_ms == g->period_ms);
		assert(s->ch->addr == r->addr + s->offset);
		assert(s->offset + bus_mb_channel_regs(s->ch) <= r->count);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bus_mb_channel *ch;
	struct bus_mb_regmap *m = NULL;
	size_t n, seen = 0;
	bool valid;
	int r;

	if (size < 8)
		return 0;
	n = (size - 2) / 6;
	ch = calloc(n, sizeof(*ch));
	if (!ch)
		return 0;
	load(data + 2, n, ch, &valid);
	r = bus_mb_regmap_new(ch, n, (uint16_t)(data[0] << 8 | data[1]), &m);
	assert(valid ? r == 0 : r == -EINVAL);
	for (size_t g = 0; m && g < m->ngroups; g++) {
		const struct bus_mb_group *grp = &m->groups[g];
		uint32_t prev = 0;

		for (uint32_t i = 0; i < grp->nreqs; i++) {
			const struct bus_mb_request *req = &m->reqs[grp->first_req + i];

			check_request(m, grp, req);
			assert(i == 0 || req->addr > prev);
			prev = req->addr;
			seen += req->nslots;
		}
	}
	assert(!m || seen == n);
	bus_mb_regmap_free(m);
	free(ch);
	return 0;
}
