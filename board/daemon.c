/* SPDX-License-Identifier: MIT */
/*
 * daemon.c - the wiring and the life of a running railmon.
 *
 *   bus device --(acq_source: RX/poll thread, SCHED_FIFO)--> SPSC ring
 *   link checks --(acq_monitor thread)--> check ring  \
 *   forwarder events --> event ring                     > collector -> sink
 *   sink: decode, encode, append to the flash log (sink.c); health (health.c)
 *
 * What the pipeline does is in acquisition/ (the loops, the rings), sink.c,
 * health.c, channels.c and logsource.c; this file opens what they work on,
 * connects them, starts and stops them in order, and answers the callers'
 * questions (counters, live values, presence).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "basic/clock.h"
#include "daemon.h"
#include "forwarder.h"
#include "health.h"
#include "logdir.h"
#include "logsource.h"
#include "sink.h"
#include "storage/stor.h"
#include "uplink/batch.h"
#include "uplink/forward.h"

#define TICK_MS 20 /* the collector's tick: the heartbeat, Batch timeouts, the sync window */

struct board_daemon {
	const struct board_cfg *cfg;
	char data_dir[BUS_PATH_MAX];
	bool lock_memory;
	bool running, stopped;
	const char *replay_log;
	double replay_speed;
	bool absent_ok;          /* open: an absent CAN device starts gone */
	uint64_t reloaded_hash;
	uint8_t boot_id[UPL_BOOT_ID_LEN];

	board_channels_t *ch;
	bus_dev_t *dev[BOARD_BUSES_MAX];
	struct acq_ring ring[BOARD_BUSES_MAX];
	struct acq_item *ring_buf[BOARD_BUSES_MAX];
	/* One source per bus; a log replay has one, src[0], for every bus. */
	acq_source_t *src[BOARD_BUSES_MAX];
	board_logsource_t *replay;
	acq_monitor_t *mon;
	struct acq_ring *ring_ptr[BOARD_BUSES_MAX + 1]; /* + the uplink event ring */
	uint16_t ring_bus[BOARD_BUSES_MAX + 1];
	acq_source_t *ring_src[BOARD_BUSES_MAX + 1];
	acq_collector_t *col;

	stor_log_t *log;
	board_sink_t *sink;
	board_health_t *health;
	int64_t health_next_ns;
	_Atomic int64_t heartbeat_ns;
	char log_warn[512];      /* about the log's space, said at start */

	/* uplink: its events come back through one more ring */
	struct board_forwarder up;
	struct acq_ring ev_ring;
	struct acq_item ev_buf[256];
};

/* ------------------------------------------------------------ buses */

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

static const struct acq_source_ops dev_ops = {
	.recv = dev_recv, .gone_cause = dev_gone_cause, .release = dev_release, .reopen = dev_reopen,
};
/* SocketCAN: link checks (netlink) too, on the monitor's thread. */
static const struct acq_source_ops dev_check_ops = {
	.recv = dev_recv, .check = dev_check, .gone_cause = dev_gone_cause, .release = dev_release,
	.reopen = dev_reopen,
};

/* How bus b's source treats its items: live buses drop when their ring is
   full and stamp latency; a trace read as fast as possible waits instead
   and keeps its old stamps (their age says nothing about our latency). */
static struct acq_source_cfg bus_source_cfg(struct board_daemon *d, size_t b)
{
	const struct bus_cfg *bc = &d->cfg->buses[b];
	bool can = bc->kind == BUS_KIND_CAN, trace = can && bc->can.driver == BUS_CAN_TRACE;
	struct acq_source_cfg sc = {
		.ops = bus_dev_has_check(d->dev[b]) ? &dev_check_ops : &dev_ops,
		.ctx = d->dev[b],
		.ring = &d->ring[b],
		.bus = (uint16_t)b,
		.backpressure = trace && bc->can.trace_speed == 0,
		.drain_at_stop = can && !trace,
		.stamp_latency = can && !trace,
	};

