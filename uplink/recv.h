/* SPDX-License-Identifier: MIT */
/*
 * recv.h - the ground side: subscribe, decode Batches, detect gaps,
 * duplicates and conflicts per (vehicle, log id), write records out.
 *
 * Sequence numbers are per log: a vehicle whose log was replaced (new
 * flash card, wiped data) starts again at seq 1 under a new log id
 * (Batch.log_id), and is tracked as another log.  Within a log:
 * - a Batch seen before with the same records (a QoS 1 re-send) is a
 *   duplicate, skipped silently (counted);
 * - a Batch claiming records seen before but with other records (or cut
 *   differently) is a conflict: refused whole, counted and handed to
 *   on_refused so it can be kept for inspection;
 * - gaps are the holes between the ranges seen (a late Batch may fill one).
 * Every record to write out is handed to on_record (ground/text.c writes
 * it as text with record/'s formatter, as export does), and/or every
 * Batch with new records is handed unchanged to on_batch (ground/logs.c
 * appends it to a local railmon log per (vehicle, log id), so export and
 * replay work on the ground, and commits it to the ground database;
 * ground/receiver.c wires them).  Nothing here formats or writes files.
 *
 * Memory is bounded per log (UPL_RECV_MAX_RANGES ranges, the contents of
 * the last UPL_RECV_MAX_DIGESTS Batches) and in the number of vehicles
 * (max_vehicles).  Anything refused is counted with its reason.
 * Malformed payloads are counted and skipped, never fatal.  Nothing here
 * logs; ground/receiver.c hands the stats on and cli/recv-say.c says them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"
#include "mqtt.h"

#define UPL_RECV_MAX_RANGES 1024      /* seq ranges remembered per log */
#define UPL_RECV_MAX_DIGESTS 1024     /* Batch contents remembered per log */
#define UPL_RECV_MAX_JUMP (UINT64_C(1) << 40) /* records a Batch may lie away from its log */
#define UPL_RECV_SEQ_LIMIT (UINT64_C(1) << 63) /* every seq is below this (railmon.proto) */
#define UPL_RECV_MAX_VEHICLES_DEFAULT 10000

/*
 * Called once per Batch that carries at least one record written out,
 * with the payload exactly as received and *b, the Batch as the receiver
 * decoded it (each payload is decoded once, here): the callback may keep
 * it past the call by taking it (*b = NULL; it frees it later with
 * rec_batch_free()), otherwise the receiver frees it after the call.
 * *log_ctx is one pointer per (vehicle, log id) for the callback's own
 * use (its ground log), NULL the first time; upl_recv_log() gives it
 * back.  Runs on the thread in upl_recv_run() (or upl_recv_feed()'s
 * caller).  A negative return is counted in stats.sink_errors.
 */
typedef int (*upl_recv_batch_fn)(void *ctx, const struct rec_batch_info *info, rec_batch_t **b,
                                 const void *payload, size_t len, void **log_ctx);

/*
 * Called for each record to write out (new, or below the remembered
 * ranges: stats.old), in seq order, before on_batch of its Batch, on the
 * same thread.  b is the decoded Batch (its channel dictionary:
 * rec_batch_channel()), valid during the call; first is true for the
 * first record written of a Batch (learn its dictionary then); log_ctx
 * as for on_batch.  A negative return is counted in stats.sink_errors,
 * once per Batch.
 */
typedef int (*upl_recv_record_fn)(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                                  const struct acq_item *item, bool first, void **log_ctx);

/*
 * A channel dictionary message (railmon/<vehicle>/channels, retained: a
 * record-less Batch with the dictionary and config_hash) from a vehicle
 * whose name matches the topic; b valid during the call, same thread as
 * on_record.
 */
typedef void (*upl_recv_channels_fn)(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b);

/* Why a Batch was refused (nothing of it written, on_refused called). */
enum upl_recv_refusal {
	UPL_RECV_CONFLICT = 0,        /* records seen before, with other content */
	UPL_RECV_SEQ_JUMP,            /* seq over UPL_RECV_MAX_JUMP away from its log (a
	                                 log's first Batch: from seq 1, until the next
	                                 Batch starts where it ended) */
	UPL_RECV_TOO_MANY_VEHICLES,   /* a new vehicle past max_vehicles */
	UPL_RECV_NO_MEMORY,           /* could not allocate its vehicle's or log's state */
	UPL_RECV_BAD_VEHICLE,         /* a vehicle name against the rule (basic/name.h); also
	                                 counts dictionaries (railmon/<v>/channels) refused so */
	UPL_RECV_REFUSAL_MAX
};

/* A refused Batch, payload as received and *b decoded, which the
   callback may take as on_batch's (same thread as on_batch). */
