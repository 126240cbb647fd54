/* SPDX-License-Identifier: MIT */
/*
 * forward.c - the store-and-forward thread: the forwarder object
 * (configuration, create/free, stats), the requests it takes from outside
 * (held windows, the ground's resend lines), the MQTT client with every
 * callback wired in one place, and the thread's loop that drives the parts
 * in turn.  The parts live beside it (forward-private.h lists them):
 * fwd-conn.c, fwd-window.c, fwd-ahead.c, fwd-resend.c, fwd-slot.c.
 *
 * One job over ~600 lines: the thread and its client, wired in one place;
 * what it does by concern is in those fwd-*.c files.
 *
 * One thread owns everything: the libmosquitto client (driven with
 * mosquitto_loop(), never mosquitto_loop_start(), so a wedged network loop
 * cannot hide from us), the window of in-flight messages and the cursor.
 * Callbacks run inside mosquitto_loop() on that same thread, so the window
 * needs no lock; only the stats snapshot is shared, under a mutex.
 *
 * Every connection attempt uses a fresh client.  The window keeps a copy
 * of each unacknowledged Batch, and after a reconnect we publish them all
 * again in sequence order: duplicates are bounded by the window, and no
 * libmosquitto reconnect state is trusted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "forward-private.h"
#include "mqtt-private.h"
#include "range.h"
#include "basic/clock.h"
#include "basic/thread.h"
#include "record/batch.h"

/* glibc's default thread stack is 8 MiB, and the daemon's mlockall makes
   all of it resident.  Measured (railmon run without mlockall, pages
   touched): 20 KiB connected to mosquitto over plain TCP; TLS adds
   OpenSSL's handshake, tens of KiB. */
#define FWD_STACK_BYTES (256 * 1024)

static int cfg_check(const struct upl_forward_cfg *c)
{
	if (!c->host || !*c->host || c->port < 1 || c->port > 65535)
		return -EINVAL;
	if (!c->client_id || !*c->client_id || !c->vehicle || !*c->vehicle)
		return -EINVAL;
	/* The vehicle becomes a topic level: MQTT wildcards and separators
	   would publish somewhere the consumers do not subscribe. */
	if (strpbrk(c->vehicle, "/+#"))
		return -EINVAL;
	if (!c->cursor_path || !*c->cursor_path || !c->source.next || !c->source.seek)
		return -EINVAL;
	if (c->password && !c->username)
		return -EINVAL;
	if (c->live_source.next && !c->live_source.seek_time)
		return -EINVAL;
	if (c->hold_source.next && (!c->hold_source.seek_time || !c->hold_source.seek))
		return -EINVAL;
	if (c->inflight > 65535 || (c->keepalive_s && c->keepalive_s < 5))
		return -EINVAL;
	if (c->backoff_max_ms && c->backoff_min_ms > c->backoff_max_ms)
		return -EINVAL;
	/* Insecure is a relaxation of TLS; without TLS it means nothing and
	   most likely hides a configuration mistake. */
	if (!c->use_tls)
		return c->tls.insecure ? -EINVAL : 0;
	return upl_mqtt_tls_check(&c->tls);
}

static void cfg_defaults(struct upl_forward_cfg *c)
{
	if (!c->inflight)
		c->inflight = 32;
	if (!c->keepalive_s)
		c->keepalive_s = 20;
	if (!c->ack_timeout_ms)
		c->ack_timeout_ms = 30000;
	if (!c->connect_timeout_ms)
		c->connect_timeout_ms = 15000;
	if (!c->live_window_ns)
		c->live_window_ns = 60 * INT64_C(1000000000);
	if (!c->backoff_min_ms)
		c->backoff_min_ms = 500;
	if (!c->backoff_max_ms)
		c->backoff_max_ms = c->backoff_min_ms > 60000 ? c->backoff_min_ms : 60000;
	if (!c->idle_poll_ms)
		c->idle_poll_ms = 200;
	if (!c->resend_per_s)
		c->resend_per_s = 20;
}

