/* SPDX-License-Identifier: MIT */
/*
 * daemon.c - the wiring and the life of a running railmon.
 *
 *   bus device --(acq_source: RX/poll thread, SCHED_FIFO)--> SPSC ring
 *   link checks --(acq_monitor thread)--> check ring  \
 *   forwarder events --> event ring                     > collector -> sink
 *   the caller's events (pl_daemon_event) --> main ring  /
 *   sink: decode, encode, append to the flash log (sink.c); health (health.c)
 *
 * What the pipeline does is in acquisition/ (the loops, the rings),
 * sources.c, sink.c, health.c and channels.c; this file opens what they
 * work on, connects them, starts and stops them in order, and answers the
 * callers' questions (counters, live values, presence).
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
#include "evidence.h"
#include "pipeline/faults.h"
#include "pipeline/watch.h"
#include "pipeline/forwarder.h"
#include "pipeline/health.h"
#include "pipeline/logdir.h"
#include "pipeline/sink.h"
#include "pipeline/sparkplug.h"
#include "pipeline/sources.h"
#include "storage/stor.h"
#include "record/batch.h"
#include "uplink/forward.h"

#define TICK_MS 20 /* the collector's tick: the heartbeat, Batch timeouts, the sync window */

struct pl_daemon {
	const struct conf_board *cfg;
	char data_dir[BUS_PATH_MAX];
	bool lock_memory;
	bool running, stopped;
	const char *replay_log;
	double replay_speed;
	struct pl_logsource_faults replay_faults; /* said by the caller (only cli/ prints) */
	bool absent_ok;          /* open: an absent CAN device starts gone */
	void (*on_config)(void *ctx, const void *payload, size_t len); /* opts: to the forwarder */
	void *config_ctx;
	uint64_t reloaded_hash;
	uint8_t boot_id[REC_BOOT_ID_LEN];

	pl_channels_t *ch;
	pl_sources_t *src;
	struct acq_ring *ring_ptr[CONF_BUSES_MAX + 2]; /* + the uplink's and the caller's event rings */
	uint16_t ring_bus[CONF_BUSES_MAX + 2];
	acq_source_t *ring_src[CONF_BUSES_MAX + 2];
	struct acq_bytes *bytes[CONF_BUSES_MAX];  /* TRDP buses' telegram bytes (sources) */
	acq_collector_t *col;
	acq_cpu_latency_t *pm_qos; /* held while a realtime run runs */

	stor_log_t *log;
	pl_sink_t *sink;
	pl_watch_t *watch;       /* triggers, required channels (not in a replay) */
	struct pl_faults faults; /* noted by the sink, said by run (faults.h) */
	pl_health_t *health;
	int64_t health_next_ns;
	_Atomic int64_t heartbeat_ns;
	char log_warn[512];      /* about the log's space, said at start */

	/* uplink: its events come back through one more ring */
	struct pl_forwarder up;
	struct pl_sparkplug spb;  /* [sparkplug]: its own reader, thread and connection */
	struct acq_ring ev_ring;
	struct acq_item ev_buf[256];
	/* the caller's thread (run's main loop: remote configuration
	   outcomes) has its own ring: each ring has a single producer */
	struct acq_ring main_ring;
	struct acq_item main_buf[16];
};

/* ------------------------------------------------------------ buses */

static int open_buses(struct pl_daemon *d, char *err, size_t errlen)
{
	struct pl_sources_opts so = { .replay_log = d->replay_log, .replay_speed = d->replay_speed,
		                          .replay_faults = d->replay_faults, .absent_ok = d->absent_ok };
	int r = pl_channels_new(d->cfg, &d->ch, err, errlen);

	memcpy(&so.seed, d->boot_id, sizeof(so.seed));
	if (r >= 0)
		r = pl_sources_new(d->cfg, &so, &d->src, err, errlen);
	for (size_t b = 0; r >= 0 && b < d->cfg->nbuses; b++) {
		d->ring_ptr[b] = pl_sources_ring(d->src, b);
		d->ring_bus[b] = (uint16_t)b;
		d->ring_src[b] = pl_sources_source(d->src, b);
		d->bytes[b] = pl_sources_bytes(d->src, b);
	}
	return r;
}

