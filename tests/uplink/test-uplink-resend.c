/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-resend.c - gap repair at the forwarder: every resend range
 * over a small log gets exactly the stored Batches that hold one of its
 * seqs, in order, each once, flagged historical.
 *
 * A real log (storage/) of Batches of 3, 1, 4, 2, 5, 1, 1 and 3 records
 * (seqs 1..20), read by the forwarder's resend_source; its backlog source
 * is empty, so every data message is a re-send.  A plain libmosquitto
 * client asks for every range [a, b] with 1 <= a <= b <= 20, one at a
 * time: single seqs, ranges that end at the first seq of a Batch of its
 * own, ranges that start or end inside a Batch.  Each request is followed
 * by one for another log (answered "gone" with that range, whose last
 * seq, past the log's end, numbers the request); once that
 * "gone" arrives the request before it was served whole, and the data
 * messages counted by the forwarder (resend_batches) have all arrived.
 * They must be the expected Batches, no more, no fewer.  Then a range
 * asked twice and one inside it, in one message: served once.
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

#define NSEQ 20

static const uint32_t counts[] = { 3, 1, 4, 2, 5, 1, 1, 3 };
#define NBATCH (sizeof(counts) / sizeof(counts[0]))

static const char log_hex[] = "1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d01"; /* gen_init's log id */
static const char other_hex[] = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee";

/* The last seq of the newest "gone" answer, which must be for the other
   log (the requests for this log are all inside it). */
static uint64_t seen_gone(struct fx_seen *s)
{
	unsigned long long first, last = 0;

	pthread_mutex_lock(&s->lock);
	if (s->gone_n && !strncmp(s->gone, other_hex, 32))
		CHECK(sscanf(s->gone + 32, " %llu %llu", &first, &last) == 2, "gone '%s'", s->gone);
	pthread_mutex_unlock(&s->lock);
	return last;
}

static void request(struct mosquitto *m, const char *hex, uint64_t a, uint64_t b, uint64_t marker)
{
	char msg[256];
	/* The marker range starts inside the log: a range past its end is
	   dropped without an answer (not written yet). */
	int n = snprintf(msg, sizeof(msg), "%s %" PRIu64 " %" PRIu64 "\n%s 1 %" PRIu64 "\n", hex, a, b,
	                 other_hex, marker);

	CHECK(mosquitto_publish(m, NULL, "railmon/loco9/resend", n, msg, 1, false) == MOSQ_ERR_SUCCESS);
}

int main(void)
{
	struct broker br;
	struct gen gen;
	struct memlog empty;
	struct fx_seen s;
	char dir[192], cursor[192];
	stor_log_t *log;
	stor_reader_t *rd;
	upl_forwarder_t *f;
	struct upl_forward_cfg fc;
	struct upl_forward_stats st;
	struct mosquitto *m;
	uint64_t first[NBATCH], marker = 1000, cases = 0, sent = 0;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	snprintf(dir, sizeof(dir), "%s/log", br.dir);
	snprintf(cursor, sizeof(cursor), "%s/fwd.cursor", br.dir);
	CHECK(stor_log_open(&(struct stor_log_cfg){ .dir = dir, .vehicle = "loco9" }, &log) == 0);
	CHECK(gen_init(&gen, "loco9", 8, 1700000000 * INT64_C(1000000000)) == 0);
	stor_log_fill(log, &gen, counts, NBATCH, 1, 0, first, NULL);
	CHECK(first[NBATCH - 1] + counts[NBATCH - 1] == NSEQ + 1);
	CHECK(stor_reader_open(dir, &rd) == 0);
	memlog_init(&empty);
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = br.port, .client_id = "railmon-resend-fwd", .vehicle = "loco9",
		.cursor_path = cursor, .idle_poll_ms = 5, .keepalive_s = 5, .connect_timeout_ms = 2000,
		.backoff_min_ms = 20, .backoff_max_ms = 200, .source = memlog_source(&empty),
		.resend_source = stor_source(rd), .resend_per_s = 1000,
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);

	m = fx_seen_connect(&s, "resend-ground", br.port, "loco9");
	/* Until the forwarder has subscribed, a request is lost: ask for
	   another log's range until its "gone" comes back. */
	for (int tries = 0;; tries++) {
		uint64_t want = ++marker;

		CHECK(tries < 100, "the forwarder never answered a resend request");
		request(m, other_hex, want, want, want);
		if (WAIT_FOR(seen_gone(&s) >= want, 200))
			break;
	}

	for (uint64_t a = 1; a <= NSEQ; a++) {
		for (uint64_t b = a; b <= NSEQ; b++) {
			size_t before = fx_seen_n(&s), k = 0;
			uint64_t want = ++marker;

			request(m, log_hex, a, b, want);
			CHECK(WAIT_FOR(seen_gone(&s) >= want, 10000), "request %" PRIu64 "..%" PRIu64 " not served", a, b);
			/* Every data message the forwarder published is in. */
			sent = fx_fwd_stats(f).resend_batches;
			CHECK(WAIT_FOR(fx_seen_n(&s) >= sent, 10000), "%zu of %" PRIu64 " re-sends arrived", fx_seen_n(&s), sent);
			pthread_mutex_lock(&s.lock);
			CHECK(s.n == sent, "%zu data messages for %" PRIu64 " re-sends", s.n, sent);
			for (size_t i = 0; i < NBATCH; i++) {
				if (first[i] + counts[i] <= a || first[i] > b)
					continue; /* holds no seq of [a, b] */
				CHECK(before + k < s.n, "[%" PRIu64 ", %" PRIu64 "]: Batch %" PRIu64 "+%" PRIu32 " not sent",
				      a, b, first[i], counts[i]);
				CHECK(s.first[before + k] == first[i] && s.count[before + k] == counts[i] &&
				      s.historical[before + k],
				      "[%" PRIu64 ", %" PRIu64 "]: got Batch %" PRIu64 " (historical %d), want %" PRIu64, a, b,
				      s.first[before + k], s.historical[before + k], first[i]);
				k++;
			}
			CHECK(s.n == before + k, "[%" PRIu64 ", %" PRIu64 "]: %zu Batches sent, want %zu", a, b,
			      s.n - before, k);
			pthread_mutex_unlock(&s.lock);
			cases++;
		}
	}
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(st.resend_refused == 0 && s.bad == 0);
	CHECK(st.resend_merged == 0, "%" PRIu64 " of the single ranges merged", st.resend_merged);
	CHECK(st.published == 0, "the empty backlog published %" PRIu64, st.published);

	/* The same range asked twice, and one inside it, before any of it is
	   served (one message: queued together): served once, the other two
	   not queued again and counted; the range that is not inside (another
	   log: the marker) still queued. */
	{
		char msg[512];
		uint64_t want = ++marker;
		size_t before = fx_seen_n(&s);
		int n = snprintf(msg, sizeof(msg), "%s 1 %d\n%s 1 %d\n%s 3 5\n%s 1 %" PRIu64 "\n", log_hex, NSEQ,
		                 log_hex, NSEQ, log_hex, other_hex, want);

		CHECK(mosquitto_publish(m, NULL, "railmon/loco9/resend", n, msg, 1, false) == MOSQ_ERR_SUCCESS);
		CHECK(WAIT_FOR(seen_gone(&s) >= want, 10000), "the duplicates' marker not served");
		sent = fx_fwd_stats(f).resend_batches;
		CHECK(WAIT_FOR(fx_seen_n(&s) >= sent, 10000), "%zu of %" PRIu64 " re-sends arrived", fx_seen_n(&s), sent);
		CHECK(fx_seen_n(&s) - before == NBATCH, "[1, %d] asked twice and [3, 5]: %zu Batches sent, want %zu", NSEQ,
		      fx_seen_n(&s) - before, NBATCH);
		CHECK(upl_forwarder_stats(f, &st) == 0);
		CHECK(st.resend_merged == 2, "%" PRIu64 " requests merged, want 2", st.resend_merged);
	}

	fx_seen_close(m);
	upl_forwarder_free(f);
	stor_reader_free(rd);
	stor_log_free(log);
	memlog_fini(&empty);
	gen_fini(&gen);
	broker_fini(&br);
	printf("resend: %" PRIu64 " ranges over %zu Batches, %" PRIu64 " Batches re-sent, each as asked\n", cases,
	       NBATCH, sent);
	return 0;
}
