/* SPDX-License-Identifier: MIT */
/*
 * forward.c - the store-and-forward thread.
 *
 * One thread owns everything: the libmosquitto client (driven with
 * mosquitto_loop(), never mosquitto_loop_start(), so a wedged network loop
 * cannot hide from us), the window of in-flight messages and the cursor.
 * Callbacks run inside mosquitto_loop() on that same thread, so the window
 * needs no lock; only the stats snapshot is shared, under a mutex.
 *
 * Every connection attempt uses a fresh client.  The window keeps a copy
 * of each unacknowledged Batch, and after a reconnect we publish them all
 * again in sequence order: duplicates are bounded by the window, and no
 * libmosquitto reconnect state is trusted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "forward-private.h"
#include "mqtt-private.h"
#include "range.h"
#include "basic/clock.h"
#include "basic/thread.h"
#include "record/batch.h"

/* glibc's default thread stack is 8 MiB, and the daemon's mlockall makes
   all of it resident.  Measured (railmon run without mlockall, pages
   touched): 20 KiB connected to mosquitto over plain TCP; TLS adds
   OpenSSL's handshake, tens of KiB. */
#define FWD_STACK_BYTES (256 * 1024)

enum slot_state {
	SLOT_STAGED, /* read from the log, not yet published on this connection */
	SLOT_SENT,   /* published, waiting for PUBACK */
	SLOT_ACKED,  /* acknowledged, waiting for older slots before the cursor moves */
};

struct slot {
	uint64_t first_seq;
	uint32_t count;
	int64_t t_last_ns;
	enum slot_state state;
	int mid;
	int64_t sent_ns;   /* monotonic time of the last publish */
	bool ever_sent;
	bool used;         /* live slots only: holds a record */
	void *buf;
	uint32_t len;
	uint32_t cap;
};

#define LIVE_SLOTS 8   /* live messages in flight ahead of the backlog */
#define HOLD_SLOTS 4   /* held-window messages in flight ahead of the backlog */
/* live[] holds both: [0, LIVE_SLOTS) from the live reader, the rest from
   the hold reader, so taking over and skipping work the same for both */
#define AHEAD_SLOTS (LIVE_SLOTS + HOLD_SLOTS)
#define AHEAD_MAX 256  /* acknowledged live ranges the backlog must skip */
/* A held window whose end is not stored yet (its post window is still
   being recorded) is waited for this long past its end */
#define HOLD_WAIT_NS (10 * INT64_C(1000000000))

struct range {
	uint64_t lo, hi; /* [lo, hi) */
};

enum conn_state {
	CONN_DOWN,       /* waiting for the backoff to expire */
	CONN_CONNECTING, /* TCP/TLS/CONNECT started, no CONNACK yet */
	CONN_UP,
};

/* A held window [from_ns, to_ns] (upl_forwarder_hold()). */
struct hold_req {
	int64_t from_ns, to_ns;
};

struct upl_forwarder {
	struct upl_forward_cfg cfg; /* strings point at our own copies */
	char *topic_data, *topic_status, *topic_events, *topic_resend, *topic_gone, *topic_channels;

	pthread_t thread;
	bool running;
	atomic_bool stop;

	pthread_mutex_t lock; /* guards st */
	pthread_cond_t cond;  /* signalled when st.cursor reaches wait_seq */
	uint64_t wait_seq;    /* lowest target of a waiter, 0 = none */
	struct upl_forward_stats st;
	struct hold_req holdq[UPL_HOLD_MAX]; /* upl_forwarder_hold(), oldest first */
	size_t nholdq;

	/* Everything below belongs to the forwarder thread. */
	struct mosquitto *mosq;
	enum conn_state conn;
	int connack_rc;          /* -1 until the CONNACK callback */
	bool lost;               /* the disconnect callback fired */
	int lost_err;            /* why, if mosquitto_loop() said so */
	int64_t deadline_ns;     /* CONNACK due / next attempt */
	unsigned fails;          /* consecutive failed attempts */
	uint64_t rng;
	char why[192];           /* the current failure in plain words, "" = none yet */
	char mosq_log[160];      /* the last error libmosquitto logged (OpenSSL's reason) */
	int cursor_damage;       /* reported once by the thread, see stats */

	struct slot *slots;      /* ring of cfg.inflight slots, oldest at head */
	unsigned head, n;
	uint64_t read_seq;       /* seq after the last record taken from the log */
	int64_t next_poll_ns;    /* log drained: look again at this time */
	uint64_t cursor;         /* lowest unacknowledged seq (in memory) */
	uint64_t cursor_written; /* value in the file */
	int64_t cursor_due_ns;

	double tokens;           /* backlog rate cap bucket, bytes */
	int64_t tokens_ns;

	/* Live records sent ahead of a backlog (cfg.live_source). */
	bool live_on;            /* the live reader is positioned and in use */
	bool backlogged;         /* the last record staged was older than the live window */
	int64_t live_poll_ns;
	struct slot live[AHEAD_SLOTS];
	struct range ahead[AHEAD_MAX]; /* acked live and held ranges, sorted, disjoint */
	size_t nahead;

	/* The held window being sent (cfg.hold_source). */
	bool hold_on;
	bool hold_caught_up;     /* its reader reached the head of the log */
	struct hold_req hold;
	int64_t hold_poll_ns;

	/* The ground's resend requests (cfg.resend_source), oldest first. */
	struct upl_range resend[UPL_RESEND_MAX];
	size_t nresend;
	int64_t resend_next_ns;  /* rate limit: the next re-send not before */
	void *resend_buf;        /* a Batch with the historical flag added */
	size_t resend_cap;
};

static void stats_error(upl_forwarder_t *f, int err)
{
	pthread_mutex_lock(&f->lock);
	f->st.last_error = err;
	pthread_mutex_unlock(&f->lock);
}

#define STAT_ADD(f, field, v)                     \
	do {                                      \
		pthread_mutex_lock(&(f)->lock);   \
		(f)->st.field += (v);             \
		pthread_mutex_unlock(&(f)->lock); \
	} while (0)

