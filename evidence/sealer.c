/* SPDX-License-Identifier: MIT */
/*
 * sealer.c - the vehicle's side of the chain (evd.h): every Batch the log
 * took, in seq order, and the Seals over them.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "evd-private.h"
#include "evd.h"
#include "record/batch.h"

/* Batches in flight to the hasher thread: 8 of the largest */
#define SEALER_HASHER_BYTES (8u << 20)

/* Segments searched back for the last Seal at start: every segment close
   seals (pipeline/sink.c), so it is in the newest closed one or the one
   before, unless a crash cut a segment short. */
#define SEALER_RESUME_SEGMENTS 3

/* Batch digests a Seal lists (Seal v2 batch_digests): 128 KiB, some
   hours of Batches at the default seal interval.  A range with more is
   sealed without the list (the chain head still proves it; a mismatch is
   then named by the whole range). */
#define SEALER_DIGESTS_MAX 4096

/* Seals the log took, newest last: a restart links to the newest one the
   log did not lose since (the log loses at most what it took since its
   last sync: a few Seals at most) */
#define SEALER_TAKEN_MAX 8

struct evd_sealer {
	struct rec_seal proto;            /* vehicle, log id, boot id */
	uint8_t secret[EVD_SECRET_LEN];
	bool has_secret;
	uint8_t head[EVD_HASH_LEN];       /* the chain after the last record added */
	uint8_t start[EVD_HASH_LEN];      /* ... before range_first */
	uint8_t prev[EVD_HASH_LEN];       /* hash of the last Seal in the log, zero: none */
	uint8_t prev_next[EVD_HASH_LEN];  /* hash of the Seal made, once the log took it */
	uint64_t range_first;             /* first seq the next Seal covers */
	uint64_t pending;                 /* records added since */
	uint64_t seal_seq;                /* the Seal Batch expected next, 0: none */
	uint64_t first;                   /* where this chain was taken up */
	bool continued;
	/* d(i) of the Batches since range_first (hasher side), and the copy
	   the last Seal made lists (the caller's: valid until the next seal) */
	uint8_t digests[SEALER_DIGESTS_MAX][EVD_HASH_LEN];
	uint32_t ndigests;
	bool digests_over;
	uint8_t sealed[SEALER_DIGESTS_MAX][EVD_HASH_LEN];
	struct {
		uint64_t seq;                 /* the Seal Batch's seq */
		uint8_t hash[EVD_HASH_LEN];
	} taken[SEALER_TAKEN_MAX];
	unsigned ntaken;
	/* With a hasher, head and start are its thread's between a push and
	   the next drain; the rest is the caller's. */
	struct evd_hasher *hasher;
};

/* One Batch into the chain; with starts_range, the next Seal's range
   starts behind it (it is the previous Seal's own Batch). */
static void sealer_hash(void *ctx, const void *payload, size_t len, bool starts_range)
{
	evd_sealer_t *s = ctx;
	uint8_t d[EVD_HASH_LEN];

	evd_digest(payload, len, d);
	evd_chain_step(s->head, d);
	if (starts_range) {
		memcpy(s->start, s->head, EVD_HASH_LEN);
		s->ndigests = 0;
		s->digests_over = false;
	} else if (s->ndigests < SEALER_DIGESTS_MAX) {
		memcpy(s->digests[s->ndigests++], d, EVD_HASH_LEN);
	} else {
		s->digests_over = true;
	}
}

/* A new chain at first_seq.  Seal v2: prev stays the last Seal the log
   took (zero if none was found), so the new chain's first Seal signs its
   link to what came before it. */
static void sealer_genesis(evd_sealer_t *s, uint64_t first_seq)
{
	evd_chain_genesis(s->proto.log_id, first_seq, s->head);
	memcpy(s->start, s->head, EVD_HASH_LEN);
	s->range_first = s->first = first_seq;
	s->pending = 0;
	s->ndigests = 0;
	s->digests_over = false;
}

static void taken_push(evd_sealer_t *s, uint64_t seq, const uint8_t hash[EVD_HASH_LEN])
{
	if (s->ntaken == SEALER_TAKEN_MAX) {
		memmove(s->taken, s->taken + 1, (SEALER_TAKEN_MAX - 1) * sizeof(s->taken[0]));
		s->ntaken--;
	}
	s->taken[s->ntaken].seq = seq;
	memcpy(s->taken[s->ntaken++].hash, hash, EVD_HASH_LEN);
}

