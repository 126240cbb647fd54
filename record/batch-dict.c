/* SPDX-License-Identifier: MIT */
/*
 * batch-dict.c - the encoder's channel dictionary and health entries.
 * Their messages and the room they need in the encoder's buffer are
 * allocated when they are set (rec_encoder_set_channels), never on the
 * caller's stack: a board may have tens of thousands of channels.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "batch-encode-private.h"

/* Bytes of a length-delimited field of len bytes with a 1-byte tag. */
static size_t wire_field(size_t len)
{
	size_t n = 1 + 1;

	for (size_t v = len; v >= 0x80; v >>= 7)
		n++;
	return n + len;
}

/* Room for n dictionary entries: arrays and output buffer grow here, at
   set time, so finish needs neither the stack nor the allocator for them. */
static int encoder_reserve_channels(rec_encoder_t *e, size_t n)
{
	Railmon__V1__Channel *msg;
	Railmon__V1__Channel **ptr;
	double (*range)[2];

	if (n <= e->ch_cap)
		return 0;
	range = realloc(e->ch_range, n * sizeof(*range));
	if (!range)
		return -ENOMEM;
	e->ch_range = range;
	msg = realloc(e->ch_msg, n * sizeof(*msg));
	if (!msg)
		return -ENOMEM;
	e->ch_msg = msg;
	ptr = realloc(e->ch_ptr, n * sizeof(*ptr));
	if (!ptr)
		return -ENOMEM;
	e->ch_ptr = ptr;
	e->ch_cap = n;
	return 0;
}

static void health_to_msg(struct rec_health *h, Railmon__V1__Health *m)
{
	railmon__v1__health__init(m);
	m->name = h->name;
	m->kind = h->kind;
	m->bus = h->bus;
	m->items = h->items;
	m->drops = h->drops;
	m->errors = h->errors;
	m->overruns = h->overruns;
	m->rx_dropped = h->rx_dropped;
	m->bad_input = h->bad_input;
	m->backlog = h->backlog;
	m->latency_count = h->latency_count;
	m->latency_max_ns = h->latency_max_ns;
	m->latency_p50_us = h->latency_p50_us;
	m->latency_p99_us = h->latency_p99_us;
	m->latency_p999_us = h->latency_p999_us;
	/* trailing empty buckets are left off the wire */
	m->n_latency_us_buckets = REC_HEALTH_BUCKETS;
	while (m->n_latency_us_buckets && !h->latency_us_buckets[m->n_latency_us_buckets - 1])
		m->n_latency_us_buckets--;
	m->latency_us_buckets = h->latency_us_buckets;
	m->ring_fill_pct = h->ring_fill_pct;
	m->rate_hz = h->rate_hz;
	m->state = h->state;
	m->reopens = h->reopens;
	/* 0 on the wire (left off) is "not known": an older log reads so */
	m->blind_ms_plus1 = h->reopens && h->blind_ms < UINT32_MAX ? h->blind_ms + 1 : 0;
	m->window_alarm = h->window_alarm;
	m->window_s = h->window_s;
	m->trdp_seq_gaps = h->trdp_seq_gaps;
	m->trdp_seq_repeats = h->trdp_seq_repeats;
	m->trdp_seq_back = h->trdp_seq_back;
	m->trdp_topology_changes = h->trdp_topology_changes;
	m->trdp_telegrams = h->trdp_telegrams;
	m->trdp_bytes = h->trdp_bytes;
	m->trdp_bad_short = h->trdp_bad_short;
	m->trdp_bad_fcs = h->trdp_bad_fcs;
	m->trdp_bad_version = h->trdp_bad_version;
	m->trdp_bad_type = h->trdp_bad_type;
	m->trdp_bad_too_long = h->trdp_bad_too_long;
	m->trdp_bad_truncated = h->trdp_bad_truncated;
	m->trdp_byte_ring_drops = h->trdp_byte_ring_drops;
	m->trdp_untracked = h->trdp_untracked;
	m->trdp_timeouts = h->trdp_timeouts;
	m->trdp_backs = h->trdp_backs;
	m->trdp_tcp_accepted = h->trdp_tcp_accepted;
	m->trdp_tcp_refused = h->trdp_tcp_refused;
	m->trdp_tcp_closed = h->trdp_tcp_closed;
	m->trdp_tcp_bad_header = h->trdp_tcp_bad_header;
	m->trdp_tcp_cut = h->trdp_tcp_cut;
	m->trdp_tcp_messages = h->trdp_tcp_messages;
	m->trdp_decoded = h->trdp_decoded;
	m->trdp_unknown_comid = h->trdp_unknown_comid;
	m->trdp_short_payload = h->trdp_short_payload;
	m->trdp_past_channels = h->trdp_past_channels;
	m->trdp_capture_unmatched = h->trdp_capture_unmatched;
	m->trdp_telegrams_hz = h->trdp_telegrams_hz;
	m->trdp_tcp_listen_errno = h->trdp_tcp_listen_errno;
	m->trdp_opts_refused = h->trdp_opts_refused;
	m->trdp_receive = h->trdp_receive;
	m->clock_unsynced = h->clock_unsynced;
	m->clock_max_error_us = h->clock_max_error_us;
	m->clock_est_error_us = h->clock_est_error_us;
	m->clock_status = h->clock_status;
	m->n_transaction_us_buckets = REC_HEALTH_BUCKETS;
	while (m->n_transaction_us_buckets && !h->transaction_us_buckets[m->n_transaction_us_buckets - 1])
		m->n_transaction_us_buckets--;
	m->transaction_us_buckets = h->transaction_us_buckets;
	m->transaction_p99_us = h->transaction_p99_us;
	m->transaction_max_ns = h->transaction_max_ns;
}

