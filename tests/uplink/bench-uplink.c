/* SPDX-License-Identifier: MIT */
/*
 * bench-uplink.c - forwarder throughput to mosquitto on loopback, against
 * a plain libmosquitto publisher with the same window measured in the same
 * run, and wire bytes per sample against JSON lines of the same data.
 */
#include <errno.h>
#include <mosquitto.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"

#define MSGS 20000
#define WINDOW 32
#define CAN_PER_4K 232 /* records per Batch for ~4 KiB of CAN frames */

struct raw {
	int inflight;
	long acked;
};

static void raw_on_publish(struct mosquitto *m, void *arg, int mid)
{
	struct raw *r = arg;

	r->inflight--;
	r->acked++;
}

/* Baseline: libmosquitto alone, QoS 1, same window, same payloads. */
static double bench_raw(int port, struct memlog *log, double *ret_bytes)
{
	struct raw r = { 0 };
	struct mosquitto *m = mosquitto_new("bench-raw", true, &r);
	size_t next = 0;
	double bytes = 0;
	int64_t t0;

	CHECK(m);
	mosquitto_publish_callback_set(m, raw_on_publish);
	mosquitto_max_inflight_messages_set(m, WINDOW);
	CHECK(mosquitto_connect(m, "127.0.0.1", port, 20) == MOSQ_ERR_SUCCESS);
	t0 = basic_mono_ns();
	while (r.acked < MSGS) {
		while (r.inflight < WINDOW && next < MSGS) {
			const struct memrec *rec = &log->recs[next++];

			CHECK(mosquitto_publish(m, NULL, "bench/raw", (int)rec->len, rec->buf, 1, false) ==
			      MOSQ_ERR_SUCCESS);
			bytes += rec->len;
			r.inflight++;
		}
		CHECK(mosquitto_loop(m, 100, 1) == MOSQ_ERR_SUCCESS);
	}
	t0 = basic_mono_ns() - t0;
	mosquitto_disconnect(m);
	mosquitto_destroy(m);
	*ret_bytes = bytes;
	return t0 / 1e9;
}

/* Forward the first n records of the log; seconds taken. */
static double bench_forwarder(int port, struct memlog *log, size_t n, unsigned cursor_ms,
                              const char *dir)
{
	char cursor[256];
	struct upl_forward_cfg c = {
		.host = "127.0.0.1", .port = port, .client_id = "bench-fwd", .vehicle = "tram7",
		.cursor_path = cursor, .source = memlog_source(log), .inflight = WINDOW,
		.cursor_interval_ms = cursor_ms,
	};
	upl_forwarder_t *f;
	int64_t t0;

	snprintf(cursor, sizeof(cursor), "%s/bench-%u.cursor", dir, cursor_ms);
	log->pos = 0;
	CHECK(upl_forwarder_new(&c, &f) == 0);
	t0 = basic_mono_ns();
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, log->recs[n - 1].first_seq + log->recs[n - 1].count,
	                                120000) == 0);
	t0 = basic_mono_ns() - t0;
	upl_forwarder_free(f);
	return t0 / 1e9;
}

