/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-config.c - the forwarder hands the ground's config messages
 * on (uplink/fwd-types.h on_config, issue 32), with a real mosquitto: one
 * retained while the vehicle was offline arrives once it connects, a
 * 1 MiB one published while it is connected arrives whole, a message on
 * another vehicle's config topic never does, and they come in the order
 * published; a forwarder without on_config gets none (its stats say 0).
 */
#include <errno.h>
#include <inttypes.h>
#include <mosquitto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "uplink/forward.h"

#define BIG (1u << 20)

struct got {
	pthread_mutex_t lock;
	size_t n;
	size_t len[8];
	uint8_t first[8];   /* each message's first byte: which one it is */
	bool whole[8];      /* its bytes are the pattern they were sent with */
};

static void on_config(void *ctx, const void *payload, size_t len)
{
	struct got *g = ctx;
	const uint8_t *p = payload;
	bool whole = true;

	for (size_t i = 0; i < len && whole; i++)
		whole = p[i] == (uint8_t)(p[0] + i % 7);
	pthread_mutex_lock(&g->lock);
	if (g->n < 8) {
		g->len[g->n] = len;
		g->first[g->n] = len ? p[0] : 0;
		g->whole[g->n] = whole;
	}
	g->n++;
	pthread_mutex_unlock(&g->lock);
}

static size_t got_n(struct got *g)
{
	size_t n;

	pthread_mutex_lock(&g->lock);
	n = g->n;
	pthread_mutex_unlock(&g->lock);
	return n;
}

/* Publish len bytes of the pattern starting at first, QoS 1, and wait for the PUBACK. */
static void publish(int port, const char *topic, uint8_t first, size_t len, bool retain)
{
	uint8_t *buf = malloc(len);
	struct mosquitto *m = mosquitto_new(NULL, true, NULL);

	CHECK(buf && m);
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(first + i % 7);
	CHECK(mosquitto_connect(m, "127.0.0.1", port, 10) == MOSQ_ERR_SUCCESS);
	CHECK(mosquitto_publish(m, NULL, topic, (int)len, buf, 1, retain) == MOSQ_ERR_SUCCESS);
	/* until the outgoing queue is empty: the broker has it */
	for (int i = 0; i < 200 && mosquitto_want_write(m); i++)
		mosquitto_loop(m, 10, 1);
	for (int i = 0; i < 20; i++)
		mosquitto_loop(m, 10, 1); /* the PUBACK */
	mosquitto_disconnect(m);
	mosquitto_loop(m, 10, 1);
	mosquitto_destroy(m);
	free(buf);
}

static upl_forwarder_t *forwarder(struct broker *br, struct memlog *empty, const char *id, const char *cursor,
                                  struct got *g)
{
	struct upl_forward_cfg fc = {
		.host = "127.0.0.1", .port = br->port, .client_id = id, .vehicle = "loco9",
		.cursor_path = cursor, .idle_poll_ms = 5, .keepalive_s = 5, .connect_timeout_ms = 2000,
		.backoff_min_ms = 20, .backoff_max_ms = 200, .source = memlog_source(empty),
		.on_config = g ? on_config : NULL, .config_ctx = g,
	};
	upl_forwarder_t *f;

	CHECK(upl_forwarder_new(&fc, &f) == 0);
	CHECK(upl_forwarder_start(f) == 0);
	return f;
}

static bool connected(upl_forwarder_t *f)
{
	struct upl_forward_stats st;

	return upl_forwarder_stats(f, &st) == 0 && st.connected;
}

int main(void)
{
	struct got g = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct broker br;
	struct memlog empty;
	struct upl_forward_stats st;
	char cursor[192], cursor2[192];
	upl_forwarder_t *f, *plain;

	signal(SIGPIPE, SIG_IGN);
	mosquitto_lib_init();
	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	snprintf(cursor, sizeof(cursor), "%s/fwd.cursor", br.dir);
	snprintf(cursor2, sizeof(cursor2), "%s/fwd2.cursor", br.dir);
	memlog_init(&empty);

	/* pushed while the vehicle is away: retained */
	publish(br.port, "railmon/loco9/config", 'A', 300, true);
	publish(br.port, "railmon/loco8/config", 'X', 50, true);
	f = forwarder(&br, &empty, "railmon-config-fwd", cursor, &g);
	CHECK(WAIT_FOR(got_n(&g) >= 1, 20000), "the retained config never came");
	/* a forwarder without on_config: connected, and handed nothing */
	plain = forwarder(&br, &empty, "railmon-config-plain", cursor2, NULL);
	CHECK(WAIT_FOR(connected(plain), 20000), "the second forwarder never connected");
	/* pushed while it is connected, 1 MiB, then one to another vehicle and a small one */
	publish(br.port, "railmon/loco9/config", 'B', BIG, true);
	publish(br.port, "railmon/loco8/config", 'Y', 50, true);
	publish(br.port, "railmon/loco9/config", 'C', 10, false);
	CHECK(WAIT_FOR(got_n(&g) >= 3, 20000), "%zu of 3 config messages came", got_n(&g));
	pthread_mutex_lock(&g.lock);
	CHECK(g.n == 3, "%zu messages", g.n);
	CHECK(g.first[0] == 'A' && g.len[0] == 300 && g.whole[0], "first: %c %zu", g.first[0], g.len[0]);
	CHECK(g.first[1] == 'B' && g.len[1] == BIG && g.whole[1], "second: %c %zu", g.first[1], g.len[1]);
	CHECK(g.first[2] == 'C' && g.len[2] == 10 && g.whole[2], "third: %c %zu", g.first[2], g.len[2]);
	pthread_mutex_unlock(&g.lock);
	CHECK(upl_forwarder_stats(f, &st) == 0 && st.config_messages == 3, "%" PRIu64, st.config_messages);
	CHECK(upl_forwarder_stats(plain, &st) == 0 && st.config_messages == 0, "%" PRIu64, st.config_messages);

	upl_forwarder_free(plain);
	upl_forwarder_free(f);
	memlog_fini(&empty);
	broker_fini(&br);
	printf("config: retained one on connect, 1 MiB whole, another vehicle's never, in order\n");
	return 0;
}
