/* SPDX-License-Identifier: MIT */
/*
 * fwd-slot.c - one message of the forwarder: a stored Batch copied into a
 * slot (flagged historical when it is backlog), the backlog rate cap, and
 * its publication on the data topic (with its events on the events topic
 * the first time).  Shared by the backlog window (fwd-window.c) and the
 * slots ahead of it (fwd-ahead.c).
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

/* The reduced Batch of rec (reduce.h), or the stored bytes when it goes
   whole; the stats count both. */
static void slot_reduce(upl_forwarder_t *f, upl_reducer_t *red, const struct upl_rec *rec, const void **ret_buf,
                        uint32_t *ret_len)
{
	struct upl_reduce_stats a, b;
	const uint8_t *buf;
	size_t len;

	upl_reducer_stats(red, &a);
	if (upl_reducer_batch(red, rec->payload, rec->len, &buf, &len) == 1 && len <= UINT32_MAX) {
		*ret_buf = buf;
		*ret_len = (uint32_t)len;
	}
	upl_reducer_stats(red, &b);
	pthread_mutex_lock(&f->lock);
	f->st.reduce_batches += b.batches - a.batches;
	f->st.reduce_records_in += b.records_in - a.records_in;
	f->st.reduce_records_out += b.records_out - a.records_out;
	f->st.reduce_bytes_in += b.bytes_in - a.bytes_in;
	f->st.reduce_bytes_out += b.bytes_out - a.bytes_out;
	f->st.reduce_whole += (b.whole - a.whole) + (b.errors - a.errors);
	pthread_mutex_unlock(&f->lock);
}

int upl_fwd_slot_fill(upl_forwarder_t *f, upl_reducer_t *red, struct slot *s, const struct upl_rec *rec,
                      bool historical)
{
	const void *payload = rec->payload;
	uint32_t len = rec->len, need;

	if (red)
		slot_reduce(f, red, rec, &payload, &len);
	need = len + (historical ? sizeof(historical_true) : 0);
	if (s->cap < need) {
		void *nb = realloc(s->buf, need);

		if (!nb)
			return -ENOMEM;
		s->buf = nb;
		s->cap = need;
	}
	memcpy(s->buf, payload, len);
	if (historical)
		memcpy((uint8_t *)s->buf + len, historical_true, sizeof(historical_true));
	s->len = need;
	s->first_seq = rec->first_seq;
	s->count = rec->count;
	s->t_last_ns = rec->t_last_ns;
	s->state = SLOT_STAGED;
	s->ever_sent = false;
	return 0;
}

/* Token bucket for backlog bytes.  Live records pass freely: the cap only
   keeps a long backlog from saturating the cellular link. */
bool upl_fwd_rate_allows(upl_forwarder_t *f, const struct slot *s)
{
	int64_t now;
	double burst;

	if (!f->cfg.rate_bytes_s || s->ever_sent)
		return true;
	if (s->t_last_ns >= basic_realtime_ns() - f->cfg.live_window_ns)
		return true;
	now = basic_mono_ns();
	burst = (double)f->cfg.rate_bytes_s / 4;
	f->win.tokens += (double)(now - f->win.tokens_ns) * 1e-9 * (double)f->cfg.rate_bytes_s;
	if (f->win.tokens > burst)
		f->win.tokens = burst;
	f->win.tokens_ns = now;
	/* Allowing a message when the bucket is non-negative and letting it go
	   into debt keeps Batches larger than the burst from stalling. */
	if (f->win.tokens < 0)
		return false;
	f->win.tokens -= s->len;
	return true;
}

/* Events go out once, with the first publication of their Batch; they are
   a convenience view, the data topic stays the record of truth. */
static void slot_publish_events(upl_forwarder_t *f, const struct slot *s)
{
	rec_encoder_t *enc = NULL;
	const uint8_t *buf;
	size_t len;

	if (upl_events_batch(s->buf, s->len, &enc, &buf, &len) <= 0)
		return;
	if (mosquitto_publish(f->net.mosq, NULL, f->topic_events, (int)len, buf, 1, false) ==
	    MOSQ_ERR_SUCCESS)
		STAT_ADD(f, events_published, 1);
	rec_encoder_free(enc);
}

int upl_fwd_slot_publish(upl_forwarder_t *f, struct slot *s)
{
	int rc, mid;

	rc = mosquitto_publish(f->net.mosq, &mid, f->topic_data, (int)s->len, s->buf, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	if (f->cfg.publish_events && !s->ever_sent)
		slot_publish_events(f, s);
	pthread_mutex_lock(&f->lock);
	f->st.published++;
	if (s->ever_sent)
		f->st.resent++;
	pthread_mutex_unlock(&f->lock);
	s->mid = mid;
	s->state = SLOT_SENT;
	s->sent_ns = basic_mono_ns();
	s->ever_sent = true;
	return 0;
}
