/* SPDX-License-Identifier: MIT */
/*
 * test-plot.c - plot/'s grid and axes: points in any order give the same
 * buckets, a one-sample spike survives a million samples, the grid's
 * reach, what is left out is counted, the time and value ticks.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot-private.h"
#include "tests/lib/tlib.h"

static const int64_t MS = 1000000, S = 1000000000;

static plot_t *mk(void)
{
	struct plot_opts o = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	plot_t *p;
	CHECK(plot_create(&p, &o) == 0);
	return p;
}

/* the same points in time order and shuffled: the same buckets */
static void test_order(void)
{
	enum { N = 100000 };
	int64_t *t = malloc(N * sizeof(*t));
	for (int i = 0; i < N; i++)
		t[i] = 1764748800 * S + (int64_t)i * MS;
	plot_t *a = mk(), *b = mk();
	CHECK(plot_add_series(a, "x", "bar") == 0);
	CHECK(plot_add_series(b, "x", "bar") == 0);
	for (int i = 0; i < N; i++)
		CHECK(plot_add_point(a, 0, t[i], sin(i / 300.0)) == 0);
	srand(7);
	int *idx = malloc(N * sizeof(*idx));
	for (int i = 0; i < N; i++)
		idx[i] = i;
	for (int i = N - 1; i > 0; i--) {
		int j = rand() % (i + 1), k = idx[i];
		idx[i] = idx[j];
		idx[j] = k;
	}
	for (int i = 0; i < N; i++)
		CHECK(plot_add_point(b, 0, t[idx[i]], sin(idx[i] / 300.0)) == 0);
	CHECK(a->origin == b->origin && a->width == b->width, "%lld/%lld vs %lld/%lld", (long long)a->origin,
	      (long long)a->width, (long long)b->origin, (long long)b->width);
	int used = 0;
	for (int i = 0; i < PLOT_BUCKETS; i++) {
		const struct plot_bucket *x = &a->s[0].b[i], *y = &b->s[0].b[i];
		CHECK(x->n == y->n && x->t_first == y->t_first && x->t_last == y->t_last && x->min == y->min &&
		      x->max == y->max && x->t_min == y->t_min && x->t_max == y->t_max && x->first == y->first &&
		      x->last == y->last, "bucket %d", i);
		used += x->n > 0;
	}
	/* 100 s over 4096 buckets of a power-of-two width: at least half used */
	CHECK(used >= PLOT_BUCKETS / 2, "%d buckets used", used);
	CHECK(plot_series_points(a, 0) == N && plot_series_points(b, 0) == N);
	uint64_t total = 0;
	for (int i = 0; i < PLOT_BUCKETS; i++)
		total += a->s[0].b[i].n;
	CHECK(total == N);
	plot_free(a);
	plot_free(b);
	free(t);
	free(idx);
}

/* one sample of 100 among a million zeros, and one of -50: both kept with
   their times, whatever the grid merged */
static void test_spike(void)
{
	plot_t *p = mk();
	CHECK(plot_add_series(p, "flat", "") == 0);
	int64_t t0 = -3600 * S; /* before the epoch too */
	int64_t spike = t0 + 777777 * MS, dip = t0 + 3 * MS;
	for (int i = 0; i < 1000000; i++) {
		int64_t t = t0 + (int64_t)i * MS;
		CHECK(plot_add_point(p, 0, t, t == spike ? 100 : t == dip ? -50 : 0) == 0);
	}
	int hi = 0, lo = 0;
	for (int i = 0; i < PLOT_BUCKETS; i++) {
		const struct plot_bucket *b = &p->s[0].b[i];
		if (b->n && b->max == 100) {
			CHECK(b->t_max == spike);
			hi++;
		}
		if (b->n && b->min == -50) {
			CHECK(b->t_min == dip);
			lo++;
		}
	}
	CHECK(hi == 1 && lo == 1, "%d %d", hi, lo);
	int64_t a, b;
	CHECK(plot_extent(p, &a, &b));
	CHECK(a == t0 && b == t0 + 999999 * MS);
	double vmin, vmax;
	CHECK(plot_panel_range(p, 0, a, b, &vmin, &vmax));
	CHECK(vmin < -50 && vmax > 100 && vmax < 110, "%g %g", vmin, vmax);
	plot_free(p);
}

