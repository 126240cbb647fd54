/* SPDX-License-Identifier: MIT */
/*
 * verify-answers.c - a ground log's answers logs (<log>/answers.<n>/,
 * where `recv --log` keeps a request's answers over seqs the ground log
 * holds reduced: ground/logs.c) against the ground log's own Seals.  A
 * whole answer is a Batch of the vehicle's log, byte for byte but the
 * historical flag a re-send appends, so the digest list of a Seal over
 * its seqs names it: the ground copy proves the full-rate window it
 * fetched.  The lists are those of the Seals that verified in the ground
 * log (signature, and the list folds from the Seal's signed chain_start
 * to its signed chain_head), whatever the ground log's own Batches there
 * are (reduced ones fold nothing).  A reduced answer (a request naming
 * channels) is new content no Seal covers: counted as such.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evd-private.h"
#include "evd.h"
#include "record/batch.h"
#include "record/seal.h"

struct list {
	uint64_t first, end;  /* the Seal's range [first, end) */
	uint8_t (*dig)[EVD_HASH_LEN];
	size_t n;
};

struct evd_lists {
	struct list *l;       /* in the order the log's Seals come: seq order */
	size_t n, cap;
};

struct evd_lists *evd_lists_new(void)
{
	return calloc(1, sizeof(struct evd_lists));
}

struct evd_lists *evd_lists_free(struct evd_lists *l)
{
	if (l) {
		for (size_t i = 0; i < l->n; i++)
			free(l->l[i].dig);
		free(l->l);
		free(l);
	}
	return NULL;
}

int evd_lists_add(struct evd_lists *l, const struct rec_seal *s, const uint8_t (*digests)[32], size_t n)
{
	struct list *e;

	if (!n)
		return 0;
	if (l->n == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 64;
		struct list *m = realloc(l->l, c * sizeof(*m));

		if (!m)
			return -ENOMEM;
		l->l = m;
		l->cap = c;
	}
	e = &l->l[l->n];
	e->dig = n ? malloc(n * EVD_HASH_LEN) : NULL; /* malloc(0) may be NULL: not out of memory */
	if (n && !e->dig)
		return -ENOMEM;
	if (n)
		memcpy(e->dig, digests, n * EVD_HASH_LEN);
	e->first = s->first_seq;
	e->end = s->end_seq;
	e->n = n;
	l->n++;
	return 0;
}

unsigned evd_answers_count(const char *dir)
{
	char path[PATH_MAX];
	unsigned n = 0;

	while (snprintf(path, sizeof(path), "%s/answers.%u", dir, n + 1) < (int)sizeof(path) &&
	       access(path, F_OK) == 0)
		n++;
	return n;
}

/* The list of a Seal whose range holds [first, end), or NULL. */
static const struct list *list_over(const struct evd_lists *l, uint64_t first, uint64_t end)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) { /* the first Seal whose range ends past first */
		size_t mid = lo + (hi - lo) / 2;

		if (l->l[mid].end <= first)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < l->n && l->l[lo].first <= first; lo++)
		if (end <= l->l[lo].end)
			return &l->l[lo];
	return NULL;
}

static bool listed(const struct list *s, const uint8_t d[EVD_HASH_LEN])
{
	for (size_t i = 0; i < s->n; i++)
		if (!memcmp(s->dig[i], d, EVD_HASH_LEN))
			return true;
	return false;
}

static void problem(struct evd_result *res, const struct evd_problem *p,
                    void (*fn)(void *, const struct evd_problem *), void *ctx)
{
	if (!res->problems++)
		res->first = *p;
	if (fn)
		fn(ctx, p);
}

/* One Batch of an answers log: its kind, a problem said. */
static enum evd_range_kind answer(const struct evd_lists *l, const struct stor_rec *rec, struct evd_problem *p)
{
	struct rec_batch_info info;
	struct rec_seal seal;
	uint8_t d[EVD_HASH_LEN];
	const struct list *s;
	rec_batch_t *b;
	bool reduced, own_seal;
	int r;

