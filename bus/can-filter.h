/* SPDX-License-Identifier: MIT */
/*
 * can-filter.h - the board file's CAN id filters, applied in software by
 * the drivers that have no kernel to do it (trace, slcan), with CAN_RAW's
 * semantics so a board file means the same on every driver: a frame
 * passes if any filter matches ((id | flags) & mask == filter.id & mask,
 * with CAN_EFF_FLAG/CAN_RTR_FLAG in the id, CAN_INV_FILTER inverting one
 * filter); no filter = everything passes; error frames always pass.
 */
#pragma once

#include <stdbool.h>

#include "bus.h"

#define BUS_CAN_EFF_FLAG 0x80000000u
#define BUS_CAN_RTR_FLAG 0x40000000u
#define BUS_CAN_INV_FILTER 0x20000000u

static inline bool bus_can_filter_pass(const struct bus_can_cfg *cfg, const struct acq_can *can)
{
	uint32_t cid = can->id | ((can->flags & ACQ_CAN_EXT) ? BUS_CAN_EFF_FLAG : 0) |
	               ((can->flags & ACQ_CAN_RTR) ? BUS_CAN_RTR_FLAG : 0);

	if (cfg->nfilters == 0 || (can->flags & ACQ_CAN_ERR))
		return true;
	for (unsigned i = 0; i < cfg->nfilters && i < BUS_CAN_FILTERS_MAX; i++) {
		const struct bus_can_filter *f = &cfg->filters[i];
		bool match = (cid & f->mask) == (f->id & ~BUS_CAN_INV_FILTER & f->mask);

		if (f->id & BUS_CAN_INV_FILTER ? !match : match)
			return true;
	}
	return false;
}
