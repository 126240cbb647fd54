/* SPDX-License-Identifier: MIT */
/*
 * daemon.c - the pipeline of a running railmon.
 *
 *   bus RX/poll thread (one per bus, SCHED_FIFO)  --SPSC ring-->  collector
 *   collector sink: CAN frame -> DBC samples; everything -> Batch encoder;
 *   a full or old Batch -> numbered -> appended to the flash log.
 *
 * The sink runs only on the collector thread (and on the caller's thread
 * before start and after stop, when the collector is not running), so the
 * encoder, the DBC tables and the log need no locks.  Live values and
 * counters cross threads through relaxed atomics: each is a single word.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "daemon.h"
#include "logfault.h"
#include "storage/stor.h"
#include "record/batch.h"
#include "uplink/forward.h"
#include "basic/clock.h"

#define RX_BATCH 64          /* items per bus_dev_recv() */
#define RX_TIMEOUT_MS 100    /* so the RX loop sees the stop flag */
#define MS_NS 1000000ll
/* Device gone: reopen after a wait that doubles from 100 ms to 5 s (each
   wait drawn from the upper half of its step); other errors: a pause from
   10 ms to 1 s, so no error path spins. */
#define RX_BACKOFF_MIN_NS (100 * MS_NS)
#define RX_BACKOFF_MAX_NS (5000 * MS_NS)
#define RX_PAUSE_MIN_NS (10 * MS_NS)
#define RX_PAUSE_MAX_NS (1000 * MS_NS)
#define CHECK_PERIOD_NS 1000000000ll
#define LOG_REPORT_RETRY_NS 1000000000ll /* a refused log report is tried again this often */

struct rx_ctx {
	struct board_daemon *d;
	size_t bus;
	atomic_bool done;        /* source ended by itself (trace EOF) */
	_Atomic uint64_t produced;
	_Atomic uint64_t errors;
	bool stamp_latency;      /* live CAN: kernel stamp -> delivery latency */
	bool backpressure;       /* a file read as fast as possible: wait, never drop */
	bool drain_at_stop;      /* a live CAN socket/tty: read what is queued at stop */
	struct acq_latency latency;
	uint64_t prev_items;     /* collector side: for the health rate */
	/* The device's presence (struct board_bus_link), written by the RX
	   thread only.  losses/reopens are stored last with release, so a
	   reader that loads them with acquire sees the details that go with
	   them. */
	_Atomic uint32_t link;   /* enum board_link */
	_Atomic uint64_t losses, reopens;
	_Atomic int cause, reopen_err;
	_Atomic uint32_t attempts;
	_Atomic int64_t gone_ns, back_ns;
	bool follow_mb_events;   /* Modbus: presence from DISCONNECT/CONNECT */
	int64_t backoff_ns;      /* RX thread: the next reopen step */
	uint64_t rng;            /* RX thread: jitter */
};

/* Log events not yet on disk (see board_daemon.pend). */
struct log_pending {
	uint64_t dropped;     /* records refused, dropped or lost */
	uint64_t unforwarded; /* deleted by retention before being forwarded */
	uint64_t abandoned;   /* segments abandoned after an I/O error */
	uint64_t damaged;     /* damaged spots found (or set aside) at open */
	int err;              /* the last error, 0 if none */
};

struct live_slot {
	_Atomic uint64_t bits;   /* the double's bits */
	_Atomic int64_t t_ns;
	_Atomic uint32_t quality;
};

struct board_daemon {
	const struct board_cfg *cfg;
	char data_dir[BUS_PATH_MAX];
	bool lock_memory;
	bool running, stopped;
	const char *replay_log;
	double replay_speed;
	bool absent_ok;          /* open: an absent CAN device starts gone */
	acq_thread_t *replay;
	atomic_bool replay_done;
	int replay_error;        /* -errno that ended the replay early, 0 if none */
	_Atomic uint64_t replay_skipped; /* unreadable parts of the replayed log */

	bus_dev_t *dev[BOARD_BUSES_MAX];
	bus_dbc_t *dbc[BOARD_BUSES_MAX];
	struct acq_ring ring[BOARD_BUSES_MAX];
	struct acq_ring *ring_ptr[BOARD_BUSES_MAX + 1]; /* + the uplink event ring */
	uint16_t ring_bus[BOARD_BUSES_MAX + 1];
	struct acq_item *ring_buf[BOARD_BUSES_MAX];
	acq_thread_t *rx[BOARD_BUSES_MAX];
	struct rx_ctx rxc[BOARD_BUSES_MAX];
	atomic_bool stop;

	acq_collector_t *col;
	/* uplink: the forwarder reads the log with its own reader; its events
	   come back through one more ring, so they are records too */
	upl_forwarder_t *fwd;
	stor_reader_t *fwd_reader, *fwd_live_reader;
	struct acq_ring ev_ring;
	struct acq_item ev_buf[256];
	char fwd_client[96], fwd_cursor[BUS_PATH_MAX + 32];
	uint64_t fwd_prev_acked;
	upl_encoder_t *enc;
	stor_log_t *log;
	uint8_t boot_id[UPL_BOOT_ID_LEN];
	int64_t batch_open_ns;     /* monotonic time the open Batch got its first record */
	int64_t batch_data_t0;     /* the record time of that first record */
	bool deterministic;        /* a replay: Batches by record time, one ring */
	int64_t meta_next_ns;      /* when to send the channel dictionary again */
	size_t meta_pos;           /* its first entry the next Batch carries */
	struct acq_item *decoded;  /* scratch for the samples of one frame */
	size_t decoded_max;        /* its size: the largest message of any DBC */

	struct board_channel *channels;
	struct upl_channel *upl_channels;
	struct live_slot *live;
	size_t nchannels;
	size_t chan_base[BOARD_BUSES_MAX]; /* index of the bus's first channel */
	size_t chan_count[BOARD_BUSES_MAX];

	int64_t health_next_ns;
	_Atomic int64_t heartbeat_ns;
	uint64_t reloaded_hash;
	struct acq_latency *lat_snap; /* 16 KiB scratch for health snapshots */
	int64_t health_prev_ns;
	pthread_mutex_t health_lock; /* guards health[] for readers (stat) */
	struct upl_health health[BOARD_BUSES_MAX + 3];
	size_t nhealth;

	/* collector-thread counters, published with relaxed stores */
	_Atomic uint64_t items, records, batches, log_dropped, decode_samples, next_seq;
	uint64_t first_seq;

	/* What the log reported that no durable record says yet: while the
	   disk is full every event would be refused with the Batch carrying
	   it, so the counts wait here (collector thread only) and go out in
	   one Batch, synced at once, when the log takes records again. */
	struct log_pending pend;
	int64_t pend_retry_ns;
	uint64_t refused_appends;        /* refused by stor_log_append, not yet taken */
	_Atomic uint64_t log_unreported; /* pend.dropped, for readers */
	_Atomic int log_error;           /* the log's last error, 0 if none */
	char log_warn[512];              /* about the log's space, said at start */
};

