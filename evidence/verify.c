/* SPDX-License-Identifier: MIT */
/*
 * verify.c - the verifier (evd.h): a log, record by record in seq order,
 * against its Seals.  One job over ~600 lines: every path from a record to
 * a range or a problem must be read together, so nothing unproven can end
 * up inside a verified range (the tamper matrix checks that invariant).
 *
 * Everything since the last Seal is kept (a digest and a location per
 * Batch, a few hundred bytes a second; and the seqs the reader could not
 * read or no record holds) until the next Seal says what it proves: each
 * entry then becomes a range of evd_range_kind, in seq order, so nothing
 * unproven is ever inside a verified range.  A Seal's own record is held
 * back one Seal more: the next Seal's link covers its Batch's bytes; the
 * last one is proven by its signature alone (its seq, range, head, time,
 * and v2 its Batch's other fields: record/seal.h rec_seal_batch).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq-item.h"
#include "evd-private.h"
#include "evd.h"
#include "record/batch.h"
#include "record/seal.h"

enum pend_kind {
	PEND_REC = 0, /* a Batch in the chain */
	PEND_BAD,     /* ... that contradicts its frame or log (still chained) */
	PEND_LOST,    /* seqs the reader could not read */
	PEND_MISSING, /* seqs no record holds */
	PEND_REDUCED, /* a reduced Batch (a ground log's): no Seal covers it */
};

struct pend {
	uint64_t seq, segment, offset;
	uint32_t count;
	uint8_t kind;
	uint8_t d[EVD_HASH_LEN];
	int64_t t0; /* the Batch's own t0_ns (sealed content); 0: none */
};

