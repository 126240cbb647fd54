/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-backlog.c - a train comes out of a depot with one hour of
 * records on flash.
 *
 * One hour of realistic data (2 CAN buses at 300 frames/s each plus
 * 50 samples/s, Batches of 100 ms) is written to the flash log
 * (storage/), then the forwarder, reading it with a stor_reader,
 * drains it to a real mosquitto under a rate cap while acquisition keeps
 * running: a producer thread pushes into an SPSC ring at 10 kHz, paced
 * with clock_nanosleep(TIMER_ABSTIME), and a collector thread drains the
 * ring, encodes and appends live Batches to the same log (the reader
 * follows it).
 *
 * Live records go ahead of the backlog through a second reader
 * (cfg.live_source): halfway through the drain, recv already has records
 * newer than the whole backlog.
 *
 * Asserts: the backlog drains at >= 10x real time, the cap is respected,
 * 0 ring overruns while it drains, live data overtakes the backlog, and
 * recv holds every record exactly once (0 duplicates where live and backlog met).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acquisition/acq-ring.h"
#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"
#include "stor-source.h"

ACQ_RING_DEFINE(item, struct acq_item)

#define HOUR_S 3600
#define REC_PER_S 650            /* 2 x 300 CAN frames + 50 samples */
#define BATCH_ITEMS 65           /* 100 ms of records */
#define RATE_CAP (3u << 20)      /* backlog bytes/s */
#define RING_SLOTS 8192        /* 0.8 s of items at 10 kHz */
#define ACQ_HZ 10000

struct acq {
	struct acq_ring ring;
	struct acq_item *slots;
	stor_log_t *log;
	struct gen g;
	atomic_bool stop;
	uint64_t pushed;
	size_t peak;             /* highest ring fill the collector saw */
	pthread_t producer, collector;
};

static void ts_add(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000;
	}
}

/* The realtime side: wake every ms, push 10 items, never block. */
static void *producer_main(void *arg)
{
	struct acq *a = arg;
	struct timespec next;
	struct acq_item it;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!atomic_load(&a->stop)) {
		ts_add(&next, 1000000);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		for (int i = 0; i < ACQ_HZ / 1000; i++) {
			gen_item(&a->g, basic_realtime_ns(), &it);
			acq_ring_item_push(&a->ring, &it);
			a->pushed++;
		}
	}
	return NULL;
}

/* Finish the queued records as one Batch and append it to the log. */
static uint32_t append(stor_log_t *log, struct gen *g, size_t n, int64_t t_first, int64_t t_last)
{
	struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .t_first_ns = t_first,
	                        .t_last_ns = t_last };
	const uint8_t *out;
	size_t len;
	int r;

	r = rec_encoder_finish(g->enc, rec.first_seq, &out, &len);
	CHECK(r == (int)n);
	rec.count = (uint32_t)r;
	rec.payload = out;
	rec.len = (uint32_t)len;
	CHECK(stor_log_append(log, &rec) == 0);
	return rec.len;
}

/* The collector: every 10 ms drain the ring, encode, append to the log. */
static void *collector_main(void *arg)
{
	struct acq *a = arg;
	struct acq_item buf[256];
	struct timespec next;
	bool last = false;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!last) {
		size_t n;

		last = atomic_load(&a->stop);
		ts_add(&next, 10000000);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		if (acq_ring_count(&a->ring) > a->peak)
			a->peak = acq_ring_count(&a->ring);
		while ((n = acq_ring_item_pop_bulk(&a->ring, buf, 256)) > 0) {
			for (size_t i = 0; i < n; i++)
				CHECK(rec_encoder_add(a->g.enc, &buf[i]) == 0);
			append(a->log, &a->g, n, buf[0].t_ns, buf[n - 1].t_ns);
		}
		/* The log's own sync window decides durability, as in the daemon. */
		CHECK(stor_log_tick(a->log) == 0);
	}
	return NULL;
}

/* Delivery delay of live Batches (first_seq >= live_from), by recv. */
struct live_watch {
	uint64_t live_from;
	int64_t max_delay_ns;
	uint64_t batches;
	uint64_t backlog_batches, backlog_historical, live_historical;
};