static void add_u64(_Atomic uint64_t *c, uint64_t n)
{
	/* Single writer (the collector): load+store is an increment readers
	   never see torn, and cheaper than a locked add. */
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* ------------------------------------------------------------ channels */

static int add_channel(struct board_daemon *d, size_t *cap, const struct board_channel *ch)
{
	if (d->nchannels == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct board_channel *n = realloc(d->channels, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		d->channels = n;
		*cap = ncap;
	}
	d->channels[d->nchannels++] = *ch;
	return 0;
}

static int collect_bus_channels(struct board_daemon *d, size_t b, size_t *cap)
{
	const struct bus_cfg *bc = &d->cfg->buses[b];
	struct board_channel ch;
	int r;

	d->chan_base[b] = d->nchannels;
	if (bc->kind == BUS_KIND_MODBUS) {
		for (size_t i = 0; i < bc->mb.nchannels; i++) {
			const struct bus_mb_channel *m = &bc->mb.channels[i];
			memset(&ch, 0, sizeof(ch));
			ch.id = m->id;
			ch.bus = (uint16_t)b;
			snprintf(ch.name, sizeof(ch.name), "%s", m->name);
			snprintf(ch.unit, sizeof(ch.unit), "%s", m->unit);
			snprintf(ch.source, sizeof(ch.source), "modbus %s u%u %s %u", bc->name, m->unit_id,
			         board_mb_table_name(m->table), m->addr);
			if ((r = add_channel(d, cap, &ch)) < 0)
				return r;
		}
	} else if (d->dbc[b]) {
		unsigned n = bus_dbc_signal_count(d->dbc[b]);
		for (unsigned i = 0; i < n; i++) {
			struct bus_dbc_signal_info si;
			if (bus_dbc_signal_info(d->dbc[b], i, &si) < 0)
				return -EINVAL;
			memset(&ch, 0, sizeof(ch));
			ch.id = (uint32_t)b << 16 | i;
			ch.bus = (uint16_t)b;
			snprintf(ch.name, sizeof(ch.name), "%s", si.name);
			snprintf(ch.unit, sizeof(ch.unit), "%s", si.unit ? si.unit : "");
			snprintf(ch.source, sizeof(ch.source), "can %s %s", bc->name, si.message);
			if ((r = add_channel(d, cap, &ch)) < 0)
				return r;
		}
	}
	d->chan_count[b] = d->nchannels - d->chan_base[b];
	return 0;
}

static int build_channels(struct board_daemon *d)
{
	size_t cap = 0;
	int r;

	for (size_t b = 0; b < d->cfg->nbuses; b++)
		if ((r = collect_bus_channels(d, b, &cap)) < 0)
			return r;
	d->live = calloc(d->nchannels ? d->nchannels : 1, sizeof(*d->live));
	d->upl_channels = calloc(d->nchannels ? d->nchannels : 1, sizeof(*d->upl_channels));
	if (!d->live || !d->upl_channels)
		return -ENOMEM;
	for (size_t i = 0; i < d->nchannels; i++) {
		d->upl_channels[i] = (struct upl_channel){ d->channels[i].id, d->channels[i].name,
		                                           d->channels[i].unit, d->channels[i].bus,
		                                           d->channels[i].source };
	}
	return 0;
}

/* Map a channel id to its index, -1 if it is not one of ours. */
static ssize_t channel_index(const struct board_daemon *d, uint32_t id)
{
	size_t b = id >> 16, i = id & 0xffff;

	if (b >= d->cfg->nbuses || i >= d->chan_count[b])
		return -1;
	return (ssize_t)(d->chan_base[b] + i);
}

static void live_update(struct board_daemon *d, const struct acq_item *it)
{
	ssize_t i = channel_index(d, it->sample.channel);
	uint64_t bits;

	if (i < 0)
		return;
	memcpy(&bits, &it->sample.value, sizeof(bits));
	atomic_store_explicit(&d->live[i].bits, bits, memory_order_relaxed);
	atomic_store_explicit(&d->live[i].quality, it->sample.quality, memory_order_relaxed);
	/* Written last with release: a reader that sees the new time sees the
	   value that goes with it. */
	atomic_store_explicit(&d->live[i].t_ns, it->t_ns, memory_order_release);
}

/* ------------------------------------------------------------ the sink */

/* Close the open Batch and append it to the log.  0 (or nothing to do),
   or the append's -errno: the records were refused, and the log counts
   them (log_take). */
static int batch_flush(struct board_daemon *d)
{
	struct stor_rec rec = { 0 };
	const uint8_t *buf;
	size_t len;
	int n, r;

	if (!upl_encoder_count(d->enc))
		return 0;
	if (basic_mono_ns() >= d->meta_next_ns) {
		/* The dictionary rides along now and then, so a consumer that
		   starts mid-stream (or a log trimmed by retention) learns the
		   channel names within meta_interval_s.  A large board's does
		   not fit in one Batch: each Batch takes the next slice. */
		n = upl_encoder_set_channels(d->enc, d->upl_channels + d->meta_pos, d->nchannels - d->meta_pos);
		if (n > 0)
			d->meta_pos += (size_t)n;
		if (n < 0 || d->meta_pos >= d->nchannels) {
			d->meta_pos = 0;
			d->meta_next_ns = basic_mono_ns() + (int64_t)d->cfg->meta_interval_s * 1000000000;
		}
	}
	upl_encoder_span(d->enc, &rec.t_first_ns, &rec.t_last_ns);
	rec.first_seq = stor_log_next_seq(d->log);
	n = upl_encoder_finish(d->enc, rec.first_seq, &buf, &len);
	if (n <= 0)
		return 0;
	rec.count = (uint32_t)n;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	/* A refused Batch is counted by the log itself (with the records it
	   drops later, at a sync): log_take() turns that into the daemon's
	   counter and, once the log takes records again, one event. */
	r = stor_log_append(d->log, &rec);
	if (r == 0) {
		add_u64(&d->records, (uint64_t)n);
		add_u64(&d->batches, 1);
	} else {
		d->refused_appends += (uint64_t)n;
	}
	atomic_store_explicit(&d->next_seq, stor_log_next_seq(d->log), memory_order_relaxed);
	return r;
}

static void encode(struct board_daemon *d, const struct acq_item *it)
{
	/* A replay closes Batches by the records' own time, not the wall
	   clock, so the same input always gives the same Batches and numbers. */
	if (d->deterministic && upl_encoder_count(d->enc) &&
	    llabs(it->t_ns - d->batch_data_t0) >= (int64_t)d->cfg->batch_ms * 1000000)
		batch_flush(d);
	if (!upl_encoder_count(d->enc)) {
		d->batch_open_ns = basic_mono_ns();
		d->batch_data_t0 = it->t_ns;
	}
	if (upl_encoder_add(d->enc, it) == -ENOBUFS) {
		batch_flush(d);
		d->batch_open_ns = basic_mono_ns();
		upl_encoder_add(d->enc, it);
	}
}

static void decode_frame(struct board_daemon *d, const struct acq_item *it)
{
	int n;

	if (it->bus >= d->cfg->nbuses || !d->dbc[it->bus] || (it->can.flags & ACQ_CAN_ERR))
		return;
	/* never -ENOBUFS: the scratch holds the largest message's signals */
	n = bus_dbc_decode(d->dbc[it->bus], it, (uint32_t)it->bus << 16, d->decoded, d->decoded_max);
	for (int k = 0; k < n; k++) {
		encode(d, &d->decoded[k]);
		live_update(d, &d->decoded[k]);
	}
	if (n > 0)
		add_u64(&d->decode_samples, (uint64_t)n);
}

static int daemon_sink(void *ctx, const struct acq_item *items, size_t n)
{
	struct board_daemon *d = ctx;

	for (size_t i = 0; i < n; i++) {
		const struct acq_item *it = &items[i];
		encode(d, it);
		if (it->kind == ACQ_ITEM_CAN)
			decode_frame(d, it);
		else if (it->kind == ACQ_ITEM_SAMPLE)
			live_update(d, it);
	}
	add_u64(&d->items, n);
	return 0;
}

/* 1 us buckets -> the proto's log2 buckets: [0,1) us, [2^(k-1), 2^k) us. */
static void health_latency(struct board_daemon *d, struct upl_health *h, const struct acq_latency *lat)
{
	struct acq_latency *snap = d->lat_snap;

	acq_latency_snapshot(lat, snap);
	h->latency_count = snap->count;
	h->latency_max_ns = snap->max_ns;
	h->overruns = snap->overruns;
	h->latency_p50_us = acq_latency_percentile_us(snap, 50);
	h->latency_p99_us = acq_latency_percentile_us(snap, 99);
	h->latency_p999_us = acq_latency_percentile_us(snap, 99.9);
	for (uint32_t us = 0; us < ACQ_LAT_BUCKETS; us++) {
		unsigned k = us ? 64 - (unsigned)__builtin_clzll(us) : 0;
		h->latency_us_buckets[k] += snap->bucket[us];
	}
	if (snap->overflow) {
		unsigned k = 64 - (unsigned)__builtin_clzll(snap->max_ns / 1000 | 1);
		h->latency_us_buckets[k < UPL_HEALTH_BUCKETS ? k : UPL_HEALTH_BUCKETS - 1] += snap->overflow;
	}
}

/* Errors of bus b: the RX loop's failed reads plus what the driver counted
   (failed Modbus transactions, CAN error frames).  The run summary and the
   health records (`railmon stat`) both use this one sum. */
static uint64_t bus_errors(const struct board_daemon *d, size_t b)
{
	struct bus_stats st = { 0 };

	bus_dev_stats(d->dev[b], &st);
	return atomic_load_explicit(&((struct board_daemon *)d)->rxc[b].errors, memory_order_relaxed) + st.rx_errors;
}

static void health_bus(struct board_daemon *d, size_t b, double dt, struct upl_health *h)
{
	const struct bus_cfg *bc = &d->cfg->buses[b];
	struct rx_ctx *c = &d->rxc[b];
	const struct acq_latency *lat = bus_dev_latency(d->dev[b]);
	struct bus_stats st = { 0 };
	uint64_t items = atomic_load_explicit(&c->produced, memory_order_relaxed);

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "%s", bc->name);
	snprintf(h->kind, sizeof(h->kind), "%s", bc->kind == BUS_KIND_CAN ? "can" : "modbus");
	h->bus = (uint32_t)b;
	bus_dev_stats(d->dev[b], &st);
	h->items = items;
	h->drops = acq_ring_drops(&d->ring[b]);
	h->errors = bus_errors(d, b);
	h->rx_dropped = st.rx_dropped;
	h->bad_input = st.bad_input;
	h->ring_fill_pct = (uint32_t)(acq_ring_count(&d->ring[b]) * 100 / d->cfg->ring_slots);
	h->rate_hz = dt > 0 ? (double)(items - c->prev_items) / dt : 0;
	c->prev_items = items;
	h->reopens = atomic_load_explicit(&c->reopens, memory_order_relaxed);
	snprintf(h->state, sizeof(h->state), "%s",
	         board_link_name(atomic_load_explicit(&c->link, memory_order_relaxed)));
	health_latency(d, h, lat ? lat : &c->latency);
}

static void health_log(struct board_daemon *d, struct upl_health *h)
{
	struct stor_stats st;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "log");
	snprintf(h->kind, sizeof(h->kind), "log");
	h->bus = ACQ_SOURCE_DAEMON;
	if (stor_log_stats(d->log, &st) < 0)
		return;
	h->items = st.records;
	h->drops = st.dropped + st.lost_unsynced;
	h->errors = st.segments_abandoned;
	h->backlog = stor_log_next_seq(d->log) - stor_log_confirmed_seq(d->log);
}

