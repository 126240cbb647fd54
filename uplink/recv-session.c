/* SPDX-License-Identifier: MIT */
/*
 * recv-session.c - the ground side's MQTT receiver: the session (connect,
 * subscribe, reconnect with backoff, the reasons a connection failed in
 * plain words), the topics told apart (data, channels, status, aux), each
 * data payload decoded once and handed to on_data (the ground's ledger,
 * ground/ledger.c), the publish queue of gap repair, the counters and
 * the wait for the subscription.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt-private.h"
#include "recv-private.h"
#include "basic/clock.h"
#include "basic/name.h"

/* The decoded Batch of a data payload to on_data: -EBADMSG for one whose
   vehicle is not the topic's. */
static int feed_data(upl_recv_t *r, const char *topic, rec_batch_t **b, const void *payload, size_t len)
{
	struct rec_batch_info info;

	if (rec_batch_info(*b, &info) < 0 || !upl_topic_vehicle_matches(topic, info.vehicle))
		return -EBADMSG;
	return r->cfg.on_data ? r->cfg.on_data(r->cfg.data_ctx, b, payload, len) : 0;
}

int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	rec_batch_t *b = NULL;
	int ret;

	if (!r || (!payload && len))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->st.messages++;
	pthread_mutex_unlock(&r->lock);
	ret = rec_batch_decode(payload, len, &b);
	if (ret == 0)
		ret = feed_data(r, topic, &b, payload, len);
	if (ret == -EBADMSG || ret == -EINVAL) {
		pthread_mutex_lock(&r->lock);
		r->st.bad++;
		pthread_mutex_unlock(&r->lock);
		ret = -EBADMSG;
	}
	rec_batch_free(b);
	return ret;
}

/* ---- lifetime and queries ---- */

static int recv_cfg_check(const struct upl_recv_cfg *c)
{
	if (!c->client_id || !*c->client_id || c->port < 0 || c->port > 65535)
		return -EINVAL;
	if (c->password && !c->username)
		return -EINVAL;
	if (c->keepalive_s && c->keepalive_s < 5)
		return -EINVAL;
	if (!c->use_tls)
		return c->tls.insecure || c->tls.ca_file || c->tls.cert_file || c->tls.key_file ? -EINVAL : 0;
	return upl_mqtt_tls_check(&c->tls);
}