/* ------------------------------------------------------------ the log */

/* A log replay, or one CAN trace read as fast as possible and nothing else:
   a single producer, so the records can come out the same every time.
   (Several buses have several RX threads whose interleaving varies.) */
static bool daemon_is_replay(const struct conf_board *cfg, const char *replay_log)
{
	if (replay_log)
		return true;
	if (cfg->nbuses == 1 && cfg->buses[0].kind == BUS_KIND_TRDP && cfg->buses[0].trdp.capture[0])
		return cfg->buses[0].trdp.trace_speed == 0; /* a packet capture */
	return cfg->nbuses == 1 && cfg->buses[0].kind == BUS_KIND_CAN && cfg->buses[0].can.driver == BUS_CAN_TRACE &&
	       cfg->buses[0].can.trace_speed == 0 && !cfg->buses[0].can.trace_loop;
}

static int open_log(struct pl_daemon *d, char *err, size_t errlen)
{
	return pl_log_open(d->cfg, d->data_dir, d->boot_id, &d->log, d->log_warn, sizeof(d->log_warn), err, errlen);
}

int pl_daemon_event(struct pl_daemon *d, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	if (!d)
		return -EINVAL;
	it.event.code = code;
	it.event.arg = arg;
	it.event.detail = detail;
	/* full (16 outcomes within one collector pass): counted as an overrun */
	return acq_ring_item_push(&d->main_ring, &it) ? 0 : -ENOBUFS;
}

int pl_daemon_config_status(struct pl_daemon *d, const char *json)
{
	if (!d || !json)
		return -EINVAL;
	return d->up.fwd ? upl_forwarder_config_status(d->up.fwd, json) : -ENOTCONN;
}

/* A hold was made (the collector thread): its window goes to the ground
   first.  The forwarder only queues it (no allocation, a short lock). */
static void daemon_hold(void *ctx, int64_t from_ns, int64_t to_ns)
{
	struct pl_daemon *d = ctx;

	if (d->up.fwd)
		upl_forwarder_hold(d->up.fwd, from_ns, to_ns); /* refused: counted in hold_refused */
}

static int open_sink(struct pl_daemon *d, char *err, size_t errlen)
{
	struct rec_batch_meta meta = { .vehicle = d->cfg->vehicle, .config_hash = d->cfg->hash };
	uint8_t secret[EVD_SECRET_LEN];
	struct pl_sink_stats st;
	size_t n;
	int r, rw = 0;

	memcpy(meta.boot_id, d->boot_id, sizeof(meta.boot_id));
	/* A key the board names but that cannot be used stops the start: the
	   log would otherwise be unsigned without anyone having chosen so. */
	r = pl_evidence_key(d->cfg, secret, err, errlen);
	if (r < 0)
		return r;
	/* Triggers and required channels watch the vehicle, not a replay. */
	if (!daemon_is_replay(d->cfg, d->replay_log))
		rw = pl_watch_new(&(struct pl_watch_cfg){ .board = d->cfg, .channels = d->ch, .log_dir = d->data_dir,
		                                          .on_hold = daemon_hold, .hold_ctx = d },
		                  &d->watch, err, errlen);
	if (rw < 0) {
		explicit_bzero(secret, sizeof(secret));
		return rw;
	}
	r = pl_sink_new(&(struct pl_sink_cfg){ .log = d->log, .channels = d->ch, .meta = &meta,
	                                             .batch_max = d->cfg->batch_max, .batch_ms = d->cfg->batch_ms,
	                                             .meta_interval_s = d->cfg->meta_interval_s,
	                                             .deterministic = daemon_is_replay(d->cfg, d->replay_log),
	                                             .faults = &d->faults,
	                                             .seal_secret = r == 1 ? secret : NULL,
	                                             .seal_interval_s = d->cfg->seal_interval_s,
	                                             .log_dir = d->data_dir, .watch = d->watch,
	                                             .bytes = d->bytes, .nbytes = d->cfg->nbuses,
	                                             .clock_step_ns = (int64_t)d->cfg->clock_step_ms * BASIC_NS_PER_MS },
	                   &d->sink);
	explicit_bzero(secret, sizeof(secret));
	if (r < 0)
		return r;
	/* What recovery found is said at start and becomes an event. */
	pl_sink_stats(d->sink, &st);
	if (st.log_damaged) {
		n = strlen(d->log_warn);
		snprintf(d->log_warn + n, sizeof(d->log_warn) - n, "%s%s: %" PRIu64 " damaged segment file(s) or spot(s) "
		         "found when opening the log: set aside as *.damaged or skipped", n ? "; " : "", d->data_dir,
		         st.log_damaged);
	}
	return 0;
}