	if (!can) { /* Modbus reconnects inside its driver: its events tell */
		sc.link_down_code = ACQ_EV_MB_DISCONNECT;
		sc.link_up_code = ACQ_EV_MB_CONNECT;
	}
	/* Jitter differs per board (boot_id is random) and per bus. */
	memcpy(&sc.seed, d->boot_id, sizeof(sc.seed));
	sc.seed ^= (b + 1) * 0x9e3779b97f4a7c15ull;
	return sc;
}

/* Open bus b's device (none for a log replay), its ring and its source. */
static int open_bus(struct board_daemon *d, size_t b, char *err, size_t errlen)
{
	const struct bus_cfg *bc = &d->cfg->buses[b];
	struct acq_source_cfg sc;
	int r = 0;

	if (!d->replay_log)
		r = d->absent_ok ? bus_dev_new_absent_ok(bc, &d->dev[b]) : bus_dev_new(bc, &d->dev[b]);
	if (r < 0) {
		snprintf(err, errlen, "%s: bus '%s': %s", d->cfg->path, bc->name, strerror(-r));
		return r;
	}
	d->ring_buf[b] = calloc(d->cfg->ring_slots, sizeof(struct acq_item));
	if (!d->ring_buf[b])
		return -ENOMEM;
	acq_ring_init(&d->ring[b], d->ring_buf[b], d->cfg->ring_slots, sizeof(struct acq_item));
	d->ring_ptr[b] = &d->ring[b];
	d->ring_bus[b] = (uint16_t)b;
	if (d->replay_log)
		return 0;
	sc = bus_source_cfg(d, b);
	r = acq_source_new(&sc, &d->src[b]);
	d->ring_src[b] = d->src[b];
	return r;
}

/* A log replay: one source, the log, into ring 0 for every bus, so the
   collector sees the log's order (ring 0's consumer takes any bus).  Not
   realtime: a full ring means wait, never drop. */
static int open_replay(struct board_daemon *d)
{
	int r = board_logsource_new(d->cfg, d->replay_log, &d->replay);

	if (r < 0)
		return r;
	return acq_source_new(&(struct acq_source_cfg){ .ops = &board_logsource_ops, .ctx = d->replay,
	                                                .ring = &d->ring[0], .keep_bus = true, .backpressure = true,
	                                                .pace_speed = d->replay_speed },
	                      &d->src[0]);
}

static int open_buses(struct board_daemon *d, char *err, size_t errlen)
{
	int r = board_channels_new(d->cfg, &d->ch, err, errlen);

	for (size_t b = 0; r >= 0 && b < d->cfg->nbuses; b++)
		r = open_bus(d, b, err, errlen);
	if (r >= 0 && d->replay_log)
		r = open_replay(d);
	if (r >= 0)
		r = acq_monitor_new(d->src, d->cfg->nbuses, 1000, &d->mon);
	return r;
}

/* ------------------------------------------------------------ the log */

/* A log replay, or one CAN trace read as fast as possible and nothing else:
   a single producer, so the records can come out the same every time.
   (Several buses have several RX threads whose interleaving varies.) */
static bool daemon_is_replay(const struct board_cfg *cfg, const char *replay_log)
{
	if (replay_log)
		return true;
	return cfg->nbuses == 1 && cfg->buses[0].kind == BUS_KIND_CAN && cfg->buses[0].can.driver == BUS_CAN_TRACE &&
	       cfg->buses[0].can.trace_speed == 0 && !cfg->buses[0].can.trace_loop;
}

static int open_log(struct board_daemon *d, char *err, size_t errlen)
{
	return board_log_open(d->cfg, d->data_dir, d->boot_id, &d->log, d->log_warn, sizeof(d->log_warn), err, errlen);
}

