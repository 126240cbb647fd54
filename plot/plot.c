/* SPDX-License-Identifier: MIT */
/*
 * plot.c - the picture's data: series, the shared M4 grid of time buckets
 * (plot.h says why), events, and the axes' arithmetic the writers share.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plot/plot-private.h"

/* Widest bucket: PLOT_BUCKETS (2^12) of 2^50 ns span 2^62 ns, ~146 years,
   and the arithmetic of origin + i * width stays inside int64_t. */
#define WIDTH_MAX ((int64_t)1 << 50)

int plot_create(plot_t **out, const struct plot_opts *o)
{
	*out = NULL;
	if ((o->width && (o->width < 200 || o->width > 20000)) ||
	    (o->height && (o->height < 120 || o->height > 20000)) || o->from_ns >= o->to_ns)
		return -EINVAL;
	plot_t *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	if (o->title && !(p->title = strdup(o->title))) {
		free(p);
		return -ENOMEM;
	}
	p->o.title = p->title;
	*out = p;
	return 0;
}

void plot_free(plot_t *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->nseries; i++) {
		free(p->s[i].name);
		free(p->s[i].unit);
		free(p->s[i].b);
	}
	for (int i = 0; i < p->npanels; i++)
		free(p->panel_unit[i]);
	for (size_t i = 0; i < p->nev; i++)
		free(p->ev[i].label);
	free(p->ev);
	free(p->title);
	free(p);
}

int plot_add_series(plot_t *p, const char *name, const char *unit)
{
	if (p->nseries == PLOT_SERIES_MAX)
		return -E2BIG;
	struct plot_series *s = &p->s[p->nseries];
	s->name = strdup(name);
	s->unit = strdup(unit ? unit : "");
	s->b = calloc(PLOT_BUCKETS, sizeof(*s->b));
	if (!s->name || !s->unit || !s->b)
		goto nomem;
	s->panel = -1;
	for (int i = 0; i < p->npanels; i++)
		if (!strcmp(p->panel_unit[i], s->unit))
			s->panel = i;
	if (s->panel < 0) {
		if (!(p->panel_unit[p->npanels] = strdup(s->unit)))
			goto nomem;
		s->panel = p->npanels++;
	}
	return p->nseries++;
nomem:
	free(s->name);
	free(s->unit);
	free(s->b);
	memset(s, 0, sizeof(*s));
	return -ENOMEM;
}

static void bucket_merge(struct plot_bucket *into, const struct plot_bucket *b)
{
	if (!b->n)
		return;
	if (!into->n) {
		*into = *b;
		return;
	}
	if (b->t_first < into->t_first) {
		into->t_first = b->t_first;
		into->first = b->first;
	}
	if (b->t_last >= into->t_last) {
		into->t_last = b->t_last;
		into->last = b->last;
	}
	if (b->min < into->min) {
		into->min = b->min;
		into->t_min = b->t_min;
	}
	if (b->max > into->max) {
		into->max = b->max;
		into->t_max = b->t_max;
	}
	into->n = into->n + b->n < into->n ? UINT32_MAX : into->n + b->n;
}

/* The narrowest grid from width *w up (a power of two) whose origin is a
   multiple of its width and whose PLOT_BUCKETS buckets hold [lo, hi]
   (hi - lo at most 2^62); false past WIDTH_MAX. */
static bool grid_fit(int64_t lo, int64_t hi, int64_t *w, int64_t *o)
{
	for (;;) {
		*o = plot_floor_div(lo, *w) * *w;
		if (hi - *o < (int64_t)PLOT_BUCKETS * *w)
			return true;
		if (*w > WIDTH_MAX / 2)
			return false;
		*w *= 2;
	}
}

int plot_grid_for(int64_t lo, int64_t hi, int64_t *ret_origin, int64_t *ret_width)
{
	int64_t w = 1, o;

	if (lo > hi || (uint64_t)hi - (uint64_t)lo > ((uint64_t)1 << 62) || !grid_fit(lo, hi, &w, &o))
		return -ERANGE;
	*ret_origin = o;
	*ret_width = w;
	return 0;
}