const char *pl_daemon_log_warning(const struct pl_daemon *d)
{
	return d ? d->log_warn : "";
}

static int open_uplink(struct pl_daemon *d, char *err, size_t errlen)
{
	acq_ring_init(&d->ev_ring, d->ev_buf, sizeof(d->ev_buf) / sizeof(d->ev_buf[0]), sizeof(struct acq_item));
	acq_ring_init(&d->main_ring, d->main_buf, sizeof(d->main_buf) / sizeof(d->main_buf[0]), sizeof(struct acq_item));
	if (d->replay_log)
		return 0; /* a replay is a command, not the vehicle's log */
	int r = pl_forwarder_open(&d->up, d->cfg, d->data_dir, d->log, d->ch, &d->ev_ring, d->on_config,
	                          d->config_ctx, err, errlen);
	if (r < 0)
		return r;
	return pl_sparkplug_open(&d->spb, d->cfg, d->data_dir, d->ch, err, errlen);
}

/* ------------------------------------------------------------ the collector */

/* Health entries ride in the next Batch and are kept for `railmon stat`. */
static void health_tick(struct pl_daemon *d, int64_t now)
{
	struct pl_health_bus buses[CONF_BUSES_MAX];
	struct pl_sink_stats st;

	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		pl_sources_health(d->src, b, &buses[b]);
		/* the collector's own (this thread): -EINVAL, zeros, without XML */
		if (buses[b].trdp && pl_channels_trdp_counts(d->ch, b, &buses[b].trdp_decode) < 0)
			buses[b].trdp_decode = (struct pl_trdp_counts){ 0 };
	}
	pl_sink_stats(d->sink, &st);
	pl_health_tick(d->health, &(struct pl_health_input){ .buses = buses, .nbuses = d->cfg->nbuses,
	                                                          .collector_items = st.items, .log = d->log,
	                                                          .fwd = d->up.fwd, .sink = d->sink,
	                                                          .clock_steps = st.clock_steps },
	                  now);
}

static int daemon_sink(void *ctx, const struct acq_item *items, size_t n)
{
	return pl_sink_items(((struct pl_daemon *)ctx)->sink, items, n);
}

static int daemon_tick(void *ctx)
{
	struct pl_daemon *d = ctx;
	int64_t now = basic_mono_ns();

	atomic_store_explicit(&d->heartbeat_ns, now, memory_order_relaxed);
	if (now >= d->health_next_ns) {
		health_tick(d, now);
		d->health_next_ns = now + (int64_t)d->cfg->health_interval_s * BASIC_NS_PER_SEC;
	}
	return pl_sink_tick(d->sink);
}

/* The collector's pass over the rings: 20 ms, shorter where batch_ms or
   the log's sync window needs it (a quarter and a half of them, at least
   1 ms, never longer than batch_ms).  Its passes only move items from the
   rings (8192 slots: a second of a saturated bus; the collector shortens
   its period itself when a ring fills faster) to Batches that close every
   batch_ms, so a longer period costs no latency anyone sees (the sources
   stamp theirs at the push), and each pass takes 20 ms of every bus at
   once: 50 wakeups/s instead of 1,000, also on an idle board, where the
   fixed wakeups are most of railmon's cost (issue 12). */
