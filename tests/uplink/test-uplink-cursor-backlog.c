/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-cursor-backlog.c - the forwarder's cursor file while a
 * backlog goes, against a real mosquitto (the uplink fixture's).
 *
 * A kill -9 sends again what the broker acknowledged and the cursor file
 * does not yet say.  A backlog (after an outage, a restart) goes at the
 * broker's speed, so a cursor written only on the board's 1 s timer
 * lagged by up to a second of it: here the whole backlog.  Here: 40,000
 * records in the log at the start, a live train appending while it goes;
 * at every look while the backlog is acknowledged, the file lags what
 * the stats say acknowledged by less than 2048 records (fwd-window.c's
 * CURSOR_EVERY_RECORDS).  Then a forwarder started on the same cursor
 * file (the restart after a kill -9 there) starts at the file's seq, not
 * before it.  And a cursor file that cannot be written is tried once a
 * second, not at every PUBACK once 2048 records are acknowledged.
 * The same as tests/sparkplug's spb-cursor for the Sparkplug cursor.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/clock.h"
#include "fixture.h"
#include "uplink/cursor.h"
#include "uplink/forward.h"

#define BACKLOG_BATCHES 1000
#define ITEMS 40
#define LAG_MAX 2048 /* uplink/fwd-window.c's CURSOR_EVERY_RECORDS */

struct live {
	struct gen *g;
	struct memlog *log;
	atomic_bool stop;
};

/* a live train: a Batch every 2 ms while the backlog goes */
static void *append(void *arg)
{
	struct live *lv = arg;

	while (!atomic_load(&lv->stop)) {
		CHECK(gen_batch(lv->g, lv->log, ITEMS, 1000000) == 0);
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 2000000);
	}
	return NULL;
}

/* as pipeline/forwarder.c sets it up: the cursor on a 1 s timer */
static struct upl_forward_cfg fwd_cfg(int port, const char *vehicle, const char *cursor, struct memlog *log)
{
	return (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = port, .client_id = vehicle, .vehicle = vehicle,
		.cursor_path = cursor, .source = memlog_source(log), .log_next_seq = log->next_seq,
		.inflight = 32, .idle_poll_ms = 5, .backoff_min_ms = 50, .backoff_max_ms = 200,
		.cursor_interval_ms = 1000,
	};
}

int main(void)
{
	struct broker b;
	struct memlog log;
	struct gen g;
	char path[200];
	upl_forwarder_t *f;
	struct upl_forward_stats st;
	uint64_t end, on_disk, lag_max = 0, looks = 0;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	snprintf(path, sizeof(path), "%s/uplink-cursor", b.dir);
	memlog_init(&log);
	/* times of 2024: the backlog is older than the live window */
	CHECK(gen_init(&g, "T-cursor", ITEMS, 1733400000000000000ll) == 0);
	for (int k = 0; k < BACKLOG_BATCHES; k++)
		CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	end = log.next_seq;

	struct upl_forward_cfg cfg = fwd_cfg(b.port, "T-cursor", path, &log);
	CHECK(upl_forwarder_new(&cfg, &f) == 0);
	struct live lv = { &g, &log, false };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, append, &lv) == 0);
	int64_t t0 = basic_mono_ns();
	CHECK(upl_forwarder_start(f) == 0);
	/* look as often as we can until the backlog is acknowledged: the
	   stats first, the file after (it only moves on) */
	int64_t until = basic_mono_ns() + 120 * 1000000000ll;
	do {
		CHECK(upl_forwarder_stats(f, &st) == 0);
		CHECK(upl_cursor_load(path, &on_disk) == 0);
		if (st.cursor > on_disk && st.cursor - on_disk > lag_max)
			lag_max = st.cursor - on_disk;
		looks++;
		CHECK(basic_mono_ns() < until, "backlog not acknowledged in 120 s: %" PRIu64 " of %" PRIu64, st.cursor,
		      end);
	} while (st.cursor < end);
	printf("cursor file behind the broker's acknowledgements: at most %" PRIu64 " records in %" PRIu64
	       " looks (backlog %" PRIu64 " records, acknowledged in %.2f s)\n", lag_max, looks, end - 1,
	       (double)(basic_mono_ns() - t0) / 1e9);
	CHECK(lag_max < LAG_MAX, "the cursor file %" PRIu64 " records behind what the broker acknowledged", lag_max);

	/* the kill -9 here: the file as it is now, read by a forwarder
	   started on it (the first one still runs: the file may move on) */
	CHECK(upl_cursor_load(path, &on_disk) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(on_disk + LAG_MAX > st.cursor, "file %" PRIu64 ", acknowledged %" PRIu64, on_disk, st.cursor);
	atomic_store(&lv.stop, true);
	pthread_join(t, NULL);
	upl_forwarder_t *again;
	struct upl_forward_cfg cfg2 = fwd_cfg(b.port, "T-cursor-again", path, &log);
	CHECK(upl_forwarder_new(&cfg2, &again) == 0);
	CHECK(upl_forwarder_stats(again, &st) == 0);
	CHECK(st.cursor >= on_disk && st.cursor_damage == 0, "restart at %" PRIu64 ", file %" PRIu64 " (damage %d)",
	      st.cursor, on_disk, st.cursor_damage);
	upl_forwarder_free(again);
	upl_forwarder_free(f);

	/* a cursor file that cannot be written (a directory in its place):
	   tried once a second while the backlog goes, not at every PUBACK */
	snprintf(path, sizeof(path), "%s/unwritable", b.dir);
	CHECK(mkdir(path, 0755) == 0);
	cfg = fwd_cfg(b.port, "T-cursor2", path, &log);
	CHECK(upl_forwarder_new(&cfg, &f) == 0);
	t0 = basic_mono_ns();
	CHECK(upl_forwarder_start(f) == 0);
	end = log.next_seq;
	until = basic_mono_ns() + 120 * 1000000000ll;
	do {
		CHECK(upl_forwarder_stats(f, &st) == 0);
		CHECK(basic_mono_ns() < until, "backlog not acknowledged in 120 s: %" PRIu64 " of %" PRIu64, st.cursor,
		      end);
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 1000000);
	} while (st.cursor < end);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	int64_t secs = (basic_mono_ns() - t0) / 1000000000 + 1;
	printf("unwritable cursor: %" PRIu64 " failed writes in %" PRId64 " s (backlog %" PRIu64 " records)\n",
	       st.cursor_errors, secs, end - 1);
	CHECK(st.cursor_errors >= 1 && st.cursor_errors <= (uint64_t)secs + 1, "%" PRIu64 " failed writes in %" PRId64
	      " s", st.cursor_errors, secs);
	upl_forwarder_free(f);
	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	return 0;
}