static int open_sink(struct board_daemon *d)
{
	struct upl_batch_meta meta = { .vehicle = d->cfg->vehicle, .config_hash = d->cfg->hash };
	struct board_sink_stats st;
	size_t n;
	int r;

	memcpy(meta.boot_id, d->boot_id, sizeof(meta.boot_id));
	r = board_sink_new(&(struct board_sink_cfg){ .log = d->log, .channels = d->ch, .meta = &meta,
	                                             .batch_max = d->cfg->batch_max, .batch_ms = d->cfg->batch_ms,
	                                             .meta_interval_s = d->cfg->meta_interval_s,
	                                             .deterministic = daemon_is_replay(d->cfg, d->replay_log) },
	                   &d->sink);
	if (r < 0)
		return r;
	/* What recovery found is said at start and becomes an event. */
	board_sink_stats(d->sink, &st);
	if (st.log_damaged) {
		n = strlen(d->log_warn);
		snprintf(d->log_warn + n, sizeof(d->log_warn) - n, "%s%s: %" PRIu64 " damaged segment file(s) or spot(s) "
		         "found when opening the log: set aside as *.damaged or skipped", n ? "; " : "", d->data_dir,
		         st.log_damaged);
	}
	return 0;
}

const char *board_daemon_log_warning(const struct board_daemon *d)
{
	return d ? d->log_warn : "";
}

static int open_uplink(struct board_daemon *d, char *err, size_t errlen)
{
	acq_ring_init(&d->ev_ring, d->ev_buf, sizeof(d->ev_buf) / sizeof(d->ev_buf[0]), sizeof(struct acq_item));
	if (d->replay_log)
		return 0; /* a replay is a command, not the vehicle's log */
	return board_forwarder_open(&d->up, d->cfg, d->data_dir, d->log, &d->ev_ring, err, errlen);
}

/* ------------------------------------------------------------ the collector */

/* Items of bus b its source produced (a log replay counts per bus). */
static uint64_t bus_items(const struct board_daemon *d, size_t b)
{
	struct acq_source_stats st = { 0 };

	if (d->replay)
		return board_logsource_items(d->replay, b);
	acq_source_stats(d->src[b], &st);
	return st.items;
}

/* Errors of bus b: failed reads plus what the driver counted (failed
   Modbus transactions, CAN error frames).  The run summary and the health
   records (`railmon stat`) both use this one sum. */
static uint64_t bus_errors(const struct board_daemon *d, size_t b)
{
	struct acq_source_stats ss = { 0 };
	struct bus_stats st = { 0 };

	bus_dev_stats(d->dev[b], &st);
	if (!d->replay)
		acq_source_stats(d->src[b], &ss);
	return ss.errors + st.rx_errors;
}

/* Drops of bus b: its ring's, and its link checks' (counted the same). */
static uint64_t bus_drops(const struct board_daemon *d, size_t b)
{
	struct acq_source_stats ss = { 0 };

	if (!d->replay)
		acq_source_stats(d->src[b], &ss);
	return acq_ring_drops(&d->ring[b]) + ss.check_drops;
}

static void bus_health(const struct board_daemon *d, size_t b, struct board_health_bus *h)
{
	const struct bus_cfg *bc = &d->cfg->buses[b];
	struct acq_link_state l = { 0 };
	struct bus_stats st = { 0 };
	const struct acq_latency *lat = bus_dev_latency(d->dev[b]);

	bus_dev_stats(d->dev[b], &st);
	board_daemon_bus_link(d, b, &l);
	*h = (struct board_health_bus){
		.name = bc->name, .modbus = bc->kind == BUS_KIND_MODBUS, .items = bus_items(d, b),
		.drops = bus_drops(d, b), .errors = bus_errors(d, b), .rx_dropped = st.rx_dropped,
		.bad_input = st.bad_input,
		.ring_fill_pct = (uint32_t)(acq_ring_count(&d->ring[b]) * 100 / d->cfg->ring_slots),
		.state = l.state, .reopens = l.reopens,
		/* A driver that paces itself (Modbus) measures its own wakeups. */
		.latency = lat ? lat : (d->replay ? NULL : acq_source_latency(d->src[b])),
	};
}