#define COLLECTOR_PERIOD_US 20000u
/* A source that waits for room (a replay, a trace read as fast as it
   goes) fills an 8192-slot ring in about 3 ms and then stands still until
   the next pass: at 20 ms a raw replay ran at 0.44x its speed at 5 ms
   (2.85 s against 1.25 s for 3 M frames). */
#define COLLECTOR_REPLAY_PERIOD_US 5000u

static uint32_t collector_period_us(const struct conf_board *cfg, bool replay)
{
	uint64_t p = replay ? COLLECTOR_REPLAY_PERIOD_US : COLLECTOR_PERIOD_US, batch = (uint64_t)cfg->batch_ms * 1000u;

	if (batch / 4 < p)
		p = batch / 4;
	if (cfg->storage.sync_window_ms && (uint64_t)cfg->storage.sync_window_ms * 500u < p)
		p = (uint64_t)cfg->storage.sync_window_ms * 500u;
	if (p < 1000)
		p = 1000;
	return (uint32_t)(p < batch ? p : batch);
}

static int open_collector(struct pl_daemon *d)
{
	size_t n = d->cfg->nbuses;
	uint32_t period = collector_period_us(d->cfg, pl_sources_wait_for_room(d->src));

	d->ring_ptr[n] = &d->ev_ring;
	d->ring_bus[n] = ACQ_SOURCE_DAEMON;
	d->ring_ptr[n + 1] = &d->main_ring;
	d->ring_bus[n + 1] = ACQ_SOURCE_DAEMON;
	return acq_collector_new(&(struct acq_collector_cfg){ .rings = d->ring_ptr, .nrings = n + 2,
	                                                      .ring_bus = d->ring_bus, .sources = d->ring_src,
	                                                      .sink = daemon_sink, .tick = daemon_tick,
	                                                      .ctx = d, .tick_ms = TICK_MS, .idle_us = period },
	                         &d->col);
}

/* ------------------------------------------------------------ lifecycle */

static void daemon_opts(struct pl_daemon *d, const struct pl_daemon_opts *opts)
{
	d->lock_memory = opts && opts->lock_memory;
	d->reloaded_hash = opts ? opts->reloaded_hash : 0;
	d->replay_log = opts ? opts->replay_log : NULL;
	d->replay_speed = opts ? opts->replay_speed : 0;
	if (opts)
		d->replay_faults = opts->replay_faults;
	d->absent_ok = opts && opts->absent_ok;
	d->on_config = opts ? opts->on_config : NULL;
	d->config_ctx = opts ? opts->config_ctx : NULL;
	snprintf(d->data_dir, sizeof(d->data_dir), "%s", pl_data_dir(d->cfg, opts ? opts->data_dir : NULL));
}

int pl_daemon_new(const struct conf_board *cfg, const struct pl_daemon_opts *opts,
                  struct pl_daemon **ret, char *err, size_t errlen)
{
	struct pl_daemon *d;
	int r;

	if (!cfg || !ret || !err || !errlen)
		return -EINVAL;
	err[0] = 0;
	/* Aligned as declared: the rings pad their indices to cache lines. */
	d = aligned_alloc(_Alignof(struct pl_daemon), sizeof(*d));
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
		r = open_sink(d, err, errlen);
	if (r >= 0)
		r = pl_health_new(&d->health);
	if (r >= 0)
		r = open_uplink(d, err, errlen);
	if (r >= 0)
		r = open_collector(d);
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-r));
		pl_daemon_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

