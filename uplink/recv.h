/* SPDX-License-Identifier: MIT */
/*
 * recv.h - the ground side: subscribe, decode Batches, detect gaps and
 * duplicates per vehicle, write records out.
 *
 * Duplicates (QoS 1 re-sends after a reconnect) are detected by sequence
 * number per vehicle and not written again; gaps are the holes between
 * the ranges seen so far (a hole may still be filled by a late Batch).
 * Records go to a FILE * as JSON lines or CSV, and/or every new Batch is
 * handed unchanged to a callback (board/ appends it to a local railmon
 * log with stor_log_append(), so export and replay work on the ground).
 *
 * Malformed payloads are counted and skipped, never fatal.  Nothing here
 * logs; board/ prints the stats.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "batch.h"
#include "mqtt.h"

enum upl_recv_format {
	UPL_RECV_NONE = 0,  /* no text output (callback only) */
	UPL_RECV_JSONL,     /* one JSON object per record */
	UPL_RECV_CSV,       /* header line, then one row per record */
	UPL_RECV_FORMAT_MAX
};

/*
 * Called once per Batch that carries at least one record not seen before,
 * with the payload exactly as received.  Runs on the thread in
 * upl_recv_run().  A negative return is counted in stats.sink_errors.
 */
typedef int (*upl_recv_batch_fn)(void *ctx, const struct upl_batch_info *info,
                                 const void *payload, size_t len);

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
	enum upl_recv_format format;
	FILE *out;                /* required unless format is NONE; not closed */
	upl_recv_batch_fn on_batch; /* optional */
	void *ctx;
};

struct upl_recv_stats {
	uint64_t messages;      /* payloads received */
	uint64_t bad;           /* payloads that failed to decode or validate */
	uint64_t batches;       /* Batches with something new */
	uint64_t records;       /* new records written */
	uint64_t duplicates;    /* records seen before, skipped */
	uint64_t missing;       /* records in the holes between ranges now */
	uint64_t vehicles;
	uint64_t sink_errors;   /* on_batch or output write failures */
	uint64_t connects;
	bool subscribed;
};

/* Per vehicle view: next_seq is one past the highest record seen. */
struct upl_recv_vehicle {
	uint64_t first_seq;     /* lowest record seen */
	uint64_t next_seq;
	uint64_t records;       /* distinct records seen */
	uint64_t duplicates;
	uint64_t missing;       /* holes in [first_seq, next_seq) */
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

/* Make upl_recv_run() return soon; any thread, async-signal-safe. */
int upl_recv_stop(upl_recv_t *r);

/*
 * Process one payload as if it arrived on topic (NULL = do not check the
 * topic's vehicle level).  This is what the MQTT callback calls; it is
 * public for tests, fuzzing and feeding captured payloads.
 * Returns the number of new records, or -EBADMSG (counted in stats.bad).
 */
int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len);

/* Wait until subscribed (or timeout_ms passes): 0 or -ETIMEDOUT. */
int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms);

/* Wait until at least n new records were written in total (or timeout_ms
   passes): 0 or -ETIMEDOUT. */
int upl_recv_wait_records(upl_recv_t *r, uint64_t n, unsigned timeout_ms);

/* Wait until every record of vehicle from the first one seen up to seq - 1
   has arrived (no holes, next_seq >= seq): 0 or -ETIMEDOUT. */
int upl_recv_wait_seq(upl_recv_t *r, const char *vehicle, uint64_t seq, unsigned timeout_ms);

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret_stats);

/* 0, or -ENOENT if no Batch of that vehicle was seen. */
int upl_recv_vehicle(upl_recv_t *r, const char *vehicle, struct upl_recv_vehicle *ret_vehicle);
