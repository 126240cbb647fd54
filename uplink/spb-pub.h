/* SPDX-License-Identifier: MIT */
/*
 * spb-pub.h - the Sparkplug B publisher (issue #33): an edge node beside
 * the forwarder, on its own MQTT connection, reading the log through its
 * own upl_source and cursor, so it never slows acquisition or the railmon
 * uplink.  The payloads, topics and session numbers are sparkplug/'s;
 * this file is the MQTT client (uplink/ keeps libmosquitto).
 *
 * At every connect: bdSeq = spb_bdseq_next() (on disk before the
 * connect), the NDEATH will with it, a subscription to the node's NCMD and
 * DCMD topics, then NBIRTH (seq 0) and one DBIRTH per device (a bus).
 * Then each stored Batch from the cursor on becomes one DDATA per device
 * that has samples or texts in it (seq + 1 each), its metrics
 * is_historical when the Batch's newest record is over 10 s old (the
 * backlog after an outage or a restart, sent after the births).  An NCMD Rebirth is
 * answered with a fresh NBIRTH and DBIRTHs; every other command metric is
 * counted in cmd_refused.  A bus's gone event (CAN_GONE, MB_DISCONNECT) in
 * a Batch is its device's DDEATH after the Batch's DDATA, its back event
 * (CAN_BACK, MB_CONNECT) a DBIRTH before them.  The Batch's events are
 * one NDATA of the node's Events metric, after its DDATAs.  A clean stop sends what the log holds (for at
 * most 2 s) and publishes the NDEATH itself.  With a primary host, the
 * births (and so all data) wait for its retained STATE to say online; its
 * offline ends the connection (NDEATH published), and the next one waits
 * again, with a new bdSeq.
 * BIRTH and DATA are QoS 0 as the specification says; the will QoS 1.
 * Store-and-forward: the cursor moves only on what the broker confirmed
 * (a barrier: an UNSUBSCRIBE of railmon/spb-barrier/<node>, never
 * subscribed, after the DDATAs; its UNSUBACK says the broker took them,
 * as a broker handles a connection's packets in order).  A connection
 * lost (or a frozen broker's keepalive) reads again from there: those
 * Batches go again, is_historical, after the next births, in log order.
 * At least once: a DDATA the broker took before the loss but whose
 * barrier it never answered arrives twice (a host can drop it by alias
 * and timestamp).  "Confirmed" is the broker's, not a host's.
 *
 * One thread at normal priority; nothing logs (stats for the owner).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fwd-types.h"
#include "sparkplug/spb-batch.h"

#define UPL_SPB_DEVICES_MAX 64

struct upl_spb_device {
	const char *name;   /* the device id in topics: the bus's name */
	uint16_t bus;       /* acq_item.bus */
};

struct upl_spb_cfg {
	const char *host;
	uint16_t port;
	bool use_tls;
	struct upl_tls_cfg tls;
	const char *username, *password;   /* optional */
	unsigned keepalive_s;              /* >= 5; 0 = 20 */
	const char *group, *node;          /* Sparkplug ids */
	const char *primary_host;          /* NULL or "": publish at once; else only while
	                                      spBv1.0/STATE/<primary_host> says online */
	const char *state_dir;             /* bdSeq and cursor files */
	const struct spb_channel *channels; /* the devices' metrics */
	size_t nchannels;
	const struct upl_spb_device *devices;
	size_t ndevices;                   /* at most UPL_SPB_DEVICES_MAX */
	struct upl_source source;          /* seek and next; this thread only */
	size_t max_metrics;                /* a DDATA's room; 0 = 4096 */
	/* NULL: every sample; else the board's `uplink =` policies (the
	   forwarder's reduce.h, copied): DDATA from each Batch as reduced,
	   the reducer starting again at every birth and rewind, so each
	   channel's first sample after them goes */
	const struct upl_reduce_cfg *reduce;
};

/* What happened so far (upl_spb_stats()). */
struct upl_spb_stats {
	uint64_t connects, connect_failures;
	uint64_t nbirths, dbirths, rebirths, ddeaths;
	uint64_t dead_batches;             /* a dead device's DDATA not sent (samples while gone) */
	uint64_t ddata, metrics, bytes;
	uint64_t nulled;                   /* DDATA samples sent is_null: their value does not fit
	                                      their channel's datatype (spb_ddata_add_batch()) */
	uint64_t ndata, events;            /* NDATAs of the node's Events metric, events in them */
	uint64_t batches, batches_bad, batches_too_big; /* read; not decodable; over max_metrics */
	uint64_t reduced;                  /* Batches sent as `uplink =` reduced them */
	uint64_t historical;               /* Batches sent is_historical (older than 10 s) */
	uint64_t cmds, cmd_refused;        /* NCMD/DCMD payloads; metrics not done, or bad payloads */
	uint64_t state_bad;                /* STATE payloads that are not {"online": true|false ...} */
	uint64_t host_losses;              /* the primary host said offline: connection ended */
	bool host_online;
	bool connected;                    /* a connection with its births said */
	uint8_t bdseq;                     /* the current connection's */
	int bdseq_damage;                  /* spb_bdseq_next()'s *ret_damage at the last connect */
	uint64_t next_seq;                 /* the cursor as stored: the first record not confirmed */
	uint64_t acked_seq;                /* the first record the broker has not confirmed */
	uint64_t rewinds;                  /* connections lost with DDATA unconfirmed: read again */
	uint64_t resent;                   /* Batches sent again after a rewind (historical) */
	int cursor_damage;                 /* upl_cursor_load()'s at the start: 0, or -errno (started at 1) */
	uint64_t cursor_store_failures;
	int last_error;                    /* -errno of the last failure, 0 = none */
};

typedef struct upl_spb upl_spb_t;

/* A publisher with cfg (its strings and arrays borrowed: they must live
   until upl_spb_free()).  0, -EINVAL, -ENOMEM. */
int upl_spb_new(const struct upl_spb_cfg *cfg, upl_spb_t **ret_pub);
/* Starts its thread.  0 or -errno. */
int upl_spb_start(upl_spb_t *pub);
/* Stops its thread (NDEATH published if connected, the cursor stored);
   the counters stay readable.  Again, or never started: nothing. */
void upl_spb_stop(upl_spb_t *pub);
/* Stops (NDEATH published if connected, the cursor stored) and frees;
   NULL is fine; returns NULL. */
upl_spb_t *upl_spb_free(upl_spb_t *pub);
/* A copy of the counters, from any thread. */
void upl_spb_stats(upl_spb_t *pub, struct upl_spb_stats *ret);
