/* SPDX-License-Identifier: MIT */
/*
 * draw.c - the picture as PNG or SVG, drawn once with cairo for both
 * (cairo: a well-kept 2D library in every distribution, the same strokes
 * to pixels or to vectors).  Panels stacked over one time axis, one per
 * unit; each series drawn from its grid buckets' M4 points (plot.h).
 */
#include <cairo.h>
#include <cairo-svg.h>
#include <errno.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plot/plot-private.h"

#define M_LEFT 84
#define M_RIGHT 24
#define M_TOP 46
#define M_BOTTOM 52
#define PANEL_GAP 14

/* Ten colours told apart also by most colour-blind readers (Tableau 10). */
static const double PALETTE[10][3] = {
	{ 0.12, 0.47, 0.71 }, { 1.00, 0.50, 0.05 }, { 0.17, 0.63, 0.17 }, { 0.84, 0.15, 0.16 },
	{ 0.58, 0.40, 0.74 }, { 0.55, 0.34, 0.29 }, { 0.89, 0.47, 0.76 }, { 0.50, 0.50, 0.50 },
	{ 0.74, 0.74, 0.13 }, { 0.09, 0.75, 0.81 },
};

struct frame {
	int w, h;
	double x0, x1;          /* the plotting area's left and right */
	double top, ph;         /* first panel's top, a panel's height */
	int64_t lo, hi;
};

static double xof(const struct frame *f, int64_t t)
{
	return f->x0 + ((double)t - (double)f->lo) / ((double)f->hi - (double)f->lo) * (f->x1 - f->x0);
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double align)
{
	cairo_text_extents_t e;
	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, x - e.x_advance * align, y);
	cairo_show_text(cr, s);
}

static void draw_time_axis(cairo_t *cr, const plot_t *p, const struct frame *f, double bottom)
{
	int64_t off = plot_utc_offset(p, f->lo);
	int64_t step = plot_time_step(f->lo, f->hi, (int)((f->x1 - f->x0) / 110));
	char buf[64];
	cairo_set_font_size(cr, 11);
	for (int64_t t = plot_time_first_tick(f->lo, step, off); t <= f->hi; t += step) {
		double x = xof(f, t);
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, floor(x) + 0.5, f->top);
		cairo_line_to(cr, floor(x) + 0.5, bottom);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		plot_time_label(buf, sizeof(buf), t, step, off);
		text_at(cr, x, bottom + 15, buf, 0.5);
		if (t > INT64_MAX - step)
			break;
	}
	/* the axis title: zone and the first instant's date, so "08:15" is
	   never read without its day */
	char day[32];
	plot_time_label(day, sizeof(day), f->lo, 86400LL * 1000000000LL, off);
	snprintf(buf, sizeof(buf), "time (%s), from %s", p->o.local_time ? "local" : "UTC", day);
	cairo_set_font_size(cr, 12);
	text_at(cr, (f->x0 + f->x1) / 2, bottom + 36, buf, 0.5);
}

static void draw_panel(cairo_t *cr, const plot_t *p, const struct frame *f, int panel)
{
	double top = f->top + panel * (f->ph + PANEL_GAP), bottom = top + f->ph;
	double vmin, vmax;
	if (!plot_panel_range(p, panel, f->lo, f->hi, &vmin, &vmax)) {
		vmin = 0;
		vmax = 1;
	}
	char buf[64];
	/* value grid and labels */
	double step = plot_value_step(vmin, vmax, (int)(f->ph / 45) > 2 ? (int)(f->ph / 45) : 2);
	cairo_set_font_size(cr, 11);
	for (double v = ceil(vmin / step) * step; v <= vmax; v += step) {
		double y = bottom - (v - vmin) / (vmax - vmin) * f->ph;
		cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
		cairo_set_line_width(cr, 1);
		cairo_move_to(cr, f->x0, floor(y) + 0.5);
		cairo_line_to(cr, f->x1, floor(y) + 0.5);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
		snprintf(buf, sizeof(buf), "%.6g", fabs(v) < step * 1e-9 ? 0.0 : v);
		text_at(cr, f->x0 - 6, y + 4, buf, 1.0);
	}
	/* the unit, upright along the axis */
	const char *unit = p->panel_unit[panel];
	cairo_save(cr);
	cairo_set_font_size(cr, 12);
	cairo_translate(cr, 16, (top + bottom) / 2);
	cairo_rotate(cr, -M_PI / 2);
	text_at(cr, 0, 0, unit[0] ? unit : "(no unit)", 0.5);
	cairo_restore(cr);

	/* the series, clipped to the panel */
	cairo_save(cr);
	cairo_rectangle(cr, f->x0, top, f->x1 - f->x0, f->ph);
	cairo_clip(cr);
	int columns = (int)(f->x1 - f->x0);
	int legend = 0;
	for (int s = 0; s < p->nseries; s++) {
		const struct plot_series *se = &p->s[s];
		if (se->panel != panel)
			continue;
		const double *c = PALETTE[s % 10];
		cairo_set_source_rgb(cr, c[0], c[1], c[2]);
		cairo_set_line_width(cr, 1.3);
		int64_t gap = plot_gap_ns(p, s, f->lo, f->hi, columns);
		bool have = false, dots = se->points < (uint64_t)columns / 8;
		int64_t tprev = 0;
		for (int i = 0; i < PLOT_BUCKETS; i++) {
			int64_t t[4];
			double v[4];
			int n = se->b[i].n ? plot_bucket_points(&se->b[i], t, v) : 0;
			for (int k = 0; k < n; k++) {
				double x = xof(f, t[k]), y = bottom - (v[k] - vmin) / (vmax - vmin) * f->ph;
				if (have && t[k] - tprev <= gap)
					cairo_line_to(cr, x, y);
				else
					cairo_move_to(cr, x, y);
				/* a lone point still shows: a zero-length stroke with round caps */
				cairo_line_to(cr, x, y);
				have = true;
				tprev = t[k];
			}
		}
		cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
		cairo_stroke(cr);
		if (dots) {
			for (int i = 0; i < PLOT_BUCKETS; i++) {
				int64_t t[4];
				double v[4];
				int n = se->b[i].n ? plot_bucket_points(&se->b[i], t, v) : 0;
				for (int k = 0; k < n; k++) {
					double y = bottom - (v[k] - vmin) / (vmax - vmin) * f->ph;
					cairo_arc(cr, xof(f, t[k]), y, 2.2, 0, 2 * M_PI);
					cairo_fill(cr);
				}
			}
		}
		/* legend entry: colour, name [unit] */
		double ly = top + 16 + 16 * legend++;
		cairo_set_font_size(cr, 12);
		snprintf(buf, sizeof(buf), "%s", se->name);
		cairo_text_extents_t e;
		cairo_text_extents(cr, buf, &e);
		cairo_set_source_rgba(cr, 1, 1, 1, 0.8);
		cairo_rectangle(cr, f->x0 + 6, ly - 12, 30 + e.x_advance, 16);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, c[0], c[1], c[2]);
		cairo_set_line_width(cr, 3);
		cairo_move_to(cr, f->x0 + 10, ly - 4);
		cairo_line_to(cr, f->x0 + 28, ly - 4);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
		cairo_move_to(cr, f->x0 + 32, ly);
		cairo_show_text(cr, buf);
	}
	cairo_restore(cr);

	/* frame */
	cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, f->x0 + 0.5, top + 0.5, f->x1 - f->x0 - 1, f->ph - 1);
	cairo_stroke(cr);
}

