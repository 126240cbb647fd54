/* SPDX-License-Identifier: MIT */
/*
 * test-uplink.c - forwarder and receiver: bad arguments, the cursor file,
 * gap/duplicate detection per (vehicle, log id), conflicts, forgotten
 * ranges, bogus seqs, many vehicles, output formats, and end to end through a real
 * mosquitto with `recv` and an independent Python consumer
 * (paho-mqtt + protoc-generated code) that must see identical records.
 *
 * usage: test-uplink CONSUMER_PY PB2_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <mosquitto.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"

static char tmpdir[] = "/tmp/railmon-uplink-XXXXXX";

static void path_in(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

static struct upl_forward_cfg fwd_cfg(struct memlog *log, int port, const char *cursor)
{
	return (struct upl_forward_cfg){
		.host = "127.0.0.1",
		.port = port,
		.client_id = "railmon-test-fwd",
		.vehicle = "tram7",
		.cursor_path = cursor,
		.source = memlog_source(log),
		.inflight = 20,
		.ack_timeout_ms = 3000,
		.connect_timeout_ms = 3000,
		.backoff_min_ms = 50,
		.backoff_max_ms = 500,
		.idle_poll_ms = 10,
	};
}

static void test_bad_args(void)
{
	struct memlog log;
	struct upl_forward_cfg c;
	struct upl_forward_stats fst;
	struct fx_gnd_stats rst;
	struct grd_ledger_vehicle rv;
	struct grd_ledger_log rl;
	struct fx_gnd_cfg rc = { .client_id = "x" };
	upl_forwarder_t *f = NULL;
	fx_gnd_t *r = NULL;
	uint64_t seq;
	char cur[256];

	memlog_init(&log);
	path_in(cur, sizeof(cur), "bad.cursor");
	CHECK(upl_forwarder_new(NULL, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	CHECK(upl_forwarder_new(&c, NULL) == -EINVAL);
	c.host = NULL;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 0, cur);
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 70000, cur);
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.vehicle = "a/b";
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.vehicle = "#";
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.client_id = "";
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, NULL);
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.source.next = NULL;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.source.seek = NULL;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.password = "pw";
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.live_source.next = c.source.next; /* a live reader needs seek_time */
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.inflight = 70000;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.keepalive_s = 2;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	/* Insecure without TLS, TLS without a CA, a key without a cert. */
	c = fwd_cfg(&log, 1883, cur);
	c.tls.insecure = true;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c = fwd_cfg(&log, 1883, cur);
	c.use_tls = true;
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	c.tls.ca_file = "/nonexistent/ca.pem";
	c.tls.key_file = "/nonexistent/key.pem";
	CHECK(upl_forwarder_new(&c, &f) == -EINVAL);
	CHECK(f == NULL);
	CHECK(upl_forwarder_start(NULL) == -EINVAL);
	CHECK(upl_forwarder_stop(NULL) == -EINVAL);
	CHECK(upl_forwarder_stats(NULL, &fst) == -EINVAL);
	CHECK(upl_forwarder_wait_cursor(NULL, 1, 1) == -EINVAL);
	CHECK(upl_forwarder_free(NULL) == NULL);
	c = fwd_cfg(&log, 1883, cur);
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_stats(f, NULL) == -EINVAL);
	CHECK(upl_forwarder_stop(f) == 0); /* not started: a no-op */
	CHECK(upl_forwarder_free(f) == NULL);

	CHECK(upl_cursor_load(NULL, &seq) == -EINVAL);
	CHECK(upl_cursor_load(cur, NULL) == -EINVAL);
	CHECK(upl_cursor_store(NULL, 5) == -EINVAL);
	CHECK(upl_cursor_store(cur, 0) == -EINVAL);

	CHECK(fx_gnd_new(NULL, &r) == -EINVAL);
	CHECK(fx_gnd_new(&rc, NULL) == -EINVAL);
	rc.client_id = NULL;
	CHECK(fx_gnd_new(&rc, &r) == -EINVAL);
	rc.client_id = "x";
	rc.tls.insecure = true;
	CHECK(fx_gnd_new(&rc, &r) == -EINVAL);
	rc.tls.insecure = false;
	rc.use_tls = true;
	CHECK(fx_gnd_new(&rc, &r) == -EINVAL);
	rc.use_tls = false;
	rc.tls.key_file = "/nonexistent/key.pem"; /* TLS files without TLS */
	CHECK(fx_gnd_new(&rc, &r) == -EINVAL);
	rc.tls.key_file = NULL;
	CHECK(fx_gnd_new(&rc, &r) == 0);
	CHECK(fx_gnd_run(r) == -EINVAL); /* no host */
	CHECK(fx_gnd_feed(NULL, NULL, "", 0) == -EINVAL);
	CHECK(fx_gnd_feed(r, NULL, NULL, 5) == -EINVAL);
	CHECK(fx_gnd_stats(NULL, &rst) == -EINVAL);
	CHECK(fx_gnd_stats(r, NULL) == -EINVAL);
	CHECK(fx_gnd_vehicle(NULL, "v", &rv) == -EINVAL);
	CHECK(fx_gnd_vehicle(r, NULL, &rv) == -EINVAL);
	CHECK(fx_gnd_vehicle(r, "v", NULL) == -EINVAL);
	CHECK(fx_gnd_vehicle(r, "nobody", &rv) == -ENOENT);
	CHECK(fx_gnd_log(NULL, 0, &rl) == -EINVAL);
	CHECK(fx_gnd_log(r, 0, NULL) == -EINVAL);
	CHECK(fx_gnd_log(r, 0, &rl) == -ENOENT);
	CHECK(grd_ledger_same_records(NULL, 3, "", 0) == -EINVAL);
	CHECK(grd_ledger_same_records("", 0, NULL, 3) == -EINVAL);
	CHECK(grd_ledger_same_records("\xff\xff", 2, "", 0) == -EBADMSG);
	CHECK(fx_gnd_run(NULL) == -EINVAL);
	CHECK(fx_gnd_stop(NULL) == -EINVAL);
	CHECK(fx_gnd_wait_subscribed(NULL, 1) == -EINVAL);
	CHECK(fx_gnd_wait_records(NULL, 1, 1) == -EINVAL);
	CHECK(fx_gnd_wait_seq(NULL, "v", 1, 1) == -EINVAL);
	CHECK(fx_gnd_wait_seq(r, NULL, 1, 1) == -EINVAL);
	CHECK(fx_gnd_wait_seq(r, "v", 1, 1) == -ETIMEDOUT);
	CHECK(fx_gnd_wait_subscribed(r, 1) == -ETIMEDOUT);
	CHECK(fx_gnd_free(r) == NULL);
	CHECK(fx_gnd_free(NULL) == NULL);
	memlog_fini(&log);
	printf("bad arguments: ok\n");
}

