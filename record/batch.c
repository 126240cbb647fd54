/* SPDX-License-Identifier: MIT */
/*
 * batch.c - railmon.v1.Batch -> acq_item: the decoder.  A Batch is
 * unpacked, checked whole (column lengths, times, CAN payloads, texts)
 * before anything is read from it, and then read record by record, with
 * its channel dictionary and health entries.  The encoder is
 * batch-encode.c (and batch-dict.c); a Batch's Seal is read in seal.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "batch-private.h"

rec_batch_t *rec_batch_free(rec_batch_t *b)
{
	if (!b)
		return NULL;
	if (b->msg)
		railmon__v1__batch__free_unpacked(b->msg, NULL);
	free(b->t);
	free(b->can_off);
	free(b->tr_off);
	free(b->tr_sess);
	free(b->seq);
	free(b);
	return NULL;
}

/* Absolute times of one delta-coded column; false on overflow. */
static bool batch_times(int64_t t0, const int64_t *dt, size_t n, int64_t *out)
{
	int64_t t = t0;

	for (size_t i = 0; i < n; i++) {
		if (__builtin_add_overflow(t, dt[i], &t))
			return false;
		out[i] = t;
	}
	return true;
}

static int batch_check_can(rec_batch_t *b)
{
	const Railmon__V1__CanFrames *c = b->msg->can;
	size_t n, off = 0;

	if (!c)
		return 0;
	n = c->n_t_delta_ns;
	if (c->n_bus != n || c->n_id != n || c->n_flags != n || c->n_len != n)
		return -EBADMSG;
	b->can_off = calloc(n ? n : 1, sizeof(uint32_t));
	if (!b->can_off)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (c->len[i] > ACQ_CAN_DATA_MAX || c->bus[i] > 0xffff || c->flags[i] > 0xff)
			return -EBADMSG;
		b->can_off[i] = (uint32_t)off;
		off += c->len[i];
	}
	if (off != c->data.len)
		return -EBADMSG;
	b->ncan = n;
	return 0;
}

static int batch_check_texts(rec_batch_t *b)
{
	const Railmon__V1__Texts *x = b->msg->texts;

	if (!x)
		return 0;
	b->ntx = x->n_t_delta_ns;
	if (x->n_channel != b->ntx || x->n_text != b->ntx || (x->n_quality != 0 && x->n_quality != b->ntx))
		return -EBADMSG;
	for (size_t i = 0; i < b->ntx; i++)
		if (strlen(x->text[i]) > ACQ_TEXT_MAX)
			return -EBADMSG;
	return 0;
}

static int batch_check_columns(rec_batch_t *b)
{
	const Railmon__V1__Samples *s = b->msg->samples;
	const Railmon__V1__Events *e = b->msg->events;
	int r;

	r = batch_check_can(b);
	if (r < 0)
		return r;
	if (s) {
		b->nsmp = s->n_t_delta_ns;
		if (s->n_channel != b->nsmp || s->n_value != b->nsmp ||
		    (s->n_quality != 0 && s->n_quality != b->nsmp))
			return -EBADMSG;
	}
	if (e) {
		b->nev = e->n_t_delta_ns;
		if (e->n_source != b->nev || e->n_code != b->nev || e->n_arg != b->nev ||
		    (e->n_detail != 0 && e->n_detail != b->nev))
			return -EBADMSG;
		for (size_t i = 0; i < b->nev; i++)
			if (e->source[i] > 0xffff)
				return -EBADMSG;
	}
	r = batch_check_texts(b);
	if (r < 0)
		return r;
	return rec_trdp_batch_check(b);
}

/*
 * A reduced Batch (railmon.proto: reduced, source_end_seq, seq_delta): one
 * delta per record, seqs strictly increasing inside [first_seq,
 * source_end_seq), a range no longer than 2^32 (what a Batch's count can
 * say).  Any of the fields without reduced is malformed: a consumer would
 * number the records contiguously.
 */
