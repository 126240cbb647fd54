/* SPDX-License-Identifier: MIT */
/*
 * range.h - gap repair's range line, the one parser and formatter of it.
 * "<log id, 32 hex digits> <first seq> <last seq>", a line per range, in
 * both directions: the ground asks a vehicle for the ranges it misses
 * (railmon/<vehicle>/resend, ground/repair.c writes them, uplink/forward.c
 * reads them) and the vehicle answers that ranges are gone
 * (railmon/<vehicle>/gone, the other way round).  uplink/ owns the
 * protocol; ground/ includes this header.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"

/* The longest line upl_range_format() writes: 32 digits, two 20-digit
   seqs, two blanks, '\n' and the NUL. */
#define UPL_RANGE_LINE_MAX (2 * REC_LOG_ID_LEN + 1 + 20 + 1 + 20 + 1 + 1)

/* [first, last] of the log log_id; 1 <= first <= last. */
struct upl_range {
	uint8_t log_id[REC_LOG_ID_LEN];
	uint64_t first, last;
};

/*
 * One line (the n bytes at line, without its '\n') into *ret: exactly 32
 * hex digits (either case), one blank, the first seq, one blank, the last
 * seq, in decimal digits only; nothing before or after.  0, or -EINVAL
 * (anything else: a sign, another blank, a seq of 0 or past UINT64_MAX,
 * last before first), *ret then unwritten.
 */
int upl_range_parse(const char *line, size_t n, struct upl_range *ret);

/*
 * r as one line ending in '\n' (log id in lower-case hex) into buf, NUL-
 * terminated.  Its length (without the NUL), -EINVAL (NULL, or a range
 * upl_range_parse() would refuse), -ENOSPC (len below what the line
 * needs; UPL_RANGE_LINE_MAX always is enough).
 */
int upl_range_format(const struct upl_range *r, char *buf, size_t len);

/* Decimal digits at *p (up to end) into *ret: at least one, no sign, no
   overflow.  Moves *p past them.  0 or -EINVAL.  (The request line's
   times, request.h, too.) */
int upl_decimal_parse(const char **p, const char *end, uint64_t *ret);