static void write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	CHECK(f);
	fputs(s, f);
	CHECK(fclose(f) == 0);
}

static void test_cursor(void)
{
	char p[256], tmp[300];
	uint64_t seq = 0;
	struct stat st;

	path_in(p, sizeof(p), "c1");
	CHECK(upl_cursor_load(p, &seq) == 0 && seq == 1); /* missing: start of log */
	CHECK(upl_cursor_store(p, 123456789012ull) == 0);
	CHECK(upl_cursor_load(p, &seq) == 0 && seq == 123456789012ull);
	snprintf(tmp, sizeof(tmp), "%s.tmp", p);
	CHECK(stat(tmp, &st) < 0 && errno == ENOENT);
	CHECK(upl_cursor_store(p, 7) == 0);
	CHECK(upl_cursor_load(p, &seq) == 0 && seq == 7);
	/* Torn or foreign contents are refused, never read as a position;
	   each kind of damage has its own code (forward.h). */
	write_file(p, "railmon-cursor 1 77");
	seq = 5;
	CHECK(upl_cursor_load(p, &seq) == -EBADMSG && seq == 5);
	write_file(p, "hello\n");
	CHECK(upl_cursor_load(p, &seq) == -EBADMSG);
	write_file(p, "railmon-cursor 1 0\n");
	CHECK(upl_cursor_load(p, &seq) == -ERANGE);
	write_file(p, "railmon-cursor 1 -5\n");
	CHECK(upl_cursor_load(p, &seq) == -ERANGE);
	write_file(p, "railmon-cursor 1 99999999999999999999999\n");
	CHECK(upl_cursor_load(p, &seq) == -ERANGE);
	write_file(p, "");
	CHECK(upl_cursor_load(p, &seq) == -ENODATA && seq == 5);
	CHECK(upl_cursor_store("/nonexistent-dir/cursor", 3) == -ENOENT);
	/* A damaged cursor never stops the forwarder: it starts from the
	   oldest record (test-uplink-cursor.c follows it to the ground). */
	{
		struct memlog log;
		struct upl_forward_cfg c;
		struct upl_forward_stats fs;
		upl_forwarder_t *f = NULL;

		memlog_init(&log);
		c = fwd_cfg(&log, 1883, p);
		CHECK(upl_forwarder_new(&c, &f) == 0 && f);
		CHECK(upl_forwarder_stats(f, &fs) == 0 && fs.cursor == 1 && fs.cursor_damage == -ENODATA);
		upl_forwarder_free(f);
		memlog_fini(&log);
	}
	printf("cursor file: ok\n");
}

/* Count lines of a FILE written so far. */
static size_t count_lines(FILE *f)
{
	size_t n = 0;
	int c;

	fflush(f);
	rewind(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	return n;
}

static void test_feed(void)
{
	struct memlog log;
	struct gen g;
	struct fx_text text = { .fmt = REC_FORMAT_JSONL };
	struct fx_gnd_cfg rc = { .client_id = "feed", .on_record = fx_text_record, .ctx = &text };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r;
	char line[512];
	uint64_t total = 0;
	static const char origin_json[] =
		"{\"vehicle\":\"tram7\",\"log_id\":\"1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d01\",\"seq\":1,";
	static const char origin_csv[] = "tram7,1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d01,1,";

	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 64, 1700000000000000000) == 0);
	for (int i = 0; i < 6; i++)
		CHECK(gen_batch(&g, &log, 40, 1000000) == 0);
	for (size_t i = 0; i < log.n; i++)
		total += log.recs[i].count;
	text.out = tmpfile();
	CHECK(text.out);
	CHECK(fx_gnd_new(&rc, &r) == 0);

	/* 0, 1, then 3 (gap at 2), 3 again (duplicate), 2 fills the gap. */
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[0].buf, log.recs[0].len) == 40);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[1].buf, log.recs[1].len) == 40);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[3].buf, log.recs[3].len) == 40);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == 161 && v.missing == 40 && v.records == 120);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[3].buf, log.recs[3].len) == 0);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[2].buf, log.recs[2].len) == 40);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.missing == 0 && v.duplicates == 40 && v.records == 160);
	/* A Batch on another vehicle's topic would poison its sequence space. */
	CHECK(fx_gnd_feed(r, "railmon/tram8/data", log.recs[4].buf, log.recs[4].len) == -EBADMSG);
	CHECK(fx_gnd_feed(r, "nonsense", log.recs[4].buf, log.recs[4].len) == -EBADMSG);
	/* Malformed bytes: counted, not fatal. */
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", "\xff\xff\xff\xff", 4) == -EBADMSG);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", log.recs[4].buf, log.recs[4].len / 2) == -EBADMSG);
	CHECK(fx_gnd_feed(r, NULL, log.recs[4].buf, log.recs[4].len) == 40);
	CHECK(fx_gnd_feed(r, NULL, log.recs[5].buf, log.recs[5].len) == 40);
	CHECK(fx_gnd_stats(r, &st) == 0);
	CHECK(st.records == total && st.duplicates == 40 && st.bad == 4 && st.missing == 0);
	CHECK(st.vehicles == 1 && st.messages == 11 && st.batches == 6);
	CHECK(count_lines(text.out) == total);
	/* export's schema: where the record comes from, then the record */
	rewind(text.out);
	CHECK(fgets(line, sizeof(line), text.out));
	CHECK(strncmp(line, origin_json, strlen(origin_json)) == 0);
	CHECK(strstr(line, ",\"time\":\"2023-11-14T22:13:20."));
	CHECK(strstr(line, ",\"time_ns\":17000000000"));
	fx_gnd_free(r);
	fclose(text.out);

	/* CSV: one row per record; the callback gets every new Batch. */
	text.fmt = REC_FORMAT_CSV;
	text.out = tmpfile();
	CHECK(text.out && rec_format_header(text.out, REC_FORMAT_CSV) == 0);
	CHECK(fx_gnd_new(&rc, &r) == 0);
	for (size_t i = 0; i < log.n; i++)
		CHECK(fx_gnd_feed(r, NULL, log.recs[i].buf, log.recs[i].len) == 40);
	CHECK(count_lines(text.out) == total + 1);
	rewind(text.out);
	CHECK(fgets(line, sizeof(line), text.out));
	CHECK(strncmp(line, "vehicle,log_id,seq,time,time_ns,kind,", 37) == 0 && strstr(line, ",detail\n"));
	CHECK(fgets(line, sizeof(line), text.out));
	CHECK(strncmp(line, origin_csv, strlen(origin_csv)) == 0 && strstr(line, ",2023-11-14T22:13:20.") &&
	      strstr(line, ",17000000000"));
	fx_gnd_free(r);
	fclose(text.out);
	gen_fini(&g);
	memlog_fini(&log);
	printf("recv feed (gaps, duplicates, jsonl, csv, bad payloads): ok\n");
}