	p->kind = EVD_PROBLEM_MALFORMED;
	p->err = rec_batch_decode(rec->payload, rec->len, &b);
	if (p->err < 0)
		return EVD_RANGE_DAMAGED;
	rec_batch_info(b, &info);
	reduced = info.reduced;
	own_seal = rec_batch_seal(b, &seal) == 0;
	r = info.first_seq != rec->first_seq || info.end_seq - info.first_seq != rec->count;
	rec_batch_free(b);
	if (r) {
		p->err = -ERANGE;
		return EVD_RANGE_DAMAGED;
	}
	if (reduced)
		return EVD_RANGE_REDUCED;
	/* a Seal's own Batch is in no list (the next Seal links to it): the
	   ground log proves it where it holds it */
	s = own_seal ? NULL : list_over(l, rec->first_seq, rec->first_seq + rec->count);
	if (!s)
		return EVD_RANGE_UNPROVEN;
	evd_digest(rec->payload, rec->len, d);
	if (listed(s, d))
		return EVD_RANGE_VERIFIED;
	p->kind = EVD_PROBLEM_CHAIN;
	p->err = -EBADE;
	return EVD_RANGE_CHANGED;
}

static int answers_log(const struct evd_lists *l, const char *path, unsigned n,
                       void (*fn)(void *, const struct evd_problem *), void *ctx, struct evd_result *res)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	struct stor_tail tail;
	int k, r = stor_reader_open(path, &rd);

	if (r < 0) {
		struct evd_problem p = { .kind = EVD_PROBLEM_STORAGE, .answers = n, .err = r };

		p.fault.err = r;
		problem(res, &p, fn, ctx);
		return r == -ENOMEM ? r : 0;
	}
	while ((k = stor_reader_next(rd, &rec)) != 0) {
		struct evd_problem p = { .answers = n };
		enum evd_range_kind kind;

		if (k == -EBADMSG) {
			p.kind = EVD_PROBLEM_STORAGE;
			stor_reader_fault(rd, &p.fault);
			p.segment = p.fault.segment;
			p.offset = p.fault.offset;
			p.seq = p.range_first = p.fault.lost_first;
			p.range_end = p.fault.lost_end;
			p.err = p.fault.err;
			res->answers_batches[EVD_RANGE_DAMAGED]++;
			if (p.range_end > p.range_first)
				res->answers_seqs[EVD_RANGE_DAMAGED] += p.range_end - p.range_first;
			problem(res, &p, fn, ctx);
			continue;
		}
		if (k < 0) {
			r = k;
			break;
		}
		kind = answer(l, &rec, &p);
		res->answers_batches[kind]++;
		res->answers_seqs[kind] += rec.count;
		if (kind == EVD_RANGE_CHANGED || kind == EVD_RANGE_DAMAGED) {
			p.segment = rec.segment;
			p.offset = rec.offset;
			p.seq = p.range_first = rec.first_seq;
			p.range_end = rec.first_seq + rec.count;
			problem(res, &p, fn, ctx);
		}
	}
	if (r == 0 && stor_reader_tail(rd, &tail) == 1 && tail.garbage) {
		struct evd_problem p = { .kind = EVD_PROBLEM_TAIL, .answers = n, .segment = tail.segment,
		                         .offset = tail.garbage_offset };

		problem(res, &p, fn, ctx);
	}
	stor_reader_free(rd);
	return r == -ENOMEM ? r : 0;
}

int evd_answers_verify(const struct evd_lists *l, const char *dir, unsigned n,
                       void (*fn)(void *, const struct evd_problem *), void *ctx, struct evd_result *res)
{
	char path[PATH_MAX];
	int r = 0;

	for (unsigned i = 1; r == 0 && i <= n; i++) {
		snprintf(path, sizeof(path), "%s/answers.%u", dir, i);
		res->answers_logs++;
		r = answers_log(l, path, i, fn, ctx, res);
	}
	return r;
}
