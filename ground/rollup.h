/* SPDX-License-Identifier: MIT */
/*
 * rollup.h - reading rollup_summary_1s (migration 0009, written by
 * rollup.c with each group): what `railmon summary --db` takes instead of
 * the raw rows of every whole second of its range (report/summary.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ground/db.h"

/* One second of one channel, over every sample in it (times in ns, to
   the microsecond the database holds). */
struct grd_summary_row {
	int64_t t_ns;                 /* the second's start */
	uint64_t n_all, n_oor, n_inv; /* samples; out-of-range; invalid or not finite */
	double a_min, a_max, a_sum;   /* over the n_all - n_inv others (min and max
	                                 only when there are some) */
	int64_t t_first_ns, t_last_ns;
	int64_t dt_min_ns;            /* shortest positive interval inside the
	                                 second; INT64_MAX: none */
	int64_t dt_max_ns;            /* longest; -1: not known (read the raw rows) */
};

/*
 * The seconds of channel of vehicle starting in [from_ns, to_ns)
 * (INT64_MIN / INT64_MAX: open), in time order, at most max of them into
 * rows (the caller asks again from after the last one).  Returns how many
 * (0: none left, or a vehicle the database does not know), -EINVAL,
 * -ECONNREFUSED, -EIO (grd_db_error() says why).
 */
int grd_db_summary_rollups(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                           struct grd_summary_row *rows, size_t max);

/*
 * The channels of vehicle with a sample in a second starting in
 * [from_ns, to_ns), ascending, into *ret_ids (malloc'd, free() it).
 * Returns how many, -ENOMEM, -ECONNREFUSED, -EIO.
 */
int grd_db_summary_channels(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns, uint32_t **ret_ids);

/* ---- plot --db (cli/plot-cmd.c, plot/plan.c) ---- */

/*
 * Every statement of db from here on sees one snapshot of the database (a
 * read-only REPEATABLE READ transaction, ended when db is freed), so the
 * rollup and the raw rows read in several statements agree while
 * receivers commit.  0, -ECONNREFUSED, -EIO.
 */
int grd_db_snapshot(grd_db_t *db);

/*
 * The first (last: the last) second of channel of vehicle starting in
 * [from_ns, to_ns) with a sample that is valid (quality not invalid, a
 * finite value), from rollup_summary_1s, into *ret_t_ns.  1, 0 (none),
 * -EINVAL, -ECONNREFUSED, -EIO.
 */
int grd_db_rollup_valid_second(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                               bool last, int64_t *ret_t_ns);

/* One raw sample row (times to the microsecond the database holds). */
struct grd_sample {
	int64_t t_ns;
	uint64_t seq;
	double value;
	int quality;
};
typedef int (*grd_sample_fn)(void *ctx, const struct grd_sample *s);

#define GRD_SAMPLE_SECONDS_MAX 512 /* seconds in one grd_db_samples_of() */

/*
 * The raw rows of channel of vehicle in the n seconds starting at secs
 * (ascending, each a multiple of 10^9 ns, n at most
 * GRD_SAMPLE_SECONDS_MAX: the answer is held whole): all of them where
 * whole[i], else the invalid (quality 2) and not-finite ones only; in
 * time order then seq, as grd_db_export() gives them, to fn (< 0 stops).
 * Returns the rows, fn's negative return, -EINVAL, -ENOMEM,
 * -ECONNREFUSED, -EIO.
 */
int grd_db_samples_of(grd_db_t *db, const char *vehicle, uint32_t channel, const int64_t *secs, const bool *whole,
                      size_t n, grd_sample_fn fn, void *ctx);