/* The uplink's part of health; also tells retention what is off-board. */
static void health_uplink(struct board_daemon *d, double dt, struct upl_health *h)
{
	struct upl_forward_stats st;

	memset(h, 0, sizeof(*h));
	snprintf(h->name, sizeof(h->name), "uplink");
	snprintf(h->kind, sizeof(h->kind), "uplink");
	h->bus = ACQ_SOURCE_DAEMON;
	if (upl_forwarder_stats(d->fwd, &st) < 0)
		return;
	stor_log_set_forwarded(d->log, st.cursor);
	h->items = st.acked;
	h->errors = st.connect_fails + st.ack_timeouts + st.source_errors;
	h->drops = st.resent; /* re-sent after reconnects: duplicates on the wire */
	h->backlog = stor_log_next_seq(d->log) - st.cursor;
	h->rate_hz = dt > 0 ? (double)(st.acked - d->fwd_prev_acked) / dt : 0;
	d->fwd_prev_acked = st.acked;
}

/* Health entries ride in the next Batch and are kept for `railmon stat`. */
static void health_tick(struct board_daemon *d, int64_t now)
{
	struct upl_health h[BOARD_BUSES_MAX + 3];
	double dt = d->health_prev_ns ? (double)(now - d->health_prev_ns) / 1e9 : 0;
	size_t n = 0;

	for (size_t b = 0; b < d->cfg->nbuses; b++)
		health_bus(d, b, dt, &h[n++]);
	memset(&h[n], 0, sizeof(h[n]));
	snprintf(h[n].name, sizeof(h[n].name), "collector");
	snprintf(h[n].kind, sizeof(h[n].kind), "collector");
	h[n].bus = ACQ_SOURCE_DAEMON;
	h[n].items = atomic_load_explicit(&d->items, memory_order_relaxed);
	n++;
	health_log(d, &h[n++]);
	if (d->fwd)
		health_uplink(d, dt, &h[n++]);
	for (size_t i = 0; i < n; i++)
		upl_encoder_add_health(d->enc, &h[i]);
	pthread_mutex_lock(&d->health_lock);
	memcpy(d->health, h, n * sizeof(h[0]));
	d->nhealth = n;
	pthread_mutex_unlock(&d->health_lock);
	d->health_prev_ns = now;
}

/* What the log reports (ENOSPC, I/O errors, retention, recovery) goes to
   the counters and waits in pend until log_report() got it on disk. */
static void log_take(struct board_daemon *d)
{
	struct stor_events ev;
	uint64_t n, later, stored;

	if (stor_log_take_events(d->log, &ev) <= 0)
		return;
	n = ev.lost_unsynced + ev.dropped_nospace + ev.dropped_other;
	/* Records the log took and dropped later (ENOSPC at a sync, EIO) were
	   counted as stored: they are not. */
	later = n - (n < d->refused_appends ? n : d->refused_appends);
	d->refused_appends -= n - later;
	stored = atomic_load_explicit(&d->records, memory_order_relaxed);
	atomic_store_explicit(&d->records, stored - (later < stored ? later : stored), memory_order_relaxed);
	add_u64(&d->log_dropped, n);
	d->pend.dropped += n;
	d->pend.unforwarded += ev.retention_unforwarded;
	d->pend.abandoned += ev.segments_abandoned;
	d->pend.damaged += ev.recovered_damage;
	if (ev.last_error) {
		d->pend.err = ev.last_error;
		atomic_store_explicit(&d->log_error, ev.last_error, memory_order_relaxed);
	}
	atomic_store_explicit(&d->log_unreported, d->pend.dropped, memory_order_relaxed);
}

static void log_event(struct board_daemon *d, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	/* Straight into the (empty) encoder: encode() could close the Batch
	   between two of these (a replay closes Batches by record time). */
	if (!upl_encoder_count(d->enc)) {
		d->batch_open_ns = basic_mono_ns();
		d->batch_data_t0 = it.t_ns;
	}
	upl_encoder_add(d->enc, &it);
}

/*
 * Turn what is pending into events: LOG_FAULT (arg -errno, detail segments
 * abandoned, or damaged spots found at open), LOG_DROPPED (arg the exact
 * number of records refused, dropped or lost, detail errno), LOG_RETENTION
 * (arg records deleted unforwarded).  They go in a Batch of their own,
 * synced at once: only when that Batch is durable are the counts taken off
 * pend.  If the log refuses it (the disk is still full), its own records
 * are counted with the rest and the next try, a second later, reports the
 * new total.  So the LOG_DROPPED args in the log add up to log_dropped.
 */
static void log_report(struct board_daemon *d, bool force)
{
	int64_t now = basic_mono_ns();
	struct log_pending sent;
	int r;

	if (!d->pend.dropped && !d->pend.unforwarded && !d->pend.abandoned && !d->pend.damaged && !d->pend.err)
		return;
	if (!force && now < d->pend_retry_ns)
		return;
	d->pend_retry_ns = now + LOG_REPORT_RETRY_NS;
	/* The open Batch goes first, on its own: what it costs is counted
	   now and reported with the rest. */
	batch_flush(d);
	log_take(d);
	sent = d->pend;
	if (sent.err || sent.abandoned)
		log_event(d, ACQ_EV_LOG_FAULT, sent.err, (uint32_t)sent.abandoned);
	else if (sent.damaged)
		log_event(d, ACQ_EV_LOG_FAULT, -EBADMSG, (uint32_t)sent.damaged);
	if (sent.dropped)
		log_event(d, ACQ_EV_LOG_DROPPED, (int64_t)sent.dropped, (uint32_t)(sent.err < 0 ? -sent.err : 0));
	if (sent.unforwarded)
		log_event(d, ACQ_EV_LOG_RETENTION, (int64_t)sent.unforwarded, 1);
	r = batch_flush(d);
	if (r == 0)
		r = stor_log_sync(d->log);
	log_take(d);
	if (r < 0)
		return; /* refused or dropped: counted, reported with the next try */
	d->pend.dropped -= sent.dropped;
	d->pend.unforwarded -= sent.unforwarded;
	d->pend.abandoned -= sent.abandoned;
	d->pend.damaged -= sent.damaged;
	if (d->pend.err == sent.err)
		d->pend.err = 0;
	atomic_store_explicit(&d->log_unreported, d->pend.dropped, memory_order_relaxed);
}

static int daemon_tick(void *ctx)
{
	struct board_daemon *d = ctx;
	int64_t now = basic_mono_ns();

	atomic_store_explicit(&d->heartbeat_ns, now, memory_order_relaxed);
	log_take(d);
	log_report(d, false);
	if (now >= d->health_next_ns) {
		health_tick(d, now);
		d->health_next_ns = now + (int64_t)d->cfg->health_interval_s * 1000000000;
	}

	if (!d->deterministic && upl_encoder_count(d->enc) &&
	    basic_mono_ns() - d->batch_open_ns >= (int64_t)d->cfg->batch_ms * 1000000)
		batch_flush(d);
	return stor_log_tick(d->log);
}

