/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-cursor.c - the forwarder's cursor file, against a real
 * mosquitto and recv as the subscriber.
 *
 * 1. Every kind of damaged cursor (empty, garbage, cut short, zeroed
 *    bytes, zero, negative, too large, beyond the end of the log, a
 *    directory, a FIFO; the empty and the zeroed file are what a power cut
 *    can leave after a write without fsync, basic/replace.h):
 *    the forwarder still starts, reports why (stats and a CURSOR_RESET
 *    event), sends the whole log again from its oldest record, and recv
 *    ends up with every record.  The file is valid again after a clean
 *    stop (except a directory, which is never removed: writes are counted).
 * 2. The forced write at a clean stop: with cursor_interval_ms = 1 hour the
 *    file lags behind the acknowledgements while running; upl_forwarder_stop()
 *    must write the final cursor, so a restart resends nothing already
 *    acknowledged (recv sees 0 duplicates).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"

#define BATCHES 12
#define ITEMS 40

static struct upl_forward_cfg fwd_cfg(int port, const char *vehicle, const char *cursor, struct memlog *log,
                                      struct fx_events *ev)
{
	return (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = port, .client_id = vehicle, .vehicle = vehicle,
		.cursor_path = cursor, .source = memlog_source(log), .log_next_seq = log->next_seq,
		.inflight = 4, .idle_poll_ms = 5, .backoff_min_ms = 50, .backoff_max_ms = 200,
		.on_event = fx_on_event, .event_ctx = ev,
	};
}

struct damage {
	const char *name;    /* also the vehicle: one recv view per case */
	const char *content; /* NULL: see kind */
	int kind;            /* 0 file, 'd' directory, 'p' FIFO, 'z' 24 NUL bytes */
	int expect;          /* cursor_damage */
};

static void make_damage(const char *path, const struct damage *dm)
{
	FILE *f;

	if (dm->kind == 'd') {
		CHECK(mkdir(path, 0755) == 0);
		return;
	}
	if (dm->kind == 'p') {
		CHECK(mkfifo(path, 0644) == 0);
		return;
	}
	f = fopen(path, "w");
	if (dm->kind == 'z') {
		/* the size of a cursor line, its data never written */
		static const char zeros[24];

		CHECK(f && fwrite(zeros, 1, sizeof(zeros), f) == sizeof(zeros) && fclose(f) == 0);
		return;
	}
	CHECK(f && fputs(dm->content, f) >= 0 && fclose(f) == 0);
}

