/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-outage.c - the forwarder against a broker that keeps dying.
 *
 * A producer appends Batches to the log the whole time.  The forwarder
 * reaches the broker through a TCP proxy in this program, so connections
 * can be reset (RST) at will; the broker itself is restarted (SIGTERM)
 * under load, SIGKILLed and restarted, and SIGSTOPped to play a broker
 * that accepts TCP but never answers.
 * `recv` listens directly on the broker with a persistent session.
 *
 * Asserts: 0 records lost, the forwarder's re-sent messages bounded by its
 * in-flight window per reconnect, recv's duplicates too once the broker
 * keeps its state (its own restarts re-send its sessions), and the cursor
 * does not move while nothing can be acknowledged.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"

#define INFLIGHT 20
#define ITEMS 50

static uint64_t cursor_now(upl_forwarder_t *f)
{
	struct upl_forward_stats st;

	CHECK(upl_forwarder_stats(f, &st) == 0);
	return st.cursor;
}

/* ---- producer: the collector appending to the log meanwhile ---- */

/* How far the log may run ahead of the forwarder's cursor: 10 windows.
   The producer is paced by the clock and the forwarder by the CPU it
   gets; on a loaded CI machine (load ~22 on 2 cores) the forwarder, the
   proxy, mosquitto and recv together moved ~7k records/s against the
   producer's 10k/s, so without a cap every phase began with the backlog
   the last one left, times 10/7: the catch-up waits never stalled (the
   cursor always moved) but never ended within meson's 300 s either.
   With the cap a phase drains at most this much, and there are still
   live records in flight when an outage hits. */
#define AHEAD_MAX (10 * INFLIGHT * ITEMS)

struct producer {
	struct memlog *log;
	upl_forwarder_t *f;
	struct gen g;
	pthread_t t;
	volatile bool stop;
	volatile bool paused;
	uint64_t held; /* ticks skipped because the log was AHEAD_MAX ahead */
};

static void *producer_main(void *arg)
{
	struct producer *p = arg;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!p->stop) {
		uint64_t next_seq;

		/* 200 Batches/s of 50 records: 10k records/s, paced, not spun. */
		next.tv_nsec += 5000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000;
		}
		pthread_mutex_lock(&p->log->lock);
		next_seq = p->log->next_seq;
		pthread_mutex_unlock(&p->log->lock);
		if (next_seq > cursor_now(p->f) + AHEAD_MAX)
			__atomic_add_fetch(&p->held, 1, __ATOMIC_RELAXED);
		else if (!p->paused)
			CHECK(gen_batch(&p->g, p->log, ITEMS, 100000) == 0);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return NULL;
}

/* The forwarder catches up to seq end: it may take as long as the machine
   needs (the backlog, at most AHEAD_MAX records, drains in a second when
   idle, several times that on a loaded CI machine), but it must never
   stall: 0 once the cursor reached end, -ETIMEDOUT after stall_ms without
   any progress. */
static int wait_caught_up(upl_forwarder_t *f, uint64_t end, int stall_ms)
{
	uint64_t last = cursor_now(f);

	while (upl_forwarder_wait_cursor(f, end, stall_ms) != 0) {
		uint64_t now = cursor_now(f);

		if (now == last)
			return -ETIMEDOUT;
		last = now;
	}
	return 0;
}

/*
 * After an outage: the forwarder must reconnect, catch up with the live
 * log, and recv must then hold everything acknowledged so far.  Only then
 * is the broker hurt again: mosquitto acknowledges a QoS 1 message once it
 * holds it in memory, so a SIGKILL while it still buffers a burst for a
 * slower subscriber loses acknowledged data - the broker's durability,
 * not the forwarder's.  Outages still hit while live records are in flight.
 */
static void expect_progress(upl_forwarder_t *f, fx_gnd_t *r, struct memlog *log,
                            struct fx_events *ev, unsigned connects)
{
	uint64_t target;

	CHECK(fx_events_wait(ev, UPL_FWD_CONNECTED, connects, 20000) == 0);
	pthread_mutex_lock(&log->lock);
	target = log->next_seq;
	pthread_mutex_unlock(&log->lock);
	CHECK(wait_caught_up(f, target, 20000) == 0);
	CHECK(fx_gnd_wait_seq(r, "tram9", cursor_now(f), 20000) == 0);
}

/* recv's duplicate records so far (where in the test they came from) */
static uint64_t dups_now(fx_gnd_t *r)
{
	struct fx_gnd_stats st;

	return fx_gnd_stats(r, &st) == 0 ? st.duplicates : 0;
}