static void daemon_event(struct board_daemon *d, uint32_t code, int64_t arg)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	ev.event.code = code;
	ev.event.arg = arg;
	daemon_sink(d, &ev, 1);
}

/* ------------------------------------------------------------ RX threads */

/* A trace replayed as fast as possible is not a live bus: when the
   collector falls behind, pausing the file loses nothing, dropping would. */
static void rx_push_wait(struct board_daemon *d, struct acq_ring *ring, const struct acq_item *it)
{
	/* We are the only producer: once there is room it stays, so the push
	   below cannot fail (and count a drop that did not happen). */
	while (acq_ring_count(ring) >= ring->nslots) {
		if (atomic_load_explicit(&d->stop, memory_order_relaxed))
			return;
		usleep(100);
	}
	acq_ring_item_push(ring, it);
}

/* Stamp items with their bus and hand them to the ring: a full ring drops
   and counts (live buses), or waits (a file read as fast as possible). */
static void rx_push(struct board_daemon *d, struct rx_ctx *c, struct acq_item *items, int n)
{
	struct acq_ring *ring = &d->ring[c->bus];

	for (int i = 0; i < n; i++) {
		items[i].bus = (uint16_t)c->bus;
		if (c->backpressure)
			rx_push_wait(d, ring, &items[i]);
		else
			acq_ring_item_push(ring, &items[i]); /* full: counted by the ring */
	}
}

/* At stop, take what the kernel already holds for us (bounded): frames
   that reached the socket before SIGTERM were on the bus, so they are
   recorded, not left behind in a queue that is about to be closed. */
static void rx_drain(struct board_daemon *d, struct rx_ctx *c)
{
	struct acq_item items[RX_BATCH];
	int n;

	for (int k = 0; k < 1024 && (n = bus_dev_recv(d->dev[c->bus], items, RX_BATCH, 0)) > 0; k++) {
		rx_push(d, c, items, n);
		add_u64(&c->produced, (uint64_t)n);
	}
}

/* Sleep ns on CLOCK_MONOTONIC, waking every RX_TIMEOUT_MS to see a stop
   request (SIGTERM); false when stopping. */
