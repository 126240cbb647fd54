/* SPDX-License-Identifier: MIT */
/*
 * forward-private.h - the forwarder's state and the functions its files
 * share, only inside uplink/: forward.c (the object, its thread and the
 * requests it takes), fwd-conn.c (the MQTT connection), fwd-window.c (the
 * backlog window and the cursor), fwd-ahead.c (live records and held
 * windows ahead of it), fwd-resend.c (gap repair), fwd-slot.c (one
 * message and its publication), fwd-events.c (the events topic).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwd-types.h"
#include "mqtt-private.h"
#include "range.h"
#include "request.h"
#include "record/batch.h"

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

/* The connection (fwd-conn.c): its state, its failures, its backoff. */
struct fwd_net {
	struct mosquitto *mosq;
	enum conn_state state;
	int connack_rc;          /* -1 until the CONNACK callback */
	bool lost;               /* the disconnect callback fired */
	int lost_err;            /* why, if mosquitto_loop() said so */
	int64_t deadline_ns;     /* CONNACK due / next attempt */
	unsigned fails;          /* consecutive failed attempts */
	uint64_t rng;
	char why[192];           /* the current failure in plain words, "" = none yet */
	char mosq_log[160];      /* the last error libmosquitto logged (OpenSSL's reason) */
};

/* The backlog window and the cursor (fwd-window.c; fwd-slot.c's rate cap). */
struct fwd_window {
	struct slot *slots;      /* ring of cfg.inflight slots, oldest at head */
	unsigned head, n;
	uint64_t read_seq;       /* seq after the last record taken from the log */
	int64_t next_poll_ns;    /* log drained: look again at this time */
	uint64_t cursor;         /* lowest unacknowledged seq (in memory) */
	uint64_t cursor_written; /* value in the file (a kill -9 keeps it) */
	uint64_t cursor_synced;  /* value fsynced (a power cut keeps it) */
	int64_t cursor_due_ns;   /* the next timed write, the fsynced one */
	bool cursor_failing;     /* the last write failed: retried when due only */
	int cursor_damage;       /* reported once by the thread, see stats */
	double tokens;           /* backlog rate cap bucket, bytes */
	int64_t tokens_ns;
};

/* Live records sent ahead of a backlog (fwd-ahead.c, cfg.live_source). */
struct fwd_live {
	bool on;                 /* the live reader is positioned and in use */
	bool backlogged;         /* the last record staged was older than the live window */
	int64_t poll_ns;
	struct slot slot[AHEAD_SLOTS];
	struct range ahead[AHEAD_MAX]; /* acked live and held ranges, sorted, disjoint */
	size_t nahead;
};

/* The held window being sent (fwd-ahead.c, cfg.hold_source). */
struct fwd_hold {
	bool on;
	bool caught_up;          /* its reader reached the head of the log */
	struct hold_req req;
	int64_t poll_ns;
};

/* The ground's resend requests (fwd-resend.c, cfg.resend_source), oldest first. */
struct fwd_resend {
	struct upl_range req[UPL_RESEND_MAX];
	size_t n;
	int64_t next_ns;         /* rate limit: the next re-send not before */
	void *buf;               /* a Batch with the historical flag added */
	size_t cap;
	upl_requests_t *requests; /* cfg.requests_path's; NULL: none */
	bool request_active;     /* req[0] is the oldest request's range */
	/* A request's Batches are fire-and-forget like gap repair's, but the
	   ground never asks for them again (their records count "on board"):
	   the request is served (in the file) only once the broker acknowledged
	   its last message (ack_mid), and a connection lost before that serves
	   it again from its start (fwd-resend.c). */
	bool request_sent;       /* a message of the active request was published */
	bool request_wait;       /* popped: waiting for ack_mid's PUBACK */
	bool last_acked;         /* last_mid's PUBACK came (a range ending at
	                            the log's end is popped a step after its
	                            last Batch, its PUBACK maybe before) */
	int last_mid, ack_mid;
	upl_reducer_t *channels; /* the active request names channels: its
	                            Batches go reduced to them (and events) */
};

struct upl_forwarder {
	struct upl_forward_cfg cfg; /* strings point at our own copies */
	char *topic_data, *topic_status, *topic_events, *topic_resend, *topic_gone, *topic_channels, *topic_request,
	     *topic_config,
	     *topic_config_status;

	pthread_t thread;
	bool running;
	atomic_bool stop;

