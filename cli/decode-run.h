/* SPDX-License-Identifier: MIT */
/*
 * decode-run.h - `railmon decode`'s decoder: candump lines decoded with a
 * DBC, no board file.  Every shape candump writes: its log (-l, -L) and
 * what it prints on the terminal (trace_candump_parse_screen).  Text: each line, then `Message(Signal: value unit
 * 'label', ...)` (a frame the DBC does not describe: the line alone);
 * rows: the frame and its samples in export's schema (channel = signal
 * index, named Message.Signal).  cli/decode-cmd.c parses the options, loads
 * the DBC and opens the input.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "acquisition/acq-item.h"
#include "dbc/dbc.h"
#include "record/format.h"

#define CLI_DECODE_BAD_SAID 10 /* bad lines said one by one, then only counted */

struct cli_decode {
	FILE *out;             /* the decoded lines or rows */
	FILE *err;             /* "railmon decode: SRC:LINE: not a candump line" */
	dbc_t *dbc;
	struct acq_item *samples;
	unsigned max;
	int8_t *decimals;      /* per signal, rec_format_decimals() (cli_decode_alloc) */
	bool text, decoded_only;
	enum rec_format fmt;
	uint64_t frames, decoded, bad;
	bool binary;           /* the input is no text: refused, reading stopped */
	bool after_error;      /* the line before was an error frame (-e's lines follow) */
	uint64_t seq;          /* records numbered as a log would: frame, then its samples */
};

/* Every line of in (src names it in messages) decoded onto d->out; d->dbc
   and d->samples (d->max, dbc_decode_max) are the caller's.  0, or
   -EIO when in could not be read to its end. */
int cli_decode_stream(struct cli_decode *d, FILE *in, const char *src);

/* d->samples for the most samples a frame of d->dbc decodes into, and
   d->decimals: each signal's resolution, worked out once.  0 or -ENOMEM. */
int cli_decode_alloc(struct cli_decode *d);

/* The header (rows), every line of in decoded (cli_decode_stream), then
   the totals on d->err: frames, decoded with dbc_name, lines that are not
   candump, a read error.  The exit code: 1 if a line was bad or in could
   not be read, and (one sentence) if the DBC defines no signal or in
   holds no line at all; else 0. */
int cli_decode_run(struct cli_decode *d, FILE *in, const char *src, const char *dbc_name);

/* Frees d->samples, d->decimals and d->dbc (NULL after). */
void cli_decode_release(struct cli_decode *d);
