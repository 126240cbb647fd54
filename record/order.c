/* SPDX-License-Identifier: MIT */
/*
 * order.c - records in (t_ns, seq) order over a time window (order.h).
 *
 * A log read in seq order is a few sorted runs interleaved (a Batch's
 * frames, then its samples, then its events: 1,196 steps back in time in
 * a million records of the demo log), so the records go into up to
 * ORDER_RUNS sorted queues, each record at the tail of the queue whose
 * last record is the latest not after it, and the oldest record is the
 * oldest of the queues' heads: a few comparisons a record, where a heap
 * of thousands of records took a dozen levels of unpredictable branches.
 * A record no queue takes (more disorder than the queues hold) goes into
 * a min-heap, the other candidate for the oldest.  Either way what comes
 * out is the oldest record held, as one heap would give it.  Queues and
 * heap hold keys (time, seq, slot); the records wait in slots.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"

#define ORDER_RUNS 8
/* a queue that empties keeps its room up to this many keys for the next run */
#define ORDER_RUN_KEEP 1024
#define ORDER_UNKNOWN SIZE_MAX

struct order_key {
	int64_t t_ns;
	uint64_t seq;
	uint32_t slot;
};

/* a sorted queue: a ring of cap (a power of 2) keys */
struct order_run {
	struct order_key *k;
	size_t head, n, cap;
};

struct rec_order {
	struct order_run run[ORDER_RUNS]; /* the first nruns are in use */
	size_t nruns;
	size_t oldest_at;        /* oldest()'s answer, ORDER_UNKNOWN after a change */
	struct order_key *heap;  /* what no queue took */
	size_t nheap, heap_cap;
	struct acq_item *slot;   /* the records held */
	uint32_t *free_slot;     /* a stack of the slots not in use */
	size_t n, nfree, cap, max;
	int64_t window_ns;
	int64_t recent_ns, last_out_ns; /* the last record pushed; taken out */
	bool any_out;
	uint64_t late;
	uint8_t *out_bytes;      /* the bytes of the TRDP telegram taken out last */
};

int rec_order_new(size_t max_items, int64_t window_ns, rec_order_t **ret_order)
{
	rec_order_t *o;

	if (!ret_order || !max_items || window_ns < 0)
		return -EINVAL;
#if SIZE_MAX > UINT32_MAX
	if (max_items > UINT32_MAX) /* slots are numbered in 32 bits */
		return -EINVAL;
#endif
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->max = max_items;
	o->window_ns = window_ns;
	o->recent_ns = INT64_MIN;
	o->oldest_at = ORDER_UNKNOWN;
	*ret_order = o;
	return 0;
}

rec_order_t *rec_order_free(rec_order_t *o)
{
	if (o) {
		for (size_t i = 0; i < ORDER_RUNS; i++)
			free(o->run[i].k);
		free(o->heap);
		/* the copies of the telegrams still held */
		for (size_t i = 0; i < o->cap; i++)
			if (o->slot[i].kind == ACQ_ITEM_TRDP)
				free((void *)o->slot[i].trdp.data);
		free(o->out_bytes);
		free(o->slot);
		free(o->free_slot);
		free(o);
	}
	return NULL;
}