	pthread_mutex_t lock; /* guards st */
	pthread_cond_t cond;  /* signalled when st.cursor reaches wait_seq */
	uint64_t wait_seq;    /* lowest target of a waiter, 0 = none */
	struct upl_forward_stats st;
	struct hold_req holdq[UPL_HOLD_MAX]; /* upl_forwarder_hold(), oldest first */
	size_t nholdq;
	char *config_status;  /* upl_forwarder_config_status(): retained, NULL = none */
	bool config_status_new; /* not yet published on this connection */

	/* Everything below belongs to the forwarder thread, each part to the
	   file named at its type. */
	struct fwd_net net;
	struct fwd_window win;
	struct fwd_live live;
	struct fwd_hold hold;
	struct fwd_resend resend;
	/* the reduced stream (NULL: none): one per path, each reads the log
	   in seq order; the backlog's starts again when it skips records
	   sent ahead of it (its last values are not the ground's then) */
	upl_reducer_t *red_backlog, *red_live;
};

static inline void stats_error(upl_forwarder_t *f, int err)
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

static inline void emit(upl_forwarder_t *f, enum upl_fwd_event ev, int err)
{
	if (f->cfg.on_event)
		f->cfg.on_event(f->cfg.event_ctx, ev, err);
}

/*
 * Batch.historical (field 7, varint) = true, as two bytes appended to the
 * stored Batch: protobuf parsers merge a concatenated message and the last
 * value of a scalar field wins, so the flag is set without re-encoding and
 * the stored records themselves stay byte for byte as logged.
 */
static const uint8_t historical_true[2] = { 7 << 3 | 0, 1 };

/* fwd-slot.c */
/* The stored record into s, reduced by red (NULL: as stored), flagged
   historical; 0 or -ENOMEM. */
int upl_fwd_slot_fill(upl_forwarder_t *f, upl_reducer_t *red, struct slot *s, const struct upl_rec *rec,
                      bool historical);
/* Token bucket for backlog bytes; live records and re-sends pass. */
bool upl_fwd_rate_allows(upl_forwarder_t *f, const struct slot *s);
/* Publish s on the data topic (its events too, the first time); 0 or -errno. */
int upl_fwd_slot_publish(upl_forwarder_t *f, struct slot *s);

/* fwd-ahead.c */
bool upl_fwd_ahead_covers(upl_forwarder_t *f, uint64_t lo, uint64_t hi);
bool upl_fwd_live_ack(upl_forwarder_t *f, int mid);
bool upl_fwd_live_adopt(upl_forwarder_t *f, struct slot *s);
bool upl_fwd_hold_ahead(const upl_forwarder_t *f);
int upl_fwd_live_publish(upl_forwarder_t *f);

/* fwd-window.c */
void upl_fwd_cursor_flush(upl_forwarder_t *f, bool force);
void upl_fwd_on_publish(struct mosquitto *mosq, void *arg, int mid);
int upl_fwd_window_publish(upl_forwarder_t *f);
bool upl_fwd_window_stalled(upl_forwarder_t *f);
void upl_fwd_window_rewind(upl_forwarder_t *f);

/* fwd-resend.c */
int upl_fwd_resend_step(upl_forwarder_t *f);
/* A PUBACK: true if it was the one a request waited for (now served). */
bool upl_fwd_resend_acked(upl_forwarder_t *f, int mid);
/* The connection went: a request not yet acknowledged is served again. */
void upl_fwd_resend_conn_down(upl_forwarder_t *f);

/* fwd-conn.c */
void upl_fwd_on_connect(struct mosquitto *mosq, void *arg, int rc);
void upl_fwd_why_set(upl_forwarder_t *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void upl_fwd_why_mosq(upl_forwarder_t *f, int rc, int sys_errno);
void upl_fwd_on_disconnect(struct mosquitto *mosq, void *arg, int rc);
void upl_fwd_on_log(struct mosquitto *mosq, void *arg, int level, const char *str);
void upl_fwd_conn_down(upl_forwarder_t *f, int err, bool failed_attempt);
void upl_fwd_conn_established(upl_forwarder_t *f);
void upl_fwd_goodbye(upl_forwarder_t *f);

/*
 * The events of a stored Batch as an event-only Batch for
 * railmon/<vehicle>/events.  Events are the last records of a Batch, so
 * they form one contiguous range and keep their sequence numbers.
 * Returns the number of events; when > 0, *ret_enc owns *ret_buf (free it
 * with rec_encoder_free() after publishing).  0 if there are none, or
 * -EBADMSG / -ENOMEM.
 */
int upl_events_batch(const void *buf, size_t len, rec_encoder_t **ret_enc,
                     const uint8_t **ret_buf, size_t *ret_len);