upl_recv_t *upl_recv_free(upl_recv_t *r)
{
	if (!r)
		return NULL;
	free((char *)r->cfg.host);
	free((char *)r->cfg.client_id);
	free((char *)r->cfg.topic);
	free((char *)r->cfg.aux_topic);
	for (size_t i = 0; i < r->npub; i++) {
		free(r->pub[i].topic);
		free(r->pub[i].payload);
	}
	pthread_mutex_destroy(&r->pub_lock);
	free((char *)r->cfg.tls.ca_file);
	free((char *)r->cfg.tls.cert_file);
	free((char *)r->cfg.tls.key_file);
	free((char *)r->cfg.username);
	free((char *)r->cfg.password);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

int upl_recv_new(const struct upl_recv_cfg *cfg, upl_recv_t **ret_recv)
{
	upl_recv_t *r;
	bool ok = true;
	int ret;

	if (!cfg || !ret_recv)
		return -EINVAL;
	ret = recv_cfg_check(cfg);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->cfg = *cfg;
	r->cfg.host = upl_strdup_opt(cfg->host, &ok);
	r->cfg.client_id = upl_strdup_opt(cfg->client_id, &ok);
	r->cfg.topic = upl_strdup_opt(cfg->topic ? cfg->topic : "railmon/+/data", &ok);
	r->cfg.aux_topic = upl_strdup_opt(cfg->aux_topic, &ok);
	pthread_mutex_init(&r->pub_lock, NULL);
	r->aux_match = r->cfg.aux_topic;
	if (r->aux_match && !strncmp(r->aux_match, "$share/", 7) && strchr(r->aux_match + 7, '/'))
		r->aux_match = strchr(r->aux_match + 7, '/') + 1;
	r->cfg.tls.ca_file = upl_strdup_opt(cfg->tls.ca_file, &ok);
	r->cfg.tls.cert_file = upl_strdup_opt(cfg->tls.cert_file, &ok);
	r->cfg.tls.key_file = upl_strdup_opt(cfg->tls.key_file, &ok);
	r->cfg.username = upl_strdup_opt(cfg->username, &ok);
	r->cfg.password = upl_strdup_opt(cfg->password, &ok);
	if (!r->cfg.keepalive_s)
		r->cfg.keepalive_s = 20;
	if (!r->cfg.backoff_max_ms)
		r->cfg.backoff_max_ms = 16000;
	if (!ok) {
		upl_recv_free(r);
		return -ENOMEM;
	}
	upl_mqtt_lib_init();
	*ret_recv = r;
	return 0;
}

int upl_recv_stop(upl_recv_t *r)
{
	if (!r)
		return -EINVAL;
	atomic_store(&r->stop, true);
	return 0;
}

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (!r->st.subscribed && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = r->st.subscribed ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* ---- the MQTT session ---- */

static void set_subscribed(upl_recv_t *r, bool on)
{
	pthread_mutex_lock(&r->lock);
	r->st.subscribed = on;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* Record why a connection attempt (or session, LOST) ended. */
static void note_fail(upl_recv_t *r, enum upl_recv_fail fail, int err, int detail, const char *text)
{
	pthread_mutex_lock(&r->lock);
	r->st.fail = fail;
	r->st.fail_err = err;
	r->st.fail_detail = detail;
	snprintf(r->st.fail_text, sizeof(r->st.fail_text), "%s", text);
	if (fail == UPL_RECV_FAIL_LOST)
		r->st.disconnects++;
	else
		r->st.connect_failures++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

/* A libmosquitto error code; errno is still the one it left. */
static void note_mosq_fail(upl_recv_t *r, int rc, bool subscribed)
{
	int e = errno, err = upl_mqtt_errno(rc);

	if (rc == MOSQ_ERR_EAI)
		/* libmosquitto leaves getaddrinfo's code in errno */
		note_fail(r, UPL_RECV_FAIL_RESOLVE, err, e, gai_strerror(e));
	else if (rc == MOSQ_ERR_TLS)
		note_fail(r, UPL_RECV_FAIL_TLS, err, 0,
		          r->last_log_error[0] ? r->last_log_error : mosquitto_strerror(rc));
	else
		note_fail(r, subscribed ? UPL_RECV_FAIL_LOST : UPL_RECV_FAIL_CONNECT, err, 0,
		          rc == MOSQ_ERR_ERRNO ? strerror(-err) : mosquitto_strerror(rc));
}

static void on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->connack_rc = rc;
	if (rc != 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->st.connects++;
	pthread_mutex_unlock(&r->lock);
	/* the dictionaries first: retained ones arrive before new data */
	char *topics[5];
	int n = 0;

	if (r->cfg.on_channels)
		topics[n++] = (char *)"railmon/+/channels";
	if (r->cfg.on_status)
		topics[n++] = (char *)"railmon/+/status";
	if (r->cfg.on_config_status)
		topics[n++] = (char *)"railmon/+/config/status";
	topics[n++] = (char *)r->cfg.topic;
	if (r->cfg.aux_topic)
		topics[n++] = (char *)r->cfg.aux_topic;
	if (mosquitto_subscribe_multiple(mosq, NULL, n, topics, 1, 0, NULL) != MOSQ_ERR_SUCCESS)
		r->lost = true;
}

static void on_subscribe(struct mosquitto *mosq, void *arg, int mid, int n, const int *qos)
{
	upl_recv_t *r = arg;

	/* 0x80: the broker refused a subscription (ACL).  The data topic and
	   the optional aux topic after it must be granted; the dictionaries
	   and the status topics (first, when asked for) only cost names and
	   states if refused. */
	int first = (r->cfg.on_channels ? 1 : 0) + (r->cfg.on_status ? 1 : 0) + (r->cfg.on_config_status ? 1 : 0);
	bool refused = n <= first;

	for (int i = first; i < n; i++)
		if (qos[i] == 0x80)
			refused = true;
	if (refused) {
		r->sub_refused = true;
		r->lost = true;
		return;
	}
	set_subscribed(r, true);
}

static void on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->lost = true;
}

/* railmon/<vehicle>/channels: the vehicle's dictionary, to on_channels. */
static void feed_channels(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	rec_batch_t *b;
	struct rec_batch_info info;

	/* No railmon sends a dictionary over 1 MiB (a large one is sliced):
	   a bigger one is only there to cost the ground memory and rows. */
	if (len > REC_BATCH_MAX_BYTES || rec_batch_decode(payload, len, &b) < 0) {
		pthread_mutex_lock(&r->lock);
		r->st.bad++;
		pthread_mutex_unlock(&r->lock);
		return;
	}
	if (rec_batch_info(b, &info) == 0 && upl_topic_vehicle_matches(topic, info.vehicle) && info.nchannels) {
		if (basic_vehicle_name_ok(info.vehicle)) {
			r->cfg.on_channels(r->cfg.ctx, &info, b);
		} else {
			pthread_mutex_lock(&r->lock);
			r->st.channels_refused++;
			pthread_mutex_unlock(&r->lock);
		}
	}
	rec_batch_free(b);
}

static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *m)
{
	upl_recv_t *r = arg;
	size_t tl = m->topic ? strlen(m->topic) : 0;
	size_t len = m->payloadlen > 0 ? (size_t)m->payloadlen : 0;
	bool aux = false;

	if (r->aux_match && r->cfg.on_aux && mosquitto_topic_matches_sub(r->aux_match, m->topic, &aux) ==
	    MOSQ_ERR_SUCCESS && aux) {
		r->cfg.on_aux(r->cfg.ctx, m->topic, m->payload, len);
		return;
	}
	if (r->cfg.on_status && mosquitto_topic_matches_sub("railmon/+/status", m->topic, &aux) == MOSQ_ERR_SUCCESS &&
	    aux) {
		r->cfg.on_status(r->cfg.ctx, m->topic, m->payload, len);
		return;
	}
	if (r->cfg.on_config_status &&
	    mosquitto_topic_matches_sub("railmon/+/config/status", m->topic, &aux) == MOSQ_ERR_SUCCESS && aux) {
		r->cfg.on_config_status(r->cfg.ctx, m->topic, m->payload, len);
		return;
	}
	if (r->cfg.on_channels && tl > 9 && !strcmp(m->topic + tl - 9, "/channels"))
		feed_channels(r, m->topic, m->payload, len);
	else
		upl_recv_feed(r, m->topic, m->payload, len);
}

/* libmosquitto says why a TLS handshake failed only in its log. */
static void on_log(struct mosquitto *mosq, void *arg, int level, const char *line)
{
	upl_recv_t *r = arg;

	if (level & MOSQ_LOG_ERR)
		snprintf(r->last_log_error, sizeof(r->last_log_error), "%s", line);
}

static int session_new(upl_recv_t *r, struct mosquitto **ret)
{
	struct mosquitto *m;
	int rc, err;

	m = mosquitto_new(r->cfg.client_id, r->cfg.clean_session, r);
	if (!m)
		return errno ? -errno : -ENOMEM;
	mosquitto_connect_callback_set(m, on_connect);
	mosquitto_subscribe_callback_set(m, on_subscribe);
	mosquitto_disconnect_callback_set(m, on_disconnect);
	mosquitto_message_callback_set(m, on_message);
	mosquitto_log_callback_set(m, on_log);
	rc = MOSQ_ERR_SUCCESS;
	if (r->cfg.username)
		rc = mosquitto_username_pw_set(m, r->cfg.username, r->cfg.password);
	err = upl_mqtt_errno(rc);
	if (err == 0 && r->cfg.use_tls)
		err = upl_mqtt_tls_apply(m, &r->cfg.tls);
	if (err < 0) {
		mosquitto_destroy(m);
		return err;
	}
	*ret = m;
	return 0;
}

/* Why the session loop ended, when stop was not asked. */
static void session_failed(upl_recv_t *r, int loop_rc, bool timed_out, bool subscribed)
{
	if (r->connack_rc > 0)
		note_fail(r, UPL_RECV_FAIL_REFUSED, -ECONNREFUSED, r->connack_rc,
		          mosquitto_connack_string(r->connack_rc));
	else if (r->sub_refused)
		note_fail(r, UPL_RECV_FAIL_SUBSCRIBE, -EACCES, 0,
		          "the broker refused the subscription (not allowed to read the topic?)");
	else if (timed_out)
		note_fail(r, UPL_RECV_FAIL_TIMEOUT, -ETIMEDOUT, 0,
		          "connected, but the broker did not answer (no CONNACK in 15 s)");
	else if (loop_rc != MOSQ_ERR_SUCCESS)
		note_mosq_fail(r, loop_rc, subscribed);
	else
		note_fail(r, subscribed ? UPL_RECV_FAIL_LOST : UPL_RECV_FAIL_CONNECT, -ECONNRESET, 0,
		          "the broker closed the connection");
}

int upl_recv_publish(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	struct pub_msg m;
	int err = 0;

	if (!r || !topic || (!payload && len))
		return -EINVAL;
	m.topic = strdup(topic);
	m.payload = malloc(len ? len : 1);
	m.len = len;
	if (!m.topic || !m.payload) {
		free(m.topic);
		free(m.payload);
		return -ENOMEM;
	}
	memcpy(m.payload, payload, len);
	pthread_mutex_lock(&r->pub_lock);
	if (r->npub < UPL_RECV_PUB_MAX)
		r->pub[r->npub++] = m;
	else
		err = -ENOBUFS;
	pthread_mutex_unlock(&r->pub_lock);
	if (err) {
		free(m.topic);
		free(m.payload);
	}
	return err;
}

/* Send what upl_recv_publish() queued (libmosquitto keeps QoS 1 messages
   until their PUBACK, and sends them again after a reconnect). */
static void pub_drain(upl_recv_t *r, struct mosquitto *m)
{
	pthread_mutex_lock(&r->pub_lock);
	for (size_t i = 0; i < r->npub; i++) {
		mosquitto_publish(m, NULL, r->pub[i].topic, (int)r->pub[i].len, r->pub[i].payload, 1, false);
		free(r->pub[i].topic);
		free(r->pub[i].payload);
	}
	r->npub = 0;
	pthread_mutex_unlock(&r->pub_lock);
}

/* One connection: returns when it is lost, times out, or stop is asked. */
static void session_run(upl_recv_t *r, struct mosquitto *m)
{
	int64_t deadline = basic_mono_ns() + 15 * INT64_C(1000000000);
	bool timed_out = false, subscribed = false;
	int rc;

	r->connack_rc = -1;
	r->lost = r->sub_refused = false;
	r->last_log_error[0] = 0;
	rc = mosquitto_connect_async(m, r->cfg.host, r->cfg.port, (int)r->cfg.keepalive_s);
	if (rc != MOSQ_ERR_SUCCESS) {
		note_mosq_fail(r, rc, false);
		return;
	}
	while (!atomic_load(&r->stop) && !r->lost && r->connack_rc <= 0) {
		/* No CONNACK in time: a stopped broker accepts TCP but never answers. */
		if (r->connack_rc < 0 && basic_mono_ns() > deadline) {
			timed_out = true;
			break;
		}
		rc = mosquitto_loop(m, 100, 1);
		if (r->cfg.on_tick)
			r->cfg.on_tick(r->cfg.ctx);
		if (r->cfg.on_idle)
			r->cfg.on_idle(r->cfg.ctx);
		subscribed = subscribed || r->st.subscribed;
		if (r->connack_rc == 0)
			pub_drain(r, m);
		if (rc != MOSQ_ERR_SUCCESS)
			break;
	}
	if (!atomic_load(&r->stop))
		session_failed(r, rc, timed_out, subscribed);
	if (r->connack_rc == 0 && !r->lost)
		mosquitto_disconnect(m);
	set_subscribed(r, false);
}

static void backoff_wait(upl_recv_t *r, unsigned ms)
{
	int64_t until = basic_mono_ns() + (int64_t)ms * 1000000;

	while (!atomic_load(&r->stop) && basic_mono_ns() < until) {
		struct timespec ts = { 0, 20000000 };

		nanosleep(&ts, NULL);
		if (r->cfg.on_idle)
			r->cfg.on_idle(r->cfg.ctx);
	}
}

int upl_recv_run(upl_recv_t *r)
{
	unsigned first, delay;

	if (!r || !r->cfg.host || !r->cfg.port)
		return -EINVAL;
	first = r->cfg.backoff_max_ms < 250 ? r->cfg.backoff_max_ms : 250;
	delay = first;
	while (!atomic_load(&r->stop)) {
		struct mosquitto *m = NULL;
		uint64_t before = r->st.connects;
		int err = session_new(r, &m);

		if (err < 0)
			return err;
		session_run(r, m);
		mosquitto_destroy(m);
		/* Reset the backoff after a session that worked. */
		delay = r->st.connects != before ? first : delay * 2;
		if (delay > r->cfg.backoff_max_ms)
			delay = r->cfg.backoff_max_ms;
		if (!atomic_load(&r->stop))
			backoff_wait(r, delay / 2 + (unsigned)(basic_mono_ns() % (delay / 2 + 1)));
	}
	atomic_store(&r->stop, false);
	return 0;
}