static int watch_batch(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *p, size_t len,
                       void **log_ctx)
{
	struct live_watch *w = ctx;
	int64_t d = basic_realtime_ns() - info->t0_ns;

	/* Runs on recv's thread only; read after it stopped. */
	if (info->first_seq >= w->live_from) {
		w->batches++;
		w->live_historical += info->historical;
		if (d > w->max_delay_ns)
			w->max_delay_ns = d;
	} else {
		/* the hour of backlog is older than the live window: flagged */
		w->backlog_batches++;
		w->backlog_historical += info->historical;
	}
	return 0;
}

int main(void)
{
	struct broker b;
	stor_log_t *log;
	stor_reader_t *reader;
	struct gen hist;
	struct acq a = { 0 };
	struct fx_recv rt;
	struct live_watch watch = { 0 };
	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .client_id = "railmon-backlog-recv",
	                           .on_batch = watch_batch, .ctx = &watch };
	struct grd_ledger_vehicle half;
	stor_reader_t *live_reader;
	struct upl_forward_cfg fc;
	struct upl_forward_stats st;
	struct fx_gnd_stats rs;
	upl_forwarder_t *f;
	char cursor[256], dir[256];
	uint64_t backlog_end, backlog_bytes, total;
	int64_t t0, gen_ns, drain_ns;
	double ratio, rate;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	snprintf(dir, sizeof(dir), "%s/log", b.dir);
	struct stor_log_cfg lc = { .dir = dir, .vehicle = "tram7", .sync_window_ms = 200 };
	CHECK(stor_log_open(&lc, &log) == 0);

	/* One hour that ended two minutes ago: all of it is backlog. */
	t0 = basic_mono_ns();
	CHECK(gen_init(&hist, "tram7", BATCH_ITEMS, basic_realtime_ns() - (HOUR_S + 120) * INT64_C(1000000000)) == 0);
	backlog_bytes = 0;
	for (int i = 0; i < HOUR_S * REC_PER_S / BATCH_ITEMS; i++) {
		int64_t first = hist.t_ns;

		for (int k = 0; k < BATCH_ITEMS; k++) {
			struct acq_item it;

			gen_item(&hist, hist.t_ns, &it);
			hist.t_ns += 1000000000 / REC_PER_S;
			CHECK(rec_encoder_add(hist.enc, &it) == 0);
		}
		backlog_bytes += append(log, &hist, BATCH_ITEMS, first, hist.t_ns - 1000000000 / REC_PER_S);
	}
	CHECK(stor_log_sync(log) == 0);
	gen_ns = basic_mono_ns() - t0;
	backlog_end = stor_log_next_seq(log);
	printf("backlog: %llu records, %d Batches, %.1f MB in the flash log, written in %.2f s\n",
	       (unsigned long long)(backlog_end - 1), HOUR_S * REC_PER_S / BATCH_ITEMS,
	       backlog_bytes / 1e6, gen_ns / 1e9);

	watch.live_from = backlog_end;
	rc.port = b.port;
	fx_recv_start(&rt, &rc);

	/* Acquisition runs from before the link comes back until after. */
	a.slots = calloc(RING_SLOTS, sizeof(*a.slots));
	CHECK(a.slots);
	CHECK(acq_ring_init(&a.ring, a.slots, RING_SLOTS, sizeof(struct acq_item)) == 0);
	a.log = log;
	CHECK(gen_init(&a.g, "tram7", 256, basic_realtime_ns()) == 0);
	CHECK(pthread_create(&a.collector, NULL, collector_main, &a) == 0);
	CHECK(pthread_create(&a.producer, NULL, producer_main, &a) == 0);

	snprintf(cursor, sizeof(cursor), "%s/backlog.cursor", b.dir);
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = b.port, .client_id = "railmon-backlog-fwd",
		.vehicle = "tram7", .cursor_path = cursor,
		.inflight = 32, .rate_bytes_s = RATE_CAP, .cursor_interval_ms = 1000,
		.idle_poll_ms = 20,
	};
	CHECK(stor_reader_open(dir, &reader) == 0);
	CHECK(stor_reader_open(dir, &live_reader) == 0);
	fc.source = stor_source(reader);
	fc.live_source = stor_source(live_reader);
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	t0 = basic_mono_ns();
	CHECK(upl_forwarder_start(f) == 0);
	/* Halfway through the backlog, live records are already on the ground. */
	CHECK(upl_forwarder_wait_cursor(f, backlog_end / 2, 50000) == 0);
	CHECK(fx_gnd_vehicle(rt.r, "tram7", &half) == 0);
	printf("half the backlog sent: recv has seq up to %llu, the backlog ends at %llu\n",
	       (unsigned long long)half.next_seq - 1, (unsigned long long)backlog_end - 1);
	CHECK(half.next_seq > backlog_end);
	CHECK(upl_forwarder_wait_cursor(f, backlog_end, 50000) == 0);
	drain_ns = basic_mono_ns() - t0;

	atomic_store(&a.stop, true);
	pthread_join(a.producer, NULL);
	pthread_join(a.collector, NULL);
	{
		struct acq_item left;

		/* The collector's last pass emptied the ring: nothing was left behind. */
		CHECK(!acq_ring_item_pop(&a.ring, &left));
	}
	CHECK(stor_log_sync(log) == 0);
	total = stor_log_next_seq(log) - 1;
	CHECK(upl_forwarder_wait_cursor(f, total + 1, 20000) == 0);
	CHECK(fx_gnd_wait_records(rt.r, total, 20000) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(fx_gnd_stats(rt.r, &rs) == 0);

	ratio = HOUR_S / (drain_ns / 1e9);
	rate = backlog_bytes / (drain_ns / 1e9);
	printf("drain: %.2f s for 1 h of records = %.0fx real time, %.2f MB/s (cap %.2f MB/s)\n",
	       drain_ns / 1e9, ratio, rate / 1e6, RATE_CAP / 1e6);
	printf("acquisition while draining: %llu items pushed, %llu ring overruns, peak fill %zu/%d\n",
	       (unsigned long long)a.pushed, (unsigned long long)acq_ring_drops(&a.ring), a.peak,
	       RING_SLOTS);
	printf("recv: %llu records, %llu duplicates, %llu missing\n",
	       (unsigned long long)rs.records, (unsigned long long)rs.duplicates,
	       (unsigned long long)rs.missing);
	CHECK(ratio >= 10);
	/* The cap holds: a quarter-second burst is all it may run ahead. */
	CHECK(backlog_bytes <= RATE_CAP * (drain_ns / 1e9 + 0.25) * 1.02);
	CHECK(acq_ring_drops(&a.ring) == 0 && a.pushed > 0);
	printf("live ahead of the backlog: %llu messages, %llu backlog records skipped, "
	       "live delay max %.2f s over %llu live Batches\n",
	       (unsigned long long)st.live_ahead, (unsigned long long)st.skipped,
	       watch.max_delay_ns / 1e9, (unsigned long long)watch.batches);
	/* Exactly once, so exactly 0 duplicates: where the backlog reader
	   meets the live one, an acknowledged live Batch is skipped and one
	   still in flight is taken over, not published again (the uplink-live
	   test forces both cases); the live Batches are consecutive, so their
	   acknowledged ranges merge into one and never overflow the 256 the
	   forwarder remembers; and without a reconnect (resent == 0 below)
	   nothing is published twice. */
	CHECK(rs.records == total && rs.missing == 0 && rs.duplicates == 0);
	CHECK(st.resent == 0 && st.live_ahead > 0 && st.skipped > 0);
	/* Batch.historical: set on backlog Batches older than the live window
	   (all but the hour's last minute), never on live ones. */
	printf("historical flag: %llu of %llu backlog Batches, %llu of %llu live ones\n",
	       (unsigned long long)watch.backlog_historical, (unsigned long long)watch.backlog_batches,
	       (unsigned long long)watch.live_historical, (unsigned long long)watch.batches);
	CHECK(watch.backlog_historical > 0 &&
	      watch.backlog_historical >= watch.backlog_batches - watch.backlog_batches / 20);
	CHECK(watch.live_historical == 0);

	upl_forwarder_free(f);
	stor_reader_free(reader);
	stor_reader_free(live_reader);
	fx_recv_stop(&rt);
	gen_fini(&a.g);
	gen_fini(&hist);
	free(a.slots);
	stor_log_free(log);
	broker_fini(&b);
	return 0;
}
