/* SPDX-License-Identifier: MIT */
/*
 * fwd-conn.c - the forwarder's MQTT connection: the reason a connection
 * failed in plain words, libmosquitto's connect/disconnect/log callbacks,
 * going down with backoff, coming up (status, subscriptions, channel
 * dictionary) and the goodbye at stop.  The client is created and the
 * thread's loop runs in forward.c.
 */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward-private.h"
#include "mqtt-private.h"
#include "basic/clock.h"
#include <stdarg.h>

void upl_fwd_on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_forwarder_t *f = arg;

	f->net.connack_rc = rc;
}

/* Remember the first reason a connection attempt or connection failed. */
void upl_fwd_why_set(upl_forwarder_t *f, const char *fmt, ...)
{
	va_list ap;

	if (f->net.why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(f->net.why, sizeof(f->net.why), fmt, ap);
	va_end(ap);
}

/* A failed libmosquitto call, in its own words; errno as it left it. */
void upl_fwd_why_mosq(upl_forwarder_t *f, int rc, int sys_errno)
{
	char text[sizeof(f->net.why)];

	upl_mqtt_describe(rc, sys_errno, f->net.mosq_log, text, sizeof(text));
	upl_fwd_why_set(f, "%s", text);
}

void upl_fwd_on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_forwarder_t *f = arg;
	int e = errno;

	f->net.lost = true;
	/* MOSQ_ERR_KEEPALIVE: no PINGRESP - an idle half-open connection. */
	if (rc == MOSQ_ERR_KEEPALIVE) {
		f->net.lost_err = -ETIMEDOUT;
		upl_fwd_why_set(f, "the broker stopped answering keepalive pings (%u s)", f->cfg.keepalive_s);
	} else if (rc != MOSQ_ERR_SUCCESS) {
		upl_fwd_why_mosq(f, rc, e);
	}
}

/* libmosquitto's error lines carry what its return codes lose: OpenSSL's
   reason for a failed handshake.  Kept, not printed: modules do not log. */
void upl_fwd_on_log(struct mosquitto *mosq, void *arg, int level, const char *str)
{
	upl_forwarder_t *f = arg;

	if (level == MOSQ_LOG_ERR)
		snprintf(f->net.mosq_log, sizeof(f->net.mosq_log), "%s", str);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void upl_fwd_conn_down(upl_forwarder_t *f, int err, bool failed_attempt)
{
	uint64_t delay;

	if (f->net.mosq) {
		/* Fresh client next time: whatever state libmosquitto kept about
		   a dead socket is discarded with it. */
		mosquitto_destroy(f->net.mosq);
		f->net.mosq = NULL;
	}
	if (f->net.state == CONN_UP) {
		f->net.fails = 0;
		emit(f, UPL_FWD_DISCONNECTED, err);
	} else {
		emit(f, UPL_FWD_CONNECT_FAILED, err);
	}
	f->net.state = CONN_DOWN;
	upl_fwd_window_rewind(f);
	upl_fwd_resend_conn_down(f);
	upl_fwd_why_set(f, "%s", strerror(err < 0 ? -err : EIO));
	pthread_mutex_lock(&f->lock);
	f->st.connected = false;
	if (failed_attempt)
		f->st.connect_fails++;
	if (err)
		f->st.last_error = err;
	snprintf(f->st.last_error_text, sizeof(f->st.last_error_text), "%s", f->net.why);
	pthread_mutex_unlock(&f->lock);
	f->net.why[0] = '\0';
	f->net.mosq_log[0] = '\0';
	/* Exponential backoff with jitter in [d/2, d]: a depot full of trains
	   coming back at once must not reconnect in lockstep. */
	delay = f->cfg.backoff_min_ms;
	for (unsigned i = 0; i < f->net.fails && delay < f->cfg.backoff_max_ms; i++)
		delay *= 2;
	if (delay > f->cfg.backoff_max_ms)
		delay = f->cfg.backoff_max_ms;
	delay = delay / 2 + xorshift(&f->net.rng) % (delay / 2 + 1);
	if (f->net.fails < 64)
		f->net.fails++;
	f->net.deadline_ns = basic_mono_ns() + (int64_t)delay * 1000000;
}

void upl_fwd_conn_established(upl_forwarder_t *f)
{
	static const char online[] = "online";

	f->net.state = CONN_UP;
	/* Retained, so a consumer arriving later sees the state at once; the
	   will replaces it with "offline" if we vanish. */
	mosquitto_publish(f->net.mosq, NULL, f->topic_status, sizeof(online) - 1, online, 1, true);
	if (f->cfg.resend_source.next)
		mosquitto_subscribe(f->net.mosq, NULL, f->topic_resend, 1);
	if (f->resend.requests)
		mosquitto_subscribe(f->net.mosq, NULL, f->topic_request, 1);
	if (f->cfg.on_config)
		mosquitto_subscribe(f->net.mosq, NULL, f->topic_config, 1);
	/* Retained too: the dictionary for a consumer that starts mid-stream
	   (the Batches carry it only now and then).  A failure costs nothing
	   but names until the next dictionary in a Batch. */
	if (f->cfg.channels_msg)
		mosquitto_publish(f->net.mosq, NULL, f->topic_channels, (int)f->cfg.channels_len, f->cfg.channels_msg, 1,
		                  true);
	pthread_mutex_lock(&f->lock);
	f->config_status_new = f->config_status != NULL; /* again on each connection: QoS 1 may have lost it */
	f->st.connects++;
	f->st.connected = true;
	pthread_mutex_unlock(&f->lock);
	emit(f, UPL_FWD_CONNECTED, 0);
}

void upl_fwd_goodbye(upl_forwarder_t *f)
{
	static const char offline[] = "offline";
	int64_t until = basic_mono_ns() + 500 * INT64_C(1000000);

	if (f->net.state == CONN_UP) {
		/* A clean DISCONNECT suppresses the will, so say it ourselves. */
		mosquitto_publish(f->net.mosq, NULL, f->topic_status, sizeof(offline) - 1, offline, 1, true);
		while (mosquitto_want_write(f->net.mosq) && basic_mono_ns() < until)
			if (mosquitto_loop(f->net.mosq, 20, 1) != MOSQ_ERR_SUCCESS)
				break;
		mosquitto_disconnect(f->net.mosq);
		mosquitto_loop(f->net.mosq, 20, 1);
	}
	if (f->net.mosq)
		mosquitto_destroy(f->net.mosq);
	f->net.mosq = NULL;
	f->net.state = CONN_DOWN;
	upl_fwd_cursor_flush(f, true);
	pthread_mutex_lock(&f->lock);
	f->st.connected = false;
	pthread_mutex_unlock(&f->lock);
}