/* The state after a Seal's own Batch: the next range starts behind it. */
static void sealer_after_seal(evd_sealer_t *s, const struct rec_seal *seal, const uint8_t d[EVD_HASH_LEN])
{
	memcpy(s->head, seal->chain_head, EVD_HASH_LEN);
	evd_chain_step(s->head, d);
	memcpy(s->start, s->head, EVD_HASH_LEN);
	evd_seal_hash(seal, s->prev);
	taken_push(s, seal->end_seq, s->prev);
	s->range_first = seal->end_seq + 1;
	s->pending = 0;
	s->ndigests = 0;
	s->digests_over = false;
}

/* The first seq of the oldest of the newest few segments, 0 if none. */
static uint64_t resume_from(const char *dir)
{
	uint64_t top[SEALER_RESUME_SEGMENTS] = { 0 };
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		uint64_t seq;
		size_t k;

		if (strlen(e->d_name) != 24 || strcmp(e->d_name + 20, ".seg"))
			continue;
		seq = strtoull(e->d_name, &end, 10);
		if (end != e->d_name + 20 || !seq)
			continue;
		/* keep the largest few, top[0] the smallest of them */
		for (k = 0; k < SEALER_RESUME_SEGMENTS && seq > top[k]; k++)
			if (k)
				top[k - 1] = top[k];
		if (k)
			top[k - 1] = seq;
	}
	closedir(d);
	for (size_t k = 0; k < SEALER_RESUME_SEGMENTS; k++)
		if (top[k])
			return top[k];
	return 0;
}

/* Is this record a Seal of this log?  Only one-record Batches can be. */
static bool record_seal(const evd_sealer_t *s, const struct stor_rec *rec, struct rec_seal *ret)
{
	rec_batch_t *b;
	bool ok;

	if (rec->count != 1 || rec_batch_decode(rec->payload, rec->len, &b) < 0)
		return false;
	ok = rec_batch_seal(b, ret) == 0 && ret->end_seq == rec->first_seq &&
	     !memcmp(ret->log_id, s->proto.log_id, REC_LOG_ID_LEN);
	rec_batch_free(b);
	return ok;
}

/*
 * Take up the log's chain: the last Seal in the newest segments, then the
 * records after it (written before a crash: the next Seal covers them).
 * Damage after that Seal, or none found: a new chain.
 */
static void sealer_resume(evd_sealer_t *s, const char *dir, uint64_t next_seq)
{
	uint64_t from = resume_from(dir), expect = 0;
	struct stor_rec rec;
	struct rec_seal seal;
	stor_reader_t *r;
	bool found = false;
	int k;

	if (!from || stor_reader_open(dir, &r) < 0)
		return;
	if (stor_reader_seek_seq(r, from) < 0) {
		stor_reader_free(r);
		return;
	}
	while ((k = stor_reader_next(r, &rec)) != 0) {
		uint8_t d[EVD_HASH_LEN];

		if (k < 0) {
			found = false; /* the chain cannot go through damage */
			if (k != -EBADMSG)
				break;
			continue;
		}
		evd_digest(rec.payload, rec.len, d);
		if (record_seal(s, &rec, &seal)) {
			sealer_after_seal(s, &seal, d);
			found = true;
		} else if (found) {
			evd_chain_step(s->head, d);
			if (s->ndigests < SEALER_DIGESTS_MAX)
				memcpy(s->digests[s->ndigests++], d, EVD_HASH_LEN);
			else
				s->digests_over = true;
			s->pending += rec.count;
		}
		expect = rec.first_seq + rec.count;
	}
	stor_reader_free(r);
	s->continued = found && k == 0 && expect <= next_seq;
}

int evd_sealer_new(const struct evd_sealer_cfg *cfg, evd_sealer_t **ret)
{
	evd_sealer_t *s;

	if (!cfg || !ret || !cfg->vehicle || strlen(cfg->vehicle) > REC_SEAL_VEHICLE_MAX || !cfg->next_seq)
		return -EINVAL;
	if (evd_init() < 0)
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s->proto.vehicle, cfg->vehicle, strlen(cfg->vehicle) + 1);
	memcpy(s->proto.log_id, cfg->log_id, REC_LOG_ID_LEN);
	memcpy(s->proto.boot_id, cfg->boot_id, REC_BOOT_ID_LEN);
	s->proto.version = REC_SEAL_VERSION;
	s->proto.batch.schema_version = REC_SCHEMA_VERSION;
	s->proto.batch.config_hash = cfg->config_hash;
	if (cfg->secret) {
		memcpy(s->secret, cfg->secret, EVD_SECRET_LEN);
		s->has_secret = true;
	}
	if (cfg->dir)
		sealer_resume(s, cfg->dir, cfg->next_seq);
	/* not continued: prev is the last Seal found before the damage, if any */
	if (!s->continued)
		sealer_genesis(s, cfg->next_seq);
	s->first = s->range_first;
	if (cfg->threaded) {
		int r = evd_hasher_new(SEALER_HASHER_BYTES, sealer_hash, s, &s->hasher);
		if (r < 0) {
			evd_sealer_free(s);
			return r;
		}
	}
	*ret = s;
	return 0;
}