/* Health entries ride in the next Batch and are kept for `railmon stat`. */
static void health_tick(struct board_daemon *d, int64_t now)
{
	struct board_health_bus buses[BOARD_BUSES_MAX];
	struct board_sink_stats st;

	for (size_t b = 0; b < d->cfg->nbuses; b++)
		bus_health(d, b, &buses[b]);
	board_sink_stats(d->sink, &st);
	board_health_tick(d->health, &(struct board_health_input){ .buses = buses, .nbuses = d->cfg->nbuses,
	                                                          .collector_items = st.items, .log = d->log,
	                                                          .fwd = d->up.fwd, .sink = d->sink },
	                  now);
}

static int daemon_sink(void *ctx, const struct acq_item *items, size_t n)
{
	return board_sink_items(((struct board_daemon *)ctx)->sink, items, n);
}

static int daemon_tick(void *ctx)
{
	struct board_daemon *d = ctx;
	int64_t now = basic_mono_ns();

	atomic_store_explicit(&d->heartbeat_ns, now, memory_order_relaxed);
	if (now >= d->health_next_ns) {
		health_tick(d, now);
		d->health_next_ns = now + (int64_t)d->cfg->health_interval_s * BASIC_NS_PER_SEC;
	}
	return board_sink_tick(d->sink);
}

static int open_collector(struct board_daemon *d)
{
	size_t n = d->cfg->nbuses;

	d->ring_ptr[n] = &d->ev_ring;
	d->ring_bus[n] = ACQ_SOURCE_DAEMON;
	return acq_collector_new(&(struct acq_collector_cfg){ .rings = d->ring_ptr, .nrings = n + 1,
	                                                      .ring_bus = d->ring_bus, .sources = d->ring_src,
	                                                      .sink = daemon_sink, .tick = daemon_tick,
	                                                      .ctx = d, .tick_ms = TICK_MS },
	                         &d->col);
}

/* ------------------------------------------------------------ lifecycle */

static void daemon_opts(struct board_daemon *d, const struct board_daemon_opts *opts)
{
	d->lock_memory = opts && opts->lock_memory;
	d->reloaded_hash = opts ? opts->reloaded_hash : 0;
	d->replay_log = opts ? opts->replay_log : NULL;
	d->replay_speed = opts ? opts->replay_speed : 0;
	d->absent_ok = opts && opts->absent_ok;
	snprintf(d->data_dir, sizeof(d->data_dir), "%s", board_data_dir(d->cfg, opts ? opts->data_dir : NULL));
}

int board_daemon_new(const struct board_cfg *cfg, const struct board_daemon_opts *opts,
                     struct board_daemon **ret, char *err, size_t errlen)
{
	struct board_daemon *d;
	int r;

	if (!cfg || !ret || !err || !errlen)
		return -EINVAL;
	err[0] = 0;
	/* Aligned as declared: the rings pad their indices to cache lines. */
	d = aligned_alloc(_Alignof(struct board_daemon), sizeof(*d));
	if (!d)
		return -ENOMEM;
	memset(d, 0, sizeof(*d));
	d->cfg = cfg;
	daemon_opts(d, opts);
	d->health_next_ns = basic_mono_ns() + (int64_t)cfg->health_interval_s * BASIC_NS_PER_SEC;
	r = getrandom(d->boot_id, sizeof(d->boot_id), 0) == sizeof(d->boot_id) ? 0 : -errno;
	if (r >= 0)
		r = open_buses(d, err, errlen);
	if (r >= 0)
		r = open_log(d, err, errlen);
	if (r >= 0)
		r = open_sink(d);
	if (r >= 0)
		r = board_health_new(&d->health);
	if (r >= 0)
		r = open_uplink(d, err, errlen);
	if (r >= 0)
		r = open_collector(d);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-r));
		board_daemon_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

