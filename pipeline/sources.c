/* SPDX-License-Identifier: MIT */
/* sources.c - the buses of a board as acquisition sources (sources.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logsource.h"
#include "acquisition/acq-bytes.h"
#include "trace/trace.h"
#include "sources.h"

/* A trace paced as a live bus gathers its frames this long between two
   reads (coalesce_ns in acq_source_cfg), as a live bus does by default
   (the board's rx_coalesce_us, 1000): at most 1,000 wakeups/s per bus
   instead of one per frame, for at most 1 ms more latency, the same as
   the collector's own idle wait, far inside a Batch's batch_ms. */
#define PL_RX_COALESCE_NS (1000 * 1000)
_Static_assert((int64_t)CONF_RX_COALESCE_US_MAX * 1000 == ACQ_SOURCE_COALESCE_MAX_NS,
               "rx_coalesce_us's bound is the source's");
/* A TRDP bus's telegram bytes (acquisition/acq-bytes.h): 8 MiB, 5,000
   full-size PD telegrams or 60,000 of 100 bytes, more than its item ring
   holds; the pages of a board's unused room are never touched. */
#define PL_TRDP_BYTES (8u << 20)

struct pl_sources {
	const struct conf_board *cfg;
	struct pl_sources_opts opts;
	bool running;
	bus_dev_t *dev[CONF_BUSES_MAX];
	struct acq_ring ring[CONF_BUSES_MAX];
	struct acq_item *ring_buf[CONF_BUSES_MAX];
	/* TRDP buses: their telegrams' bytes beside the item ring; a log
	   replay has one, bytes[0], for every bus (sink.c releases them) */
	struct acq_bytes bytes[CONF_BUSES_MAX];
	uint8_t *bytes_buf[CONF_BUSES_MAX];
	/* One source per bus; a log replay has one, src[0], for every bus. */
	acq_source_t *src[CONF_BUSES_MAX];
	pl_logsource_t *replay;
	bool waits;               /* a source waits for room (a replay) */
	acq_monitor_t *mon;
};

/* ------------------------------------------------------------ devices */

/* A bus device as a source (bus/ and acquisition/ do not know each other). */
static int dev_recv(void *ctx, struct acq_item *items, size_t max, int timeout_ms)
{
	return bus_dev_recv(ctx, items, max, timeout_ms);
}

static int dev_check(void *ctx, struct acq_item *events, size_t max)
{
	return bus_dev_check(ctx, events, max);
}

static int dev_gone_cause(void *ctx)
{
	return bus_dev_gone_cause(ctx);
}

static int dev_release(void *ctx)
{
	return bus_dev_release(ctx);
}

static int dev_reopen(void *ctx)
{
	return bus_dev_reopen(ctx);
}

static int dev_await(void *ctx, int timeout_ms)
{
	return bus_dev_await(ctx, timeout_ms);
}

static const struct acq_source_ops dev_ops = {
	.recv = dev_recv, .gone_cause = dev_gone_cause, .release = dev_release, .reopen = dev_reopen,
	.await = dev_await,
};
/* SocketCAN: link checks (netlink) too, on the monitor's thread. */
static const struct acq_source_ops dev_check_ops = {
	.recv = dev_recv, .check = dev_check, .gone_cause = dev_gone_cause, .release = dev_release,
	.reopen = dev_reopen, .await = dev_await,
};

/* How bus b's source treats its items: live buses drop when their ring is
   full and stamp latency; a trace read as fast as possible waits instead
   and keeps its old stamps (their age says nothing about our latency). */