/* ---- per-log tracking (issue 10) ---- */

struct refusals {
	struct fx_text text;        /* the records written, if text.out */
	unsigned n[GRD_LEDGER_REFUSAL_MAX];
	size_t last_len;
	uint64_t last_first;
	const void *last_payload;
};

static void count_refused(void *ctx, enum grd_ledger_refusal why, const struct rec_batch_info *info, rec_batch_t **b,
                          const void *payload, size_t len)
{
	struct refusals *f = ctx;

	f->n[why]++;
	f->last_len = len;
	f->last_first = info->first_seq;
	f->last_payload = payload;
}

static int refusals_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                           const struct acq_item *it, bool first, void **log_ctx)
{
	struct refusals *f = ctx;

	return fx_text_record(&f->text, info, b, it, first, log_ctx);
}

static fx_gnd_t *feed_recv(FILE *out, struct refusals *f, size_t max_vehicles)
{
	struct fx_gnd_cfg rc = { .client_id = "feed", .on_record = out ? refusals_record : NULL,
	                           .on_refused = count_refused, .ctx = f, .max_vehicles = max_vehicles };
	fx_gnd_t *r;

	f->text = (struct fx_text){ out, REC_FORMAT_JSONL };
	CHECK(fx_gnd_new(&rc, &r) == 0);
	return r;
}

/* A vehicle's log replaced (new card): seq restarts at 1 under a new log
   id and is taken as new, in its own log; Batches without a log id (older
   railmon) are a log of their own too. */
static void test_new_log(void)
{
	static const uint8_t id_b[REC_LOG_ID_LEN] = { 0xbb, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	struct memlog la, lb, lc;
	struct gen ga, gb, gc;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	struct grd_ledger_log l;
	FILE *out = tmpfile();
	fx_gnd_t *r = feed_recv(out, &f, 0);
	char line[512];

	memlog_init(&la);
	memlog_init(&lb);
	memlog_init(&lc);
	CHECK(gen_init(&ga, "tram7", 64, 1700000000000000000) == 0);
	CHECK(gen_init_log(&gb, "tram7", id_b, 64, 1700000100000000000) == 0);
	CHECK(gen_init_log(&gc, "tram7", NULL, 64, 1700000200000000000) == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(gen_batch(&ga, &la, 40, 1000000) == 0);
		CHECK(gen_batch(&gb, &lb, 30, 1000000) == 0);
		CHECK(gen_batch(&gc, &lc, 20, 1000000) == 0);
	}
	for (int i = 0; i < 3; i++)
		CHECK(fx_gnd_feed(r, "railmon/tram7/data", la.recs[i].buf, la.recs[i].len) == 40);
	/* Same seqs 1..90, another log: new records, not duplicates. */
	for (int i = 0; i < 3; i++)
		CHECK(fx_gnd_feed(r, "railmon/tram7/data", lb.recs[i].buf, lb.recs[i].len) == 30);
	for (int i = 0; i < 3; i++)
		CHECK(fx_gnd_feed(r, "railmon/tram7/data", lc.recs[i].buf, lc.recs[i].len) == 20);
	/* Re-sends of each stay duplicates of their own log. */
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", la.recs[1].buf, la.recs[1].len) == 0);
	CHECK(fx_gnd_feed(r, "railmon/tram7/data", lb.recs[0].buf, lb.recs[0].len) == 0);
	CHECK(fx_gnd_stats(r, &st) == 0);
	CHECK(st.records == 270 && st.duplicates == 70 && st.missing == 0 && st.vehicles == 1 && st.logs == 3);
	CHECK(st.refused[GRD_LEDGER_CONFLICT] == 0 && f.n[GRD_LEDGER_CONFLICT] == 0);
	CHECK(fx_gnd_log(r, 0, &l) == 0 && l.log_id_len == 16 && l.log_id[0] == 0x1d);
	CHECK(l.first_seq == 1 && l.next_seq == 121 && l.records == 120 && l.duplicates == 40);
	CHECK(fx_gnd_log(r, 1, &l) == 0 && l.log_id_len == 16 && l.log_id[0] == 0xbb);
	CHECK(l.first_seq == 1 && l.next_seq == 91 && l.records == 90 && l.duplicates == 30);
	CHECK(fx_gnd_log(r, 2, &l) == 0 && l.log_id_len == 0 && l.records == 60 && !strcmp(l.vehicle, "tram7"));
	CHECK(fx_gnd_log(r, 3, &l) == -ENOENT);
	/* The vehicle view is its newest log. */
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0 && v.logs == 3 && v.records == 60 && v.next_seq == 61);
	/* Each JSON line names its log. */
	rewind(out);
	CHECK(fgets(line, sizeof(line), out) && strstr(line, "\"log_id\":\"1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d01\""));
	fx_gnd_free(r);
	fclose(out);
	gen_fini(&ga);
	gen_fini(&gb);
	gen_fini(&gc);
	memlog_fini(&la);
	memlog_fini(&lb);
	memlog_fini(&lc);
	printf("new log of a vehicle (seq from 1 again) taken, per-log duplicates: ok\n");
}

