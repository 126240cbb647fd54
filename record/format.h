/* SPDX-License-Identifier: MIT */
/*
 * format.h - records as text: CSV, JSON lines and candump, one code path
 * for `railmon export` (the log) and `railmon recv` (the uplink).
 *
 * One line per record, no allocation, safe on any field values: strings
 * are escaped (basic/escape.h), non-finite numbers written as null or an
 * empty field, a CAN frame candump cannot express refused.  The caller
 * resolves channel names; kind, quality and event names are record/names.h's.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "acquisition/acq-item.h"

enum rec_format {
	REC_FORMAT_CSV = 0,   /* a header line, then one row per record */
	REC_FORMAT_JSONL,     /* one JSON object per line */
	REC_FORMAT_CANDUMP,   /* CAN frames only, as candump -l writes them */
	REC_FORMAT_MAX
};

/* The longest candump line rec_candump_format() writes, NUL included,
   with an interface name of up to 15 characters. */
#define REC_CANDUMP_LINE_MAX 256

/* What the caller knows about a record besides the item itself. */
struct rec_names {
	const char *channel;   /* sample: channel name, NULL if unknown */
	const char *unit;      /* sample: unit, NULL if unknown */
	const char *label;     /* sample: value-table label, NULL if none */
};

#define REC_LOG_ID_MAX 16      /* bytes of a log id (REC_LOG_ID_LEN) */

/*
 * Which vehicle log a record comes from: recv's output mixes vehicles and
 * logs, so it says so in three more columns (CSV: vehicle, log_id,
 * historical, after export's) or keys (JSON lines: the last three).  The
 * log id is written in lower-case hex ("" for none), historical as 0/1 in
 * CSV and false/true in JSON.  candump lines have no room for it.
 */
struct rec_origin {
	const char *vehicle;   /* NULL is written as "" */
	const uint8_t *log_id; /* log_id_len bytes */
	size_t log_id_len;     /* 0 (none) to REC_LOG_ID_MAX */
	bool historical;       /* sent from the vehicle's backlog */
};

/* "csv", "jsonl" (or "json"), "candump" -> *ret_fmt.  0 or -EINVAL. */
int rec_format_parse(const char *name, enum rec_format *ret_fmt);

/* Write the CSV header line, with the origin columns if rows will have
   them (nothing for the other formats).  Returns 0, -EINVAL, or -EIO if
   the stream has an error. */
int rec_format_header(FILE *out, enum rec_format fmt, bool origin);

/*
 * Write one record as one line: export's layout, then origin's columns
 * unless origin is NULL (names may be NULL too: nothing known).  candump
 * writes CAN frames only, on interface "can<bus>", and no origin.
 * Returns 0; -EINVAL for a bad argument, an item of no known kind, a CAN
 * payload over 64 bytes, a log id over REC_LOG_ID_MAX bytes, or (candump)
 * a record that is not a CAN frame or a frame candump cannot express;
 * -EIO if the stream has an error.
 */
int rec_format_item(FILE *out, enum rec_format fmt, const struct acq_item *it,
                    const struct rec_names *names, const struct rec_origin *origin);

/*
 * Format a CAN item as one candump line ending in '\n', NUL-terminated, in
 * buf (REC_CANDUMP_LINE_MAX with an interface name of up to 15 characters
 * is always enough).  Returns the length without the NUL, -ENOBUFS if buf
 * is too small (nothing useful written), -EINVAL for NULL arguments, an
 * empty or blank-containing ifname, a non-CAN item, a negative t_ns, or a
 * frame the format cannot express (id/length out of range, FD with
 * RTR/ERR).  bus_candump_parse() reads the line back to the same item.
 */
int rec_candump_format(const struct acq_item *item, const char *ifname, char *buf, size_t len);