static int cfg_check(const struct upl_forward_cfg *c)
{
	if (!c->host || !*c->host || c->port < 1 || c->port > 65535)
		return -EINVAL;
	if (!c->client_id || !*c->client_id || !c->vehicle || !*c->vehicle)
		return -EINVAL;
	/* The vehicle becomes a topic level: MQTT wildcards and separators
	   would publish somewhere the consumers do not subscribe. */
	if (strpbrk(c->vehicle, "/+#"))
		return -EINVAL;
	if (!c->cursor_path || !*c->cursor_path || !c->source.next || !c->source.seek)
		return -EINVAL;
	if (c->password && !c->username)
		return -EINVAL;
	if (c->live_source.next && !c->live_source.seek_time)
		return -EINVAL;
	if (c->hold_source.next && (!c->hold_source.seek_time || !c->hold_source.seek))
		return -EINVAL;
	if (c->inflight > 65535 || (c->keepalive_s && c->keepalive_s < 5))
		return -EINVAL;
	if (c->backoff_max_ms && c->backoff_min_ms > c->backoff_max_ms)
		return -EINVAL;
	/* Insecure is a relaxation of TLS; without TLS it means nothing and
	   most likely hides a configuration mistake. */
	if (!c->use_tls)
		return c->tls.insecure ? -EINVAL : 0;
	return upl_mqtt_tls_check(&c->tls);
}

static void cfg_defaults(struct upl_forward_cfg *c)
{
	if (!c->inflight)
		c->inflight = 32;
	if (!c->keepalive_s)
		c->keepalive_s = 20;
	if (!c->ack_timeout_ms)
		c->ack_timeout_ms = 30000;
	if (!c->connect_timeout_ms)
		c->connect_timeout_ms = 15000;
	if (!c->live_window_ns)
		c->live_window_ns = 60 * INT64_C(1000000000);
	if (!c->backoff_min_ms)
		c->backoff_min_ms = 500;
	if (!c->backoff_max_ms)
		c->backoff_max_ms = c->backoff_min_ms > 60000 ? c->backoff_min_ms : 60000;
	if (!c->idle_poll_ms)
		c->idle_poll_ms = 200;
	if (!c->resend_per_s)
		c->resend_per_s = 20;
}

static int cfg_copy(upl_forwarder_t *f, const struct upl_forward_cfg *c)
{
	bool ok = true;

	f->cfg = *c;
	f->cfg.host = upl_strdup_opt(c->host, &ok);
	f->cfg.client_id = upl_strdup_opt(c->client_id, &ok);
	f->cfg.vehicle = upl_strdup_opt(c->vehicle, &ok);
	f->cfg.cursor_path = upl_strdup_opt(c->cursor_path, &ok);
	f->cfg.tls.ca_file = upl_strdup_opt(c->tls.ca_file, &ok);
	f->cfg.tls.cert_file = upl_strdup_opt(c->tls.cert_file, &ok);
	f->cfg.tls.key_file = upl_strdup_opt(c->tls.key_file, &ok);
	f->cfg.username = upl_strdup_opt(c->username, &ok);
	f->cfg.password = upl_strdup_opt(c->password, &ok);
	if (asprintf(&f->topic_data, "railmon/%s/data", c->vehicle) < 0)
		f->topic_data = NULL, ok = false;
	if (asprintf(&f->topic_status, "railmon/%s/status", c->vehicle) < 0)
		f->topic_status = NULL, ok = false;
	if (asprintf(&f->topic_events, "railmon/%s/events", c->vehicle) < 0)
		f->topic_events = NULL, ok = false;
	if (asprintf(&f->topic_resend, "railmon/%s/resend", c->vehicle) < 0)
		f->topic_resend = NULL, ok = false;
	if (asprintf(&f->topic_gone, "railmon/%s/gone", c->vehicle) < 0)
		f->topic_gone = NULL, ok = false;
	if (asprintf(&f->topic_channels, "railmon/%s/channels", c->vehicle) < 0)
		f->topic_channels = NULL, ok = false;
	f->cfg.channels_msg = NULL;
	f->cfg.channels_len = 0;
	if (c->channels_msg && c->channels_len && c->channels_len <= INT32_MAX) {
		void *copy = malloc(c->channels_len);

		if (copy) {
			memcpy(copy, c->channels_msg, c->channels_len);
			f->cfg.channels_msg = copy;
			f->cfg.channels_len = c->channels_len;
		} else {
			ok = false;
		}
	}
	cfg_defaults(&f->cfg);
	return ok ? 0 : -ENOMEM;
}

/*
 * Where to start.  A damaged cursor must neither stop the daemon nor skip
 * records: start again from the oldest record the log holds (seq 1 seeks
 * there), so the ground gets duplicates at worst, never a gap.
 */
static void cursor_start(upl_forwarder_t *f, uint64_t *ret_seq)
{
	uint64_t seq = 1;
	int r = upl_cursor_load(f->cfg.cursor_path, &seq);

	/* A cursor past the log's end (a log replaced under it, or a digit
	   flipped) would wait for records that never come. */
	if (r == 0 && f->cfg.log_next_seq && seq > f->cfg.log_next_seq) {
		f->st.cursor_damaged_seq = seq;
		r = -EOVERFLOW;
	}
	if (r < 0) {
		f->cursor_damage = f->st.cursor_damage = r;
		seq = 1;
	}
	*ret_seq = seq;
}

upl_forwarder_t *upl_forwarder_free(upl_forwarder_t *f)
{
	if (!f)
		return NULL;
	upl_forwarder_stop(f);
	if (f->mosq)
		mosquitto_destroy(f->mosq);
	for (unsigned i = 0; f->slots && i < f->cfg.inflight; i++)
		free(f->slots[i].buf);
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		free(f->live[i].buf);
	free(f->slots);
	free((char *)f->cfg.host);
	free((char *)f->cfg.client_id);
	free((char *)f->cfg.vehicle);
	free((char *)f->cfg.cursor_path);
	free((char *)f->cfg.tls.ca_file);
	free((char *)f->cfg.tls.cert_file);
	free((char *)f->cfg.tls.key_file);
	free((char *)f->cfg.username);
	free((char *)f->cfg.password);
	free(f->topic_data);
	free(f->topic_status);
	free(f->topic_events);
	free(f->topic_resend);
	free(f->topic_gone);
	free(f->resend_buf);
	free(f->topic_channels);
	free((void *)f->cfg.channels_msg);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
	return NULL;
}