/* One source per bus (or the replay's), SCHED_FIFO when the board asks. */
static int start_sources(struct board_daemon *d, char *warn, size_t warnlen)
{
	int r, degraded, first_degraded = 0;

	if (d->replay)
		return acq_source_start(d->src[0], &(struct acq_thread_cfg){ .name = "replay", .cpu = -1 }, NULL);
	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		struct acq_thread_cfg tc = { .priority = d->cfg->rt_priority, .cpu = d->cfg->bus_cpu[b] };
		char name[16];
		snprintf(name, sizeof(name), "rx-%s", d->cfg->buses[b].name);
		tc.name = name;
		degraded = 0;
		r = acq_source_start(d->src[b], &tc, &degraded);
		if (r < 0)
			return r;
		if (degraded && !first_degraded)
			first_degraded = degraded;
	}
	if (first_degraded && warn && !warn[0])
		snprintf(warn, warnlen, "realtime scheduling refused (%s): bus threads run at normal priority",
		         strerror(-first_degraded));
	return acq_monitor_start(d->mon, NULL);
}

int board_daemon_start(struct board_daemon *d, char *warn, size_t warnlen)
{
	int r;

	if (!d || d->running || d->stopped)
		return -EINVAL;
	if (warn && warnlen)
		warn[0] = 0;
	if (d->lock_memory && (r = acq_rt_lock_memory()) < 0 && warn)
		snprintf(warn, warnlen, "mlockall: %s: pages may fault on realtime paths", strerror(-r));
	board_sink_event(d->sink, ACQ_EV_START, getpid());
	if (d->reloaded_hash)
		board_sink_event(d->sink, ACQ_EV_CONFIG_RELOAD, (int64_t)(d->reloaded_hash >> 1));
	atomic_store(&d->heartbeat_ns, basic_mono_ns());
	r = acq_collector_start(d->col, &(struct acq_thread_cfg){ .name = "collector", .cpu = d->cfg->collector_cpu });
	if (r < 0)
		return r;
	d->running = true;
	if (d->up.fwd)
		r = upl_forwarder_start(d->up.fwd);
	if (r >= 0)
		r = start_sources(d, warn, warnlen);
	if (r < 0)
		board_daemon_stop(d);
	return r;
}

/* While the broker is there, give it a moment to take what is left, so a
   clean stop leaves no backlog behind; offline, the cursor file keeps the
   place. */
static void stop_uplink(struct board_daemon *d)
{
	bool connected = false;

	if (!d->up.fwd)
		return;
	board_daemon_uplink(d, NULL, &connected, NULL);
	if (connected)
		upl_forwarder_wait_cursor(d->up.fwd, stor_log_next_seq(d->log), 2000);
	upl_forwarder_stop(d->up.fwd);
}

int board_daemon_stop(struct board_daemon *d)
{
	if (!d)
		return -EINVAL;
	if (!d->running)
		return 0;
	/* Sources first, all at once, so the collector's final drain sees
	   everything; their link checks after them. */
	for (size_t b = 0; b < BOARD_BUSES_MAX; b++)
		acq_source_request_stop(d->src[b]);
	for (size_t b = 0; b < BOARD_BUSES_MAX; b++)
		if (d->src[b])
			acq_source_stop(d->src[b]);
	acq_monitor_stop(d->mon);
	acq_collector_stop(d->col);
	/* What the log refused is said before the STOP event if it can be.
	   The final counters go into the log too, so `railmon stat` on the
	   log shows what the run's summary says. */
	board_sink_report(d->sink);
	health_tick(d, basic_mono_ns());
	board_sink_close(d->sink);
	/* Last: the final Batch is on disk for it. */
	stop_uplink(d);
	d->running = false;
	d->stopped = true;
	return 0;
}

struct board_daemon *board_daemon_free(struct board_daemon *d)
{
	if (!d)
		return NULL;
	board_daemon_stop(d);
	acq_collector_free(d->col);
	acq_monitor_free(d->mon);
	board_forwarder_close(&d->up);
	board_health_free(d->health);
	board_sink_free(d->sink);
	stor_log_free(d->log);
	for (size_t b = 0; b < BOARD_BUSES_MAX; b++) {
		acq_source_free(d->src[b]);
		bus_dev_free(d->dev[b]);
		free(d->ring_buf[b]);
	}
	board_logsource_free(d->replay);
	board_channels_free(d->ch);
	free(d);
	return NULL;
}

