/* SPDX-License-Identifier: MIT */
/*
 * request-pub.c - the ground's side of a full-rate request (request.h): one
 * line published with QoS 1 on a connection of its own, done when the
 * broker has acknowledged it (the vehicle may be offline: its persistent
 * session keeps the message until it connects).
 */
#include <errno.h>
#include <mosquitto.h>
#include <stdio.h>
#include <string.h>

#include "mqtt-private.h"
#include "request.h"
#include "basic/clock.h"
#include "basic/name.h"

struct pub_state {
	int connack;   /* -1 until CONNACK */
	int mid;       /* our message's id */
	bool acked;
	bool lost;
};

static void on_connect(struct mosquitto *m, void *arg, int rc)
{
	(void)m;
	((struct pub_state *)arg)->connack = rc;
}

static void on_publish(struct mosquitto *m, void *arg, int mid)
{
	struct pub_state *s = arg;

	(void)m;
	if (mid == s->mid)
		s->acked = true;
}

static void on_disconnect(struct mosquitto *m, void *arg, int rc)
{
	(void)m;
	(void)rc;
	((struct pub_state *)arg)->lost = true;
}

static int publish(struct mosquitto *m, const struct upl_request_pub *c, const struct upl_request *r,
                   struct pub_state *s, char *why, size_t whylen)
{
	char topic[BASIC_VEHICLE_NAME_MAX + 32], line[UPL_REQUEST_LINE_MAX];
	int64_t deadline = basic_mono_ns() + (int64_t)(c->timeout_ms ? c->timeout_ms : 10000) * 1000000;
	int n = upl_request_format(r, line, sizeof(line)), rc;

	if (n < 0)
		return snprintf(why, whylen, "not a request"), n;
	snprintf(topic, sizeof(topic), "railmon/%s/request", c->vehicle);
	if (c->username && (rc = mosquitto_username_pw_set(m, c->username, c->password)) != MOSQ_ERR_SUCCESS)
		return snprintf(why, whylen, "%s", mosquitto_strerror(rc)), upl_mqtt_errno(rc);
	if (c->use_tls && (rc = upl_mqtt_tls_apply(m, &c->tls)) < 0)
		return snprintf(why, whylen, "cannot use the TLS files (--ca, --cert, --key): %s", strerror(-rc)), rc;
	/* asynchronous: mosquitto_connect()'s TCP connect blocks for as long
	   as the kernel retries a SYN nobody answers (over 2 minutes), past
	   the deadline; the loop below finishes it (the name lookup still
	   blocks); the line is published once the CONNACK came */
	errno = 0;
	rc = mosquitto_connect_async(m, c->host, c->port, 20);
	if (rc != MOSQ_ERR_SUCCESS) {
		upl_mqtt_describe(rc, errno, NULL, why, whylen);
		return upl_mqtt_errno(rc);
	}
	while (!s->acked) {
		unsigned ms = c->timeout_ms ? c->timeout_ms : 10000;

		if (s->connack > 0) {
			snprintf(why, whylen, "the broker refused the connection: %s", mosquitto_connack_string(s->connack));
			return upl_mqtt_connack_errno(s->connack);
		}
		if (s->connack == 0 && s->mid < 0) {
			rc = mosquitto_publish(m, &s->mid, topic, n, line, 1, false);
			if (rc != MOSQ_ERR_SUCCESS) {
				upl_mqtt_describe(rc, errno, NULL, why, whylen);
				return upl_mqtt_errno(rc);
			}
		}
		if (s->lost) {
			snprintf(why, whylen, "the broker closed the connection");
			return -ECONNRESET;
		}
		if (basic_mono_ns() > deadline) {
			if (s->connack == 0)
				snprintf(why, whylen, "no acknowledgement (PUBACK) from the broker within %u ms", ms);
			else if (upl_mqtt_tcp_connected(m))
				snprintf(why, whylen, "the broker accepted the connection but did not answer it (no CONNACK) "
				         "within %u ms", ms);
			else
				snprintf(why, whylen, "no connection to the broker within %u ms (nothing accepted it)", ms);
			return -ETIMEDOUT;
		}
		errno = 0;
		rc = mosquitto_loop(m, 100, 1);
		/* a refused login: the CONNACK's reason, said at the top */
		if (s->connack > 0)
			continue;
		if (rc != MOSQ_ERR_SUCCESS && rc != MOSQ_ERR_NO_CONN && rc != MOSQ_ERR_CONN_LOST) {
			upl_mqtt_describe(rc, errno, NULL, why, whylen);
			return upl_mqtt_errno(rc);
		}
		if (rc == MOSQ_ERR_NO_CONN || rc == MOSQ_ERR_CONN_LOST)
			s->lost = true;
	}
	mosquitto_disconnect(m);
	return 0;
}

int upl_request_publish(const struct upl_request_pub *c, const struct upl_request *r, char *why, size_t whylen)
{
	struct pub_state s = { .connack = -1, .mid = -1 };
	struct mosquitto *m;
	int err;

	if (!c || !c->host || !c->vehicle || !basic_vehicle_name_ok(c->vehicle) || c->port < 1 || c->port > 65535 ||
	    !r || !why || !whylen) {
		if (why && whylen)
			snprintf(why, whylen, "bad arguments");
		return -EINVAL;
	}
	why[0] = '\0';
	upl_mqtt_lib_init();
	m = mosquitto_new(NULL, true, &s);
	if (!m) {
		snprintf(why, whylen, "%s", strerror(errno ? errno : ENOMEM));
		return errno ? -errno : -ENOMEM;
	}
	mosquitto_connect_callback_set(m, on_connect);
	mosquitto_publish_callback_set(m, on_publish);
	mosquitto_disconnect_callback_set(m, on_disconnect);
	mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
	err = publish(m, c, r, &s, why, whylen);
	mosquitto_destroy(m);
	return err;
}