static void draw_events(cairo_t *cr, const plot_t *p, const struct frame *f, double bottom)
{
	static const double dash[] = { 4, 3 };
	cairo_set_font_size(cr, 10);
	size_t labelled = 0;
	for (size_t i = 0; i < p->nev; i++) {
		const struct plot_event *e = &p->ev[i];
		if (e->t < f->lo || e->t > f->hi)
			continue;
		double x = floor(xof(f, e->t)) + 0.5;
		cairo_set_source_rgba(cr, 0.6, 0.1, 0.1, 0.7);
		cairo_set_line_width(cr, 1);
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, x, f->top);
		cairo_line_to(cr, x, bottom);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		if (labelled < PLOT_EVENT_LABELS_MAX && e->label[0]) {
			/* two rows above the panels, so neighbours do not overwrite */
			double y = f->top - 6 - 12 * (double)(labelled % 2);
			text_at(cr, x, y, e->label, 0.5);
			labelled++;
		}
	}
}

static void draw(cairo_t *cr, const plot_t *p, int w, int h)
{
	struct frame f = { .w = w, .h = h, .x0 = M_LEFT, .x1 = w - M_RIGHT, .top = M_TOP };
	int panels = p->npanels ? p->npanels : 1;
	f.ph = (h - M_TOP - M_BOTTOM - PANEL_GAP * (panels - 1)) / (double)panels;
	plot_extent(p, &f.lo, &f.hi);
	double bottom = f.top + panels * f.ph + (panels - 1) * PANEL_GAP;

	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	if (p->title) {
		cairo_set_source_rgb(cr, 0, 0, 0);
		cairo_set_font_size(cr, 14);
		text_at(cr, M_LEFT, 18, p->title, 0);
	}
	draw_time_axis(cr, p, &f, bottom);
	for (int i = 0; i < panels; i++)
		draw_panel(cr, p, &f, i);
	draw_events(cr, p, &f, bottom);
}

static cairo_status_t to_file(void *closure, const unsigned char *data, unsigned int len)
{
	return fwrite(data, 1, len, closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int plot_draw_cairo(const plot_t *p, const char *path, enum plot_format fmt)
{
	int w, h;
	plot_size(p, &w, &h);
	FILE *out = fopen(path, "wb");
	if (!out)
		return -errno;
	cairo_surface_t *sf = fmt == PLOT_SVG ? cairo_svg_surface_create_for_stream(to_file, out, w, h)
	                                      : cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
	int r = 0;
	if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
		r = -ENOMEM;
		goto out;
	}
	cairo_t *cr = cairo_create(sf);
	draw(cr, p, w, h);
	cairo_status_t st = cairo_status(cr);
	cairo_destroy(cr);
	if (st == CAIRO_STATUS_SUCCESS && fmt == PLOT_PNG)
		st = cairo_surface_write_to_png_stream(sf, to_file, out);
	cairo_surface_finish(sf);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(sf);
	if (st != CAIRO_STATUS_SUCCESS)
		r = st == CAIRO_STATUS_WRITE_ERROR ? -EIO : -ENOMEM;
out:
	cairo_surface_destroy(sf);
	/* the font caches cairo and fontconfig keep for the process: a picture
	   is made once per command, and a leak checker must see none */
	cairo_debug_reset_static_data();
	FcFini();
	if (fclose(out) != 0 && !r)
		r = -errno;
	if (r)
		unlink(path);
	return r;
}
