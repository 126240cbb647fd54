/* SPDX-License-Identifier: MIT */
/* publish.c - one QoS 1 message, acknowledged (publish.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "publish.h"
#include "mqtt-private.h"

struct pub_state {
	bool connacked; /* the CONNACK came, with code connack */
	int connack;
	int mid;       /* our message's id */
	bool acked;    /* its PUBACK came */
	bool lost;     /* the connection dropped before that */
};

static void on_connect(struct mosquitto *m, void *ctx, int rc)
{
	struct pub_state *s = ctx;

	(void)m;
	s->connack = rc;
	s->connacked = true;
}

static void on_publish(struct mosquitto *m, void *ctx, int mid)
{
	struct pub_state *s = ctx;

	(void)m;
	if (mid == s->mid)
		s->acked = true;
}

static void on_disconnect(struct mosquitto *m, void *ctx, int rc)
{
	(void)m;
	(void)rc;
	((struct pub_state *)ctx)->lost = true;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Run the client until *flag or the deadline; 0, -ETIMEDOUT or the loop's
   -errno.  What timed out is said: the TCP connection (a broker whose
   listen queue is full, or a host that drops the SYN), the CONNACK (one
   that accepts and stays silent), or the PUBACK. */
static int loop_until(struct mosquitto *m, struct pub_state *s, const bool *flag, long long deadline,
                      unsigned timeout_ms, char *why, size_t whylen)
{
	while (!*flag) {
		int rc;

		if (s->lost) {
			snprintf(why, whylen, "the broker closed the connection");
			return -ECONNRESET;
		}
		if (now_ms() >= deadline) {
			if (s->connacked)
				snprintf(why, whylen, "no acknowledgement (PUBACK) from the broker within %u ms", timeout_ms);
			else if (upl_mqtt_tcp_connected(m))
				snprintf(why, whylen, "the broker accepted the connection but did not answer it (no CONNACK) "
				         "within %u ms", timeout_ms);
			else
				snprintf(why, whylen, "no connection to the broker within %u ms (nothing accepted it)",
				         timeout_ms);
			return -ETIMEDOUT;
		}
		rc = mosquitto_loop(m, 100, 1);
		if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN && !*flag) {
			int e = errno;

			upl_mqtt_describe(rc, e, NULL, why, whylen);
			return upl_mqtt_errno(rc);
		}
	}
	return 0;
}

static int connect_and_publish(struct mosquitto *m, const struct upl_pub_cfg *cfg, const char *topic,
                               const void *payload, size_t len, bool retain, char *why, size_t whylen)
{
	struct pub_state s = { 0 };
	unsigned timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 15000;
	long long deadline = now_ms() + timeout_ms;
	int rc, r;

	mosquitto_user_data_set(m, &s);
	mosquitto_connect_callback_set(m, on_connect);
	mosquitto_publish_callback_set(m, on_publish);
	mosquitto_disconnect_callback_set(m, on_disconnect);
	/* not mosquitto_connect(): its TCP connect blocks for as long as the
	   kernel retries a SYN nobody answers (over 2 minutes), past our
	   deadline; the asynchronous one is finished by the loop below, under
	   it (the name lookup still blocks) */
	errno = 0;
	rc = mosquitto_connect_async(m, cfg->host, cfg->port, 30);
	if (rc != MOSQ_ERR_SUCCESS) {
		int e = errno;

		upl_mqtt_describe(rc, e, NULL, why, whylen);
		return upl_mqtt_errno(rc);
	}
	/* the CONNACK first: a refused login is said as such, not as a lost publish */
	if ((r = loop_until(m, &s, &s.connacked, deadline, timeout_ms, why, whylen)) < 0)
		return r;
	if (s.connack != 0) {
		snprintf(why, whylen, "the broker refused the connection: %s", mosquitto_connack_string(s.connack));
		return upl_mqtt_connack_errno(s.connack);
	}
	rc = mosquitto_publish(m, &s.mid, topic, (int)len, payload, 1, retain);
	if (rc != MOSQ_ERR_SUCCESS) {
		int e = errno;

		upl_mqtt_describe(rc, e, NULL, why, whylen);
		return rc == MOSQ_ERR_PAYLOAD_SIZE || rc == MOSQ_ERR_OVERSIZE_PACKET ? -EMSGSIZE : upl_mqtt_errno(rc);
	}
	if ((r = loop_until(m, &s, &s.acked, deadline, timeout_ms, why, whylen)) < 0)
		return r;
	mosquitto_disconnect(m);
	return 0;
}

int upl_publish_once(const struct upl_pub_cfg *cfg, const char *topic, const void *payload, size_t len,
                     bool retain, char *why, size_t whylen)
{
	char none[8];
	struct mosquitto *m;
	int r;

	if (!why || !whylen) {
		why = none;
		whylen = sizeof(none);
	}
	why[0] = 0;
	if (!cfg || !cfg->host || cfg->port < 1 || cfg->port > 65535 || !topic || !*topic ||
	    (len && !payload) || len > 268435455 || (cfg->use_tls && upl_mqtt_tls_check(&cfg->tls) < 0)) {
		snprintf(why, whylen, "bad arguments");
		return -EINVAL;
	}
	upl_mqtt_lib_init();
	m = mosquitto_new(cfg->client_id, true, NULL);
	if (!m) {
		snprintf(why, whylen, "%s", strerror(errno ? errno : ENOMEM));
		return -ENOMEM;
	}
	r = 0;
	if (cfg->username && mosquitto_username_pw_set(m, cfg->username, cfg->password) != MOSQ_ERR_SUCCESS)
		r = -ENOMEM;
	if (!r && cfg->use_tls && (r = upl_mqtt_tls_apply(m, &cfg->tls)) < 0)
		snprintf(why, whylen, "TLS set-up: %s", strerror(-r));
	if (!r)
		r = connect_and_publish(m, cfg, topic, payload, len, retain, why, whylen);
	mosquitto_destroy(m);
	return r;
}