static bool rx_sleep(struct board_daemon *d, int64_t ns)
{
	int64_t end = basic_mono_ns() + ns;

	for (;;) {
		int64_t now = basic_mono_ns(), until = now + RX_TIMEOUT_MS * MS_NS;
		struct timespec ts;

		if (atomic_load_explicit(&d->stop, memory_order_relaxed))
			return false;
		if (now >= end)
			return true;
		if (until > end)
			until = end;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

/* A wait from the upper half of step (xorshift64): never shorter than half
   the step, and buses or boards that lost their devices together (a USB
   hub, a power dip) do not all retry in step. */
static int64_t rx_jitter(struct rx_ctx *c, int64_t step)
{
	c->rng ^= c->rng << 13;
	c->rng ^= c->rng >> 7;
	c->rng ^= c->rng << 17;
	return step / 2 + (int64_t)(c->rng % (uint64_t)(step / 2 + 1));
}

static void rx_event(struct board_daemon *d, struct rx_ctx *c, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns() };

	ev.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	rx_push(d, c, &ev, 1);
}

static void rx_link_lost(struct rx_ctx *c, int cause, int64_t now)
{
	atomic_store_explicit(&c->cause, cause, memory_order_relaxed);
	atomic_store_explicit(&c->reopen_err, 0, memory_order_relaxed);
	atomic_store_explicit(&c->attempts, 0, memory_order_relaxed);
	atomic_store_explicit(&c->gone_ns, now, memory_order_relaxed);
	atomic_store_explicit(&c->link, BOARD_LINK_GONE, memory_order_relaxed);
	atomic_store_explicit(&c->losses, atomic_load_explicit(&c->losses, memory_order_relaxed) + 1,
	                      memory_order_release);
}

static void rx_link_back(struct rx_ctx *c, uint32_t attempts, int64_t now)
{
	atomic_store_explicit(&c->attempts, attempts, memory_order_relaxed);
	atomic_store_explicit(&c->back_ns, now, memory_order_relaxed);
	atomic_store_explicit(&c->link, BOARD_LINK_UP, memory_order_relaxed);
	atomic_store_explicit(&c->reopens, atomic_load_explicit(&c->reopens, memory_order_relaxed) + 1,
	                      memory_order_release);
}

/*
 * The device went away (recv said -ENODEV): say so (an event, the state
 * for stat and run), close it at once, and reopen it after a bounded,
 * jittered, exponential wait until it is back or we stop.  The thread
 * then sleeps all but a few microseconds per attempt.  A device that
 * delivered nothing and was up for less than the longest wait keeps its
 * step, so one that opens and fails again at once (a flapping hub, a file
 * that opens but does not read) is retried every few seconds, not ten
 * times a second.  Reopening allocates nothing: the drivers keep their
 * buffers across release().
 */
static void rx_gone(struct board_daemon *d, struct rx_ctx *c, bus_dev_t *dev)
{
	int64_t t0 = basic_mono_ns(), back = atomic_load_explicit(&c->back_ns, memory_order_relaxed), ms;
	uint32_t attempts = 0;
	int r;

	if (!back || t0 - back >= RX_BACKOFF_MAX_NS || c->backoff_ns < RX_BACKOFF_MIN_NS)
		c->backoff_ns = RX_BACKOFF_MIN_NS;
	rx_event(d, c, ACQ_EV_CAN_GONE, bus_dev_gone_cause(dev), 0);
	rx_link_lost(c, bus_dev_gone_cause(dev), t0);
	bus_dev_release(dev);
	do {
		if (!rx_sleep(d, rx_jitter(c, c->backoff_ns)))
			return; /* stopping: leave it closed */
		c->backoff_ns = c->backoff_ns * 2 < RX_BACKOFF_MAX_NS ? c->backoff_ns * 2 : RX_BACKOFF_MAX_NS;
		r = bus_dev_reopen(dev);
		atomic_store_explicit(&c->attempts, ++attempts, memory_order_relaxed);
		if (r < 0) {
			atomic_store_explicit(&c->reopen_err, r, memory_order_relaxed);
			atomic_store_explicit(&c->link, BOARD_LINK_REOPENING, memory_order_relaxed);
		}
	} while (r < 0);
	back = basic_mono_ns();
	rx_link_back(c, attempts, back);
	ms = (back - t0) / MS_NS;
	rx_event(d, c, ACQ_EV_CAN_BACK, attempts, ms < UINT32_MAX ? (uint32_t)ms : UINT32_MAX);
}

/* Modbus reconnects inside its driver; its events tell the presence. */
static void rx_follow_mb(struct rx_ctx *c, const struct acq_item *items, int n)
{
	for (int i = 0; i < n; i++) {
		if (items[i].kind != ACQ_ITEM_EVENT)
			continue;
		if (items[i].event.code == ACQ_EV_MB_DISCONNECT)
			rx_link_lost(c, (int)items[i].event.arg, basic_mono_ns());
		else if (items[i].event.code == ACQ_EV_MB_CONNECT &&
		         atomic_load_explicit(&c->link, memory_order_relaxed) != BOARD_LINK_UP)
			rx_link_back(c, (uint32_t)items[i].event.arg, basic_mono_ns());
	}
}

/* The realtime loop: wait for the bus, push, count.  No allocation, no
   logging, no locks; link checks (netlink) once a second.  No path
   through it spins: a gone device waits in rx_gone(), other errors pause. */
static void *rx_main(void *p)
{
	struct rx_ctx *c = p;
	struct board_daemon *d = c->d;
	bus_dev_t *dev = d->dev[c->bus];
	struct acq_item items[RX_BATCH];
	int64_t next_check = basic_mono_ns() + CHECK_PERIOD_NS;
	int64_t pause = RX_PAUSE_MIN_NS;

	while (!atomic_load_explicit(&d->stop, memory_order_relaxed)) {
		int n = bus_dev_recv(dev, items, RX_BATCH, RX_TIMEOUT_MS);
		if (n == -ENODATA) {
			atomic_store(&c->done, true);
			break;
		}
		if (n == -ENODEV) {
			rx_gone(d, c, dev);
			next_check = basic_mono_ns() + CHECK_PERIOD_NS;
			continue;
		}
		if (n < 0) {
			add_u64(&c->errors, 1);
			rx_sleep(d, pause);
			pause = pause * 2 < RX_PAUSE_MAX_NS ? pause * 2 : RX_PAUSE_MAX_NS;
			n = 0;
		} else {
			pause = RX_PAUSE_MIN_NS;
			if (n > 0) /* it delivers: the next loss starts the steps again */
				c->backoff_ns = RX_BACKOFF_MIN_NS;
		}
		if (c->follow_mb_events)
			rx_follow_mb(c, items, n);
		rx_push(d, c, items, n);
		if (c->stamp_latency && n > 0) {
			/* One clock read per batch: the newest frame's age is the
			   latency this wakeup added. */
			acq_latency_add(&c->latency, basic_realtime_ns() - items[n - 1].t_ns);
		}
		add_u64(&c->produced, (uint64_t)n);
		if (basic_mono_ns() >= next_check) {
			rx_push(d, c, items, bus_dev_check(dev, items, RX_BATCH));
			next_check += CHECK_PERIOD_NS;
		}
	}
	if (c->drain_at_stop)
		rx_drain(d, c);
	return NULL;
}

/* ---------------------------------------------------------- log replay */

/*
 * What of a recorded log goes back through the pipeline: raw CAN frames
 * (decoded again with the board's DBC, which may be newer than the one
 * used on the train), Modbus samples and bus events.  Samples decoded from
 * CAN and the old run's start/stop are left out: this run makes its own.
 */
static bool replay_wanted(const struct board_daemon *d, const struct acq_item *it)
{
	if (it->bus >= d->cfg->nbuses)
		return false;
	if (it->kind == ACQ_ITEM_SAMPLE)
		return d->cfg->buses[it->bus].kind == BUS_KIND_MODBUS;
	if (it->kind == ACQ_ITEM_EVENT)
		return it->event.code != ACQ_EV_START && it->event.code != ACQ_EV_STOP;
	return true;
}

/* Wait until the item's time has come at replay_speed.  In steps of at
   most RX_TIMEOUT_MS, so a stop (SIGTERM) is seen even across an hour's
   gap between two records. */
static void replay_pace(struct board_daemon *d, int64_t t_ns, int64_t *t_first, int64_t *mono0)
{
	struct timespec ts;
	int64_t due, now;

	if (d->replay_speed <= 0)
		return;
	if (!*mono0) {
		*t_first = t_ns;
		*mono0 = basic_mono_ns();
	}
	due = *mono0 + (int64_t)((double)(t_ns - *t_first) / d->replay_speed);
	while (!atomic_load_explicit(&d->stop, memory_order_relaxed) && (now = basic_mono_ns()) < due) {
		int64_t until = due - now > RX_TIMEOUT_MS * 1000000ll ? now + RX_TIMEOUT_MS * 1000000ll : due;
		ts.tv_sec = until / 1000000000;
		ts.tv_nsec = until % 1000000000;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
}

/* Replay is not realtime: a full ring means wait, never drop. */
static bool replay_push(struct board_daemon *d, const struct acq_item *it)
{
	/* One ring for every bus: the collector then sees the log's order,
	   whatever the threads' timing (ring 0's consumer takes any bus). */
	rx_push_wait(d, &d->ring[0], it);
	if (atomic_load_explicit(&d->stop, memory_order_relaxed))
		return false;
	add_u64(&d->rxc[it->bus].produced, 1);
	return true;
}

static int replay_batch(struct board_daemon *d, const struct stor_rec *rec, int64_t *t_first, int64_t *mono0)
{
	struct upl_batch_info info;
	struct acq_item it;
	upl_batch_t *b;
	int r;

	r = upl_batch_decode(rec->payload, rec->len, &b);
	if (r < 0) {
		/* Said and counted; the replay goes on with the next one. */
		board_log_undecodable_print("replay", d->replay_log, rec, r);
		add_u64(&d->replay_skipped, 1);
		return 0;
	}
	upl_batch_info(b, &info);
	for (size_t i = 0; i < info.count && r >= 0; i++) {
		upl_batch_item(b, i, &it);
		if (!replay_wanted(d, &it))
			continue;
		replay_pace(d, it.t_ns, t_first, mono0);
		it.seq = 0;
		if (!replay_push(d, &it))
			r = -ECANCELED;
	}
	upl_batch_free(b);
	return r;
}

static void *replay_main(void *p)
{
	struct board_daemon *d = p;
	stor_reader_t *rd;
	struct stor_rec rec;
	int64_t t_first = 0, mono0 = 0;
	int r;

	r = stor_reader_open(d->replay_log, &rd);
	while (r >= 0 && !atomic_load_explicit(&d->stop, memory_order_relaxed) &&
	       (r = stor_reader_next(rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			/* The reader has moved past it: say what it cost, go on. */
			if (board_log_fault_print("replay", d->replay_log, rd))
				add_u64(&d->replay_skipped, 1);
			r = 0;
			continue;
		}
		if (r > 0)
			r = replay_batch(d, &rec, &t_first, &mono0);
	}
	if (r < 0 && r != -ECANCELED)
		d->replay_error = r;
	stor_reader_free(rd);
	atomic_store(&d->replay_done, true);
	return NULL;
}

/* ------------------------------------------------------------ lifecycle */

/* A signal whose name or unit the channel table would cut: two long
   names would become one, so say so instead. */
static int dbc_check_names(const bus_dbc_t *dbc, const char *path, char *why, size_t whylen)
{
	const size_t name_max = sizeof(((struct board_channel *)0)->name) - 1;
	const size_t unit_max = sizeof(((struct board_channel *)0)->unit) - 1;

	for (unsigned i = 0; i < bus_dbc_signal_count(dbc); i++) {
		struct bus_dbc_signal_info si;
		size_t n, u;

		if (bus_dbc_signal_info(dbc, i, &si) < 0)
			return -EINVAL;
		n = strlen(si.name);
		u = si.unit ? strlen(si.unit) : 0;
		if (n > name_max || u > unit_max) {
			snprintf(why, whylen, "%s:%u: signal '%.40s%s': %s of %zu characters (at most %zu)", path, si.line,
			         si.name, n > 40 ? "..." : "", n > name_max ? "a name" : "a unit", n > name_max ? n : u,
			         n > name_max ? name_max : unit_max);
			return -ENAMETOOLONG;
		}
	}
	return 0;
}

int board_dbc_load(const struct board_cfg *cfg, size_t b, bus_dbc_t **ret_dbc, char *err, size_t errlen)
{
	const struct bus_cfg *bc;
	char why[BOARD_ERR_MAX];
	bus_dbc_t *dbc;
	int line, r;

	if (!cfg || b >= cfg->nbuses || cfg->buses[b].kind != BUS_KIND_CAN || !cfg->buses[b].can.dbc[0] ||
	    !ret_dbc || !err || !errlen)
		return -EINVAL;
	bc = &cfg->buses[b];
	line = cfg->dbc_line[b];
	r = bus_dbc_load(bc->can.dbc, &dbc, why, sizeof(why));
	if (r == 0 && (r = dbc_check_names(dbc, bc->can.dbc, why, sizeof(why))) < 0) {
		dbc = bus_dbc_free(dbc);
		r = -EBADMSG; /* reported like a syntax error: the DBC's line first */
	}
	if (r == -EBADMSG) {
		/* the DBC's own file:line first: that is where the fix goes */
		snprintf(err, errlen, "%s (the dbc of [can %s], %s:%d)", why, bc->name, cfg->path, line);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s:%d: [can %s]: dbc %s", cfg->path, line, bc->name, why);
		return r;
	}
	if (!bus_dbc_message_count(dbc)) {
		snprintf(err, errlen, "%s:%d: [can %s]: dbc %s: defines no message, so nothing would be decoded "
		         "(without 'dbc =' the bus logs raw frames only)", cfg->path, line, bc->name, bc->can.dbc);
		r = -EINVAL;
	} else if (bus_dbc_signal_count(dbc) > BOARD_BUS_CHANNELS_MAX) {
		/* channel ids are bus << 16 | signal index: more would collide
		   with the next bus's */
		snprintf(err, errlen, "%s:%d: [can %s]: %s: %u signals, but a bus has channel ids for %u "
		         "(split the DBC over buses)", cfg->path, line, bc->name, bc->can.dbc,
		         bus_dbc_signal_count(dbc), BOARD_BUS_CHANNELS_MAX);
		r = -E2BIG;
	}
	if (r < 0) {
		bus_dbc_free(dbc);
		return r;
	}
	*ret_dbc = dbc;
	return 0;
}

static int open_buses(struct board_daemon *d, char *err, size_t errlen)
{
	const struct board_cfg *cfg = d->cfg;
	int r;

	for (size_t b = 0; b < cfg->nbuses; b++) {
		const struct bus_cfg *bc = &cfg->buses[b];
		if (bc->kind == BUS_KIND_CAN && bc->can.dbc[0]) {
			r = board_dbc_load(cfg, b, &d->dbc[b], err, errlen);
			if (r < 0)
				return r;
			if (bus_dbc_decode_max(d->dbc[b]) > d->decoded_max)
				d->decoded_max = bus_dbc_decode_max(d->dbc[b]);
		}
		if (d->replay_log)
			r = 0;
		else
			r = d->absent_ok ? bus_dev_new_absent_ok(bc, &d->dev[b]) : bus_dev_new(bc, &d->dev[b]);
		if (r < 0) {
			snprintf(err, errlen, "%s: bus '%s': %s", cfg->path, bc->name, strerror(-r));
			return r;
		}
		d->ring_buf[b] = calloc(cfg->ring_slots, sizeof(struct acq_item));
		if (!d->ring_buf[b])
			return -ENOMEM;
		acq_ring_init(&d->ring[b], d->ring_buf[b], cfg->ring_slots, sizeof(struct acq_item));
		d->ring_ptr[b] = &d->ring[b];
		d->ring_bus[b] = (uint16_t)b;
		d->rxc[b].d = d;
		d->rxc[b].bus = b;
		/* A trace replayed as fast as possible keeps its old stamps:
		   their age says nothing about our latency. */
		d->rxc[b].stamp_latency = bc->kind == BUS_KIND_CAN && bc->can.driver != BUS_CAN_TRACE;
		d->rxc[b].backpressure = bc->kind == BUS_KIND_CAN && bc->can.driver == BUS_CAN_TRACE &&
		                         bc->can.trace_speed == 0;
		d->rxc[b].drain_at_stop = bc->kind == BUS_KIND_CAN && bc->can.driver != BUS_CAN_TRACE;
		d->rxc[b].follow_mb_events = bc->kind == BUS_KIND_MODBUS;
		d->rxc[b].backoff_ns = RX_BACKOFF_MIN_NS;
		/* Jitter differs per board (boot_id is random) and per bus. */
		memcpy(&d->rxc[b].rng, d->boot_id, sizeof(d->rxc[b].rng));
		d->rxc[b].rng ^= (b + 1) * 0x9e3779b97f4a7c15ull;
		d->rxc[b].rng |= 1;
	}
	return 0;
}

/*
 * The uplink cursor as retention may trust it: records below it count as
 * forwarded, and a full disk deletes forwarded segments first.  A damaged
 * cursor, or one past the end of the log (the record before it is not
 * there), counts nothing as forwarded: the forwarder sends the whole log
 * again then (upl_forward_stats.cursor_damage), and trusting it could
 * delete records that never left the vehicle.
 */
static uint64_t retention_cursor(const char *data_dir, const char *cursor_path)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	uint64_t seq;
	int r;

	if (upl_cursor_load(cursor_path, &seq) < 0)
		return 0;
	if (seq == 1 || stor_reader_open(data_dir, &rd) < 0)
		return seq == 1 ? 1 : 0;
	r = stor_reader_seek_seq(rd, seq - 1);
	while (r >= 0 && (r = stor_reader_next(rd, &rec)) == -EBADMSG)
		;
	stor_reader_free(rd);
	return r == 1 ? seq : 0;
}

const char *board_data_dir(const struct board_cfg *cfg, const char *override)
{
	if (override)
		return override;
	return cfg && cfg->storage.dir[0] ? cfg->storage.dir : "railmon-data";
}

/* "board.ini:12: " for a [storage] key, "board.ini: [storage] " if it was
   not in the file (a default). */
static void key_where(char *buf, size_t len, const struct board_cfg *cfg, int line)
{
	if (line)
		snprintf(buf, len, "%s:%d: ", cfg->path, line);
	else
		snprintf(buf, len, "%s: [storage] ", cfg->path);
}

int board_daemon_check_storage(const struct board_cfg *cfg, const char *dir, char *err, size_t errlen, char *warn,
                               size_t warnlen)
{
	const struct board_storage *st = &cfg->storage;
	char where[BUS_PATH_MAX + 32], fs[32], avail[32], seg[32], ret[32], most[32];
	struct stor_space sp;
	int r;

	err[0] = warn[0] = 0;
	r = stor_space_query(dir, &sp);
	if (r < 0) {
		/* Not a reason to refuse: the log's own open says what is wrong. */
		snprintf(warn, warnlen, "%s: cannot check the free space for the log: %s", dir, strerror(-r));
		return 0;
	}
	r = stor_space_check(&sp, st->segment_bytes, st->retention_bytes);
	board_size_text(sp.fs_bytes, fs, sizeof(fs));
	board_size_text(sp.free_bytes + sp.log_bytes, avail, sizeof(avail));
	board_size_text(st->segment_bytes, seg, sizeof(seg));
	board_size_text(st->retention_bytes, ret, sizeof(ret));
	if (r == -EFBIG) {
		key_where(where, sizeof(where), cfg, st->segment_line);
		snprintf(err, errlen, "%ssegment_size %s%s does not fit twice in the filesystem holding %s (%s): the segment "
		         "being written is preallocated whole and space comes back only by deleting a closed one; use at "
		         "most %s", where, seg, st->segment_line ? "" : " (the default)", dir, fs,
		         board_size_text((sp.fs_bytes / 2) & ~(uint64_t)0xfffff, most, sizeof(most)));
		return r;
	}
	if (r == -E2BIG) {
		key_where(where, sizeof(where), cfg, st->retention_line);
		snprintf(err, errlen, "%sretention_size %s is more than the filesystem holding %s can hold (%s): it would "
		         "fill up before retention deletes anything, and then new records are refused", where, ret, dir, fs);
		return r;
	}
	if (r & STOR_SPACE_LOW_SEGMENT)
		snprintf(warn, warnlen, "%s: only %s free for the log (of %s), less than one segment of %s: it is written "
		         "without preallocation and records that do not fit are refused (counted and said)", dir, avail,
		         fs, seg);
	else if (r & STOR_SPACE_LOW_RETENTION)
		snprintf(warn, warnlen, "%s: only %s free for the log (of %s), less than retention_size %s: the disk will "
		         "fill before retention deletes anything, and then records not yet forwarded are kept and new ones "
		         "refused", dir, avail, fs, ret);
	return 0;
}

static int open_log(struct board_daemon *d, char *err, size_t errlen)
{
	struct stor_log_cfg lc = {
		.dir = d->data_dir,
		.vehicle = d->cfg->vehicle,
		.config_hash = d->cfg->hash,
		.segment_bytes = d->cfg->storage.segment_bytes,
		.sync_window_ms = d->cfg->storage.sync_window_ms,
		.retention_bytes = d->cfg->storage.retention_bytes,
		.retention_age_s = d->cfg->storage.retention_age_s,
	};
	int r;

	/* Sizes the filesystem can never hold are refused here, before a log
	   that would store nothing exists. */
	r = board_daemon_check_storage(d->cfg, d->data_dir, err, errlen, d->log_warn, sizeof(d->log_warn));
	if (r < 0)
		return r;
	memcpy(lc.boot_id, d->boot_id, sizeof(lc.boot_id));
	if (d->cfg->uplink.enabled) {
		/* Retention at open must know what already went off-board. */
		char cursor[BUS_PATH_MAX + 32];
		snprintf(cursor, sizeof(cursor), "%s/uplink.cursor", d->data_dir);
		lc.forwarded_seq = retention_cursor(d->data_dir, cursor);
	}
	r = stor_log_open(&lc, &d->log);
	if (r < 0) {
		snprintf(err, errlen, "%s: cannot open the log: %s", d->data_dir, strerror(-r));
		return r;
	}
	/* What recovery found is said at start and becomes an event. */
	log_take(d);
	if (d->pend.damaged) {
		size_t n = strlen(d->log_warn);
		snprintf(d->log_warn + n, sizeof(d->log_warn) - n, "%s%s: %" PRIu64 " damaged segment file(s) or spot(s) "
		         "found when opening the log: set aside as *.damaged or skipped", n ? "; " : "", d->data_dir,
		         d->pend.damaged);
	}
	return 0;
}

const char *board_daemon_log_warning(const struct board_daemon *d)
{
	return d ? d->log_warn : "";
}

/* The forwarder's view of the log (uplink/ cannot see storage/). */
static int fwd_seek(void *ctx, uint64_t seq)
{
	return stor_reader_seek_seq(ctx, seq);
}

static int fwd_seek_time(void *ctx, int64_t t_ns)
{
	return stor_reader_seek_time(ctx, t_ns);
}

static int fwd_next(void *ctx, struct upl_rec *ret)
{
	struct stor_rec r;
	int k = stor_reader_next(ctx, &r);

	if (k == 1)
		*ret = (struct upl_rec){ r.first_seq, r.count, r.t_last_ns, r.payload, r.len };
	return k;
}

/* Forwarder thread (normal priority) -> event ring: a single producer. */
static void fwd_event(void *ctx, enum upl_fwd_event ev, int err)
{
	struct board_daemon *d = ctx;
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event.code = ev == UPL_FWD_CONNECTED ? ACQ_EV_UPLINK_CONNECT : ACQ_EV_UPLINK_FAULT;
	it.event.arg = err;
	it.event.detail = (uint32_t)ev;
	acq_ring_item_push(&d->ev_ring, &it); /* full: counted, reported as an overrun */
}

static int open_uplink(struct board_daemon *d, char *err, size_t errlen)
{
	const struct board_uplink *u = &d->cfg->uplink;
	struct upl_forward_cfg fc = { 0 };
	int r;

	if (!u->enabled || d->replay_log)
		return 0;
	r = stor_reader_open(d->data_dir, &d->fwd_reader);
	if (r < 0) {
		snprintf(err, errlen, "%s: uplink cannot read the log: %s", d->data_dir, strerror(-r));
		return r;
	}
	snprintf(d->fwd_client, sizeof(d->fwd_client), "railmon-%s", d->cfg->vehicle);
	snprintf(d->fwd_cursor, sizeof(d->fwd_cursor), "%s/uplink.cursor", d->data_dir);
	fc.host = u->host;
	fc.port = u->port;
	fc.client_id = d->fwd_client;
	fc.vehicle = d->cfg->vehicle;
	fc.cursor_path = d->fwd_cursor;
	fc.log_next_seq = stor_log_next_seq(d->log);
	fc.source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
	                                 .ctx = d->fwd_reader };
	if (u->live_ahead) {
		/* A second reader follows the head of the log, so live records
		   overtake a backlog that is still draining after a tunnel. */
		r = stor_reader_open(d->data_dir, &d->fwd_live_reader);
		if (r < 0) {
			snprintf(err, errlen, "%s: uplink cannot read the log: %s", d->data_dir, strerror(-r));
			return r;
		}
		fc.live_source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
		                                      .ctx = d->fwd_live_reader };
	}
	fc.publish_events = true;
	fc.use_tls = u->tls;
	fc.tls = (struct upl_tls_cfg){ u->ca_file[0] ? u->ca_file : NULL, u->cert_file[0] ? u->cert_file : NULL,
	                               u->key_file[0] ? u->key_file : NULL, u->tls_insecure };
	fc.username = u->username[0] ? u->username : NULL;
	fc.password = u->password[0] ? u->password : NULL;
	fc.inflight = u->inflight;
	fc.keepalive_s = u->keepalive_s;
	fc.rate_bytes_s = u->rate_bytes_s;
	fc.cursor_interval_ms = 1000;
	fc.on_event = fwd_event;
	fc.event_ctx = d;
	r = upl_forwarder_new(&fc, &d->fwd);
	if (r < 0)
		snprintf(err, errlen, "%s: [uplink]: %s", d->cfg->path, strerror(-r));
	return r;
}

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