int main(void)
{
	struct broker b;
	struct fx_proxy px;
	struct memlog log;
	struct producer prod = { .log = &log };
	struct fx_events ev;
	struct fx_recv rt;
	struct fx_gnd_cfg rc = { .host = "127.0.0.1", .client_id = "railmon-outage-recv",
	                           .keepalive_s = 5, .backoff_max_ms = 200 };
	struct upl_forward_cfg fc;
	struct upl_forward_stats fst;
	struct fx_gnd_stats rst;
	upl_forwarder_t *f;
	char cursor_path[256];
	uint64_t c1, c2, total, bound, broker_dups, fwd_connects0, recv_connects0;
	unsigned connects;

	/* Line by line: if meson's timeout kills the test, its log shows how
	   far it got (a full buffer into the pipe showed nothing at all). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	fx_events_init(&ev);
	CHECK(broker_init(&b, true, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	memlog_init(&log);
	CHECK(gen_init(&prod.g, "tram9", ITEMS, basic_realtime_ns()) == 0);

	/* recv's persistent session must survive a SIGKILL of the broker: a
	   clean stop writes it to the broker's database. */
	rc.port = b.port;
	fx_recv_start(&rt, &rc);
	CHECK(broker_signal(&b, SIGTERM) == 0);
	CHECK(broker_start(&b) == 0);

	fx_proxy_start(&px, b.port);
	snprintf(cursor_path, sizeof(cursor_path), "%s/fwd.cursor", b.dir);
	fc = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = px.port, .client_id = "railmon-outage-fwd",
		.vehicle = "tram9", .cursor_path = cursor_path, .source = memlog_source(&log),
		.inflight = INFLIGHT, .keepalive_s = 5, .ack_timeout_ms = 1500,
		.connect_timeout_ms = 1000, .backoff_min_ms = 20, .backoff_max_ms = 200,
		.idle_poll_ms = 5, .on_event = fx_on_event, .event_ctx = &ev,
	};
	CHECK(upl_forwarder_new(&fc, &f) == 0);
	prod.f = f;
	CHECK(pthread_create(&prod.t, NULL, producer_main, &prod) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	expect_progress(f, rt.r, &log, &ev, 1);

	/* Clean broker restarts while records are in flight: whatever the
	   broker acknowledged it saves, the rest the forwarder sends again. */
	for (int i = 0; i < 6; i++) {
		connects = fx_events_get(&ev, UPL_FWD_CONNECTED);
		CHECK(broker_signal(&b, SIGTERM) == 0);
		CHECK(broker_start(&b) == 0);
		expect_progress(f, rt.r, &log, &ev, connects + 1);
	}
	printf("6 broker restarts under load: forwarder recovered each time (recv duplicates %llu)\n", (unsigned long long)dups_now(rt.r));
	/* SIGKILL: mosquitto may have acknowledged messages it had not yet
	   written anywhere (its own durability limit), so the kill comes once
	   everything is delivered; the forwarder must notice the dead
	   connection and come back while live data resumes. */
	for (int i = 0; i < 6; i++) {
		connects = fx_events_get(&ev, UPL_FWD_CONNECTED);
		prod.paused = true;
		pthread_mutex_lock(&log.lock);
		uint64_t end = log.next_seq;
		pthread_mutex_unlock(&log.lock);
		CHECK(wait_caught_up(f, end, 20000) == 0);
		CHECK(fx_gnd_wait_seq(rt.r, "tram9", end, 20000) == 0);
		CHECK(broker_signal(&b, SIGKILL) == 0);
		CHECK(broker_start(&b) == 0);
		prod.paused = false;
		expect_progress(f, rt.r, &log, &ev, connects + 1);
	}
	/* Until here the broker itself was restarted and killed: it re-sends
	   recv's session, everything in flight to recv at a clean stop (the
	   fixture's broker has no in-flight limit) and, after a SIGKILL,
	   what was in flight when it last saved (autosave_interval 1): a
	   number that grows with the throughput, not with the forwarder's
	   window (a quiet machine gave 20,000-55,000 here).  From here on the
	   broker keeps its state, so recv's duplicates are the forwarder's and
	   recv's reconnects' alone: those are bounded below. */
	CHECK(upl_forwarder_stats(f, &fst) == 0);
	CHECK(fx_gnd_stats(rt.r, &rst) == 0);
	broker_dups = rst.duplicates;
	fwd_connects0 = fst.connects;
	recv_connects0 = rst.connects;
	printf("6 broker kills: forwarder recovered each time (recv duplicates %llu, the broker's re-sending)\n",
	       (unsigned long long)broker_dups);
	for (int i = 0; i < 8; i++) {
		connects = fx_events_get(&ev, UPL_FWD_CONNECTED);
		fx_proxy_reset(&px);
		expect_progress(f, rt.r, &log, &ev, connects + 1);
	}
	printf("8 connection resets: forwarder recovered each time (recv duplicates %llu)\n", (unsigned long long)dups_now(rt.r));

	/* A broker that accepts TCP but never answers: the PUBACK watchdog
	   drops the connection, then CONNACKs time out; no ack can arrive, so
	   the cursor must stay where it is while the log keeps growing. */
	connects = fx_events_get(&ev, UPL_FWD_CONNECTED);
	unsigned timeouts = fx_events_get(&ev, UPL_FWD_ACK_TIMEOUT);
	CHECK(broker_signal(&b, SIGSTOP) == 0);
	CHECK(fx_events_wait(&ev, UPL_FWD_ACK_TIMEOUT, timeouts + 1, 20000) == 0);
	c1 = cursor_now(f);
	unsigned fails = fx_events_get(&ev, UPL_FWD_CONNECT_FAILED);
	CHECK(fx_events_wait(&ev, UPL_FWD_CONNECT_FAILED, fails + 2, 20000) == 0);
	c2 = cursor_now(f);
	printf("stopped: c1 %llu c2 %llu log %llu\n", (unsigned long long)c1, (unsigned long long)c2,
	       (unsigned long long)log.next_seq);
	CHECK(c1 == c2 && c2 < log.next_seq);
	CHECK(broker_signal(&b, SIGCONT) == 0);
	expect_progress(f, rt.r, &log, &ev, connects + 1);
	printf("stopped broker: detected, cursor held at %llu, recovered (recv duplicates %llu)\n", (unsigned long long)c1, (unsigned long long)dups_now(rt.r));

	/* Idle and half-open: nothing in flight, so only the keepalive can
	   notice a broker that stopped answering (libmosquitto issues 110,
	   123, 2594 are about exactly this); 2 x keepalive at most. */
	{
		unsigned lost = fx_events_get(&ev, UPL_FWD_DISCONNECTED);
		int64_t t;

		connects = fx_events_get(&ev, UPL_FWD_CONNECTED);
		prod.paused = true;
		pthread_mutex_lock(&log.lock);
		uint64_t end = log.next_seq;
		pthread_mutex_unlock(&log.lock);
		CHECK(wait_caught_up(f, end, 20000) == 0);
		t = basic_mono_ns();
		CHECK(broker_signal(&b, SIGSTOP) == 0);
		CHECK(fx_events_wait(&ev, UPL_FWD_DISCONNECTED, lost + 1, 30000) == 0);
		t = basic_mono_ns() - t;
		printf("idle half-open connection dropped after %.1f s (keepalive %u s), error %d\n",
		       t / 1e9, fc.keepalive_s, ev.last_err);
		CHECK(t < 2 * (int64_t)fc.keepalive_s * 1000000000 + 2000000000);
		CHECK(broker_signal(&b, SIGCONT) == 0);
		prod.paused = false;
		expect_progress(f, rt.r, &log, &ev, connects + 1);
	}

	prod.stop = true;
	pthread_join(prod.t, NULL);
	total = log.next_seq - 1;
	CHECK(wait_caught_up(f, log.next_seq, 30000) == 0);
	fx_gnd_wait_records(rt.r, total, 30000);
	CHECK(upl_forwarder_stats(f, &fst) == 0);
	CHECK(fx_gnd_stats(rt.r, &rst) == 0);
	/* Since the broker last restarted, each reconnect of either side can
	   repeat at most one window. */
	bound = (fst.connects - fwd_connects0 + rst.connects - recv_connects0) * (INFLIGHT + 20) * ITEMS;
	printf("records %llu, received %llu, missing %llu, duplicates %llu: %llu while the broker restarted, "
	       "%llu since (bound %llu)\n",
	       (unsigned long long)total, (unsigned long long)rst.records, (unsigned long long)rst.missing,
	       (unsigned long long)rst.duplicates, (unsigned long long)broker_dups,
	       (unsigned long long)(rst.duplicates - broker_dups), (unsigned long long)bound);
	printf("forwarder: connects %llu, failed %llu, ack timeouts %llu, resent %llu\n",
	       (unsigned long long)fst.connects, (unsigned long long)fst.connect_fails,
	       (unsigned long long)fst.ack_timeouts, (unsigned long long)fst.resent);
	printf("producer held %llu ticks at %d records ahead of the cursor\n",
	       (unsigned long long)__atomic_load_n(&prod.held, __ATOMIC_RELAXED), AHEAD_MAX);
	printf("recv: connects %llu, messages %llu, subscribed %d\n", (unsigned long long)rst.connects,
	       (unsigned long long)rst.messages, rst.subscribed);
	fflush(stdout);
	CHECK(rst.records == total && rst.missing == 0 && rst.bad == 0);
	CHECK(rst.duplicates - broker_dups <= bound);
	CHECK(fst.resent <= fst.connects * INFLIGHT);
	CHECK(fst.ack_timeouts >= 1 && fst.connects >= 22);
	upl_forwarder_free(f);
	{
		uint64_t seq;

		CHECK(upl_cursor_load(cursor_path, &seq) == 0 && seq == log.next_seq);
	}
	fx_recv_stop(&rt);
	fx_proxy_stop(&px);
	gen_fini(&prod.g);
	memlog_fini(&log);
	broker_fini(&b);
	return 0;
}
