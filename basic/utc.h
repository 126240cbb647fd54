/* SPDX-License-Identifier: MIT */
/*
 * utc.h - a time in ns since the epoch as UTC text, one copy for the tree
 * (export's CSV and JSON, the wide table, the database's timestamptz
 * literals, the commands' words).
 *
 * One rule for times before the epoch: floor, at every precision.  The
 * text names the instant at or before t_ns, as date(1) and Python's
 * datetime do: -1 ns is 1969-12-31T23:59:59.999999999Z, and to the
 * millisecond 1969-12-31T23:59:59.999Z (never 1970-01-01T00:00:00.000Z
 * nor a negative fraction).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Enough for any int64_t time with 9 digits and either suffix, NUL included. */
#define BASIC_UTC_MAX 40

enum {
	BASIC_UTC_SPACE = 1 << 0, /* ' ' between date and time (SQL, hold's words), not RFC 3339's 'T' */
	BASIC_UTC_PG = 1 << 1,    /* "+00" after the time (a PostgreSQL timestamptz literal), not "Z" */
};

/*
 * "2026-12-03T07:00:00.123456789Z" and its variants into buf: digits of
 * the second's fraction 0 (no '.'), 3, 6 or 9, flags from the enum above.
 * NUL-terminated.  Returns its length, -EINVAL (NULL buf, other digits or
 * flags), -ENOSPC (len too small: BASIC_UTC_MAX always is enough),
 * -EOVERFLOW (the C library cannot break the second down).  buf is
 * written only on success.  No allocation, RT-safe.
 */
int basic_utc_format(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len);

/*
 * basic_utc_format() for a line of text: buf (len at least
 * BASIC_UTC_MAX), holding the time's text, or where it cannot be
 * written, its ns as a decimal number (something true is always said).
 * Returns buf, so it can stand in a printf's arguments.
 */
const char *basic_utc_text(int64_t t_ns, unsigned digits, unsigned flags, char *buf, size_t len);
