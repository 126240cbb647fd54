/* SPDX-License-Identifier: MIT */
/* load.c - bus load arithmetic (load.h). */
#include <errno.h>

#include "load.h"

#define CAN_STUFF 1.2            /* about 20% stuff bits on average */
#define CAN_BITRATE_DEFAULT 500000.0

double bus_can_frame_seconds(unsigned len, bool ext, double bitrate, double dbitrate)
{
	if (len <= 8)
		return ((ext ? 64 : 44) + 8.0 * len) / bitrate;
	return (ext ? 49 : 29) / bitrate + (8.0 * len + (len > 16 ? 26 : 22)) / dbitrate;
}

int bus_can_load(const struct bus_can_cfg *cfg, const dbc_t *dbc, struct bus_can_load *ret)
{
	double bitrate, dbitrate, seconds = 0;
	struct bus_can_load l = { 0 };

	if (!cfg || !dbc || !ret)
		return -EINVAL;
	bitrate = cfg->bitrate ? cfg->bitrate : CAN_BITRATE_DEFAULT;
	dbitrate = cfg->dbitrate ? cfg->dbitrate : bitrate;
	l.messages = dbc_message_count(dbc);
	for (unsigned i = 0; i < l.messages; i++) {
		struct dbc_message_info m;
		if (dbc_message_info(dbc, i, &m) < 0 || !m.cycle_ms)
			continue;
		l.cyclic++;
		l.frames_s += 1000.0 / m.cycle_ms;
		seconds += 1000.0 / m.cycle_ms * CAN_STUFF * bus_can_frame_seconds(m.dlc, m.ext, bitrate, dbitrate);
	}
	l.load = seconds;
	l.bitrate = bitrate;
	*ret = l;
	return 0;
}

double bus_mb_adu_bytes(bool rtu, enum bus_mb_table table, unsigned count)
{
	bool bits = table == BUS_MB_COIL || table == BUS_MB_DISCRETE;
	/* the response's data: packed bits, or two bytes a register */
	double data = bits ? (count + 7) / 8 : 2.0 * count;

	/* request: unit + function, address, count (5) + CRC; response: unit,
	   function, byte count, data, CRC.  TCP: the MBAP header instead of
	   the unit and CRC. */
	return rtu ? (1 + 5 + 2) + (1 + 2 + data + 2) : (7 + 5) + (7 + 2 + data);
}

int bus_mb_load(const struct bus_mb_cfg *cfg, const struct bus_mb_regmap *map, struct bus_mb_load *ret)
{
	struct bus_mb_load l = { 0 };

	if (!cfg || !map || !ret || (cfg->rtu && !cfg->baud))
		return -EINVAL;
	for (size_t g = 0; g < map->ngroups; g++) {
		const struct bus_mb_group *gr = &map->groups[g];
		for (size_t k = gr->first_req; k < gr->first_req + gr->nreqs; k++) {
			const struct bus_mb_request *q = &map->reqs[k];
			l.requests_s += 1000.0 / gr->period_ms;
			l.bytes_s += bus_mb_adu_bytes(cfg->rtu, q->table, q->count) * 1000.0 / gr->period_ms;
		}
	}
	if (cfg->rtu) {
		/* bits per character: start + data + parity + stop, plus the
		   3.5-character silence around every frame */
		double bits = 1 + cfg->data_bits + (cfg->parity != 'N') + cfg->stop_bits;
		l.line_load = (l.bytes_s + 2 * l.requests_s * 3.5) * bits / cfg->baud;
	}
	*ret = l;
	return 0;
}