/* Encode one Batch of n records from seq (content from g). */
static void one_batch(struct gen *g, struct memlog *l, uint64_t seq, size_t n)
{
	l->next_seq = seq;
	CHECK(gen_batch(g, l, n, 1000000) == 0);
}

/* A Batch over a range already received with other records is a
   conflict: refused whole, counted, handed over to keep; a re-send
   (even flagged historical) stays a silent duplicate; first come is not
   silently first served. */
static void test_conflicts(void)
{
	struct memlog real, forged;
	struct gen gr, gf;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);
	uint8_t *hist;

	memlog_init(&real);
	memlog_init(&forged);
	CHECK(gen_init(&gr, "tram7", 64, 1700000000000000000) == 0);
	CHECK(gen_init(&gf, "tram7", 64, 1700000000000000000) == 0);
	gf.rng ^= 0x5555; /* same log id, other records */
	one_batch(&gr, &real, 1, 40);   /* recs[0]: 1..40 */
	one_batch(&gr, &real, 41, 40);  /* recs[1]: 41..80 */
	one_batch(&gf, &forged, 1, 40); /* recs[0]: 1..40, other content */
	one_batch(&gf, &forged, 21, 40); /* recs[1]: 21..60, overlapping */
	one_batch(&gf, &forged, 81, 40); /* recs[2]: 81..120, forged first */
	one_batch(&gr, &real, 81, 40);  /* recs[2]: 81..120, the real one after */

	CHECK(fx_gnd_feed(r, NULL, real.recs[0].buf, real.recs[0].len) == 40);
	CHECK(fx_gnd_feed(r, NULL, forged.recs[0].buf, forged.recs[0].len) == -EEXIST);
	CHECK(f.n[GRD_LEDGER_CONFLICT] == 1 && f.last_first == 1 && f.last_len == forged.recs[0].len);
	CHECK(fx_gnd_feed(r, NULL, real.recs[1].buf, real.recs[1].len) == 40);
	CHECK(fx_gnd_feed(r, NULL, forged.recs[1].buf, forged.recs[1].len) == -EEXIST);
	/* A QoS 1 re-send, and a backlog re-send with Batch.historical appended. */
	CHECK(fx_gnd_feed(r, NULL, real.recs[0].buf, real.recs[0].len) == 0);
	hist = malloc(real.recs[1].len + 2);
	CHECK(hist);
	memcpy(hist, real.recs[1].buf, real.recs[1].len);
	hist[real.recs[1].len] = 7 << 3;
	hist[real.recs[1].len + 1] = 1;
	CHECK(fx_gnd_feed(r, NULL, hist, real.recs[1].len + 2) == 0);
	/* The same comparison for a ground log: records, not bytes. */
	CHECK(grd_ledger_same_records(real.recs[1].buf, real.recs[1].len, hist, real.recs[1].len + 2) == 1);
	CHECK(grd_ledger_same_records(real.recs[0].buf, real.recs[0].len, forged.recs[0].buf,
	                            forged.recs[0].len) == 0);
	CHECK(grd_ledger_same_records(real.recs[0].buf, real.recs[0].len, real.recs[1].buf, real.recs[1].len) == 0);
	free(hist);
	CHECK(f.n[GRD_LEDGER_CONFLICT] == 2);
	/* The forged one came first: the real one is refused as a conflict,
	   reported and handed over, never silently dropped. */
	CHECK(fx_gnd_feed(r, NULL, forged.recs[2].buf, forged.recs[2].len) == 40);
	CHECK(fx_gnd_feed(r, NULL, real.recs[2].buf, real.recs[2].len) == -EEXIST);
	CHECK(f.n[GRD_LEDGER_CONFLICT] == 3 && f.last_first == 81);
	CHECK(fx_gnd_stats(r, &st) == 0);
	CHECK(st.records == 120 && st.duplicates == 80 && st.unverified == 0 && st.bad == 0);
	CHECK(st.refused[GRD_LEDGER_CONFLICT] == 3 && st.conflict_records == 120 && st.missing == 0);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0 && v.records == 120 && v.duplicates == 80);
	fx_gnd_free(r);
	gen_fini(&gr);
	gen_fini(&gf);
	memlog_fini(&real);
	memlog_fini(&forged);
	printf("conflicts refused and reported, re-sends silent duplicates: ok\n");
}

/* Past GRD_LEDGER_MAX_RANGES the oldest ranges are forgotten; the counts
   keep their documented meaning: lowest seq seen, distinct records seen,
   holes between them. */
static void test_forget(void)
{
	enum { N = 2200 };
	struct memlog l;
	struct gen g;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);

	memlog_init(&l);
	CHECK(gen_init(&g, "tram7", 4, 1700000000000000000) == 0);
	/* One-record Batches at seq 1, 3, 5, ...: a hole between each. */
	for (int i = 0; i < N; i++) {
		one_batch(&g, &l, 1 + 2 * (uint64_t)i, 1);
		CHECK(fx_gnd_feed(r, NULL, l.recs[i].buf, l.recs[i].len) == 1);
	}
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == 2 * N && v.records == N && v.missing == N - 1);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.records == N && st.missing == N - 1 && st.old == 0);
	/* seq 1 again: its range is forgotten, so it cannot be told from a
	   late record: written (counted in old), the counts stay exact. */
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == 1);
	/* The newest one again: remembered, a duplicate. */
	CHECK(fx_gnd_feed(r, NULL, l.recs[N - 1].buf, l.recs[N - 1].len) == 0);
	/* A hole above the remembered floor filled: one missing less. */
	one_batch(&g, &l, 2 * N - 2, 1);
	CHECK(fx_gnd_feed(r, NULL, l.recs[N].buf, l.recs[N].len) == 1);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == 2 * N && v.records == N + 1 && v.missing == N - 2);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.records == N + 2 && st.old == 1 && st.duplicates == 1);
	CHECK(st.missing == N - 2);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	printf("ranges forgotten past %d: first seq, records and missing stay exact: ok\n",
	       GRD_LEDGER_MAX_RANGES);
}