/* The grid widened until it holds t: the narrowest grid whose width is a
   power of two and whose origin is a multiple of it that spans every point
   so far.  That grid depends on the points' extent only, never on their
   order (a log's Batches come in seq order, not time order), and a wider
   one holds the narrower one's buckets whole (its width is a multiple of
   theirs, its origin too).  false when t is beyond the widest grid. */
static bool grid_reach(plot_t *p, int64_t t)
{
	/* unsigned: t may be the whole int64_t range away from the origin */
	if (t >= p->origin && (uint64_t)t - (uint64_t)p->origin < (uint64_t)PLOT_BUCKETS * (uint64_t)p->width) {
		if (t < p->tmin)
			p->tmin = t;
		if (t > p->tmax)
			p->tmax = t;
		return true;
	}
	int64_t lo = t < p->tmin ? t : p->tmin, hi = t > p->tmax ? t : p->tmax;
	/* farther than 2^62 ns (146 years) apart: out of reach, and every
	   difference below then stays inside int64_t */
	if ((uint64_t)hi - (uint64_t)lo > ((uint64_t)1 << 62))
		return false;
	/* from the present width: a wider extent never has a narrower grid */
	int64_t w = p->width, o;
	if (!grid_fit(lo, hi, &w, &o))
		return false;
	p->tmin = lo;
	p->tmax = hi;
	int64_t ratio = w / p->width, shift = (p->origin - o) / p->width;
	for (int si = 0; si < p->nseries; si++) {
		struct plot_bucket *b = p->s[si].b;
		/* old bucket i goes to (shift + i) / ratio: into a fresh array,
		   as the two ranges overlap in both directions */
		struct plot_bucket *nb = calloc(PLOT_BUCKETS, sizeof(*nb));
		if (!nb)
			return false;
		for (int64_t i = 0; i < PLOT_BUCKETS; i++)
			if (b[i].n)
				bucket_merge(&nb[(shift + i) / ratio], &b[i]);
		free(b);
		p->s[si].b = nb;
	}
	p->origin = o;
	p->width = w;
	return true;
}

int plot_add_point(plot_t *p, int s, int64_t t, double v)
{
	if (s < 0 || s >= p->nseries)
		return -EINVAL;
	if (!isfinite(v)) {
		p->st.not_a_number++;
		return 0;
	}
	if (t < p->o.from_ns || t >= p->o.to_ns) {
		p->st.outside++;
		return 0;
	}
	if (!p->grid) {
		p->grid = true;
		p->width = 1;
		p->origin = p->tmin = p->tmax = t;
	} else if (!grid_reach(p, t)) {
		p->st.out_of_reach++;
		return 0;
	}
	struct plot_bucket *b = &p->s[s].b[((uint64_t)t - (uint64_t)p->origin) / (uint64_t)p->width];
	struct plot_bucket one = { t, t, t, t, v, v, v, v, 1 };
	bucket_merge(b, &one);
	p->s[s].points++;
	p->st.points++;
	return 0;
}

int plot_add_unseen(plot_t *p, int s, uint64_t n)
{
	if (s < 0 || s >= p->nseries)
		return -EINVAL;
	p->s[s].points += n;
	p->st.points += n;
	return 0;
}