int upl_forwarder_new(const struct upl_forward_cfg *cfg, upl_forwarder_t **ret_fwd)
{
	upl_forwarder_t *f;
	uint64_t cursor;
	int r;

	if (!cfg || !ret_fwd)
		return -EINVAL;
	r = cfg_check(cfg);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	r = cfg_copy(f, cfg);
	if (r == 0) {
		f->slots = calloc(f->cfg.inflight, sizeof(*f->slots));
		if (!f->slots)
			r = -ENOMEM;
	}
	if (r < 0) {
		upl_forwarder_free(f);
		return r;
	}
	cursor_start(f, &cursor);
	f->cursor = f->cursor_written = f->read_seq = cursor;
	/* A reset cursor is written again at the first chance (at the latest
	   at stop), so the damage is reported once, not at every start. */
	if (f->cursor_damage)
		f->cursor_written = 0;
	f->st.cursor = cursor;
	f->st.insecure = f->cfg.use_tls && f->cfg.tls.insecure;
	f->rng = (uint64_t)basic_mono_ns() ^ (uint64_t)(uintptr_t)f ^ 0x9e3779b97f4a7c15ull;
	upl_mqtt_lib_init();
	*ret_fwd = f;
	return 0;
}

int upl_forwarder_stats(upl_forwarder_t *f, struct upl_forward_stats *ret)
{
	if (!f || !ret)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	*ret = f->st;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* ---- the window ---- */



static struct slot *slot_at(upl_forwarder_t *f, unsigned k)
{
	return &f->slots[(f->head + k) % f->cfg.inflight];
}

static void cursor_flush(upl_forwarder_t *f, bool force)
{
	int64_t now = basic_mono_ns();
	int r;

	if (f->cursor == f->cursor_written)
		return;
	if (!force && now < f->cursor_due_ns)
		return;
	r = upl_cursor_store(f->cfg.cursor_path, f->cursor);
	if (r < 0) {
		/* Keep going: the in-memory cursor is right, the file only lags
		   (more duplicates after a crash).  Retry at most once a second:
		   a path that cannot be written (a directory in its place) must
		   not cost a create and an fsync per PUBACK. */
		STAT_ADD(f, cursor_errors, 1);
		stats_error(f, r);
		f->cursor_due_ns = now + (f->cfg.cursor_interval_ms > 1000 ? f->cfg.cursor_interval_ms : 1000) *
		                         INT64_C(1000000);
		return;
	}
	f->cursor_written = f->cursor;
	f->cursor_due_ns = now + (int64_t)f->cfg.cursor_interval_ms * 1000000;
}

/* Drop acknowledged slots from the head: the cursor may only move over a
   contiguous run of acks, or a lost PUBACK for an older message would be
   skipped for good. */
static void window_advance(upl_forwarder_t *f)
{
	while (f->n && slot_at(f, 0)->state == SLOT_ACKED) {
		f->head = (f->head + 1) % f->cfg.inflight;
		f->n--;
	}
	f->cursor = f->n ? slot_at(f, 0)->first_seq : f->read_seq;
	pthread_mutex_lock(&f->lock);
	f->st.cursor = f->cursor;
	f->st.inflight = f->n;
	/* Wake waiters only when one is satisfied: a broadcast per PUBACK
	   costs a context switch per message on a 2-core board. */
	if (f->wait_seq && f->cursor >= f->wait_seq) {
		f->wait_seq = 0;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	cursor_flush(f, false);
}

/* ---- live records ahead of the backlog ---- */

/* Remember [lo, hi) as acknowledged; merge with neighbours.  When the set
   is full the range is simply forgotten: the backlog sends it again
   (a duplicate), which is safe. */
static void ahead_add(upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	size_t i = 0;

	while (i < f->nahead && f->ahead[i].hi < lo)
		i++;
	if (i < f->nahead && f->ahead[i].lo <= hi) {
		if (lo < f->ahead[i].lo)
			f->ahead[i].lo = lo;
		if (hi > f->ahead[i].hi)
			f->ahead[i].hi = hi;
		/* It may now touch the next one. */
		if (i + 1 < f->nahead && f->ahead[i + 1].lo <= f->ahead[i].hi) {
			f->ahead[i].hi = f->ahead[i + 1].hi;
			memmove(&f->ahead[i + 1], &f->ahead[i + 2],
			        (f->nahead - i - 2) * sizeof(f->ahead[0]));
			f->nahead--;
		}
		return;
	}
	if (f->nahead == AHEAD_MAX)
		return;
	memmove(&f->ahead[i + 1], &f->ahead[i], (f->nahead - i) * sizeof(f->ahead[0]));
	f->ahead[i] = (struct range){ lo, hi };
	f->nahead++;
}

/* True if [lo, hi) was acknowledged live; drops ranges behind lo. */
static bool ahead_covers(upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	while (f->nahead && f->ahead[0].hi <= lo) {
		memmove(&f->ahead[0], &f->ahead[1], (f->nahead - 1) * sizeof(f->ahead[0]));
		f->nahead--;
	}
	return f->nahead && f->ahead[0].lo <= lo && hi <= f->ahead[0].hi;
}

static bool live_ack(upl_forwarder_t *f, int mid)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *s = &f->live[i];

		if (s->used && s->state == SLOT_SENT && s->mid == mid) {
			ahead_add(f, s->first_seq, s->first_seq + s->count);
			s->used = false;
			pthread_mutex_lock(&f->lock);
			f->st.acked++;
			f->st.acked_bytes += s->len;
			pthread_mutex_unlock(&f->lock);
			return true;
		}
	}
	return false;
}

/*
 * Batch.historical (field 7, varint) = true, as two bytes appended to the
 * stored Batch: protobuf parsers merge a concatenated message and the last
 * value of a scalar field wins, so the flag is set without re-encoding and
 * the stored records themselves stay byte for byte as logged.
 */
static const uint8_t historical_true[2] = { 7 << 3 | 0, 1 };

static int slot_fill(struct slot *s, const struct upl_rec *rec, bool historical)
{
	uint32_t need = rec->len + (historical ? sizeof(historical_true) : 0);

	if (s->cap < need) {
		void *nb = realloc(s->buf, need);

		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->cap = need;
	}
	memcpy(s->buf, rec->payload, rec->len);
	if (historical)
		memcpy((uint8_t *)s->buf + rec->len, historical_true, sizeof(historical_true));
	s->len = need;
	s->first_seq = rec->first_seq;
	s->count = rec->count;
	s->t_last_ns = rec->t_last_ns;
	s->state = SLOT_STAGED;
	s->ever_sent = false;
	return 0;
}

