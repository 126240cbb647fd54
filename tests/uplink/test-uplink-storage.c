/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-storage.c - the whole store-and-forward path on the real
 * flash log: vehicle log (storage/) -> stor_reader -> forwarder -> mosquitto
 * -> recv -> ground log (stor_log_append), wired the way cli/ wires it
 * (uplink/README.md).  The ground log must end up holding the vehicle's
 * Batches byte for byte, while the vehicle keeps appending (the reader
 * follows the live log) and across a forwarder restart from its cursor.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/stor.h"
#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"
#include "stor-source.h"

/* recv -> ground log: every new Batch appended unchanged. */
static int ground_append(void *ctx, const struct rec_batch_info *info, rec_batch_t **bp, const void *payload,
                         size_t len, void **log_ctx)
{
	stor_log_t *log = ctx;
	struct stor_rec rec = { .first_seq = info->first_seq, .count = info->count,
	                        .payload = payload, .len = (uint32_t)len };
	rec_batch_t *b;
	int r;

	/* A Batch that only partly repeats records would break the ground
	   log's numbering: refuse it (counted in recv's sink_errors). */
	if (info->first_seq != stor_log_next_seq(log))
		return -EALREADY;
	r = rec_batch_decode(payload, len, &b);
	if (r < 0)
		return r;
	rec.t_first_ns = INT64_MAX;
	rec.t_last_ns = INT64_MIN;
	for (uint32_t i = 0; i < info->count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		if (it.t_ns < rec.t_first_ns)
			rec.t_first_ns = it.t_ns;
		if (it.t_ns > rec.t_last_ns)
			rec.t_last_ns = it.t_ns;
	}
	rec_batch_free(b);
	return stor_log_append(log, &rec);
}

/* ---- vehicle side ---- */
static void vehicle_append(struct gen *g, stor_log_t *log, size_t n)
{
	const uint8_t *buf;
	size_t len;
	int64_t first = g->t_ns;
	struct stor_rec rec;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct acq_item it;

		gen_item(g, g->t_ns, &it);
		g->t_ns += 1000000;
		CHECK(rec_encoder_add(g->enc, &it) == 0);
	}
	r = rec_encoder_finish(g->enc, stor_log_next_seq(log), &buf, &len);
	CHECK(r == (int)n);
	rec = (struct stor_rec){ .first_seq = stor_log_next_seq(log), .count = (uint32_t)r,
	                         .t_first_ns = first, .t_last_ns = g->t_ns - 1000000,
	                         .payload = buf, .len = (uint32_t)len };
	CHECK(stor_log_append(log, &rec) == 0);
}

static upl_forwarder_t *forwarder_start(int port, const char *cursor, stor_reader_t *reader)
{
	struct upl_forward_cfg c = {
		.host = "127.0.0.1", .port = port, .client_id = "railmon-storage-fwd",
		.vehicle = "tram5", .cursor_path = cursor,
		.source = stor_source(reader),
		.inflight = 20, .idle_poll_ms = 5, .cursor_interval_ms = 0,
	};
	upl_forwarder_t *f;

	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	return f;
}

/* Both logs hold the same records, byte for byte. */
static uint64_t compare_logs(const char *a_dir, const char *b_dir)
{
	stor_reader_t *a, *b;
	struct stor_rec ra, rb;
	uint64_t n = 0, historical = 0;
	int ka, kb;

	CHECK(stor_reader_open(a_dir, &a) == 0);
	CHECK(stor_reader_open(b_dir, &b) == 0);
	for (;;) {
		ka = stor_reader_next(a, &ra);
		if (ka != 1)
			break;
		/* Copy a's fields: the payload pointer dies at the next call on a. */
		void *pa = malloc(ra.len);

		CHECK(pa);
		memcpy(pa, ra.payload, ra.len);
		kb = stor_reader_next(b, &rb);
		CHECK(kb == 1);
		CHECK(ra.first_seq == rb.first_seq && ra.count == rb.count);
		CHECK(ra.t_first_ns == rb.t_first_ns && ra.t_last_ns == rb.t_last_ns);
		/* The stored bytes arrive unchanged; a Batch from the backlog
		   (older than the live window) carries exactly two more bytes:
		   Batch.historical = true (field 7, varint 1) appended. */
		CHECK(rb.len == ra.len || (rb.len == ra.len + 2 &&
		      ((const uint8_t *)rb.payload)[ra.len] == 0x38 && ((const uint8_t *)rb.payload)[ra.len + 1] == 1));
		CHECK(memcmp(pa, rb.payload, ra.len) == 0);
		historical += rb.len != ra.len;
		free(pa);
		n++;
	}
	CHECK(ka == 0 && stor_reader_next(b, &rb) == 0);
	stor_reader_free(a);
	stor_reader_free(b);
	printf("logs compared: %llu Batches, %llu of them flagged historical in transit\n",
	       (unsigned long long)n, (unsigned long long)historical);
	return n;
}

