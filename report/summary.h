/* SPDX-License-Identifier: MIT */
/*
 * summary.h - what `railmon summary` says about a log: per channel, the
 * sample count, first and last time, min/max/mean of the valid values,
 * gaps (intervals over a given one, by default over 5 times the channel's
 * shortest interval), the longest interval, and the out-of-range and
 * invalid counts.  Samples are taken in time order (record/order.h).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RPT_SUMMARY_ONLY_MAX 64

struct rpt_summary_opts {
	int64_t from_ns, to_ns;      /* samples in [from, to) */
	int64_t gap_ns;              /* 0: 5 times the channel's shortest interval */
	const char *const *only;     /* channel names (kept, not copied), or none */
	size_t nonly;                /* <= RPT_SUMMARY_ONLY_MAX */
	int width;                   /* the table: a terminal's columns, lines cut
	                                there (report/say.h rpt_line_fit); 0 never */
};

typedef struct rpt_summary rpt_summary_t;

/* A summary over the samples o admits; what cannot be read is said on err
   ("railmon summary: ..."), which must outlive it.  0, -EINVAL, -ENOMEM. */
int rpt_summary_new(const struct rpt_summary_opts *o, FILE *err, rpt_summary_t **ret_summary);
rpt_summary_t *rpt_summary_free(rpt_summary_t *s);

/* Every Batch of the log in dir into the summary; a damaged part is said
   and counted (rpt_summary_damaged) and the rest read.  0 or -errno (the
   log cannot be opened, no memory). */
int rpt_summary_read(rpt_summary_t *s, const char *dir);

/* Before rpt_summary_read: the `only` names resolved in the log's
   dictionaries (read ahead) as export resolves them (bare signal names
   too, rpt_channels_resolve).  How many are refused, each said on err,
   or -errno (-ENOMEM; the log cannot be opened: read says so). */
int rpt_summary_resolve(rpt_summary_t *s, const char *dir);

/* The table (a header line, then a row per channel in id order; the name
   and unit columns as wide as the longest, cut to the options' width) or
   one JSON object per channel, on out.  0 or -ENOMEM. */
int rpt_summary_print(const rpt_summary_t *s, bool json, FILE *out);

/* `railmon summary` on the log in dir: read it, then the table or JSON
   on out, or on err why not (the log cannot be read, unknown --channel
   names, no samples), and the unreadable parts skipped.  The exit code: 1
   for any of these, else 0. */
int rpt_summary_run(rpt_summary_t *s, const char *dir, bool json, FILE *out);

/* The samples of vehicle in the ground database db (its dictionary in the
   summary already, grd_db_channels(), and the `only` names resolved in
   it): the same statistics as of a log of them, from rollup_summary_1s
   (ground/rollup.h) for the range's whole seconds and the raw rows for
   the partial seconds at its edges and where the rollup cannot answer
   exactly (a possible gap inside a second, intervals not known: from
   there to the next minute).  raw: the
   raw rows only (what the rollup is measured and checked against).  0 or
   -errno (the database's: grd_db_error()). */
struct grd_db;
int rpt_summary_read_db(rpt_summary_t *s, struct grd_db *db, const char *vehicle, bool raw);
/* Seconds rpt_summary_read_db() took from the rollup, and its raw reads
   where the rollup could not answer. */
void rpt_summary_db_counts(const rpt_summary_t *s, uint64_t *ret_rollup, uint64_t *ret_raw);

/* `railmon summary --db URL --vehicle V`: connect, check the schema and
   the vehicle, resolve --channel in its dictionary, read (raw as above),
   then the table or JSON on out, or on err why not.  The exit code: 0, or
   1 (nothing to say, the database cannot answer). */
int rpt_summary_run_db(rpt_summary_t *s, const char *url, const char *vehicle, bool raw, bool json, FILE *out);

/* Channels with a sample; unreadable parts of the log skipped. */
size_t rpt_summary_channels(const rpt_summary_t *s);
uint64_t rpt_summary_damaged(const rpt_summary_t *s);
