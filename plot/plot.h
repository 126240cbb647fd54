/* SPDX-License-Identifier: MIT */
/*
 * plot.h - `railmon plot`'s picture: time series of channels drawn to a
 * PNG, an SVG or one self-contained HTML page (uPlot, zoomable), with the
 * time axis in UTC or local time, units on the axes and events marked.
 *
 * Memory stays bounded whatever the number of samples: the points of
 * every series go into one shared grid of PLOT_BUCKETS time buckets, each
 * keeping its first, last, minimum and maximum point (M4 aggregation).
 * The grid's bucket width doubles when a point falls outside it, so a
 * day of 100 Hz samples costs the same as a minute.  Drawn at most one
 * bucket per pixel column, the four points of each bucket give exactly
 * the line a plot of every sample would: a one-sample spike shows.
 *
 * Series with the same unit share a panel (one y axis, its unit as
 * title); panels are stacked over one time axis.  Points arrive in any
 * order (a log's Batches are in seq order, not always in time order).
 * Nothing here prints: the writers return -errno, and what was left out
 * (NaN values, points out of the grid's reach, events over the cap) is
 * counted (plot_stats).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PLOT_BUCKETS 4096      /* grid buckets; more than any picture's columns */
#define PLOT_SERIES_MAX 32     /* channels in one picture: more is unreadable */
#define PLOT_EVENTS_MAX 10000  /* events kept; their lines are drawn, up to
                                  PLOT_EVENT_LABELS_MAX of them labelled */
#define PLOT_EVENT_LABELS_MAX 64

enum plot_format { PLOT_PNG, PLOT_SVG, PLOT_HTML };

struct plot_opts {
	int width, height;   /* pixels (PNG, SVG user units); 0: 1200 wide, 260 per panel */
	bool local_time;     /* time axis in local time (TZ), else UTC */
	const char *title;   /* NULL: none */
	int64_t from_ns, to_ns; /* the time axis; INT64_MIN / INT64_MAX: the data's extent */
};

struct plot_stats {
	uint64_t points;      /* points taken */
	uint64_t not_a_number; /* NaN or infinite values, left out */
	uint64_t out_of_reach; /* points beyond the grid's ~146-year span */
	uint64_t outside;     /* points outside --from/--to, left out */
	uint64_t events, events_dropped; /* events kept; over PLOT_EVENTS_MAX */
};

typedef struct plot plot_t;

/* A picture of no series yet.  0 or -ENOMEM / -EINVAL (a size below 200x120
   or over 20000 pixels, from >= to). */
int plot_create(plot_t **out, const struct plot_opts *o);
void plot_free(plot_t *p);

/* A series; its index (>= 0), or -E2BIG past PLOT_SERIES_MAX, -ENOMEM. */
int plot_add_series(plot_t *p, const char *name, const char *unit);

/* One point of series s.  0, or -EINVAL for a series that is not there.
   Points left out are counted, not refused: the picture goes on. */
int plot_add_point(plot_t *p, int s, int64_t t_ns, double v);

/*
 * n points of series s counted but not given: samples the caller knows
 * are none of their grid bucket's first, last, lowest or highest (plot
 * --db's rollup read, cli/plot-cmd.c), so the picture is the one all
 * points would draw: the points given are the ones that set each bucket,
 * in time order (then seq), and those counted here only weigh in the
 * series' count (its gap limit, its dots, the count said).  0, -EINVAL
 * for a series that is not there.
 */
int plot_add_unseen(plot_t *p, int s, uint64_t n);

/*
 * The grid a set of points spanning [lo, hi] ends in, whatever their
 * order: bucket i of every series covers [origin + i * width, + width),
 * width a power of two (ns).  What the picture draws of a bucket is its
 * first, last, lowest and highest point, so a reader choosing which
 * samples to give (plot_add_unseen) must know it.  0, or -ERANGE for
 * lo > hi or a span beyond the grid's reach (~146 years).
 */
int plot_grid_for(int64_t lo, int64_t hi, int64_t *ret_origin, int64_t *ret_width);

/* An event (a vertical line, labelled while there are few).  0 or -ENOMEM. */
int plot_add_event(plot_t *p, int64_t t_ns, const char *label);

void plot_stats(const plot_t *p, struct plot_stats *st);
/* Points kept for series s (its samples, whatever the grid merged). */
uint64_t plot_series_points(const plot_t *p, int s);

