/* SPDX-License-Identifier: MIT */
/*
 * recv-private.h - the receiver's state (recv-session.c): the MQTT
 * session, its counters and the publish queue.  The per-log state is the
 * ground's (ground/ledger.c), behind on_data.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "recv.h"

struct upl_recv {
	struct upl_recv_cfg cfg;   /* strings point at our copies */
	atomic_bool stop;

	pthread_mutex_t lock;      /* guards st (never held through on_data) */
	pthread_cond_t cond;       /* signalled when subscribed changes */
	struct upl_recv_stats st;

	/* upl_recv_publish()'s queue: its own lock, taken from any thread. */
	pthread_mutex_t pub_lock;
	struct pub_msg { char *topic; void *payload; size_t len; } pub[UPL_RECV_PUB_MAX];
	size_t npub;
	const char *aux_match;     /* aux_topic without a $share/<group>/ prefix */

	/* Session state, only touched by the thread in upl_recv_run(). */
	int connack_rc;
	bool lost, sub_refused;
	char last_log_error[128];  /* libmosquitto's last error line (TLS details) */
};