static int cfg_copy(upl_forwarder_t *f, const struct upl_forward_cfg *c)
{
	bool ok = true;

	f->cfg = *c;
	f->cfg.host = upl_strdup_opt(c->host, &ok);
	f->cfg.client_id = upl_strdup_opt(c->client_id, &ok);
	f->cfg.vehicle = upl_strdup_opt(c->vehicle, &ok);
	f->cfg.cursor_path = upl_strdup_opt(c->cursor_path, &ok);
	f->cfg.requests_path = upl_strdup_opt(c->requests_path, &ok);
	f->cfg.tls.ca_file = upl_strdup_opt(c->tls.ca_file, &ok);
	f->cfg.tls.cert_file = upl_strdup_opt(c->tls.cert_file, &ok);
	f->cfg.tls.key_file = upl_strdup_opt(c->tls.key_file, &ok);
	f->cfg.username = upl_strdup_opt(c->username, &ok);
	f->cfg.password = upl_strdup_opt(c->password, &ok);
	if (asprintf(&f->topic_data, "railmon/%s/data", c->vehicle) < 0)
		f->topic_data = NULL, ok = false;
	if (asprintf(&f->topic_status, "railmon/%s/status", c->vehicle) < 0)
		f->topic_status = NULL, ok = false;
	if (asprintf(&f->topic_events, "railmon/%s/events", c->vehicle) < 0)
		f->topic_events = NULL, ok = false;
	if (asprintf(&f->topic_resend, "railmon/%s/resend", c->vehicle) < 0)
		f->topic_resend = NULL, ok = false;
	if (asprintf(&f->topic_gone, "railmon/%s/gone", c->vehicle) < 0)
		f->topic_gone = NULL, ok = false;
	if (asprintf(&f->topic_request, "railmon/%s/request", c->vehicle) < 0)
		f->topic_request = NULL, ok = false;
	if (asprintf(&f->topic_channels, "railmon/%s/channels", c->vehicle) < 0)
		f->topic_channels = NULL, ok = false;
	if (asprintf(&f->topic_config, "railmon/%s/config", c->vehicle) < 0)
		f->topic_config = NULL, ok = false;
	if (asprintf(&f->topic_config_status, "railmon/%s/config/status", c->vehicle) < 0)
		f->topic_config_status = NULL, ok = false;
	f->cfg.channels_msg = NULL;
	f->cfg.channels_len = 0;
	if (c->channels_msg && c->channels_len && c->channels_len <= INT32_MAX) {
		void *copy = malloc(c->channels_len);

		if (copy) {
			memcpy(copy, c->channels_msg, c->channels_len);
			f->cfg.channels_msg = copy;
			f->cfg.channels_len = c->channels_len;
		} else {
			ok = false;
		}
	}
	cfg_defaults(&f->cfg);
	return ok ? 0 : -ENOMEM;
}

/*
 * Where to start.  A damaged cursor must neither stop the daemon nor skip
 * records: start again from the oldest record the log holds (seq 1 seeks
 * there), so the ground gets duplicates at worst, never a gap.
 */
static void cursor_start(upl_forwarder_t *f, uint64_t *ret_seq)
{
	uint64_t seq = 1;
	int r = upl_cursor_load(f->cfg.cursor_path, &seq);

	/* A cursor past the log's end (a log replaced under it, or a digit
	   flipped) would wait for records that never come. */
	if (r == 0 && f->cfg.log_next_seq && seq > f->cfg.log_next_seq) {
		f->st.cursor_damaged_seq = seq;
		r = -EOVERFLOW;
	}
	if (r < 0) {
		f->win.cursor_damage = f->st.cursor_damage = r;
		seq = 1;
	}
	*ret_seq = seq;
}