static struct acq_source_cfg bus_source_cfg(pl_sources_t *s, size_t b)
{
	const struct bus_cfg *bc = &s->cfg->buses[b];
	bool can = bc->kind == BUS_KIND_CAN, capture = bc->kind == BUS_KIND_TRDP && bc->trdp.capture[0];
	bool trace = (can && bc->can.driver == BUS_CAN_TRACE) || capture;
	bool live = !trace && (can || bc->kind == BUS_KIND_TRDP);
	bool ring = live && bc->kind == BUS_KIND_TRDP && bc->trdp.receive_capture;
	double speed = capture ? bc->trdp.trace_speed : can ? bc->can.trace_speed : 0;
	struct acq_source_cfg sc = {
		.ops = bus_dev_has_check(s->dev[b]) ? &dev_check_ops : &dev_ops,
		.ctx = s->dev[b],
		.ring = &s->ring[b],
		.bus = (uint16_t)b,
		.backpressure = trace && speed == 0,
		.drain_at_stop = live,
		.stamp_latency = live,
		/* A live CAN or TRDP bus is read once per burst, after the
		   board's rx_coalesce_us (0: at once; acq_source_cfg), a trace
		   paced as one after PL_RX_COALESCE_NS.  Not a TRDP bus that
		   reads a packet ring (receive = capture): the kernel already
		   gathers its packets into a block handed over capture_block_ms
		   after it was opened (bus/trdp-capture.c), and a wait after it
		   would only add latency and wakeups.  Not Modbus: its thread
		   polls on its own schedule. */
		.coalesce_ns = live && !ring        ? (int64_t)s->cfg->rx_coalesce_us * 1000
		               : trace && speed > 0 ? PL_RX_COALESCE_NS
		                                    : 0,
		/* Jitter differs per board (the seed is random) and per bus. */
		.seed = s->opts.seed ^ (b + 1) * 0x9e3779b97f4a7c15ull,
	};

	if (bc->kind == BUS_KIND_MODBUS) { /* Modbus reconnects inside its driver: its events tell */
		sc.link_down_code = ACQ_EV_MB_DISCONNECT;
		sc.link_up_code = ACQ_EV_MB_CONNECT;
	}
	return sc;
}

/* Open bus b's device (none for a log replay), its ring and its source. */
static int open_bytes(pl_sources_t *s, size_t b)
{
	if (!(s->bytes_buf[b] = malloc(PL_TRDP_BYTES)))
		return -ENOMEM;
	return acq_bytes_init(&s->bytes[b], s->bytes_buf[b], PL_TRDP_BYTES);
}

static int open_bus(pl_sources_t *s, size_t b, char *err, size_t errlen)
{
	const struct bus_cfg *bc = &s->cfg->buses[b];
	struct bus_cfg trdp;
	struct acq_source_cfg sc;
	int r = 0;

	if (bc->kind == BUS_KIND_TRDP && !s->opts.replay_log) {
		/* the driver writes its telegrams' bytes into our ring */
		if ((r = open_bytes(s, b)) < 0)
			return r;
		trdp = *bc;
		trdp.trdp.bytes = &s->bytes[b];
		bc = &trdp;
	}
	if (!s->opts.replay_log)
		r = s->opts.absent_ok ? bus_dev_new_absent_ok(bc, &s->dev[b]) : bus_dev_new(bc, &s->dev[b]);
	if (r == -EMEDIUMTYPE && bc->kind == BUS_KIND_CAN && bc->can.driver == BUS_CAN_TRACE) {
		snprintf(err, errlen, "%s: bus '%s': %s: not a trace in any format railmon reads (tried %s)", s->cfg->path,
		         bc->name, bc->can.device, TRACE_FORMATS);
		return r;
	}
	if (r == -EPERM && bc->kind == BUS_KIND_TRDP && bc->trdp.receive_capture) {
		snprintf(err, errlen, "%s: bus '%s': receive = capture reads %s's packet ring, which needs CAP_NET_RAW "
		         "(root, or the capability: cli/railmon.service says how)", s->cfg->path, bc->name,
		         bc->trdp.ifname);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s: bus '%s': %s", s->cfg->path, bc->name, strerror(-r));
		return r;
	}
	s->ring_buf[b] = calloc(s->cfg->ring_slots, sizeof(struct acq_item));
	if (!s->ring_buf[b])
		return -ENOMEM;
	acq_ring_init(&s->ring[b], s->ring_buf[b], s->cfg->ring_slots, sizeof(struct acq_item));
	if (s->opts.replay_log)
		return 0;
	sc = bus_source_cfg(s, b);
	s->waits = s->waits || sc.backpressure;
	return acq_source_new(&sc, &s->src[b]);
}

