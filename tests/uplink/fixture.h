/* SPDX-License-Identifier: MIT */
/*
 * fixture.h - test helpers for the uplink tests: a real mosquitto started
 * on a free loopback port, an in-memory log that plays the flash log's
 * part behind struct upl_source, and a generator of realistic records.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <mosquitto.h>

#include "record/batch.h"
#include "record/format.h"
#include "uplink/forward.h"
#include "uplink/recv.h"
#include "ground-end.h"
#include "tlib.h"

struct broker {
	struct tlib_peer peer; /* mosquitto; its stdout and stderr on peer.out_fd */
	int port;
	char dir[128];       /* temp dir: config, persistence, log */
	char conf[192];
	pthread_t drain;
	bool draining;
};

/* A loopback TCP port nobody listens on now. */
int fx_free_port(void);

/* Create the temp dir and write the config: a plain listener on a free
   port plus extra (more listeners, TLS, auth) verbatim; anonymous clients
   are allowed unless extra sets allow_anonymous itself.  persistent keeps the
   in-memory database on disk every second (sessions survive SIGKILL). */
int broker_init(struct broker *b, bool persistent, const char *extra);
/* Start mosquitto and wait (bounded) for its "running" line.  The broker
   is killed when the calling thread ends, however it ends (abort, signal,
   exit without broker_fini()): call it from the main thread. */
int broker_start(struct broker *b);
/* Send sig; for SIGKILL/SIGTERM also reap it. */
int broker_signal(struct broker *b, int sig);
/* Stop it and delete the temp dir. */
void broker_fini(struct broker *b);

/* ---- in-memory log ---- */
struct memrec {
	uint64_t first_seq;
	uint32_t count;
	int64_t t_last_ns;
	void *buf;
	uint32_t len;
};

struct memlog {
	pthread_mutex_t lock;
	struct memrec *recs;
	size_t n, cap;
	size_t pos;          /* reader position */
	uint64_t next_seq;   /* next seq to append */
	uint64_t bytes;
	uint64_t reads;      /* records handed to the forwarder */
};

void memlog_init(struct memlog *l);
void memlog_fini(struct memlog *l);
int memlog_append(struct memlog *l, uint32_t count, int64_t t_last_ns, const void *buf, size_t len);
struct upl_source memlog_source(struct memlog *l);

/* ---- record generator ---- */
struct gen {
	rec_encoder_t *enc;
	uint64_t rng;
	int64_t t_ns;
};

/* Batches of vehicle with log id 1d1d..1d01. */
int gen_init(struct gen *g, const char *vehicle, size_t max_items, int64_t t0_ns);
/* With this log id (REC_LOG_ID_LEN bytes; NULL: none, as railmon before log ids). */
int gen_init_log(struct gen *g, const char *vehicle, const uint8_t *log_id, size_t max_items,
                 int64_t t0_ns);
void gen_fini(struct gen *g);
/* One realistic item at time t: CAN on buses 0/1, samples, rare events. */
void gen_item(struct gen *g, int64_t t_ns, struct acq_item *ret);
/* Encode n items spaced dt_ns apart into one Batch appended to l. */
int gen_batch(struct gen *g, struct memlog *l, size_t n, int64_t dt_ns);

/* ---- recv's records as text, as `railmon recv` writes them ---- */
struct fx_text {
	FILE *out;
	enum rec_format fmt;
};

/* An grd_ledger_record_fn writing through record/'s formatter with the
   origin columns (no channel names: the generator sends no dictionary);
   ctx is a struct fx_text. */
int fx_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                   const struct acq_item *it, bool first, void **log_ctx);

/* ---- forwarder events, counted for tests to wait on ---- */
struct fx_events {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned n[UPL_FWD_EVENT_MAX];
	int last_err;
};

void fx_events_init(struct fx_events *e);
/* An upl_fwd_event_fn; ctx is a struct fx_events. */
void fx_on_event(void *ctx, enum upl_fwd_event ev, int err);
unsigned fx_events_get(struct fx_events *e, enum upl_fwd_event ev);
/* Wait until ev happened at least n times: 0 or -ETIMEDOUT. */
int fx_events_wait(struct fx_events *e, enum upl_fwd_event ev, unsigned n, unsigned timeout_ms);

/* ---- recv (the subscriber) on its own thread ---- */
struct fx_recv {
	fx_gnd_t *r;
	pthread_t t;
};

/* Create recv from cfg, run it on a thread and wait (bounded) until it is
   subscribed; CHECKs on failure.  fx_recv_stop() stops, joins and frees. */
void fx_recv_start(struct fx_recv *rt, const struct fx_gnd_cfg *cfg);
void fx_recv_stop(struct fx_recv *rt);

/* ---- a plain libmosquitto ground: what the forwarder sends it ---- */
#define FX_SEEN_MAX 4096

/* The Batches (in arrival order) and "gone" lines a ground saw. */
struct fx_seen {
	pthread_mutex_t lock;
	uint64_t first[FX_SEEN_MAX];
	uint32_t count[FX_SEEN_MAX];
	bool historical[FX_SEEN_MAX];
	size_t n;
	unsigned bad;            /* data messages that did not decode (or past FX_SEEN_MAX) */
	char gone[128];          /* the newest "gone" message */
	unsigned gone_n;
	unsigned subscribed;     /* SUBACKs granting the subscription */
};

/* Initialise s, and connect a client id to the broker on port subscribed
   to railmon/<vehicle>/data and /gone (both SUBACKs received: what is
   published after the return reaches s), its loop started, filling s;
   CHECKs on failure.  fx_seen_close() stops and frees the client. */
struct mosquitto *fx_seen_connect(struct fx_seen *s, const char *id, int port, const char *vehicle);
void fx_seen_close(struct mosquitto *m);
/* Batches seen so far. */
size_t fx_seen_n(struct fx_seen *s);
/* The forwarder's stats (CHECKed). */
struct upl_forward_stats fx_fwd_stats(upl_forwarder_t *f);
/* Publish the full-rate request q to railmon/<vehicle>/request from m
   until the forwarder has taken it (its requests_taken past what it was at
   the call): a request is lost until the forwarder has subscribed, and
   the same id again is ignored (that is the rule).  CHECKs (100 tries). */
struct upl_request;
void fx_request_until_taken(struct mosquitto *m, upl_forwarder_t *f, const char *vehicle,
                            const struct upl_request *q);

/* A TCP proxy on a free loopback port to upstream (a broker), in a thread
   of its own: the forwarder's connections through it can be reset (RST,
   as a network that dropped them) or blackholed (the client's bytes read
   and dropped: a link that loses what is sent, the connection still up). */
#define FX_PROXY_MAX 16
struct fx_proxy {
	int lfd, efd, port, upstream;
	int a[FX_PROXY_MAX], b[FX_PROXY_MAX]; /* client side, broker side; -1 = free */
	pthread_t t;
	bool stop, blackhole;
	uint64_t resets;
};
void fx_proxy_start(struct fx_proxy *p, int upstream);
void fx_proxy_reset(struct fx_proxy *p);
void fx_proxy_blackhole(struct fx_proxy *p, bool on);
void fx_proxy_stop(struct fx_proxy *p);
