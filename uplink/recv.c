/* SPDX-License-Identifier: MIT */
/*
 * recv.c - ground-side consumer: MQTT session and per-log sequence
 * tracking; the records to write out go to the caller's on_record.
 *
 * Vehicles are found by name in an open-addressing hash table that grows
 * up to max_vehicles; each vehicle has its logs (one per log id, few).
 * Sequence tracking keeps, per log, the sorted set of ranges seen.  A
 * record inside a range was received before; the holes between ranges are
 * the gaps.  The set is bounded: past UPL_RECV_MAX_RANGES ranges the
 * oldest is forgotten and everything below the oldest range kept (the
 * floor) is summarised by the counts, so a hostile or broken sender can
 * cost memory only up to a fixed limit.  To tell a re-send from a
 * conflict, each log also keeps a hash of the records of its last
 * UPL_RECV_MAX_DIGESTS Batches.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "mqtt-private.h"
#include "recv.h"
#include "record/digest.h"
#include "basic/clock.h"
#include "basic/name.h"

struct range {
	uint64_t lo, hi; /* [lo, hi) */
};

/* One accepted Batch, by the records it holds (not its bytes: a backlog
   re-send carries two more bytes, Batch.historical). */
struct digest {
	uint64_t first_seq;
	uint64_t hash;
	uint32_t count;
};

/* One (vehicle, log id). */
struct stream {
	const char *vehicle;       /* the vehicle's name */
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;
	struct range *ranges;      /* sorted, disjoint, not touching */
	size_t nranges, cap;
	uint64_t floor;            /* 0, or where the remembered ranges begin */
	uint64_t lowest, end;      /* span of the records counted; end 0: none yet */
	uint64_t records, duplicates, unverified, old, conflicts, seq_jumps;
	struct digest *dig;        /* ring sorted by first_seq, non-overlapping */
	size_t dig_head, ndig, dig_cap; /* dig_cap a power of two */
	void *log_ctx;
	struct stream *next;       /* the vehicle's logs, newest first */
};

struct vehicle {
	char *name;
	struct stream *logs;       /* newest first */
	size_t nlogs;
};

struct upl_recv {
	struct upl_recv_cfg cfg;   /* strings point at our copies */
	atomic_bool stop;
	uint64_t hash_seed;        /* keys the record hashes: not guessable by a sender */

	pthread_mutex_t lock;      /* guards everything below */
	pthread_cond_t cond;       /* signalled when subscribed or records change */
	struct upl_recv_stats st;
	struct vehicle **tab;      /* hash table of vehicles, tab_cap a power of two */
	size_t tab_cap;
	struct stream **logs;      /* every log, in the order first seen */
	size_t nlogs, logs_cap;
	/* Sum over logs, which may pass 2^64; st.missing saturates.  Two
	   words, not unsigned __int128: 32-bit targets (armhf) have none. */
	struct { uint64_t lo, hi; } missing;

	/* upl_recv_publish()'s queue: its own lock, since r->lock is held
	   through callbacks that may wait for a database. */
	pthread_mutex_t pub_lock;
	struct pub_msg { char *topic; void *payload; size_t len; } pub[UPL_RECV_PUB_MAX];
	size_t npub;
	const char *aux_match;     /* aux_topic without a $share/<group>/ prefix */

	/* Session state, only touched by the thread in upl_recv_run(). */
	int connack_rc;
	bool lost, sub_refused;
	char last_log_error[128];  /* libmosquitto's last error line (TLS details) */
};

/* ---- vehicles ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t name_hash(const char *name)
{
	return fnv1a(0xcbf29ce484222325ull, name, strlen(name));
}

static struct vehicle **vehicle_slot(struct vehicle **tab, size_t cap, const char *name)
{
	size_t i = (size_t)name_hash(name) & (cap - 1);

	while (tab[i] && strcmp(tab[i]->name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &tab[i];
}

static struct vehicle *vehicle_find(const upl_recv_t *r, const char *name)
{
	return r->tab_cap ? *vehicle_slot(r->tab, r->tab_cap, name) : NULL;
}

/* Keep the table at most half full, so probes stay short. */
static int vehicles_grow(upl_recv_t *r)
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

