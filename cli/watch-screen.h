/* SPDX-License-Identifier: MIT */
/*
 * watch.h - the screen of `railmon watch`: the rows read from a daemon's
 * "channels" answer, the daemon's clock, the title, and the live table
 * (livetable.h) drawn on the stream the caller gives.  cli/watch.c owns
 * the options, the socket and the terminal (raw mode, size, keys, poll).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/live-table.h"

struct rpt_watch {
	const char *sock;            /* named in the title */
	struct rpt_live_view view;
	struct rpt_live_row *rows;   /* the last answer's channels (owned) */
	size_t nrows, cap;
	char title[256];
	char clock[64];              /* the daemon's clock, when not synchronised */
	struct rpt_live_keys keys;   /* q, s, /, scrolling; a filter being typed */
	rpt_livetable_t *table;      /* the screen's table (owned), sized by rpt_watch_frame */
	size_t max;                  /* the rows the table holds */
	int64_t drawn;               /* monotonic time of the last frame */
};

/* Read a daemon's "channels" answer from f to its end into w's rows (the
   clock line into w->clock).  0; -E2BIG past 2^20 channels, -ENOMEM (the
   rows read until then are kept). */
int rpt_watch_read(struct rpt_watch *w, FILE *f);

/* The title line: the socket and the local time, the filter being typed,
   or err (< 0: why the daemon did not answer, "(retrying)"). */
void rpt_watch_title(struct rpt_watch *w, int err);

/*
 * One frame at monotonic now_ns after a read that returned err: when the
 * daemon did not answer its last values keep ageing; the table grows with
 * the daemon's channels; the title; the table on out.  0, or -ENOMEM.
 */
int rpt_watch_frame(struct rpt_watch *w, int err, int64_t now_ns, FILE *out);

/* The table once, every channel, no escapes (--once, not a terminal). */
void rpt_watch_once(struct rpt_watch *w, FILE *out);

/* Free w's rows and table (w itself is the caller's). */
void rpt_watch_release(struct rpt_watch *w);
