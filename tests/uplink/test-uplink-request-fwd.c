/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-request-fwd.c - full-rate requests at the forwarder
 * (requests_path, issue 32) over a real log (storage/) of 8 Batches, one
 * a second (Batch i's records from T0 + i s, 1 ms apart), read by the
 * resend_source; the backlog source is empty, so every data message is a
 * request's.  A plain libmosquitto client is the ground.
 *
 * - a request left pending in the file by a run before (a restart) is
 *   served at start without being published again: Batches 6 and 7;
 * - a published request for [T(2), the end of Batch 4] gets Batches 2, 3
 *   and 4, whole (their stored seqs and counts) and historical, in order;
 * - the same id published again sends nothing (counted again);
 * - a range after the log's end is served with nothing sent;
 * - the log starts at seq 11 (as if retention deleted 1-10): a range
 *   from before its first Batch is answered "gone" for 1-10 and gets
 *   Batch 0;
 * - the file then holds the four ids as served, none pending.
 */
#include <errno.h>
#include <inttypes.h>
#include <mosquitto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "stor-source.h"
#include "storage/stor.h"
#include "uplink/forward.h"
#include "uplink/request.h"

#define T0 (1700000000 * INT64_C(1000000000))
#define SEC INT64_C(1000000000)

static const uint32_t counts[] = { 3, 1, 4, 2, 5, 1, 1, 3 };
#define NBATCH (sizeof(counts) / sizeof(counts[0]))

static void publish(struct mosquitto *m, const char *id, int64_t from, int64_t to)
{
	char msg[UPL_REQUEST_LINE_MAX];
	struct upl_request r = { .from_ns = from, .to_ns = to };
	int n;

	snprintf(r.id, sizeof(r.id), "%s", id);
	n = upl_request_format(&r, msg, sizeof(msg));
	CHECK(n > 0 && mosquitto_publish(m, NULL, "railmon/loco9/request", n, msg, 1, false) == MOSQ_ERR_SUCCESS);
}

/* For a failed check: what the forwarder did and what the ground saw.  A
   reconnect shows here: re-sends are fire-and-forget, so those still in
   libmosquitto's queue when a connection drops never arrive. */
static const char *said(upl_forwarder_t *f, struct fx_seen *s)
{
	static char text[512];
	struct upl_forward_stats st = fx_fwd_stats(f);

	pthread_mutex_lock(&s->lock);
	snprintf(text, sizeof(text),
	         "forwarder: %" PRIu64 " connects, %" PRIu64 " failed attempts, last error '%s'; requests taken %" PRIu64
	         ", again %" PRIu64 ", refused %" PRIu64 ", served %" PRIu64 "; %" PRIu64 " Batches re-sent, %" PRIu64
	         " gone; the ground saw %zu Batches, %u gone, %u bad",
	         st.connects, st.connect_fails, st.last_error_text, st.requests_taken, st.requests_again,
	         st.requests_refused, st.requests_served, st.resend_batches, st.resend_gone, s->n, s->gone_n, s->bad);
	pthread_mutex_unlock(&s->lock);
	return text;
}

/* The Batches seen from index at on are exactly Batches lo..hi of the log. */
static void check_batches(struct fx_seen *s, size_t at, const uint64_t *first, size_t lo, size_t hi, const char *what)
{
	pthread_mutex_lock(&s->lock);
	CHECK(s->n == at + hi - lo + 1, "%s: %zu Batches, want %zu", what, s->n - at, hi - lo + 1);
	for (size_t i = lo; i <= hi; i++) {
		size_t k = at + i - lo;

		CHECK(s->first[k] == first[i] && s->count[k] == counts[i] && s->historical[k],
		      "%s: got Batch %" PRIu64 "+%" PRIu32 " (historical %d), want %" PRIu64 "+%" PRIu32, what, s->first[k],
		      s->count[k], s->historical[k], first[i], counts[i]);
	}
	pthread_mutex_unlock(&s->lock);
}

int main(void)
{
	struct broker br;
	struct gen gen;
	struct memlog empty;
	struct fx_seen s;
	char dir[192], cursor[192], reqs[192];
	stor_log_t *log;
	stor_reader_t *rd;
	upl_forwarder_t *f;
	upl_requests_t *q;
	struct upl_forward_cfg fc;
	struct upl_forward_stats st;
	struct upl_request old = { .id = "old-1", .from_ns = T0 + 6 * SEC, .to_ns = T0 + 7 * SEC + 3 * 1000000 };
	struct mosquitto *m;
	uint64_t first[NBATCH];
	int64_t t_last[NBATCH];
	FILE *fp;
	char text[512] = "";
	size_t at;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	snprintf(dir, sizeof(dir), "%s/log", br.dir);
	snprintf(cursor, sizeof(cursor), "%s/fwd.cursor", br.dir);
	snprintf(reqs, sizeof(reqs), "%s/fwd.requests", br.dir);
	CHECK(stor_log_open(&(struct stor_log_cfg){ .dir = dir, .vehicle = "loco9", .first_seq = 11 }, &log) == 0);
	CHECK(gen_init(&gen, "loco9", 8, T0) == 0);
	/* one Batch a second; seqs from 11: 1-10 "deleted" */
	stor_log_fill(log, &gen, counts, NBATCH, 11, SEC, first, t_last);
	CHECK(stor_reader_open(dir, &rd) == 0);
	memlog_init(&empty);

	/* a request taken by the run before, not served when it stopped */
	CHECK(upl_requests_open(reqs, &q, NULL) == 0 && upl_requests_add(q, &old) == 1);
	upl_requests_free(q);

	m = fx_seen_connect(&s, "request-ground", br.port, "loco9");

	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = br.port, .client_id = "railmon-request-fwd", .vehicle = "loco9",
		.cursor_path = cursor, .idle_poll_ms = 5, .keepalive_s = 5, .connect_timeout_ms = 2000,
		.backoff_min_ms = 20, .backoff_max_ms = 200, .source = memlog_source(&empty),
		.resend_source = stor_source(rd), .resend_per_s = 1000, .requests_path = reqs,
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 1, 20000), "the pending request served after the restart: %s",
	      said(f, &s));
	st = fx_fwd_stats(f);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= st.resend_batches, 10000), "%s", said(f, &s));
	check_batches(&s, 0, first, 6, 7, "old-1 (pending before the start)");

	/* the request may be lost until the forwarder has subscribed */
	fx_request_until_taken(m, f, "loco9",
	                       &(struct upl_request){ .id = "win-1", .from_ns = T0 + 2 * SEC, .to_ns = t_last[4] + 1 });
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 2, 20000), "win-1 served: %s", said(f, &s));
	at = 2;
	st = fx_fwd_stats(f);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= st.resend_batches, 10000), "%s", said(f, &s));
	check_batches(&s, at, first, 2, 4, "win-1 [T(2), the end of Batch 4]");

	/* published again: taken once */
	st = fx_fwd_stats(f);
	publish(m, "win-1", T0 + 2 * SEC, t_last[4] + 1);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_again > st.requests_again, 10000), "the second win-1 seen: %s",
	      said(f, &s));
	/* after the log's end: served, nothing sent; served after the repeat,
	   so once it is, the repeat sent nothing either */
	publish(m, "late", T0 + 100 * SEC, T0 + 200 * SEC);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 3, 10000), "late served: %s", said(f, &s));
	st = fx_fwd_stats(f);
	CHECK(st.resend_batches == 5 && fx_seen_n(&s) == 5, "%" PRIu64 " Batches re-sent, %zu seen: want 5",
	      st.resend_batches, fx_seen_n(&s));
	CHECK(st.requests_refused == 0 && st.resend_gone == 0 && s.bad == 0 && st.published == 0, "%s", said(f, &s));

	/* from before the first Batch still stored: 1-10 gone, then Batch 0 */
	publish(m, "early", T0 - 5 * SEC, T0 + SEC / 2);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 4, 10000), "early served: %s", said(f, &s));
	st = fx_fwd_stats(f);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= st.resend_batches, 10000), "%s", said(f, &s));
	check_batches(&s, 5, first, 0, 0, "early [T0 - 5 s, T0 + 0.5 s)");
	pthread_mutex_lock(&s.lock);
	CHECK(st.resend_gone == 1 && s.gone_n == 1 && strlen(s.gone) > 32 && !strcmp(s.gone + 32, " 1 10\n"),
	      "gone %u: '%s'", s.gone_n, s.gone);
	pthread_mutex_unlock(&s.lock);

	fp = fopen(reqs, "r");
	CHECK(fp && fread(text, 1, sizeof(text) - 1, fp) > 0);
	fclose(fp);
	CHECK_STR(text, "railmon-requests 1\ndone old-1\ndone win-1\ndone late\ndone early\n");

	fx_seen_close(m);
	upl_forwarder_free(f);
	stor_reader_free(rd);
	stor_log_free(log);
	memlog_fini(&empty);
	gen_fini(&gen);
	broker_fini(&br);
	printf("requests: one pending across a restart (2 Batches), one published (3 Batches), its repeat (0), one past "
	       "the log's end (0), one from before the log's start (gone 1-10, 1 Batch): %" PRIu64 " Batches sent whole "
	       "and historical\n", st.resend_batches);
	return 0;
}
