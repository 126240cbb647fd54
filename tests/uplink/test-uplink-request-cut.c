/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-request-cut.c - a full-rate request (issue 32) whose
 * connection is lost while it is served.  Its answers are fire-and-forget
 * like gap repair's re-sends, but the ground never asks for them again
 * (their records count "on board"): Batches lost with the connection
 * would be lost for good, and the request still written "done".
 *
 * The forwarder reaches a real mosquitto through a TCP proxy (fixture.c);
 * a plain libmosquitto client is the ground, connected to the broker
 * directly.  A log of 40 Batches is requested whole, re-sent 25 a second.
 * Once the ground has 5 of them, the proxy drops what the forwarder sends
 * (blackhole) until 3 more were published into it, then resets the
 * connection.  After the reconnect the request must be served again from
 * its start: the ground holds every one of the 40 Batches, and the
 * request is written done once, after its last message's PUBACK.
 * Then a second request over the same Batches loses its connection after
 * its last Batch was published, the last 3 into the blackhole: it is not
 * served before their PUBACKs, and is served again after the reconnect.
 */
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
#define NBATCH 40

static const char *said(upl_forwarder_t *f, struct fx_seen *s)
{
	static char text[512];
	struct upl_forward_stats st = fx_fwd_stats(f);

	pthread_mutex_lock(&s->lock);
	snprintf(text, sizeof(text),
	         "forwarder: %" PRIu64 " connects, last error '%s'; requests taken %" PRIu64 ", served %" PRIu64
	         ", restarted %" PRIu64 "; %" PRIu64 " Batches re-sent; the ground saw %zu Batches, %u bad",
	         st.connects, st.last_error_text, st.requests_taken, st.requests_served, st.requests_restarted,
	         st.resend_batches, s->n, s->bad);
	pthread_mutex_unlock(&s->lock);
	return text;
}

/* Batches of the log the ground has not seen since its at-th (first[]:
   their first seqs). */
static unsigned missing_of(struct fx_seen *s, size_t at, const uint64_t *first)
{
	unsigned missing = 0;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < NBATCH; i++) {
		size_t k = at;

		while (k < s->n && s->first[k] != first[i])
			k++;
		missing += k == s->n;
	}
	pthread_mutex_unlock(&s->lock);
	return missing;
}