/* Bytes per record: encoded Batches vs `recv --format jsonl` lines. */
static void bench_size(const char *what, int kind_mix)
{
	struct memlog log;
	struct gen g;
	struct fx_text text = { .fmt = REC_FORMAT_JSONL };
	struct fx_gnd_cfg rc = { .client_id = "size", .on_record = fx_text_record, .ctx = &text };
	fx_gnd_t *r;
	char *json;
	size_t json_len, nrec = 0, compact = 0;
	char line[256];

	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 1000, 1700000000000000000) == 0);
	text.out = open_memstream(&json, &json_len);
	CHECK(text.out && fx_gnd_new(&rc, &r) == 0);
	for (int b = 0; b < 100; b++) {
		const uint8_t *buf;
		size_t len;

		for (int i = 0; i < 1000; i++) {
			struct acq_item it;

			if (kind_mix) {
				gen_item(&g, g.t_ns, &it);
			} else {
				/* 50 channels sampled every 20 ms: slowly varying values. */
				memset(&it, 0, sizeof(it));
				it.t_ns = g.t_ns;
				it.kind = ACQ_ITEM_SAMPLE;
				it.sample.channel = (uint32_t)(i % 50);
				it.sample.value = 600.0 + (double)((b * 1000 + i) % 97) * 0.25;
			}
			g.t_ns += kind_mix ? 1538461 : (i % 50 == 49 ? 20000000 : 0);
			CHECK(rec_encoder_add(g.enc, &it) == 0);
			/* The leanest JSON a consumer could want: time, id, value. */
			if (it.kind == ACQ_ITEM_SAMPLE)
				compact += (size_t)snprintf(line, sizeof(line),
				                            "{\"t\":%lld,\"ch\":%u,\"v\":%.17g}\n",
				                            (long long)it.t_ns, it.sample.channel, it.sample.value);
			else if (it.kind == ACQ_ITEM_CAN)
				compact += (size_t)snprintf(line, sizeof(line),
				                            "{\"t\":%lld,\"id\":%u,\"d\":\"%016llx\"}\n",
				                            (long long)it.t_ns, it.can.id, 0x1122334455667788ull);
			else
				compact += (size_t)snprintf(line, sizeof(line), "{\"t\":%lld,\"ev\":%u}\n",
				                            (long long)it.t_ns, it.event.code);
		}
		CHECK(rec_encoder_finish(g.enc, log.next_seq, &buf, &len) == 1000);
		CHECK(memlog_append(&log, 1000, g.t_ns, buf, len) == 0);
		CHECK(fx_gnd_feed(r, NULL, buf, len) == 1000);
		nrec += 1000;
	}
	fflush(text.out);
	printf("%-28s %8.1f %12.1f %12.1f %8.1fx\n", what, (double)log.bytes / nrec,
	       (double)json_len / nrec, (double)compact / nrec, (double)json_len / log.bytes);
	fx_gnd_free(r);
	fclose(text.out);
	free(json);
	gen_fini(&g);
	memlog_fini(&log);
}

int main(void)
{
	struct broker b;
	struct memlog log;
	struct gen g;
	double raw_s, raw_bytes, fwd_s, fwd0_s;
	const size_t n0 = MSGS / 20; /* fsync per ack is slow: a sample is enough */

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", CAN_PER_4K, basic_realtime_ns()) == 0);
	for (int i = 0; i < MSGS; i++)
		CHECK(gen_batch(&g, &log, CAN_PER_4K, 1538461) == 0);

	raw_s = bench_raw(b.port, &log, &raw_bytes);
	fwd_s = bench_forwarder(b.port, &log, MSGS, 1000, b.dir);
	fwd0_s = bench_forwarder(b.port, &log, n0, 0, b.dir);

	printf("\n%d messages of %.0f bytes (encoded Batches), QoS 1, window %d, mosquitto on loopback\n",
	       MSGS, raw_bytes / MSGS, WINDOW);
	printf("%-36s %10s %10s %8s\n", "publisher", "msg/s", "MB/s", "ratio");
	printf("%-36s %10.0f %10.1f %8.2f\n", "libmosquitto loop (baseline)", MSGS / raw_s,
	       raw_bytes / raw_s / 1e6, 1.0);
	printf("%-36s %10.0f %10.1f %8.2f\n", "forwarder, cursor 1 s / 2048 records", MSGS / fwd_s,
	       log.bytes / fwd_s / 1e6, raw_s / fwd_s);
	printf("%-36s %10.0f %10.1f %8.2f\n", "forwarder, cursor fsync every ack", n0 / fwd0_s,
	       (double)log.bytes / MSGS * n0 / fwd0_s / 1e6, raw_s / MSGS * n0 / fwd0_s);

	printf("\n%-28s %8s %12s %12s %9s\n", "bytes per record", "Batch", "recv JSONL", "lean JSON",
	       "JSONL/Batch");
	bench_size("samples (50 ch @ 50 Hz)", 0);
	bench_size("mix (CAN 2x300/s + samples)", 1);

	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	return 0;
}