int pl_daemon_start(struct pl_daemon *d, char *warn, size_t warnlen)
{
	int r;

	if (!d || d->running || d->stopped)
		return -EINVAL;
	if (warn && warnlen)
		warn[0] = 0;
	if (d->lock_memory && (r = acq_rt_lock_memory()) < 0 && warn)
		snprintf(warn, warnlen, "mlockall: %s: pages may fault on realtime paths", strerror(-r));
	/* Realtime threads wake late from a deep idle state (board key
	   cpu_latency_us): held until the daemon stops. */
	if (d->lock_memory && d->cfg->rt_priority > 0 && d->cfg->cpu_latency_us >= 0 &&
	    (r = acq_cpu_latency_new(d->cfg->cpu_latency_us, &d->pm_qos)) < 0 && warn && !warn[0])
		snprintf(warn, warnlen, "/dev/cpu_dma_latency: %s: CPUs may idle deeply and wake the bus threads late",
		         strerror(-r));
	pl_sink_event(d->sink, ACQ_EV_START, getpid());
	if (d->reloaded_hash)
		pl_sink_event(d->sink, ACQ_EV_CONFIG_RELOAD, (int64_t)(d->reloaded_hash >> 1));
	atomic_store(&d->heartbeat_ns, basic_mono_ns());
	r = acq_collector_start(d->col, &(struct acq_thread_cfg){ .name = "collector", .cpu = d->cfg->collector_cpu });
	if (r < 0)
		return r;
	d->running = true;
	if (d->up.fwd)
		r = upl_forwarder_start(d->up.fwd);
	if (r >= 0 && d->spb.pub)
		r = upl_spb_start(d->spb.pub);
	if (r >= 0)
		r = pl_sources_start(d->src, warn, warnlen);
	if (r < 0)
		pl_daemon_stop(d);
	return r;
}

/* While the broker is there, give it a moment to take what is left, so a
   clean stop leaves no backlog behind; offline, the cursor file keeps the
   place. */
static void stop_uplink(struct pl_daemon *d)
{
	bool connected = false;

	if (!d->up.fwd)
		return;
	pl_daemon_uplink(d, NULL, &connected, NULL);
	if (connected)
		upl_forwarder_wait_cursor(d->up.fwd, stor_log_next_seq(d->log), 2000);
	upl_forwarder_stop(d->up.fwd);
}

int pl_daemon_stop(struct pl_daemon *d)
{
	if (!d)
		return -EINVAL;
	if (!d->running)
		return 0;
	/* Sources first, so the collector's final drain sees everything. */
	pl_sources_stop(d->src);
	d->pm_qos = acq_cpu_latency_free(d->pm_qos); /* no realtime thread left */
	acq_collector_stop(d->col);
	/* What the log refused is said before the STOP event if it can be.
	   The final counters go into the log too, so `railmon stat` on the
	   log shows what the run's summary says. */
	pl_sink_report(d->sink);
	health_tick(d, basic_mono_ns());
	pl_sink_close(d->sink);
	/* Last: the final Batch is on disk for them. */
	stop_uplink(d);
	pl_sparkplug_close(&d->spb);
	d->running = false;
	d->stopped = true;
	return 0;
}

struct pl_daemon *pl_daemon_free(struct pl_daemon *d)
{
	if (!d)
		return NULL;
	pl_daemon_stop(d);
	acq_cpu_latency_free(d->pm_qos);
	acq_collector_free(d->col);
	pl_forwarder_close(&d->up);
	pl_sparkplug_close(&d->spb);
	pl_health_free(d->health);
	pl_sink_free(d->sink);
	pl_watch_free(d->watch);
	stor_log_free(d->log);
	pl_sources_free(d->src);
	pl_channels_free(d->ch);
	free(d);
	return NULL;
}

/* ------------------------------------------------------------ questions */

bool pl_daemon_sources_done(const struct pl_daemon *d)
{
	return d ? pl_sources_done(d->src) : true;
}

size_t pl_daemon_channels(const struct pl_daemon *d, const struct pl_channel **ret)
{
	return d ? pl_channels_list(d->ch, ret) : 0;
}

