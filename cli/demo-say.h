/* SPDX-License-Identifier: MIT */
/*
 * demo-say.h - `railmon demo`'s live table and closing summary, written
 * to the stream the caller gives (cli/demo-cmd.c gives stdout).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/config-types.h"
#include "pipeline/channels.h"
#include "cli/live-table.h"
#include "cli/run-say.h"

/* The live table of `demo`: its rows (one per channel) and its view. */
struct cli_demo_view {
	cli_livetable_t *table;
	struct cli_live_row *rows;
	size_t max;
	struct cli_live_view view;
};

/* Set dv up for nchannels rows; ansi: colour unless NO_COLOR.  Returns 0
   or -ENOMEM; free with cli_demo_view_free() either way. */
int cli_demo_view_new(size_t nchannels, bool ansi, struct cli_demo_view *dv);
void cli_demo_view_free(struct cli_demo_view *dv);

/* A channel and its latest value (lv; lv->t_ns 0: never) as a live table
   row at realtime now; label: its value table's text, or NULL. */
void cli_demo_row(const struct pl_channel *ch, const struct pl_live *lv, const char *label, int64_t now,
                  struct cli_live_row *ret_row);

/* Draw the first n rows of dv on out under the demo's title line; live:
   a redraw in place (a colour terminal: sized by out's window). */
void cli_demo_table(struct cli_demo_view *dv, size_t n, const struct cli_run_counts *c, double elapsed,
                    bool live, FILE *out);

/* The closing summary on out, per bus kind, and the commands that read
   the log in data_dir (this very binary, by absolute paths). */
void cli_demo_summary(FILE *out, const struct conf_board *cfg, const struct cli_run_counts *c, double elapsed,
                      const char *data_dir);
