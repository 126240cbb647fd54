/* SPDX-License-Identifier: MIT */
/*
 * fwd-resend.c - gap repair: the ground's resend requests (queued by
 * forward.c's message callback) answered from the log, one stored Batch
 * (flagged historical) or one "gone" range at a time, at most
 * cfg.resend_per_s a second, off the window and the cursor.
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

/* A full-rate request served, in the file (if that cannot be written it
   stays pending and is served again after a restart: whole Batches twice,
   duplicates to the ground's ledger). */
static void request_served(upl_forwarder_t *f)
{
	f->resend.request_wait = false;
	if (upl_requests_done(f->resend.requests) == 0)
		STAT_ADD(f, requests_served, 1);
}

/* The oldest range off the queue; a request's: served once its last
   message is acknowledged (at once if it sent none). */
static void resend_drop(upl_forwarder_t *f)
{
	memmove(f->resend.req, f->resend.req + 1, (f->resend.n - 1) * sizeof(f->resend.req[0]));
	f->resend.n--;
	if (f->resend.request_active) {
		f->resend.request_active = false;
		f->resend.channels = upl_reducer_free(f->resend.channels);
	}
}

static void resend_pop(upl_forwarder_t *f)
{
	bool request = f->resend.request_active;

	resend_drop(f);
	if (!request)
		return;
	if (f->resend.request_sent && !f->resend.last_acked) {
		f->resend.ack_mid = f->resend.last_mid;
		f->resend.request_wait = true;
	} else {
		request_served(f);
	}
}

bool upl_fwd_resend_acked(upl_forwarder_t *f, int mid)
{
	/* the broker acknowledges a connection's QoS 1 messages in order: the
	   request's earlier ones are with its last one */
	if (f->resend.request_active && f->resend.request_sent && mid == f->resend.last_mid) {
		f->resend.last_acked = true;
		return true;
	}
	if (!f->resend.request_wait || mid != f->resend.ack_mid)
		return false;
	request_served(f);
	return true;
}

void upl_fwd_resend_conn_down(upl_forwarder_t *f)
{
	/* what libmosquitto still held went with its client: the request stays
	   pending and starts again from its first Batch after the reconnect
	   (the ground keeps each record once) */
	if (f->resend.request_active) {
		resend_drop(f);
		STAT_ADD(f, requests_restarted, 1);
	} else if (f->resend.request_wait) {
		f->resend.request_wait = false;
		STAT_ADD(f, requests_restarted, 1);
	}
}

