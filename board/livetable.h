/* SPDX-License-Identifier: MIT */
/*
 * livetable.h - the live table of channel values that `railmon watch`
 * (from a daemon's stat socket) and `railmon demo` (from its own daemon)
 * draw: value, unit, value-table label, age and source per channel, sized
 * to the terminal, sorted, filtered, with changed and stale values marked
 * (cansniffer and `cantools monitor` are the models).
 *
 * Plain ANSI escapes, no curses: the screen is redrawn whole (cursor home,
 * each line cleared to its end), which any terminal and tmux understand.
 * Without colour (not a terminal, NO_COLOR) the marks are still there as
 * the first column: '*' changed within the last second, '~' stale.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct board_live_row {
	uint32_t id;               /* bus << 16 | n */
	char name[128];
	char unit[16];
	char label[72];            /* the value table's text, or a text channel's (64), "" if none */
	char source[96];
	double value;
	int64_t age_ns;            /* since the value was sampled; < 0: never received */
	uint32_t quality;          /* enum acq_quality */
	bool text;                 /* a text channel: label holds its text, value is unused */
};

enum board_live_sort {
	BOARD_LIVE_SORT_ID,        /* board order: bus, then channel */
	BOARD_LIVE_SORT_NAME,
	BOARD_LIVE_SORT_AGE,       /* freshest first */
	BOARD_LIVE_SORT_SOURCE,
	BOARD_LIVE_SORT_MAX
};

struct board_live_view {
	int width, height;         /* the terminal's; <= 0: 80 x unlimited rows */
	enum board_live_sort sort;
	char filter[64];           /* case-insensitive substring of name, source or
	                              unit; "" shows every channel */
	double stale_s;            /* older than this: marked stale (> 0) */
	bool color;                /* bold for changed, dim for stale */
	bool clear;                /* redraw in place (cursor home), else append */
	size_t scroll;             /* first row shown */
	const char *title;         /* the first line, cut to the width */
	const char *keys;          /* the last line's help, NULL: none */
};

typedef struct board_livetable board_livetable_t;

/* A table that remembers the values it showed (for "changed"), for up to
   max_rows channels.  0, -EINVAL, -ENOMEM. */
int board_livetable_new(size_t max_rows, board_livetable_t **ret_table);
board_livetable_t *board_livetable_free(board_livetable_t *t);

/*
 * Draw rows (n, in any order; the table sorts a copy of the order) on out
 * with view at monotonic time now_ns: a value that differs from the one
 * drawn for the same id before is "changed" for one second.  Returns the
 * number of rows that pass the filter.
 */
size_t board_livetable_draw(board_livetable_t *t, const struct board_live_row *rows, size_t n,
                            const struct board_live_view *view, int64_t now_ns, FILE *out);

/* A value as the table prints it: an integral value as an integer (a
   flag is 1, not 1.000), else the shortest text that reads back the same,
   at most 10 significant digits; "nan", "inf" as such. */
void board_live_value_text(double v, char *buf, size_t len);

/* "name", "id", "age", "source" -> the sort; -EINVAL for another word. */
int board_live_sort_parse(const char *s, enum board_live_sort *ret_sort);
const char *board_live_sort_name(enum board_live_sort s);
