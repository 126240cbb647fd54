/* SPDX-License-Identifier: MIT */
/*
 * test-spb-cursor.c - the Sparkplug publisher's cursor file while a
 * backlog goes, against a real mosquitto (tests/uplink's fixture).
 *
 * A kill -9 sends again what the broker confirmed and the cursor file
 * does not yet say.  A backlog (after an outage, a restart) goes at the
 * broker's speed, so a cursor written only once a second lagged by a
 * whole outage's records (spb-run-session: ~40,000 values sent again
 * after a kill -9 just after the backlog was confirmed).  Here: 40,000
 * records in the log at the start, more appended while it goes; at every
 * look while the backlog is confirmed, the file lags what the stats say
 * the broker confirmed by less than 2048 records (CURSOR_EVERY_RECORDS).
 * Then a second publisher on the same state dir (the restart after a
 * kill -9) starts at the file's seq or later, not before it.  And a
 * cursor that cannot be written is tried once a second, not at every
 * UNSUBACK once 2048 records are confirmed.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/clock.h"
#include "../uplink/fixture.h"
#include "uplink/cursor.h"
#include "uplink/spb-pub.h"

#define BACKLOG_BATCHES 1000
#define ITEMS 40
#define LAG_MAX 2048 /* uplink/spb-pub.c's CURSOR_EVERY_RECORDS */

struct live {
	struct gen *g;
	struct memlog *log;
	atomic_bool stop;
};

/* a live train: a Batch every 2 ms while the backlog goes, so what was
   sent is never all confirmed (the cursor's at-once case never comes) */
static void *append(void *arg)
{
	struct live *lv = arg;

	while (!atomic_load(&lv->stop)) {
		CHECK(gen_batch(lv->g, lv->log, ITEMS, 1000000) == 0);
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 2000000);
	}
	return NULL;
}

static struct upl_spb_cfg spb_cfg(int port, const char *dir, struct memlog *log)
{
	/* no channels, no devices: a Batch then makes no DDATA, but it is
	   read, sent (its events) and confirmed by a barrier all the same */
	return (struct upl_spb_cfg){ .host = "127.0.0.1", .port = (uint16_t)port, .keepalive_s = 5, .group = "Fleet",
	                             .node = "T-cursor", .state_dir = dir, .source = memlog_source(log) };
}

int main(void)
{
	struct broker b;
	struct memlog log;
	struct gen g;
	char dir[160], path[200];
	upl_spb_t *pub;
	struct upl_spb_stats st;
	uint64_t end, on_disk, lag_max = 0, looks = 0;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	snprintf(dir, sizeof(dir), "%s", b.dir);
	snprintf(path, sizeof(path), "%s/sparkplug-cursor", dir);
	memlog_init(&log);
	/* times of 2024: the backlog is historical to the publisher */
	CHECK(gen_init(&g, "T-cursor", ITEMS, 1733400000000000000ll) == 0);
	for (int k = 0; k < BACKLOG_BATCHES; k++)
		CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	end = log.next_seq;

	struct upl_spb_cfg cfg = spb_cfg(b.port, dir, &log);
	CHECK(upl_spb_new(&cfg, &pub) == 0);
	struct live lv = { &g, &log, false };
	pthread_t t;
	CHECK(pthread_create(&t, NULL, append, &lv) == 0);
	int64_t t0 = basic_mono_ns();
	CHECK(upl_spb_start(pub) == 0);
	/* look as often as we can until the backlog is confirmed: the stats
	   first, the file after (it only moves on) */
	int64_t until = basic_mono_ns() + 120 * 1000000000ll;
	do {
		upl_spb_stats(pub, &st);
		on_disk = 1;
		CHECK(upl_cursor_load(path, &on_disk) == 0);
		if (st.acked_seq > on_disk && st.acked_seq - on_disk > lag_max)
			lag_max = st.acked_seq - on_disk;
		looks++;
		CHECK(basic_mono_ns() < until, "backlog not confirmed in 120 s: acked %" PRIu64 " of %" PRIu64,
		      st.acked_seq, end);
	} while (st.acked_seq < end);
	printf("cursor file behind the broker's confirmation: at most %" PRIu64 " records in %" PRIu64
	       " looks (backlog %" PRIu64 " records, confirmed in %.2f s)\n", lag_max, looks, end - 1,
	       (double)(basic_mono_ns() - t0) / 1e9);
	CHECK(lag_max < LAG_MAX, "the cursor file %" PRIu64 " records behind what the broker confirmed", lag_max);

	/* the kill -9 here: the publisher's file as it is now, read by a
	   second publisher on the same state dir (the first one stopped
	   first: one client id, one will) */
	CHECK(upl_cursor_load(path, &on_disk) == 0);
	upl_spb_stats(pub, &st);
	CHECK(on_disk + LAG_MAX > st.acked_seq, "file %" PRIu64 ", acked %" PRIu64, on_disk, st.acked_seq);
	atomic_store(&lv.stop, true);
	pthread_join(t, NULL);
	upl_spb_t *again;
	CHECK(upl_spb_new(&cfg, &again) == 0);
	upl_spb_stats(again, &st);
	/* the first one still runs: the file may have moved on since */
	CHECK(st.acked_seq >= on_disk && st.next_seq == st.acked_seq, "restart at %" PRIu64 "/%" PRIu64
	      ", file %" PRIu64, st.acked_seq, st.next_seq, on_disk);
	upl_spb_free(again);
	upl_spb_free(pub);

	/* a cursor that cannot be written (a directory in its place): tried
	   once a second while the backlog goes, not at every UNSUBACK */
	char dir2[200], path2[240];
	snprintf(dir2, sizeof(dir2), "%s/unwritable", dir);
	snprintf(path2, sizeof(path2), "%s/sparkplug-cursor", dir2);
	CHECK(mkdir(dir2, 0755) == 0 && mkdir(path2, 0755) == 0);
	cfg = spb_cfg(b.port, dir2, &log);
	cfg.node = "T-cursor2";
	CHECK(upl_spb_new(&cfg, &pub) == 0);
	t0 = basic_mono_ns();
	CHECK(upl_spb_start(pub) == 0);
	end = log.next_seq;
	until = basic_mono_ns() + 120 * 1000000000ll;
	do {
		upl_spb_stats(pub, &st);
		CHECK(basic_mono_ns() < until, "backlog not confirmed in 120 s: acked %" PRIu64 " of %" PRIu64,
		      st.acked_seq, end);
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 1000000);
	} while (st.acked_seq < end);
	upl_spb_stats(pub, &st);
	int64_t secs = (basic_mono_ns() - t0) / 1000000000 + 1;
	printf("unwritable cursor: %" PRIu64 " failed writes in %" PRId64 " s (backlog %" PRIu64 " records)\n",
	       st.cursor_store_failures, secs, end - 1);
	CHECK(st.cursor_store_failures >= 1 && st.cursor_store_failures <= (uint64_t)secs + 1,
	      "%" PRIu64 " failed writes in %" PRId64 " s", st.cursor_store_failures, secs);
	upl_spb_free(pub);
	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	return 0;
}
