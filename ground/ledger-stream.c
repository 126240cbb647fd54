/* SPDX-License-Identifier: MIT */
/*
 * ledger-stream.c - one log's memory in the ledger (struct stream,
 * ledger-private.h): the sorted set of seq ranges seen, the seqs a
 * reduced Batch left on board, and the digests of its last Batches, each
 * bounded (GRD_LEDGER_MAX_RANGES, _ONBOARD, _DIGESTS: past them the
 * oldest is forgotten and only counted).  ledger.c decides with them what
 * a payload is (new, duplicate, conflict) under its lock; nothing here
 * locks or knows of vehicles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ledger-private.h"

/* ---- sequence ranges ---- */

/* Index of the first range with hi >= seq (so it contains or touches seq). */
static size_t range_find(const struct stream *s, uint64_t seq)
{
	size_t lo = 0, hi = s->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ranges[mid].hi < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool grd_ledger_range_covered(const struct stream *s, uint64_t seq)
{
	size_t i = range_find(s, seq + 1);

	return i < s->nranges && s->ranges[i].lo <= seq;
}

/* Room for one more range: one over GRD_LEDGER_MAX_RANGES, so a range is
   inserted first and the oldest forgotten after (it may be the new one). */
static int range_reserve(struct stream *s)
{
	struct range *n;
	size_t cap;

	if (s->nranges < s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 4;
	if (cap > GRD_LEDGER_MAX_RANGES + 1)
		cap = GRD_LEDGER_MAX_RANGES + 1;
	n = realloc(s->ranges, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->ranges = n;
	s->cap = cap;
	return 0;
}

static struct digest *dig_at(const struct stream *s, size_t i)
{
	return &s->dig[(s->dig_head + i) & (s->dig_cap - 1)];
}

/* Digests wholly below the floor can never be consulted again. */
static void digests_drop_below(struct stream *s, uint64_t seq)
{
	while (s->ndig && dig_at(s, 0)->first_seq + dig_at(s, 0)->count <= seq) {
		s->dig_head = (s->dig_head + 1) & (s->dig_cap - 1);
		s->ndig--;
	}
}

/*
 * Forget the oldest range.  Its records stay counted in records, and the
 * holes below the new floor stay counted as missing: a record that comes
 * later below the floor cannot be told from a re-send, so it is written
 * (loss is worse than a duplicate) and counted in old, not in records.
 */
static void range_forget_oldest(struct stream *s)
{
	memmove(s->ranges, s->ranges + 1, (s->nranges - 1) * sizeof(*s->ranges));
	s->nranges--;
	s->floor = s->ranges[0].lo;
	digests_drop_below(s, s->floor);
}

/* Add [lo, hi), merging with every range it overlaps or touches.  The
   caller has already counted which records were new. */
int grd_ledger_range_insert(struct stream *s, uint64_t lo, uint64_t hi)
{
	size_t i, j;
	int r = range_reserve(s);

	if (r < 0)
		return r;
	i = j = range_find(s, lo);
	while (j < s->nranges && s->ranges[j].lo <= hi)
		j++;
	if (i == j) {
		memmove(s->ranges + i + 1, s->ranges + i, (s->nranges - i) * sizeof(*s->ranges));
		s->ranges[i] = (struct range){ lo, hi };
		s->nranges++;
	} else {
		/* Ranges i..j-1 collapse into one. */
		if (s->ranges[i].lo < lo)
			lo = s->ranges[i].lo;
		if (s->ranges[j - 1].hi > hi)
			hi = s->ranges[j - 1].hi;
		s->ranges[i] = (struct range){ lo, hi };
		memmove(s->ranges + i + 1, s->ranges + j, (s->nranges - j) * sizeof(*s->ranges));
		s->nranges -= j - i - 1;
	}
	while (s->nranges > GRD_LEDGER_MAX_RANGES)
		range_forget_oldest(s);
	return 0;
}

uint64_t grd_ledger_stream_missing(const struct stream *s)
{
	return s->end ? s->end - s->lowest - s->records - s->on_board : 0;
}

/* Seqs of [lo, hi) no range covers yet. */
uint64_t grd_ledger_range_uncovered(const struct stream *s, uint64_t lo, uint64_t hi)
{
	uint64_t n = hi - lo;

	for (size_t i = range_find(s, lo + 1); i < s->nranges && s->ranges[i].lo < hi; i++) {
		uint64_t a = s->ranges[i].lo > lo ? s->ranges[i].lo : lo;
		uint64_t b = s->ranges[i].hi < hi ? s->ranges[i].hi : hi;

		n -= b > a ? b - a : 0;
	}
	return n;
}

/* ---- seqs on board ----
 *
 * The ranges above say which seqs are accounted for; a reduced Batch
 * accounts for its whole source range, so they cannot tell a seq that
 * arrived from one kept on board.  The on-board set can: without it a
 * whole Batch over a reduced range (a full-rate request, gap repair) would
 * be taken for duplicates and its records dropped.  Bounded like the
 * ranges: past GRD_LEDGER_MAX_ONBOARD ranges the oldest is forgotten, its
 * seqs stay counted on board, and a whole Batch over them later counts as
 * duplicates (as before this set existed). */

/* Index of the first on-board range with hi > seq. */
static size_t ob_find(const struct stream *s, uint64_t seq)
{
	size_t lo = 0, hi = s->nob;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ob[mid].hi <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Open a slot at i (one range, or two when split). */
static int ob_open(struct stream *s, size_t i)
{
	if (s->nob == s->ob_cap) {
		size_t cap = s->ob_cap ? s->ob_cap * 2 : 8;
		struct range *n = realloc(s->ob, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ob = n;
		s->ob_cap = cap;
	}
	memmove(s->ob + i + 1, s->ob + i, (s->nob - i) * sizeof(*s->ob));
	s->nob++;
	return 0;
}

/* Add [lo, hi), which no on-board range overlaps (the caller adds only
   seqs no range covered). */
static int ob_add(struct stream *s, uint64_t lo, uint64_t hi)
{
	size_t i = ob_find(s, lo);

	if (ob_open(s, i) < 0)
		return -ENOMEM;
	s->ob[i] = (struct range){ lo, hi };
	return 0;
}

/* Take seq out of the set: true if it was on board.  -ENOMEM only if a
   split finds no memory (seq is then left on board). */
int grd_ledger_ob_take(struct stream *s, uint64_t seq)
{
	size_t i = ob_find(s, seq);
	struct range *g;

	if (i >= s->nob || s->ob[i].lo > seq)
		return 0;
	g = &s->ob[i];
	if (g->lo == seq)
		g->lo++;
	else if (g->hi == seq + 1)
		g->hi--;
	else {
		uint64_t hi = g->hi;

		if (ob_open(s, i + 1) < 0)
			return -ENOMEM;
		s->ob[i].hi = seq;
		s->ob[i + 1] = (struct range){ seq + 1, hi };
		return 1;
	}
	if (g->lo == g->hi) {
		memmove(s->ob + i, s->ob + i + 1, (s->nob - i - 1) * sizeof(*s->ob));
		s->nob--;
	}
	return 1;
}

/* Every seq of [lo, hi) no range covers yet goes on board (before
   grd_ledger_range_insert() covers them); the reduced Batch's own records are taken
   out again as they are written. */
int grd_ledger_ob_add_uncovered(struct stream *s, uint64_t lo, uint64_t hi)
{
	uint64_t at = lo;

	for (size_t i = range_find(s, lo + 1); at < hi; i++) {
		uint64_t stop = i < s->nranges && s->ranges[i].lo < hi ? s->ranges[i].lo : hi;

		if (stop > at && ob_add(s, at, stop) < 0)
			return -ENOMEM;
		if (i >= s->nranges || s->ranges[i].lo >= hi)
			break;
		at = s->ranges[i].hi;
	}
	return 0;
}

void grd_ledger_ob_bound(struct stream *s)
{
	if (s->nob > GRD_LEDGER_MAX_ONBOARD) {
		size_t drop = s->nob - GRD_LEDGER_MAX_ONBOARD;

		memmove(s->ob, s->ob + drop, GRD_LEDGER_MAX_ONBOARD * sizeof(*s->ob));
		s->nob = GRD_LEDGER_MAX_ONBOARD;
	}
}

/* ---- Batch contents ---- */

/* Index of the first digest that ends after seq. */
static size_t dig_find(const struct stream *s, uint64_t seq)
{
	size_t lo = 0, hi = s->ndig;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct digest *d = dig_at(s, mid);

		if (d->first_seq + d->count <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Compare a Batch whose records were (partly) seen before with the Batches
   remembered in its range. */
enum seen grd_ledger_digest_check(const struct stream *s, uint64_t first, uint32_t count, uint64_t hash)
{
	size_t i = dig_find(s, first);
	const struct digest *d;

	if (i >= s->ndig || (d = dig_at(s, i))->first_seq >= first + count)
		return SEEN_UNKNOWN;
	/* A re-send is the same stored frame: same range, same records.
	   Anything else over a range already received is a conflict. */
	if (d->first_seq == first && d->count == count && d->hash == hash)
		return SEEN_SAME;
	return SEEN_OTHER;
}

static int digest_grow(struct stream *s)
{
	size_t cap = s->dig_cap ? s->dig_cap * 2 : 8;
	struct digest *n = malloc(cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < s->ndig; i++)
		n[i] = *dig_at(s, i);
	free(s->dig);
	s->dig = n;
	s->dig_cap = cap;
	s->dig_head = 0;
	return 0;
}

/* Remember a Batch; past GRD_LEDGER_MAX_DIGESTS the lowest goes. */
int grd_ledger_digest_add(struct stream *s, uint64_t first, uint32_t count, uint64_t hash)
{
	size_t at = dig_find(s, first);

	if (s->ndig == GRD_LEDGER_MAX_DIGESTS) {
		if (at == 0)
			return 0; /* older than all kept: not worth keeping */
		s->dig_head = (s->dig_head + 1) & (s->dig_cap - 1);
		s->ndig--;
		at--;
	}
	if (s->ndig == s->dig_cap && digest_grow(s) < 0)
		return -ENOMEM;
	/* Batches mostly come in order: the loop rarely runs. */
	for (size_t i = s->ndig; i > at; i--)
		*dig_at(s, i) = *dig_at(s, i - 1);
	*dig_at(s, at) = (struct digest){ first, hash, count };
	s->ndig++;
	return 0;
}
