/* SPDX-License-Identifier: MIT */
/*
 * answers.c - a ground log's answers logs (<log>/answers.<n>/, recv
 * --log's home for a request's answers) read beside it under one rule:
 * each seq once, a whole Batch's record before a reduced one's
 * (answers.h).  The answers' seqs are read ahead, a whole Batch's range
 * from its frame header, a reduced one's (a request naming channels)
 * decoded into runs of consecutive seqs, so the rule costs a binary search
 * per record only where a ground log has answers, and nothing where it
 * has none.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "report/answers.h"
#include "record/batch.h"
#include "report/logfault.h"
#include "storage/stor.h"

/* [lo, hi) is read from the answers log src (the first in the rule's
   order that holds it). */
struct own {
	uint64_t lo, hi;
	int src;
};

struct answers_log {
	char *dir;
	unsigned n;
	stor_reader_t *rd;
	struct stor_rec cur;     /* its next Batch, when has */
	bool has;
};

struct rpt_answers {
	struct answers_log *logs; /* by n */
	size_t nlogs;
	struct own *own;         /* sorted, none overlapping */
	size_t nown;
	int last;                /* the log whose cur was handed out: moved on at the next call */
	uint64_t damaged;
};

static int log_cmp(const void *x, const void *y)
{
	const struct answers_log *a = x, *b = y;

	return a->n < b->n ? -1 : a->n > b->n;
}

static int own_cmp(const void *x, const void *y)
{
	const struct own *a = x, *b = y;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Whether a Batch is whole (Batch.reduced, field 18, read without a
   decode): its frame's range is its records'. */
static bool whole(const struct stor_rec *rec)
{
	uint64_t v = 0;

	return rec_batch_field(rec->payload, rec->len, 18, &v) == 0 || !v;
}

/* The index of the interval holding seq, or -1. */
static long own_find(const struct own *own, size_t n, uint64_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (own[mid].hi <= seq)
			lo = mid + 1;
		else if (own[mid].lo > seq)
			hi = mid;
		else
			return (long)mid;
	}
	return -1;
}

/* Add the parts of [lo, hi) nothing read ahead before holds (own[0..nold),
   sorted) as src's: a log's own Batches never overlap each other. */
static int own_add(struct rpt_answers *a, size_t nold, size_t *cap, uint64_t lo, uint64_t hi, int src)
{
	size_t i = 0, top = nold;

	while (i < top) { /* the first that ends past lo */
		size_t mid = i + (top - i) / 2;

		if (a->own[mid].hi <= lo)
			i = mid + 1;
		else
			top = mid;
	}
	while (lo < hi) {
		uint64_t end = i < nold && a->own[i].lo < hi ? a->own[i].lo : hi;

		if (lo < end) {
			if (a->nown == *cap) {
				size_t c = *cap ? *cap * 2 : 64;
				struct own *n = realloc(a->own, c * sizeof(*n));

				if (!n)
					return -ENOMEM;
				a->own = n;
				*cap = c;
			}
			a->own[a->nown++] = (struct own){ lo, end, src };
		}
		if (i >= nold || a->own[i].lo >= hi)
			break;
		lo = a->own[i++].hi;
	}
	return 0;
}

/* A reduced Batch's seqs, in runs of consecutive ones (decoded: one that
   cannot be is said when it is read). */
static int own_add_reduced(struct rpt_answers *a, size_t nold, size_t *cap, const struct stor_rec *rec, int src)
{
	struct rec_batch_info info;
	rec_batch_t *b;
	uint64_t lo = 0, hi = 0;
	int r = 0;

	if (rec_batch_decode(rec->payload, rec->len, &b) < 0)
		return 0;
	if (rec_batch_info(b, &info) == 0)
		for (uint32_t i = 0; r == 0 && i <= info.count; i++) {
			uint64_t s = i < info.count ? rec_batch_seq(b, i) : 0;

			if (i < info.count && s == hi) {
				hi++;
				continue;
			}
			if (lo < hi)
				r = own_add(a, nold, cap, lo, hi, src);
			lo = s;
			hi = s + 1;
		}
	rec_batch_free(b);
	return r;
}

/* Read log src's Batches ahead, its whole ones (whole) or its reduced
   ones: their seqs, and what cannot be read said once, with the whole. */
