/* SPDX-License-Identifier: MIT */
/*
 * sim-train.h - the simulated train of `railmon demo`: its Modbus TCP
 * devices (libmodbus server on a free 127.0.0.1 port, own thread): unit 1
 * traction converter, unit 2 HVAC, unit 3 doors, as cli/demo.ini maps
 * them.  Tests use it as a peer.
 */
#pragma once

#include <stdint.h>

struct bus_sim_train;

/* Start the server; *ret_port is the port the kernel picked.  0, -ENOMEM,
   or -errno of listen or the thread. */
int bus_sim_train_start(struct bus_sim_train **ret_server, uint16_t *ret_port);
/* Stop the thread, close every connection, free; accepts NULL; returns
   NULL. */
struct bus_sim_train *bus_sim_train_free(struct bus_sim_train *s);