/* ------------------------------------------------------------ questions */

bool board_daemon_sources_done(const struct board_daemon *d)
{
	if (!d)
		return true;
	for (size_t b = 0; b < d->cfg->nbuses; b++)
		if (d->src[b] && !acq_source_done(d->src[b]))
			return false;
	return true;
}

size_t board_daemon_channels(const struct board_daemon *d, const struct board_channel **ret)
{
	return d ? board_channels_list(d->ch, ret) : 0;
}

int board_daemon_live(const struct board_daemon *d, size_t i, struct board_live *ret)
{
	return d ? board_channels_live(d->ch, i, ret) : -EINVAL;
}

const char *board_daemon_value_label(const struct board_daemon *d, size_t i, double value)
{
	return d ? board_channels_value_label(d->ch, i, value) : NULL;
}

const bus_dbc_t *board_daemon_dbc(const struct board_daemon *d, size_t b)
{
	return d ? board_channels_dbc(d->ch, b) : NULL;
}

int board_daemon_stats(const struct board_daemon *d, struct board_daemon_stats *ret)
{
	struct board_sink_stats ss;

	if (!d || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	board_sink_stats(d->sink, &ss);
	ret->items = ss.items;
	ret->records = ss.records;
	ret->batches = ss.batches;
	ret->log_dropped = ss.log_dropped;
	ret->log_unreported = ss.log_unreported;
	ret->log_error = ss.log_error;
	ret->decode_samples = ss.decode_samples;
	ret->first_seq = ss.first_seq;
	ret->next_seq = ss.next_seq;
	ret->replay_skipped = board_logsource_skipped(d->replay);
	/* Written by the replay thread before it said it is done. */
	ret->replay_error = d->replay && acq_source_done(d->src[0]) ? board_logsource_error(d->replay) : 0;
	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		ret->ring_drops += bus_drops(d, b);
		ret->bus_rx[b] = bus_items(d, b);
		ret->bus_errors[b] = bus_errors(d, b);
	}
	return 0;
}

int board_daemon_uplink_stats(struct board_daemon *d, struct upl_forward_stats *ret_stats)
{
	if (!d || !ret_stats)
		return -EINVAL;
	return d->up.fwd ? upl_forwarder_stats(d->up.fwd, ret_stats) : -ENOENT;
}

int board_daemon_uplink(struct board_daemon *d, uint64_t *ret_cursor, bool *ret_connected, bool *ret_insecure)
{
	struct upl_forward_stats st;
	int r;

	if (!d || !d->up.fwd)
		return -ENOENT;
	r = upl_forwarder_stats(d->up.fwd, &st);
	if (r < 0)
		return r;
	if (ret_cursor)
		*ret_cursor = st.cursor;
	if (ret_connected)
		*ret_connected = st.connected;
	if (ret_insecure)
		*ret_insecure = st.insecure;
	return 0;
}

size_t board_daemon_health(struct board_daemon *d, struct upl_health *ret, size_t max)
{
	return d ? board_health_get(d->health, ret, max) : 0;
}

int board_daemon_bus_link(const struct board_daemon *d, size_t b, struct acq_link_state *ret)
{
	if (!d || !ret || b >= d->cfg->nbuses)
		return -EINVAL;
	if (d->replay) {
		*ret = (struct acq_link_state){ .state = ACQ_LINK_UP };
		return 0;
	}
	return acq_source_link(d->src[b], ret);
}

int64_t board_daemon_heartbeat(const struct board_daemon *d)
{
	return d ? atomic_load_explicit(&((struct board_daemon *)d)->heartbeat_ns, memory_order_relaxed) : 0;
}

const char *board_daemon_data_dir(const struct board_daemon *d)
{
	return d ? d->data_dir : NULL;
}