static void test_left_out(void)
{
	struct plot_opts o = { .from_ns = 10 * S, .to_ns = 20 * S };
	plot_t *p;
	CHECK(plot_create(&p, &o) == 0);
	CHECK(plot_add_series(p, "a", "V") == 0);
	CHECK(plot_add_series(p, "b", "V") == 1);
	CHECK(plot_add_series(p, "c", "A") == 2);
	CHECK(p->npanels == 2 && p->s[1].panel == 0 && p->s[2].panel == 1);
	CHECK(plot_add_point(p, 0, 15 * S, NAN) == 0);
	CHECK(plot_add_point(p, 0, 15 * S, INFINITY) == 0);
	CHECK(plot_add_point(p, 0, 9 * S, 1) == 0);
	CHECK(plot_add_point(p, 0, 20 * S, 1) == 0); /* to is exclusive */
	CHECK(plot_add_point(p, 0, 10 * S, 1) == 0);
	CHECK(plot_add_point(p, 3, 10 * S, 1) == -EINVAL);
	CHECK(plot_add_event(p, 5 * S, "outside") == 0);
	CHECK(plot_add_event(p, 12 * S, "inside") == 0);
	struct plot_stats st;
	plot_stats(p, &st);
	CHECK(st.not_a_number == 2 && st.outside == 2 && st.points == 1 && st.events == 1, "%llu %llu %llu %llu",
	      (unsigned long long)st.not_a_number, (unsigned long long)st.outside,
	      (unsigned long long)st.points, (unsigned long long)st.events);
	int64_t a, b;
	CHECK(plot_extent(p, &a, &b) && a == 10 * S && b == 20 * S);
	for (int i = 3; i < PLOT_SERIES_MAX; i++)
		CHECK(plot_add_series(p, "more", "") == i);
	CHECK(plot_add_series(p, "one too many", "") == -E2BIG);
	plot_free(p);

	/* the grid's reach: 2^62 ns from the first point */
	p = mk();
	CHECK(plot_add_series(p, "a", "") == 0);
	CHECK(plot_add_point(p, 0, INT64_MIN + 10, 1) == 0);
	CHECK(plot_add_point(p, 0, INT64_MAX - 10, 1) == 0);
	CHECK(plot_add_point(p, 0, INT64_MIN + 10 + ((int64_t)1 << 61), 2) == 0);
	plot_stats(p, &st);
	CHECK(st.points == 2 && st.out_of_reach == 1, "%llu %llu", (unsigned long long)st.points,
	      (unsigned long long)st.out_of_reach);
	plot_free(p);

	/* nothing to draw */
	p = mk();
	CHECK(plot_add_series(p, "a", "") == 0);
	CHECK(plot_write(p, "/nonexistent/x.png", PLOT_PNG) == -ENODATA);
	plot_free(p);
	o = (struct plot_opts){ .from_ns = 5, .to_ns = 5 };
	CHECK(plot_create(&p, &o) == -EINVAL && !p);
	o = (struct plot_opts){ .width = 50, .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	CHECK(plot_create(&p, &o) == -EINVAL);
}

static void test_axes(void)
{
	CHECK(plot_time_step(0, 10 * S, 10) == S);
	CHECK(plot_time_step(0, 3600 * S, 8) == 600 * S);
	CHECK(plot_time_step(0, 86400 * S, 10) == 3 * 3600 * S);
	CHECK(plot_time_step(0, 1000, 10) == 100);
	CHECK(plot_time_step(0, 3 * 365 * 86400 * S, 2) == 2 * 31536000LL * S);
	/* 00:07 UTC, 30-minute ticks: 00:30 UTC; at UTC+1, 01:30 local = 00:30 UTC;
	   at UTC+0:45 (Chatham-like), 01:00 local = 00:15 UTC */
	int64_t lo = 1764720000LL * S + 7 * 60 * S; /* 2025-12-03 00:07 UTC */
	CHECK(plot_time_first_tick(lo, 1800 * S, 0) == 1764720000LL * S + 30 * 60 * S);
	CHECK(plot_time_first_tick(lo, 1800 * S, 3600) == 1764720000LL * S + 30 * 60 * S);
	CHECK(plot_time_first_tick(lo, 1800 * S, 2700) == 1764720000LL * S + 15 * 60 * S);
	CHECK(plot_time_first_tick(-S - 1, S, 0) == -S);
	CHECK(plot_time_first_tick(-S, S, 0) == -S);
	char b[64];
	plot_time_label(b, sizeof(b), 1764720000LL * S + 8 * 3600 * S + 15 * 60 * S, 600 * S, 0);
	CHECK_STR(b, "08:15");
	plot_time_label(b, sizeof(b), 1764720000LL * S + 8 * 3600 * S + 15 * 60 * S, 600 * S, 3600);
	CHECK_STR(b, "09:15");
	plot_time_label(b, sizeof(b), 1764720000LL * S + 30 * S, 10 * S, 0);
	CHECK_STR(b, "00:00:30");
	plot_time_label(b, sizeof(b), 1764720000LL * S + 30 * S + 250 * MS, 50 * MS, 0);
	CHECK_STR(b, "00:00:30.250");
	plot_time_label(b, sizeof(b), 1764720000LL * S + 30 * S + 250125000, 5000, 0);
	CHECK_STR(b, "30.250125");
	plot_time_label(b, sizeof(b), 1764720000LL * S, 86400 * S, 0);
	CHECK_STR(b, "2025-12-03");
	/* before the epoch: the instant at or before, as date(1) shows it */
	plot_time_label(b, sizeof(b), -1, 1, 0);
	CHECK_STR(b, "59.999999999");
	plot_time_label(b, sizeof(b), -MS, MS, 0);
	CHECK_STR(b, "23:59:59.999");
	plot_time_label(b, sizeof(b), -86400 * S, 86400 * S, 0);
	CHECK_STR(b, "1969-12-31");

	CHECK(plot_value_step(0, 10, 5) == 2);
	CHECK(fabs(plot_value_step(0, 0.37, 4) - 0.1) < 1e-12);
	CHECK(plot_value_step(-1000, 1000, 4) == 500);
	CHECK(plot_value_step(3, 3, 4) == 1);
}

static void test_bucket_points(void)
{
	/* falling then rising: first, min, max, last in time order */
	struct plot_bucket k = { .t_first = 10, .t_min = 20, .t_max = 15, .t_last = 30,
	                         .first = 5, .min = 1, .max = 9, .last = 4, .n = 9 };
	int64_t t[4];
	double v[4];
	CHECK(plot_bucket_points(&k, t, v) == 4);
	CHECK(t[0] == 10 && t[1] == 15 && t[2] == 20 && t[3] == 30);
	CHECK(v[0] == 5 && v[1] == 9 && v[2] == 1 && v[3] == 4);
	struct plot_bucket one = { 7, 7, 7, 7, 2, 2, 2, 2, 1 };
	CHECK(plot_bucket_points(&one, t, v) == 1 && t[0] == 7 && v[0] == 2);
}

static void test_format_of(void)
{
	enum plot_format f;
	CHECK(plot_format_of("a/b.png", &f) == 0 && f == PLOT_PNG);
	CHECK(plot_format_of("b.SVG", &f) == 0 && f == PLOT_SVG);
	CHECK(plot_format_of("x.html", &f) == 0 && f == PLOT_HTML);
	CHECK(plot_format_of("x.jpg", &f) == -EINVAL);
	CHECK(plot_format_of("png", &f) == -EINVAL);
}

/* ---- plan.c: the rollup's seconds and the raw rows of the chosen ones
   give the picture of every row ---- */

struct smp {
	int64_t t;
	double v;
	bool invalid;
};

static bool same_grid(const plot_t *a, const plot_t *b)
{
	if (a->origin != b->origin || a->width != b->width || a->s[0].points != b->s[0].points)
		return false;
	for (int i = 0; i < PLOT_BUCKETS; i++) {
		const struct plot_bucket *x = &a->s[0].b[i], *y = &b->s[0].b[i];
		if (!x->n != !y->n)
			return false;
		if (x->n && (x->t_first != y->t_first || x->t_last != y->t_last || x->t_min != y->t_min ||
		             x->t_max != y->t_max || memcmp(&x->first, &y->first, sizeof(double)) ||
		             memcmp(&x->last, &y->last, sizeof(double)) || x->min != y->min || x->max != y->max))
			return false;
	}
	return true;
}

/* The samples of one second as the ground's rollup sums them: every one,
   window or not (rollup_summary_1s is per whole second). */
static struct plot_second second_of(const struct smp *m, size_t n, int64_t sec)
{
	struct plot_second r = { .t_ns = sec };
	for (size_t i = 0; i < n; i++) {
		bool bad = m[i].invalid || !isfinite(m[i].v);
		r.n++;
		r.n_bad += bad;
		if (!bad && (r.n - r.n_bad == 1 || m[i].v < r.min))
			r.min = m[i].v;
		if (!bad && (r.n - r.n_bad == 1 || m[i].v > r.max))
			r.max = m[i].v;
	}
	return r;
}

/* The raw rows of the seconds read, in time order: whole, or their
   invalid and NaN ones only; invalid ones counted as the command does. */
static void feed_seconds(plot_t *p, const struct smp *m, size_t nm, const struct plot_read *rd, size_t n,
                         int64_t from, int64_t to, size_t *at, uint64_t *invalid)
{
	for (size_t k = 0; k < n; k++) {
		while (*at < nm && m[*at].t < rd[k].t_ns)
			(*at)++;
		CHECK(*at < nm && m[*at].t < rd[k].t_ns + S, "second %lld chosen has samples", (long long)rd[k].t_ns);
		for (; *at < nm && m[*at].t < rd[k].t_ns + S; (*at)++) {
			if (m[*at].t < from || m[*at].t >= to || (!rd[k].whole && !m[*at].invalid && isfinite(m[*at].v)))
				continue;
			if (m[*at].invalid)
				(*invalid)++;
			else
				CHECK(plot_add_point(p, 0, m[*at].t, m[*at].v) == 0);
		}
	}
}

/* hours of 10 Hz samples with few distinct values (ties between seconds
   of a bucket), NaN, invalid ones, pauses; a window cutting seconds */
static void plan_case(int64_t t0, int hours, int64_t from, int64_t to, unsigned seed, bool dense_ties)
{
	size_t cap = (size_t)hours * 3600 * 10, nm = 0;
	struct smp *m = malloc(cap * sizeof(*m));
	srand(seed);
	for (int64_t sec = 0; sec < hours * 3600; sec++) {
		if (sec % 1000 >= 990) /* a 10 s pause every 1000 s */
			continue;
		for (int k = 0; k < 10; k++) {
			int64_t t = t0 + sec * S + k * 100 * MS + (rand() % 50) * 1000; /* us, as the database */
			double v = dense_ties ? (double)(rand() % 5) : sin((double)nm / 777.0) * 100 + rand() % 3;
			if (rand() % 5000 == 0)
				v = NAN;
			m[nm++] = (struct smp){ t, v, rand() % 300 == 0 || sec % 777 == 5 /* a second all invalid */ };
		}
	}
	struct plot_opts o = { .from_ns = from, .to_ns = to };
	plot_t *all, *some;
	CHECK(plot_create(&all, &o) == 0 && plot_create(&some, &o) == 0);
	CHECK(plot_add_series(all, "x", "") == 0 && plot_add_series(some, "x", "") == 0);
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	uint64_t inv_all = 0, inv_some = 0;
	for (size_t i = 0; i < nm; i++) {
		inv_all += m[i].invalid && m[i].t >= from && m[i].t < to;
		if (!m[i].invalid && m[i].t >= from && m[i].t < to) {
			CHECK(plot_add_point(all, 0, m[i].t, m[i].v) == 0);
			if (isfinite(m[i].v)) {
				lo = m[i].t < lo ? m[i].t : lo;
				hi = m[i].t > hi ? m[i].t : hi;
			}
		}
	}
	int64_t origin, width;
	CHECK(plot_grid_for(lo, hi, &origin, &width) == 0);
	CHECK(origin == all->origin && width == all->width, "grid %lld/%lld vs %lld/%lld", (long long)origin,
	      (long long)width, (long long)all->origin, (long long)all->width);
	plot_plan_t *pl;
	CHECK(plot_plan_new(&pl, origin, width, from, to) == 0);
	size_t i = 0, at = 0;
	const struct plot_read *rd;
	/* the rollup's seconds overlapping the window, due ones read as they come */
	while (i < nm) {
		int64_t sec = (m[i].t / S - (m[i].t % S < 0)) * S;
		size_t j = i;
		while (j < nm && m[j].t < sec + S)
			j++;
		if (sec + S > from && sec < to) {
			struct plot_second ps = second_of(m + i, j - i, sec);
			CHECK(plot_plan_take(pl, &ps) == 0);
			if ((j & 63) == 0) {
				size_t n = plot_plan_due(pl, &rd);
				feed_seconds(some, m, nm, rd, n, from, to, &at, &inv_some);
			}
		}
		i = j;
	}
	CHECK(plot_plan_end(pl) == 0);
	size_t n = plot_plan_due(pl, &rd);
	feed_seconds(some, m, nm, rd, n, from, to, &at, &inv_some);
	struct plot_plan_counts c;
	plot_plan_counts(pl, &c);
	CHECK(plot_add_unseen(some, 0, c.unseen) == 0);
	CHECK(same_grid(all, some), "hours %d seed %u: not the picture of every sample", hours, seed);
	CHECK(inv_all == inv_some, "invalid: %llu of every row, %llu read", (unsigned long long)inv_all,
	      (unsigned long long)inv_some);
	/* what it saved: at most 5 seconds a bucket read whole */
	CHECK(c.whole < c.seconds / 2 && c.whole <= 5 * (uint64_t)PLOT_BUCKETS + 2, "%llu of %llu seconds read",
	      (unsigned long long)c.whole, (unsigned long long)c.seconds);
	struct plot_stats sa, sb;
	plot_stats(all, &sa);
	plot_stats(some, &sb);
	CHECK(sa.not_a_number == sb.not_a_number && sa.points == sb.points);
	plot_plan_free(pl);
	plot_free(all);
	plot_free(some);
	free(m);
}

static void test_plan(void)
{
	int64_t t0 = 1764720000LL * S;
	/* a day, no window; a window cutting seconds at both ends */
	plan_case(t0, 24, INT64_MIN, INT64_MAX, 1, true);
	plan_case(t0, 24, INT64_MIN, INT64_MAX, 2, false);
	plan_case(t0, 12, t0 + 3600 * S + 250 * MS, t0 + 11 * 3600 * S + 730 * MS, 3, true);
	/* before the epoch: floor, not truncation */
	plan_case(-86400 * S, 8, INT64_MIN, INT64_MAX, 4, true);

	plot_plan_t *pl;
	CHECK(plot_plan_new(&pl, 0, 3, INT64_MIN, INT64_MAX) == -EINVAL);
	CHECK(plot_plan_new(&pl, 0, 1 << 30, 5, 5) == -EINVAL);
	CHECK(plot_plan_new(&pl, 0, 1LL << 33, INT64_MIN, INT64_MAX) == 0);
	struct plot_second a = { .t_ns = 10 * S, .n = 1, .min = 1, .max = 1 }, b = a;
	CHECK(plot_plan_take(pl, &a) == 0);
	CHECK(plot_plan_take(pl, &b) == -EINVAL); /* not later */
	b.t_ns = 11 * S + 1;
	CHECK(plot_plan_take(pl, &b) == -EINVAL); /* not a second's start */
	plot_plan_free(pl);
	int64_t o, w;
	CHECK(plot_grid_for(5, 4, &o, &w) == -ERANGE);
	CHECK(plot_grid_for(0, 4095, &o, &w) == 0 && o == 0 && w == 1);
	CHECK(plot_grid_for(0, 4096, &o, &w) == 0 && o == 0 && w == 2);
	CHECK(plot_grid_for(INT64_MIN / 2, INT64_MAX / 2 + 2, &o, &w) == -ERANGE);
}

int main(void)
{
	test_order();
	test_spike();
	test_left_out();
	test_axes();
	test_bucket_points();
	test_format_of();
	test_plan();
	printf("plot: ok\n");
	return 0;
}