/* Seqs arriving backwards or shuffled, past the GRD_LEDGER_MAX_RANGES cap:
   a range touching the next one up ([5, 6) then [4, 5)) must merge with
   it, or every one-record Batch stays a range of its own, the cap is
   passed and the oldest are forgotten (records counted old, written
   again).  Ascending input never shows it: there a new range only
   touches the one below, found by range_find. */
static void test_merge_backwards(void)
{
	enum { N = 2 * GRD_LEDGER_MAX_RANGES + 100 };
	static size_t order[N];
	struct memlog l;
	struct gen g;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);
	uint64_t x = 0x9e3779b97f4a7c15ull;

	memlog_init(&l);
	CHECK(gen_init(&g, "tram7", 4, 1700000000000000000) == 0);
	for (size_t i = 0; i < N; i++)
		one_batch(&g, &l, 1 + (uint64_t)i, 1);
	/* Descending: each Batch touches the range above it. */
	for (size_t i = N; i-- > 0;)
		CHECK(fx_gnd_feed(r, NULL, l.recs[i].buf, l.recs[i].len) == 1);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == N + 1 && v.records == N && v.missing == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.records == N && st.old == 0 && st.duplicates == 0);
	/* All again, shuffled (xorshift, fixed seed): every one a duplicate,
	   nothing written a second time. */
	for (size_t i = 0; i < N; i++)
		order[i] = i;
	for (size_t i = N - 1; i > 0; i--) {
		size_t j, t;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (size_t)(x % (i + 1));
		t = order[i], order[i] = order[j], order[j] = t;
	}
	for (size_t i = 0; i < N; i++)
		CHECK(fx_gnd_feed(r, NULL, l.recs[order[i]].buf, l.recs[order[i]].len) == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.records == N && st.old == 0 && st.duplicates == N);
	fx_gnd_free(r);

	/* A fresh receiver, the same Batches in that shuffled order: the
	   holes close as they come, one range at the end. */
	r = feed_recv(NULL, &f, 0);
	for (size_t i = 0; i < N; i++)
		CHECK(fx_gnd_feed(r, NULL, l.recs[order[i]].buf, l.recs[order[i]].len) == 1);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0);
	CHECK(v.first_seq == 1 && v.next_seq == N + 1 && v.records == N && v.missing == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.records == N && st.old == 0 && st.duplicates == 0);
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.old == 0 && st.duplicates == 1);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	printf("%d one-record Batches backwards and shuffled: touching ranges merged, none forgotten: ok\n", N);
}

/* A re-send of a Batch older than the last GRD_LEDGER_MAX_DIGESTS: its
   records were received (skipped) but cannot be compared any more:
   counted apart, so a summary can say so. */
static void test_unverified(void)
{
	enum { N = GRD_LEDGER_MAX_DIGESTS + 50 };
	struct memlog l;
	struct gen g;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);

	memlog_init(&l);
	CHECK(gen_init(&g, "tram7", 4, 1700000000000000000) == 0);
	for (int i = 0; i < N; i++) {
		one_batch(&g, &l, 1 + (uint64_t)i, 1);
		CHECK(fx_gnd_feed(r, NULL, l.recs[i].buf, l.recs[i].len) == 1);
	}
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == 0);
	CHECK(fx_gnd_feed(r, NULL, l.recs[N - 1].buf, l.recs[N - 1].len) == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.duplicates == 2 && st.unverified == 1);
	CHECK(st.records == N && st.missing == 0 && st.refused[GRD_LEDGER_CONFLICT] == 0);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	printf("re-send older than the Batches remembered: skipped, counted unverified: ok\n");
}

/* A bogus seq (2^63, near UINT64_MAX, or far from the rest of its log)
   must not turn into billions of records "missing". */
static void test_bogus_seq(void)
{
	struct memlog l;
	struct gen g;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);

	memlog_init(&l);
	CHECK(gen_init(&g, "tram7", 64, 1700000000000000000) == 0);
	one_batch(&g, &l, 1, 10);
	one_batch(&g, &l, UINT64_C(1) << 63, 1);
	one_batch(&g, &l, UINT64_MAX - 5, 3);
	one_batch(&g, &l, (UINT64_C(1) << 63) - 1, 2);     /* ends past 2^63 */
	one_batch(&g, &l, UINT64_C(1) << 62, 5);           /* far from 1..10 */
	one_batch(&g, &l, 11 + (UINT64_C(1) << 39), 5);    /* a gap, but a plausible one */
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == 10);
	for (int i = 1; i <= 3; i++)
		CHECK(fx_gnd_feed(r, NULL, l.recs[i].buf, l.recs[i].len) == -EBADMSG);
	CHECK(fx_gnd_feed(r, NULL, l.recs[4].buf, l.recs[4].len) == -ERANGE);
	CHECK(fx_gnd_stats(r, &st) == 0);
	CHECK(st.bad == 3 && st.refused[GRD_LEDGER_SEQ_JUMP] == 1 && f.n[GRD_LEDGER_SEQ_JUMP] == 1);
	CHECK(st.missing == 0 && st.records == 10);
	CHECK(fx_gnd_vehicle(r, "tram7", &v) == 0 && v.next_seq == 11 && v.missing == 0);
	CHECK(fx_gnd_feed(r, NULL, l.recs[5].buf, l.recs[5].len) == 5);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.missing == UINT64_C(1) << 39);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	printf("bogus seq refused (malformed, implausible), missing stays true: ok\n");
}

