/* SPDX-License-Identifier: MIT */
/*
 * plot-private.h - the grid of plot.c as its writers (draw.c, html.c)
 * read it.  Not for use outside plot/.
 */
#pragma once

#include "plot/plot.h"

/* a / b rounded towards minus infinity (times before the epoch) */
static inline int64_t plot_floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* One grid bucket of one series: its first, last, lowest and highest
   point (M4).  n == 0: empty. */
struct plot_bucket {
	int64_t t_first, t_last, t_min, t_max;
	double first, last, min, max;
	uint32_t n;
};

struct plot_series {
	char *name, *unit;
	int panel;               /* index of its unit's panel */
	uint64_t points;
	struct plot_bucket *b;   /* PLOT_BUCKETS */
};

struct plot_event {
	int64_t t;
	char *label;
};

struct plot {
	struct plot_opts o;
	char *title;
	struct plot_series s[PLOT_SERIES_MAX];
	int nseries;
	char *panel_unit[PLOT_SERIES_MAX];
	int npanels;
	bool grid;               /* origin/width set by a first point */
	int64_t origin, width;   /* bucket i covers [origin + i*width, +width) */
	int64_t tmin, tmax;      /* the extent of the points so far */
	struct plot_event *ev;
	size_t nev, cap_ev;
	struct plot_stats st;
};

/* The time axis drawn: the options' from/to, else the data's extent (a
   single instant widened by a second).  false when no series has a point. */
bool plot_extent(const plot_t *p, int64_t *lo, int64_t *hi);
/* Value range of a panel's points within [lo, hi], padded 5% (a flat
   line gets +-1 around its value).  false when the panel has no point. */
bool plot_panel_range(const plot_t *p, int panel, int64_t lo, int64_t hi, double *vmin, double *vmax);
/* The offset of the time axis's zone at t (0 in UTC). */
int64_t plot_utc_offset(const plot_t *p, int64_t t);
/* A bucket's up to four points in time order; their number. */
int plot_bucket_points(const struct plot_bucket *b, int64_t t[4], double v[4]);
/* The gap in time beyond which a series' line is broken (no sample in
   between): 20 average sample spacings, at least the time of 3 columns. */
int64_t plot_gap_ns(const plot_t *p, int s, int64_t lo, int64_t hi, int columns);
/* Width and height of the picture (the options', or the defaults). */
void plot_size(const plot_t *p, int *w, int *h);

int plot_draw_cairo(const plot_t *p, const char *path, enum plot_format f);
int plot_write_html(const plot_t *p, FILE *f);

/* uPlot's built files as the build embedded them (plot-uplot.c, made by
   embed-uplot.py), or NULL in a build without them. */
extern const char *const plot_uplot_js;
extern const char *const plot_uplot_css;