static int vehicle_add(upl_recv_t *r, const char *name, struct vehicle **ret)
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

static int stream_add(upl_recv_t *r, struct vehicle *v, const struct rec_batch_info *info,
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
static int stream_get(upl_recv_t *r, const struct rec_batch_info *info, struct stream **ret)
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
	free(s->ranges);
	free(s->dig);
	free(s);
}

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

static bool range_covered(const struct stream *s, uint64_t seq)
{
	size_t i = range_find(s, seq + 1);

	return i < s->nranges && s->ranges[i].lo <= seq;
}

/* Room for one more range: one over UPL_RECV_MAX_RANGES, so a range is
   inserted first and the oldest forgotten after (it may be the new one). */
static int range_reserve(struct stream *s)
{
	struct range *n;
	size_t cap;

	if (s->nranges < s->cap)
		return 0;
	cap = s->cap ? s->cap * 2 : 4;
	if (cap > UPL_RECV_MAX_RANGES + 1)
		cap = UPL_RECV_MAX_RANGES + 1;
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
static int range_insert(struct stream *s, uint64_t lo, uint64_t hi)
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
	while (s->nranges > UPL_RECV_MAX_RANGES)
		range_forget_oldest(s);
	return 0;
}

static uint64_t stream_missing(const struct stream *s)
{
	return s->end ? s->end - s->lowest - s->records : 0;
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

enum seen { SEEN_UNKNOWN, SEEN_SAME, SEEN_OTHER };

/* Compare a Batch whose records were (partly) seen before with the Batches
   remembered in its range. */
static enum seen digest_check(const struct stream *s, uint64_t first, uint32_t count,
                              uint64_t hash)
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

/* Remember a Batch; past UPL_RECV_MAX_DIGESTS the lowest goes. */
static int digest_add(struct stream *s, uint64_t first, uint32_t count, uint64_t hash)
{
	size_t at = dig_find(s, first);

	if (s->ndig == UPL_RECV_MAX_DIGESTS) {
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

int upl_recv_same_records(const void *a, size_t alen, const void *b, size_t blen)
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

/* The vehicle level of railmon/<vehicle>/<kind> must name the Batch's
   vehicle: otherwise one vehicle could inject records into another's
   sequence space. */
static bool topic_matches(const char *topic, const char *vehicle)
{
	const char *a, *b;

	if (!topic)
		return true;
	a = strchr(topic, '/');
	if (!a)
		return false;
	b = strchr(a + 1, '/');
	if (!b)
		return false;
	return (size_t)(b - a - 1) == strlen(vehicle) && !strncmp(a + 1, vehicle, (size_t)(b - a - 1));
}

static int refuse(upl_recv_t *r, enum upl_recv_refusal why, const struct rec_batch_info *info,
                  rec_batch_t **b, const void *payload, size_t len, int err)
{
	r->st.refused[why]++;
	if (r->cfg.on_refused)
		r->cfg.on_refused(r->cfg.ctx, why, info, b, payload, len);
	return err;
}

/* More than UPL_RECV_MAX_JUMP records away from everything seen of its log:
   no vehicle loses that many, so it would only make `missing` absurd. */
static bool seq_jump(const struct stream *s, const struct rec_batch_info *info)
{
	return s->end && (info->first_seq >= s->end + UPL_RECV_MAX_JUMP ||
	                  info->first_seq + info->count + UPL_RECV_MAX_JUMP <= s->lowest);
}

/* Digest of the records (record/digest.h, from the receiver's own seed);
   *ret_seen: how many at or above the floor were received before. */
static uint64_t batch_scan(const upl_recv_t *r, const struct stream *s, const rec_batch_t *b,
                           const struct rec_batch_info *info, uint32_t *ret_seen)
{
	uint32_t seen = 0;

	for (uint32_t i = 0; i < info->count; i++) {
		uint64_t seq = info->first_seq + i;

		seen += seq >= s->floor && range_covered(s, seq);
	}
	*ret_seen = seen;
	return rec_batch_digest(b, info->count, r->hash_seed);
}

/* Hand what is new to on_record; how many in *ret_written, counts by
   kind.  A record on_record fails for is still counted as received (the
   seq tracking is about what arrived, not what was printed). */
static int stream_write(upl_recv_t *r, struct stream *s, const rec_batch_t *b,
                        const struct rec_batch_info *info, uint64_t *ret_written)
{
	uint64_t fresh = 0, old = 0, unverified = 0;
	uint64_t lo = info->first_seq > s->floor ? info->first_seq : s->floor;
	uint64_t end = info->first_seq + info->count;
	bool failed = false;

	for (uint32_t i = 0; i < info->count; i++) {
		uint64_t seq = info->first_seq + i;
		struct acq_item it;

		if (seq >= s->floor && range_covered(s, seq)) {
			unverified++;
			continue;
		}
		rec_batch_item(b, i, &it);
		if (r->cfg.on_record &&
		    r->cfg.on_record(r->cfg.ctx, info, b, &it, fresh + old == 0, &s->log_ctx) < 0)
			failed = true;
		if (seq < s->floor)
			old++;
		else
			fresh++;
	}
	r->st.sink_errors += failed;
	if (end > lo && range_insert(s, lo, end) < 0)
		return -ENOMEM;
	if (end > lo) {
		s->lowest = s->end && s->lowest < lo ? s->lowest : lo;
		s->end = s->end > end ? s->end : end;
	}
	s->records += fresh;
	s->old += old;
	s->unverified += unverified;
	s->duplicates += unverified;
	r->st.old += old;
	r->st.unverified += unverified;
	r->st.duplicates += unverified;
	*ret_written = fresh + old;
	return 0;
}

static int stream_feed(upl_recv_t *r, struct stream *s, rec_batch_t **bp,
                       const struct rec_batch_info *info, const void *payload, size_t len)
{
	uint64_t hash, written;
	uint32_t seen;
	enum seen cmp = SEEN_UNKNOWN;
	const rec_batch_t *b = *bp;
	int err;

	hash = batch_scan(r, s, b, info, &seen);
	if (seen)
		cmp = digest_check(s, info->first_seq, info->count, hash);
	if (cmp == SEEN_SAME) {
		s->duplicates += info->count;
		r->st.duplicates += info->count;
		return 0;
	}
	if (cmp == SEEN_OTHER) {
		s->conflicts++;
		r->st.conflict_records += info->count;
		return refuse(r, UPL_RECV_CONFLICT, info, bp, payload, len, -EEXIST);
	}
	err = stream_write(r, s, b, info, &written);
	if (err == 0 && info->first_seq >= s->floor)
		err = digest_add(s, info->first_seq, info->count, hash);
	if (err < 0)
		return err;
	if (written && r->cfg.on_batch &&
	    r->cfg.on_batch(r->cfg.ctx, info, bp, payload, len, &s->log_ctx) < 0)
		r->st.sink_errors++;
	if (written)
		r->st.batches++;
	r->st.records += written;
	return (int)(written > INT32_MAX ? INT32_MAX : written);
}

/* r->missing += v and -= v with the carry into the high word; the sum
   never goes below zero (what is taken off was added before). */
static void missing_add(upl_recv_t *r, uint64_t v)
{
	r->missing.lo += v;
	r->missing.hi += r->missing.lo < v;
}

static void missing_sub(upl_recv_t *r, uint64_t v)
{
	r->missing.hi -= r->missing.lo < v;
	r->missing.lo -= v;
}

static int feed_batch(upl_recv_t *r, const char *topic, rec_batch_t **b,
                      const void *payload, size_t len)
{
	struct rec_batch_info info;
	struct stream *s;
	uint64_t missing;
	int ret;

	if (rec_batch_info(*b, &info) < 0 || !topic_matches(topic, info.vehicle))
		return -EBADMSG;
	/* seq 0 is never assigned, and every seq is below 2^63 (railmon.proto):
	   a Batch out there is malformed, not 2^63 records missing.  (The
	   decoder already refused first_seq + count overflowing.) */
	if (info.first_seq == 0 || info.first_seq + info.count > UPL_RECV_SEQ_LIMIT)
		return -EBADMSG;
	/* The door: a name against the rule gets no vehicle, no log, no row. */
	if (!basic_vehicle_name_ok(info.vehicle))
		return refuse(r, UPL_RECV_BAD_VEHICLE, &info, b, payload, len, -EPERM);
	ret = stream_get(r, &info, &s);
	if (ret < 0)
		return refuse(r, ret == -EUSERS ? UPL_RECV_TOO_MANY_VEHICLES : UPL_RECV_NO_MEMORY, &info,
		              b, payload, len, ret);
	if (!info.count)
		return 0;
	if (seq_jump(s, &info) && r->cfg.on_jump) {
		if (r->cfg.on_jump(r->cfg.ctx, &info, b, payload, len, &s->log_ctx) < 0)
			r->st.sink_errors++;
		return 0;
	}
	if (seq_jump(s, &info)) {
		s->seq_jumps++;
		return refuse(r, UPL_RECV_SEQ_JUMP, &info, b, payload, len, -ERANGE);
	}
	missing = stream_missing(s);
	ret = stream_feed(r, s, b, &info, payload, len);
	if (ret == -ENOMEM)
		ret = refuse(r, UPL_RECV_NO_MEMORY, &info, b, payload, len, ret);
	missing_add(r, stream_missing(s));
	missing_sub(r, missing);
	r->st.missing = r->missing.hi ? UINT64_MAX : r->missing.lo;
	return ret;
}

int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	rec_batch_t *b = NULL;
	int ret;

	if (!r || (!payload && len))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->st.messages++;
	ret = rec_batch_decode(payload, len, &b);
	if (ret == 0)
		ret = feed_batch(r, topic, &b, payload, len);
	if (ret == -EBADMSG || ret == -EINVAL) {
		r->st.bad++;
		ret = -EBADMSG;
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	rec_batch_free(b);
	return ret;
}

/* ---- lifetime and queries ---- */

static int recv_cfg_check(const struct upl_recv_cfg *c)
{
	if (!c->client_id || !*c->client_id || c->port < 0 || c->port > 65535)
		return -EINVAL;
	if (c->password && !c->username)
		return -EINVAL;
	if (c->keepalive_s && c->keepalive_s < 5)
		return -EINVAL;
	if (!c->use_tls)
		return c->tls.insecure || c->tls.ca_file || c->tls.cert_file || c->tls.key_file ? -EINVAL : 0;
	return upl_mqtt_tls_check(&c->tls);
}

upl_recv_t *upl_recv_free(upl_recv_t *r)
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
	free((char *)r->cfg.host);
	free((char *)r->cfg.client_id);
	free((char *)r->cfg.topic);
	free((char *)r->cfg.aux_topic);
	for (size_t i = 0; i < r->npub; i++) {
		free(r->pub[i].topic);
		free(r->pub[i].payload);
	}
	pthread_mutex_destroy(&r->pub_lock);
	free((char *)r->cfg.tls.ca_file);
	free((char *)r->cfg.tls.cert_file);
	free((char *)r->cfg.tls.key_file);
	free((char *)r->cfg.username);
	free((char *)r->cfg.password);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

int upl_recv_new(const struct upl_recv_cfg *cfg, upl_recv_t **ret_recv)
{
	upl_recv_t *r;
	bool ok = true;
	int ret;

	if (!cfg || !ret_recv)
		return -EINVAL;
	ret = recv_cfg_check(cfg);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->cfg = *cfg;
	r->cfg.host = upl_strdup_opt(cfg->host, &ok);
	r->cfg.client_id = upl_strdup_opt(cfg->client_id, &ok);
	r->cfg.topic = upl_strdup_opt(cfg->topic ? cfg->topic : "railmon/+/data", &ok);
	r->cfg.aux_topic = upl_strdup_opt(cfg->aux_topic, &ok);
	pthread_mutex_init(&r->pub_lock, NULL);
	r->aux_match = r->cfg.aux_topic;
	if (r->aux_match && !strncmp(r->aux_match, "$share/", 7) && strchr(r->aux_match + 7, '/'))
		r->aux_match = strchr(r->aux_match + 7, '/') + 1;
	r->cfg.tls.ca_file = upl_strdup_opt(cfg->tls.ca_file, &ok);
	r->cfg.tls.cert_file = upl_strdup_opt(cfg->tls.cert_file, &ok);
	r->cfg.tls.key_file = upl_strdup_opt(cfg->tls.key_file, &ok);
	r->cfg.username = upl_strdup_opt(cfg->username, &ok);
	r->cfg.password = upl_strdup_opt(cfg->password, &ok);
	if (!r->cfg.keepalive_s)
		r->cfg.keepalive_s = 20;
	if (!r->cfg.backoff_max_ms)
		r->cfg.backoff_max_ms = 16000;
	if (!r->cfg.max_vehicles)
		r->cfg.max_vehicles = UPL_RECV_MAX_VEHICLES_DEFAULT;
	/* A seed no sender knows, so no sender can make two different Batches
	   hash alike on purpose.  Without entropy the hash is still a good
	   checksum against accidents. */
	if (getrandom(&r->hash_seed, sizeof(r->hash_seed), GRND_NONBLOCK) != sizeof(r->hash_seed))
		r->hash_seed = (uint64_t)basic_mono_ns();
	if (!ok) {
		upl_recv_free(r);
		return -ENOMEM;
	}
	upl_mqtt_lib_init();
	*ret_recv = r;
	return 0;
}

int upl_recv_stop(upl_recv_t *r)
{
	if (!r)
		return -EINVAL;
	atomic_store(&r->stop, true);
	return 0;
}

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int upl_recv_stats_try(upl_recv_t *r, struct upl_recv_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	if (pthread_mutex_trylock(&r->lock) != 0)
		return -EBUSY;
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

static void log_view(const struct stream *s, struct upl_recv_log *ret)
{
	*ret = (struct upl_recv_log){
		.vehicle = s->vehicle, .log_id_len = s->log_id_len,
		.first_seq = s->lowest, .next_seq = s->end, .records = s->records,
		.duplicates = s->duplicates, .unverified = s->unverified, .old = s->old,
		.missing = stream_missing(s), .conflicts = s->conflicts, .seq_jumps = s->seq_jumps,
		.log_ctx = s->log_ctx,
	};
	memcpy(ret->log_id, s->log_id, sizeof(ret->log_id));
}

int upl_recv_log(upl_recv_t *r, size_t i, struct upl_recv_log *ret)
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

int upl_recv_vehicle(upl_recv_t *r, const char *name, struct upl_recv_vehicle *ret)
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

		*ret = (struct upl_recv_vehicle){ s->lowest, s->end, s->records, s->duplicates,
		                                  stream_missing(s), v->nlogs };
		err = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (!r->st.subscribed && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = r->st.subscribed ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

int upl_recv_wait_records(upl_recv_t *r, uint64_t n, unsigned timeout_ms)
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

static bool vehicle_reached(const upl_recv_t *r, const char *name, uint64_t seq)
{
	const struct vehicle *v = vehicle_find(r, name);

	return v && v->logs && v->logs->end >= seq && stream_missing(v->logs) == 0;
}

int upl_recv_wait_seq(upl_recv_t *r, const char *vehicle, uint64_t seq, unsigned timeout_ms)
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

/* ---- the MQTT session ---- */

static void set_subscribed(upl_recv_t *r, bool on)
{
	pthread_mutex_lock(&r->lock);
	r->st.subscribed = on;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Record why a connection attempt (or session, LOST) ended. */
static void note_fail(upl_recv_t *r, enum upl_recv_fail fail, int err, int detail, const char *text)
{
	pthread_mutex_lock(&r->lock);
	r->st.fail = fail;
	r->st.fail_err = err;
	r->st.fail_detail = detail;
	snprintf(r->st.fail_text, sizeof(r->st.fail_text), "%s", text);
	if (fail == UPL_RECV_FAIL_LOST)
		r->st.disconnects++;
	else
		r->st.connect_failures++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* A libmosquitto error code; errno is still the one it left. */
static void note_mosq_fail(upl_recv_t *r, int rc, bool subscribed)
{
	int e = errno, err = upl_mqtt_errno(rc);

	if (rc == MOSQ_ERR_EAI)
		/* libmosquitto leaves getaddrinfo's code in errno */
		note_fail(r, UPL_RECV_FAIL_RESOLVE, err, e, gai_strerror(e));
	else if (rc == MOSQ_ERR_TLS)
		note_fail(r, UPL_RECV_FAIL_TLS, err, 0,
		          r->last_log_error[0] ? r->last_log_error : mosquitto_strerror(rc));
	else
		note_fail(r, subscribed ? UPL_RECV_FAIL_LOST : UPL_RECV_FAIL_CONNECT, err, 0,
		          rc == MOSQ_ERR_ERRNO ? strerror(-err) : mosquitto_strerror(rc));
}

static void on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->connack_rc = rc;
	if (rc != 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->st.connects++;
	pthread_mutex_unlock(&r->lock);
	/* the dictionaries first: retained ones arrive before new data */
	char *topics[4];
	int n = 0;

	if (r->cfg.on_channels)
		topics[n++] = (char *)"railmon/+/channels";
	if (r->cfg.on_status)
		topics[n++] = (char *)"railmon/+/status";
	topics[n++] = (char *)r->cfg.topic;
	if (r->cfg.aux_topic)
		topics[n++] = (char *)r->cfg.aux_topic;
	if (mosquitto_subscribe_multiple(mosq, NULL, n, topics, 1, 0, NULL) != MOSQ_ERR_SUCCESS)
		r->lost = true;
}

static void on_subscribe(struct mosquitto *mosq, void *arg, int mid, int n, const int *qos)
{
	upl_recv_t *r = arg;

	/* 0x80: the broker refused a subscription (ACL).  The data topic and
	   the optional aux topic after it must be granted; the dictionaries
	   and the status topic (first, when asked for) only cost names and
	   states if refused. */
	int first = (r->cfg.on_channels ? 1 : 0) + (r->cfg.on_status ? 1 : 0);
	bool refused = n <= first;

	for (int i = first; i < n; i++)
		if (qos[i] == 0x80)
			refused = true;
	if (refused) {
		r->sub_refused = true;
		r->lost = true;
		return;
	}
	set_subscribed(r, true);
}

static void on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->lost = true;
}

/* railmon/<vehicle>/channels: the vehicle's dictionary, to on_channels. */
static void feed_channels(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	rec_batch_t *b;
	struct rec_batch_info info;

	/* No railmon sends a dictionary over 1 MiB (a large one is sliced):
	   a bigger one is only there to cost the ground memory and rows. */
	if (len > REC_BATCH_MAX_BYTES || rec_batch_decode(payload, len, &b) < 0) {
		pthread_mutex_lock(&r->lock);
		r->st.bad++;
		pthread_mutex_unlock(&r->lock);
		return;
	}
	pthread_mutex_lock(&r->lock);
	if (rec_batch_info(b, &info) == 0 && topic_matches(topic, info.vehicle) && info.nchannels) {
		if (basic_vehicle_name_ok(info.vehicle))
			r->cfg.on_channels(r->cfg.ctx, &info, b);
		else
			r->st.refused[UPL_RECV_BAD_VEHICLE]++;
	}
	pthread_mutex_unlock(&r->lock);
	rec_batch_free(b);
}

static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *m)
{
	upl_recv_t *r = arg;
	size_t tl = m->topic ? strlen(m->topic) : 0;
	size_t len = m->payloadlen > 0 ? (size_t)m->payloadlen : 0;
	bool aux = false;

	if (r->aux_match && r->cfg.on_aux && mosquitto_topic_matches_sub(r->aux_match, m->topic, &aux) ==
	    MOSQ_ERR_SUCCESS && aux) {
		r->cfg.on_aux(r->cfg.ctx, m->topic, m->payload, len);
		return;
	}
	if (r->cfg.on_status && mosquitto_topic_matches_sub("railmon/+/status", m->topic, &aux) == MOSQ_ERR_SUCCESS &&
	    aux) {
		r->cfg.on_status(r->cfg.ctx, m->topic, m->payload, len);
		return;
	}
	if (r->cfg.on_channels && tl > 9 && !strcmp(m->topic + tl - 9, "/channels"))
		feed_channels(r, m->topic, m->payload, len);
	else
		upl_recv_feed(r, m->topic, m->payload, len);
}

/* libmosquitto says why a TLS handshake failed only in its log. */
static void on_log(struct mosquitto *mosq, void *arg, int level, const char *line)
{
	upl_recv_t *r = arg;

	if (level & MOSQ_LOG_ERR)
		snprintf(r->last_log_error, sizeof(r->last_log_error), "%s", line);
}

static int session_new(upl_recv_t *r, struct mosquitto **ret)
{
	struct mosquitto *m;
	int rc, err;

	m = mosquitto_new(r->cfg.client_id, r->cfg.clean_session, r);
	if (!m)
		return errno ? -errno : -ENOMEM;
	mosquitto_connect_callback_set(m, on_connect);
	mosquitto_subscribe_callback_set(m, on_subscribe);
	mosquitto_disconnect_callback_set(m, on_disconnect);
	mosquitto_message_callback_set(m, on_message);
	mosquitto_log_callback_set(m, on_log);
	rc = MOSQ_ERR_SUCCESS;
	if (r->cfg.username)
		rc = mosquitto_username_pw_set(m, r->cfg.username, r->cfg.password);
	err = upl_mqtt_errno(rc);
	if (err == 0 && r->cfg.use_tls)
		err = upl_mqtt_tls_apply(m, &r->cfg.tls);
	if (err < 0) {
		mosquitto_destroy(m);
		return err;
	}
	*ret = m;
	return 0;
}

/* Why the session loop ended, when stop was not asked. */
static void session_failed(upl_recv_t *r, int loop_rc, bool timed_out, bool subscribed)
{
	if (r->connack_rc > 0)
		note_fail(r, UPL_RECV_FAIL_REFUSED, -ECONNREFUSED, r->connack_rc,
		          mosquitto_connack_string(r->connack_rc));
	else if (r->sub_refused)
		note_fail(r, UPL_RECV_FAIL_SUBSCRIBE, -EACCES, 0,
		          "the broker refused the subscription (not allowed to read the topic?)");
	else if (timed_out)
		note_fail(r, UPL_RECV_FAIL_TIMEOUT, -ETIMEDOUT, 0,
		          "connected, but the broker did not answer (no CONNACK in 15 s)");
	else if (loop_rc != MOSQ_ERR_SUCCESS)
		note_mosq_fail(r, loop_rc, subscribed);
	else
		note_fail(r, subscribed ? UPL_RECV_FAIL_LOST : UPL_RECV_FAIL_CONNECT, -ECONNRESET, 0,
		          "the broker closed the connection");
}

int upl_recv_publish(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	struct pub_msg m;
	int err = 0;

	if (!r || !topic || (!payload && len))
		return -EINVAL;
	m.topic = strdup(topic);
	m.payload = malloc(len ? len : 1);
	m.len = len;
	if (!m.topic || !m.payload) {
		free(m.topic);
		free(m.payload);
		return -ENOMEM;
	}
	memcpy(m.payload, payload, len);
	pthread_mutex_lock(&r->pub_lock);
	if (r->npub < UPL_RECV_PUB_MAX)
		r->pub[r->npub++] = m;
	else
		err = -ENOBUFS;
	pthread_mutex_unlock(&r->pub_lock);
	if (err) {
		free(m.topic);
		free(m.payload);
	}
	return err;
}

/* Send what upl_recv_publish() queued (libmosquitto keeps QoS 1 messages
   until their PUBACK, and sends them again after a reconnect). */
static void pub_drain(upl_recv_t *r, struct mosquitto *m)
{
	pthread_mutex_lock(&r->pub_lock);
	for (size_t i = 0; i < r->npub; i++) {
		mosquitto_publish(m, NULL, r->pub[i].topic, (int)r->pub[i].len, r->pub[i].payload, 1, false);
		free(r->pub[i].topic);
		free(r->pub[i].payload);
	}
	r->npub = 0;
	pthread_mutex_unlock(&r->pub_lock);
}

/* One connection: returns when it is lost, times out, or stop is asked. */
static void session_run(upl_recv_t *r, struct mosquitto *m)
{
	int64_t deadline = basic_mono_ns() + 15 * INT64_C(1000000000);
	bool timed_out = false, subscribed = false;
	int rc;

	r->connack_rc = -1;
	r->lost = r->sub_refused = false;
	r->last_log_error[0] = 0;
	rc = mosquitto_connect_async(m, r->cfg.host, r->cfg.port, (int)r->cfg.keepalive_s);
	if (rc != MOSQ_ERR_SUCCESS) {
		note_mosq_fail(r, rc, false);
		return;
	}
	while (!atomic_load(&r->stop) && !r->lost && r->connack_rc <= 0) {
		/* No CONNACK in time: a stopped broker accepts TCP but never answers. */
		if (r->connack_rc < 0 && basic_mono_ns() > deadline) {
			timed_out = true;
			break;
		}
		rc = mosquitto_loop(m, 100, 1);
		if (r->cfg.on_tick)
			r->cfg.on_tick(r->cfg.ctx);
		if (r->cfg.on_idle)
			r->cfg.on_idle(r->cfg.ctx);
		subscribed = subscribed || r->st.subscribed;
		if (r->connack_rc == 0)
			pub_drain(r, m);
		if (rc != MOSQ_ERR_SUCCESS)
			break;
	}
	if (!atomic_load(&r->stop))
		session_failed(r, rc, timed_out, subscribed);
	if (r->connack_rc == 0 && !r->lost)
		mosquitto_disconnect(m);
	set_subscribed(r, false);
}

static void backoff_wait(upl_recv_t *r, unsigned ms)
{
	int64_t until = basic_mono_ns() + (int64_t)ms * 1000000;

	while (!atomic_load(&r->stop) && basic_mono_ns() < until) {
		struct timespec ts = { 0, 20000000 };

		nanosleep(&ts, NULL);
		if (r->cfg.on_idle)
			r->cfg.on_idle(r->cfg.ctx);
	}
}

int upl_recv_run(upl_recv_t *r)
{
	unsigned first, delay;

	if (!r || !r->cfg.host || !r->cfg.port)
		return -EINVAL;
	first = r->cfg.backoff_max_ms < 250 ? r->cfg.backoff_max_ms : 250;
	delay = first;
	while (!atomic_load(&r->stop)) {
		struct mosquitto *m = NULL;
		uint64_t before = r->st.connects;
		int err = session_new(r, &m);

		if (err < 0)
			return err;
		session_run(r, m);
		mosquitto_destroy(m);
		/* Reset the backoff after a session that worked. */
		delay = r->st.connects != before ? first : delay * 2;
		if (delay > r->cfg.backoff_max_ms)
			delay = r->cfg.backoff_max_ms;
		if (!atomic_load(&r->stop))
			backoff_wait(r, delay / 2 + (unsigned)(basic_mono_ns() % (delay / 2 + 1)));
	}
	atomic_store(&r->stop, false);
	return 0;
}