int main(void)
{
	struct broker b;
	struct gen g;
	struct fx_recv rt;
	struct fx_gnd_stats rs;
	struct upl_forward_stats fs;
	char vdir[256], gdir[256], cursor[256];
	stor_log_t *vlog, *glog;
	stor_reader_t *reader;
	upl_forwarder_t *f;
	uint64_t seq, n;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	snprintf(vdir, sizeof(vdir), "%s/vehicle-log", b.dir);
	snprintf(gdir, sizeof(gdir), "%s/ground-log", b.dir);
	snprintf(cursor, sizeof(cursor), "%s/uplink.cursor", b.dir);

	struct stor_log_cfg vc = { .dir = vdir, .vehicle = "tram5", .segment_bytes = 64 << 10 };
	struct stor_log_cfg gc = { .dir = gdir, .vehicle = "tram5", .segment_bytes = 64 << 10 };
	CHECK(stor_log_open(&vc, &vlog) == 0);
	CHECK(stor_log_open(&gc, &glog) == 0);
	CHECK(gen_init(&g, "tram5", 64, basic_realtime_ns() - 3600 * INT64_C(1000000000)) == 0);
	for (int i = 0; i < 300; i++)
		vehicle_append(&g, vlog, 50);
	CHECK(stor_log_sync(vlog) == 0);

	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .port = b.port,
	                           .client_id = "railmon-storage-recv",
	                           .on_batch = ground_append, .ctx = glog };
	fx_recv_start(&rt, &rc);

	CHECK(stor_reader_open(vdir, &reader) == 0);
	f = forwarder_start(b.port, cursor, reader);
	/* The vehicle keeps logging while the backlog goes out. */
	CHECK(upl_forwarder_wait_cursor(f, 100 * 50, 20000) == 0);
	for (int i = 0; i < 100; i++) {
		vehicle_append(&g, vlog, 50);
		CHECK(stor_log_sync(vlog) == 0);
	}
	CHECK(upl_forwarder_wait_cursor(f, stor_log_next_seq(vlog), 20000) == 0);
	upl_forwarder_free(f);
	stor_reader_free(reader);
	CHECK(upl_cursor_load(cursor, &seq) == 0 && seq == stor_log_next_seq(vlog));

	/* Restart: a new reader seeks to the cursor, nothing is sent twice. */
	for (int i = 0; i < 10; i++)
		vehicle_append(&g, vlog, 50);
	CHECK(stor_log_sync(vlog) == 0);
	CHECK(stor_reader_open(vdir, &reader) == 0);
	f = forwarder_start(b.port, cursor, reader);
	CHECK(upl_forwarder_wait_cursor(f, stor_log_next_seq(vlog), 20000) == 0);
	CHECK(upl_forwarder_stats(f, &fs) == 0 && fs.acked == 10 && fs.source_errors == 0);
	upl_forwarder_free(f);
	stor_reader_free(reader);

	CHECK(fx_gnd_wait_records(rt.r, stor_log_next_seq(vlog) - 1, 20000) == 0);
	fx_gnd_stop(rt.r);
	pthread_join(rt.t, NULL);
	CHECK(fx_gnd_stats(rt.r, &rs) == 0);
	CHECK(rs.records == 410 * 50 && rs.duplicates == 0 && rs.missing == 0);
	CHECK(rs.sink_errors == 0 && rs.batches == 410);
	fx_gnd_free(rt.r);
	stor_log_free(glog);
	stor_log_free(vlog);
	n = compare_logs(vdir, gdir);
	printf("ground log holds the vehicle's %llu Batches byte for byte\n", (unsigned long long)n);
	CHECK(n == 410);

	gen_fini(&g);
	broker_fini(&b);
	return 0;
}