static inline bool before(const struct order_key *a, const struct order_key *b)
{
	return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

/* Slots for cap * 2 (up to max) records: the new ones on the free stack. */
static int grow_slots(rec_order_t *o)
{
	size_t cap = o->cap ? o->cap * 2 : 1024;
	void *p;

	cap = cap > o->max ? o->max : cap;
	if (!(p = realloc(o->slot, cap * sizeof(*o->slot))))
		return -ENOMEM;
	o->slot = p;
	/* kind 0 (CAN): a slot not in use owns no telegram's copy */
	memset(o->slot + o->cap, 0, (cap - o->cap) * sizeof(*o->slot));
	if (!(p = realloc(o->free_slot, cap * sizeof(*o->free_slot))))
		return -ENOMEM;
	o->free_slot = p;
	/* highest first, so the lowest slots are used first */
	for (size_t i = cap; i-- > o->cap;)
		o->free_slot[o->nfree++] = (uint32_t)i;
	o->cap = cap;
	return 0;
}

static inline struct order_key *run_tail(const struct order_run *r)
{
	return &r->k[(r->head + r->n - 1) & (r->cap - 1)];
}

static int run_append(struct order_run *r, const struct order_key *k)
{
	if (r->n == r->cap) { /* twice the room, the ring made straight */
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct order_key *p = malloc(cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		for (size_t i = 0; i < r->n; i++)
			p[i] = r->k[(r->head + i) & (r->cap - 1)];
		free(r->k);
		r->k = p;
		r->head = 0;
		r->cap = cap;
	}
	r->k[(r->head + r->n++) & (r->cap - 1)] = *k;
	return 0;
}

static int heap_push(rec_order_t *o, const struct order_key *k)
{
	size_t i;

	if (o->nheap == o->heap_cap) {
		size_t cap = o->heap_cap ? o->heap_cap * 2 : 64;
		struct order_key *p = realloc(o->heap, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		o->heap = p;
		o->heap_cap = cap;
	}
	/* sift up: parents move down into the hole, the key goes in once */
	for (i = o->nheap++; i && before(k, &o->heap[(i - 1) / 2]); i = (i - 1) / 2)
		o->heap[i] = o->heap[(i - 1) / 2];
	o->heap[i] = *k;
	return 0;
}

static void heap_pop(rec_order_t *o)
{
	struct order_key last = o->heap[--o->nheap];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, m;

		if (l >= o->nheap)
			break;
		m = l + 1 < o->nheap && before(&o->heap[l + 1], &o->heap[l]) ? l + 1 : l;
		if (!before(&o->heap[m], &last))
			break;
		o->heap[i] = o->heap[m];
		i = m;
	}
	if (o->nheap)
		o->heap[i] = last;
}

/* The oldest key held: a queue's head (its index) or the heap's top (nruns). */
static size_t oldest(rec_order_t *o, const struct order_key **ret)
{
	const struct order_key *best = o->nheap ? &o->heap[0] : NULL;
	size_t at = o->nruns;

	/* rec_order_next() asks, then rec_order_pop(): once */
	if (o->oldest_at != ORDER_UNKNOWN) {
		at = o->oldest_at;
		*ret = at == o->nruns ? &o->heap[0] : &o->run[at].k[o->run[at].head];
		return at;
	}
	for (size_t i = 0; i < o->nruns; i++) {
		const struct order_key *h = &o->run[i].k[o->run[i].head];

		if (!best || before(h, best)) {
			best = h;
			at = i;
		}
	}
	*ret = best;
	o->oldest_at = at;
	return at;
}

int rec_order_push(rec_order_t *o, const struct acq_item *it)
{
	struct order_key k;
	struct order_run *fit = NULL;
	int r;

	if (!o || !it)
		return -EINVAL;
	if (o->n == o->max)
		return -ENOBUFS;
	if (o->n == o->cap && (r = grow_slots(o)) < 0)
		return r;
	/* A telegram points at bytes its reader frees with its Batch: the
	   order keeps a copy while it holds the record. */
	uint8_t *copy = NULL;
	if (it->kind == ACQ_ITEM_TRDP && it->trdp.len) {
		if (!it->trdp.data || !(copy = malloc(it->trdp.len)))
			return it->trdp.data ? -ENOMEM : -EINVAL;
		memcpy(copy, it->trdp.data, it->trdp.len);
	}
	k = (struct order_key){ it->t_ns, it->seq, 0 };
	/* the queue whose last key is the latest not after k, else a new
	   queue, else the heap */
	for (size_t i = 0; i < o->nruns; i++) {
		struct order_run *q = &o->run[i];

		if (!before(&k, run_tail(q)) && (!fit || before(run_tail(fit), run_tail(q))))
			fit = q;
	}
	if (!fit && o->nruns < ORDER_RUNS)
		fit = &o->run[o->nruns++];
	k.slot = o->free_slot[o->nfree - 1];
	r = fit ? run_append(fit, &k) : heap_push(o, &k);
	if (r < 0) {
		if (fit && !fit->n) /* the new queue stays empty: not in use */
			o->nruns--;
		free(copy);
		return r;
	}
	o->oldest_at = ORDER_UNKNOWN;
	o->nfree--;
	o->slot[k.slot] = *it;
	if (it->kind == ACQ_ITEM_TRDP)
		o->slot[k.slot].trdp.data = copy;
	o->n++;
	if (o->any_out && it->t_ns < o->last_out_ns)
		o->late++;
	/* The last one, not the newest: one record far ahead (a replay's
	   START event has the time of the replay, the trace's records are
	   older) must not make every later record due at once. */
	o->recent_ns = it->t_ns;
	return 0;
}

int rec_order_pop(rec_order_t *o, struct acq_item *ret_item)
{
	const struct order_key *k;
	size_t at;
	uint32_t s;

	if (!o || !ret_item || !o->n)
		return 0;
	at = oldest(o, &k);
	s = k->slot;
	o->oldest_at = ORDER_UNKNOWN;
	if (at == o->nruns) {
		heap_pop(o);
	} else {
		struct order_run *q = &o->run[at];

		q->head = (q->head + 1) & (q->cap - 1);
		if (!--q->n) { /* empty: out of use (its room kept unless large) */
			struct order_run t = *q;

			if (t.cap > ORDER_RUN_KEEP) {
				free(t.k);
				t = (struct order_run){ 0 };
			}
			t.head = 0;
			*q = o->run[--o->nruns];
			o->run[o->nruns] = t;
		}
	}
	*ret_item = o->slot[s];
	/* the copy lives until the next record comes out */
	free(o->out_bytes);
	o->out_bytes = NULL;
	if (ret_item->kind == ACQ_ITEM_TRDP) {
		o->out_bytes = (uint8_t *)ret_item->trdp.data;
		o->slot[s].kind = ACQ_ITEM_KIND_MAX; /* a free slot owns no copy */
	}
	o->free_slot[o->nfree++] = s;
	o->n--;
	o->any_out = true;
	o->last_out_ns = ret_item->t_ns;
	return 1;
}

int rec_order_next(rec_order_t *o, struct acq_item *ret_item)
{
	const struct order_key *k;
	int64_t due;

	if (!o || !ret_item || !o->n)
		return 0;
	/* recent - window, without overflow near INT64_MIN */
	due = o->recent_ns < INT64_MIN + o->window_ns ? INT64_MIN : o->recent_ns - o->window_ns;
	oldest(o, &k);
	if (o->n < o->max && k->t_ns >= due)
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
