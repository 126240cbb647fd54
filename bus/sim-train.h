/* SPDX-License-Identifier: MIT */
/*
 * sim-train.h - the simulated train of `railmon demo`: its Modbus TCP
 * devices (libmodbus server on a free 127.0.0.1 port, own thread): unit 1
 * traction converter, unit 2 HVAC, unit 3 doors, as cli/demo.ini maps
 * them.  Tests use it as a peer.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct bus_sim_train;

/* Where the simulated train is on its 60 s station-to-station journey:
   what the Modbus devices serve, and what `railmon demo`'s TRDP consist
   publishes (cli/demo-trdp.c), so both tell the same journey. */
struct bus_sim_journey {
	double t;          /* s into the 60 s cycle */
	double now;        /* s since the server started */
	bool doors_open;   /* at the station: t < 5 or t >= 56 */
	bool accel;        /* 6 <= t < 24 */
	bool cruise;       /* 24 <= t < 40 */
	bool brake;        /* 40 <= t < 54 */
	double current_a;  /* traction current, A (negative: braking) */
	double voltage_v;  /* line voltage, V */
	double cabin_c;    /* cabin temperature, degC */
};

/* The journey at this moment of s's clock.  RT-safe, thread-safe. */
void bus_sim_train_journey(const struct bus_sim_train *s, struct bus_sim_journey *ret);

/* Start the server; *ret_port is the port the kernel picked.  0, -ENOMEM,
   or -errno of listen or the thread. */
int bus_sim_train_start(struct bus_sim_train **ret_server, uint16_t *ret_port);
/* Stop the thread, close every connection, free; accepts NULL; returns
   NULL. */
struct bus_sim_train *bus_sim_train_free(struct bus_sim_train *s);
