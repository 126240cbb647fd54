/* SPDX-License-Identifier: MIT */
/* health.c - health entries for the log, the uplink and `railmon stat` (health.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/clock.h"
#include "clockwatch.h"
#include "conf/config.h"
#include "health.h"
#include "record/batch.h"
#include "trdp/header.h"
#include "uplink/forward.h"

#define HEALTH_MAX PL_HEALTH_MAX

struct pl_health {
	struct acq_latency *snap;   /* 16 KiB scratch for latency snapshots */
	int64_t prev_ns;            /* the last tick, 0 = none */
	uint64_t prev_items[CONF_BUSES_MAX];
	uint64_t prev_telegrams[CONF_BUSES_MAX]; /* TRDP */
	uint64_t prev_acked;
	uint64_t prev_collector, prev_log;
	pthread_mutex_t lock;       /* guards entries[] for readers (stat) */
	struct rec_health entries[HEALTH_MAX];
	size_t n;
};

int pl_health_new(pl_health_t **ret)
{
	pl_health_t *h;

	if (!ret)
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->snap = calloc(1, sizeof(*h->snap));
	if (!h->snap) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	/* The first rates are over the time since the daemon was made, not 0. */
	h->prev_ns = basic_mono_ns();
	*ret = h;
	return 0;
}

pl_health_t *pl_health_free(pl_health_t *h)
{
	if (!h)
		return NULL;
	pthread_mutex_destroy(&h->lock);
	free(h->snap);
	free(h);
	return NULL;
}

static void entry(struct rec_health *e, const char *name, const char *kind, uint32_t bus)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	e->bus = bus;
}

/* 1 us buckets -> the proto's log2 buckets: [0,1) us, [2^(k-1), 2^k) us. */
static void log2_buckets(const struct acq_latency *snap, uint64_t *out)
{
	for (uint32_t us = 0; us < ACQ_LAT_BUCKETS; us++) {
		unsigned k = us ? 64 - (unsigned)__builtin_clzll(us) : 0;
		out[k] += snap->bucket[us];
	}
	if (snap->overflow) {
		unsigned k = 64 - (unsigned)__builtin_clzll(snap->max_ns / 1000 | 1);
		out[k < REC_HEALTH_BUCKETS ? k : REC_HEALTH_BUCKETS - 1] += snap->overflow;
	}
}

static void latency(pl_health_t *h, struct rec_health *e, const struct acq_latency *lat)
{
	struct acq_latency *snap = h->snap;

	acq_latency_snapshot(lat, snap);
	e->latency_count = snap->count;
	e->latency_max_ns = snap->max_ns;
	e->overruns = snap->overruns;
	e->latency_p50_us = acq_latency_percentile_us(snap, 50);
	e->latency_p99_us = acq_latency_percentile_us(snap, 99);
	e->latency_p999_us = acq_latency_percentile_us(snap, 99.9);
	log2_buckets(snap, e->latency_us_buckets);
}

static void transaction(pl_health_t *h, struct rec_health *e, const struct acq_latency *txn)
{
	struct acq_latency *snap = h->snap;

	acq_latency_snapshot(txn, snap);
	e->transaction_max_ns = snap->max_ns;
	e->transaction_p99_us = acq_latency_percentile_us(snap, 99);
	log2_buckets(snap, e->transaction_us_buckets);
}

/* A TRDP bus: the driver's counters (refusals by reason: trdp/header.h's
   enum) and the collector's decode counts. */
static void trdp_entry(pl_health_t *h, size_t b, const struct pl_health_bus *in, double dt, struct rec_health *e)
{
	const struct bus_trdp_stats *t = &in->trdp_rx;
	const struct pl_trdp_counts *c = &in->trdp_decode;

	e->trdp_seq_gaps = t->seq_gaps;
	e->trdp_seq_repeats = t->seq_repeats;
	e->trdp_seq_back = t->seq_back;
	e->trdp_topology_changes = t->topology_changes;
	e->trdp_telegrams = t->telegrams;
	e->trdp_telegrams_hz = dt > 0 ? (double)(t->telegrams - h->prev_telegrams[b]) / dt : 0;
	h->prev_telegrams[b] = t->telegrams;
	e->trdp_bytes = t->bytes;
	e->trdp_bad_short = t->refused[TRDP_HDR_SHORT];
	e->trdp_bad_fcs = t->refused[TRDP_HDR_BAD_FCS];
	e->trdp_bad_version = t->refused[TRDP_HDR_BAD_VERSION];
	e->trdp_bad_type = t->refused[TRDP_HDR_BAD_TYPE];
	e->trdp_bad_too_long = t->refused[TRDP_HDR_TOO_LONG];
	e->trdp_bad_truncated = t->refused[TRDP_HDR_TRUNCATED];
	e->trdp_byte_ring_drops = t->bytes_drops;
	e->trdp_untracked = t->untracked;
	e->trdp_tcp_accepted = t->tcp_accepted;
	e->trdp_tcp_refused = t->tcp_refused;
	e->trdp_tcp_closed = t->tcp_closed;
	e->trdp_tcp_bad_header = t->tcp_bad_header;
	e->trdp_tcp_cut = t->tcp_cut;
	e->trdp_tcp_messages = t->tcp_messages;
	e->trdp_tcp_listen_errno = (uint32_t)-t->tcp_listen_error;
	e->trdp_opts_refused = t->opts_refused;
	e->trdp_receive = (uint32_t)t->receive;
	e->trdp_decoded = c->decoded;
	e->trdp_unknown_comid = c->unknown;
	e->trdp_short_payload = c->bad;
	e->trdp_past_channels = c->past_channels;
	e->trdp_capture_unmatched = t->capture_unmatched;
	e->trdp_timeouts = c->timeouts;
	e->trdp_backs = c->backs;
}