int board_daemon_new(const struct board_cfg *cfg, const struct board_daemon_opts *opts,
                     struct board_daemon **ret, char *err, size_t errlen)
{
	struct board_daemon *d;
	struct upl_batch_meta meta = { 0 };
	struct acq_collector_cfg cc = { 0 };
	int r;

	if (!cfg || !ret || !err || !errlen)
		return -EINVAL;
	err[0] = 0;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cfg = cfg;
	pthread_mutex_init(&d->health_lock, NULL);
	d->health_next_ns = basic_mono_ns() + (int64_t)cfg->health_interval_s * 1000000000;
	d->lock_memory = opts && opts->lock_memory;
	d->reloaded_hash = opts ? opts->reloaded_hash : 0;
	d->replay_log = opts ? opts->replay_log : NULL;
	d->replay_speed = opts ? opts->replay_speed : 0;
	d->absent_ok = opts && opts->absent_ok;
	d->deterministic = daemon_is_replay(cfg, d->replay_log);
	snprintf(d->data_dir, sizeof(d->data_dir), "%s", board_data_dir(cfg, opts ? opts->data_dir : NULL));
	if (getrandom(d->boot_id, sizeof(d->boot_id), 0) != sizeof(d->boot_id)) {
		r = -errno;
		goto fail;
	}
	d->lat_snap = calloc(1, sizeof(*d->lat_snap));
	r = d->lat_snap ? open_buses(d, err, errlen) : -ENOMEM;
	if (r >= 0) {
		/* Sized by the DBCs just loaded: a frame's samples all fit, so
		   none is dropped (a fixed 256 once lost the rest of a frame). */
		d->decoded = calloc(d->decoded_max ? d->decoded_max : 1, sizeof(*d->decoded));
		r = d->decoded ? build_channels(d) : -ENOMEM;
	}
	if (r >= 0)
		r = open_log(d, err, errlen);
	if (r >= 0)
		r = open_uplink(d, err, errlen);
	if (r < 0)
		goto fail;
	meta.vehicle = cfg->vehicle;
	meta.config_hash = cfg->hash;
	memcpy(meta.boot_id, d->boot_id, sizeof(meta.boot_id));
	/* Every Batch names its log, so the ground can tell a new log
	   (seq from 1 again) from records it already has. */
	_Static_assert(UPL_LOG_ID_LEN == STOR_LOG_ID_BYTES, "one log id size");
	stor_log_id(d->log, meta.log_id);
	r = upl_encoder_new(&meta, cfg->batch_max, &d->enc);
	/* Sizes the encoder for the whole dictionary now, so the collector
	   never allocates for it; batch_flush() sets it for real. */
	if (r >= 0)
		r = upl_encoder_set_channels(d->enc, d->upl_channels, d->nchannels);
	if (r >= 0)
		r = upl_encoder_set_channels(d->enc, NULL, 0);
	if (r < 0)
		goto fail;
	acq_ring_init(&d->ev_ring, d->ev_buf, sizeof(d->ev_buf) / sizeof(d->ev_buf[0]), sizeof(struct acq_item));
	d->ring_ptr[cfg->nbuses] = &d->ev_ring;
	d->ring_bus[cfg->nbuses] = ACQ_SOURCE_DAEMON;
	cc.rings = d->ring_ptr;
	cc.nrings = cfg->nbuses + 1;
	cc.ring_bus = d->ring_bus;
	cc.sink = daemon_sink;
	cc.tick = daemon_tick;
	cc.ctx = d;
	cc.tick_ms = 20;
	r = acq_collector_new(&cc, &d->col);
	if (r < 0)
		goto fail;
	d->first_seq = stor_log_next_seq(d->log);
	atomic_store(&d->next_seq, d->first_seq);
	*ret = d;
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "%s", strerror(-r));
	board_daemon_free(d);
	return r;
}

