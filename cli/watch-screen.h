/* SPDX-License-Identifier: MIT */
/*
 * watch-screen.h - the screen of `railmon watch`: the rows read from a daemon's
 * "channels" answer, the daemon's clock, the title, and the live table
 * (livetable.h) drawn on the stream the caller gives; and the terminal a
 * live table is drawn on (size, raw mode, alternate screen, keys), which
 * `railmon monitor` shares.  cli/watch-cmd.c owns the options, the socket
 * and the poll.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <termios.h>

#include "cli/live-table.h"

struct cli_watch {
	const char *sock;            /* named in the title */
	struct cli_live_view view;
	struct cli_live_row *rows;   /* the last answer's channels (owned) */
	size_t nrows, cap;
	char title[1024];
	char clock[64];              /* the daemon's clock, when not synchronised */
	char buses[512];             /* buses that went away: state, reopens, blind time;
	                                TRDP buses: telegrams/s, bad, gaps, repeats, timeouts */
	struct cli_live_keys keys;   /* q, s, /, scrolling; a filter being typed */
	cli_livetable_t *table;      /* the screen's table (owned), sized by cli_watch_frame */
	size_t max;                  /* the rows the table holds */
	int64_t drawn;               /* monotonic time of the last frame */
};

/* Read a daemon's "channels" answer from f to its end into w's rows (the
   clock line into w->clock).  0; -E2BIG past 2^20 channels, -ENOMEM (the
   rows read until then are kept). */
int cli_watch_read(struct cli_watch *w, FILE *f);

/* Read a daemon's health answer (no request: stat's JSON lines) from f
   to its end: each bus that went away or came back (a state other than
   "up", or reopens) into w->buses, e.g. "vehicle up, 1 reopen, blind
   117 ms" - stat's state, reopens and blind ms columns - and every TRDP
   bus with its telegrams/s, refused headers, sequence gaps and repeats and
   timeouts (what its channels' ages cannot say); the title shows it (its
   start, cut to the width) and --once prints it whole.  Returns the buses
   said. */
unsigned cli_watch_read_buses(struct cli_watch *w, FILE *f);

/* The title line: the socket and the local time, the filter being typed,
   or err (< 0: why the daemon did not answer, "(retrying)"). */
void cli_watch_title(struct cli_watch *w, int err);

/*
 * One frame at monotonic now_ns after a read that returned err: when the
 * daemon did not answer its last values keep ageing; the table grows with
 * the daemon's channels; the title; the table on out.  0, or -ENOMEM.
 */
int cli_watch_frame(struct cli_watch *w, int err, int64_t now_ns, FILE *out);

/* The table once, every channel, no escapes (--once, not a terminal). */
void cli_watch_once(struct cli_watch *w, FILE *out);

/* Free w's rows and table (w itself is the caller's). */
void cli_watch_release(struct cli_watch *w);

/* The terminal of a live screen (watch, monitor): stdin's settings
   before raw mode. */
struct cli_term {
	struct termios saved;
	bool raw;                    /* stdin is in raw mode: keys are read */
};

/* stdout's size into view (left as it is when stdout is no terminal). */
void cli_term_size(struct cli_live_view *view);

/* When stdin is a terminal: raw (no echo, no line editing, reads that do
   not wait), the alternate screen, the cursor hidden.  Else nothing: the
   screen is drawn in place on the normal one. */
void cli_term_raw(struct cli_term *t);

/* The normal screen and cursor back, stdin as it was. */
void cli_term_restore(struct cli_term *t);

/* Keys waiting on stdin (poll said so) applied to keys and view of a
   table of nrows (cli_live_keys_feed).  False when the user quits or the
   terminal is gone (EOF, EIO after a hang-up). */
bool cli_term_keys(struct cli_term *t, struct cli_live_keys *keys, struct cli_live_view *view, size_t nrows);