/* True if a slot ahead of the backlog carries the record starting at seq. */
static bool ahead_slot(const upl_forwarder_t *f, uint64_t seq)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live[i].used && f->live[i].first_seq == seq)
			return true;
	return false;
}

/* ahead_covers() without dropping anything: for readers other than the backlog. */
static bool ahead_has(const upl_forwarder_t *f, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < f->nahead; i++)
		if (f->ahead[i].lo <= lo && hi <= f->ahead[i].hi)
			return true;
	return false;
}

/* Read live records into free live slots.  Stops for good once the
   backlog reader has caught up with the live one. */
static void live_read(upl_forwarder_t *f)
{
	for (unsigned i = 0; i < LIVE_SLOTS && f->live_on; i++) {
		struct slot *s = &f->live[i];
		struct upl_rec rec = { 0 };
		int r;

		if (s->used)
			continue;
		if (basic_mono_ns() < f->live_poll_ns)
			return;
		r = f->cfg.live_source.next(f->cfg.live_source.ctx, &rec);
		if (r <= 0) {
			f->live_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
			return;
		}
		if (rec.first_seq < f->read_seq) {
			f->live_on = false;
			return;
		}
		/* The hold reader has it (in flight or acknowledged): once is enough */
		if (ahead_slot(f, rec.first_seq) || ahead_has(f, rec.first_seq, rec.first_seq + rec.count))
			continue;
		if (rec.payload && rec.len && slot_fill(s, &rec, false) == 0)
			s->used = true;
	}
}

/*
 * The backlog reached a record the live path holds (s, just staged from
 * the log).  Sent and not yet acknowledged: the window takes over that
 * publication (its message id, its bytes), so the record goes out once;
 * publishing it again would be a duplicate for every live record in
 * flight when the backlog catches up.  Not sent: the window sends it.
 * Returns true if s is already in flight.
 */
static bool live_adopt(upl_forwarder_t *f, struct slot *s)
{
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *l = &f->live[i];
		void *buf = s->buf;
		uint32_t cap = s->cap;

		if (!l->used || l->first_seq != s->first_seq || l->count != s->count)
			continue;
		l->used = false;
		if (l->state != SLOT_SENT) {
			s->ever_sent = l->ever_sent; /* its events went out already */
			return false;
		}
		/* Swap the buffers: what a resend after a reconnect sends is
		   what went out (without the historical flag). */
		*s = *l;
		l->buf = buf;
		l->cap = cap;
		return true;
	}
	return false;
}

/* Forward declaration: publishing is shared with the backlog window. */
static int slot_publish(upl_forwarder_t *f, struct slot *s);

static bool rate_allows(upl_forwarder_t *f, const struct slot *s);

/* ---- held windows ahead of the backlog (upl_forwarder_hold()) ---- */

/* The next window asked for, positioned at its start; false if none. */
static bool hold_take(upl_forwarder_t *f)
{
	struct upl_source *src = &f->cfg.hold_source;
	int r;

	pthread_mutex_lock(&f->lock);
	f->hold_on = f->nholdq > 0;
	if (f->hold_on) {
		f->hold = f->holdq[0];
		memmove(f->holdq, f->holdq + 1, (f->nholdq - 1) * sizeof(f->holdq[0]));
		f->nholdq--;
	}
	pthread_mutex_unlock(&f->lock);
	if (!f->hold_on)
		return false;
	f->hold_caught_up = false;
	r = src->seek_time(src->ctx, f->hold.from_ns);
	if (r < 0) {
		/* Nothing lost: the backlog still sends it, only not first. */
		STAT_ADD(f, source_errors, 1);
		stats_error(f, r);
		f->hold_on = false;
	}
	return f->hold_on;
}

/* A record already on its way: the backlog has taken it (acknowledged or in
   its window), or it is in a slot ahead of the backlog, or acknowledged
   there (sent live, or by an earlier hold). */
static bool hold_has_gone(const upl_forwarder_t *f, const struct upl_rec *rec)
{
	return rec->first_seq + rec->count <= f->read_seq || ahead_slot(f, rec->first_seq) ||
	       ahead_has(f, rec->first_seq, rec->first_seq + rec->count);
}

static struct slot *hold_free_slot(upl_forwarder_t *f)
{
	for (unsigned i = LIVE_SLOTS; i < AHEAD_SLOTS; i++)
		if (!f->live[i].used)
			return &f->live[i];
	return NULL;
}

/*
 * Stage the held window's stored records into free hold slots, each once.
 * The window ends at the first record starting after to_ns (or, when the
 * source does not know when records start, after the first one ending
 * past it: it may hold the window's last samples); while its end is not stored yet (the post
 * window is still being recorded) the reader looks again every
 * idle_poll_ms, until HOLD_WAIT_NS after to_ns.
 */
static void hold_read(upl_forwarder_t *f)
{
	struct upl_source *src = &f->cfg.hold_source;

	/* Bounded: skipping records the backlog already sent costs reads too. */
	for (unsigned reads = 0; reads < 256; reads++) {
		struct slot *s = hold_free_slot(f);
		struct upl_rec rec = { 0 };
		int r;

		if (!s || (!f->hold_on && !hold_take(f)) || basic_mono_ns() < f->hold_poll_ns)
			return;
		r = src->next(src->ctx, &rec);
		if (r < 0)
			STAT_ADD(f, source_errors, 1);
		if (r == -EBADMSG) /* the source skipped the damage */
			continue;
		if (r <= 0) {
			f->hold_caught_up = true;
			if (basic_realtime_ns() < f->hold.to_ns + HOLD_WAIT_NS)
				f->hold_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
			else
				f->hold_on = false;
			return;
		}
		f->hold_caught_up = false;
		if (rec.t_first_ns && rec.t_first_ns > f->hold.to_ns) {
			f->hold_on = false; /* wholly past the window */
			return;
		}
		if (rec.payload && rec.len && !hold_has_gone(f, &rec)) {
			if (slot_fill(s, &rec, rec.t_last_ns < basic_realtime_ns() - f->cfg.live_window_ns) < 0) {
				/* Read it again after a pause. */
				src->seek(src->ctx, rec.first_seq);
				f->hold_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
				return;
			}
			s->used = true;
		}
		if (rec.t_last_ns > f->hold.to_ns)
			f->hold_on = false;
	}
}

/* True while the held window still has stored records to send: the
   backlog waits for them. */
static bool hold_ahead(const upl_forwarder_t *f)
{
	return f->hold_on && !f->hold_caught_up;
}