upl_forwarder_t *upl_forwarder_free(upl_forwarder_t *f)
{
	if (!f)
		return NULL;
	upl_forwarder_stop(f);
	if (f->net.mosq)
		mosquitto_destroy(f->net.mosq);
	for (unsigned i = 0; f->win.slots && i < f->cfg.inflight; i++)
		free(f->win.slots[i].buf);
	for (unsigned i = 0; i < AHEAD_SLOTS; i++)
		free(f->live.slot[i].buf);
	free(f->win.slots);
	upl_reducer_free(f->red_backlog);
	upl_reducer_free(f->red_live);
	free((char *)f->cfg.host);
	free((char *)f->cfg.client_id);
	free((char *)f->cfg.vehicle);
	free((char *)f->cfg.cursor_path);
	free((char *)f->cfg.tls.ca_file);
	free((char *)f->cfg.tls.cert_file);
	free((char *)f->cfg.tls.key_file);
	free((char *)f->cfg.username);
	free((char *)f->cfg.password);
	free(f->topic_data);
	free(f->topic_status);
	free(f->topic_events);
	free(f->topic_resend);
	free(f->topic_gone);
	free(f->topic_request);
	free((char *)f->cfg.requests_path);
	upl_requests_free(f->resend.requests);
	upl_reducer_free(f->resend.channels);
	free(f->resend.buf);
	free(f->topic_channels);
	free(f->topic_config);
	free(f->topic_config_status);
	free(f->config_status);
	free((void *)f->cfg.channels_msg);
	pthread_cond_destroy(&f->cond);
	pthread_mutex_destroy(&f->lock);
	free(f);
	return NULL;
}

int upl_forwarder_new(const struct upl_forward_cfg *cfg, upl_forwarder_t **ret_fwd)
{
	upl_forwarder_t *f;
	uint64_t cursor;
	int r;

	if (!cfg || !ret_fwd)
		return -EINVAL;
	r = cfg_check(cfg);
	if (r < 0)
		return r;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	r = cfg_copy(f, cfg);
	if (r == 0) {
		f->win.slots = calloc(f->cfg.inflight, sizeof(*f->win.slots));
		if (!f->win.slots)
			r = -ENOMEM;
	}
	/* Only a policy that reduces makes a reducer: without one the stored
	   Batches go as they are, byte for byte, as before reduction existed. */
	f->cfg.reduce = NULL;
	if (r == 0 && upl_reduce_cfg_active(cfg->reduce)) {
		r = upl_reducer_new(cfg->reduce, &f->red_backlog);
		if (r == 0 && cfg->live_source.next)
			r = upl_reducer_new(cfg->reduce, &f->red_live);
	}
	/* The pending full-rate requests, from before a restart too; a
	   damaged file is the owner's to name (upl_requests_open()'s line) */
	if (r == 0 && cfg->requests_path && cfg->resend_source.next && cfg->resend_source.seek_time)
		r = upl_requests_open(cfg->requests_path, &f->resend.requests, NULL);
	if (r < 0) {
		upl_forwarder_free(f);
		return r;
	}
	cursor_start(f, &cursor);
	f->win.cursor = f->win.cursor_written = f->win.cursor_synced = f->win.read_seq = cursor;
	/* A reset cursor is written again at the first chance (at the latest
	   at stop), so the damage is reported once, not at every start. */
	if (f->win.cursor_damage)
		f->win.cursor_written = f->win.cursor_synced = 0;
	f->st.cursor = cursor;
	f->st.insecure = f->cfg.use_tls && f->cfg.tls.insecure;
	f->net.rng = (uint64_t)basic_mono_ns() ^ (uint64_t)(uintptr_t)f ^ 0x9e3779b97f4a7c15ull;
	upl_mqtt_lib_init();
	*ret_fwd = f;
	return 0;
}