int plot_add_event(plot_t *p, int64_t t, const char *label)
{
	if (t < p->o.from_ns || t >= p->o.to_ns)
		return 0;
	if (p->nev == PLOT_EVENTS_MAX) {
		p->st.events_dropped++;
		return 0;
	}
	if (p->nev == p->cap_ev) {
		size_t cap = p->cap_ev ? p->cap_ev * 2 : 64;
		struct plot_event *e = realloc(p->ev, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		p->ev = e;
		p->cap_ev = cap;
	}
	char *l = strdup(label ? label : "");
	if (!l)
		return -ENOMEM;
	p->ev[p->nev++] = (struct plot_event){ t, l };
	p->st.events = p->nev;
	return 0;
}

void plot_stats(const plot_t *p, struct plot_stats *st)
{
	*st = p->st;
}

uint64_t plot_series_points(const plot_t *p, int s)
{
	return s >= 0 && s < p->nseries ? p->s[s].points : 0;
}

size_t plot_events_in_view(const plot_t *p)
{
	int64_t lo, hi;
	size_t n = 0;

	if (!plot_extent(p, &lo, &hi))
		return 0;
	for (size_t i = 0; i < p->nev; i++)
		n += p->ev[i].t >= lo && p->ev[i].t <= hi;
	return n;
}

int plot_format_of(const char *path, enum plot_format *f)
{
	const char *dot = strrchr(path, '.');
	if (!dot)
		return -EINVAL;
	if (!strcasecmp(dot, ".png"))
		*f = PLOT_PNG;
	else if (!strcasecmp(dot, ".svg"))
		*f = PLOT_SVG;
	else if (!strcasecmp(dot, ".html") || !strcasecmp(dot, ".htm"))
		*f = PLOT_HTML;
	else
		return -EINVAL;
	return 0;
}

void plot_size(const plot_t *p, int *w, int *h)
{
	*w = p->o.width ? p->o.width : 1200;
	*h = p->o.height ? p->o.height : 90 + 260 * (p->npanels ? p->npanels : 1);
}

bool plot_extent(const plot_t *p, int64_t *lo, int64_t *hi)
{
	int64_t a = INT64_MAX, b = INT64_MIN;
	for (int s = 0; s < p->nseries; s++)
		for (int i = 0; i < PLOT_BUCKETS; i++) {
			const struct plot_bucket *k = &p->s[s].b[i];
			if (!k->n)
				continue;
			if (k->t_first < a)
				a = k->t_first;
			if (k->t_last > b)
				b = k->t_last;
		}
	if (a > b)
		return false;
	if (p->o.from_ns != INT64_MIN)
		a = p->o.from_ns;
	if (p->o.to_ns != INT64_MAX)
		b = p->o.to_ns;
	if (b <= a) {
		/* one instant: a second around it */
		a -= 500000000;
		b = a + 1000000000;
	}
	*lo = a;
	*hi = b;
	return true;
}

bool plot_panel_range(const plot_t *p, int panel, int64_t lo, int64_t hi, double *vmin, double *vmax)
{
	double a = INFINITY, b = -INFINITY;
	for (int s = 0; s < p->nseries; s++) {
		if (p->s[s].panel != panel)
			continue;
		for (int i = 0; i < PLOT_BUCKETS; i++) {
			const struct plot_bucket *k = &p->s[s].b[i];
			if (!k->n || k->t_last < lo || k->t_first > hi)
				continue;
			if (k->min < a)
				a = k->min;
			if (k->max > b)
				b = k->max;
		}
	}
	if (a > b)
		return false;
	if (a == b) {
		double d = fabs(a) > 1 ? fabs(a) * 0.1 : 1;
		a -= d;
		b += d;
	} else {
		double pad = (b - a) * 0.05;
		a -= pad;
		b += pad;
	}
	*vmin = a;
	*vmax = b;
	return true;
}

int64_t plot_utc_offset(const plot_t *p, int64_t t)
{
	if (!p->o.local_time)
		return 0;
	time_t s = (time_t)plot_floor_div(t, 1000000000);
	struct tm tm;
	if (!localtime_r(&s, &tm))
		return 0;
	return tm.tm_gmtoff;
}

int plot_bucket_points(const struct plot_bucket *b, int64_t t[4], double v[4])
{
	int64_t tt[4] = { b->t_first, b->t_min, b->t_max, b->t_last };
	double vv[4] = { b->first, b->min, b->max, b->last };
	int n = 0;
	for (int i = 0; i < 4; i++) {
		bool dup = false;
		for (int j = 0; j < n; j++)
			if (t[j] == tt[i] && v[j] == vv[i])
				dup = true;
		if (dup)
			continue;
		/* insertion in time order; equal times keep M4's order */
		int j = n++;
		while (j > 0 && t[j - 1] > tt[i]) {
			t[j] = t[j - 1];
			v[j] = v[j - 1];
			j--;
		}
		t[j] = tt[i];
		v[j] = vv[i];
	}
	return n;
}

int64_t plot_gap_ns(const plot_t *p, int s, int64_t lo, int64_t hi, int columns)
{
	const struct plot_series *se = &p->s[s];
	int64_t a = INT64_MAX, b = INT64_MIN;
	for (int i = 0; i < PLOT_BUCKETS; i++)
		if (se->b[i].n) {
			if (se->b[i].t_first < a)
				a = se->b[i].t_first;
			if (se->b[i].t_last > b)
				b = se->b[i].t_last;
		}
	int64_t col3 = columns > 0 ? (int64_t)((double)(hi - lo) / columns * 3) : 0;
	if (se->points < 2 || b <= a)
		return col3 > 0 ? col3 : 1;
	double avg = (double)(b - a) / (double)(se->points - 1);
	double g = avg * 20;
	if (g > 9e18)
		g = 9e18;
	return (int64_t)g > col3 ? (int64_t)g : col3;
}

/* ---- axes ---- */

static const int64_t MS = 1000000, S = 1000000000;

int64_t plot_time_step(int64_t lo, int64_t hi, int n)
{
	static const int64_t steps[] = {
		1, 2, 5, 10, 20, 50, 100, 200, 500,
		1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000,
		1000000, 2000000, 5000000, 10000000, 20000000, 50000000, 100000000, 200000000, 500000000,
		1000000000LL, 2000000000LL, 5000000000LL, 10000000000LL, 15000000000LL, 30000000000LL,
		60000000000LL, 120000000000LL, 300000000000LL, 600000000000LL, 900000000000LL, 1800000000000LL,
		3600000000000LL, 7200000000000LL, 10800000000000LL, 21600000000000LL, 43200000000000LL,
		86400000000000LL, 172800000000000LL, 604800000000000LL, 2592000000000000LL,
		31536000000000000LL,
	};
	if (n < 1)
		n = 1;
	double want = ((double)hi - (double)lo) / n;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if ((double)steps[i] >= want)
			return steps[i];
	/* beyond a year a step: whole years' worth, rounded up */
	double y = ceil(want / (double)steps[sizeof(steps) / sizeof(steps[0]) - 1]);
	return (int64_t)(y * (double)steps[sizeof(steps) / sizeof(steps[0]) - 1]);
}

int64_t plot_time_first_tick(int64_t lo, int64_t step, int64_t utc_off_s)
{
	int64_t off = utc_off_s * S;
	/* ticks on multiples of the step in the zone's time: (t + off) % step == 0 */
	int64_t k = plot_floor_div(lo + off, step);
	int64_t t = k * step - off;
	return t < lo ? t + step : t;
}

void plot_time_label(char *buf, size_t n, int64_t t, int64_t step, int64_t utc_off_s)
{
	int64_t z = t + utc_off_s * S;
	int64_t sec = plot_floor_div(z, S), frac = z - sec * S;
	time_t ts = (time_t)sec;
	struct tm tm;
	if (!gmtime_r(&ts, &tm)) {
		snprintf(buf, n, "?");
		return;
	}
	if (step >= 86400 * S)
		strftime(buf, n, "%Y-%m-%d", &tm);
	else if (step >= 60 * S && frac == 0 && tm.tm_sec == 0)
		strftime(buf, n, "%H:%M", &tm);
	else if (step >= S)
		strftime(buf, n, "%H:%M:%S", &tm);
	else if (step >= MS)
		snprintf(buf, n, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(frac / MS));
	else if (step >= 1000)
		snprintf(buf, n, "%02d.%06d", tm.tm_sec, (int)(frac / 1000));
	else
		snprintf(buf, n, "%02d.%09d", tm.tm_sec, (int)frac);
}

double plot_value_step(double lo, double hi, int n)
{
	if (n < 1)
		n = 1;
	double raw = (hi - lo) / n;
	if (!(raw > 0) || !isfinite(raw))
		return 1;
	double mag = pow(10, floor(log10(raw)));
	double r = raw / mag;
	double m = r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10;
	return m * mag;
}
