/* SPDX-License-Identifier: MIT */
/*
 * format.h - records as text: CSV, JSON lines and candump, one code path
 * for `railmon export` (the log) and `railmon recv` (the uplink).
 *
 * CSV and JSON lines share one schema: the same columns (keys) in the same
 * order for every kind of record, README "Output schema":
 *   vehicle, log_id, seq, time (RFC 3339 UTC, ns), time_ns, kind, bus,
 *   bus_name, channel, name, unit, value, quality, label, can_id, flags,
 *   data, event, arg, detail
 * A column that does not apply to a record's kind is empty in CSV and null
 * in JSON.  Values are written at their channel's resolution when it is
 * known, else in the shortest form that reads back to the same double
 * (rec_format_value()); CAN ids as candump writes them (3 or 8 hex digits); flags
 * as names joined by '|' ("EXT|FD|BRS").
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
	REC_FORMAT_INFLUX,    /* InfluxDB line protocol (README "InfluxDB") */
	REC_FORMAT_MAX
};

/* What the caller knows about a record besides the item itself. */
struct rec_names {
	const char *channel;   /* sample: channel name, NULL if unknown */
	const char *unit;      /* sample: unit, NULL if unknown */
	const char *label;     /* sample: value-table label, NULL if none */
	const char *bus_name;  /* the record's bus by name, NULL if unknown */
	bool has_decimals;     /* sample: its channel's resolution is known */
	unsigned decimals;     /* ... as decimals (rec_format_decimals()) */
};

#define REC_LOG_ID_MAX 16      /* bytes of a log id (REC_LOG_ID_LEN) */

/*
 * Which vehicle log a record comes from (the vehicle and log_id columns):
 * export and recv both know it from the Batch, so a ground consumer
 * mixing vehicles and a log export read alike.  The log id is written in
 * lower-case hex ("" for none).  candump lines have no room for it.
 */
struct rec_origin {
	const char *vehicle;   /* NULL is written as "" */
	const uint8_t *log_id; /* log_id_len bytes */
	size_t log_id_len;     /* 0 (none) to REC_LOG_ID_MAX */
};

/* Room for any value rec_format_double() writes, NUL included. */
#define REC_DOUBLE_MAX 32
/* Room for every CAN flag name rec_format_can_flags() writes. */
#define REC_CAN_FLAGS_MAX 32

/* v in the shortest form strtod() reads back to v exactly ("1499.3",
   "0.30000000000000004").  Returns the length, or -EINVAL for a
   non-finite v, NULL buf or len < REC_DOUBLE_MAX. */
int rec_format_double(double v, char *buf, size_t len);

/*
 * The value rule (record/README.md "Output schema"): a channel whose
 * physical value is raw * scale + offset (a DBC signal's factor and
 * offset, a Modbus channel's scale and offset) has a decimal resolution:
 * the fewest decimals that write scale exactly, or offset if it needs
 * more (0.05 -> 2, 0.1 -> 1, 1 -> 0; 0.001 with -40.5 -> 3).  Its values
 * are written at that resolution, trailing zeros dropped ("75.85", not
 * 75.85000000000001; "12" for 12.00), at most 15 significant digits; the
 * stored double does not change.  Values of no known resolution (a scale
 * no 15 decimals write, a channel the dictionary says nothing of) keep
 * the shortest round-trip form.
 */

/* Decimals of raw * scale + offset, -1 if none up to 15 write both exactly
   (or scale is 0 or either is not finite). */
int rec_format_decimals(double scale, double offset);

/* v at decimals (rule above; < 0: rec_format_double()).  Returns the
   length, or -EINVAL for a non-finite v, NULL buf or len < REC_DOUBLE_MAX. */
int rec_format_value(double v, int decimals, char *buf, size_t len);

/* A CAN item's id as every text output writes it: candump's 3 hex digits,
   8 for a 29-bit id.  Returns snprintf's length, -EINVAL for a non-CAN
   item or NULL. */
int rec_format_can_id(const struct acq_item *it, char *buf, size_t len);

/* ACQ_CAN_* flags as names joined by '|' ("" for none).  Returns the
   length, -EINVAL for NULL or len < REC_CAN_FLAGS_MAX. */
int rec_format_can_flags(unsigned flags, char *buf, size_t len);

/* Column i of the schema ("vehicle" ...), NULL past the last. */
const char *rec_format_column(size_t i);

/*
 * InfluxDB line protocol, one point per record, time in ns:
 *   railmon,vehicle=V,bus=vehicle,channel=Speed,unit=km/h value=12.5,quality="good",seq=7i T
 *   railmon_can,vehicle=V,bus=vehicle,can_id=120 data="11FC",flags="",seq=1i T
 *   railmon_event,vehicle=V,bus=65535,event=START arg=4242i,detail=0i,seq=3i T
 * Tags are the vehicle, the bus (its name, else its index), the channel
 * (its name, else its id) and unit; a value-table label is the field
 * label; a non-finite value has no value field (quality says invalid).
 * Tag text escapes ',', '=' and ' ' with a backslash; a line break in any
 * text is written as the two characters \n.
 */

/* "csv", "jsonl" (or "json"), "candump", "influx" -> *ret_fmt.  0 or -EINVAL. */
int rec_format_parse(const char *name, enum rec_format *ret_fmt);

/* Write the CSV header line (nothing for the other formats).  Returns 0,
   -EINVAL, or -EIO if the stream has an error. */
int rec_format_header(FILE *out, enum rec_format fmt);

/*
 * Write one record as one line of the schema; origin NULL writes an empty
 * vehicle and log id, names NULL: nothing known.  candump
 * writes CAN frames only, on interface "can<bus>", and no origin.
 * Returns 0; -EINVAL for a bad argument, an item of no known kind, a CAN
 * payload over 64 bytes, a log id over REC_LOG_ID_MAX bytes, or (candump)
 * a record that is not a CAN frame or a frame candump cannot express;
 * -EIO if the stream has an error.
 */
int rec_format_item(FILE *out, enum rec_format fmt, const struct acq_item *it,
                    const struct rec_names *names, const struct rec_origin *origin);

/*
 * The same lines through one output buffer (export's path): a block of
 * 256 KiB goes to out in one fwrite when full and at rec_writer_flush(),
 * so out sees nothing of a record before then; nothing else may write to
 * out meanwhile.  rec_writer_item() returns what rec_format_item() does
 * (-EIO once a block could not be written whole).
 */
typedef struct rec_writer rec_writer_t;

int rec_writer_new(FILE *out, enum rec_format fmt, rec_writer_t **ret_writer);
int rec_writer_item(rec_writer_t *w, const struct acq_item *it, const struct rec_names *names,
                    const struct rec_origin *origin);
/* What the buffer holds out to the stream (not fflush'd).  0 or -EIO. */
int rec_writer_flush(rec_writer_t *w);
/* Frees without writing: flush first.  Returns NULL. */
rec_writer_t *rec_writer_free(rec_writer_t *w);
