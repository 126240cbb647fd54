/* SPDX-License-Identifier: MIT */
/*
 * verify.c - the verifier (evd.h): a log, record by record in seq order,
 * against its Seals.
 *
 * The digests of the records since the last Seal are kept (a few hundred
 * bytes a second) and folded from the next Seal's chain_start when it
 * comes: the first Seal of a log trimmed by retention, or of a new chain,
 * names its own starting point, and a Seal that links to the one before
 * it must start where that one ended.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evd.h"
#include "record/batch.h"

struct pend {
	uint64_t seq;
	uint32_t count;
	uint8_t d[EVD_HASH_LEN];
	int64_t t_first, t_last;
};

struct evd_verifier {
	uint8_t pk[EVD_PUBLIC_LEN];
	bool has_pk, whole;
	bool have_seal;                 /* a trusted Seal seen: last, last_hash, after */
	struct rec_seal last;
	uint8_t last_hash[EVD_HASH_LEN];
	uint8_t after[EVD_HASH_LEN];    /* the chain after the last Seal's Batch */
	uint8_t log_id[REC_LOG_ID_LEN];
	bool have_log_id;
	uint64_t expect;                /* next seq, 0 before the first record */
	uint64_t first_seen;
	struct pend *pend;              /* records since the last Seal */
	size_t npend, cap;
	struct evd_result res;
};

int evd_verifier_new(const struct evd_verify_cfg *cfg, evd_verifier_t **ret)
{
	evd_verifier_t *v;

	if (!cfg || !ret)
		return -EINVAL;
	if (evd_init() < 0)
		return -EIO;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (cfg->public_key) {
		memcpy(v->pk, cfg->public_key, EVD_PUBLIC_LEN);
		v->has_pk = true;
	}
	v->whole = cfg->whole;
	*ret = v;
	return 0;
}

evd_verifier_t *evd_verifier_free(evd_verifier_t *v)
{
	if (v) {
		free(v->pend);
		free(v);
	}
	return NULL;
}

static int problem(evd_verifier_t *v, struct evd_problem *p, struct evd_problem *ret)
{
	if (!v->res.problems++)
		v->res.first = *p;
	if (ret)
		*ret = *p;
	return 1;
}

int evd_verifier_fault(evd_verifier_t *v, const struct stor_fault *f, struct evd_problem *ret)
{
	struct evd_problem p = { .kind = EVD_PROBLEM_STORAGE };

	if (!v || !f)
		return -EINVAL;
	p.segment = f->segment;
	p.offset = f->offset;
	p.seq = f->lost_first;
	p.range_first = f->lost_first;
	p.range_end = f->lost_end;
	p.fault = *f;
	p.err = f->err;
	return problem(v, &p, ret);
}