int upl_forwarder_stats(upl_forwarder_t *f, struct upl_forward_stats *ret)
{
	if (!f || !ret)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	*ret = f->st;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

int upl_forwarder_config_status(upl_forwarder_t *f, const char *json)
{
	char *copy;

	if (!f || !json)
		return -EINVAL;
	if (!(copy = strdup(json)))
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	free(f->config_status);
	f->config_status = copy;
	f->config_status_new = true;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

/* The forwarder's thread, connected: the newest configuration status out,
   retained (a ground that subscribes later reads it at once). */
static void config_status_publish(upl_forwarder_t *f)
{
	pthread_mutex_lock(&f->lock);
	if (f->config_status && f->config_status_new) {
		mosquitto_publish(f->net.mosq, NULL, f->topic_config_status, (int)strlen(f->config_status),
		                  f->config_status, 1, true);
		f->config_status_new = false;
	}
	pthread_mutex_unlock(&f->lock);
}

int upl_forwarder_hold(upl_forwarder_t *f, int64_t from_ns, int64_t to_ns)
{
	int r = 0;

	if (!f || from_ns > to_ns)
		return -EINVAL;
	pthread_mutex_lock(&f->lock);
	if (!f->cfg.hold_source.next)
		r = -ENOTSUP;
	else if (f->nholdq == UPL_HOLD_MAX)
		r = -ENOSPC;
	if (r < 0) {
		f->st.hold_refused++;
	} else {
		f->holdq[f->nholdq++] = (struct hold_req){ from_ns, to_ns };
		f->st.hold_requests++;
	}
	pthread_mutex_unlock(&f->lock);
	return r;
}

/* ---- the ground's messages: config (issue 32) and gap repair's resend requests ---- */

/* Full-rate requests (railmon/<vehicle>/request, from the ground only):
   each new id into the file before anything else, so it survives a
   restart; an id taken before is ignored (published twice, or QoS 1's
   second delivery), a line that cannot be kept is refused and counted. */
static void on_request(upl_forwarder_t *f, const struct mosquitto_message *m)
{
	const char *p = m->payload, *end = p + (m->payloadlen > 0 ? m->payloadlen : 0);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct upl_request req;
		int r;

		if (n) {
			r = upl_request_parse(p, n, &req) == 0 ? upl_requests_add(f->resend.requests, &req) : -EINVAL;
			if (r == 1)
				STAT_ADD(f, requests_taken, 1);
			else if (r == 0)
				STAT_ADD(f, requests_again, 1);
			else
				STAT_ADD(f, requests_refused, 1);
		}
		p += n + 1;
	}
}

/* Whether r is inside a range already queued (req[0]'s what is left of
   it to serve): the ground asks again for a hole not yet filled (its next
   repair pass, another receiver of a shared subscription, QoS 1's second
   delivery), and a range served twice sends its Batches twice. */
static bool resend_queued(const struct fwd_resend *q, const struct upl_range *r)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->req[i].first <= r->first && r->last <= q->req[i].last &&
		    !memcmp(q->req[i].log_id, r->log_id, sizeof(r->log_id)))
			return true;
	return false;
}

/* A request from the ground (the broker's ACL lets only the ground
   publish there): queue each range, once (resend_queued); the rest is
   refused and counted (the ground asks again for what is still missing). */
static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *m)
{
	upl_forwarder_t *f = arg;
	const char *p = m->payload, *end = p + (m->payloadlen > 0 ? m->payloadlen : 0);

	if (m->topic && f->resend.requests && !strcmp(m->topic, f->topic_request)) {
		on_request(f, m);
		return;
	}
	if (m->topic && f->cfg.on_config && !strcmp(m->topic, f->topic_config)) {
		/* the ground's board file: handed on whole, the caller verifies */
		STAT_ADD(f, config_messages, 1);
		f->cfg.on_config(f->cfg.config_ctx, m->payload, (size_t)(end - p));
		return;
	}
	if (!m->topic || strcmp(m->topic, f->topic_resend) != 0)
		return;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct upl_range req;
		bool ok = n && upl_range_parse(p, n, &req) == 0;

		if (ok && resend_queued(&f->resend, &req)) {
			STAT_ADD(f, resend_requests, 1);
			STAT_ADD(f, resend_merged, 1);
		} else if (ok && f->resend.n < UPL_RESEND_MAX) {
			f->resend.req[f->resend.n++] = req;
			STAT_ADD(f, resend_requests, 1);
		} else if (n) {
			STAT_ADD(f, resend_refused, 1);
		}
		p += n + 1;
	}
}

/* ---- the client and the thread's loop ---- */

