/* SPDX-License-Identifier: MIT */
/*
 * ledger.c - the ground's memory per (vehicle, log id) of what the
 * receiver brought: which seqs arrived, which Batches (by their records'
 * digest), the records to hand to on_record and the Batches to on_batch,
 * and the views and waits on it (grd_ledger_log(), grd_ledger_vehicle(),
 * grd_ledger_wait_seq()).
 *
 * Vehicles are found by name in an open-addressing hash table that grows
 * up to max_vehicles; each vehicle has its logs (one per log id, few).
 * Sequence tracking keeps, per log, the sorted set of ranges seen.  A
 * record inside a range was received before; the holes between ranges are
 * the gaps.  The set is bounded: past GRD_LEDGER_MAX_RANGES ranges the
 * oldest is forgotten and everything below the oldest range kept (the
 * floor) is summarised by the counts, so a hostile or broken sender can
 * cost memory only up to a fixed limit.  To tell a re-send from a
 * conflict, each log also keeps a keyed hash (record/digest.h
 * rec_batch_hash(), from the ledger's random seed) of the records of its
 * last GRD_LEDGER_MAX_DIGESTS Batches.
 *
 * One log's sets (its ranges, its seqs on board, its Batches' digests)
 * are ledger-stream.c, struct stream with them in ledger-private.h.
 *
 * The receiver's session (uplink/recv-session.c) decodes each payload and
 * hands it to grd_ledger_feed(); the ledger has its own lock, held
 * through the callbacks, so the session's counters never wait for a
 * database.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "ledger-private.h"
#include "basic/clock.h"
#include "basic/hash.h"
#include "basic/name.h"
#include "record/digest.h"

struct vehicle {
	char *name;
	struct stream *logs;       /* newest first */
	size_t nlogs;
};

struct grd_ledger {
	struct grd_ledger_cfg cfg;
	uint64_t hash_seed;        /* keys the record hashes: not guessable by a sender */

	pthread_mutex_t lock;      /* guards everything below, held through the callbacks */
	pthread_cond_t cond;       /* signalled when records change */
	struct grd_ledger_stats st;
	struct vehicle **tab;      /* hash table of vehicles, tab_cap a power of two */
	size_t tab_cap;
	struct stream **logs;      /* every log, in the order first seen */
	size_t nlogs, logs_cap;
	/* Sum over logs, which may pass 2^64; st.missing saturates.  Two
	   words, not unsigned __int128: 32-bit targets (armhf) have none. */
	struct { uint64_t lo, hi; } missing;
};

/* ---- vehicles ---- */

static uint64_t name_hash(const char *name)
{
	return basic_fnv1a_str(name);
}

static struct vehicle **vehicle_slot(struct vehicle **tab, size_t cap, const char *name)
{
	size_t i = (size_t)name_hash(name) & (cap - 1);