/* A log replay: one source, the log, into ring 0 for every bus, so the
   collector sees the log's order (ring 0's consumer takes any bus).  Not
   realtime: a full ring means wait, never drop. */
static int open_replay(pl_sources_t *s)
{
	int r = pl_logsource_new(s->cfg, s->opts.replay_log, &s->opts.replay_faults, &s->replay);

	/* the log's TRDP telegrams are copied out of their Batch into bytes[0]
	   (the Batch is freed while its items wait in the ring) */
	if (r >= 0)
		r = open_bytes(s, 0);
	if (r < 0)
		return r;
	pl_logsource_set_bytes(s->replay, &s->bytes[0]);
	s->waits = true;
	return acq_source_new(&(struct acq_source_cfg){ .ops = &pl_logsource_ops, .ctx = s->replay,
	                                                .ring = &s->ring[0], .keep_bus = true, .backpressure = true,
	                                                .pace_speed = s->opts.replay_speed },
	                      &s->src[0]);
}

int pl_sources_new(const struct conf_board *cfg, const struct pl_sources_opts *opts, pl_sources_t **ret,
                      char *err, size_t errlen)
{
	pl_sources_t *s;
	int r = 0;

	if (!cfg || !opts || !ret || !err || !errlen)
		return -EINVAL;
	/* Aligned as declared: the rings pad their indices to cache lines. */
	s = aligned_alloc(_Alignof(pl_sources_t), sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->opts = *opts;
	for (size_t b = 0; r >= 0 && b < cfg->nbuses; b++)
		r = open_bus(s, b, err, errlen);
	if (r >= 0 && opts->replay_log)
		r = open_replay(s);
	if (r >= 0)
		r = acq_monitor_new(s->src, cfg->nbuses, 1000, &s->mon);
	if (r < 0) {
		pl_sources_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

pl_sources_t *pl_sources_free(pl_sources_t *s)
{
	if (!s)
		return NULL;
	pl_sources_stop(s);
	acq_monitor_free(s->mon);
	for (size_t b = 0; b < CONF_BUSES_MAX; b++) {
		acq_source_free(s->src[b]);
		bus_dev_free(s->dev[b]);
		free(s->ring_buf[b]);
		free(s->bytes_buf[b]);
	}
	pl_logsource_free(s->replay);
	free(s);
	return NULL;
}

struct acq_ring *pl_sources_ring(pl_sources_t *s, size_t b)
{
	return s && b < s->cfg->nbuses ? &s->ring[b] : NULL;
}

struct acq_bytes *pl_sources_bytes(pl_sources_t *s, size_t b)
{
	if (!s || b >= CONF_BUSES_MAX)
		return NULL;
	if (s->replay)
		return s->bytes_buf[0] ? &s->bytes[0] : NULL;
	return s->bytes_buf[b] ? &s->bytes[b] : NULL;
}

acq_source_t *pl_sources_source(pl_sources_t *s, size_t b)
{
	return s && b < s->cfg->nbuses && !s->replay ? s->src[b] : NULL;
}

/* ------------------------------------------------------------ threads */

int pl_sources_start(pl_sources_t *s, char *warn, size_t warnlen)
{
	int r, degraded, first_degraded = 0;

	s->running = true;
	if (s->replay)
		return acq_source_start(s->src[0], &(struct acq_thread_cfg){ .name = "replay", .cpu = -1 }, NULL);
	for (size_t b = 0; b < s->cfg->nbuses; b++) {
		struct acq_thread_cfg tc = { .priority = s->cfg->rt_priority, .cpu = s->cfg->bus_cpu[b] };
		char name[16];
		snprintf(name, sizeof(name), "rx-%s", s->cfg->buses[b].name);
		tc.name = name;
		degraded = 0;
		r = acq_source_start(s->src[b], &tc, &degraded);
		if (r < 0)
			return r;
		if (degraded && !first_degraded)
			first_degraded = degraded;
	}
	if (first_degraded && warn && !warn[0])
		snprintf(warn, warnlen, "realtime scheduling refused (%s): bus threads run at normal priority",
		         strerror(-first_degraded));
	return acq_monitor_start(s->mon, NULL);
}

void pl_sources_stop(pl_sources_t *s)
{
	if (!s || !s->running)
		return;
	/* All at once: each sees the request within 100 ms. */
	for (size_t b = 0; b < CONF_BUSES_MAX; b++)
		acq_source_request_stop(s->src[b]);
	for (size_t b = 0; b < CONF_BUSES_MAX; b++)
		if (s->src[b])
			acq_source_stop(s->src[b]);
	/* Their link checks after them: no check runs on a stopped source. */
	acq_monitor_stop(s->mon);
	s->running = false;
}

bool pl_sources_wait_for_room(const pl_sources_t *s)
{
	return s && s->waits;
}

bool pl_sources_done(const pl_sources_t *s)
{
	if (!s)
		return true;
	for (size_t b = 0; b < s->cfg->nbuses; b++)
		if (s->src[b] && !acq_source_done(s->src[b]))
			return false;
	return true;
}

/* ------------------------------------------------------------ questions */

void pl_sources_counts(const pl_sources_t *s, size_t b, struct pl_bus_counts *ret)
{
	struct acq_source_stats ss = { 0 };
	struct bus_stats st = { 0 };

	bus_dev_stats(s->dev[b], &st);
	if (!s->replay)
		acq_source_stats(s->src[b], &ss);
	*ret = (struct pl_bus_counts){
		.items = s->replay ? pl_logsource_items(s->replay, b) : ss.items,
		.errors = ss.errors + st.rx_errors,
		.drops = acq_ring_drops(&s->ring[b]) + ss.check_drops,
	};
}

int pl_sources_link(const pl_sources_t *s, size_t b, struct acq_link_state *ret)
{
	if (!s || !ret || b >= s->cfg->nbuses)
		return -EINVAL;
	if (s->replay) {
		*ret = (struct acq_link_state){ .state = ACQ_LINK_UP, .blind_ms = ACQ_BLIND_UNKNOWN };
		return 0;
	}
	return acq_source_link(s->src[b], ret);
}

void pl_sources_health(const pl_sources_t *s, size_t b, struct pl_health_bus *ret)
{
	const struct bus_cfg *bc = &s->cfg->buses[b];
	const struct acq_latency *lat = bus_dev_latency(s->dev[b]);
	struct acq_link_state l = { 0 };
	struct pl_bus_counts c;
	struct bus_stats st = { 0 };

	bus_dev_stats(s->dev[b], &st);
	pl_sources_link(s, b, &l);
	pl_sources_counts(s, b, &c);
	*ret = (struct pl_health_bus){
		.name = bc->name, .modbus = bc->kind == BUS_KIND_MODBUS, .items = c.items, .drops = c.drops,
		.errors = c.errors, .rx_dropped = st.rx_dropped, .bad_input = st.bad_input,
		.ring_fill_pct = (uint32_t)(acq_ring_count(&s->ring[b]) * 100 / s->cfg->ring_slots),
		.state = l.state, .reopens = l.reopens, .blind_ms = l.blind_ms,
		/* A driver that paces itself (Modbus) measures its own wakeups. */
		.latency = lat ? lat : (s->replay ? NULL : acq_source_latency(s->src[b])),
		.transaction = bus_dev_transaction(s->dev[b]),
	};
	struct bus_trdp_stats ts;
	if (bc->kind == BUS_KIND_TRDP && bus_dev_trdp_stats(s->dev[b], &ts) == 0) {
		ret->trdp = true;
		ret->trdp_rx = ts;
	}
}

uint64_t pl_sources_replay_skipped(const pl_sources_t *s)
{
	return s ? pl_logsource_skipped(s->replay) : 0;
}

int pl_sources_replay_error(const pl_sources_t *s)
{
	/* Written by the replay thread before it said it is done. */
	return s && s->replay && acq_source_done(s->src[0]) ? pl_logsource_error(s->replay) : 0;
}