static int conn_setup(upl_forwarder_t *f)
{
	static const char offline[] = "offline";
	int r;

	/* clean_session false: the broker keeps our session across drops. */
	f->net.mosq = mosquitto_new(f->cfg.client_id, false, f);
	if (!f->net.mosq)
		return errno ? -errno : -ENOMEM;
	mosquitto_connect_callback_set(f->net.mosq, upl_fwd_on_connect);
	mosquitto_disconnect_callback_set(f->net.mosq, upl_fwd_on_disconnect);
	mosquitto_log_callback_set(f->net.mosq, upl_fwd_on_log);
	mosquitto_publish_callback_set(f->net.mosq, upl_fwd_on_publish);
	if (f->cfg.resend_source.next || f->cfg.on_config)
		mosquitto_message_callback_set(f->net.mosq, on_message);
	mosquitto_int_option(f->net.mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
	/* Room for our window plus event and status messages, so libmosquitto
	   never queues a data message behind them. */
	r = mosquitto_max_inflight_messages_set(f->net.mosq, f->cfg.inflight * 2 + 2);
	if (r == MOSQ_ERR_SUCCESS && f->cfg.username)
		r = mosquitto_username_pw_set(f->net.mosq, f->cfg.username, f->cfg.password);
	if (r == MOSQ_ERR_SUCCESS)
		r = mosquitto_will_set(f->net.mosq, f->topic_status, sizeof(offline) - 1, offline, 1, true);
	if (r != MOSQ_ERR_SUCCESS) {
		upl_fwd_why_mosq(f, r, errno);
		return upl_mqtt_errno(r);
	}
	r = f->cfg.use_tls ? upl_mqtt_tls_apply(f->net.mosq, &f->cfg.tls) : 0;
	if (r < 0)
		upl_fwd_why_set(f, "cannot use the TLS files (ca_file, cert_file, key_file): %s", strerror(-r));
	return r;
}

static void conn_start(upl_forwarder_t *f)
{
	int r;

	r = conn_setup(f);
	if (r == 0) {
		int rc;

		f->net.connack_rc = -1;
		f->net.lost = false;
		f->net.lost_err = 0;
		errno = 0;
		rc = mosquitto_connect_async(f->net.mosq, f->cfg.host, f->cfg.port, (int)f->cfg.keepalive_s);
		if (rc != MOSQ_ERR_SUCCESS)
			upl_fwd_why_mosq(f, rc, errno);
		r = upl_mqtt_errno(rc);
	}
	if (r < 0) {
		upl_fwd_conn_down(f, r, true);
		return;
	}
	f->net.state = CONN_CONNECTING;
	f->net.deadline_ns = basic_mono_ns() + (int64_t)f->cfg.connect_timeout_ms * 1000000;
}

/* One step while connecting or connected.  Returns the poll timeout (ms)
   the next mosquitto_loop() may block. */
static int conn_step(upl_forwarder_t *f)
{
	int r;

	if (f->net.state == CONN_CONNECTING && f->net.connack_rc > 0) {
		/* The broker's reason beats the disconnect that follows it. */
		f->net.why[0] = '\0';
		upl_fwd_why_set(f, "the broker refused the connection: %s", mosquitto_connack_string(f->net.connack_rc));
		upl_fwd_conn_down(f, upl_mqtt_connack_errno(f->net.connack_rc), true);
		return 0;
	}
	if (f->net.lost) {
		upl_fwd_conn_down(f, f->net.lost_err ? f->net.lost_err : -ECONNRESET, f->net.state != CONN_UP);
		return 0;
	}
	if (f->net.state == CONN_CONNECTING) {
		if (f->net.connack_rc == 0) {
			upl_fwd_conn_established(f);
		} else if (basic_mono_ns() > f->net.deadline_ns) {
			upl_fwd_why_set(f, "no answer (CONNACK) within %u ms: the broker accepts TCP but does not speak MQTT",
			        f->cfg.connect_timeout_ms);
			upl_fwd_conn_down(f, -ETIMEDOUT, true);
			return 0;
		} else {
			return 20;
		}
	}
	/* Live first: it is what the ground wants to see now. */
	r = upl_fwd_live_publish(f);
	if (r == 0 && !upl_fwd_hold_ahead(f))
		r = upl_fwd_window_publish(f);
	if (r == 0 && f->cfg.resend_source.next)
		r = upl_fwd_resend_step(f);
	if (r < 0 && r != -ENOMEM) {
		upl_fwd_conn_down(f, r, false);
		return 0;
	}
	if (upl_fwd_window_stalled(f)) {
		upl_fwd_why_set(f, "no PUBACK within %u ms: the broker stopped, or the connection is half-open",
		        f->cfg.ack_timeout_ms);
		STAT_ADD(f, ack_timeouts, 1);
		emit(f, UPL_FWD_ACK_TIMEOUT, -ETIMEDOUT);
		upl_fwd_conn_down(f, -ETIMEDOUT, false);
		return 0;
	}
	return 20;
}

static void *forwarder_main(void *arg)
{
	upl_forwarder_t *f = arg;

	{
		int r = f->cfg.source.seek(f->cfg.source.ctx, f->win.cursor);

		if (r < 0)
			stats_error(f, r);
	}
	f->win.tokens_ns = basic_mono_ns();
	/* Into the record log through the board, with the reason. */
	if (f->win.cursor_damage)
		emit(f, UPL_FWD_CURSOR_RESET, f->win.cursor_damage);
	if (f->cfg.live_source.next) {
		int r = f->cfg.live_source.seek_time(f->cfg.live_source.ctx,
		                                     basic_realtime_ns() - f->cfg.live_window_ns);

		f->live.on = r == 0;
		if (r < 0)
			stats_error(f, r);
	}
	while (!atomic_load(&f->stop)) {
		int timeout;

		if (f->net.state == CONN_DOWN) {
			int64_t wait = f->net.deadline_ns - basic_mono_ns();

			if (wait <= 0) {
				conn_start(f);
				continue;
			}
			/* Sleep in short slices so stop() is honoured quickly. */
			struct timespec ts = { 0, wait > 50000000 ? 50000000 : wait };
			nanosleep(&ts, NULL);
			continue;
		}
		timeout = conn_step(f);
		if (f->net.state == CONN_DOWN)
			continue;
		if (f->net.state == CONN_UP)
			config_status_publish(f);
		/* mosquitto_loop also sends keepalive pings and notices a broker
		   that stopped answering them. */
		errno = 0;
		int rc = mosquitto_loop(f->net.mosq, timeout, 1);

		if (rc != MOSQ_ERR_SUCCESS) {
			int e = errno;

			f->net.lost = true;
			if (!f->net.lost_err) {
				errno = e;
				f->net.lost_err = upl_mqtt_errno(rc);
			}
			upl_fwd_why_mosq(f, rc, e);
		}
	}
	upl_fwd_goodbye(f);
	return NULL;
}

int upl_forwarder_start(upl_forwarder_t *f)
{
	int r;

	if (!f)
		return -EINVAL;
	if (f->running)
		return -EALREADY;
	atomic_store(&f->stop, false);
	r = basic_thread_create(&f->thread, "forwarder", FWD_STACK_BYTES, forwarder_main, f);
	if (r == 0)
		f->running = true;
	return r;
}

int upl_forwarder_stop(upl_forwarder_t *f)
{
	if (!f)
		return -EINVAL;
	if (!f->running)
		return 0;
	atomic_store(&f->stop, true);
	pthread_join(f->thread, NULL);
	f->running = false;
	return 0;
}

int upl_forwarder_wait_cursor(upl_forwarder_t *f, uint64_t seq, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!f)
		return -EINVAL;
	ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	pthread_mutex_lock(&f->lock);
	while (f->st.cursor < seq && err == 0) {
		if (!f->wait_seq || seq < f->wait_seq)
			f->wait_seq = seq;
		err = pthread_cond_timedwait(&f->cond, &f->lock, &ts);
	}
	err = f->st.cursor >= seq ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&f->lock);
	return err;
}
