/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-tls.c - TLS against a real mosquitto with certificates made
 * by openssl for this run (tests/uplink/gen-certs.sh).
 *
 * Good certificates connect and records flow (forwarder and recv both
 * over TLS with client certificates).  Refused: a broker not signed by our
 * CA, an expired broker certificate, a broker certificate for another host
 * name, a client without a certificate, a client certificate from another
 * CA.  The host name check is skipped only with the explicit insecure
 * flag, which the forwarder reports so the board can log it.
 *
 * usage: test-uplink-tls GEN_CERTS_SH
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "uplink/forward.h"
#include "uplink/recv.h"

/* Wait until connected (returns 1) or `fails` failed attempts (returns 0). */
static int wait_outcome(struct fx_events *e, unsigned fails)
{
	struct timespec ts = basic_deadline_ms(CLOCK_REALTIME, 20000);
	int r, err = 0;

	pthread_mutex_lock(&e->lock);
	while (!e->n[UPL_FWD_CONNECTED] && e->n[UPL_FWD_CONNECT_FAILED] < fails && err == 0)
		err = pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	r = e->n[UPL_FWD_CONNECTED] ? 1 : e->n[UPL_FWD_CONNECT_FAILED] >= fails ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&e->lock);
	return r;
}

static char certs[160];

static const char *cert(const char *name)
{
	static char bufs[32][256];
	static int k;
	char *b = bufs[k++ % 32];

	snprintf(b, 256, "%s/%s", certs, name);
	return b;
}

struct tls_case {
	const char *what;
	int port;
	const char *ca, *cert, *key;
	bool insecure;
	bool expect_connect;
	const char *why;     /* refused: OpenSSL's reason, as the board prints it */
};

/* Run one forwarder against one listener; returns whether it connected. */
static void run_case(const struct tls_case *tc, struct memlog *log, const char *cursor)
{
	struct fx_events ev;
	struct upl_forward_cfg c = {
		.host = "127.0.0.1", .port = tc->port, .client_id = "railmon-tls-fwd",
		.vehicle = "tram7", .cursor_path = cursor, .source = memlog_source(log),
		.use_tls = true,
		.tls = { .ca_file = tc->ca, .cert_file = tc->cert, .key_file = tc->key,
		         .insecure = tc->insecure },
		.connect_timeout_ms = 3000, .backoff_min_ms = 20, .backoff_max_ms = 100,
		.idle_poll_ms = 10, .on_event = fx_on_event, .event_ctx = &ev,
	};
	struct upl_forward_stats st;
	upl_forwarder_t *f;
	int r;

	fx_events_init(&ev);
	CHECK(upl_forwarder_new(&c, &f) == 0);
	CHECK(upl_forwarder_stats(f, &st) == 0 && st.insecure == tc->insecure);
	CHECK(upl_forwarder_start(f) == 0);
	r = wait_outcome(&ev, 3);
	CHECK(upl_forwarder_stats(f, &st) == 0);
	printf("%-40s %s (last error %d: %s)\n", tc->what, r == 1 ? "connected" : "refused", ev.last_err,
	       st.last_error_text);
	CHECK(r >= 0);
	CHECK(r == (tc->expect_connect ? 1 : 0));
	CHECK(tc->expect_connect || !tc->why || strstr(st.last_error_text, tc->why));
	if (tc->expect_connect)
		CHECK(upl_forwarder_wait_cursor(f, log->next_seq, 20000) == 0);
	upl_forwarder_free(f);
}

