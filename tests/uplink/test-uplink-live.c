/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-live.c - live records sent ahead of a backlog, then reached
 * by the backlog reader: each record must reach the ground exactly once.
 *
 * Deterministic: the backlog reader is gated (the test decides when it may
 * read on), and the broker is SIGSTOPped to hold PUBACKs back.
 *
 *   in flight:    live Batches are published while the broker is stopped;
 *                 the backlog reaches them before any PUBACK: it must take
 *                 over those publications, not publish them again.
 *   acknowledged: live Batches are acknowledged before the backlog reaches
 *                 them: it must skip them.
 *
 * Asserts the exact counts: messages published, records skipped, and
 * 0 duplicates at the subscriber (recv).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"
#include "stor-source.h"

#define ITEMS 30
#define OLD_NS (3600 * INT64_C(1000000000)) /* far outside the live window */

/* The backlog reader, handing out at most `allowed` records. */
struct gate {
	stor_reader_t *rd;
	_Atomic unsigned allowed, handed;
};

static int gate_seek(void *ctx, uint64_t seq)
{
	struct gate *g = ctx;

	return stor_reader_seek_seq(g->rd, seq);
}

static int gate_next(void *ctx, struct upl_rec *ret)
{
	struct gate *g = ctx;
	int r;

	if (atomic_load(&g->handed) >= atomic_load(&g->allowed))
		return 0;
	r = stor_src_next(g->rd, ret);
	if (r == 1)
		atomic_fetch_add(&g->handed, 1);
	return r;
}

/* Wait (bounded) until g handed out n records. */
static void gate_wait(struct gate *g, unsigned n)
{
	WAIT_FOR(atomic_load(&g->handed) >= n, 10000);
	CHECK(atomic_load(&g->handed) == n);
}

static void append(stor_log_t *log, struct gen *gen, int64_t t0)
{
	const uint8_t *buf;
	size_t len;
	struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .t_first_ns = t0 };
	int r;

	for (int i = 0; i < ITEMS; i++) {
		struct acq_item it;

		gen_item(gen, t0 + i * 1000000, &it);
		CHECK(rec_encoder_add(gen->enc, &it) == 0);
	}
	r = rec_encoder_finish(gen->enc, rec.first_seq, &buf, &len);
	CHECK(r == ITEMS);
	rec.count = ITEMS;
	rec.t_last_ns = t0 + (ITEMS - 1) * 1000000;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	CHECK(stor_log_append(log, &rec) == 0);
	/* The readers read the files: make the record visible to them. */
	CHECK(stor_log_sync(log) == 0);
}

/* Poll the forwarder's stats until cond holds (bounded, 10 s). */
#define WAIT_STATS(f, st, cond)                                                    \
	do {                                                                       \
		WAIT_FOR(({ CHECK(upl_forwarder_stats(f, &(st)) == 0); (cond); }), 10000); \
		CHECK(cond);                                                       \
	} while (0)

/*
 * One vehicle, its own log: 3 Batches an hour old are sent and
 * acknowledged, then 3 live Batches go ahead of the (gated) backlog, with
 * their PUBACKs held back by a stopped broker (in_flight) or received
 * (acknowledged), then the backlog is let through them.
 */
static void meet(struct broker *b, fx_gnd_t *r, const char *vehicle, bool in_flight)
{
	struct upl_forward_stats st;
	struct grd_ledger_vehicle v;
	struct upl_forward_cfg fc;
	struct gate gate = { 0 };
	stor_reader_t *live_rd;
	upl_forwarder_t *f;
	stor_log_t *log;
	struct gen gen;
	char dir[192], cursor[192];
	uint64_t published;

	snprintf(dir, sizeof(dir), "%s/%s", b->dir, vehicle);
	snprintf(cursor, sizeof(cursor), "%s/%s.cursor", b->dir, vehicle);
	struct stor_log_cfg lc = { .dir = dir, .vehicle = vehicle };
	CHECK(stor_log_open(&lc, &log) == 0);
	CHECK(gen_init(&gen, vehicle, ITEMS, 0) == 0);
	for (int i = 0; i < 3; i++)
		append(log, &gen, basic_realtime_ns() - OLD_NS);
	CHECK(stor_reader_open(dir, &gate.rd) == 0);
	CHECK(stor_reader_open(dir, &live_rd) == 0);
	atomic_store(&gate.allowed, 3);
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = b->port, .client_id = vehicle, .vehicle = vehicle,
		.cursor_path = cursor, .inflight = 8, .idle_poll_ms = 5, .ack_timeout_ms = 60000,
		.source = { .seek = gate_seek, .next = gate_next, .ctx = &gate },
		.live_source = stor_source(live_rd),
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	CHECK(upl_forwarder_wait_cursor(f, 3 * ITEMS + 1, 20000) == 0);

	/* Stopped, the broker reads nothing and acknowledges nothing. */
	if (in_flight)
		CHECK(broker_signal(b, SIGSTOP) == 0);
	for (int i = 0; i < 3; i++)
		append(log, &gen, basic_realtime_ns());
	if (in_flight)
		WAIT_STATS(f, st, st.live_ahead == 3);
	else
		WAIT_STATS(f, st, st.live_ahead == 3 && st.acked == 6);
	atomic_store(&gate.allowed, 6);
	gate_wait(&gate, 6);
	/* The backlog has taken the 3 live Batches: skipped (taken over) or
	   published again, decided before any PUBACK could be read. */
	WAIT_STATS(f, st, st.published + st.skipped / ITEMS >= 9);
	published = st.published;
	if (in_flight)
		CHECK(broker_signal(b, SIGCONT) == 0);
	CHECK(upl_forwarder_wait_cursor(f, 6 * ITEMS + 1, 20000) == 0);
	CHECK(fx_gnd_wait_seq(r, vehicle, 6 * ITEMS + 1, 20000) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	CHECK(fx_gnd_vehicle(r, vehicle, &v) == 0);
	printf("live %s when the backlog reached it: %llu messages published for 6 Batches, "
	       "%llu backlog records skipped, recv: %llu records, %llu duplicates\n",
	       in_flight ? "in flight" : "acknowledged", (unsigned long long)published,
	       (unsigned long long)st.skipped, (unsigned long long)v.records, (unsigned long long)v.duplicates);
	/* Exactly once: 6 messages for 6 Batches, the 3 live ones skipped by
	   the backlog, nothing resent, nothing twice at the subscriber. */
	CHECK(published == 6 && st.published == 6 && st.skipped == 3 * ITEMS && st.resent == 0);
	CHECK(v.records == 6 * ITEMS && v.duplicates == 0 && v.missing == 0);

	upl_forwarder_free(f);
	stor_reader_free(gate.rd);
	stor_reader_free(live_rd);
	stor_log_free(log);
	gen_fini(&gen);
}

int main(void)
{
	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .client_id = "railmon-live-recv" };
	struct fx_recv rt;
	struct broker b;

	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	rc.port = b.port;
	fx_recv_start(&rt, &rc);

	meet(&b, rt.r, "tram3", false);
	meet(&b, rt.r, "tram4", true);

	fx_recv_stop(&rt);
	broker_fini(&b);
	return 0;
}