int board_daemon_start(struct board_daemon *d, char *warn, size_t warnlen)
{
	int r, degraded, first_degraded = 0;

	if (!d || d->running || d->stopped)
		return -EINVAL;
	if (warn && warnlen)
		warn[0] = 0;
	if (d->lock_memory && (r = acq_rt_lock_memory()) < 0 && warn)
		snprintf(warn, warnlen, "mlockall: %s: pages may fault on realtime paths", strerror(-r));
	daemon_event(d, ACQ_EV_START, getpid());
	if (d->reloaded_hash)
		daemon_event(d, ACQ_EV_CONFIG_RELOAD, (int64_t)(d->reloaded_hash >> 1));
	atomic_store(&d->heartbeat_ns, basic_mono_ns());
	atomic_store(&d->stop, false);
	r = acq_collector_start(d->col, &(struct acq_thread_cfg){ .name = "collector", .cpu = d->cfg->collector_cpu });
	if (r < 0)
		return r;
	d->running = true;
	if (d->fwd && (r = upl_forwarder_start(d->fwd)) < 0) {
		board_daemon_stop(d);
		return r;
	}
	if (d->replay_log) {
		r = acq_thread_start(&(struct acq_thread_cfg){ .name = "replay", .cpu = -1 }, replay_main, d,
		                     &d->replay, NULL);
		if (r < 0)
			board_daemon_stop(d);
		return r;
	}
	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		struct acq_thread_cfg tc = { .priority = d->cfg->rt_priority, .cpu = d->cfg->bus_cpu[b] };
		char name[16];
		snprintf(name, sizeof(name), "rx-%s", d->cfg->buses[b].name);
		tc.name = name;
		r = acq_thread_start(&tc, rx_main, &d->rxc[b], &d->rx[b], &degraded);
		if (r < 0) {
			board_daemon_stop(d);
			return r;
		}
		if (degraded && !first_degraded)
			first_degraded = degraded;
	}
	if (first_degraded && warn && !warn[0])
		snprintf(warn, warnlen, "realtime scheduling refused (%s): bus threads run at normal priority",
		         strerror(-first_degraded));
	return 0;
}

