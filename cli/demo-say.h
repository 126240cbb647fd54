/* SPDX-License-Identifier: MIT */
/*
 * demo-say.h - `railmon demo`'s live table and closing summary, written
 * to the stream the caller gives (cli/demo.c gives stdout).
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
struct rpt_demo_view {
	rpt_livetable_t *table;
	struct rpt_live_row *rows;
	size_t max;
	struct rpt_live_view view;
};

/* Set dv up for nchannels rows; ansi: colour unless NO_COLOR.  Returns 0
   or -ENOMEM; free with rpt_demo_view_free() either way. */
int rpt_demo_view_new(size_t nchannels, bool ansi, struct rpt_demo_view *dv);
void rpt_demo_view_free(struct rpt_demo_view *dv);

/* A channel and its latest value (lv; lv->t_ns 0: never) as a live table
   row at realtime now; label: its value table's text, or NULL. */
void rpt_demo_row(const struct pl_channel *ch, const struct pl_live *lv, const char *label, int64_t now,
                  struct rpt_live_row *ret_row);

/* Draw the first n rows of dv on out under the demo's title line; live:
   a redraw in place (a colour terminal: sized by out's window). */
void rpt_demo_table(struct rpt_demo_view *dv, size_t n, const struct rpt_run_counts *c, double elapsed,
                    bool live, FILE *out);

/* The closing summary on out, per bus kind, and the commands that read
   the log in data_dir (this very binary, by absolute paths). */
void rpt_demo_summary(FILE *out, const struct conf_board *cfg, const struct rpt_run_counts *c, double elapsed,
                      const char *data_dir);
