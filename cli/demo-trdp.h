/* SPDX-License-Identifier: MIT */
/*
 * demo-trdp.h - `railmon demo`'s TRDP consist: a publisher of process data
 * on loopback that plays the doors, HVAC and traction of the simulated
 * train (cli/demo/consist.xml's telegrams) through the journey the
 * simulated Modbus devices serve (bus/sim-train.h).
 */
#pragma once

#include <stdint.h>

#include "bus/sim-train.h"
#include "conf/config.h"

struct cli_demo_trdp;

/* Put the TRDP buses of cfg bound to 127.0.0.1 on a free UDP port for
   their process data (several demos, and the tests, run side by side), into
   *ret_port (0 when cfg has no such bus).  One port for all: the demo
   board has one such bus, and the publisher sends to one port.  Returns 0
   or -errno. */
int cli_demo_trdp_ports(struct conf_board *cfg, uint16_t *ret_port);

/* Start publishing to 127.0.0.1:port from a thread of its own: Doors and
   Traction every 100 ms, Hvac every second, their values from sim's
   journey.  Returns 0 and *ret, or -errno (socket, thread). */
int cli_demo_trdp_start(const struct bus_sim_train *sim, uint16_t port, struct cli_demo_trdp **ret);

/* Telegrams sent so far. */
uint64_t cli_demo_trdp_sent(const struct cli_demo_trdp *p);

/* Stop the thread, close, free; accepts NULL; returns NULL. */
struct cli_demo_trdp *cli_demo_trdp_free(struct cli_demo_trdp *p);