static int batch_check_reduced(rec_batch_t *b, uint64_t count)
{
	const Railmon__V1__Batch *m = b->msg;
	uint64_t seq = m->first_seq;

	if (!m->reduced) {
		b->end_seq = m->first_seq + count;
		return m->n_seq_delta || m->source_end_seq ? -EBADMSG : 0;
	}
	if (m->n_seq_delta != count || m->source_end_seq <= m->first_seq ||
	    m->source_end_seq - m->first_seq > UINT32_MAX)
		return -EBADMSG;
	b->seq = calloc(count ? count : 1, sizeof(*b->seq));
	if (!b->seq)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		if ((i && !m->seq_delta[i]) || m->seq_delta[i] >= m->source_end_seq - seq)
			return -EBADMSG;
		seq += m->seq_delta[i];
		b->seq[i] = seq;
	}
	b->end_seq = m->source_end_seq;
	return 0;
}

static int batch_validate(rec_batch_t *b)
{
	const Railmon__V1__Batch *m = b->msg;
	uint64_t count, end;
	int r;

	r = batch_check_columns(b);
	if (r < 0)
		return r;
	/* The ground keys duplicates on the log id: a short one would merge
	   logs that are not the same. */
	if (m->log_id.len != 0 && m->log_id.len != REC_LOG_ID_LEN)
		return -EBADMSG;
	count = (uint64_t)b->ncan + b->nsmp + b->nev + b->ntx + b->ntr;
	if (count > UINT32_MAX || __builtin_add_overflow(m->first_seq, count, &end))
		return -EBADMSG;
	r = batch_check_reduced(b, count);
	if (r < 0)
		return r;
	b->t = calloc(count ? count : 1, sizeof(int64_t));
	if (!b->t)
		return -ENOMEM;
	if ((m->can && !batch_times(m->t0_ns, m->can->t_delta_ns, b->ncan, b->t)) ||
	    (m->samples && !batch_times(m->t0_ns, m->samples->t_delta_ns, b->nsmp, b->t + b->ncan)) ||
	    (m->events && !batch_times(m->t0_ns, m->events->t_delta_ns, b->nev, b->t + b->ncan + b->nsmp)) ||
	    (m->texts && !batch_times(m->t0_ns, m->texts->t_delta_ns, b->ntx, b->t + b->ncan + b->nsmp + b->nev)) ||
	    (m->trdp && !batch_times(m->t0_ns, m->trdp->t_delta_ns, b->ntr, b->t + b->ncan + b->nsmp + b->nev + b->ntx)))
		return -EBADMSG;
	return 0;
}

int rec_batch_decode(const void *buf, size_t len, rec_batch_t **ret_batch)
{
	rec_batch_t *b;
	int r;

	if ((!buf && len) || !ret_batch)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->msg = railmon__v1__batch__unpack(NULL, len, buf);
	if (!b->msg) {
		rec_batch_free(b);
		return -EBADMSG;
	}
	r = batch_validate(b);
	if (r < 0) {
		rec_batch_free(b);
		return r;
	}
	*ret_batch = b;
	return 0;
}

int rec_batch_info(const rec_batch_t *b, struct rec_batch_info *ret)
{
	if (!b || !ret)
		return -EINVAL;
	ret->schema_version = b->msg->schema_version;
	ret->first_seq = b->msg->first_seq;
	ret->count = (uint32_t)(b->ncan + b->nsmp + b->nev + b->ntx + b->ntr);
	ret->vehicle = b->msg->vehicle;
	ret->config_hash = b->msg->config_hash;
	ret->boot_id = b->msg->boot_id.data;
	ret->boot_id_len = b->msg->boot_id.len;
	ret->log_id = b->msg->log_id.data;
	ret->log_id_len = b->msg->log_id.len;
	ret->t0_ns = b->msg->t0_ns;
	ret->mono_t0_ns = b->msg->mono_t0_ns;
	ret->historical = b->msg->historical;
	ret->reduced = b->msg->reduced;
	ret->end_seq = b->end_seq;
	ret->nchannels = b->msg->n_channels;
	ret->nhealth = b->msg->n_health;
	return 0;
}