int pl_daemon_live(const struct pl_daemon *d, size_t i, struct pl_live *ret)
{
	return d ? pl_channels_live(d->ch, i, ret) : -EINVAL;
}

const char *pl_daemon_value_label(const struct pl_daemon *d, size_t i, double value)
{
	return d ? pl_channels_value_label(d->ch, i, value) : NULL;
}

const dbc_t *pl_daemon_dbc(const struct pl_daemon *d, size_t b)
{
	return d ? pl_channels_dbc(d->ch, b) : NULL;
}

void pl_daemon_rt(const struct pl_daemon *d, int *ret_rt_priority, int *ret_cpu_latency_us, bool *ret_qos_held)
{
	*ret_rt_priority = d->cfg->rt_priority;
	*ret_cpu_latency_us = d->cfg->cpu_latency_us;
	*ret_qos_held = d->pm_qos != NULL;
}

int pl_daemon_stats(const struct pl_daemon *d, struct pl_daemon_stats *ret)
{
	struct pl_sink_stats ss;

	if (!d || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	pl_sink_stats(d->sink, &ss);
	ret->items = ss.items;
	ret->records = ss.records;
	ret->batches = ss.batches;
	ret->log_dropped = ss.log_dropped;
	ret->log_unreported = ss.log_unreported;
	ret->log_error = ss.log_error;
	ret->decode_samples = ss.decode_samples;
	ret->first_seq = ss.first_seq;
	ret->next_seq = ss.next_seq;
	ret->replay_skipped = pl_sources_replay_skipped(d->src);
	ret->replay_error = pl_sources_replay_error(d->src);
	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		struct pl_bus_counts c;
		pl_sources_counts(d->src, b, &c);
		ret->ring_drops += c.drops;
		ret->bus_rx[b] = c.items;
		ret->bus_errors[b] = c.errors;
	}
	return 0;
}

int pl_daemon_uplink_stats(struct pl_daemon *d, struct upl_forward_stats *ret_stats)
{
	if (!d || !ret_stats)
		return -EINVAL;
	return d->up.fwd ? upl_forwarder_stats(d->up.fwd, ret_stats) : -ENOENT;
}

int pl_daemon_sparkplug_stats(struct pl_daemon *d, struct upl_spb_stats *ret_stats)
{
	if (!d || !ret_stats)
		return -EINVAL;
	if (d->spb.pub)
		upl_spb_stats(d->spb.pub, ret_stats);
	else if (d->spb.stopped)
		*ret_stats = d->spb.last; /* after pl_daemon_stop(): the final counters */
	else
		return -ENOENT;
	return 0;
}

int pl_daemon_uplink_dictionary(const struct pl_daemon *d, size_t *ret_sent, size_t *ret_channels)
{
	if (!d || !ret_sent || !ret_channels)
		return -EINVAL;
	if (!d->up.fwd || !d->up.dict_channels)
		return -ENOENT;
	*ret_sent = d->up.dict_sent;
	*ret_channels = d->up.dict_channels;
	return 0;
}

int pl_daemon_uplink(struct pl_daemon *d, uint64_t *ret_cursor, bool *ret_connected, bool *ret_insecure)
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

size_t pl_daemon_health(struct pl_daemon *d, struct rec_health *ret, size_t max)
{
	return d ? pl_health_get(d->health, ret, max) : 0;
}

int pl_daemon_bus_link(const struct pl_daemon *d, size_t b, struct acq_link_state *ret)
{
	return d ? pl_sources_link(d->src, b, ret) : -EINVAL;
}

int64_t pl_daemon_heartbeat(const struct pl_daemon *d)
{
	return d ? atomic_load_explicit(&((struct pl_daemon *)d)->heartbeat_ns, memory_order_relaxed) : 0;
}

const struct pl_faults *pl_daemon_faults(const struct pl_daemon *d)
{
	return d ? &d->faults : NULL;
}

const char *pl_daemon_data_dir(const struct pl_daemon *d)
{
	return d ? d->data_dir : NULL;
}
