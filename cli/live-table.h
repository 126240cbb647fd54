/* SPDX-License-Identifier: MIT */
/*
 * live-table.h - the live table of channel values that `railmon watch`
 * (from a daemon's stat socket), `railmon demo` (from its own daemon) and
 * `railmon monitor` (from a bus decoded in the command) draw: value, unit, value-table label, age and source per channel, sized
 * to the terminal, sorted, filtered, with changed and stale values marked
 * (cansniffer and `cantools monitor` are the models).
 *
 * Plain ANSI escapes, no curses: the screen is redrawn whole (cursor home,
 * each line cleared to its end), which any terminal and tmux understand.
 * Without colour (not a terminal, NO_COLOR) the marks are still there as
 * the first column: '*' changed within the last second, '~' stale.  A
 * text cut to its column ends in '>' (report/say.h RPT_CUT_MARK), a name
 * loses its start instead: '>' then leads.  With view.width > 0 the name
 * column is as wide as the longest name shown, as far as the terminal
 * lets it; width <= 0 (80, not a terminal) keeps the fixed columns.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pipeline/statserver.h"

struct cli_live_row {
	uint32_t id;               /* bus << 16 | n */
	char name[128];
	char unit[128];            /* a DBC's unit (up to 49 characters in real files) */
	char label[72];            /* the value table's text, or a text channel's (64), "" if none */
	char source[96];
	double value;
	int64_t age_ns;            /* since the value was sampled; < 0: never received */
	uint32_t quality;          /* enum acq_quality */
	bool text;                 /* a text channel: label holds its text, value is unused */
};

enum cli_live_sort {
	CLI_LIVE_SORT_ID,        /* board order: bus, then channel */
	CLI_LIVE_SORT_NAME,
	CLI_LIVE_SORT_AGE,       /* freshest first */
	CLI_LIVE_SORT_SOURCE,
	CLI_LIVE_SORT_MAX
};

struct cli_live_view {
	int width, height;         /* the terminal's; <= 0: 80 x unlimited rows */
	enum cli_live_sort sort;
	char filter[64];           /* case-insensitive substring of name, source or
	                              unit; "" shows every channel */
	double stale_s;            /* older than this: marked stale (> 0) */
	bool color;                /* bold for changed, dim for stale */
	bool clear;                /* redraw in place (cursor home), else append */
	size_t scroll;             /* first row shown */
	const char *title;         /* the first line, cut to the width */
	const char *keys;          /* the last line's help, NULL: none */
};

typedef struct cli_livetable cli_livetable_t;

/* A table that remembers the values it showed (for "changed"), for up to
   max_rows channels.  0, -EINVAL, -ENOMEM. */
int cli_livetable_new(size_t max_rows, cli_livetable_t **ret_table);
cli_livetable_t *cli_livetable_free(cli_livetable_t *t);

/*
 * Draw rows (n, in any order; the table sorts a copy of the order) on out
 * with view at monotonic time now_ns: a value that differs from the one
 * drawn for the same id before is "changed" for one second.  Returns the
 * number of rows that pass the filter.
 */
size_t cli_livetable_draw(cli_livetable_t *t, const struct cli_live_row *rows, size_t n,
                          const struct cli_live_view *view, int64_t now_ns, FILE *out);

/* A value as the table prints it: an integral value as an integer (a
   flag is 1, not 1.000), else the shortest text that reads back the same,
   at most 10 significant digits; "nan", "inf" as such. */
void cli_live_value_text(double v, char *buf, size_t len);

/* "name", "id", "age", "source" -> the sort; -EINVAL for another word. */
int cli_live_sort_parse(const char *s, enum cli_live_sort *ret_sort);
const char *cli_live_sort_name(enum cli_live_sort s);


/* A row from the stat socket's "channels" answer (one JSON line per
   channel: id, name, unit, source, label, value, age_ms, quality; our own
   escapes).  0, or -EBADMSG for a line without an id. */
int cli_live_row_parse(const char *line, struct cli_live_row *ret_row);

/* The clock line of the "channels" answer (pipeline/statserver.h) read
   back.  0, or -EBADMSG for a line that is not it (a channel's). */

int cli_live_clock_parse(const char *line, struct pl_stat_clock *ret_clock);

/* watch's keys: what is being typed as a filter. */
struct cli_live_keys {
	bool editing;              /* after '/', until Enter (apply) or Esc (clear) */
	char edit[64];
};

/*
 * Keys typed (buf[0..n), as read from a raw terminal) applied to the view
 * of a table of nrows: q quit, s the next sort, / a filter, j/k or the
 * arrows scroll, space a page, g the top.  Returns false for q.
 */
bool cli_live_keys_feed(struct cli_live_keys *k, struct cli_live_view *view, const unsigned char *buf, size_t n,
                        size_t nrows);