static int pend_push(evd_verifier_t *v, const struct stor_rec *rec, const uint8_t d[EVD_HASH_LEN])
{
	if (v->npend == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 256;
		struct pend *n = realloc(v->pend, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		v->pend = n;
		v->cap = cap;
	}
	v->pend[v->npend++] = (struct pend){ .seq = rec->first_seq, .count = rec->count,
	                                     .t_first = rec->t_first_ns, .t_last = rec->t_last_ns };
	memcpy(v->pend[v->npend - 1].d, d, EVD_HASH_LEN);
	return 0;
}

/* Records [lo, hi) that no Seal covers: before the first (whose Seal
   retention deleted), or before a new chain (never sealed: a crash, or
   records the log lost after taking them). */
static void uncovered(evd_verifier_t *v, uint64_t lo, uint64_t hi, bool fresh)
{
	if (hi <= lo)
		return;
	if (!v->have_seal && !v->res.seals && !fresh) {
		if (!v->res.head_first)
			v->res.head_first = lo;
		v->res.head_end = hi;
	} else {
		v->res.unsealed += hi - lo;
	}
}

static void verified(evd_verifier_t *v, uint64_t first, uint64_t end, int64_t t0, int64_t t1)
{
	struct evd_result *r = &v->res;

	if (!r->verified_first) {
		r->verified_first = first;
		r->verified_t_first = t0;
		r->verified_t_last = t1;
	}
	r->verified_end = end;
	if (t0 < r->verified_t_first)
		r->verified_t_first = t0;
	if (t1 > r->verified_t_last)
		r->verified_t_last = t1;
}

/*
 * Does the Seal link to the one before it?  A new chain (prev_seal zero)
 * always may start: the vehicle found no Seal to continue (a crash), and
 * only the key's holder makes such a Seal.
 */
static bool seal_links(const evd_verifier_t *v, const struct rec_seal *s, bool *ret_new)
{
	static const uint8_t zero[EVD_HASH_LEN];

	*ret_new = !memcmp(s->prev_seal, zero, EVD_HASH_LEN);
	if (*ret_new || !v->have_seal)
		return true;
	return !memcmp(s->prev_seal, v->last_hash, EVD_HASH_LEN) && s->first_seq == v->last.end_seq + 1 &&
	       !memcmp(s->chain_start, v->after, EVD_HASH_LEN);
}

/* Fold the kept records of the Seal's range from its chain_start; the
   time span of the range.  false when they do not reach its head. */
static bool seal_chain(evd_verifier_t *v, const struct rec_seal *s, int64_t *t0, int64_t *t1)
{
	uint8_t h[EVD_HASH_LEN];
	size_t i = 0;

	while (i < v->npend && v->pend[i].seq < s->first_seq)
		i++;
	/* a record straddling first_seq cannot be part of this range */
	if (i > 0 && v->pend[i - 1].seq + v->pend[i - 1].count > s->first_seq)
		return false;
	memcpy(h, s->chain_start, EVD_HASH_LEN);
	*t0 = s->t_ns;
	*t1 = s->t_ns;
	for (; i < v->npend; i++) {
		evd_chain_step(h, v->pend[i].d);
		*t0 = v->pend[i].t_first < *t0 ? v->pend[i].t_first : *t0;
		*t1 = v->pend[i].t_last > *t1 ? v->pend[i].t_last : *t1;
	}
	return !memcmp(h, s->chain_head, EVD_HASH_LEN);
}

static int seal_signature(evd_verifier_t *v, const struct stor_rec *rec, const struct rec_seal *s,
                          struct evd_problem *ret)
{
	struct evd_problem p = { .kind = EVD_PROBLEM_SIGNATURE, .segment = rec->segment, .offset = rec->offset,
	                         .seq = rec->first_seq, .range_first = s->first_seq, .range_end = s->end_seq };
	int r;

	if (!v->has_pk)
		return 0;
	r = evd_seal_check(s, v->pk);
	if (r == 0) {
		v->res.signed_seals++;
		return 0;
	}
	p.err = r;
	return problem(v, &p, ret);
}

static int on_seal(evd_verifier_t *v, const struct stor_rec *rec, const struct rec_seal *s,
                   const uint8_t d[EVD_HASH_LEN], struct evd_problem *ret)
{
	struct evd_problem p = { .segment = rec->segment, .offset = rec->offset, .seq = rec->first_seq,
	                         .range_first = s->first_seq, .range_end = s->end_seq };
	bool fresh, whole_range, bad;
	int64_t t0, t1;
	int found;

	found = seal_signature(v, rec, s, ret);
	bad = found;
	whole_range = v->npend && v->pend[0].seq <= s->first_seq;
	if (!seal_links(v, s, &fresh)) {
		p.kind = EVD_PROBLEM_SEAL_LINK;
		found |= problem(v, &p, found ? NULL : ret);
		bad = true;
	} else if (whole_range || v->have_seal || s->first_seq == s->end_seq) {
		/* the whole range is here (or should be): it must hash to the head */
		if (!seal_chain(v, s, &t0, &t1)) {
			p.kind = EVD_PROBLEM_CHAIN;
			found |= problem(v, &p, found ? NULL : ret);
			bad = true;
		}
	} else {
		bad = true; /* its range begins before the log: retention */
	}
	/* --whole: the first Seal starts its chain, and its range is all
	   here (records before a new chain are unsealed, not missing) */
	if (v->whole && !v->have_seal && !v->res.seals && (!fresh || !whole_range)) {
		p.kind = EVD_PROBLEM_HEAD;
		found |= problem(v, &p, found ? NULL : ret);
	}
	/* what came before the range and after the previous Seal */
	uncovered(v, v->have_seal ? v->last.end_seq + 1 : (v->npend ? v->pend[0].seq : s->first_seq),
	          bad ? s->end_seq + 1 : s->first_seq, fresh && !bad);
	if (!bad) {
		v->res.seals++;
		verified(v, s->first_seq, s->end_seq + 1, t0, t1);
	}
	v->last = *s;
	evd_seal_hash(s, v->last_hash);
	memcpy(v->after, s->chain_head, EVD_HASH_LEN);
	evd_chain_step(v->after, d);
	v->have_seal = true;
	v->npend = 0;
	return found;
}

/* A record whose Batch contradicts its frame or its log. */
static int malformed(evd_verifier_t *v, const struct stor_rec *rec, int err, struct evd_problem *ret)
{
	struct evd_problem p = { .kind = EVD_PROBLEM_MALFORMED, .segment = rec->segment, .offset = rec->offset,
	                         .seq = rec->first_seq, .range_first = rec->first_seq,
	                         .range_end = rec->first_seq + rec->count, .err = err };

	return problem(v, &p, ret);
}

/* Decode and cross-check; 0 and the Seal (has_seal) if any, else a problem. */
static int check_batch(evd_verifier_t *v, const struct stor_rec *rec, struct rec_seal *seal, bool *has_seal,
                       struct evd_problem *ret)
{
	struct rec_batch_info info;
	rec_batch_t *b;
	int r = rec_batch_decode(rec->payload, rec->len, &b);

	*has_seal = false;
	if (r < 0)
		return r == -ENOMEM ? r : malformed(v, rec, r, ret);
	rec_batch_info(b, &info);
	if (info.first_seq != rec->first_seq || info.count != rec->count) {
		r = malformed(v, rec, -ERANGE, ret);
	} else if (info.log_id_len == REC_LOG_ID_LEN && v->have_log_id &&
	           memcmp(info.log_id, v->log_id, REC_LOG_ID_LEN)) {
		r = malformed(v, rec, -EXDEV, ret);
	} else {
		if (info.log_id_len == REC_LOG_ID_LEN && !v->have_log_id) {
			memcpy(v->log_id, info.log_id, REC_LOG_ID_LEN);
			v->have_log_id = true;
		}
		r = rec_batch_seal(b, seal);
		*has_seal = r == 0;
		if (r == -EBADMSG || (r == 0 && (seal->end_seq != rec->first_seq || rec->count != 1 ||
		                                 strcmp(seal->vehicle, info.vehicle) ||
		                                 (info.log_id_len && memcmp(seal->log_id, info.log_id, REC_LOG_ID_LEN)))))
			r = malformed(v, rec, -EBADMSG, ret), *has_seal = false;
		else
			r = 0;
	}
	rec_batch_free(b);
	return r;
}

int evd_verifier_record(evd_verifier_t *v, const struct stor_rec *rec, struct evd_problem *ret)
{
	uint8_t d[EVD_HASH_LEN];
	struct rec_seal seal;
	bool has_seal;
	int r;

	if (!v || !rec)
		return -EINVAL;
	v->res.records += rec->count;
	if (!v->first_seen)
		v->first_seen = rec->first_seq;
	if (v->expect && rec->first_seq > v->expect)
		v->res.dropped += rec->first_seq - v->expect;
	v->expect = rec->first_seq + rec->count;
	evd_digest(rec->payload, rec->len, d);
	r = check_batch(v, rec, &seal, &has_seal, ret);
	if (r < 0)
		return r;
	if (has_seal)
		return on_seal(v, rec, &seal, d, ret) | r;
	return pend_push(v, rec, d) < 0 ? -ENOMEM : r;
}

int evd_verifier_end(evd_verifier_t *v, const struct stor_tail *tail, struct evd_problem *ret)
{
	struct evd_problem p = { 0 };
	int found = 0;

	if (!v)
		return -EINVAL;
	if (v->npend) {
		v->res.tail_first = v->pend[0].seq;
		v->res.tail_end = v->expect;
	}
	if (tail && tail->garbage) {
		p = (struct evd_problem){ .kind = EVD_PROBLEM_TAIL, .segment = tail->segment,
		                          .offset = tail->garbage_offset, .seq = v->expect, .range_first = v->expect };
		found = problem(v, &p, ret);
	}
	if (!v->have_seal && v->res.records) {
		p.kind = EVD_PROBLEM_NO_SEAL;
		p.seq = v->first_seen;
		p.range_first = v->first_seen;
		p.range_end = v->expect;
		return problem(v, &p, found ? NULL : ret);
	}
	return found;
}

int evd_verifier_result(const evd_verifier_t *v, struct evd_result *ret)
{
	if (!v || !ret)
		return -EINVAL;
	*ret = v->res;
	return 0;
}

int evd_verify_dir(const char *dir, const struct evd_verify_cfg *cfg, evd_problem_fn fn, void *ctx,
                   struct evd_result *ret)
{
	struct evd_problem p;
	evd_verifier_t *v;
	stor_reader_t *rd;
	struct stor_rec rec;
	int r, k = 0;

	if (!dir || !cfg || !ret)
		return -EINVAL;
	r = stor_reader_open(dir, &rd);
	if (r < 0)
		return r;
	r = evd_verifier_new(cfg, &v);
	while (r >= 0 && (k = stor_reader_next(rd, &rec)) != 0) {
		if (k == 1) {
			r = evd_verifier_record(v, &rec, &p);
		} else if (k == -EBADMSG) {
			struct stor_fault f;
			stor_reader_fault(rd, &f);
			r = evd_verifier_fault(v, &f, &p);
		} else {
			r = k; /* a read error in the newest segment */
		}
		if (r == 1 && fn)
			fn(ctx, &p);
	}
	if (r >= 0) {
		struct stor_tail tail;
		int t = stor_reader_tail(rd, &tail);

		if (t < 0)
			r = t;
		else if (evd_verifier_end(v, t == 1 ? &tail : NULL, &p) == 1 && fn)
			fn(ctx, &p);
	}
	if (r >= 0) {
		evd_verifier_result(v, ret);
		r = ret->problems ? 1 : 0;
	}
	evd_verifier_free(v);
	stor_reader_free(rd);
	return r;
}