/* A log of BATCHES Batches, a damaged cursor: every record must arrive. */
static void damage_case(int port, fx_gnd_t *r, const char *dir, const struct damage *dm)
{
	struct upl_forward_stats st;
	struct grd_ledger_vehicle v;
	struct fx_events ev;
	struct upl_forward_cfg c;
	struct memlog log;
	struct gen g;
	upl_forwarder_t *f = NULL;
	char path[256];
	uint64_t seq = 0;

	snprintf(path, sizeof(path), "%s/%s.cursor", dir, dm->name);
	make_damage(path, dm);
	memlog_init(&log);
	CHECK(gen_init(&g, dm->name, ITEMS, basic_realtime_ns()) == 0);
	for (int i = 0; i < BATCHES; i++)
		CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	fx_events_init(&ev);
	c = fwd_cfg(port, dm->name, path, &log, &ev);
	CHECK(upl_forwarder_new(&c, &f) == 0 && f);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(st.cursor_damage == dm->expect && st.cursor == 1);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(fx_events_wait(&ev, UPL_FWD_CURSOR_RESET, 1, 10000) == 0);
	CHECK(fx_events_get(&ev, UPL_FWD_CURSOR_RESET) == 1);
	CHECK(upl_forwarder_wait_cursor(f, log.next_seq, 20000) == 0);
	CHECK(fx_gnd_wait_seq(r, dm->name, log.next_seq, 20000) == 0);
	CHECK(fx_gnd_vehicle(r, dm->name, &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == log.next_seq && v.records == log.next_seq - 1 && v.missing == 0);
	CHECK(upl_forwarder_stop(f) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	if (dm->kind == 'd') {
		/* Never deleted, so never written: counted, retried at most once a
		   second, and the in-memory cursor is still right. */
		CHECK(upl_cursor_load(path, &seq) == -EISDIR && st.cursor_errors >= 1);
		CHECK(rmdir(path) == 0);
	} else {
		CHECK(upl_cursor_load(path, &seq) == 0 && seq == log.next_seq && st.cursor_errors == 0);
	}
	printf("cursor %-9s -> damage %4d (%s), all %llu records sent again from seq 1, %llu cursor write failures\n",
	       dm->name, st.cursor_damage, strerror(-st.cursor_damage), (unsigned long long)v.records,
	       (unsigned long long)st.cursor_errors);
	upl_forwarder_free(f);
	gen_fini(&g);
	memlog_fini(&log);
}

static void test_damage(int port, fx_gnd_t *r, const char *dir)
{
	static const struct damage cases[] = {
		{ "empty", "", 0, -ENODATA },
		{ "garbage", "\x7f" "ELF\x02\x01 not a cursor\n", 0, -EBADMSG },
		{ "torn", "railmon-cursor 1 4", 0, -EBADMSG },
		{ "zeroed", NULL, 'z', -EBADMSG },
		{ "blank", "railmon-cursor 1  12\n", 0, -EBADMSG },
		{ "zero", "railmon-cursor 1 0\n", 0, -ERANGE },
		{ "negative", "railmon-cursor 1 -5\n", 0, -ERANGE },
		{ "huge", "railmon-cursor 1 99999999999999999999999\n", 0, -ERANGE },
		{ "beyond", "railmon-cursor 1 999999\n", 0, -EOVERFLOW },
		{ "directory", NULL, 'd', -EISDIR },
		{ "fifo", NULL, 'p', -ESPIPE },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		damage_case(port, r, dir, &cases[i]);
}

/* A cursor exactly at the end, or a missing file, is no damage. */
static void test_no_damage(const char *dir)
{
	struct upl_forward_stats st;
	struct upl_forward_cfg c;
	struct fx_events ev;
	struct memlog log;
	struct gen g;
	upl_forwarder_t *f;
	char path[256];

	snprintf(path, sizeof(path), "%s/fine.cursor", dir);
	memlog_init(&log);
	CHECK(gen_init(&g, "fine", ITEMS, basic_realtime_ns()) == 0);
	CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	fx_events_init(&ev);
	c = fwd_cfg(1, "fine", path, &log, &ev);
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0 && st.cursor_damage == 0 && st.cursor == 1);
	upl_forwarder_free(f);
	CHECK(upl_cursor_store(path, log.next_seq) == 0);
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0 && st.cursor_damage == 0 && st.cursor == log.next_seq);
	upl_forwarder_free(f);
	CHECK(unlink(path) == 0);
	gen_fini(&g);
	memlog_fini(&log);
	printf("cursor missing or at the log's end: used as is\n");
}

/*
 * cursor_interval_ms = 1 hour: the file is written at the first
 * acknowledgement and then not again while running; the clean stop must
 * write the final value.  A forwarder restarted from that file resends
 * nothing already acknowledged.
 */
static void test_stop_writes_cursor(int port, fx_gnd_t *r, const char *dir)
{
	struct grd_ledger_vehicle v;
	struct upl_forward_stats st;
	struct upl_forward_cfg c;
	struct fx_events ev;
	struct memlog log;
	struct gen g;
	upl_forwarder_t *f;
	char path[256];
	uint64_t seq = 0, end;

	snprintf(path, sizeof(path), "%s/stop.cursor", dir);
	memlog_init(&log);
	CHECK(gen_init(&g, "stop", ITEMS, basic_realtime_ns()) == 0);
	for (int i = 0; i < BATCHES; i++)
		CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	end = log.next_seq;
	fx_events_init(&ev);
	c = fwd_cfg(port, "stop", path, &log, &ev);
	c.cursor_interval_ms = 3600 * 1000;
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, end, 20000) == 0);
	/* Everything is acknowledged, but the file still holds the first
	   acknowledgement's value: the interval is in force. */
	CHECK(upl_cursor_load(path, &seq) == 0);
	printf("interval 1 h: all acknowledged up to %llu, the file says %llu while running\n",
	       (unsigned long long)end, (unsigned long long)seq);
	CHECK(seq > 1 && seq < end);
	CHECK(upl_forwarder_stop(f) == 0); /* what SIGTERM does through the daemon */
	CHECK(upl_cursor_load(path, &seq) == 0);
	printf("after a clean stop the file says %llu\n", (unsigned long long)seq);
	CHECK(seq == end);
	upl_forwarder_free(f);

	/* Restart from the file with more records: no duplicates at all. */
	for (int i = 0; i < 3; i++)
		CHECK(gen_batch(&g, &log, ITEMS, 1000000) == 0);
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0 && st.cursor == end && st.cursor_damage == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, log.next_seq, 20000) == 0);
	CHECK(fx_gnd_wait_seq(r, "stop", log.next_seq, 20000) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(fx_gnd_vehicle(r, "stop", &v) == 0);
	printf("restart: %llu messages published, recv has %llu records, %llu duplicates\n",
	       (unsigned long long)st.published, (unsigned long long)v.records, (unsigned long long)v.duplicates);
	CHECK(st.published == 3 && v.records == log.next_seq - 1 && v.duplicates == 0 && v.missing == 0);
	upl_forwarder_free(f);
	gen_fini(&g);
	memlog_fini(&log);
}

int main(void)
{
	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .client_id = "railmon-cursor-recv" };
	struct fx_recv rt;
	struct broker b;
	char dir[160];

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	snprintf(dir, sizeof(dir), "%s/cursors", b.dir);
	CHECK(mkdir(dir, 0755) == 0);
	rc.port = b.port;
	fx_recv_start(&rt, &rc);

	test_no_damage(dir);
	test_damage(b.port, rt.r, dir);
	test_stop_writes_cursor(b.port, rt.r, dir);

	fx_recv_stop(&rt);
	broker_fini(&b);
	return 0;
}
