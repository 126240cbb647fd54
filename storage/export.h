/* SPDX-License-Identifier: MIT */
/*
 * export.h - records as text: CSV and JSON lines.
 *
 * Pure formatting of acq_items (as decoded from the log) with the names the
 * caller resolved; one line per record, no allocation, safe on any field
 * values (strings are escaped, non-finite numbers written as null/empty).
 * candump output is bus/candump.h's job.
 */
#pragma once

#include <stdio.h>

#include "acquisition/acq-item.h"

enum stor_export_format {
	STOR_EXPORT_CSV = 0,
	STOR_EXPORT_JSONL,
	STOR_EXPORT_FORMAT_MAX
};

/* What the caller knows about a record besides the item itself. */
struct stor_export_names {
	const char *channel;   /* sample: channel name, NULL if unknown */
	const char *unit;      /* sample: unit, NULL if unknown */
	const char *label;     /* sample: value-table label, NULL if none */
	const char *event;     /* event: code name, NULL if unknown */
};

/* Write the CSV header line (nothing for JSON lines).  Returns 0 or -errno. */
int stor_export_header(FILE *out, enum stor_export_format fmt);

/* Write one record as one line.  Returns 0, -EINVAL, or -errno of the write. */
int stor_export_item(FILE *out, enum stor_export_format fmt, const struct acq_item *it,
                     const struct stor_export_names *names);

/* ISO 8601 UTC with nanoseconds ("2026-12-03T07:00:00.123456789Z") into buf
   (at least 32 bytes).  Returns buf. */
char *stor_export_time(int64_t t_ns, char *buf, size_t len);
