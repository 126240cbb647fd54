/* SPDX-License-Identifier: MIT */
/*
 * recv.h - the ground side's MQTT receiver: subscribe, decode each data
 * payload once and hand the decoded Batch to one callback (on_data: the
 * ground's ledger, ground/ledger.h, which tracks seqs per (vehicle, log
 * id) and writes records out).  Nothing here keeps per-log state,
 * formats or writes files.
 *
 * A payload that does not decode, or whose vehicle does not match its
 * topic, is counted (stats.bad) and skipped, never fatal; so is one
 * on_data answers -EBADMSG for.  Nothing here logs; ground/receiver.c
 * hands the stats on and cli/recv-say.c says them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"
#include "mqtt.h"

/*
 * Called once per data payload that decodes and whose Batch's vehicle
 * matches its topic, with *b, the Batch decoded (each payload is decoded
 * once, here) and the payload exactly as received: the callback may keep
 * *b past the call by taking it (*b = NULL; it frees it later with
 * rec_batch_free()), otherwise the receiver frees it after the call.
 * Runs on the thread in upl_recv_run() (or upl_recv_feed()'s caller),
 * without the receiver's lock.  Its return is upl_recv_feed()'s; -EBADMSG
 * is counted in stats.bad.
 */
typedef int (*upl_recv_data_fn)(void *ctx, rec_batch_t **b, const void *payload, size_t len);

/*
 * A channel dictionary message (railmon/<vehicle>/channels, retained: a
 * record-less Batch with the dictionary and config_hash) from a vehicle
 * whose name matches the topic and the rule (basic/name.h); b valid during
 * the call, same thread as on_data.
 */
typedef void (*upl_recv_channels_fn)(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b);

/* What went wrong with the last connection attempt or session. */
enum upl_recv_fail {
	UPL_RECV_FAIL_NONE = 0,
	UPL_RECV_FAIL_RESOLVE,        /* broker host name lookup (detail: getaddrinfo code) */
	UPL_RECV_FAIL_CONNECT,        /* TCP connect (err: -errno) */
	UPL_RECV_FAIL_TLS,            /* TLS handshake or certificate check */
	UPL_RECV_FAIL_REFUSED,        /* CONNACK refused (detail: its return code) */
	UPL_RECV_FAIL_TIMEOUT,        /* connected, no CONNACK within 15 s */
	UPL_RECV_FAIL_SUBSCRIBE,      /* the broker refused the subscription (ACL) */
	UPL_RECV_FAIL_LOST,           /* an established session dropped (err: -errno) */
	UPL_RECV_FAIL_MAX
};

struct upl_recv_cfg {
	const char *host;         /* broker; required for upl_recv_run() */
	int port;                 /* 1..65535 */
	const char *client_id;    /* required: names the persistent session */
	const char *topic;        /* subscription; NULL = "railmon/+/data" */
	bool clean_session;       /* false (default): the broker queues for us
	                             while we are away */
	bool use_tls;
	struct upl_tls_cfg tls;
	const char *username;     /* optional */
	const char *password;
	unsigned keepalive_s;     /* 0 = 20 */
	unsigned backoff_max_ms;  /* reconnect delay cap; 0 = 16000 */
	upl_recv_data_fn on_data; /* optional: every data Batch (the ground's ledger) */
	void *data_ctx;           /* for on_data */
	upl_recv_channels_fn on_channels; /* optional: then railmon/+/channels is
	                               subscribed too (not shared, before the data
	                               topic, so the retained dictionaries come first) */
	void *ctx;                /* for the callbacks but on_data */
	void (*on_status)(void *ctx, const char *topic, const void *payload, size_t len);
	                          /* optional: then railmon/+/status is subscribed too (not
	                             shared: every receiver gets each vehicle's retained
	                             state), its messages here (same thread as on_data) */
	void (*on_config_status)(void *ctx, const char *topic, const void *payload, size_t len);
	                          /* optional: then railmon/+/config/status is subscribed
	                             too (not shared, as on_status): each vehicle's outcome
	                             of a remote board configuration, here (same thread) */
	const char *aux_topic;    /* optional: a further subscription (e.g. the vehicles'
	                             "gone" answers of gap repair), may be $share/... */
	void (*on_aux)(void *ctx, const char *topic, const void *payload, size_t len);
	                          /* its messages (same thread as on_data) */
	void (*on_tick)(void *ctx); /* optional: called on the receiving thread (that of
	                             on_data) at least every 100 ms while connected */
	void (*on_idle)(void *ctx); /* optional: on the thread of on_batch at least every
	                             100 ms, between messages (connected or not): for work
	                             held across Batches, such as a group to commit */
};

struct upl_recv_stats {
	uint64_t messages;      /* data payloads received */
	uint64_t bad;           /* payloads that failed to decode or validate (a vehicle
	                           other than the topic's, or on_data's -EBADMSG);
	                           dictionaries on railmon/<v>/channels too, and those
	                           over 1 MiB */
	uint64_t channels_refused; /* dictionaries of a vehicle name against the rule */
	uint64_t connects;
	uint64_t connect_failures; /* attempts that did not get to a subscription */
	uint64_t disconnects;   /* subscribed sessions that dropped */
	enum upl_recv_fail fail;   /* the last failure (kept after a later success) */
	int fail_err;           /* its -errno, 0 if none */
	int fail_detail;        /* getaddrinfo code, CONNACK code, else 0 */
	char fail_text[160];    /* in plain words: strerror, gai_strerror, mosquitto's
	                           CONNACK or TLS error text */
	bool subscribed;
};

typedef struct upl_recv upl_recv_t;

/* Validate and allocate (strings copied).  0, -EINVAL, -ENOMEM. */
int upl_recv_new(const struct upl_recv_cfg *cfg, upl_recv_t **ret_recv);
upl_recv_t *upl_recv_free(upl_recv_t *r);

/*
 * Connect, subscribe (QoS 1) and process messages until upl_recv_stop(),
 * reconnecting with backoff forever.  Returns 0 after stop, or -errno for
 * a configuration the broker library refuses outright (e.g. unreadable CA).
 */
int upl_recv_run(upl_recv_t *r);

/*
 * Publish (QoS 1, not retained) from any thread: copied into a queue of
 * UPL_RECV_PUB_MAX that upl_recv_run()'s thread sends while connected.
 * 0, -ENOBUFS (queue full: try again later), -EINVAL, -ENOMEM.
 */
#define UPL_RECV_PUB_MAX 256
int upl_recv_publish(upl_recv_t *r, const char *topic, const void *payload, size_t len);

/* Make upl_recv_run() return soon; any thread, async-signal-safe. */
int upl_recv_stop(upl_recv_t *r);

/*
 * Process one payload as if it arrived on topic (NULL = do not check the
 * topic's vehicle level).  This is what the MQTT callback calls; it is
 * public for tests, fuzzing and feeding captured payloads.
 * Returns on_data's return (0 without on_data), or -EBADMSG (stats.bad).
 */
int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len);

/* Wait until subscribed (or timeout_ms passes): 0 or -ETIMEDOUT. */
int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms);

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret_stats);
