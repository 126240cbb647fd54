/* SPDX-License-Identifier: MIT */
/* order.c - a min-heap over (t_ns, seq) with a time window (order.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "order.h"

struct rec_order {
	struct acq_item *heap;
	size_t n, cap, max;
	int64_t window_ns;
	int64_t recent_ns, last_out_ns; /* the last record pushed; taken out */
	bool any_out;
	uint64_t late;
};

int rec_order_new(size_t max_items, int64_t window_ns, rec_order_t **ret_order)
{
	rec_order_t *o;

	if (!ret_order || !max_items || window_ns < 0)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->max = max_items;
	o->window_ns = window_ns;
	o->recent_ns = INT64_MIN;
	*ret_order = o;
	return 0;
}

rec_order_t *rec_order_free(rec_order_t *o)
{
	if (o) {
		free(o->heap);
		free(o);
	}
	return NULL;
}

static bool before(const struct acq_item *a, const struct acq_item *b)
{
	return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

static void swap(struct acq_item *a, struct acq_item *b)
{
	struct acq_item t = *a;

	*a = *b;
	*b = t;
}

int rec_order_push(rec_order_t *o, const struct acq_item *it)
{
	size_t i;

	if (!o || !it)
		return -EINVAL;
	if (o->n == o->max)
		return -ENOBUFS;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 1024;
		struct acq_item *h;

		cap = cap > o->max ? o->max : cap;
		h = realloc(o->heap, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		o->heap = h;
		o->cap = cap;
	}
	if (o->any_out && it->t_ns < o->last_out_ns)
		o->late++;
	/* The last one, not the newest: one record far ahead (a replay's
	   START event has the time of the replay, the trace's records are
	   older) must not make every later record due at once. */
	o->recent_ns = it->t_ns;
	i = o->n++;
	o->heap[i] = *it;
	while (i && before(&o->heap[i], &o->heap[(i - 1) / 2])) {
		swap(&o->heap[i], &o->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

int rec_order_pop(rec_order_t *o, struct acq_item *ret_item)
{
	size_t i = 0;

	if (!o || !ret_item || !o->n)
		return 0;
	*ret_item = o->heap[0];
	o->heap[0] = o->heap[--o->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < o->n && before(&o->heap[l], &o->heap[m]))
			m = l;
		if (r < o->n && before(&o->heap[r], &o->heap[m]))
			m = r;
		if (m == i)
			break;
		swap(&o->heap[i], &o->heap[m]);
		i = m;
	}
	o->any_out = true;
	o->last_out_ns = ret_item->t_ns;
	return 1;
}

int rec_order_next(rec_order_t *o, struct acq_item *ret_item)
{
	int64_t due;

	if (!o || !ret_item || !o->n)
		return 0;
	/* recent - window, without overflow near INT64_MIN */
	due = o->recent_ns < INT64_MIN + o->window_ns ? INT64_MIN : o->recent_ns - o->window_ns;
	if (o->n < o->max && o->heap[0].t_ns >= due)
		return 0;
	return rec_order_pop(o, ret_item);
}

uint64_t rec_order_late(const rec_order_t *o)
{
	return o ? o->late : 0;
}

size_t rec_order_count(const rec_order_t *o)
{
	return o ? o->n : 0;
}