int rec_batch_item(const rec_batch_t *b, size_t i, struct acq_item *ret)
{
	const Railmon__V1__Batch *m;
	struct acq_item it = { 0 };

	if (!b || !ret || i >= b->ncan + b->nsmp + b->nev + b->ntx + b->ntr)
		return -EINVAL;
	m = b->msg;
	it.t_ns = b->t[i];
	it.seq = b->seq ? b->seq[i] : m->first_seq + i;
	if (i < b->ncan) {
		it.kind = ACQ_ITEM_CAN;
		it.bus = (uint16_t)m->can->bus[i];
		it.can.id = m->can->id[i];
		it.can.flags = (uint8_t)m->can->flags[i];
		it.can.len = (uint8_t)m->can->len[i];
		/* data is NULL when every frame of the Batch is empty */
		if (it.can.len)
			memcpy(it.can.data, m->can->data.data + b->can_off[i], it.can.len);
	} else if ((i -= b->ncan) < b->nsmp) {
		it.kind = ACQ_ITEM_SAMPLE;
		it.bus = (uint16_t)(m->samples->channel[i] >> 16);
		it.sample.channel = m->samples->channel[i];
		it.sample.value = m->samples->value[i];
		it.sample.quality = m->samples->n_quality ? m->samples->quality[i] : ACQ_Q_GOOD;
	} else if ((i -= b->nsmp) >= b->nev + b->ntx) {
		rec_trdp_batch_item(b, i - b->nev - b->ntx, &it);
	} else if (i >= b->nev) {
		i -= b->nev;
		it.kind = ACQ_ITEM_TEXT;
		it.bus = (uint16_t)(m->texts->channel[i] >> 16);
		it.text.channel = m->texts->channel[i];
		it.text.quality = (uint8_t)(m->texts->n_quality ? m->texts->quality[i] : ACQ_Q_GOOD);
		it.text.len = (uint8_t)strlen(m->texts->text[i]);
		memcpy(it.text.text, m->texts->text[i], it.text.len);
	} else {
		it.kind = ACQ_ITEM_EVENT;
		it.bus = (uint16_t)m->events->source[i];
		it.event.code = m->events->code[i];
		it.event.arg = m->events->arg[i];
		it.event.detail = m->events->n_detail ? m->events->detail[i] : 0;
	}
	*ret = it;
	return 0;
}

uint64_t rec_batch_seq(const rec_batch_t *b, size_t i)
{
	if (!b || i >= b->ncan + b->nsmp + b->nev + b->ntx + b->ntr)
		return 0;
	return b->seq ? b->seq[i] : b->msg->first_seq + i;
}

int rec_batch_channel(const rec_batch_t *b, size_t i, struct rec_channel *ret)
{
	const Railmon__V1__Channel *c;

	if (!b || !ret || i >= b->msg->n_channels)
		return -EINVAL;
	c = b->msg->channels[i];
	ret->id = c->id;
	ret->name = c->name;
	ret->unit = c->unit;
	ret->bus = c->bus;
	ret->source = c->source;
	ret->has_range = c->n_range == 2;
	ret->min = ret->has_range ? c->range[0] : 0;
	ret->max = ret->has_range ? c->range[1] : 0;
	ret->value_table = (const char *const *)c->value_table;
	ret->nvalue_table = c->n_value_table;
	ret->bus_name = c->bus_name;
	/* more than 15 is no decimal resolution (a damaged or future log) */
	ret->has_decimals = c->n_decimals >= 1 && c->decimals[0] <= 15;
	ret->decimals = ret->has_decimals ? c->decimals[0] : 0;
	return 0;
}

