/* SPDX-License-Identifier: MIT */
/*
 * ground-end.h - the ground end of the uplink tests: uplink's receiver
 * (the MQTT session, uplink/recv.h) and, behind it as its on_data, the
 * ground's ledger (ground/ledger.h), as `railmon recv` wires them
 * (ground/receiver.c).  One configuration, one handle and one set of
 * counters for both, so a test reads the way the receiver behaved before
 * the ledger moved to ground/, and so every test of the forwarder is
 * judged by the ground's real bookkeeping, not a test-side imitation.
 */
#pragma once

#include "ground/ledger.h"
#include "uplink/recv.h"

/* upl_recv_cfg's fields and grd_ledger_cfg's, as one. */
struct fx_gnd_cfg {
	const char *host;
	int port;
	const char *client_id;
	const char *topic;
	bool clean_session;
	bool use_tls;
	struct upl_tls_cfg tls;
	const char *username;
	const char *password;
	unsigned keepalive_s;
	unsigned backoff_max_ms;
	grd_ledger_record_fn on_record;
	grd_ledger_batch_fn on_batch;
	grd_ledger_refused_fn on_refused;
	grd_ledger_batch_fn on_jump;
	upl_recv_channels_fn on_channels;
	void *ctx;                /* for every callback */
	void (*on_status)(void *ctx, const char *topic, const void *payload, size_t len);
	const char *aux_topic;
	void (*on_aux)(void *ctx, const char *topic, const void *payload, size_t len);
	void (*on_tick)(void *ctx);
	size_t max_vehicles;
	void (*on_idle)(void *ctx);
};

/* upl_recv_stats' counters and grd_ledger_stats', as one (a dictionary
   of a bad vehicle name counted in refused[GRD_LEDGER_BAD_VEHICLE], as
   recv says it). */
struct fx_gnd_stats {
	uint64_t messages, bad, batches, records, duplicates, unverified, old, missing;
	uint64_t refused[GRD_LEDGER_REFUSAL_MAX];
	uint64_t conflict_records, vehicles, logs, sink_errors;
	uint64_t connects, connect_failures, disconnects;
	enum upl_recv_fail fail;
	int fail_err, fail_detail;
	char fail_text[160];
	bool subscribed;
};

typedef struct fx_gnd {
	upl_recv_t *r;
	grd_ledger_t *l;
} fx_gnd_t;

/* As upl_recv_new() and grd_ledger_new() (their -errno). */
int fx_gnd_new(const struct fx_gnd_cfg *cfg, fx_gnd_t **ret);
fx_gnd_t *fx_gnd_free(fx_gnd_t *g);
int fx_gnd_feed(fx_gnd_t *g, const char *topic, const void *payload, size_t len);
int fx_gnd_stats(fx_gnd_t *g, struct fx_gnd_stats *ret);
int fx_gnd_run(fx_gnd_t *g);
int fx_gnd_stop(fx_gnd_t *g);
int fx_gnd_publish(fx_gnd_t *g, const char *topic, const void *payload, size_t len);
int fx_gnd_wait_subscribed(fx_gnd_t *g, unsigned timeout_ms);
int fx_gnd_wait_records(fx_gnd_t *g, uint64_t n, unsigned timeout_ms);
int fx_gnd_wait_seq(fx_gnd_t *g, const char *vehicle, uint64_t seq, unsigned timeout_ms);
int fx_gnd_vehicle(fx_gnd_t *g, const char *vehicle, struct grd_ledger_vehicle *ret);
int fx_gnd_log(fx_gnd_t *g, size_t i, struct grd_ledger_log *ret);
