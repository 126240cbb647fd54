/* SPDX-License-Identifier: MIT */
/*
 * recv-say.h - what `railmon recv` says about the ground station
 * (cli/recv-say.c), on the stream its caller gives (cli/ gives stderr):
 * the steps that fail, refusals as they come, the connection and the
 * database going down and back, and the totals at the end.  The receiver
 * itself is ground/receiver.h.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ground/receiver.h"

#define CLI_RECV_PRINT_EVERY_NS (10 * INT64_C(1000000000)) /* repeated messages at most this often */
#define CLI_RECV_PRINT_BURST 20     /* refusals printed one by one, per reason */

/* Refusals said so far, per reason, and where. */
struct cli_recv_say {
	FILE *err;
	int64_t printed_ns[GRD_NOTE_MAX];
	uint64_t printed[GRD_NOTE_MAX];
};

/* grd's on_note (ctx: struct cli_recv_say): the first CLI_RECV_PRINT_BURST
   of each reason one by one, then a count every CLI_RECV_PRINT_EVERY_NS. */
void cli_recv_note(void *ctx, const struct grd_note *n);

/* What recv's run needs to say it: the broker as given, and its limits. */
struct cli_recv {
	FILE *err;
	const char *host;
	int port;
	const char *topic;        /* NULL: railmon/+/data */
	bool insecure;            /* --insecure: warned once set up */
	uint64_t count;           /* --count, 0: none */
	double duration_s;        /* --duration, 0: none */
	int64_t window_ns;        /* --window, for the late records' line */
	bool quiet;               /* --quiet: no progress line */
};

/*
 * grd_receiver_new() and grd_receiver_setup() for cfg, what fails said
 * on x->err as recv says it.  0 and *ret_rc, or the exit code (2: a
 * setup error, 1: the MQTT client).
 */
int cli_recv_open(const struct cli_recv *x, const struct grd_receiver_cfg *cfg, grd_receiver_t **ret_rc);

/*
 * Run rc until *stop, --count or --duration: the connection and the
 * database said as they change, then the end (the records still held,
 * the summary per vehicle and log, gap repair).  The exit code: 1 if it
 * never got connected or the MQTT client could not be set up, else 0.
 */
int cli_recv_run(const struct cli_recv *x, grd_receiver_t *rc);