int evd_sealer_restart(evd_sealer_t *s, uint64_t next_seq, uint64_t lost_first)
{
	if (!s || !next_seq)
		return -EINVAL;
	if (s->hasher)
		evd_hasher_drain(s->hasher);
	/* link to the newest Seal below what the log lost; none known: none */
	memset(s->prev, 0, EVD_HASH_LEN);
	for (unsigned i = s->ntaken; lost_first && i-- > 0;)
		if (s->taken[i].seq < lost_first) {
			memcpy(s->prev, s->taken[i].hash, EVD_HASH_LEN);
			break;
		}
	sealer_genesis(s, next_seq);
	s->seal_seq = 0;
	s->continued = false;
	return 0;
}

evd_sealer_t *evd_sealer_free(evd_sealer_t *s)
{
	if (s) {
		evd_hasher_free(s->hasher);
		sodium_memzero(s->secret, sizeof(s->secret));
		free(s);
	}
	return NULL;
}

bool evd_sealer_continued(const evd_sealer_t *s)
{
	return s && s->continued;
}

uint64_t evd_sealer_first(const evd_sealer_t *s)
{
	return s ? s->first : 0;
}

uint64_t evd_sealer_pending(const evd_sealer_t *s)
{
	return s ? s->pending : 0;
}

/* The bookkeeping of a Batch the log took: true when it starts the next
   Seal's range */
static bool sealer_took(evd_sealer_t *s, uint64_t first_seq, uint32_t count)
{
	bool starts = false;

	if (s->seal_seq && first_seq == s->seal_seq) {
		/* the Seal's own Batch: the next range starts behind it, and
		   the next Seal links to this one */
		starts = true;
		s->range_first = first_seq + count;
		s->pending = 0;
		memcpy(s->prev, s->prev_next, EVD_HASH_LEN);
		taken_push(s, first_seq, s->prev);
	} else {
		s->pending += count;
	}
	s->seal_seq = 0;
	return starts;
}

void evd_sealer_add(evd_sealer_t *s, uint64_t first_seq, uint32_t count, const void *payload, size_t len)
{
	bool starts;

	if (!s)
		return;
	starts = sealer_took(s, first_seq, count);
	if (s->hasher)
		evd_hasher_push(s->hasher, payload, len, starts);
	else
		sealer_hash(s, payload, len, starts);
}

void *evd_sealer_reserve(evd_sealer_t *s, size_t max)
{
	/* a Batch is at most REC_BATCH_MAX_BYTES; more would not fit the ring
	   twice over (evd_hasher_reserve) */
	if (!s || !s->hasher || max > SEALER_HASHER_BYTES / 4)
		return NULL;
	return evd_hasher_reserve(s->hasher, max);
}

void evd_sealer_add_reserved(evd_sealer_t *s, uint64_t first_seq, uint32_t count, size_t len)
{
	bool starts;

	if (!s || !s->hasher)
		return;
	starts = sealer_took(s, first_seq, count);
	evd_hasher_commit(s->hasher, len, starts);
}

int evd_sealer_seal(evd_sealer_t *s, uint64_t end_seq, int64_t t_ns, int64_t mono_t0_ns, struct rec_seal *ret)
{
	struct rec_seal seal;

	if (!s || !ret || end_seq < s->range_first)
		return -EINVAL;
	/* the chain through end_seq - 1: everything pushed so far */
	if (s->hasher)
		evd_hasher_drain(s->hasher);
	seal = s->proto;
	seal.first_seq = s->range_first;
	seal.end_seq = end_seq;
	seal.t_ns = t_ns;
	seal.batch.t0_ns = t_ns;
	seal.batch.mono_t0_ns = mono_t0_ns;
	memcpy(seal.chain_start, s->start, EVD_HASH_LEN);
	memcpy(seal.chain_head, s->head, EVD_HASH_LEN);
	memcpy(seal.prev_seal, s->prev, EVD_HASH_LEN);
	seal.is_signed = false;
	if (!s->digests_over) {
		memcpy(s->sealed, s->digests, (size_t)s->ndigests * EVD_HASH_LEN);
		seal.digests = s->sealed[0];
		seal.ndigests = s->ndigests;
	}
	if (s->has_secret)
		evd_seal_sign(&seal, s->secret);
	/* The next Seal links to this one only if the log takes its Batch
	   (evd_sealer_add of end_seq).  One the log refused (a full disk: its
	   seq is a marked gap) is not linked to: the next Seal covers its
	   range again and links to the Seal before it. */
	evd_seal_hash(&seal, s->prev_next);
	s->seal_seq = end_seq;
	*ret = seal;
	return 0;
}