int main(int argc, char **argv)
{
	char extra[2048], cursor[256];
	struct broker b;
	struct memlog log;
	struct gen g;
	struct fx_recv rt;
	struct fx_gnd_stats rs;
	int p_good, p_host, p_expired;

	if (argc != 2) {
		fprintf(stderr, "usage: %s GEN_CERTS_SH\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	CHECK(broker_init(&b, false, NULL) == 0);
	snprintf(certs, sizeof(certs), "%s/certs", b.dir);
	{
		char *gen[] = { "bash", argv[1], certs, NULL };

		CHECK(tlib_run(gen, 60) == 0);
	}
	p_good = fx_free_port();
	p_host = fx_free_port();
	p_expired = fx_free_port();
	CHECK(p_good > 0 && p_host > 0 && p_expired > 0);
	snprintf(extra, sizeof(extra),
	         "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\n"
	         "require_certificate true\ntls_version tlsv1.2\n"
	         "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate true\n"
	         "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate true\n",
	         p_good, cert("ca.pem"), cert("server.pem"), cert("server.key"),
	         p_host, cert("ca.pem"), cert("wronghost.pem"), cert("wronghost.key"),
	         p_expired, cert("ca.pem"), cert("expired.pem"), cert("expired.key"));
	{
		FILE *f = fopen(b.conf, "a");

		CHECK(f && fputs(extra, f) >= 0 && fclose(f) == 0);
	}
	CHECK(broker_start(&b) == 0);

	memlog_init(&log);
	CHECK(gen_init(&g, "tram7", 64, basic_realtime_ns()) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(gen_batch(&g, &log, 50, 1000000) == 0);
	snprintf(cursor, sizeof(cursor), "%s/tls.cursor", b.dir);

	/* recv over TLS with its own client certificate. */
	struct fx_gnd_cfg rc = {
		.host = "127.0.0.1", .port = p_good, .client_id = "railmon-tls-recv",
		.use_tls = true,
		.tls = { .ca_file = cert("ca.pem"), .cert_file = cert("client.pem"),
		         .key_file = cert("client.key") },
	};
	fx_recv_start(&rt, &rc);

	const struct tls_case cases[] = {
		{ "good certificates", p_good, cert("ca.pem"), cert("client.pem"), cert("client.key"),
		  false, true, NULL },
		{ "broker not signed by our CA", p_good, cert("wrongca.pem"), cert("client.pem"),
		  cert("client.key"), false, false, "certificate verify failed" },
		{ "expired broker certificate", p_expired, cert("ca.pem"), cert("client.pem"),
		  cert("client.key"), false, false, "certificate verify failed" },
		{ "broker certificate for another host", p_host, cert("ca.pem"), cert("client.pem"),
		  cert("client.key"), false, false, "certificate verify failed" },
		/* TLS 1.3 refuses a client certificate after the client's side of
		   the handshake: the broker's alert may be lost with the
		   connection, so the reason varies ("unknown ca", "connection
		   lost", "Protocol error"); only the refusal is certain. */
		{ "no client certificate", p_good, cert("ca.pem"), NULL, NULL, false, false, NULL },
		{ "client certificate from another CA", p_good, cert("ca.pem"), cert("rogue.pem"),
		  cert("rogue.key"), false, false, NULL },
		{ "another host, explicit insecure flag", p_host, cert("ca.pem"), cert("client.pem"),
		  cert("client.key"), true, true, NULL },
		{ "insecure still needs our CA", p_good, cert("wrongca.pem"), cert("client.pem"),
		  cert("client.key"), true, false, "certificate verify failed" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* Each connecting case forwards fresh records. */
		if (cases[i].expect_connect && i)
			for (int k = 0; k < 5; k++)
				CHECK(gen_batch(&g, &log, 50, 1000000) == 0);
		run_case(&cases[i], &log, cursor);
	}
	CHECK(fx_gnd_wait_records(rt.r, log.next_seq - 1, 20000) == 0);
	CHECK(fx_gnd_stats(rt.r, &rs) == 0);
	CHECK(rs.records == log.next_seq - 1 && rs.missing == 0);
	printf("recv over TLS: %llu records\n", (unsigned long long)rs.records);
	fx_recv_stop(&rt);
	gen_fini(&g);
	memlog_fini(&log);
	broker_fini(&b);
	return 0;
}