int upl_forwarder_hold(upl_forwarder_t *f, int64_t from_ns, int64_t to_ns)
{
	int r = 0;

	if (!f || from_ns > to_ns)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	if (!f->cfg.hold_source.next)
		r = -ENOTSUP;
	else if (f->nholdq == UPL_HOLD_MAX)
		r = -ENOSPC;
	if (r < 0) {
		f->st.hold_refused++;
	} else {
		f->holdq[f->nholdq++] = (struct hold_req){ from_ns, to_ns };
		f->st.hold_requests++;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

static int live_publish(upl_forwarder_t *f)
{
	int r;

	if (f->live_on && f->backlogged)
		live_read(f);
	if (f->cfg.hold_source.next)
		hold_read(f);
	/* Live first, then the held window (rate capped as the backlog is). */
	for (unsigned i = 0; i < AHEAD_SLOTS; i++) {
		struct slot *s = &f->live[i];

		if (!s->used || s->state != SLOT_STAGED)
			continue;
		if (i >= LIVE_SLOTS && !rate_allows(f, s))
			break;
		if (!s->ever_sent && i < LIVE_SLOTS)
			STAT_ADD(f, live_ahead, 1);
		else if (!s->ever_sent)
			STAT_ADD(f, hold_batches, 1);
		r = slot_publish(f, s);
		if (r < 0)
			return r;
	}
	return 0;
}

static void on_publish(struct mosquitto *mosq, void *arg, int mid)
{
	upl_forwarder_t *f = arg;

	if (live_ack(f, mid))
		return;
	for (unsigned k = 0; k < f->n; k++) {
		struct slot *s = slot_at(f, k);

		if (s->state == SLOT_SENT && s->mid == mid) {
			s->state = SLOT_ACKED;
			pthread_mutex_lock(&f->lock);
			f->st.acked++;
			f->st.acked_bytes += s->len;
			pthread_mutex_unlock(&f->lock);
			break;
		}
	}
	window_advance(f);
}

/* Take the next record from the log into a free slot.  1 if one was
   staged (or damage skipped), 0 if nothing can be taken now, -ENOMEM. */
static int window_stage(upl_forwarder_t *f)
{
	struct upl_rec rec;
	struct slot *s;
	int r;

	if (f->n == f->cfg.inflight || basic_mono_ns() < f->next_poll_ns)
		return 0;
	memset(&rec, 0, sizeof(rec));
	r = f->cfg.source.next(f->cfg.source.ctx, &rec);
	if (r <= 0) {
		if (r < 0) {
			STAT_ADD(f, source_errors, 1);
			stats_error(f, r);
		}
		/* -EBADMSG: the source already skipped the damage, go on; anything
		   else: retry after idle_poll_ms rather than spin on a failing
		   disk.  Never a reason to drop the connection. */
		if (r == -EBADMSG)
			return 1;
		f->next_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
		return 0;
	}
	/* Records wholly before the cursor were forwarded already (the source
	   seeks to the record containing the cursor, which may start earlier). */
	if (rec.first_seq + rec.count <= f->read_seq || !rec.payload || !rec.len)
		return 1;
	f->backlogged = rec.t_last_ns < basic_realtime_ns() - f->cfg.live_window_ns;
	/* Already delivered ahead of the backlog: acknowledged, skip it. */
	if (ahead_covers(f, rec.first_seq, rec.first_seq + rec.count)) {
		f->read_seq = rec.first_seq + rec.count;
		STAT_ADD(f, skipped, rec.count);
		window_advance(f);
		return 1;
	}
	s = slot_at(f, f->n);
	if (slot_fill(s, &rec, f->backlogged) < 0) {
		/* The source has moved past this record: rewind it, or the
		   record would be skipped for good.  Try again after a pause. */
		f->cfg.source.seek(f->cfg.source.ctx, f->read_seq);
		f->next_poll_ns = basic_mono_ns() + (int64_t)f->cfg.idle_poll_ms * 1000000;
		return -ENOMEM;
	}
	if (live_adopt(f, s))
		STAT_ADD(f, skipped, rec.count);
	f->n++;
	f->read_seq = rec.first_seq + rec.count;
	return 1;
}

static void emit(upl_forwarder_t *f, enum upl_fwd_event ev, int err)
{
	if (f->cfg.on_event)
		f->cfg.on_event(f->cfg.event_ctx, ev, err);
}

/* Token bucket for backlog bytes.  Live records pass freely: the cap only
   keeps a long backlog from saturating the cellular link. */
static bool rate_allows(upl_forwarder_t *f, const struct slot *s)
{
	int64_t now;
	double burst;

	if (!f->cfg.rate_bytes_s || s->ever_sent)
		return true;
	if (s->t_last_ns >= basic_realtime_ns() - f->cfg.live_window_ns)
		return true;
	now = basic_mono_ns();
	burst = (double)f->cfg.rate_bytes_s / 4;
	f->tokens += (double)(now - f->tokens_ns) * 1e-9 * (double)f->cfg.rate_bytes_s;
	if (f->tokens > burst)
		f->tokens = burst;
	f->tokens_ns = now;
	/* Allowing a message when the bucket is non-negative and letting it go
	   into debt keeps Batches larger than the burst from stalling. */
	if (f->tokens < 0)
		return false;
	f->tokens -= s->len;
	return true;
}

/* Events go out once, with the first publication of their Batch; they are
   a convenience view, the data topic stays the record of truth. */
static void slot_publish_events(upl_forwarder_t *f, const struct slot *s)
{
	rec_encoder_t *enc = NULL;
	const uint8_t *buf;
	size_t len;

	if (upl_events_batch(s->buf, s->len, &enc, &buf, &len) <= 0)
		return;
	if (mosquitto_publish(f->mosq, NULL, f->topic_events, (int)len, buf, 1, false) ==
	    MOSQ_ERR_SUCCESS)
		STAT_ADD(f, events_published, 1);
	rec_encoder_free(enc);
}

static int slot_publish(upl_forwarder_t *f, struct slot *s)
{
	int rc, mid;

	rc = mosquitto_publish(f->mosq, &mid, f->topic_data, (int)s->len, s->buf, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	if (f->cfg.publish_events && !s->ever_sent)
		slot_publish_events(f, s);
	pthread_mutex_lock(&f->lock);
	f->st.published++;
	if (s->ever_sent)
		f->st.resent++;
	pthread_mutex_unlock(&f->lock);
	s->mid = mid;
	s->state = SLOT_SENT;
	s->sent_ns = basic_mono_ns();
	s->ever_sent = true;
	return 0;
}

/* Publish staged slots in order while the rate cap allows, staging new
   records from the log as the window frees up.  0 or -errno. */
static int window_publish(upl_forwarder_t *f)
{
	for (;;) {
		unsigned k;
		int r;

		for (k = 0; k < f->n && slot_at(f, k)->state != SLOT_STAGED; k++)
			;
		if (k == f->n) {
			r = window_stage(f);
			if (r <= 0)
				return r;
			continue;
		}
		if (!rate_allows(f, slot_at(f, k)))
			return 0;
		r = slot_publish(f, slot_at(f, k));
		if (r < 0)
			return r;
	}
}

/* True if the oldest unacknowledged message waited too long: the broker
   is stopped or the TCP connection is half-open. */
static bool window_stalled(upl_forwarder_t *f)
{
	int64_t limit = basic_mono_ns() - (int64_t)f->cfg.ack_timeout_ms * 1000000;

	for (unsigned k = 0; k < f->n; k++) {
		struct slot *s = slot_at(f, k);

		if (s->state == SLOT_SENT && s->sent_ns < limit)
			return true;
	}
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live[i].used && f->live[i].state == SLOT_SENT && f->live[i].sent_ns < limit)
			return true;
	return false;
}

/* After a lost connection every unacknowledged message goes out again. */
static void window_rewind(upl_forwarder_t *f)
{
	for (unsigned k = 0; k < f->n; k++)
		if (slot_at(f, k)->state == SLOT_SENT)
			slot_at(f, k)->state = SLOT_STAGED;
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		if (f->live[i].used && f->live[i].state == SLOT_SENT)
			f->live[i].state = SLOT_STAGED;
}

/* ---- gap repair: the ground's resend requests ---- */

/* A request from the ground (the broker's ACL lets only the ground
   publish there): queue each range; the rest is refused and counted (the
   ground asks again for what is still missing). */
static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *m)
{
	upl_forwarder_t *f = arg;
	const char *p = m->payload, *end = p + (m->payloadlen > 0 ? m->payloadlen : 0);

	if (!m->topic || strcmp(m->topic, f->topic_resend) != 0)
		return;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct upl_range req;

		if (n && upl_range_parse(p, n, &req) == 0 && f->nresend < UPL_RESEND_MAX) {
			f->resend[f->nresend++] = req;
			STAT_ADD(f, resend_requests, 1);
		} else if (n) {
			STAT_ADD(f, resend_refused, 1);
		}
		p += n + 1;
	}
}