/* "gone": [first, last] of the log is no longer stored. */
static int resend_gone(upl_forwarder_t *f, const struct upl_range *req, uint64_t first, uint64_t last)
{
	struct upl_range gone = *req;
	char msg[UPL_RANGE_LINE_MAX];
	int n, rc;

	gone.first = first;
	gone.last = last;
	if ((n = upl_range_format(&gone, msg, sizeof(msg))) < 0)
		return n;
	rc = mosquitto_publish(f->net.mosq, &f->resend.last_mid, f->topic_gone, n, msg, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	f->resend.request_sent = f->resend.request_sent || f->resend.request_active;
	f->resend.last_acked = false;
	STAT_ADD(f, resend_gone, 1);
	return 0;
}

/* The stored Batch again, flagged historical (as a backlog re-send); for
   a request naming channels, reduced to them (a Seal Batch goes whole). */
static int resend_batch(upl_forwarder_t *f, const struct upl_rec *rec)
{
	const uint8_t *payload = rec->payload;
	size_t len = rec->len, need;
	int rc;

	if (f->resend.channels && upl_reducer_batch(f->resend.channels, rec->payload, rec->len, &payload, &len) <= 0) {
		payload = rec->payload;
		len = rec->len;
	}
	need = len + sizeof(historical_true);
	if (need > f->resend.cap) {
		void *b = realloc(f->resend.buf, need);
		if (!b)
			return -ENOMEM;
		f->resend.buf = b;
		f->resend.cap = need;
	}
	memcpy(f->resend.buf, payload, len);
	memcpy((uint8_t *)f->resend.buf + len, historical_true, sizeof(historical_true));
	rc = mosquitto_publish(f->net.mosq, &f->resend.last_mid, f->topic_data, (int)need, f->resend.buf, 1, false);
	if (rc != MOSQ_ERR_SUCCESS)
		return upl_mqtt_errno(rc);
	f->resend.request_sent = f->resend.request_sent || f->resend.request_active;
	f->resend.last_acked = false;
	STAT_ADD(f, resend_batches, 1);
	return 0;
}

/* Whether the stored Batch belongs to the requested log. */
static bool same_log(const struct upl_rec *rec, const struct upl_range *req)
{
	struct rec_batch_info info;
	rec_batch_t *b;
	bool same;

	if (rec_batch_decode(rec->payload, rec->len, &b) < 0)
		return false;
	same = rec_batch_info(b, &info) == 0 && info.log_id_len == REC_LOG_ID_LEN &&
	       !memcmp(info.log_id, req->log_id, REC_LOG_ID_LEN);
	rec_batch_free(b);
	return same;
}

/* Whether the dictionary's name is the request's: the whole name, or the
   part after its last '.' (a DBC signal without its message, as [signal
   NAME] takes it). */
static bool name_is(const char *name, const char *want)
{
	const char *dot = strrchr(name, '.');

	return !strcmp(name, want) || (dot && !strcmp(dot + 1, want));
}

/*
 * A request naming channels: a reducer that passes all of their samples
 * and texts and nothing else but what always goes (events, Health, TRDP
 * telegrams), no raw frame.  The names are looked up in the channel
 * dictionary the forwarder publishes (cfg.channels_msg); a name it does
 * not hold matches nothing.  0, or -errno (the request is then served
 * whole: more than asked, never less).
 */
static int request_channels(upl_forwarder_t *f, const struct upl_request *q)
{
	struct upl_reduce_chan *chans = NULL;
	struct upl_reduce_cfg cfg = { 0 };
	rec_batch_t *b = NULL;
	struct rec_batch_info info;
	size_t n = 0;
	int r;

	if (!f->cfg.channels_msg || rec_batch_decode(f->cfg.channels_msg, f->cfg.channels_len, &b) < 0)
		r = -ENOENT;
	else if ((r = rec_batch_info(b, &info)) == 0 && info.nchannels &&
	         !(chans = calloc(info.nchannels, sizeof(*chans))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < info.nchannels; i++) {
		struct rec_channel ch;

		if (rec_batch_channel(b, i, &ch) < 0 || !ch.name)
			continue;
		for (unsigned k = 0; k < q->nchannels; k++)
			if (name_is(ch.name, q->channels[k])) {
				chans[n++] = (struct upl_reduce_chan){ .id = ch.id, .pol = { .flags = UPL_POL_ALL } };
				break;
			}
	}
	rec_batch_free(b);
	for (size_t i = 0; i < UPL_REDUCE_BUSES; i++) {
		cfg.bus_default[i].flags = UPL_POL_NONE;
		cfg.frames[i] = UPL_FRAMES_NONE;
	}
	cfg.chans = chans;
	cfg.nchans = n;
	if (r == 0)
		r = upl_reducer_new(&cfg, &f->resend.channels);
	free(chans);
	return r;
}

/*
 * The oldest full-rate request (request.h) as a seq range for gap
 * repair's path: from the first stored Batch reaching from_ns (its
 * t_last >= from_ns) to the last one starting before to_ns.  When from_ns
 * is before the oldest Batch still stored and seqs before that Batch are
 * gone (retention), the range starts at seq 1, so the step below answers
 * "gone" for them as it does for the ground's resend lines.  A request
 * with nothing stored in its range is served at once (nothing to send).
 */
static int request_start(upl_forwarder_t *f)
{
	struct upl_source *src = &f->cfg.resend_source;
	struct upl_request q;
	struct upl_range range;
	struct upl_rec rec = { 0 };
	struct rec_batch_info info;
	rec_batch_t *b;
	int64_t t_first;
	uint64_t last_first = 0;
	uint32_t last_count = 0;
	int r;

	if (upl_requests_oldest(f->resend.requests, &q) < 0)
		return 0;
	r = src->seek_time(src->ctx, q.from_ns);
	if (r == 0)
		r = src->next(src->ctx, &rec);
	if (r > 0 && rec.payload && rec_batch_decode(rec.payload, rec.len, &b) == 0) {
		r = rec_batch_info(b, &info) == 0 && info.log_id_len == REC_LOG_ID_LEN ? 1 : -EBADMSG;
		if (r > 0)
			memcpy(range.log_id, info.log_id, REC_LOG_ID_LEN);
		rec_batch_free(b);
	} else if (r > 0) {
		r = -EBADMSG;
	}
	if (r <= 0) {
		/* nothing stored at or after from_ns, or it cannot be read */
		if (r < 0 && r != -EBADMSG)
			stats_error(f, r);
		f->resend.request_active = true;
		f->resend.request_sent = false;
		f->resend.n++;          /* resend_pop() takes it as served */
		resend_pop(f);
		return 0;
	}
	range.first = rec.first_seq;
	t_first = rec.t_first_ns ? rec.t_first_ns : rec.t_last_ns;
	if (t_first > q.from_ns && rec.first_seq > 1 && src->seek(src->ctx, 1) == 0 && src->next(src->ctx, &rec) > 0 &&
	    rec.first_seq == range.first)
		range.first = 1;
	/* the end: the last Batch starting before to_ns (times need not rise:
	   a Batch after the first one reaching to_ns can still hold records of
	   the window, after a clock step back); a source that cannot tell:
	   the first Batch reaching to_ns, if it starts before it */
	if (src->last_before && (r = src->last_before(src->ctx, q.to_ns, &last_first, &last_count)) >= 0) {
		range.last = r ? last_first + (last_count ? last_count - 1 : 0) : 0;
	} else {
		r = src->seek_time(src->ctx, q.to_ns);
		if (r == 0)
			r = src->next(src->ctx, &rec);
		if (r <= 0 || !rec.payload)
			range.last = UINT64_MAX;     /* the log's end: the step stops there */
		else if ((rec.t_first_ns ? rec.t_first_ns : rec.t_last_ns) >= q.to_ns)
			range.last = rec.first_seq - 1;
		else
			range.last = rec.first_seq + (rec.count ? rec.count - 1 : 0);
	}
	memmove(f->resend.req + 1, f->resend.req, f->resend.n * sizeof(f->resend.req[0]));
	f->resend.n++;
	f->resend.request_active = true;
	f->resend.request_sent = false;
	if (range.last < range.first) {
		resend_pop(f);
		return 0;
	}
	f->resend.req[0] = range;
	if (q.nchannels && (r = request_channels(f, &q)) < 0)
		stats_error(f, r);
	return 0;
}

/*
 * One step of the oldest request, at most cfg.resend_per_s a second: the
 * stored Batch holding its first seq, or "gone" up to the first one still
 * stored.  A range past the log's end is not written yet: dropped (the
 * ground asks again if it is still missing later).  Off the window and the
 * cursor: a re-send is fire-and-forget, the ground's ledger tells.
 */
int upl_fwd_resend_step(upl_forwarder_t *f)
{
	struct upl_range *req = &f->resend.req[0];
	struct upl_source *src = &f->cfg.resend_source;
	struct upl_rec rec = { 0 };
	int64_t now = basic_mono_ns();
	int r;

	/* a full-rate request when gap repair has nothing queued: the ledger's
	   holes first, they are data the ground has no trace of */
	if (!f->resend.n && !f->resend.request_wait && f->resend.requests && upl_requests_pending(f->resend.requests))
		request_start(f);
	if (!f->resend.n || now < f->resend.next_ns)
		return 0;
	f->resend.next_ns = now + 1000000000 / f->cfg.resend_per_s;
	r = src->seek(src->ctx, req->first);
	if (r == 0)
		r = src->next(src->ctx, &rec);
	if (r <= 0 || !rec.payload) {
		/* Past the end (not written yet), or the log cannot be read: the
		   ground asks again if it is still missing. */
		if (r < 0 && r != -EBADMSG)
			stats_error(f, r);
		resend_pop(f);
		return 0;
	}
	if (!same_log(&rec, req)) {
		/* Another log of this vehicle (an old card): none of it is here. */
		r = resend_gone(f, req, req->first, req->last);
		resend_pop(f);
		return r;
	}
	if (rec.first_seq > req->first) {
		uint64_t last = rec.first_seq - 1 < req->last ? rec.first_seq - 1 : req->last;
		r = resend_gone(f, req, req->first, last);
		req->first = last + 1;
	} else {
		r = resend_batch(f, &rec);
		/* out of memory: the same Batch at the next step (skipped, a
		   request's would be lost: the ground does not ask again) */
		if (r != -ENOMEM)
			req->first = rec.first_seq + rec.count;
	}
	if (r == 0 && req->first > req->last)
		resend_pop(f);
	return r == -ENOMEM ? 0 : r;
}
