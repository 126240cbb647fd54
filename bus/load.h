/* SPDX-License-Identifier: MIT */
/*
 * load.h - how busy a bus will be, from what the board file and the DBC
 * say: pure arithmetic, no I/O, for `check`'s plan and `run`'s warning.
 */
#pragma once

#include <stdbool.h>

#include "bus.h"
#include "dbc/dbc.h"
#include "regmap.h"

/* Above this share of its time a bus queues frames, a serial line falls
   behind its poll periods: check and run warn. */
#define BUS_LOAD_WARN 0.7

/*
 * Seconds one CAN frame of len data bytes occupies the bus, without stuff
 * bits.  Classic (len <= 8): 44 + 8 * len bits with a standard id, 64 + 8 *
 * len extended (CRC, ACK, EOF and IFS included), at bitrate.  CAN FD: 29 /
 * 49 bits at the nominal bitrate, the data and CRC (8 * len + 22, + 26
 * past 16 bytes) at dbitrate.  bitrate and dbitrate > 0.
 */
double bus_can_frame_seconds(unsigned len, bool ext, double bitrate, double dbitrate);

struct bus_can_load {
	unsigned messages;   /* in the DBC */
	unsigned cyclic;     /* of those, with a cycle time (GenMsgCycleTime) */
	double frames_s;     /* frames per second of the cyclic messages */
	double load;         /* share of the bus's time, with ~20% stuff bits;
	                        0 when no message is cyclic */
	double bitrate;      /* the nominal bitrate assumed: cfg's, else 500 kbit/s */
};

/*
 * The load the cyclic messages of dbc put on a bus set up as cfg (dbitrate
 * 0: the nominal rate).  Filters do not count: the load is the bus's, not
 * what passes them.  0, or -EINVAL for NULL.
 */
int bus_can_load(const struct bus_can_cfg *cfg, const dbc_t *dbc, struct bus_can_load *ret_load);

/* Bytes of one read transaction on the wire, request and response ADU:
   TCP MBAP (7) + PDU, RTU unit + PDU + CRC.  count registers, or bits for
   coils and discrete inputs. */
double bus_mb_adu_bytes(bool rtu, enum bus_mb_table table, unsigned count);

struct bus_mb_load {
	double requests_s;
	double bytes_s;
	double line_load;    /* RTU: share of the line's time, with start,
	                        parity and stop bits and the 3.5-character
	                        silence around every frame; 0 for TCP */
};

/* The load of polling map (bus_mb_regmap_new of cfg's channels) on cfg's
   link.  0, or -EINVAL for NULL or an RTU line without baud. */
int bus_mb_load(const struct bus_mb_cfg *cfg, const struct bus_mb_regmap *map, struct bus_mb_load *ret_load);