/* No fixed table: 5000 vehicles all tracked; past max_vehicles each new
   vehicle's Batch is refused and reported, never dropped silently. */
/* A log's first Batch far from seq 1 has nothing to be checked against:
   held as a jump until the next Batch starts where it ended (an honest
   vehicle first met late); a lone one at 2^62 does not make the log's real
   Batches from seq 1 jumps (before: it became the log's first, 1..10 was
   refused and the log said nothing missing of a bogus span). */
static void test_first_far(void)
{
	struct memlog l;
	struct gen g;
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0);
	uint64_t far = (UINT64_C(1) << 40) + 1;

	memlog_init(&l);
	CHECK(gen_init(&g, "tram8", 64, 1700000000000000000) == 0);
	one_batch(&g, &l, UINT64_C(1) << 62, 5);           /* a lone bogus first Batch */
	one_batch(&g, &l, 1, 10);                          /* the log's real start */
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == -ERANGE);
	CHECK(fx_gnd_feed(r, NULL, l.recs[1].buf, l.recs[1].len) == 10);
	CHECK(fx_gnd_vehicle(r, "tram8", &v) == 0 && v.next_seq == 11 && v.missing == 0);
	CHECK(fx_gnd_stats(r, &st) == 0 && st.refused[GRD_LEDGER_SEQ_JUMP] == 1 && st.records == 10);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);

	/* an honest log first met at 2^40 + 1: its first Batch held, the next
	   one (where it ended) confirms it; 2^40 itself is not far */
	r = feed_recv(NULL, &f, 0);
	memlog_init(&l);
	CHECK(gen_init(&g, "tram9", 64, 1700000000000000000) == 0);
	one_batch(&g, &l, far, 5);
	one_batch(&g, &l, far + 5, 5);
	one_batch(&g, &l, far + 10, 5);
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == -ERANGE);
	CHECK(fx_gnd_feed(r, NULL, l.recs[1].buf, l.recs[1].len) == 5);
	CHECK(fx_gnd_feed(r, NULL, l.recs[2].buf, l.recs[2].len) == 5);
	CHECK(fx_gnd_vehicle(r, "tram9", &v) == 0 && v.next_seq == far + 15 && v.missing == 0);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	r = feed_recv(NULL, &f, 0);
	memlog_init(&l);
	CHECK(gen_init(&g, "tram10", 64, 1700000000000000000) == 0);
	one_batch(&g, &l, far - 1, 5);
	CHECK(fx_gnd_feed(r, NULL, l.recs[0].buf, l.recs[0].len) == 5);
	fx_gnd_free(r);
	gen_fini(&g);
	memlog_fini(&l);
	printf("a log's first Batch far from seq 1 held until the next one confirms it: ok\n");
}

static void test_many_vehicles(void)
{
	struct refusals f = { 0 };
	struct fx_gnd_stats st;
	struct grd_ledger_vehicle v;
	fx_gnd_t *r = feed_recv(NULL, &f, 0), *capped = feed_recv(NULL, &f, 100);
	rec_encoder_t *enc;
	char name[32];

	for (int i = 0; i < 5000; i++) {
		struct rec_batch_meta meta = { .vehicle = name, .log_id = { 1 } };
		struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = 1700000000000000000 + i };
		const uint8_t *buf;
		size_t len;

		snprintf(name, sizeof(name), "veh-%04d", i);
		CHECK(rec_encoder_new(&meta, 1, &enc) == 0);
		CHECK(rec_encoder_add(enc, &it) == 0);
		CHECK(rec_encoder_finish(enc, 1, &buf, &len) == 1);
		CHECK(fx_gnd_feed(r, NULL, buf, len) == 1);
		CHECK(fx_gnd_feed(capped, NULL, buf, len) == (i < 100 ? 1 : -EUSERS));
		rec_encoder_free(enc);
	}
	CHECK(fx_gnd_stats(r, &st) == 0 && st.vehicles == 5000 && st.records == 5000 && st.bad == 0);
	CHECK(fx_gnd_vehicle(r, "veh-4999", &v) == 0 && v.records == 1);
	CHECK(fx_gnd_stats(capped, &st) == 0 && st.vehicles == 100 && st.records == 100);
	CHECK(st.refused[GRD_LEDGER_TOO_MANY_VEHICLES] == 4900 && f.n[GRD_LEDGER_TOO_MANY_VEHICLES] == 4900);
	fx_gnd_free(r);
	fx_gnd_free(capped);
	printf("5000 vehicles tracked; past max_vehicles refused and counted: ok\n");
}

/* Read the retained status of tram7 with a plain libmosquitto client. */
struct status_ctx {
	char value[32];
	bool got;
};

static void status_msg(struct mosquitto *m, void *arg, const struct mosquitto_message *msg)
{
	struct status_ctx *s = arg;

	snprintf(s->value, sizeof(s->value), "%.*s", msg->payloadlen, (const char *)msg->payload);
	s->got = msg->retain;
}

static void read_status(int port, char *ret, size_t size)
{
	struct status_ctx s = { 0 };
	struct mosquitto *m = mosquitto_new(NULL, true, &s);

	CHECK(m);
	mosquitto_message_callback_set(m, status_msg);
	CHECK(mosquitto_connect(m, "127.0.0.1", port, 10) == MOSQ_ERR_SUCCESS);
	CHECK(mosquitto_subscribe(m, NULL, "railmon/tram7/status", 1) == MOSQ_ERR_SUCCESS);
	WAIT_FOR(({ CHECK(mosquitto_loop(m, 100, 1) == MOSQ_ERR_SUCCESS); s.got; }), 5000);
	mosquitto_destroy(m);
	CHECK(s.got);
	snprintf(ret, size, "%s", s.value);
}

struct recv_thread {
	fx_gnd_t *r;
	pthread_t t;
	int ret;
};

static void *recv_main(void *arg)
{
	struct recv_thread *rt = arg;

	rt->ret = fx_gnd_run(rt->r);
	return NULL;
}