typedef void (*upl_recv_refused_fn)(void *ctx, enum upl_recv_refusal why,
                                    const struct rec_batch_info *info, rec_batch_t **b,
                                    const void *payload, size_t len);

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
	upl_recv_record_fn on_record; /* optional */
	upl_recv_batch_fn on_batch; /* optional */
	upl_recv_refused_fn on_refused; /* optional */
	upl_recv_batch_fn on_jump; /* optional: a Batch over UPL_RECV_MAX_JUMP from the rest of
	                             its log as remembered goes here, payload as received,
	                             instead of being refused (its records are not written
	                             nor counted, nor remembered): for a caller that checks
	                             it against what survives a restart (recv --db: the
	                             ledger), so a bogus Batch that came first after a
	                             restart cannot make the real ones look like jumps */
	upl_recv_channels_fn on_channels; /* optional: then railmon/+/channels is
	                               subscribed too (not shared, before the data
	                               topic, so the retained dictionaries come first) */
	void *ctx;                /* for the callbacks */
	void (*on_status)(void *ctx, const char *topic, const void *payload, size_t len);
	                          /* optional: then railmon/+/status is subscribed too (not
	                             shared: every receiver gets each vehicle's retained
	                             state), its messages here (same thread as on_batch) */
	const char *aux_topic;    /* optional: a further subscription (e.g. the vehicles'
	                             "gone" answers of gap repair), may be $share/... */
	void (*on_aux)(void *ctx, const char *topic, const void *payload, size_t len);
	                          /* its messages (same thread as on_batch) */
	void (*on_tick)(void *ctx); /* optional: called on the receiving thread (that of
	                             on_record) at least every 100 ms while connected */
	size_t max_vehicles;      /* distinct vehicle ids kept; 0 = UPL_RECV_MAX_VEHICLES_DEFAULT */
	void (*on_idle)(void *ctx); /* optional: on the thread of on_batch at least every
	                             100 ms, between messages (connected or not): for work
	                             held across Batches, such as a group to commit */
};

struct upl_recv_stats {
	uint64_t messages;      /* payloads received */
	uint64_t bad;           /* payloads that failed to decode or validate (seq 0 or
	                           past UPL_RECV_SEQ_LIMIT included; dictionaries on
	                           railmon/<v>/channels too, and those over 1 MiB) */
	uint64_t batches;       /* Batches with something written */
	uint64_t records;       /* records written */
	uint64_t duplicates;    /* records seen before, skipped (with unverified) */
	uint64_t unverified;    /* of those, skipped without comparing their content:
	                           their Batch is older than the last UPL_RECV_MAX_DIGESTS */
	uint64_t old;           /* records below the ranges remembered (past
	                           UPL_RECV_MAX_RANGES): written again, may be duplicates */
	uint64_t missing;       /* records in the holes of all logs now (saturates) */
	uint64_t refused[UPL_RECV_REFUSAL_MAX]; /* Batches refused, by reason */
	uint64_t conflict_records; /* records in the conflicting Batches */
	uint64_t vehicles;      /* distinct vehicle ids */
	uint64_t logs;          /* distinct (vehicle, log id) */
	uint64_t sink_errors;   /* Batches on_record or on_batch failed for */
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

/*
 * One log of one vehicle.  first_seq .. next_seq - 1 is the span seen;
 * records counts the distinct records in it, missing the others (holes).
 * Both stay exact when old ranges are forgotten: records that arrive below
 * the remembered ranges afterwards are counted in old, not records.
 */
struct upl_recv_log {
	const char *vehicle;    /* valid until upl_recv_free() */
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;      /* 0: Batches without a log id (older railmon) */
	uint64_t first_seq;     /* lowest record seen */
	uint64_t next_seq;      /* one past the highest record seen */
	uint64_t records;       /* distinct records seen */
	uint64_t duplicates;
	uint64_t unverified;
	uint64_t old;
	uint64_t missing;       /* next_seq - first_seq - records */
	uint64_t conflicts;     /* Batches refused as conflicts */
	uint64_t seq_jumps;     /* Batches refused: too far from the rest */
	void *log_ctx;          /* what on_record or on_batch stored */
};

/* Per vehicle view: its newest log (first seen last), and how many logs. */
struct upl_recv_vehicle {
	uint64_t first_seq;     /* lowest record seen */
	uint64_t next_seq;
	uint64_t records;       /* distinct records seen */
	uint64_t duplicates;
	uint64_t missing;       /* holes in [first_seq, next_seq) */
	uint64_t logs;
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
 * Returns the number of records written (0 for duplicates), -EBADMSG
 * (stats.bad), or a refusal (stats.refused): -EEXIST a conflict, -ERANGE a
 * seq jump, -EUSERS too many vehicles, -ENOMEM, -EPERM a vehicle name
 * against the rule (basic/name.h).
 */
int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len);

/* Wait until subscribed (or timeout_ms passes): 0 or -ETIMEDOUT. */
int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms);

/* Wait until at least n new records were written in total (or timeout_ms
   passes): 0 or -ETIMEDOUT. */
int upl_recv_wait_records(upl_recv_t *r, uint64_t n, unsigned timeout_ms);

/* Wait until every record of vehicle's newest log from the first one seen
   up to seq - 1 has arrived (no holes, next_seq >= seq): 0 or -ETIMEDOUT. */
int upl_recv_wait_seq(upl_recv_t *r, const char *vehicle, uint64_t seq, unsigned timeout_ms);

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret_stats);

/* The same without waiting: -EBUSY while a callback runs (the stats are
   locked through on_batch, which may wait for a database). */
int upl_recv_stats_try(upl_recv_t *r, struct upl_recv_stats *ret_stats);

/* 0, or -ENOENT if no Batch of that vehicle was seen. */
int upl_recv_vehicle(upl_recv_t *r, const char *vehicle, struct upl_recv_vehicle *ret_vehicle);

/* The i-th (vehicle, log id) seen, in the order first seen: 0, or -ENOENT
   past the last. */
int upl_recv_log(upl_recv_t *r, size_t i, struct upl_recv_log *ret_log);

/*
 * Whether two encoded Batches hold the same records under the same seqs
 * (not the same bytes: a backlog re-send carries Batch.historical too):
 * 1 or 0, -EBADMSG if either does not decode, -EINVAL for NULL with a
 * length.  For a ground log that
 * meets a Batch it may already hold (a re-send after a restart).
 */
int upl_recv_same_records(const void *a, size_t alen, const void *b, size_t blen);