static int read_ahead(struct rpt_answers *a, int src, bool whole_ones, size_t *cap, FILE *err, const char *cmd)
{
	struct answers_log *l = &a->logs[src];
	size_t nold = a->nown;
	struct stor_rec rec;
	int k, r = 0;

	if (stor_reader_open(l->dir, &l->rd) < 0) {
		a->damaged += whole_ones;
		return 0;
	}
	while (r == 0 && (k = stor_reader_next(l->rd, &rec)) != 0) {
		if (k == -EBADMSG) {
			if (whole_ones)
				a->damaged += rpt_log_fault_print(err, cmd, l->dir, l->rd);
			continue;
		}
		if (k < 0)
			break;
		if (whole(&rec) != whole_ones)
			continue;
		if (whole_ones)
			r = own_add(a, nold, cap, rec.first_seq, rec.first_seq + rec.count, src);
		else
			r = own_add_reduced(a, nold, cap, &rec, src);
	}
	if (r == 0 && whole_ones)
		a->damaged += rpt_log_tail_print(err, cmd, l->dir, l->rd);
	l->rd = stor_reader_free(l->rd);
	if (a->nown > 1) /* qsort's base may not be NULL, even for 0 items (UBSan) */
		qsort(a->own, a->nown, sizeof(*a->own), own_cmp);
	return r;
}

/* The log's next Batch into cur (damage was said ahead). */
static void advance(struct answers_log *l)
{
	int k;

	l->has = false;
	while (l->rd && (k = stor_reader_next(l->rd, &l->cur)) != 0) {
		if (k == -EBADMSG)
			continue;
		if (k < 0)
			break;
		l->has = true;
		return;
	}
}

/* dir's entries answers.<n>, n from 1 (ground/logs.c). */
static int find_logs(struct rpt_answers *a, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t cap = 0;
	int r = 0;

	while (d && r == 0 && (de = readdir(d))) {
		char *end;
		unsigned long n;

		if (strncmp(de->d_name, "answers.", 8) != 0 || !de->d_name[8])
			continue;
		n = strtoul(de->d_name + 8, &end, 10);
		if (*end || !n || n > 1000000)
			continue;
		if (a->nlogs == cap) {
			size_t c = cap ? cap * 2 : 4;
			struct answers_log *l = realloc(a->logs, c * sizeof(*l));

			if (!l) {
				r = -ENOMEM;
				break;
			}
			a->logs = l;
			cap = c;
		}
		a->logs[a->nlogs] = (struct answers_log){ .n = (unsigned)n };
		if (asprintf(&a->logs[a->nlogs].dir, "%s/%s", dir, de->d_name) < 0)
			r = -ENOMEM;
		else
			a->nlogs++;
	}
	if (d)
		closedir(d);
	if (a->nlogs > 1) /* no answers log: a->logs is NULL, which qsort may not take */
		qsort(a->logs, a->nlogs, sizeof(*a->logs), log_cmp);
	return r;
}

int rpt_answers_open(const char *dir, FILE *err, const char *cmd, rpt_answers_t **ret)
{
	struct rpt_answers *a = calloc(1, sizeof(*a));
	size_t cap = 0;
	int r;

	*ret = NULL;
	if (!a)
		return -ENOMEM;
	a->last = -1;
	r = find_logs(a, dir);
	/* the rule's order: whole Batches before reduced ones, each by n */
	for (size_t i = 0; r == 0 && i < a->nlogs; i++)
		r = read_ahead(a, (int)i, true, &cap, err, cmd);
	for (size_t i = 0; r == 0 && i < a->nlogs; i++)
		r = read_ahead(a, (int)i, false, &cap, err, cmd);
	for (size_t i = 0; r == 0 && i < a->nlogs; i++) {
		if (stor_reader_open(a->logs[i].dir, &a->logs[i].rd) == 0)
			advance(&a->logs[i]);
	}
	if (r < 0 || !a->nlogs) {
		rpt_answers_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

rpt_answers_t *rpt_answers_free(rpt_answers_t *a)
{
	if (!a)
		return NULL;
	for (size_t i = 0; i < a->nlogs; i++) {
		stor_reader_free(a->logs[i].rd);
		free(a->logs[i].dir);
	}
	free(a->logs);
	free(a->own);
	free(a);
	return NULL;
}

int rpt_answers_next(rpt_answers_t *a, uint64_t seq, struct stor_rec *rec, int *src)
{
	int best = -1;

	if (!a)
		return 0;
	if (a->last >= 0)
		advance(&a->logs[a->last]);
	a->last = -1;
	for (size_t i = 0; i < a->nlogs; i++)
		if (a->logs[i].has && a->logs[i].cur.first_seq < seq &&
		    (best < 0 || a->logs[i].cur.first_seq < a->logs[best].cur.first_seq))
			best = (int)i;
	if (best < 0)
		return 0;
	a->last = best;
	*rec = a->logs[best].cur;
	*src = best;
	return 1;
}

const char *rpt_answers_dir(const rpt_answers_t *a, int src)
{
	return a && src >= 0 && (size_t)src < a->nlogs ? a->logs[src].dir : "?";
}

bool rpt_answers_take(const rpt_answers_t *a, int src, uint64_t seq)
{
	long i;

	if (!a)
		return true;
	i = own_find(a->own, a->nown, seq);
	return src == RPT_ANSWERS_LOG ? i < 0 : i >= 0 && a->own[i].src == src;
}

uint64_t rpt_answers_damaged(const rpt_answers_t *a)
{
	return a ? a->damaged : 0;
}