/* Start the Python consumer and wait for its "ready" line (subscribed). */
static void start_python(struct tlib_peer *p, const char *script, const char *pb2_dir, int port,
                         uint64_t count, const char *out)
{
	char cnt[32], portb[16], path[512], line[64];
	char *argv[] = { "env", path, "/usr/bin/python3", (char *)script, "subscribe", "--port", portb,
	                 "--count", cnt, "--out", (char *)out, "--timeout", "60", NULL };

	snprintf(cnt, sizeof(cnt), "%llu", (unsigned long long)count);
	snprintf(portb, sizeof(portb), "%d", port);
	snprintf(path, sizeof(path), "PYTHONPATH=%s", pb2_dir);
	/* Like the broker (fixture.c): gone when this test dies. */
	CHECK(tlib_peer_start(p, argv, TLIB_PEER_STDOUT) == 0);
	/* Bounded: the consumer exits by itself after --timeout. */
	CHECK(tlib_peer_readline(p, line, sizeof(line), 60000) == 0 && strcmp(line, "ready") == 0);
}

/* A log that fails now and then: -EIO (a bad read) and -EBADMSG (a
   damaged frame the reader skipped) must neither lose records nor drop
   the connection. */
struct flaky {
	struct upl_source inner;
	unsigned calls;
};

static int flaky_seek(void *ctx, uint64_t seq)
{
	struct flaky *k = ctx;

	return k->inner.seek(k->inner.ctx, seq);
}

static int flaky_next(void *ctx, struct upl_rec *ret)
{
	struct flaky *k = ctx;

	k->calls++;
	if (k->calls % 7 == 3)
		return -EIO;
	if (k->calls % 11 == 5)
		return -EBADMSG;
	return k->inner.next(k->inner.ctx, ret);
}

static void test_flaky_source(int port)
{
	struct memlog log;
	struct gen g;
	struct flaky k = { 0 };
	struct upl_forward_cfg c;
	struct upl_forward_stats st;
	upl_forwarder_t *f;
	char cur[256];

	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 64, basic_realtime_ns()) == 0);
	for (int i = 0; i < 50; i++)
		CHECK(gen_batch(&g, &log, 20, 1000000) == 0);
	k.inner = memlog_source(&log);
	path_in(cur, sizeof(cur), "flaky.cursor");
	c = fwd_cfg(&log, port, cur);
	c.client_id = "railmon-test-flaky";
	c.source = (struct upl_source){ .seek = flaky_seek, .next = flaky_next, .ctx = &k };
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, log.next_seq, 20000) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(st.acked == 50 && st.source_errors >= 10 && st.connects == 1 && st.resent == 0);
	upl_forwarder_free(f);
	gen_fini(&g);
	memlog_fini(&log);
	printf("source errors (-EIO, -EBADMSG): ok, %llu counted\n",
	       (unsigned long long)st.source_errors);
}

/* Events in the log, for checking railmon/<vehicle>/events. */
static uint64_t count_events(const struct memlog *log)
{
	uint64_t n = 0;

	for (size_t i = 0; i < log->n; i++) {
		struct rec_batch_info info;
		rec_batch_t *b;

		CHECK(rec_batch_decode(log->recs[i].buf, log->recs[i].len, &b) == 0);
		CHECK(rec_batch_info(b, &info) == 0);
		for (uint32_t k = 0; k < info.count; k++) {
			struct acq_item it;

			CHECK(rec_batch_item(b, k, &it) == 0);
			n += it.kind == ACQ_ITEM_EVENT;
		}
		rec_batch_free(b);
	}
	return n;
}

