/* SPDX-License-Identifier: MIT */
/*
 * plan.c - which seconds of the ground database plot --db reads raw,
 * from the rollup's seconds (plot.h, "which seconds ... the picture
 * needs", says the rule and why it draws the same picture).  Memory: the
 * seconds chosen and not yet handed out: those of the open bucket and
 * what the caller leaves between plot_plan_due() calls.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot-private.h"

#define SECOND_NS INT64_C(1000000000)
/* the last time a second can hold: the database keeps microseconds */
#define SECOND_LAST_NS (SECOND_NS - 1000)

/* One of the open bucket's four candidates: a second, its valid samples,
   whether it was chosen for its invalid or NaN ones already. */
struct cand {
	int64_t t;
	uint64_t n;
	bool bad, set;
};

struct plot_plan {
	int64_t origin, width, from, to;
	int64_t last_t;          /* the last second taken (INT64_MIN: none) */
	int64_t bucket;          /* the open bucket */
	bool open;
	uint64_t sum;            /* valid samples of the open bucket's unforced seconds */
	double lo, hi;           /* their lowest and highest values */
	struct cand first, last, min, max;
	struct plot_read *reads; /* chosen, not handed out */
	size_t n, cap, given;    /* given: handed out by the last due() */
	uint64_t unseen, seconds, whole, bad;
};

int plot_plan_new(plot_plan_t **ret, int64_t origin, int64_t width, int64_t from_ns, int64_t to_ns)
{
	plot_plan_t *pl;

	if (width <= 0 || (width & (width - 1)) || from_ns >= to_ns)
		return -EINVAL;
	if (!(pl = calloc(1, sizeof(*pl))))
		return -ENOMEM;
	*pl = (struct plot_plan){ .origin = origin, .width = width, .from = from_ns, .to = to_ns,
	                          .last_t = INT64_MIN };
	*ret = pl;
	return 0;
}

plot_plan_t *plot_plan_free(plot_plan_t *pl)
{
	if (pl) {
		free(pl->reads);
		free(pl);
	}
	return NULL;
}

static int choose(plot_plan_t *pl, int64_t t, bool whole)
{
	if (pl->n == pl->cap) {
		size_t cap = pl->cap ? pl->cap * 2 : 1024;
		struct plot_read *s = realloc(pl->reads, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		pl->reads = s;
		pl->cap = cap;
	}
	pl->reads[pl->n++] = (struct plot_read){ t, whole };
	pl->whole += whole;
	pl->bad += !whole;
	return 0;
}

/* The open bucket's candidates chosen whole (one second may be several of
   them: chosen once; one chosen for its bad samples already is read whole
   instead, due() merges the two); the valid samples of its other unforced
   seconds unseen. */
static int close_bucket(plot_plan_t *pl)
{
	const struct cand *c[4] = { &pl->first, &pl->min, &pl->max, &pl->last };
	uint64_t chosen = 0;
	int r = 0;

	for (int i = 0; i < 4 && r == 0; i++) {
		bool dup = !c[i]->set;
		for (int j = 0; j < i && !dup; j++)
			dup = c[j]->set && c[j]->t == c[i]->t;
		if (dup)
			continue;
		chosen += c[i]->n;
		pl->bad -= c[i]->bad;
		r = choose(pl, c[i]->t, true);
	}
	pl->unseen += pl->sum - chosen;
	pl->sum = 0;
	pl->first.set = pl->last.set = pl->min.set = pl->max.set = false;
	return r;
}

int plot_plan_take(plot_plan_t *pl, const struct plot_second *sec)
{
	int64_t t = sec->t_ns;

	if (t <= pl->last_t || plot_floor_div(t, SECOND_NS) * SECOND_NS != t || t > INT64_MAX - SECOND_NS ||
	    sec->n_bad > sec->n)
		return -EINVAL;
	pl->last_t = t;
	pl->seconds++;
	int64_t b = plot_floor_div(t - pl->origin, pl->width);
	int64_t b_end = plot_floor_div(t + SECOND_LAST_NS - pl->origin, pl->width);
	uint64_t valid = sec->n - sec->n_bad;
	int r = 0;

	if (!pl->open || b != pl->bucket) {
		if (pl->open && (r = close_bucket(pl)) < 0)
			return r;
		pl->open = true;
		pl->bucket = b;
	}
	/* read whole: cut by the window or across a bucket's edge */
	if (t < pl->from || pl->to < INT64_MIN + SECOND_NS || t > pl->to - SECOND_NS || b_end != b)
		return choose(pl, t, true);
	/* its invalid and NaN samples read, to be counted apart as the raw
	   path counts them (they draw nothing) */
	if (sec->n_bad && (r = choose(pl, t, false)) < 0)
		return r;
	if (!valid)
		return 0;
	struct cand me = { t, valid, sec->n_bad > 0, true };
	if (!pl->first.set)
		pl->first = me;
	pl->last = me;
	/* strictly lower (higher): an equal value later loses to the earlier */
	if (!pl->min.set || sec->min < pl->lo) {
		pl->min = me;
		pl->lo = sec->min;
	}
	if (!pl->max.set || sec->max > pl->hi) {
		pl->max = me;
		pl->hi = sec->max;
	}
	pl->sum += valid;
	return 0;
}

int plot_plan_end(plot_plan_t *pl)
{
	int r = pl->open ? close_bucket(pl) : 0;

	pl->open = false;
	return r;
}

/* by time, a whole read before a bad-only one of the same second */
static int cmp_read(const void *a, const void *b)
{
	const struct plot_read *x = a, *y = b;

	if (x->t_ns != y->t_ns)
		return (x->t_ns > y->t_ns) - (x->t_ns < y->t_ns);
	return (int)y->whole - (int)x->whole;
}

size_t plot_plan_due(plot_plan_t *pl, const struct plot_read **ret_reads)
{
	size_t k = 0, m = 0;

	/* the ones handed out last time forgotten */
	memmove(pl->reads, pl->reads + pl->given, (pl->n - pl->given) * sizeof(*pl->reads));
	pl->n -= pl->given;
	qsort(pl->reads, pl->n, sizeof(*pl->reads), cmp_read);
	/* final: before the open bucket's start (its candidates and forced
	   seconds are at or after it); a second once, whole if ever whole */
	while (k < pl->n && (!pl->open || pl->reads[k].t_ns < pl->origin + pl->bucket * pl->width)) {
		if (!m || pl->reads[m - 1].t_ns != pl->reads[k].t_ns)
			pl->reads[m++] = pl->reads[k];
		k++;
	}
	memmove(pl->reads + m, pl->reads + k, (pl->n - k) * sizeof(*pl->reads));
	pl->n -= k - m;
	pl->given = m;
	*ret_reads = pl->reads;
	return m;
}

void plot_plan_counts(const plot_plan_t *pl, struct plot_plan_counts *ret)
{
	*ret = (struct plot_plan_counts){ .unseen = pl->unseen, .seconds = pl->seconds, .whole = pl->whole,
	                                  .bad = pl->bad };
}
