/* SPDX-License-Identifier: MIT */
/*
 * recv-private.h - what the receiver's two files share: recv.c (the MQTT
 * session, the payloads in) and ledger.c (per (vehicle, log id): the
 * seqs seen, the Batches remembered, the records to hand out).
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "recv.h"

struct vehicle;
struct stream;

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

/* One decoded Batch (payload as received) through the ledger, r->lock
   held: the records written (0 for duplicates), -EBADMSG, or a refusal as
   upl_recv_feed() returns it (ledger.c).  *b may be taken by a callback. */
int upl_ledger_feed(upl_recv_t *r, const char *topic, rec_batch_t **b, const void *payload, size_t len);

/* Free the vehicles and logs (ledger.c). */
void upl_ledger_free(upl_recv_t *r);
