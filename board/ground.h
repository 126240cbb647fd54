/* SPDX-License-Identifier: MIT */
/*
 * ground.h - recv's ground side (board/ground.c): a railmon log per
 * (vehicle, log id), refused Batches kept and said, and the per-log state
 * recv's callbacks share (its pointer is recv's log_ctx).
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "record/channels.h"
#include "record/format.h"
#include "storage/stor.h"
#include "uplink/recv.h"

#define RECV_PRINT_EVERY_NS (10 * INT64_C(1000000000)) /* repeated messages at most this often */

/* Why a Batch is not in a ground log (its records may still be in the
   text output), or was refused by the receiver. */
enum ground_why {
	GROUND_CONFLICT = 0,    /* = UPL_RECV_CONFLICT ... UPL_RECV_NO_MEMORY */
	GROUND_SEQ_JUMP,
	GROUND_TOO_MANY_VEHICLES,
	GROUND_NO_MEMORY,
	GROUND_LATE,            /* behind the ground log's end, over a hole: it only appends */
	GROUND_DIFFERS,         /* the ground log holds other records for these seqs */
	GROUND_TOO_BIG,         /* over the log's 1 MiB frame limit */
	GROUND_BAD_NAME,        /* a vehicle id that cannot be a directory name */
	GROUND_LOG_ERROR,       /* the ground log could not open or append (errno printed) */
	GROUND_WHY_MAX,
	GROUND_HAS_IT           /* not a refusal: the ground log holds these records already */
};

/* One (vehicle, log id): its channel names for the text output, its
   ground log with --log. */
struct ground_log {
	rec_channels_t *names;    /* what its dictionaries say; NULL until a record is written */
	uint64_t names_gen;       /* the retained dictionary names has taken (recv.c) */
	char dir[PATH_MAX];
	stor_log_t *log;          /* NULL: not open (yet, or closed for file descriptors) */
	bool unusable;            /* bad vehicle id: every Batch is refused */
	int64_t used_ns;
	uint64_t stored, not_stored; /* Batches */
};

struct ground {
	FILE *out;                /* the records as text, in fmt (with --format other than none) */
	enum rec_format fmt;
	struct recv_text *text;   /* recv.c's: a Batch's records put in time order */
	const char *dir;          /* one log per (vehicle, log id) below it; NULL: none */
	const char *keep_dir;     /* refused Batches go here */
	struct ground_log **logs; /* every ground log, to close them */
	size_t nlogs, cap;
	uint64_t appended, had;   /* Batches stored; found stored already */
	uint64_t refused[GROUND_WHY_MAX];
	uint64_t kept, keep_failed;
	int64_t printed_ns[GROUND_WHY_MAX];
	uint64_t printed[GROUND_WHY_MAX];
};

/* The state of the Batch's log (recv's per-log pointer *log_ctx), made
   the first time: NULL if out of memory. */
struct ground_log *board_ground_log(struct ground *g, const struct rec_batch_info *info, void **log_ctx);

/* recv's on_batch (ctx: struct ground): append the Batch to its ground
   log; what the log cannot take is kept, counted and said. */
int board_ground_append(void *ctx, const struct rec_batch_info *info, const void *payload, size_t len,
                        void **log_ctx);

/* recv's on_refused (ctx: struct ground): keep, count and say it. */
void board_ground_refused(void *ctx, enum upl_recv_refusal why, const struct rec_batch_info *info,
                          const void *payload, size_t len);

/* The summary line of the ground logs and the refused Batches kept. */
void board_ground_print(const struct ground *g);

/* Close (sync) every ground log and free the per-log state. */
void board_ground_free(struct ground *g);

/* A log id in lower-case hex, "" for none. */
void board_log_id_hex(const uint8_t *id, size_t len, char out[2 * REC_LOG_ID_LEN + 1]);
