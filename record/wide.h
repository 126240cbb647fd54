/* SPDX-License-Identifier: MIT */
/*
 * wide.h - samples as a wide CSV table: one column per channel (header
 * "name [unit]"), one row per timestamp, or one row per raster point.
 *
 * What pandas.read_csv and a spreadsheet expect: the first two columns
 * are time (RFC 3339 UTC, ns) and time_ns, then one per channel in the
 * order given.  Samples must come in time order (rec_order).
 *
 * Per timestamp (period 0): a row for each time at which any selected
 * channel has a sample; a channel without a sample at that time is empty.
 * Raster (period > 0): rows at every multiple of the period from the first
 * sample to the last, each channel holding its last value for at most
 * max_age; older than that it is empty, never invented.  A raster point at
 * which every column is empty (a gap in the whole log) gets no row.
 * Values are written as format.h writes them (rec_format_value(): at the
 * column's resolution, else the shortest round trip); an
 * invalid (non-finite) value is empty.  A text channel's cell holds its
 * text (a CSV field, quoted when it needs it), held on the raster like a
 * value.  Not thread-safe.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "acquisition/acq-item.h"

typedef struct rec_wide rec_wide_t;

struct rec_wide_column {
	uint32_t channel;   /* channel id */
	const char *name;   /* copied */
	const char *unit;   /* copied; NULL or "" leaves out " [unit]" */
	bool has_decimals;  /* the values' resolution is known (format.h's rule) */
	unsigned decimals;
};

/*
 * A table on out (borrowed: it must outlive the table) of n (>= 1)
 * columns (ids all different), period_ns 0 (per timestamp) or the raster
 * period, max_age_ns > 0 how long a value is held on the raster.  Writes
 * the header line.  0, -EINVAL, -ENOMEM, -EIO.
 */
int rec_wide_new(FILE *out, const struct rec_wide_column *cols, size_t n, int64_t period_ns,
                 int64_t max_age_ns, rec_wide_t **ret_wide);

/* Write what is still pending (the last row or raster points) and free.
   NULL is fine; returns NULL. */
rec_wide_t *rec_wide_free(rec_wide_t *w);

/* Take one record: samples and texts of the table's channels count, the
   rest are ignored.  Rows before it are written.  0, -EINVAL, -EIO. */
int rec_wide_add(rec_wide_t *w, const struct acq_item *it);

/* Write what is pending now (end of input).  0 or -EIO. */
int rec_wide_finish(rec_wide_t *w);

/* Rows written so far. */
uint64_t rec_wide_rows(const rec_wide_t *w);
