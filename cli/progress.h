/* SPDX-License-Identifier: MIT */
/*
 * progress.h - the progress line of the long commands (export, replay,
 * recv, verify) on stderr: "CMD: 12.3 MB of 45.6 MB (27%), 80.1 MB/s,
 * 0:01 left", redrawn in place with \r at most 4 times a second and
 * cleared at the end, only when stderr is a terminal and not --quiet.  The
 * engines (report/, evidence/, storage/) only call the callback with what
 * is done of a total (storage/stor.h stor_progress_fn); they never print.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum cli_progress_unit {
	CLI_PROGRESS_BYTES = 0,  /* "12.3 MB of 45.6 MB", "MB/s" */
	CLI_PROGRESS_FRAMES,     /* "1200 of 5000 frames", "frames/s" */
	CLI_PROGRESS_RECORDS,    /* "1200 records", "records/s" (no total) */
};

struct cli_progress {
	FILE *err;
	const char *cmd;
	enum cli_progress_unit unit;
	bool on;                 /* err is a terminal and not --quiet */
	bool drawn;              /* a line is on the screen: clear it */
	int64_t t0_ns, last_ns;  /* start; the last draw */
};

/* Set p up for command cmd (a string that outlives p); it draws only if
   err is a terminal and quiet is false. */
void cli_progress_init(struct cli_progress *p, FILE *err, const char *cmd, enum cli_progress_unit unit,
                       bool quiet);

/* The engines' callback (ctx: a struct cli_progress): done of total
   (total 0: unknown, a rate line).  Draws on the first call, then at most
   every 250 ms; done == total clears the line (that part is over). */
void cli_progress_update(void *ctx, uint64_t done, uint64_t total);

/* The same without the clear at done == total (replay: all frames read,
   the daemon still storing them). */
void cli_progress_show(struct cli_progress *p, uint64_t done, uint64_t total);

/* Clear the line if one was drawn (before other words go to the terminal,
   and at the end). */
void cli_progress_clear(struct cli_progress *p);