int main(void)
{
	struct broker br;
	struct fx_proxy px;
	struct gen gen;
	struct memlog empty;
	struct fx_seen s;
	char dir[192], cursor[192], reqs[192], text[256] = "";
	uint32_t counts[NBATCH];
	uint64_t first[NBATCH], sent_at_cut, base;
	size_t at;
	int64_t t_last[NBATCH];
	stor_log_t *log;
	stor_reader_t *rd;
	upl_forwarder_t *f;
	struct upl_forward_cfg fc;
	struct upl_forward_stats st;
	struct upl_request q = { .id = "cut-1", .from_ns = T0 };
	struct mosquitto *m;
	unsigned missing = 0, twice = 0;
	FILE *fp;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	fx_proxy_start(&px, br.port);
	snprintf(dir, sizeof(dir), "%s/log", br.dir);
	snprintf(cursor, sizeof(cursor), "%s/fwd.cursor", br.dir);
	snprintf(reqs, sizeof(reqs), "%s/fwd.requests", br.dir);
	for (size_t i = 0; i < NBATCH; i++)
		counts[i] = 1 + (uint32_t)(i % 4);
	CHECK(stor_log_open(&(struct stor_log_cfg){ .dir = dir, .vehicle = "loco7", .first_seq = 1 }, &log) == 0);
	CHECK(gen_init(&gen, "loco7", 8, T0) == 0);
	stor_log_fill(log, &gen, counts, NBATCH, 1, SEC, first, t_last);
	CHECK(stor_reader_open(dir, &rd) == 0);
	memlog_init(&empty);

	m = fx_seen_connect(&s, "request-cut-ground", br.port, "loco7");
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = px.port, .client_id = "railmon-request-cut", .vehicle = "loco7",
		.cursor_path = cursor, .idle_poll_ms = 5, .keepalive_s = 5, .connect_timeout_ms = 2000,
		.backoff_min_ms = 20, .backoff_max_ms = 200, .source = memlog_source(&empty),
		.resend_source = stor_source(rd), .resend_per_s = 25, .requests_path = reqs,
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);

	/* the whole log; published until taken (lost until the forwarder
	   subscribed; the same id again is ignored) */
	q.to_ns = t_last[NBATCH - 1] + 1;
	fx_request_until_taken(m, f, "loco7", &q);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= 5, 20000), "5 answers at the ground: %s", said(f, &s));
	/* a link that loses what is sent: 3 more Batches published into it */
	fx_proxy_blackhole(&px, true);
	sent_at_cut = fx_fwd_stats(f).resend_batches;
	CHECK(WAIT_FOR(fx_fwd_stats(f).resend_batches >= sent_at_cut + 3, 20000), "3 Batches into the blackhole: %s",
	      said(f, &s));
	CHECK(fx_fwd_stats(f).requests_served == 0, "served before its last Batch was acknowledged: %s", said(f, &s));
	/* then the connection is reset, and the link works again */
	fx_proxy_reset(&px);
	fx_proxy_blackhole(&px, false);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 1, 30000), "the request served after the reconnect: %s",
	      said(f, &s));
	/* acknowledged by the broker: on its way to the ground */
	WAIT_FOR(missing_of(&s, 0, first) == 0, 10000);
	st = fx_fwd_stats(f);
	/* every Batch of the log at the ground, whole and historical */
	pthread_mutex_lock(&s.lock);
	for (size_t i = 0; i < NBATCH; i++) {
		unsigned got = 0;

		for (size_t k = 0; k < s.n; k++)
			if (s.first[k] == first[i]) {
				CHECK(s.count[k] == counts[i] && s.historical[k], "Batch %" PRIu64 ": %" PRIu32 " records, "
				      "historical %d", first[i], s.count[k], s.historical[k]);
				got++;
			}
		missing += !got;
		twice += got > 1;
	}
	pthread_mutex_unlock(&s.lock);
	CHECK(!missing, "%u of the %d Batches never reached the ground: %s", missing, NBATCH, said(f, &s));
	CHECK(st.connects >= 2 && st.requests_restarted == 1 && s.bad == 0, "%s", said(f, &s));


	/* cut-2, ending at the last Batch's last record (its range ends there,
	   not at the log's end: popped in the step that sends that Batch).
	   The connection goes after every Batch was published, the last 3
	   into the blackhole: not served (their PUBACKs never came), so
	   served again after the reconnect. */
	at = fx_seen_n(&s);
	base = fx_fwd_stats(f).resend_batches;
	q = (struct upl_request){ .id = "cut-2", .from_ns = T0, .to_ns = t_last[NBATCH - 1] };
	fx_request_until_taken(m, f, "loco7", &q);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= at + NBATCH - 3, 20000), "cut-2: %d answers at the ground: %s", NBATCH - 3,
	      said(f, &s));
	fx_proxy_blackhole(&px, true);
	CHECK(WAIT_FOR(fx_fwd_stats(f).resend_batches >= base + NBATCH, 20000), "cut-2 all published: %s",
	      said(f, &s));
	CHECK(fx_fwd_stats(f).requests_served == 1, "cut-2 served before its last PUBACK: %s", said(f, &s));
	fx_proxy_reset(&px);
	fx_proxy_blackhole(&px, false);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 2, 30000), "cut-2 served after the reconnect: %s",
	      said(f, &s));
	WAIT_FOR(missing_of(&s, at, first) == 0, 10000);
	missing = missing_of(&s, at, first);
	st = fx_fwd_stats(f);
	CHECK(!missing, "cut-2: %u of the %d Batches never reached the ground: %s", missing, NBATCH, said(f, &s));
	CHECK(st.connects >= 3 && st.requests_restarted == 2, "%s", said(f, &s));

	fp = fopen(reqs, "r");
	CHECK(fp && fread(text, 1, sizeof(text) - 1, fp) > 0);
	fclose(fp);
	CHECK_STR(text, "railmon-requests 1\ndone cut-1\ndone cut-2\n");

	fx_seen_close(m);
	upl_forwarder_free(f);
	fx_proxy_stop(&px);
	stor_reader_free(rd);
	stor_log_free(log);
	memlog_fini(&empty);
	gen_fini(&gen);
	broker_fini(&br);
	printf("request cut: two requests of %d Batches, each with Batches published into a blackhole (mid-way, "
	       "after the last) and the connection reset; each served again from its start after the reconnect: "
	       "every Batch at the ground (the first's %u twice), %" PRIu64 " re-sent in all, each written done once\n",
	       NBATCH, twice, st.resend_batches);
	return 0;
}
