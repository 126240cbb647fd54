/* SPDX-License-Identifier: MIT */
/*
 * recv-say.h - what `railmon recv` says on stderr about what the ground
 * station reports (board/recv-say.c): refusals as they come, the database
 * going down and back, and the totals at the end.
 */
#pragma once

#include <stdint.h>

#include "ground/ground.h"

#define RECV_PRINT_EVERY_NS (10 * INT64_C(1000000000)) /* repeated messages at most this often */
#define RECV_PRINT_BURST 20     /* refusals printed one by one, per reason */

/* Refusals said so far, per reason. */
struct recv_say {
	int64_t printed_ns[GRD_NOTE_MAX];
	uint64_t printed[GRD_NOTE_MAX];
};

/* The database's state as last said. */
struct db_report {
	uint64_t failures;
	int64_t printed_ns;
	uint64_t refused;         /* Batches refused for good, said */
	int64_t refused_ns;
	bool down;
};

/* grd's on_note (ctx: struct recv_say): the first RECV_PRINT_BURST of each
   reason one by one, then a count every RECV_PRINT_EVERY_NS. */
void recv_note(void *ctx, const struct grd_note *n);

/* Say the database went down (again at most every RECV_PRINT_EVERY_NS) or
   came back; nothing without a database. */
void recv_report_db(struct db_report *d, grd_db_t *db);

/* The summary lines: the receiver's totals, the ground logs, the database. */
void recv_print_totals(const struct upl_recv_stats *st);
void recv_print_ground(const struct grd *g);
void recv_print_db(const struct grd *g);