/* Events inside the time axis the picture will have (the others are kept
   but not drawn: a replay's START is at the time of the replay). */
size_t plot_events_in_view(const plot_t *p);

/* PNG, SVG or HTML from the file name's ending; -EINVAL for another. */
int plot_format_of(const char *path, enum plot_format *f);

/* The picture written to path.  0, -ENODATA when there is nothing to draw
   (no point in any series), -ENOTSUP when this build has no PNG/SVG
   (cairo) or HTML (uPlot) writer, or the -errno of the write. */
int plot_write(const plot_t *p, const char *path, enum plot_format f);

/* ---- what the writers share (plot-private.h has the rest) ---- */

/* A time axis: ticks at a round step covering [lo, hi] with about n of
   them.  The step in ns, the first tick (>= lo, on a multiple of the
   step in the chosen time zone: utc_off_s is added before rounding).  */
int64_t plot_time_step(int64_t lo, int64_t hi, int n);
int64_t plot_time_first_tick(int64_t lo, int64_t step, int64_t utc_off_s);
/* A tick's label at the step's precision: "2026-12-03" for day steps,
   "08:15" for minutes, "08:15:30", "08:15:30.250", "30.250125" (s.us) below
   a millisecond.  utc_off_s as above.  Writes at most n bytes. */
void plot_time_label(char *buf, size_t n, int64_t t, int64_t step, int64_t utc_off_s);

/* A value axis: a round step (1, 2 or 5 x 10^k) for about n ticks over
   [lo, hi]. */
double plot_value_step(double lo, double hi, int n);

/* ---- which seconds of a database the picture needs (plan.c) ---- */

/*
 * plot --db over a long time reads the ground's per-second rollup
 * (rollup_summary_1s: per channel and second the samples, the ones that
 * are invalid or not a number, the lowest and highest of the others) and
 * the raw rows of only the seconds that can hold a point the picture
 * draws: a grid bucket's first, last, lowest or highest sample (with its
 * time, which no rollup holds).  A second is read whole when
 *   - it is not wholly inside [from, to) (the window cuts it),
 *   - it crosses a bucket's edge (its samples go to two buckets), or
 *   - among its bucket's other seconds it is the first, the last, the
 *     earliest with the bucket's lowest value or the earliest with the
 *     highest (ties: the earliest sample wins, as in plot_add_point).
 * Of any other second with samples that are invalid or not a number,
 * those only are read (the raw path counts the two apart; they draw
 * nothing).  Each other sample is none of those four points: counted
 * (plot_add_unseen), not read.  Given the rows read in time order (then
 * seq), the grid ends in the same buckets as from every row.
 */
struct plot_second {
	int64_t t_ns;        /* the second's start (a multiple of 10^9 ns) */
	uint64_t n, n_bad;   /* samples; invalid or not finite */
	double min, max;     /* over the n - n_bad others */
};

/* A second to read: all its rows, or (whole false) its invalid and
   not-finite ones only. */
struct plot_read {
	int64_t t_ns;
	bool whole;
};

typedef struct plot_plan plot_plan_t;

/* A plan for one series on the grid (origin, width) (plot_grid_for of
   the span of every valid sample of the picture) and the window [from,
   to).  0, -EINVAL (width not a power of two), -ENOMEM. */
int plot_plan_new(plot_plan_t **ret, int64_t origin, int64_t width, int64_t from_ns, int64_t to_ns);
plot_plan_t *plot_plan_free(plot_plan_t *pl);

/* The next second of the rollup, in time order (later than the last).
   0, -EINVAL (out of order, n_bad > n), -ENOMEM. */
int plot_plan_take(plot_plan_t *pl, const struct plot_second *sec);

/* The seconds to read whose choice is final (all of them after
   plot_plan_end), ascending, each once, from *ret_reads (valid until the
   next call; the plan forgets them).  Their count. */
size_t plot_plan_due(plot_plan_t *pl, const struct plot_read **ret_reads);
/* The last bucket closed: every second's choice final. */
int plot_plan_end(plot_plan_t *pl);

struct plot_plan_counts {
	uint64_t unseen;     /* valid samples not read (plot_add_unseen) */
	uint64_t seconds;    /* seconds taken */
	uint64_t whole, bad; /* seconds read whole; for their bad samples only */
};
void plot_plan_counts(const plot_plan_t *pl, struct plot_plan_counts *ret);
