/* SPDX-License-Identifier: MIT */
/*
 * replay.h - the boards `railmon replay` runs: a board file's CAN buses as
 * trace sources, or the board of a trace replayed with a DBC alone.
 */
#pragma once

#include <stddef.h>

#include "conf/config.h"

/* Turn every CAN bus of cfg into a trace source reading path, paced at
   speed (0: as fast as possible).  With one CAN bus it takes every frame;
   with several, the n-th takes the trace's channel n unless its channel =
   says otherwise.  Modbus links have nothing to replay from a candump
   trace and are left out. */
void conf_replay_trace(struct conf_board *cfg, const char *path, double speed);

/* Turn every TRDP bus of cfg into a reader of the packet capture at path
   (several: each takes the telegrams addressed to it, by its bind address
   and groups: bus_trdp_capture_owner())
   (bus/trdp-trace.c), paced at speed; every other bus is left out (a
   capture holds no CAN frame).  Returns the TRDP buses kept. */
size_t conf_replay_capture(struct conf_board *cfg, const char *path, double speed);

/* The board a capture replayed without --board has: one TRDP bus on the
   standard ports, raw telegrams only (vehicle id vehicle, the log in
   ./railmon-data).  0; -EBADMSG (err says why), -errno. */
int conf_replay_capture_board(const char *capture, const char *vehicle, struct conf_board **ret_cfg, char *err,
                              size_t errlen);

/* The board file a one-bus replay of trace decoded with dbc would have
   (vehicle id vehicle, the log in ./railmon-data).  0; -EBADMSG when it
   does not parse (err: "--dbc DBC: why"); else -errno with err the whole
   message (a path that does not resolve, a character a board file
   cannot hold, no memory). */
int conf_replay_dbc(const char *trace, const char *dbc, const char *vehicle, struct conf_board **ret_cfg, char *err,
                    size_t errlen);