int rec_batch_health(const rec_batch_t *b, size_t i, struct rec_health *ret)
{
	const Railmon__V1__Health *m;
	struct rec_health h = { 0 };

	if (!b || !ret || i >= b->msg->n_health)
		return -EINVAL;
	m = b->msg->health[i];
	snprintf(h.name, sizeof(h.name), "%s", m->name);
	snprintf(h.kind, sizeof(h.kind), "%s", m->kind);
	h.bus = m->bus;
	h.items = m->items;
	h.drops = m->drops;
	h.errors = m->errors;
	h.overruns = m->overruns;
	h.rx_dropped = m->rx_dropped;
	h.bad_input = m->bad_input;
	h.backlog = m->backlog;
	h.latency_count = m->latency_count;
	h.latency_max_ns = m->latency_max_ns;
	h.latency_p50_us = m->latency_p50_us;
	h.latency_p99_us = m->latency_p99_us;
	h.latency_p999_us = m->latency_p999_us;
	/* extra buckets from a newer writer are ignored, not overflowed */
	for (size_t k = 0; k < m->n_latency_us_buckets && k < REC_HEALTH_BUCKETS; k++)
		h.latency_us_buckets[k] = m->latency_us_buckets[k];
	h.ring_fill_pct = m->ring_fill_pct;
	h.rate_hz = m->rate_hz;
	snprintf(h.state, sizeof(h.state), "%s", m->state);
	h.reopens = m->reopens;
	h.blind_ms = m->blind_ms_plus1 ? m->blind_ms_plus1 - 1 : UINT32_MAX;
	h.window_alarm = m->window_alarm;
	h.window_s = m->window_s;
	h.trdp_seq_gaps = m->trdp_seq_gaps;
	h.trdp_seq_repeats = m->trdp_seq_repeats;
	h.trdp_seq_back = m->trdp_seq_back;
	h.trdp_topology_changes = m->trdp_topology_changes;
	h.trdp_telegrams = m->trdp_telegrams;
	h.trdp_bytes = m->trdp_bytes;
	h.trdp_bad_short = m->trdp_bad_short;
	h.trdp_bad_fcs = m->trdp_bad_fcs;
	h.trdp_bad_version = m->trdp_bad_version;
	h.trdp_bad_type = m->trdp_bad_type;
	h.trdp_bad_too_long = m->trdp_bad_too_long;
	h.trdp_bad_truncated = m->trdp_bad_truncated;
	h.trdp_byte_ring_drops = m->trdp_byte_ring_drops;
	h.trdp_untracked = m->trdp_untracked;
	h.trdp_timeouts = m->trdp_timeouts;
	h.trdp_backs = m->trdp_backs;
	h.trdp_tcp_accepted = m->trdp_tcp_accepted;
	h.trdp_tcp_refused = m->trdp_tcp_refused;
	h.trdp_tcp_closed = m->trdp_tcp_closed;
	h.trdp_tcp_bad_header = m->trdp_tcp_bad_header;
	h.trdp_tcp_cut = m->trdp_tcp_cut;
	h.trdp_tcp_messages = m->trdp_tcp_messages;
	h.trdp_decoded = m->trdp_decoded;
	h.trdp_unknown_comid = m->trdp_unknown_comid;
	h.trdp_short_payload = m->trdp_short_payload;
	h.trdp_past_channels = m->trdp_past_channels;
	h.trdp_capture_unmatched = m->trdp_capture_unmatched;
	h.trdp_telegrams_hz = m->trdp_telegrams_hz;
	h.trdp_tcp_listen_errno = m->trdp_tcp_listen_errno;
	h.trdp_opts_refused = m->trdp_opts_refused;
	h.trdp_receive = m->trdp_receive;
	h.clock_unsynced = m->clock_unsynced;
	h.clock_max_error_us = m->clock_max_error_us;
	h.clock_est_error_us = m->clock_est_error_us;
	h.clock_status = m->clock_status;
	for (size_t k = 0; k < m->n_transaction_us_buckets && k < REC_HEALTH_BUCKETS; k++)
		h.transaction_us_buckets[k] = m->transaction_us_buckets[k];
	h.transaction_p99_us = m->transaction_p99_us;
	h.transaction_max_ns = m->transaction_max_ns;
	*ret = h;
	return 0;
}

/* A protobuf varint at *p (below end): 0, or -1 when cut or over 10 bytes. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *p < end && shift < 70; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -1;
}

int rec_batch_field(const void *payload, size_t len, unsigned field, uint64_t *value)
{
	const uint8_t *p = payload, *end = p + len;
	uint64_t key, n;

	while (p < end) {
		if (varint(&p, end, &key) < 0)
			return -1;
		if (key >> 3 == field) {
			if ((key & 7) == 0 && varint(&p, end, value) < 0)
				return -1;
			return 1;
		}
		switch (key & 7) {
		case 0:
			if (varint(&p, end, &n) < 0)
				return -1;
			break;
		case 1:
		case 5:
			n = (key & 7) == 1 ? 8 : 4;
			if ((uint64_t)(end - p) < n)
				return -1;
			p += n;
			break;
		case 2:
			if (varint(&p, end, &n) < 0 || (uint64_t)(end - p) < n)
				return -1;
			p += n;
			break;
		default:
			return -1;
		}
	}
	return 0;
}