static void test_end_to_end(const char *script, const char *pb2_dir)
{
	struct broker b;
	struct memlog log;
	struct gen g;
	struct recv_thread rt = { 0 }, ev_rt = { 0 };
	struct fx_gnd_cfg ev_rc = { .host = "127.0.0.1", .client_id = "railmon-test-events",
	                              .topic = "railmon/+/events" };
	struct fx_gnd_stats ev_st;
	uint64_t nevents;
	struct fx_text text = { .fmt = REC_FORMAT_JSONL };
	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .client_id = "railmon-test-recv",
	                           .on_record = fx_text_record, .ctx = &text };
	struct upl_forward_cfg c;
	struct upl_forward_stats fst;
	struct fx_gnd_stats rst;
	upl_forwarder_t *f;
	char cur[256], out_c[256], out_py[256], status[32];
	uint64_t seq, total = 0;
	int status_py;
	struct tlib_peer py;

	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 256, basic_realtime_ns() - 600 * INT64_C(1000000000)) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(gen_batch(&g, &log, 200, 1000000) == 0);
	total = log.next_seq - 1 + 100 * 200; /* plus the live half below */

	path_in(out_c, sizeof(out_c), "recv.jsonl");
	path_in(out_py, sizeof(out_py), "python.jsonl");
	start_python(&py, script, pb2_dir, b.port, total, out_py);
	rc.port = b.port;
	text.out = fopen(out_c, "w");
	CHECK(text.out);
	CHECK(fx_gnd_new(&rc, &rt.r) == 0);
	CHECK(pthread_create(&rt.t, NULL, recv_main, &rt) == 0);
	CHECK(fx_gnd_wait_subscribed(rt.r, 10000) == 0);
	ev_rc.port = b.port;
	CHECK(fx_gnd_new(&ev_rc, &ev_rt.r) == 0);
	CHECK(pthread_create(&ev_rt.t, NULL, recv_main, &ev_rt) == 0);
	CHECK(fx_gnd_wait_subscribed(ev_rt.r, 10000) == 0);

	path_in(cur, sizeof(cur), "e2e.cursor");
	c = fwd_cfg(&log, b.port, cur);
	c.cursor_interval_ms = 0;
	c.publish_events = true;
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_start(f) == -EALREADY);
	/* Half the data is backlog, half arrives while forwarding (live). */
	CHECK(upl_forwarder_wait_cursor(f, 20 * 200, 20000) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(gen_batch(&g, &log, 200, 1000000) == 0);
	CHECK(log.next_seq - 1 == total);
	CHECK(upl_forwarder_wait_cursor(f, log.next_seq, 20000) == 0);
	CHECK(fx_gnd_wait_records(rt.r, total, 20000) == 0);
	read_status(b.port, status, sizeof(status));
	CHECK(strcmp(status, "online") == 0);
	CHECK(upl_forwarder_stats(f, &fst) == 0);
	CHECK(fst.acked == log.n && fst.connected && fst.connects == 1 && fst.resent == 0);
	CHECK(fst.cursor == log.next_seq && !fst.insecure);
	/* Every event also went out on .../events, once, with its own seq. */
	nevents = count_events(&log);
	CHECK(nevents > 0 && fst.events_published > 0);
	CHECK(fx_gnd_wait_records(ev_rt.r, nevents, 20000) == 0);
	CHECK(fx_gnd_stats(ev_rt.r, &ev_st) == 0);
	CHECK(ev_st.records == nevents && ev_st.duplicates == 0 && ev_st.bad == 0);
	CHECK(ev_st.batches == fst.events_published);
	fx_gnd_stop(ev_rt.r);
	pthread_join(ev_rt.t, NULL);
	fx_gnd_free(ev_rt.r);
	CHECK(upl_forwarder_stop(f) == 0);
	/* The persisted cursor is exactly past the last acknowledged record. */
	CHECK(upl_cursor_load(cur, &seq) == 0 && seq == log.next_seq);
	read_status(b.port, status, sizeof(status));
	CHECK(strcmp(status, "offline") == 0);
	upl_forwarder_free(f);

	/* Both consumers hold the same records. */
	status_py = tlib_peer_finish(&py, 120000);
	CHECK(status_py >= 0 && WIFEXITED(status_py) && WEXITSTATUS(status_py) == 0);
	CHECK(fflush(text.out) == 0);
	{
		char *argv[] = { "/usr/bin/python3", (char *)script, "compare", out_c, out_py, NULL };

		CHECK(tlib_run(argv, 60) == 0);
	}

	/* A new forwarder resumes from the cursor: nothing is sent again. */
	CHECK(gen_batch(&g, &log, 200, 1000000) == 0);
	total += 200;
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, log.next_seq, 20000) == 0);
	CHECK(fx_gnd_wait_records(rt.r, total, 20000) == 0);
	CHECK(upl_forwarder_stats(f, &fst) == 0 && fst.acked == 1);
	upl_forwarder_free(f);

	fx_gnd_stop(rt.r);
	pthread_join(rt.t, NULL);
	CHECK(rt.ret == 0);
	CHECK(fx_gnd_stats(rt.r, &rst) == 0);
	CHECK(rst.records == total && rst.duplicates == 0 && rst.missing == 0 && rst.bad == 0);
	fx_gnd_free(rt.r);
	fclose(text.out);
	test_flaky_source(b.port);
	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	printf("end to end (recv + python consumer identical, cursor, status): ok\n");
}

/* Run a forwarder with these credentials: it must deliver the log, or be
   refused (CONNACK "not authorized") attempt after attempt. */
static void try_login(int port, const char *user, const char *pass, struct memlog *log, bool ok)
{
	struct fx_events ev;
	char cur[256];
	struct upl_forward_cfg c;
	upl_forwarder_t *f;

	fx_events_init(&ev);
	path_in(cur, sizeof(cur), "login.cursor");
	unlink(cur);
	c = fwd_cfg(log, port, cur);
	c.username = user;
	c.password = pass;
	c.on_event = fx_on_event;
	c.event_ctx = &ev;
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	if (ok) {
		CHECK(upl_forwarder_wait_cursor(f, log->next_seq, 10000) == 0);
	} else {
		struct upl_forward_stats st;

		CHECK(fx_events_wait(&ev, UPL_FWD_CONNECT_FAILED, 2, 10000) == 0);
		CHECK(fx_events_get(&ev, UPL_FWD_CONNECTED) == 0);
		/* Not "connection refused": the board must be able to say that
		   the broker is there and refuses these credentials. */
		CHECK(upl_forwarder_stats(f, &st) == 0);
		printf("login %s: %s\n", user ? user : "(anonymous)", st.last_error_text);
		CHECK(ev.last_err == -EACCES && strstr(st.last_error_text, "not authorised"));
	}
	upl_forwarder_free(f);
}

/* A broker that wants a user name and password. */
static void test_password(void)
{
	struct broker b;
	struct memlog log;
	struct gen g;
	char pwfile[256], extra[512];

	path_in(pwfile, sizeof(pwfile), "passwd");
	{
		char *argv[] = { "mosquitto_passwd", "-c", "-b", pwfile, "tram7", "s3cret", NULL };

		CHECK(tlib_run(argv, 30) == 0);
	}
	snprintf(extra, sizeof(extra), "allow_anonymous false\npassword_file %s\n", pwfile);
	CHECK(broker_init(&b, false, extra) == 0);
	CHECK(broker_start(&b) == 0);
	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 64, basic_realtime_ns()) == 0);
	CHECK(gen_batch(&g, &log, 50, 1000000) == 0);
	try_login(b.port, NULL, NULL, &log, false);
	try_login(b.port, "tram7", "wrong", &log, false);
	try_login(b.port, "tram7", "s3cret", &log, true);
	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	printf("user name and password: ok\n");
}

int main(int argc, char **argv)
{
	char *rm[] = { "rm", "-rf", tmpdir, NULL };

	if (argc != 3) {
		fprintf(stderr, "usage: %s CONSUMER_PY PB2_DIR\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	CHECK(mkdtemp(tmpdir));
	test_bad_args();
	test_cursor();
	test_feed();
	test_new_log();
	test_conflicts();
	test_forget();
	test_merge_backwards();
	test_unverified();
	test_bogus_seq();
	test_first_far();
	test_many_vehicles();
	test_end_to_end(argv[1], argv[2]);
	test_password();
	tlib_run(rm, 30);
	return 0;
}
