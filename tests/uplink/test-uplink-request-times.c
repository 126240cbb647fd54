/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-request-times.c - a full-rate request (issue 32) over a log
 * whose record times are not in seq order (a clock stepped back; health
 * and event records stamped by the clock beside a trace replay's frames
 * stamped by the trace).  Every stored Batch holding a record inside the
 * window must be sent, wherever it is in seq order.
 *
 * Batches (seq order): B0 at T0, B1 at T0 + 10 s (the clock ahead), B2 at
 * T0 + 1 s (back), B3 at T0 + 11 s, B4 at T0 + 2 s (back again), B5 at
 * T0 + 12 s.  A request for [T0 + 0.5 s, T0 + 5 s) must bring B2 and B4:
 * its range runs from the first Batch reaching T0 + 0.5 s (B1) to the
 * last one starting before T0 + 5 s (B4), so B1 and B3 come too, B0 and
 * B5 not.  Before, the range ended before the first Batch reaching
 * T0 + 5 s (B1): nothing was sent, the request served.
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
#define NBATCH 6

static const int64_t at_s[NBATCH] = { 0, 10, 1, 11, 2, 12 };
static const uint32_t counts[NBATCH] = { 3, 1, 4, 2, 5, 1 };

static bool seen(struct fx_seen *s, uint64_t first)
{
	bool got = false;

	pthread_mutex_lock(&s->lock);
	for (size_t k = 0; k < s->n; k++)
		got |= s->first[k] == first;
	pthread_mutex_unlock(&s->lock);
	return got;
}

int main(void)
{
	struct broker br;
	struct gen gen;
	struct memlog empty;
	struct fx_seen s;
	char dir[192], cursor[192], reqs[192];
	uint64_t first[NBATCH], seq = 1;
	stor_log_t *log;
	stor_reader_t *rd;
	upl_forwarder_t *f;
	struct upl_forward_cfg fc;
	struct upl_forward_stats st;
	struct upl_request q = { .id = "back-1", .from_ns = T0 + SEC / 2, .to_ns = T0 + 5 * SEC };
	struct mosquitto *m;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	snprintf(dir, sizeof(dir), "%s/log", br.dir);
	snprintf(cursor, sizeof(cursor), "%s/fwd.cursor", br.dir);
	snprintf(reqs, sizeof(reqs), "%s/fwd.requests", br.dir);
	CHECK(stor_log_open(&(struct stor_log_cfg){ .dir = dir, .vehicle = "loco5", .first_seq = 1 }, &log) == 0);
	CHECK(gen_init(&gen, "loco5", 8, T0) == 0);
	for (size_t i = 0; i < NBATCH; i++) {
		gen.t_ns = T0 + at_s[i] * SEC;
		stor_log_fill(log, &gen, &counts[i], 1, seq, 0, &first[i], NULL);
		seq += counts[i];
	}
	CHECK(stor_reader_open(dir, &rd) == 0);
	memlog_init(&empty);
	m = fx_seen_connect(&s, "request-times-ground", br.port, "loco5");
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = br.port, .client_id = "railmon-request-times", .vehicle = "loco5",
		.cursor_path = cursor, .idle_poll_ms = 5, .keepalive_s = 5, .connect_timeout_ms = 2000,
		.backoff_min_ms = 20, .backoff_max_ms = 200, .source = memlog_source(&empty),
		.resend_source = stor_source(rd), .resend_per_s = 1000, .requests_path = reqs,
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	fx_request_until_taken(m, f, "loco5", &q);
	CHECK(WAIT_FOR(fx_fwd_stats(f).requests_served == 1, 20000), "served");
	st = fx_fwd_stats(f);
	CHECK(WAIT_FOR(fx_seen_n(&s) >= st.resend_batches, 10000));
	printf("%" PRIu64 " Batches sent:", st.resend_batches);
	for (size_t i = 0; i < NBATCH; i++)
		printf(" B%zu(%s)", i, seen(&s, first[i]) ? "sent" : "-");
	printf("\n");
	CHECK(seen(&s, first[2]) && seen(&s, first[4]), "B2 or B4 (records inside the window) not sent");
	CHECK(seen(&s, first[1]) && seen(&s, first[3]) && !seen(&s, first[0]) && !seen(&s, first[5]) &&
	      st.resend_batches == 4, "the range is B1..B4");
	fx_seen_close(m);
	upl_forwarder_free(f);
	stor_reader_free(rd);
	stor_log_free(log);
	memlog_fini(&empty);
	gen_fini(&gen);
	broker_fini(&br);
	return 0;
}