	while (tab[i] && strcmp(tab[i]->name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static struct vehicle *vehicle_find(const grd_ledger_t *r, const char *name)
{
	return r->tab_cap ? *vehicle_slot(r->tab, r->tab_cap, name) : NULL;
}

/* Keep the table at most half full, so probes stay short. */
static int vehicles_grow(grd_ledger_t *r)
{
	size_t cap = r->tab_cap ? r->tab_cap * 2 : 64;
	struct vehicle **tab;

	if ((r->st.vehicles + 1) * 2 <= r->tab_cap)
		return 0;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < r->tab_cap; i++)
		if (r->tab[i])
			*vehicle_slot(tab, cap, r->tab[i]->name) = r->tab[i];
	free(r->tab);
	r->tab = tab;
	r->tab_cap = cap;
	return 0;
}

static int vehicle_add(grd_ledger_t *r, const char *name, struct vehicle **ret)
{
	struct vehicle *v;

	if (r->st.vehicles >= r->cfg.max_vehicles)
		return -EUSERS;
	if (vehicles_grow(r) < 0)
		return -ENOMEM;
	v = calloc(1, sizeof(*v));
	if (!v || !(v->name = strdup(name))) {
		free(v);
		return -ENOMEM;
	}
	*vehicle_slot(r->tab, r->tab_cap, name) = v;
	r->st.vehicles++;
	*ret = v;
	return 0;
}

static bool same_log(const struct stream *s, const struct rec_batch_info *info)
{
	return s->log_id_len == info->log_id_len &&
	       (!info->log_id_len || memcmp(s->log_id, info->log_id, info->log_id_len) == 0);
}

static int stream_add(grd_ledger_t *r, struct vehicle *v, const struct rec_batch_info *info,
                      struct stream **ret)
{
	struct stream *s;

	if (r->nlogs == r->logs_cap) {
		size_t cap = r->logs_cap ? r->logs_cap * 2 : 64;
		struct stream **n = realloc(r->logs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->logs = n;
		r->logs_cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->vehicle = v->name;
	s->log_id_len = info->log_id_len;
	if (info->log_id_len)
		memcpy(s->log_id, info->log_id, info->log_id_len);
	s->next = v->logs;
	v->logs = s;
	v->nlogs++;
	r->logs[r->nlogs++] = s;
	r->st.logs = r->nlogs;
	*ret = s;
	return 0;
}

/* The log of this Batch: -EUSERS past max_vehicles, -ENOMEM. */
static int stream_get(grd_ledger_t *r, const struct rec_batch_info *info, struct stream **ret)
{
	struct vehicle *v = vehicle_find(r, info->vehicle);
	int err;

	if (!v && (err = vehicle_add(r, info->vehicle, &v)) < 0)
		return err;
	for (struct stream *s = v->logs; s; s = s->next)
		if (same_log(s, info)) {
			*ret = s;
			return 0;
		}
	return stream_add(r, v, info, ret);
}

static void stream_free(struct stream *s)
{
	free(s->ob);
	free(s->ranges);
	free(s->dig);
	free(s);
}

int grd_ledger_same_records(const void *a, size_t alen, const void *b, size_t blen)
{
	rec_batch_t *ba = NULL, *bb = NULL;
	int same = -EBADMSG;

	if ((!a && alen) || (!b && blen))
		return -EINVAL;
	if (rec_batch_decode(a, alen, &ba) == 0 && rec_batch_decode(b, blen, &bb) == 0)
		same = rec_batch_same_records(ba, bb);
	rec_batch_free(ba);
	rec_batch_free(bb);
	return same;
}

/* ---- one payload ---- */

static int refuse(grd_ledger_t *r, enum grd_ledger_refusal why, const struct rec_batch_info *info,
                  rec_batch_t **b, const void *payload, size_t len, int err)
{
	r->st.refused[why]++;
	if (r->cfg.on_refused)
		r->cfg.on_refused(r->cfg.ctx, why, info, b, payload, len);
	return err;
}

/* More than GRD_LEDGER_MAX_JUMP records away from everything seen of its log:
   no vehicle loses that many, so it would only make `missing` absurd. */
/* A log's first Batch over GRD_LEDGER_MAX_JUMP from seq 1 (where every log
   starts) has nothing to be checked against: held as a jump until the
   next Batch of the log starts where it ended, which confirms where the
   log lies (an honest vehicle whose log the ground first meets late, its
   start pruned on board, sends one; a lone bogus seq does not). */
static bool first_far(const struct stream *s, const struct rec_batch_info *info)
{
	return info->first_seq > GRD_LEDGER_MAX_JUMP && info->first_seq != s->held_end;
}

static bool seq_jump(const struct stream *s, const struct rec_batch_info *info)
{
	if (!s->end)
		return first_far(s, info);
	return info->first_seq >= s->end + GRD_LEDGER_MAX_JUMP ||
	       info->end_seq + GRD_LEDGER_MAX_JUMP <= s->lowest;
}

/* The records' keyed hash (record/digest.h rec_batch_hash(), from the
   ledger's own seed: kept in memory only, so not the database's FNV-1a
   digest, which costs twice as much);
   *ret_seen: how many at or above the floor were received before. */
static uint64_t batch_scan(const grd_ledger_t *r, const struct stream *s, const rec_batch_t *b,
                           const struct rec_batch_info *info, uint32_t *ret_seen)
{
	uint32_t seen = 0;

	for (uint32_t i = 0; i < info->count; i++) {
		uint64_t seq = rec_batch_seq(b, i);

		seen += seq >= s->floor && grd_ledger_range_covered(s, seq);
	}
	*ret_seen = seen;
	return rec_batch_hash(b, info->count, r->hash_seed);
}

/* Hand what is new to on_record; how many in *ret_written, counts by
   kind, and in *ret_span how many seqs of the Batch's range are new.  A
   record on_record fails for is still counted as received (the seq
   tracking is about what arrived, not what was printed). */
static int stream_write(grd_ledger_t *r, struct stream *s, const rec_batch_t *b,
                        const struct rec_batch_info *info, uint64_t *ret_written, uint64_t *ret_span)
{
	uint64_t fresh = 0, old = 0, unverified = 0;
	uint64_t lo = info->first_seq > s->floor ? info->first_seq : s->floor;
	uint64_t end = info->end_seq, span = end > lo ? grd_ledger_range_uncovered(s, lo, end) : 0;
	uint64_t arrived = 0; /* of seqs on board: fresh, not new to the range */
	bool failed = false;
	int on;

	if (info->reduced && end > lo && grd_ledger_ob_add_uncovered(s, lo, end) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < info->count; i++) {
		uint64_t seq = rec_batch_seq(b, i);
		struct acq_item it;

		if ((on = grd_ledger_ob_take(s, seq)) < 0)
			return on;
		if (!on && seq >= s->floor && grd_ledger_range_covered(s, seq)) {
			unverified++;
			continue;
		}
		/* a seq of this reduced Batch's own new range was put on
		   board just above: it is new to the range, not from board */
		arrived += on && !(info->reduced && seq >= lo && seq < end && !grd_ledger_range_covered(s, seq));
		rec_batch_item(b, i, &it);
		if (r->cfg.on_record &&
		    r->cfg.on_record(r->cfg.ctx, info, b, &it, fresh + old == 0, &s->log_ctx) < 0)
			failed = true;
		if (seq < s->floor && !on)
			old++;
		else
			fresh++;
	}
	r->st.sink_errors += failed;
	if (end > lo && grd_ledger_range_insert(s, lo, end) < 0)
		return -ENOMEM;
	if (end > lo) {
		s->lowest = s->end && s->lowest < lo ? s->lowest : lo;
		s->end = s->end > end ? s->end : end;
	}
	grd_ledger_ob_bound(s);
	s->records += fresh;
	/* a reduced Batch: the seqs of its range it does not bring are on
	   board, not missing (a full Batch brings them all: span == fresh);
	   seqs that were on board and arrived now leave on_board */
	if (info->reduced && span > fresh - arrived) {
		s->on_board += span - (fresh - arrived);
		r->st.on_board += span - (fresh - arrived);
	}
	s->on_board -= arrived;
	r->st.on_board -= arrived;
	s->reduced += info->reduced && span;
	r->st.reduced += info->reduced && span;
	s->old += old;
	s->unverified += unverified;
	s->duplicates += unverified;
	r->st.old += old;
	r->st.unverified += unverified;
	r->st.duplicates += unverified;
	*ret_written = fresh + old;
	*ret_span = span;
	return 0;
}

static int stream_feed(grd_ledger_t *r, struct stream *s, rec_batch_t **bp,
                       const struct rec_batch_info *info, const void *payload, size_t len)
{
	uint64_t hash, written, span;
	uint32_t seen;
	enum seen cmp = SEEN_UNKNOWN;
	const rec_batch_t *b = *bp;
	int err;

	hash = batch_scan(r, s, b, info, &seen);
	/* A reduced Batch is the forwarder's choice of the moment (a restart
	   chooses again from other last values): never a conflict, and no
	   digest of the log's own Batch either. */
	if (seen && !info->reduced)
		cmp = grd_ledger_digest_check(s, info->first_seq, info->count, hash);
	if (cmp == SEEN_SAME) {
		s->duplicates += info->count;
		r->st.duplicates += info->count;
		return 0;
	}
	if (cmp == SEEN_OTHER) {
		s->conflicts++;
		r->st.conflict_records += info->count;
		return refuse(r, GRD_LEDGER_CONFLICT, info, bp, payload, len, -EEXIST);
	}
	err = stream_write(r, s, b, info, &written, &span);
	if (err == 0 && info->first_seq >= s->floor && !info->reduced)
		err = grd_ledger_digest_add(s, info->first_seq, info->count, hash);
	if (err < 0)
		return err;
	/* A reduced Batch that brings no new record but a new range (a source
	   Batch of which nothing passed: all on board) goes to the sinks too:
	   without it the database and the ground log would have a hole there,
	   which gap repair would fill with the whole Batches. */
	if ((written || (info->reduced && span)) && r->cfg.on_batch &&
	    r->cfg.on_batch(r->cfg.ctx, info, bp, payload, len, &s->log_ctx) < 0)
		r->st.sink_errors++;
	if (written)
		r->st.batches++;
	r->st.records += written;
	return (int)(written > INT32_MAX ? INT32_MAX : written);
}

/* r->missing += v and -= v with the carry into the high word; the sum
   never goes below zero (what is taken off was added before). */
static void missing_add(grd_ledger_t *r, uint64_t v)
{
	r->missing.lo += v;
	r->missing.hi += r->missing.lo < v;
}

static void missing_sub(grd_ledger_t *r, uint64_t v)
{
	r->missing.hi -= r->missing.lo < v;
	r->missing.lo -= v;
}

/* One Batch through the ledger, r->lock held. */
static int ledger_feed(grd_ledger_t *r, rec_batch_t **b, const void *payload, size_t len)
{
	struct rec_batch_info info;
	struct stream *s;
	uint64_t missing;
	bool jump;
	int ret;

	if (rec_batch_info(*b, &info) < 0)
		return -EBADMSG;
	/* seq 0 is never assigned, and every seq is below 2^63 (railmon.proto):
	   a Batch out there is malformed, not 2^63 records missing.  (The
	   decoder already refused first_seq + count overflowing.) */
	if (info.first_seq == 0 || info.end_seq > GRD_LEDGER_SEQ_LIMIT)
		return -EBADMSG;
	/* The door: a name against the rule gets no vehicle, no log, no row. */
	if (!basic_vehicle_name_ok(info.vehicle))
		return refuse(r, GRD_LEDGER_BAD_VEHICLE, &info, b, payload, len, -EPERM);
	ret = stream_get(r, &info, &s);
	if (ret < 0)
		return refuse(r, ret == -EUSERS ? GRD_LEDGER_TOO_MANY_VEHICLES : GRD_LEDGER_NO_MEMORY, &info,
		              b, payload, len, ret);
	if (!info.count && !info.reduced)
		return 0;
	jump = seq_jump(s, &info);
	if (jump && !s->end)
		s->held_end = info.end_seq;
	if (jump && r->cfg.on_jump) {
		if (r->cfg.on_jump(r->cfg.ctx, &info, b, payload, len, &s->log_ctx) < 0)
			r->st.sink_errors++;
		return 0;
	}
	if (jump) {
		s->seq_jumps++;
		return refuse(r, GRD_LEDGER_SEQ_JUMP, &info, b, payload, len, -ERANGE);
	}
	missing = grd_ledger_stream_missing(s);
	ret = stream_feed(r, s, b, &info, payload, len);
	if (ret == -ENOMEM)
		ret = refuse(r, GRD_LEDGER_NO_MEMORY, &info, b, payload, len, ret);
	missing_add(r, grd_ledger_stream_missing(s));
	missing_sub(r, missing);
	r->st.missing = r->missing.hi ? UINT64_MAX : r->missing.lo;
	return ret;
}

int grd_ledger_feed(void *ledger, rec_batch_t **b, const void *payload, size_t len)
{
	grd_ledger_t *r = ledger;
	int ret;

	if (!r || !b || !*b || (!payload && len))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	ret = ledger_feed(r, b, payload, len);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* ---- lifetime ---- */

int grd_ledger_new(const struct grd_ledger_cfg *cfg, grd_ledger_t **ret)
{
	grd_ledger_t *r;

	if (!cfg || !ret)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->cfg = *cfg;
	if (!r->cfg.max_vehicles)
		r->cfg.max_vehicles = GRD_LEDGER_MAX_VEHICLES_DEFAULT;
	/* A seed no sender knows, so no sender can make two different Batches
	   hash alike on purpose.  Without entropy the hash is still a good
	   checksum against accidents. */
	if (getrandom(&r->hash_seed, sizeof(r->hash_seed), GRND_NONBLOCK) != sizeof(r->hash_seed))
		r->hash_seed = (uint64_t)basic_mono_ns();
	*ret = r;
	return 0;
}

grd_ledger_t *grd_ledger_free(grd_ledger_t *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->nlogs; i++)
		stream_free(r->logs[i]);
	free(r->logs);
	for (size_t i = 0; i < r->tab_cap; i++) {
		if (r->tab[i])
			free(r->tab[i]->name);
		free(r->tab[i]);
	}
	free(r->tab);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

int grd_ledger_stats(grd_ledger_t *r, struct grd_ledger_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int grd_ledger_stats_try(grd_ledger_t *r, struct grd_ledger_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	if (pthread_mutex_trylock(&r->lock) != 0)
		return -EBUSY;
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int grd_ledger_wait_records(grd_ledger_t *r, uint64_t n, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (r->st.records < n && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = r->st.records >= n ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* ---- views and waits ---- */

static void log_view(const struct stream *s, struct grd_ledger_log *ret)
{
	*ret = (struct grd_ledger_log){
		.vehicle = s->vehicle, .log_id_len = s->log_id_len,
		.first_seq = s->lowest, .next_seq = s->end, .records = s->records,
		.duplicates = s->duplicates, .unverified = s->unverified, .old = s->old,
		.missing = grd_ledger_stream_missing(s), .conflicts = s->conflicts, .seq_jumps = s->seq_jumps,
		.on_board = s->on_board, .reduced = s->reduced,
		.log_ctx = s->log_ctx,
	};
	memcpy(ret->log_id, s->log_id, sizeof(ret->log_id));
}

int grd_ledger_log(grd_ledger_t *r, size_t i, struct grd_ledger_log *ret)
{
	int err = -ENOENT;

	if (!r || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	if (i < r->nlogs) {
		log_view(r->logs[i], ret);
		err = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

int grd_ledger_vehicle(grd_ledger_t *r, const char *name, struct grd_ledger_vehicle *ret)
{
	const struct vehicle *v;
	int err = -ENOENT;

	if (!r || !name || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	v = vehicle_find(r, name);
	/* A vehicle whose Batches were all empty or refused has no record. */
	if (v && v->logs && v->logs->end) {
		const struct stream *s = v->logs;

		*ret = (struct grd_ledger_vehicle){ s->lowest, s->end, s->records, s->duplicates,
		                                  grd_ledger_stream_missing(s), v->nlogs };
		err = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

static bool vehicle_reached(const grd_ledger_t *r, const char *name, uint64_t seq)
{
	const struct vehicle *v = vehicle_find(r, name);

	return v && v->logs && v->logs->end >= seq && grd_ledger_stream_missing(v->logs) == 0;
}

int grd_ledger_wait_seq(grd_ledger_t *r, const char *vehicle, uint64_t seq, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r || !vehicle)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (!vehicle_reached(r, vehicle, seq) && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = vehicle_reached(r, vehicle, seq) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}