/* The output buffer holds the largest Batch the bounds allow: grown here,
   when the dictionary is set, not in finish. */
static int encoder_reserve_out(rec_encoder_t *e)
{
	size_t need = e->max * REC_ITEM_WIRE_MAX + WIRE_FIXED_MAX + e->wire_dict + e->wire_health;
	uint8_t *out;

	if (need > WIRE_OUT_MAX)
		need = WIRE_OUT_MAX;
	if (need <= e->out_size)
		return 0;
	out = realloc(e->out, need);
	if (!out)
		return -ENOMEM;
	e->out = out;
	e->out_size = need;
	return 0;
}

int rec_encoder_set_channels(rec_encoder_t *e, const struct rec_channel *channels, size_t n)
{
	size_t used, k;
	int r;

	if (!e || (n && !channels) || n > INT_MAX)
		return -EINVAL;
	/* a second call replaces the first */
	e->nchannels = 0;
	e->wire_dict = 0;
	r = encoder_reserve_channels(e, n);
	if (r < 0)
		return r;
	used = rec_encoder_wire(e);
	for (k = 0; k < n; k++) {
		Railmon__V1__Channel *m = &e->ch_msg[k];
		size_t len;

		railmon__v1__channel__init(m);
		m->id = channels[k].id;
		m->name = (char *)(channels[k].name ? channels[k].name : "");
		m->unit = (char *)(channels[k].unit ? channels[k].unit : "");
		m->bus = channels[k].bus;
		m->source = (char *)(channels[k].source ? channels[k].source : "");
		e->ch_range[k][0] = channels[k].min;
		e->ch_range[k][1] = channels[k].max;
		m->n_range = channels[k].has_range ? 2 : 0;
		m->range = channels[k].has_range ? e->ch_range[k] : NULL;
		m->n_value_table = channels[k].value_table ? channels[k].nvalue_table : 0;
		m->value_table = (char **)channels[k].value_table;
		m->bus_name = (char *)(channels[k].bus_name ? channels[k].bus_name : "");
		m->n_decimals = channels[k].has_decimals ? 1 : 0;
		m->decimals = channels[k].has_decimals ? (uint32_t *)&channels[k].decimals : NULL;
		e->ch_ptr[k] = m;
		len = wire_field(railmon__v1__channel__get_packed_size(m));
		if (used + len + WIRE_ITEM_LARGEST > REC_BATCH_MAX_BYTES)
			break; /* the rest goes in a later Batch */
		used += len;
	}
	/* Not even one entry fits in a Batch that holds nothing else: no later
	   Batch would take it either. */
	if (k == 0 && n && !rec_encoder_count(e) && !e->nhealth)
		return -EMSGSIZE;
	e->wire_dict = used - rec_encoder_wire(e);
	e->nchannels = k;
	r = encoder_reserve_out(e);
	if (r < 0) {
		rec_encoder_set_channels(e, NULL, 0);
		return r;
	}
	return (int)k;
}

int rec_encoder_add_health(rec_encoder_t *e, const struct rec_health *h)
{
	struct rec_health *mine;
	size_t len;

	if (!e || !h)
		return -EINVAL;
	if (e->nhealth >= REC_HEALTH_MAX)
		return -ENOBUFS;
	mine = &e->health[e->nhealth];
	*mine = *h;
	/* strings are ours now: make sure they end */
	mine->name[sizeof(h->name) - 1] = 0;
	mine->kind[sizeof(h->kind) - 1] = 0;
	mine->state[sizeof(h->state) - 1] = 0;
	health_to_msg(mine, &e->health_msg[e->nhealth]);
	len = wire_field(railmon__v1__health__get_packed_size(&e->health_msg[e->nhealth]));
	if (rec_encoder_wire(e) + len + WIRE_ITEM_LARGEST > REC_BATCH_MAX_BYTES)
		return -ENOBUFS;
	e->health_ptr[e->nhealth] = &e->health_msg[e->nhealth];
	e->wire_health += len;
	e->nhealth++;
	return 0;
}