static void bus_entry(pl_health_t *h, size_t b, const struct pl_health_bus *in, double dt,
                      struct rec_health *e)
{
	entry(e, in->name, in->modbus ? "modbus" : in->trdp ? "trdp" : "can", (uint32_t)b);
	if (in->trdp)
		trdp_entry(h, b, in, dt, e);
	e->items = in->items;
	e->drops = in->drops;
	e->errors = in->errors;
	e->rx_dropped = in->rx_dropped;
	e->bad_input = in->bad_input;
	e->ring_fill_pct = in->ring_fill_pct;
	e->rate_hz = dt > 0 ? (double)(in->items - h->prev_items[b]) / dt : 0;
	h->prev_items[b] = in->items;
	e->reopens = in->reopens;
	e->blind_ms = in->blind_ms;
	snprintf(e->state, sizeof(e->state), "%s", acq_link_name(in->state));
	if (in->latency)
		latency(h, e, in->latency);
	if (in->transaction)
		transaction(h, e, in->transaction);
}

static void log_entry(pl_health_t *h, stor_log_t *log, double dt, struct rec_health *e)
{
	struct stor_stats st;

	entry(e, "log", "log", ACQ_SOURCE_DAEMON);
	if (stor_log_stats(log, &st) < 0)
		return;
	e->items = st.records;
	e->drops = st.dropped + st.lost_unsynced;
	e->errors = st.segments_abandoned;
	e->backlog = stor_log_next_seq(log) - stor_log_confirmed_seq(log);
	e->rate_hz = dt > 0 ? (double)(st.records - h->prev_log) / dt : 0;
	h->prev_log = st.records;
	e->window_alarm = st.window_alarm;
	e->window_s = (uint64_t)(st.window_ns > 0 ? st.window_ns / 1000000000 : 0);
}

/* The uplink's part of health; also tells retention what is off-board. */
static void uplink_entry(pl_health_t *h, const struct pl_health_input *in, double dt, struct rec_health *e)
{
	struct upl_forward_stats st;

	entry(e, "uplink", "uplink", ACQ_SOURCE_DAEMON);
	if (upl_forwarder_stats(in->fwd, &st) < 0)
		return;
	stor_log_set_forwarded(in->log, st.cursor);
	e->items = st.acked;
	e->errors = st.connect_fails + st.ack_timeouts + st.source_errors;
	e->drops = st.resent; /* re-sent after reconnects: duplicates on the wire */
	e->backlog = stor_log_next_seq(in->log) - st.cursor;
	e->rate_hz = dt > 0 ? (double)(st.acked - h->prev_acked) / dt : 0;
	h->prev_acked = st.acked;
	snprintf(e->state, sizeof(e->state), "%s", st.connected ? "connected" : "offline");
}

/* The clock: steps seen this run, and the kernel's sync state now (an
   adjtimex that fails is an error, the state "unknown"). */
static void clock_entry(const struct pl_health_input *in, struct rec_health *e)
{
	struct pl_clock_sync st;

	entry(e, "clock", "clock", ACQ_SOURCE_DAEMON);
	e->items = in->clock_steps;
	if (pl_clock_sync_read(&st) < 0) {
		e->errors = 1;
		snprintf(e->state, sizeof(e->state), "unknown");
		return;
	}
	snprintf(e->state, sizeof(e->state), "%s", st.unsynced ? "unsynced" : "synced");
	e->clock_unsynced = st.unsynced;
	e->clock_max_error_us = st.max_error_us;
	e->clock_est_error_us = st.est_error_us;
	e->clock_status = st.status;
}

void pl_health_tick(pl_health_t *h, const struct pl_health_input *in, int64_t now)
{
	struct rec_health e[HEALTH_MAX];
	double dt = h->prev_ns ? (double)(now - h->prev_ns) / 1e9 : 0;
	size_t n = 0;

	for (size_t b = 0; b < in->nbuses && b < CONF_BUSES_MAX; b++)
		bus_entry(h, b, &in->buses[b], dt, &e[n++]);
	entry(&e[n], "collector", "collector", ACQ_SOURCE_DAEMON);
	e[n].items = in->collector_items;
	e[n++].rate_hz = dt > 0 ? (double)(in->collector_items - h->prev_collector) / dt : 0;
	h->prev_collector = in->collector_items;
	log_entry(h, in->log, dt, &e[n++]);
	if (in->fwd)
		uplink_entry(h, in, dt, &e[n++]);
	clock_entry(in, &e[n++]);
	for (size_t i = 0; i < n; i++)
		pl_sink_add_health(in->sink, &e[i]);
	pthread_mutex_lock(&h->lock);
	memcpy(h->entries, e, n * sizeof(e[0]));
	h->n = n;
	pthread_mutex_unlock(&h->lock);
	h->prev_ns = now;
}

size_t pl_health_get(pl_health_t *h, struct rec_health *ret, size_t max)
{
	size_t n;

	if (!h || !ret)
		return 0;
	pthread_mutex_lock(&h->lock);
	n = h->n < max ? h->n : max;
	memcpy(ret, h->entries, n * sizeof(*ret));
	pthread_mutex_unlock(&h->lock);
	return n;
}