struct evd_verifier {
	uint8_t pk[EVD_PUBLIC_LEN];
	bool has_pk, whole;
	bool have_seal;                 /* a Seal seen: last, last_hash, after */
	struct rec_seal last;           /* (its digest list is not kept) */
	uint8_t last_hash[EVD_HASH_LEN];
	uint8_t after[EVD_HASH_LEN];    /* the chain after the last Seal's Batch */
	uint64_t last_segment, last_offset;
	bool last_ok;                   /* its signature verified */
	bool own_pending;               /* its own seq not yet put in a range */
	uint8_t log_id[REC_LOG_ID_LEN];
	bool have_log_id;
	uint64_t expect;                /* next seq, 0 before the first record */
	uint64_t first_seen, first_segment, first_offset;
	struct pend *pend;              /* entries since the last Seal */
	size_t npend, cap;
	uint8_t (*dig)[EVD_HASH_LEN];   /* the current Seal's digest list (a copy) */
	size_t ndig, digcap;
	struct evd_lists *lists;        /* NULL, or the proven lists kept for a
	                                   ground log's answers logs */
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
		free(v->dig);
		evd_lists_free(v->lists);
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

/* Append [first, end) of a kind, merged with the range before when it
   continues it. */
static void range_add(evd_verifier_t *v, uint64_t first, uint64_t end, enum evd_range_kind kind)
{
	struct evd_result *r = &v->res;
	struct evd_range *prev = r->nranges ? &r->ranges[r->nranges - 1] : NULL;

	if (end <= first)
		return;
	r->seqs[kind] += end - first;
	switch (kind) {
	case EVD_RANGE_VERIFIED:
		if (!r->verified_first)
			r->verified_first = first;
		r->verified_end = end;
		break;
	case EVD_RANGE_HEAD:
		if (!r->head_first)
			r->head_first = first;
		r->head_end = end;
		break;
	case EVD_RANGE_TAIL:
		if (!r->tail_first)
			r->tail_first = first;
		r->tail_end = end;
		break;
	case EVD_RANGE_BETWEEN:
		r->unsealed += end - first;
		break;
	case EVD_RANGE_NOT_STORED:
		r->dropped += end - first;
		break;
	default:
		break;
	}
	if (prev && prev->kind == kind && prev->end == first)
		prev->end = end;
	else if (r->nranges < EVD_RANGES_MAX)
		r->ranges[r->nranges++] = (struct evd_range){ .first = first, .end = end, .kind = kind };
	else
		r->ranges_omitted++;
}

static int pend_add(evd_verifier_t *v, const struct pend *e)
{
	if (v->npend == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 256;
		struct pend *n = realloc(v->pend, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		v->pend = n;
		v->cap = cap;
	}
	v->pend[v->npend++] = *e;
	return 0;
}

/* Seqs [expect, upto) skipped: lost (the reader said why) or missing. */
static int pend_skip(evd_verifier_t *v, uint64_t upto, uint8_t kind, uint64_t segment, uint64_t offset)
{
	struct pend e = { .seq = v->expect, .kind = kind, .segment = segment, .offset = offset };

	if (!v->expect || upto <= v->expect)
		return 0;
	/* a fault's range is at most a segment's: it fits a count */
	e.count = upto - v->expect > UINT32_MAX ? UINT32_MAX : (uint32_t)(upto - v->expect);
	v->expect = e.seq + e.count;
	return pend_add(v, &e);
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
	if (!v->expect && f->lost_end > f->lost_first)
		v->expect = f->lost_first;
	if (pend_skip(v, f->lost_end, PEND_LOST, f->segment, f->offset) < 0)
		return -ENOMEM;
	return problem(v, &p, ret);
}

static bool zero_hash(const uint8_t h[EVD_HASH_LEN])
{
	static const uint8_t zero[EVD_HASH_LEN];

	return !memcmp(h, zero, EVD_HASH_LEN);
}

/* Does the Seal start a new chain?  v2: its (signed) chain_start is the
   genesis of its first seq; v1: it links to no Seal. */
static bool seal_fresh(const struct rec_seal *s)
{
	uint8_t g[EVD_HASH_LEN];

	if (s->version < 2)
		return zero_hash(s->prev_seal);
	evd_chain_genesis(s->log_id, s->first_seq, g);
	return !memcmp(g, s->chain_start, EVD_HASH_LEN);
}

static int seal_signature(evd_verifier_t *v, const struct stor_rec *rec, const struct rec_seal *s,
                          bool *ret_ok, struct evd_problem *ret)
{
	struct evd_problem p = { .kind = EVD_PROBLEM_SIGNATURE, .segment = rec->segment, .offset = rec->offset,
	                         .seq = rec->first_seq, .range_first = s->first_seq, .range_end = s->end_seq + 1 };
	int r;

	*ret_ok = true;
	if (!v->has_pk)
		return 0;
	r = evd_seal_check(s, v->pk);
	if (r == 0) {
		v->res.signed_seals++;
		return 0;
	}
	*ret_ok = false;
	v->res.bad_signatures++;
	p.err = r;
	return problem(v, &p, ret);
}

/* The entries of a Seal's range fold from its chain_start to its head? */
static bool range_folds(const evd_verifier_t *v, size_t from, const struct rec_seal *s)
{
	uint8_t h[EVD_HASH_LEN];

	memcpy(h, s->chain_start, EVD_HASH_LEN);
	for (size_t i = from; i < v->npend; i++)
		if (v->pend[i].kind == PEND_REC || v->pend[i].kind == PEND_BAD)
			evd_chain_step(h, v->pend[i].d);
	return !memcmp(h, s->chain_head, EVD_HASH_LEN);
}

/* Keep a copy of the Seal's digest list: it points into its Batch. */
static int list_copy(evd_verifier_t *v, const struct rec_seal *s)
{
	v->ndig = 0;
	if (!s->ndigests || !s->digests)
		return 0;
	if (s->ndigests > v->digcap) {
		void *n = realloc(v->dig, (size_t)s->ndigests * EVD_HASH_LEN);
		if (!n)
			return -ENOMEM;
		v->dig = n;
		v->digcap = s->ndigests;
	}
	memcpy(v->dig, s->digests, (size_t)s->ndigests * EVD_HASH_LEN);
	v->ndig = s->ndigests;
	return 0;
}

/* The list proves each Batch it lists when it folds from the Seal's
   (signed) chain_start to its (signed) chain_head. */
static bool list_proves(const evd_verifier_t *v, const struct rec_seal *s)
{
	uint8_t h[EVD_HASH_LEN];

	if (!v->ndig)
		return false;
	memcpy(h, s->chain_start, EVD_HASH_LEN);
	for (size_t i = 0; i < v->ndig; i++)
		evd_chain_step(h, v->dig[i]);
	return !memcmp(h, s->chain_head, EVD_HASH_LEN);
}

/* Is d in the list at or after *pos?  Moves *pos past it. */
static bool list_find(const evd_verifier_t *v, size_t *pos, const uint8_t d[EVD_HASH_LEN])
{
	for (size_t i = *pos; i < v->ndig; i++)
		if (!memcmp(v->dig[i], d, EVD_HASH_LEN)) {
			*pos = i + 1;
			return true;
		}
	return false;
}

static void time_span(int64_t *first, int64_t *last, int64_t t)
{
	if (!t)
		return;
	if (!*first || t < *first)
		*first = t;
	if (t > *last)
		*last = t;
}

static void time_seen(evd_verifier_t *v, int64_t t)
{
	time_span(&v->res.verified_t_first, &v->res.verified_t_last, t);
}

static void seal_time_seen(evd_verifier_t *v, int64_t t)
{
	time_span(&v->res.seal_t_first, &v->res.seal_t_last, t);
}

/* An entry of a range, whose Batches are proven (VERIFIED) or not (kind). */
static void entry_range(evd_verifier_t *v, const struct pend *e, enum evd_range_kind kind)
{
	/* whatever the Seal says of its range: the forwarder made this Batch,
	   the vehicle's log holds the records it was made from */
	if (e->kind == PEND_REDUCED)
		kind = EVD_RANGE_REDUCED;
	else if (e->kind == PEND_LOST)
		kind = EVD_RANGE_DAMAGED;
	else if (e->kind == PEND_BAD)
		kind = EVD_RANGE_DAMAGED;
	else if (e->kind == PEND_MISSING && kind == EVD_RANGE_VERIFIED)
		kind = EVD_RANGE_NOT_STORED; /* the chain matches without them */
	else if (e->kind == PEND_MISSING && kind != EVD_RANGE_CHANGED)
		kind = EVD_RANGE_NOT_STORED;
	if (kind == EVD_RANGE_VERIFIED)
		time_seen(v, e->t0);
	range_add(v, e->seq, e->seq + e->count, kind);
}

/* Does the range [from, npend) hold a reduced Batch (a ground log's)? */
static bool range_reduced(const evd_verifier_t *v, size_t from)
{
	for (size_t i = from; i < v->npend; i++)
		if (v->pend[i].kind == PEND_REDUCED)
			return true;
	return false;
}

/*
 * The entries of a Seal's range [from, npend), its chain head not matched:
 * with a digest list that proves itself, each Batch it lists is verified
 * and each other is changed; without, all of them are (unproven when the
 * range began before the log).  Returns the first changed entry, or npend.
 */
static size_t range_by_list(evd_verifier_t *v, size_t from, bool list_ok, bool complete)
{
	size_t pos = 0, bad = v->npend;
	bool reduced = range_reduced(v, from);

	for (size_t i = from; i < v->npend; i++) {
		struct pend *e = &v->pend[i];
		enum evd_range_kind k;

		if (e->kind == PEND_REDUCED)
			k = EVD_RANGE_REDUCED; /* never the Seal's: not a change */
		else if (!list_ok && reduced)
			k = EVD_RANGE_UNPROVEN; /* the chain went through the vehicle's
			                           Batches, not these: nothing to fold */
		else if (!list_ok)
			k = complete ? EVD_RANGE_CHANGED : EVD_RANGE_HEAD;
		else if (e->kind == PEND_REC || e->kind == PEND_BAD)
			k = list_find(v, &pos, e->d) ? EVD_RANGE_VERIFIED : EVD_RANGE_CHANGED;
		else
			k = complete ? EVD_RANGE_CHANGED : EVD_RANGE_NOT_STORED; /* a listed Batch gone */
		if (k == EVD_RANGE_CHANGED && e->kind != PEND_LOST && bad == v->npend)
			bad = i;
		entry_range(v, e, k);
	}
	return bad;
}

/* The previous Seal's own record, now that the Seal after it says whether
   its Batch's bytes are those it linked to (changed: false). */
static void own_range(evd_verifier_t *v, bool changed)
{
	if (!v->own_pending)
		return;
	v->own_pending = false;
	range_add(v, v->last.end_seq, v->last.end_seq + 1,
	          changed ? EVD_RANGE_CHANGED : v->last_ok ? EVD_RANGE_VERIFIED : EVD_RANGE_UNPROVEN);
}

struct seal_ctx {
	const struct stor_rec *rec;
	const struct rec_seal *s;
	struct evd_problem *ret;
	int found;
	int err;
};

static void seal_problem(evd_verifier_t *v, struct seal_ctx *c, enum evd_problem_kind kind)
{
	struct evd_problem p = { .kind = kind, .segment = c->rec->segment, .offset = c->rec->offset,
	                         .seq = c->rec->first_seq, .range_first = c->s->first_seq,
	                         .range_end = c->s->end_seq + 1, .err = c->err };

	c->found |= problem(v, &p, c->found ? NULL : c->ret);
}

/* The Seal's link to the one before it: 1 good, 0 broken; *ret_changed:
   the previous Seal's own Batch is not the one the chain went through. */
static bool seal_links(evd_verifier_t *v, const struct rec_seal *s, bool fresh, bool *ret_changed)
{
	*ret_changed = false;
	if (!v->have_seal)
		return true;
	if (fresh) /* a restart: linked to the last Seal, or to none found */
		return zero_hash(s->prev_seal) || !memcmp(s->prev_seal, v->last_hash, EVD_HASH_LEN);
	if (memcmp(s->prev_seal, v->last_hash, EVD_HASH_LEN) || s->first_seq != v->last.end_seq + 1)
		return false;
	*ret_changed = memcmp(s->chain_start, v->after, EVD_HASH_LEN) != 0;
	return true;
}

/* The entries of the range: from the first one at or above first_seq.
   false when one straddles first_seq (no range can start inside a Batch). */
static bool range_from(const evd_verifier_t *v, const struct rec_seal *s, size_t *ret_from)
{
	size_t i = 0;

	while (i < v->npend && v->pend[i].seq < s->first_seq)
		i++;
	*ret_from = i;
	return !(i > 0 && v->pend[i - 1].seq + v->pend[i - 1].count > s->first_seq);
}

static int on_seal(evd_verifier_t *v, const struct stor_rec *rec, const struct rec_seal *s,
                   const uint8_t d[EVD_HASH_LEN], struct evd_problem *ret)
{
	struct seal_ctx c = { .rec = rec, .s = s, .ret = ret };
	bool sig_ok, fresh = seal_fresh(s), link_ok, prev_changed, list_ok, complete;
	size_t from, bad;

	if (s->version < 2)
		v->res.v1_seals++;
	c.found = seal_signature(v, rec, s, &sig_ok, ret);
	/* for the answers logs: whatever the ground log's own Batches are, a
	   list the signed Seal proves names the vehicle's Batches */
	if (v->lists && sig_ok && s->version >= 2 && list_proves(v, s) &&
	    evd_lists_add(v->lists, s, (const uint8_t (*)[32])v->dig, v->ndig) < 0)
		return -ENOMEM;
	link_ok = seal_links(v, s, fresh, &prev_changed);
	if (prev_changed && sig_ok) {
		/* the Seal before was linked to through other bytes: its Batch
		   changed outside its signed Seal; named at itself */
		struct evd_problem p = { .kind = EVD_PROBLEM_CHAIN, .segment = v->last_segment,
		                         .offset = v->last_offset, .seq = v->last.end_seq,
		                         .range_first = v->last.end_seq, .range_end = v->last.end_seq + 1,
		                         .err = -ESTALE };
		c.found |= problem(v, &p, c.found ? NULL : ret);
	}
	own_range(v, prev_changed && sig_ok);
	if (!link_ok)
		seal_problem(v, &c, EVD_PROBLEM_SEAL_LINK);
	if (!range_from(v, s, &from) && sig_ok && link_ok) {
		c.err = -EDOM;
		seal_problem(v, &c, EVD_PROBLEM_CHAIN);
		c.err = 0;
		link_ok = false;
	}
	/* --whole: the log starts at seq 1 (a log's first seq: what came
	   before a chain restart cannot be deleted unseen), and its first Seal
	   starts a chain (its range does not reach before the log).  Records
	   before that chain (a log that lost its first Seals, a crash before
	   sealing) are not proven, and said so, but are not missing. */
	if (v->whole && !v->have_seal && (v->first_seen > 1 || !fresh))
		seal_problem(v, &c, EVD_PROBLEM_HEAD);
	/* what came before its range: before the first Seal, or between chains */
	for (size_t i = 0; i < from; i++)
		entry_range(v, &v->pend[i], v->have_seal ? EVD_RANGE_BETWEEN : EVD_RANGE_HEAD);
	/* the range is all here when it links to the Seal before, starts a
	   chain, or its first seq is read; else it began before the log */
	complete = v->have_seal || fresh || (from < v->npend && v->pend[from].seq == s->first_seq) ||
	           s->first_seq == s->end_seq;
	if (!sig_ok || !link_ok) {
		for (size_t i = from; i < v->npend; i++)
			entry_range(v, &v->pend[i], EVD_RANGE_UNPROVEN);
	} else if (complete && range_folds(v, from, s)) {
		for (size_t i = from; i < v->npend; i++)
			entry_range(v, &v->pend[i], EVD_RANGE_VERIFIED);
		v->res.seals++;
		seal_time_seen(v, s->t_ns);
	} else {
		list_ok = list_proves(v, s);
		bad = range_by_list(v, from, list_ok, complete);
		if (bad < v->npend) {
			/* the first Batch proven changed (with a list), or the
			   first of the range (without) */
			struct evd_problem p = { .kind = EVD_PROBLEM_CHAIN, .segment = v->pend[bad].segment,
			                         .offset = v->pend[bad].offset, .seq = v->pend[bad].seq,
			                         .range_first = v->pend[bad].seq,
			                         .range_end = v->pend[bad].seq + v->pend[bad].count,
			                         .err = v->pend[bad].kind == PEND_MISSING ? -ENOENT : -EBADE };
			if (!list_ok) {
				p.err = 0;
				p.range_first = s->first_seq;
				p.range_end = s->end_seq;
			}
			c.found |= problem(v, &p, c.found ? NULL : ret);
		} else if (complete && !range_reduced(v, from)) {
			seal_problem(v, &c, EVD_PROBLEM_CHAIN); /* e.g. an empty range */
		} else if (list_ok) {
			/* its range began before the log (retention), or holds a
			   ground log's reduced Batches (named as such): what else is
			   left of it is proven by the list */
			v->res.seals++;
			seal_time_seen(v, s->t_ns);
		}
	}
	v->last = *s;
	v->last.digests = NULL;
	v->last.ndigests = 0;
	v->last_ok = sig_ok;
	v->last_segment = rec->segment;
	v->last_offset = rec->offset;
	v->own_pending = true;
	evd_seal_hash(s, v->last_hash);
	memcpy(v->after, s->chain_head, EVD_HASH_LEN);
	evd_chain_step(v->after, d);
	v->have_seal = true;
	v->npend = 0;
	return c.found;
}

/* A record whose Batch contradicts its frame or its log. */
static int malformed(evd_verifier_t *v, const struct stor_rec *rec, int err, struct evd_problem *ret)
{
	struct evd_problem p = { .kind = EVD_PROBLEM_MALFORMED, .segment = rec->segment, .offset = rec->offset,
	                         .seq = rec->first_seq, .range_first = rec->first_seq,
	                         .range_end = rec->first_seq + rec->count, .err = err };

	return problem(v, &p, ret);
}

/* A Seal Batch holds one record, the SEAL event at the Seal's own time,
   and nothing else: every record it holds is then what the Seal signs. */
static bool seal_batch_ok(const rec_batch_t *b, const struct rec_batch_info *info, const struct rec_seal *s,
                          const struct stor_rec *rec)
{
	struct acq_item it;

	if (s->end_seq != rec->first_seq || rec->count != 1 || strcmp(s->vehicle, info->vehicle) ||
	    (info->log_id_len && memcmp(s->log_id, info->log_id, REC_LOG_ID_LEN)) || info->nchannels ||
	    info->nhealth || rec_batch_item(b, 0, &it) < 0)
		return false;
	/* the record's time, arg and detail are the Seal's (signed) own */
	return it.kind == ACQ_ITEM_EVENT && it.event.code == ACQ_EV_SEAL && it.t_ns == s->t_ns &&
	       it.event.arg == (int64_t)(s->end_seq - s->first_seq) && it.event.detail == (uint32_t)s->is_signed &&
	       info->boot_id_len == REC_BOOT_ID_LEN && !memcmp(info->boot_id, s->boot_id, REC_BOOT_ID_LEN);
}

/*
 * v2: a Seal Batch is byte for byte what railmon's encoder makes of its
 * signed Seal and signed Batch fields (the sink's pl_sink_seal), but the
 * historical flag of a re-send.  Any other byte (an unknown field, an
 * empty column, the event's source, the same values encoded otherwise)
 * would change the chain's digest of the Batch, which no later Seal
 * checks for the last one.  1 canonical, 0 not, -ENOMEM.
 */
static int seal_batch_canonical(const struct rec_seal *s, const struct stor_rec *rec)
{
	struct rec_batch_meta meta = { .vehicle = s->vehicle, .config_hash = s->batch.config_hash };
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .bus = ACQ_SOURCE_DAEMON, .t_ns = s->t_ns };
	size_t len;
	const uint8_t *buf;
	rec_encoder_t *enc;
	int64_t off = 0;
	int r;

	if (s->batch.mono_t0_ns && __builtin_sub_overflow(s->t_ns, s->batch.mono_t0_ns, &off))
		return 0;
	memcpy(meta.boot_id, s->boot_id, REC_BOOT_ID_LEN);
	memcpy(meta.log_id, s->log_id, REC_LOG_ID_LEN);
	r = rec_encoder_new(&meta, 1, &enc);
	if (r < 0)
		return r == -ENOMEM ? r : 0;
	ev.event = (struct acq_event){ .code = ACQ_EV_SEAL, .arg = (int64_t)(s->end_seq - s->first_seq),
	                               .detail = s->is_signed };
	if (s->batch.mono_t0_ns)
		rec_encoder_set_clock_offset(enc, off);
	r = rec_encoder_add(enc, &ev);
	if (r >= 0)
		r = rec_encoder_set_seal(enc, s);
	if (r >= 0)
		r = rec_encoder_finish(enc, s->end_seq, &buf, &len);
	/* the payload is those bytes, then only historical flags: cut from
	   the end, not compared by length, since the encoder's own last
	   bytes (a digest's) may read as one */
	r = r == -ENOMEM ? r : r == 1 && len <= rec->len && !memcmp(buf, rec->payload, len) &&
	                       evd_evidence_len((const uint8_t *)rec->payload + len, rec->len - len) == 0;
	rec_encoder_free(enc);
	return r;
}

/* Decode and cross-check; 0 and the Seal (has_seal) if any, else a problem. */
static int check_batch(evd_verifier_t *v, const struct stor_rec *rec, struct rec_seal *seal, bool *has_seal,
                       int64_t *t0, bool *reduced, struct evd_problem *ret)
{
	struct rec_batch_info info;
	rec_batch_t *b;
	int k, r = rec_batch_decode(rec->payload, rec->len, &b);

	*has_seal = false;
	*t0 = 0;
	*reduced = false;
	if (r < 0)
		return r == -ENOMEM ? r : malformed(v, rec, r, ret);
	rec_batch_info(b, &info);
	/* a reduced Batch's frame (a ground log's) spans its source range */
	*reduced = info.reduced;
	if (info.first_seq != rec->first_seq || info.end_seq - info.first_seq != rec->count) {
		r = malformed(v, rec, -ERANGE, ret);
	} else if (info.log_id_len == REC_LOG_ID_LEN && v->have_log_id &&
	           memcmp(info.log_id, v->log_id, REC_LOG_ID_LEN)) {
		r = malformed(v, rec, -EXDEV, ret);
	} else {
		if (info.log_id_len == REC_LOG_ID_LEN && !v->have_log_id) {
			memcpy(v->log_id, info.log_id, REC_LOG_ID_LEN);
			v->have_log_id = true;
		}
		*t0 = info.count ? info.t0_ns : 0;
		r = rec_batch_seal(b, seal);
		*has_seal = r == 0;
		k = r == 0 && seal->version >= 2 ? seal_batch_canonical(seal, rec) : 1;
		if (k < 0)
			r = k;
		else if (r == -EBADMSG || (r == 0 && (!seal_batch_ok(b, &info, seal, rec) || !k)))
			r = malformed(v, rec, -EBADMSG, ret), *has_seal = false;
		else
			r = 0;
		if (*has_seal && list_copy(v, seal) < 0)
			r = -ENOMEM;
		seal->digests = NULL; /* the copy (v->dig) is what on_seal reads */
	}
	rec_batch_free(b);
	return r;
}

int evd_verifier_record(evd_verifier_t *v, const struct stor_rec *rec, struct evd_problem *ret)
{
	struct pend e = { 0 };
	struct rec_seal seal;
	bool has_seal, reduced;
	int r, k;

	if (!v || !rec)
		return -EINVAL;
	if (v->expect && rec->first_seq < v->expect)
		/* seqs already read: a reader never returns them twice */
		return malformed(v, rec, -EEXIST, ret);
	v->res.records += rec->count;
	if (!v->first_seen) {
		v->first_seen = rec->first_seq;
		v->first_segment = rec->segment;
		v->first_offset = rec->offset;
		v->expect = rec->first_seq;
	}
	if (pend_skip(v, rec->first_seq, PEND_MISSING, rec->segment, rec->offset) < 0)
		return -ENOMEM;
	v->expect = rec->first_seq + rec->count;
	e = (struct pend){ .seq = rec->first_seq, .count = rec->count, .segment = rec->segment,
	                   .offset = rec->offset };
	evd_digest(rec->payload, rec->len, e.d);
	r = check_batch(v, rec, &seal, &has_seal, &e.t0, &reduced, ret);
	if (r < 0)
		return r;
	if (has_seal && r == 0) {
		k = on_seal(v, rec, &seal, e.d, ret);
		return k < 0 ? k : k | r;
	}
	e.kind = r ? PEND_BAD : reduced ? PEND_REDUCED : PEND_REC;
	return pend_add(v, &e) < 0 ? -ENOMEM : r;
}

int evd_verifier_end(evd_verifier_t *v, const struct stor_tail *tail, struct evd_problem *ret)
{
	struct evd_problem p = { 0 };
	int found = 0;

	if (!v)
		return -EINVAL;
	/* the last Seal's own record: its signature is what covers it */
	own_range(v, false);
	for (size_t i = 0; i < v->npend; i++)
		entry_range(v, &v->pend[i], v->have_seal ? EVD_RANGE_TAIL : EVD_RANGE_NO_SEAL);
	v->npend = 0;
	if (tail && tail->garbage) {
		p = (struct evd_problem){ .kind = EVD_PROBLEM_TAIL, .segment = tail->segment,
		                          .offset = tail->garbage_offset, .seq = v->expect, .range_first = v->expect };
		found = problem(v, &p, ret);
	}
	if (!v->have_seal && v->res.records) {
		p = (struct evd_problem){ .kind = EVD_PROBLEM_NO_SEAL, .segment = v->first_segment,
		                          .offset = v->first_offset, .seq = v->first_seen,
		                          .range_first = v->first_seen, .range_end = v->expect };
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
	evd_verifier_t *v = NULL;
	stor_reader_t *rd;
	struct stor_rec rec;
	struct stor_progress pg;
	unsigned answers;
	int r, k = 0;

	if (!dir || !cfg || !ret)
		return -EINVAL;
	r = stor_reader_open(dir, &rd);
	if (r < 0)
		return r;
	answers = evd_answers_count(dir);
	r = evd_verifier_new(cfg, &v);
	if (r >= 0 && answers && !(v->lists = evd_lists_new()))
		r = -ENOMEM;
	stor_progress_init(&pg, dir, cfg->progress, cfg->progress_ctx); /* failing: no progress, nothing else */
	while (r >= 0 && (k = stor_reader_next(rd, &rec)) != 0) {
		if (k == 1) {
			stor_progress_at(&pg, rec.segment, rec.offset);
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
		if (answers)
			r = evd_answers_verify(v->lists, dir, answers, fn, ctx, ret);
	}
	if (r >= 0)
		r = ret->problems ? 1 : 0;
	stor_progress_end(&pg);
	evd_verifier_free(v);
	stor_reader_free(rd);
	return r;
}