static void resend_pop(upl_forwarder_t *f)
{
	memmove(f->resend, f->resend + 1, (f->nresend - 1) * sizeof(f->resend[0]));
	f->nresend--;
}

/* "gone": [first, last] of the log is no longer stored. */
static int resend_gone(upl_forwarder_t *f, const struct upl_range *req, uint64_t first, uint64_t last)
{
	struct upl_range gone = *req;
	char msg[UPL_RANGE_LINE_MAX];
	int n, rc;

	gone.first = first;
	gone.last = last;
	if ((n = upl_range_format(&gone, msg, sizeof(msg))) < 0)
		return n;
	rc = mosquitto_publish(f->mosq, NULL, f->topic_gone, n, msg, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	STAT_ADD(f, resend_gone, 1);
	return 0;
}

/* The stored Batch again, flagged historical (as a backlog re-send). */
static int resend_batch(upl_forwarder_t *f, const struct upl_rec *rec)
{
	size_t need = rec->len + sizeof(historical_true);
	int rc;

	if (need > f->resend_cap) {
		void *b = realloc(f->resend_buf, need);
		if (!b)
			return -ENOMEM;
		f->resend_buf = b;
		f->resend_cap = need;
	}
	memcpy(f->resend_buf, rec->payload, rec->len);
	memcpy((uint8_t *)f->resend_buf + rec->len, historical_true, sizeof(historical_true));
	rc = mosquitto_publish(f->mosq, NULL, f->topic_data, (int)need, f->resend_buf, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	STAT_ADD(f, resend_batches, 1);
	return 0;
}

/* Whether the stored Batch belongs to the requested log. */
static bool same_log(const struct upl_rec *rec, const struct upl_range *req)
{
	struct rec_batch_info info;
	rec_batch_t *b;
	bool same;

	if (rec_batch_decode(rec->payload, rec->len, &b) < 0)
		return false;
	same = rec_batch_info(b, &info) == 0 && info.log_id_len == REC_LOG_ID_LEN &&
	       !memcmp(info.log_id, req->log_id, REC_LOG_ID_LEN);
	rec_batch_free(b);
	return same;
}

/*
 * One step of the oldest request, at most cfg.resend_per_s a second: the
 * stored Batch holding its first seq, or "gone" up to the first one still
 * stored.  A range past the log's end is not written yet: dropped (the
 * ground asks again if it is still missing later).  Off the window and the
 * cursor: a re-send is fire-and-forget, the ground's ledger tells.
 */
static int resend_step(upl_forwarder_t *f)
{
	struct upl_range *req = &f->resend[0];
	struct upl_source *src = &f->cfg.resend_source;
	struct upl_rec rec = { 0 };
	int64_t now = basic_mono_ns();
	int r;

	if (!f->nresend || now < f->resend_next_ns)
		return 0;
	f->resend_next_ns = now + 1000000000 / f->cfg.resend_per_s;
	r = src->seek(src->ctx, req->first);
	if (r == 0)
		r = src->next(src->ctx, &rec);
	if (r <= 0 || !rec.payload) {
		/* Past the end (not written yet), or the log cannot be read: the
		   ground asks again if it is still missing. */
		if (r < 0 && r != -EBADMSG)
			stats_error(f, r);
		resend_pop(f);
		return 0;
	}
	if (!same_log(&rec, req)) {
		/* Another log of this vehicle (an old card): none of it is here. */
		r = resend_gone(f, req, req->first, req->last);
		resend_pop(f);
		return r;
	}
	if (rec.first_seq > req->first) {
		uint64_t last = rec.first_seq - 1 < req->last ? rec.first_seq - 1 : req->last;
		r = resend_gone(f, req, req->first, last);
		req->first = last + 1;
	} else {
		r = resend_batch(f, &rec);
		req->first = rec.first_seq + rec.count;
	}
	if (r == 0 && req->first > req->last)
		resend_pop(f);
	return r == -ENOMEM ? 0 : r;
}

/* ---- the connection ---- */

static void on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_forwarder_t *f = arg;

	f->connack_rc = rc;
}

/* Remember the first reason a connection attempt or connection failed. */
static void why_set(upl_forwarder_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_set(upl_forwarder_t *f, const char *fmt, ...)
{
	va_list ap;

	if (f->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
}

/* A failed libmosquitto call, in its own words; errno as it left it. */
static void why_mosq(upl_forwarder_t *f, int rc, int sys_errno)
{
	char text[sizeof(f->why)];

	upl_mqtt_describe(rc, sys_errno, f->mosq_log, text, sizeof(text));
	why_set(f, "%s", text);
}

static void on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_forwarder_t *f = arg;
	int e = errno;

	f->lost = true;
	/* MOSQ_ERR_KEEPALIVE: no PINGRESP - an idle half-open connection. */
	if (rc == MOSQ_ERR_KEEPALIVE) {
		f->lost_err = -ETIMEDOUT;
		why_set(f, "the broker stopped answering keepalive pings (%u s)", f->cfg.keepalive_s);
	} else if (rc != MOSQ_ERR_SUCCESS) {
		why_mosq(f, rc, e);
	}
}

/* libmosquitto's error lines carry what its return codes lose: OpenSSL's
   reason for a failed handshake.  Kept, not printed: modules do not log. */
static void on_log(struct mosquitto *mosq, void *arg, int level, const char *str)
{
	upl_forwarder_t *f = arg;

	if (level == MOSQ_LOG_ERR)
		snprintf(f->mosq_log, sizeof(f->mosq_log), "%s", str);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void conn_down(upl_forwarder_t *f, int err, bool failed_attempt)
{
	uint64_t delay;

	if (f->mosq) {
		/* Fresh client next time: whatever state libmosquitto kept about
		   a dead socket is discarded with it. */
		mosquitto_destroy(f->mosq);
		f->mosq = NULL;
	}
	if (f->conn == CONN_UP) {
		f->fails = 0;
		emit(f, UPL_FWD_DISCONNECTED, err);
	} else {
		emit(f, UPL_FWD_CONNECT_FAILED, err);
	}
	f->conn = CONN_DOWN;
	window_rewind(f);
	why_set(f, "%s", strerror(err < 0 ? -err : EIO));
	pthread_mutex_lock(&f->lock);
	f->st.connected = false;
	if (failed_attempt)
		f->st.connect_fails++;
	if (err)
		f->st.last_error = err;
	snprintf(f->st.last_error_text, sizeof(f->st.last_error_text), "%s", f->why);
	pthread_mutex_unlock(&f->lock);
	f->why[0] = '\0';
	f->mosq_log[0] = '\0';
	/* Exponential backoff with jitter in [d/2, d]: a depot full of trains
	   coming back at once must not reconnect in lockstep. */
	delay = f->cfg.backoff_min_ms;
	for (unsigned i = 0; i < f->fails && delay < f->cfg.backoff_max_ms; i++)
		delay *= 2;
	if (delay > f->cfg.backoff_max_ms)
		delay = f->cfg.backoff_max_ms;
	delay = delay / 2 + xorshift(&f->rng) % (delay / 2 + 1);
	if (f->fails < 64)
		f->fails++;
	f->deadline_ns = basic_mono_ns() + (int64_t)delay * 1000000;
}

static int conn_setup(upl_forwarder_t *f)
{
	static const char offline[] = "offline";
	int r;

	/* clean_session false: the broker keeps our session across drops. */
	f->mosq = mosquitto_new(f->cfg.client_id, false, f);
	if (!f->mosq)
		return errno ? -errno : -ENOMEM;
	mosquitto_connect_callback_set(f->mosq, on_connect);
	mosquitto_disconnect_callback_set(f->mosq, on_disconnect);
	mosquitto_log_callback_set(f->mosq, on_log);
	mosquitto_publish_callback_set(f->mosq, on_publish);
	if (f->cfg.resend_source.next)
		mosquitto_message_callback_set(f->mosq, on_message);
	mosquitto_int_option(f->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
	/* Room for our window plus event and status messages, so libmosquitto
	   never queues a data message behind them. */
	r = mosquitto_max_inflight_messages_set(f->mosq, f->cfg.inflight * 2 + 2);
	if (r == MOSQ_ERR_SUCCESS && f->cfg.username)
		r = mosquitto_username_pw_set(f->mosq, f->cfg.username, f->cfg.password);
	if (r == MOSQ_ERR_SUCCESS)
		r = mosquitto_will_set(f->mosq, f->topic_status, sizeof(offline) - 1, offline, 1, true);
	if (r != MOSQ_ERR_SUCCESS) {
		why_mosq(f, r, errno);
		return upl_mqtt_errno(r);
	}
	r = f->cfg.use_tls ? upl_mqtt_tls_apply(f->mosq, &f->cfg.tls) : 0;
	if (r < 0)
		why_set(f, "cannot use the TLS files (ca_file, cert_file, key_file): %s", strerror(-r));
	return r;
}

static void conn_start(upl_forwarder_t *f)
{
	int r;

	r = conn_setup(f);
	if (r == 0) {
		int rc;

		f->connack_rc = -1;
		f->lost = false;
		f->lost_err = 0;
		errno = 0;
		rc = mosquitto_connect_async(f->mosq, f->cfg.host, f->cfg.port, (int)f->cfg.keepalive_s);
		if (rc != MOSQ_ERR_SUCCESS)
			why_mosq(f, rc, errno);
		r = upl_mqtt_errno(rc);
	}
	if (r < 0) {
		conn_down(f, r, true);
		return;
	}
	f->conn = CONN_CONNECTING;
	f->deadline_ns = basic_mono_ns() + (int64_t)f->cfg.connect_timeout_ms * 1000000;
}

static void conn_established(upl_forwarder_t *f)
{
	static const char online[] = "online";

	f->conn = CONN_UP;
	/* Retained, so a consumer arriving later sees the state at once; the
	   will replaces it with "offline" if we vanish. */
	mosquitto_publish(f->mosq, NULL, f->topic_status, sizeof(online) - 1, online, 1, true);
	if (f->cfg.resend_source.next)
		mosquitto_subscribe(f->mosq, NULL, f->topic_resend, 1);
	/* Retained too: the dictionary for a consumer that starts mid-stream
	   (the Batches carry it only now and then).  A failure costs nothing
	   but names until the next dictionary in a Batch. */
	if (f->cfg.channels_msg)
		mosquitto_publish(f->mosq, NULL, f->topic_channels, (int)f->cfg.channels_len, f->cfg.channels_msg, 1,
		                  true);
	pthread_mutex_lock(&f->lock);
	f->st.connects++;
	f->st.connected = true;
	pthread_mutex_unlock(&f->lock);
	emit(f, UPL_FWD_CONNECTED, 0);
}

/* One step while connecting or connected.  Returns the poll timeout (ms)
   the next mosquitto_loop() may block. */
static int conn_step(upl_forwarder_t *f)
{
	int r;

	if (f->conn == CONN_CONNECTING && f->connack_rc > 0) {
		/* The broker's reason beats the disconnect that follows it. */
		f->why[0] = '\0';
		why_set(f, "the broker refused the connection: %s", mosquitto_connack_string(f->connack_rc));
		conn_down(f, upl_mqtt_connack_errno(f->connack_rc), true);
		return 0;
	}
	if (f->lost) {
		conn_down(f, f->lost_err ? f->lost_err : -ECONNRESET, f->conn != CONN_UP);
		return 0;
	}
	if (f->conn == CONN_CONNECTING) {
		if (f->connack_rc == 0) {
			conn_established(f);
		} else if (basic_mono_ns() > f->deadline_ns) {
			why_set(f, "no answer (CONNACK) within %u ms: the broker accepts TCP but does not speak MQTT",
			        f->cfg.connect_timeout_ms);
			conn_down(f, -ETIMEDOUT, true);
			return 0;
		} else {
			return 20;
		}
	}
	/* Live first: it is what the ground wants to see now. */
	r = live_publish(f);
	if (r == 0 && !hold_ahead(f))
		r = window_publish(f);
	if (r == 0 && f->cfg.resend_source.next)
		r = resend_step(f);
	if (r < 0 && r != -ENOMEM) {
		conn_down(f, r, false);
		return 0;
	}
	if (window_stalled(f)) {
		why_set(f, "no PUBACK within %u ms: the broker stopped, or the connection is half-open",
		        f->cfg.ack_timeout_ms);
		STAT_ADD(f, ack_timeouts, 1);
		emit(f, UPL_FWD_ACK_TIMEOUT, -ETIMEDOUT);
		conn_down(f, -ETIMEDOUT, false);
		return 0;
	}
	return 20;
}

static void forwarder_goodbye(upl_forwarder_t *f)
{
	static const char offline[] = "offline";
	int64_t until = basic_mono_ns() + 500 * INT64_C(1000000);

	if (f->conn == CONN_UP) {
		/* A clean DISCONNECT suppresses the will, so say it ourselves. */
		mosquitto_publish(f->mosq, NULL, f->topic_status, sizeof(offline) - 1, offline, 1, true);
		while (mosquitto_want_write(f->mosq) && basic_mono_ns() < until)
			if (mosquitto_loop(f->mosq, 20, 1) != MOSQ_ERR_SUCCESS)
				break;
		mosquitto_disconnect(f->mosq);
		mosquitto_loop(f->mosq, 20, 1);
	}
	if (f->mosq)
		mosquitto_destroy(f->mosq);
	f->mosq = NULL;
	f->conn = CONN_DOWN;
	cursor_flush(f, true);
	pthread_mutex_lock(&f->lock);
	f->st.connected = false;
	pthread_mutex_unlock(&f->lock);
}

static void *forwarder_main(void *arg)
{
	upl_forwarder_t *f = arg;

	{
		int r = f->cfg.source.seek(f->cfg.source.ctx, f->cursor);

		if (r < 0)
			stats_error(f, r);
	}
	f->tokens_ns = basic_mono_ns();
	/* Into the record log through the board, with the reason. */
	if (f->cursor_damage)
		emit(f, UPL_FWD_CURSOR_RESET, f->cursor_damage);
	if (f->cfg.live_source.next) {
		int r = f->cfg.live_source.seek_time(f->cfg.live_source.ctx,
		                                     basic_realtime_ns() - f->cfg.live_window_ns);

		f->live_on = r == 0;
		if (r < 0)
			stats_error(f, r);
	}
	while (!atomic_load(&f->stop)) {
		int timeout;

		if (f->conn == CONN_DOWN) {
			int64_t wait = f->deadline_ns - basic_mono_ns();

			if (wait <= 0) {
				conn_start(f);
				continue;
			}
			/* Sleep in short slices so stop() is honoured quickly. */
			struct timespec ts = { 0, wait > 50000000 ? 50000000 : wait };
			nanosleep(&ts, NULL);
			continue;
		}
		timeout = conn_step(f);
		if (f->conn == CONN_DOWN)
			continue;
		/* mosquitto_loop also sends keepalive pings and notices a broker
		   that stopped answering them. */
		errno = 0;
		int rc = mosquitto_loop(f->mosq, timeout, 1);

		if (rc != MOSQ_ERR_SUCCESS) {
			int e = errno;

			f->lost = true;
			if (!f->lost_err) {
				errno = e;
				f->lost_err = upl_mqtt_errno(rc);
			}
			why_mosq(f, rc, e);
		}
	}
	forwarder_goodbye(f);
	return NULL;
}

int upl_forwarder_start(upl_forwarder_t *f)
{
	int r;

	if (!f)
		return -EINVAL;
	if (f->running)
		return -EALREADY;
	atomic_store(&f->stop, false);
	r = basic_thread_create(&f->thread, "forwarder", FWD_STACK_BYTES, forwarder_main, f);
	if (r == 0)
		f->running = true;
	return r;
}

int upl_forwarder_stop(upl_forwarder_t *f)
{
	if (!f)
		return -EINVAL;
	if (!f->running)
		return 0;
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	f->running = false;
	return 0;
}

int upl_forwarder_wait_cursor(upl_forwarder_t *f, uint64_t seq, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!f)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&f->lock);
	while (f->st.cursor < seq && err == 0) {
		if (!f->wait_seq || seq < f->wait_seq)
			f->wait_seq = seq;
		err = pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	}
	err = f->st.cursor >= seq ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&f->lock);
	return err;
}