int board_daemon_stop(struct board_daemon *d)
{
	if (!d)
		return -EINVAL;
	if (!d->running)
		return 0;
	/* Sources first, so the collector's final drain sees everything. */
	atomic_store(&d->stop, true);
	for (size_t b = 0; b < d->cfg->nbuses; b++)
		d->rx[b] = acq_thread_join(d->rx[b]);
	d->replay = acq_thread_join(d->replay);
	acq_collector_stop(d->col);
	/* What the log refused is said before the STOP event if it can be. */
	log_take(d);
	log_report(d, true);
	/* The final counters go into the log too, so `railmon stat` on the
	   log shows what the run's summary says. */
	health_tick(d, basic_mono_ns());
	daemon_event(d, ACQ_EV_STOP, (int64_t)(atomic_load(&d->records) + upl_encoder_count(d->enc) + 1));
	batch_flush(d);
	stor_log_sync(d->log);
	/* The last Batch may have been refused too: one more try, so the
	   counter and the log's events agree whenever the disk allows. */
	log_take(d);
	log_report(d, true);
	/* Last: the final Batch is on disk for it.  While the broker is there,
	   give it a moment to take what is left, so a clean stop leaves no
	   backlog behind; offline, the cursor file keeps the place. */
	if (d->fwd) {
		bool connected = false;
		board_daemon_uplink(d, NULL, &connected, NULL);
		if (connected)
			upl_forwarder_wait_cursor(d->fwd, stor_log_next_seq(d->log), 2000);
	}
	upl_forwarder_stop(d->fwd);
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
	upl_forwarder_free(d->fwd);
	stor_reader_free(d->fwd_reader);
	stor_reader_free(d->fwd_live_reader);
	upl_encoder_free(d->enc);
	stor_log_free(d->log);
	for (size_t b = 0; b < BOARD_BUSES_MAX; b++) {
		bus_dev_free(d->dev[b]);
		bus_dbc_free(d->dbc[b]);
		free(d->ring_buf[b]);
	}
	free(d->channels);
	free(d->upl_channels);
	free(d->live);
	free(d->decoded);
	free(d->lat_snap);
	pthread_mutex_destroy(&d->health_lock);
	free(d);
	return NULL;
}

bool board_daemon_sources_done(const struct board_daemon *d)
{
	if (!d)
		return true;
	if (d->replay_log)
		return atomic_load(&((struct board_daemon *)d)->replay_done);
	for (size_t b = 0; b < d->cfg->nbuses; b++)
		if (!atomic_load(&((struct board_daemon *)d)->rxc[b].done))
			return false;
	return true;
}

size_t board_daemon_channels(const struct board_daemon *d, const struct board_channel **ret)
{
	if (!d)
		return 0;
	if (ret)
		*ret = d->channels;
	return d->nchannels;
}

int board_daemon_live(const struct board_daemon *d, size_t i, struct board_live *ret)
{
	struct live_slot *s;
	uint64_t bits;

	if (!d || !ret || i >= d->nchannels)
		return -EINVAL;
	s = &d->live[i];
	ret->t_ns = atomic_load_explicit(&s->t_ns, memory_order_acquire);
	bits = atomic_load_explicit(&s->bits, memory_order_relaxed);
	memcpy(&ret->value, &bits, sizeof(bits));
	ret->quality = atomic_load_explicit(&s->quality, memory_order_relaxed);
	return 0;
}

int board_daemon_stats(const struct board_daemon *d, struct board_daemon_stats *ret)
{
	struct board_daemon *m = (struct board_daemon *)d;

	if (!d || !ret)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->items = atomic_load(&m->items);
	ret->records = atomic_load(&m->records);
	ret->batches = atomic_load(&m->batches);
	ret->log_dropped = atomic_load(&m->log_dropped);
	ret->decode_samples = atomic_load(&m->decode_samples);
	ret->first_seq = d->first_seq;
	ret->next_seq = atomic_load(&m->next_seq);
	ret->log_unreported = atomic_load(&m->log_unreported);
	ret->log_error = atomic_load(&m->log_error);
	ret->replay_skipped = atomic_load(&m->replay_skipped);
	/* Written by the replay thread before it sets replay_done. */
	ret->replay_error = atomic_load(&m->replay_done) ? d->replay_error : 0;
	for (size_t b = 0; b < d->cfg->nbuses; b++) {
		ret->ring_drops += acq_ring_drops(&d->ring[b]);
		ret->bus_rx[b] = atomic_load(&m->rxc[b].produced);
		ret->bus_errors[b] = bus_errors(d, b);
	}
	return 0;
}

int board_daemon_uplink_stats(struct board_daemon *d, struct upl_forward_stats *ret_stats)
{
	if (!d || !ret_stats)
		return -EINVAL;
	return d->fwd ? upl_forwarder_stats(d->fwd, ret_stats) : -ENOENT;
}

int board_daemon_uplink(struct board_daemon *d, uint64_t *ret_cursor, bool *ret_connected, bool *ret_insecure)
{
	struct upl_forward_stats st;
	int r;

	if (!d || !d->fwd)
		return -ENOENT;
	r = upl_forwarder_stats(d->fwd, &st);
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
	size_t n;

	if (!d || !ret)
		return 0;
	pthread_mutex_lock(&d->health_lock);
	n = d->nhealth < max ? d->nhealth : max;
	memcpy(ret, d->health, n * sizeof(*ret));
	pthread_mutex_unlock(&d->health_lock);
	return n;
}

int board_daemon_bus_link(const struct board_daemon *d, size_t b, struct board_bus_link *ret)
{
	struct rx_ctx *c;

	if (!d || !ret || b >= d->cfg->nbuses)
		return -EINVAL;
	c = (struct rx_ctx *)&d->rxc[b];
	ret->losses = atomic_load_explicit(&c->losses, memory_order_acquire);
	ret->reopens = atomic_load_explicit(&c->reopens, memory_order_acquire);
	ret->state = atomic_load_explicit(&c->link, memory_order_relaxed);
	ret->cause = atomic_load_explicit(&c->cause, memory_order_relaxed);
	ret->reopen_err = atomic_load_explicit(&c->reopen_err, memory_order_relaxed);
	ret->attempts = atomic_load_explicit(&c->attempts, memory_order_relaxed);
	ret->gone_ns = atomic_load_explicit(&c->gone_ns, memory_order_relaxed);
	ret->back_ns = atomic_load_explicit(&c->back_ns, memory_order_relaxed);
	return 0;
}

const char *board_link_name(enum board_link state)
{
	static const char *const names[BOARD_LINK_MAX] = { "up", "gone", "reopening" };

	return state < BOARD_LINK_MAX ? names[state] : "?";
}

int64_t board_daemon_heartbeat(const struct board_daemon *d)
{
	return d ? atomic_load_explicit(&((struct board_daemon *)d)->heartbeat_ns, memory_order_relaxed) : 0;
}

const char *board_daemon_data_dir(const struct board_daemon *d)
{
	return d ? d->data_dir : NULL;
}

const char *board_daemon_value_label(const struct board_daemon *d, size_t i, double value)
{
	const char *label;
	size_t b;

	if (!d || i >= d->nchannels)
		return NULL;
	b = d->channels[i].bus;
	if (!d->dbc[b] || bus_dbc_value_label(d->dbc[b], d->channels[i].id & 0xffff, value, &label) < 0)
		return NULL;
	return label;
}
