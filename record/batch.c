/* SPDX-License-Identifier: MIT */
/*
 * batch.c - acq_item <-> railmon.v1.Batch.
 *
 * Encoding fills column arrays that were sized at creation and points the
 * protobuf-c message at them, so a Batch costs one pack into a buffer the
 * encoder owns and no allocation.  The channel dictionary's messages and
 * the room it needs in that buffer are allocated when it is set
 * (rec_encoder_set_channels), never on the caller's stack: a board may
 * have tens of thousands of channels.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "seal.h"

/* Worst case for one record on the wire: 5 varint columns of <= 10 bytes
   plus 64 bytes of CAN FD payload.  Used to size the output buffer. */
#define REC_ITEM_WIRE_MAX (5 * 10 + ACQ_CAN_DATA_MAX)

/*
 * What one record can add to the packed columns, by kind (varints: sint64
 * time delta 10, a uint32 below 2^16 3, any uint32 5, sint64 10, a double
 * 8): CAN t/bus/id/flags(<256: 2)/len(<128: 1) + payload, sample
 * t/channel/value/quality, event t/source/code/arg/detail.
 */
#define WIRE_CAN_MAX (10 + 3 + 5 + 2 + 1)
#define WIRE_SAMPLE_MAX (10 + 5 + 8 + 5)
#define WIRE_EVENT_MAX (10 + 3 + 5 + 10 + 5)
/* a text: t/channel/quality and the string's tag, length and bytes */
#define WIRE_TEXT_MAX (10 + 5 + 5 + 2 + ACQ_TEXT_MAX)
/* Texts a Batch holds at most: they change seldom (stored on change and
   now and then), and their columns are allocated at creation. */
#define TEXTS_MAX 1024
/* The Batch's own fields (vehicle aside) and the headers of the three
   column messages and their 16 packed fields. */
#define WIRE_FIXED_MAX 512
/* Records may fill the Batch up to here; the rest is kept for the channel
   dictionary and health entries, so they always find room. */
#define WIRE_RECORDS_MAX (REC_BATCH_MAX_BYTES / 4 * 3)
/* The largest record: the dictionary and health leave room for it, so the
   first record of a Batch, which always goes in, never passes the cap. */
#define WIRE_ITEM_LARGEST (WIRE_CAN_MAX + ACQ_CAN_DATA_MAX)
/* The output buffer never needs more. */
#define WIRE_OUT_MAX (REC_BATCH_MAX_BYTES + 1024)

struct rec_encoder {
	size_t max;
	char *vehicle;
	uint64_t config_hash;
	uint8_t boot_id[REC_BOOT_ID_LEN];
	uint8_t log_id[REC_LOG_ID_LEN];
	bool has_log_id;
	bool historical;
	int64_t t0, t_first, t_last;
	bool has_clock_offset;        /* Batch.mono_t0_ns is written */
	int64_t clock_offset;         /* realtime - monotonic */

	/* CAN columns */
	size_t ncan;
	int64_t *can_dt;
	uint32_t *can_bus, *can_id, *can_flags, *can_len;
	uint8_t *can_data;
	size_t can_data_len;
	int64_t can_prev;
	/* sample columns */
	size_t nsmp;
	int64_t *smp_dt;
	uint32_t *smp_ch, *smp_q;
	double *smp_val;
	bool smp_any_bad;
	int64_t smp_prev;
	/* event columns */
	size_t nev;
	int64_t *ev_dt, *ev_arg;
	uint32_t *ev_src, *ev_code, *ev_detail;
	int64_t ev_prev;
	/* text columns: each text NUL-terminated in its slot of tx_buf */
	size_t ntx, tx_max;
	int64_t *tx_dt;
	uint32_t *tx_ch, *tx_q;
	char *tx_buf;
	char **tx_ptr;
	bool tx_any_bad;
	int64_t tx_prev;

	size_t nchannels;
	/* The dictionary's protobuf messages, sized by set_channels(): finish
	   runs on the collector thread, whose stack cannot hold one per
	   channel of a large board (a VLA here crashed at ~4000 channels). */
	Railmon__V1__Channel *ch_msg;
	Railmon__V1__Channel **ch_ptr;
	double (*ch_range)[2];    /* each entry's [min, max], copied at set time */
	size_t ch_cap;
	struct rec_health health[REC_HEALTH_MAX];
	Railmon__V1__Health health_msg[REC_HEALTH_MAX];
	Railmon__V1__Health *health_ptr[REC_HEALTH_MAX];
	size_t nhealth;
	struct rec_seal seal;      /* the next Batch's Seal, if has_seal */
	bool has_seal;

	/* Upper bounds of the packed Batch: fixed fields and records, and
	   what the dictionary and health entries add; kept under
	   REC_BATCH_MAX_BYTES (the log refuses anything larger). */
	size_t wire_records, wire_dict, wire_health;

	uint8_t *out;
	size_t out_size;
};

rec_encoder_t *rec_encoder_free(rec_encoder_t *e)
{
	if (!e)
		return NULL;
	free(e->vehicle);
	free(e->can_dt);
	free(e->can_bus);
	free(e->can_id);
	free(e->can_flags);
	free(e->can_len);
	free(e->can_data);
	free(e->smp_dt);
	free(e->smp_ch);
	free(e->smp_q);
	free(e->smp_val);
	free(e->ev_dt);
	free(e->ev_arg);
	free(e->ev_src);
	free(e->ev_code);
	free(e->ev_detail);
	free(e->tx_dt);
	free(e->tx_ch);
	free(e->tx_q);
	free(e->tx_buf);
	free(e->tx_ptr);
	free(e->ch_msg);
	free(e->ch_ptr);
	free(e->ch_range);
	free(e->out);
	free(e);
	return NULL;
}

int rec_encoder_new(const struct rec_batch_meta *meta, size_t max_items, rec_encoder_t **ret_enc)
{
	rec_encoder_t *e;
	size_t n = max_items;

	if (!meta || !ret_enc || !max_items || max_items > (1u << 24))
		return -EINVAL;
	/* No Batch holds more records than fit in REC_BATCH_MAX_BYTES: columns
	   for more would never be used. */
	if (n > WIRE_RECORDS_MAX / WIRE_CAN_MAX)
		n = WIRE_RECORDS_MAX / WIRE_CAN_MAX;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->max = n;
	e->vehicle = strdup(meta->vehicle ? meta->vehicle : "");
	e->wire_records = WIRE_FIXED_MAX + (e->vehicle ? strlen(e->vehicle) : 0);
	e->config_hash = meta->config_hash;
	memcpy(e->boot_id, meta->boot_id, REC_BOOT_ID_LEN);
	memcpy(e->log_id, meta->log_id, REC_LOG_ID_LEN);
	for (size_t i = 0; i < REC_LOG_ID_LEN; i++)
		e->has_log_id |= meta->log_id[i] != 0;
	e->historical = meta->historical;
	e->can_dt = calloc(n, sizeof(*e->can_dt));
	e->can_bus = calloc(n, sizeof(uint32_t));
	e->can_id = calloc(n, sizeof(uint32_t));
	e->can_flags = calloc(n, sizeof(uint32_t));
	e->can_len = calloc(n, sizeof(uint32_t));
	e->can_data = calloc(n, ACQ_CAN_DATA_MAX);
	e->smp_dt = calloc(n, sizeof(int64_t));
	e->smp_ch = calloc(n, sizeof(uint32_t));
	e->smp_q = calloc(n, sizeof(uint32_t));
	e->smp_val = calloc(n, sizeof(double));
	e->ev_dt = calloc(n, sizeof(int64_t));
	e->ev_arg = calloc(n, sizeof(int64_t));
	e->ev_src = calloc(n, sizeof(uint32_t));
	e->ev_code = calloc(n, sizeof(uint32_t));
	e->ev_detail = calloc(n, sizeof(uint32_t));
	e->tx_max = n < TEXTS_MAX ? n : TEXTS_MAX;
	e->tx_dt = calloc(e->tx_max, sizeof(int64_t));
	e->tx_ch = calloc(e->tx_max, sizeof(uint32_t));
	e->tx_q = calloc(e->tx_max, sizeof(uint32_t));
	e->tx_buf = calloc(e->tx_max, ACQ_TEXT_MAX + 1);
	e->tx_ptr = calloc(e->tx_max, sizeof(char *));
	e->out_size = n * REC_ITEM_WIRE_MAX + 1024 < WIRE_OUT_MAX ? n * REC_ITEM_WIRE_MAX + 1024 : WIRE_OUT_MAX;
	e->out = malloc(e->out_size);
	if (!e->vehicle || !e->can_dt || !e->can_bus || !e->can_id || !e->can_flags || !e->can_len ||
	    !e->can_data || !e->smp_dt || !e->smp_ch || !e->smp_q || !e->smp_val || !e->ev_dt ||
	    !e->ev_arg || !e->ev_src || !e->ev_code || !e->ev_detail || !e->out || !e->tx_dt || !e->tx_ch ||
	    !e->tx_q || !e->tx_buf || !e->tx_ptr) {
		rec_encoder_free(e);
		return -ENOMEM;
	}
	*ret_enc = e;
	return 0;
}

size_t rec_encoder_count(const rec_encoder_t *e)
{
	return e ? e->ncan + e->nsmp + e->nev + e->ntx : 0;
}

void rec_encoder_span(const rec_encoder_t *e, int64_t *ret_first_ns, int64_t *ret_last_ns)
{
	bool any = e && rec_encoder_count(e);

	if (ret_first_ns)
		*ret_first_ns = any ? e->t_first : 0;
	if (ret_last_ns)
		*ret_last_ns = any ? e->t_last : 0;
}

/* Time base and delta for a column whose previous timestamp is *prev. */
static int64_t encoder_delta(rec_encoder_t *e, int64_t *prev, size_t n_in_col, int64_t t)
{
	int64_t d;

	if (!rec_encoder_count(e)) {
		e->t0 = t;
		e->t_first = e->t_last = t;
	}
	if (t < e->t_first)
		e->t_first = t;
	if (t > e->t_last)
		e->t_last = t;
	/* Each column is delta-coded from t0 on its own, so its first entry
	   is relative to t0 and later ones to their predecessor. */
	d = t - (n_in_col ? *prev : e->t0);
	*prev = t;
	return d;
}

static int encoder_add_can(rec_encoder_t *e, const struct acq_item *it)
{
	size_t i = e->ncan;

	if (it->can.len > ACQ_CAN_DATA_MAX)
		return -EINVAL;
	e->can_dt[i] = encoder_delta(e, &e->can_prev, i, it->t_ns);
	e->can_bus[i] = it->bus;
	e->can_id[i] = it->can.id;
	e->can_flags[i] = it->can.flags;
	e->can_len[i] = it->can.len;
	memcpy(e->can_data + e->can_data_len, it->can.data, it->can.len);
	e->can_data_len += it->can.len;
	e->ncan++;
	return 0;
}

static int encoder_add_sample(rec_encoder_t *e, const struct acq_item *it)
{
	size_t i = e->nsmp;

	e->smp_dt[i] = encoder_delta(e, &e->smp_prev, i, it->t_ns);
	e->smp_ch[i] = it->sample.channel;
	e->smp_val[i] = it->sample.value;
	e->smp_q[i] = it->sample.quality;
	if (it->sample.quality)
		e->smp_any_bad = true;
	e->nsmp++;
	return 0;
}

static int encoder_add_event(rec_encoder_t *e, const struct acq_item *it)
{
	size_t i = e->nev;

	e->ev_dt[i] = encoder_delta(e, &e->ev_prev, i, it->t_ns);
	e->ev_src[i] = it->bus;
	e->ev_code[i] = it->event.code;
	e->ev_arg[i] = it->event.arg;
	e->ev_detail[i] = it->event.detail;
	e->nev++;
	return 0;
}

static int encoder_add_text(rec_encoder_t *e, const struct acq_item *it)
{
	size_t i = e->ntx;
	char *slot = e->tx_buf + i * (ACQ_TEXT_MAX + 1);

	if (it->text.len > ACQ_TEXT_MAX)
		return -EINVAL;
	if (i >= e->tx_max)
		return -ENOBUFS;
	/* protobuf strings are UTF-8: anything else is refused here rather
	   than written into a Batch no consumer could decode */
	for (size_t k = 0; k < it->text.len; k++)
		if ((unsigned char)it->text.text[k] < 0x20 || (unsigned char)it->text.text[k] > 0x7e)
			return -EINVAL;
	e->tx_dt[i] = encoder_delta(e, &e->tx_prev, i, it->t_ns);
	e->tx_ch[i] = it->text.channel;
	e->tx_q[i] = it->text.quality;
	memcpy(slot, it->text.text, it->text.len);
	slot[it->text.len] = 0;
	e->tx_ptr[i] = slot;
	if (it->text.quality)
		e->tx_any_bad = true;
	e->ntx++;
	return 0;
}

/* The most bytes the Batch so far can pack into. */
static size_t encoder_wire(const rec_encoder_t *e)
{
	return e->wire_records + e->wire_dict + e->wire_health;
}

size_t rec_encoder_wire_max(const rec_encoder_t *e)
{
	return e ? encoder_wire(e) : 0;
}

/* The most bytes item can add to the packed Batch. */
static size_t item_wire_max(const struct acq_item *it)
{
	switch (it->kind) {
	case ACQ_ITEM_CAN:
		return WIRE_CAN_MAX + (it->can.len <= ACQ_CAN_DATA_MAX ? it->can.len : 0);
	case ACQ_ITEM_SAMPLE:
		return WIRE_SAMPLE_MAX;
	case ACQ_ITEM_TEXT:
		return WIRE_TEXT_MAX;
	default:
		return WIRE_EVENT_MAX;
	}
}

int rec_encoder_add(rec_encoder_t *e, const struct acq_item *it)
{
	size_t w;
	int r;

	if (!e || !it)
		return -EINVAL;
	if (rec_encoder_count(e) >= e->max)
		return -ENOBUFS;
	/* Full by size too: a Batch over REC_BATCH_MAX_BYTES would be refused
	   by the log with every record in it (the first always goes in). */
	w = item_wire_max(it);
	if (rec_encoder_count(e) &&
	    (e->wire_records + w > WIRE_RECORDS_MAX || encoder_wire(e) + w > REC_BATCH_MAX_BYTES))
		return -ENOBUFS;
	switch (it->kind) {
	case ACQ_ITEM_CAN:
		r = encoder_add_can(e, it);
		break;
	case ACQ_ITEM_SAMPLE:
		r = encoder_add_sample(e, it);
		break;
	case ACQ_ITEM_EVENT:
		r = encoder_add_event(e, it);
		break;
	case ACQ_ITEM_TEXT:
		r = encoder_add_text(e, it);
		break;
	default:
		r = -EINVAL;
	}
	if (r == 0)
		e->wire_records += w;
	return r;
}

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
	m->window_alarm = h->window_alarm;
	m->window_s = h->window_s;
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
	used = encoder_wire(e);
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
	e->wire_dict = used - encoder_wire(e);
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
	if (encoder_wire(e) + len + WIRE_ITEM_LARGEST > REC_BATCH_MAX_BYTES)
		return -ENOBUFS;
	e->health_ptr[e->nhealth] = &e->health_msg[e->nhealth];
	e->wire_health += len;
	e->nhealth++;
	return 0;
}

static void encoder_reset(rec_encoder_t *e)
{
	e->ncan = e->nsmp = e->nev = e->ntx = 0;
	e->can_data_len = 0;
	e->smp_any_bad = e->tx_any_bad = false;
	e->nchannels = 0;
	e->nhealth = 0;
	e->has_seal = false;
	e->wire_records = WIRE_FIXED_MAX + strlen(e->vehicle);
	e->wire_dict = e->wire_health = 0;
}

void rec_encoder_set_clock_offset(rec_encoder_t *e, int64_t offset_ns)
{
	if (!e)
		return;
	e->has_clock_offset = true;
	e->clock_offset = offset_ns;
}

void rec_encoder_clear_clock_offset(rec_encoder_t *e)
{
	if (e)
		e->has_clock_offset = false;
}

int rec_encoder_set_seal(rec_encoder_t *e, const struct rec_seal *seal)
{
	if (!e)
		return -EINVAL;
	e->has_seal = seal != NULL;
	if (seal)
		e->seal = *seal;
	return 0;
}

/* The Seal's message points into the encoder's copy (a few hundred bytes:
   the output buffer's fixed room, WIRE_FIXED_MAX, holds it). */
static Railmon__V1__Seal *encoder_seal_msg(rec_encoder_t *e, Railmon__V1__Seal *m)
{
	struct rec_seal *s = &e->seal;

	m->version = s->version ? s->version : REC_SEAL_VERSION;
	m->vehicle = s->vehicle;
	m->log_id = (ProtobufCBinaryData){ REC_LOG_ID_LEN, s->log_id };
	m->boot_id = (ProtobufCBinaryData){ REC_BOOT_ID_LEN, s->boot_id };
	m->first_seq = s->first_seq;
	m->end_seq = s->end_seq;
	m->t_ns = s->t_ns;
	m->chain_start = (ProtobufCBinaryData){ REC_SEAL_HASH_LEN, s->chain_start };
	m->chain_head = (ProtobufCBinaryData){ REC_SEAL_HASH_LEN, s->chain_head };
	m->prev_seal = (ProtobufCBinaryData){ REC_SEAL_HASH_LEN, s->prev_seal };
	m->signature = (ProtobufCBinaryData){ s->is_signed ? REC_SEAL_SIG_LEN : 0, s->signature };
	m->batch_digests = (ProtobufCBinaryData){ (size_t)s->ndigests * REC_SEAL_HASH_LEN,
	                                          (uint8_t *)s->digests };
	return m;
}

/* The columns of each kind as their message, NULL when the Batch has none
   of that kind (the field is then left out). */
static Railmon__V1__CanFrames *encoder_can_msg(rec_encoder_t *e, Railmon__V1__CanFrames *can)
{
	if (!e->ncan)
		return NULL;
	can->n_t_delta_ns = can->n_bus = can->n_id = can->n_flags = can->n_len = e->ncan;
	can->t_delta_ns = e->can_dt;
	can->bus = e->can_bus;
	can->id = e->can_id;
	can->flags = e->can_flags;
	can->len = e->can_len;
	can->data.data = e->can_data;
	can->data.len = e->can_data_len;
	return can;
}

static Railmon__V1__Samples *encoder_samples_msg(rec_encoder_t *e, Railmon__V1__Samples *smp)
{
	if (!e->nsmp)
		return NULL;
	smp->n_t_delta_ns = smp->n_channel = smp->n_value = e->nsmp;
	smp->t_delta_ns = e->smp_dt;
	smp->channel = e->smp_ch;
	smp->value = e->smp_val;
	/* All-good batches omit the quality column (documented in the proto). */
	smp->n_quality = e->smp_any_bad ? e->nsmp : 0;
	smp->quality = e->smp_q;
	return smp;
}

static Railmon__V1__Events *encoder_events_msg(rec_encoder_t *e, Railmon__V1__Events *ev)
{
	if (!e->nev)
		return NULL;
	ev->n_t_delta_ns = ev->n_source = ev->n_code = ev->n_arg = ev->n_detail = e->nev;
	ev->t_delta_ns = e->ev_dt;
	ev->source = e->ev_src;
	ev->code = e->ev_code;
	ev->arg = e->ev_arg;
	ev->detail = e->ev_detail;
	return ev;
}

static Railmon__V1__Texts *encoder_texts_msg(rec_encoder_t *e, Railmon__V1__Texts *tx)
{
	if (!e->ntx)
		return NULL;
	tx->n_t_delta_ns = tx->n_channel = tx->n_text = e->ntx;
	tx->t_delta_ns = e->tx_dt;
	tx->channel = e->tx_ch;
	tx->text = e->tx_ptr;
	tx->n_quality = e->tx_any_bad ? e->ntx : 0;
	tx->quality = e->tx_q;
	return tx;
}

int64_t rec_mono_t0(int64_t t0_ns, int64_t offset_ns)
{
	int64_t mono;

	/* 0 stays "not known": a base of exactly 0 ns after boot cannot be
	   told apart, and is given as 1 ns instead (an error of no weight);
	   an offset that overflows is not known either. */
	if (__builtin_sub_overflow(t0_ns, offset_ns, &mono))
		return 0;
	return mono ? mono : 1;
}

int rec_encoder_finish(rec_encoder_t *e, uint64_t first_seq, const uint8_t **ret_buf, size_t *ret_len)
{
	Railmon__V1__Batch b = RAILMON__V1__BATCH__INIT;
	Railmon__V1__CanFrames can = RAILMON__V1__CAN_FRAMES__INIT;
	Railmon__V1__Samples smp = RAILMON__V1__SAMPLES__INIT;
	Railmon__V1__Events ev = RAILMON__V1__EVENTS__INIT;
	Railmon__V1__Seal seal = RAILMON__V1__SEAL__INIT;
	Railmon__V1__Texts tx = RAILMON__V1__TEXTS__INIT;
	size_t need, count;

	if (!e || !ret_buf || !ret_len)
		return -EINVAL;
	count = rec_encoder_count(e);
	b.schema_version = REC_SCHEMA_VERSION;
	b.first_seq = first_seq;
	b.vehicle = e->vehicle;
	b.config_hash = e->config_hash;
	b.boot_id.data = e->boot_id;
	b.boot_id.len = REC_BOOT_ID_LEN;
	b.log_id.data = e->log_id;
	b.log_id.len = e->has_log_id ? REC_LOG_ID_LEN : 0;
	b.t0_ns = count ? e->t0 : 0;
	if (count && e->has_clock_offset)
		b.mono_t0_ns = rec_mono_t0(e->t0, e->clock_offset);
	b.historical = e->historical;
	b.can = encoder_can_msg(e, &can);
	b.samples = encoder_samples_msg(e, &smp);
	b.events = encoder_events_msg(e, &ev);
	b.texts = encoder_texts_msg(e, &tx);
	/* the dictionary's messages were filled by set_channels() */
	b.n_channels = e->nchannels;
	b.channels = e->nchannels ? e->ch_ptr : NULL;
	/* and the health entries' by add_health() */
	b.n_health = e->nhealth;
	b.health = e->nhealth ? e->health_ptr : NULL;
	if (e->has_seal)
		b.seal = encoder_seal_msg(e, &seal);

	need = railmon__v1__batch__get_packed_size(&b);
	/* Sized at creation and by set_channels(); only health entries in a
	   Batch with no dictionary can still go past that. */
	if (need > e->out_size) {
		uint8_t *n = realloc(e->out, need);
		if (!n)
			return -ENOMEM;
		e->out = n;
		e->out_size = need;
	}
	*ret_len = railmon__v1__batch__pack(&b, e->out);
	*ret_buf = e->out;
	encoder_reset(e);
	return (int)count;
}

/* ------------------------------------------------------------------ decode */

struct rec_batch {
	Railmon__V1__Batch *msg;
	size_t ncan, nsmp, nev, ntx;
	int64_t *t;            /* absolute time of every record, in record order */
	uint32_t *can_off;     /* offset of each frame's payload in can->data */
};

rec_batch_t *rec_batch_free(rec_batch_t *b)
{
	if (!b)
		return NULL;
	if (b->msg)
		railmon__v1__batch__free_unpacked(b->msg, NULL);
	free(b->t);
	free(b->can_off);
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
	return batch_check_texts(b);
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
	count = (uint64_t)b->ncan + b->nsmp + b->nev + b->ntx;
	if (count > UINT32_MAX || __builtin_add_overflow(m->first_seq, count, &end))
		return -EBADMSG;
	b->t = calloc(count ? count : 1, sizeof(int64_t));
	if (!b->t)
		return -ENOMEM;
	if ((m->can && !batch_times(m->t0_ns, m->can->t_delta_ns, b->ncan, b->t)) ||
	    (m->samples && !batch_times(m->t0_ns, m->samples->t_delta_ns, b->nsmp, b->t + b->ncan)) ||
	    (m->events && !batch_times(m->t0_ns, m->events->t_delta_ns, b->nev, b->t + b->ncan + b->nsmp)) ||
	    (m->texts && !batch_times(m->t0_ns, m->texts->t_delta_ns, b->ntx, b->t + b->ncan + b->nsmp + b->nev)))
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
	ret->count = (uint32_t)(b->ncan + b->nsmp + b->nev + b->ntx);
	ret->vehicle = b->msg->vehicle;
	ret->config_hash = b->msg->config_hash;
	ret->boot_id = b->msg->boot_id.data;
	ret->boot_id_len = b->msg->boot_id.len;
	ret->log_id = b->msg->log_id.data;
	ret->log_id_len = b->msg->log_id.len;
	ret->t0_ns = b->msg->t0_ns;
	ret->mono_t0_ns = b->msg->mono_t0_ns;
	ret->historical = b->msg->historical;
	ret->nchannels = b->msg->n_channels;
	ret->nhealth = b->msg->n_health;
	return 0;
}

int rec_batch_item(const rec_batch_t *b, size_t i, struct acq_item *ret)
{
	const Railmon__V1__Batch *m;
	struct acq_item it = { 0 };

	if (!b || !ret || i >= b->ncan + b->nsmp + b->nev + b->ntx)
		return -EINVAL;
	m = b->msg;
	it.t_ns = b->t[i];
	it.seq = m->first_seq + i;
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
	} else if ((i -= b->nsmp) >= b->nev) {
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
	h.window_alarm = m->window_alarm;
	h.window_s = m->window_s;
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

static bool seal_bytes(const ProtobufCBinaryData *d, uint8_t *out, size_t len)
{
	if (d->len != len)
		return false;
	memcpy(out, d->data, len);
	return true;
}

int rec_batch_seal(const rec_batch_t *b, struct rec_seal *ret)
{
	const Railmon__V1__Seal *m;
	struct rec_seal s = { 0 };

	if (!b || !ret)
		return -EINVAL;
	m = b->msg->seal;
	if (!m)
		return -ENOENT;
	if (m->version < REC_SEAL_VERSION_MIN || m->version > REC_SEAL_VERSION || strlen(m->vehicle) > REC_SEAL_VEHICLE_MAX ||
	    m->first_seq == 0 || m->end_seq < m->first_seq ||
	    !seal_bytes(&m->log_id, s.log_id, REC_LOG_ID_LEN) ||
	    !seal_bytes(&m->boot_id, s.boot_id, REC_BOOT_ID_LEN) ||
	    !seal_bytes(&m->chain_start, s.chain_start, REC_SEAL_HASH_LEN) ||
	    !seal_bytes(&m->chain_head, s.chain_head, REC_SEAL_HASH_LEN) ||
	    !seal_bytes(&m->prev_seal, s.prev_seal, REC_SEAL_HASH_LEN) ||
	    (m->signature.len != 0 && m->signature.len != REC_SEAL_SIG_LEN) ||
	    m->batch_digests.len % REC_SEAL_HASH_LEN || (m->version < 2 && m->batch_digests.len))
		return -EBADMSG;
	s.version = m->version;
	s.digests = m->batch_digests.len ? m->batch_digests.data : NULL;
	/* a Batch is at most 1 MiB (a frame's limit): the count fits */
	s.ndigests = (uint32_t)(m->batch_digests.len / REC_SEAL_HASH_LEN);
	s.is_signed = m->signature.len == REC_SEAL_SIG_LEN;
	if (s.is_signed)
		memcpy(s.signature, m->signature.data, REC_SEAL_SIG_LEN);
	memcpy(s.vehicle, m->vehicle, strlen(m->vehicle) + 1);
	s.first_seq = m->first_seq;
	s.end_seq = m->end_seq;
	s.t_ns = m->t_ns;
	s.batch = (struct rec_seal_batch){ .schema_version = b->msg->schema_version, .t0_ns = b->msg->t0_ns,
	                                   .config_hash = b->msg->config_hash, .mono_t0_ns = b->msg->mono_t0_ns };
	*ret = s;
	return 0;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

int rec_seal_signed_bytes(const struct rec_seal *s, uint8_t buf[REC_SEAL_SIGNED_MAX])
{
	static const uint8_t magic[8] = "RMSEAL1";
	size_t vlen;
	uint8_t *p = buf;

	if (!s || !buf)
		return -EINVAL;
	vlen = strnlen(s->vehicle, sizeof(s->vehicle));
	if (vlen > REC_SEAL_VEHICLE_MAX)
		return -EINVAL;
	memcpy(p, magic, 8);
	p = put_le(p + 8, s->version ? s->version : REC_SEAL_VERSION, 4);
	*p++ = (uint8_t)vlen;
	memcpy(p, s->vehicle, vlen);
	p += vlen;
	memcpy(p, s->log_id, REC_LOG_ID_LEN);
	p += REC_LOG_ID_LEN;
	memcpy(p, s->boot_id, REC_BOOT_ID_LEN);
	p += REC_BOOT_ID_LEN;
	p = put_le(p, s->first_seq, 8);
	p = put_le(p, s->end_seq, 8);
	p = put_le(p, (uint64_t)s->t_ns, 8);
	memcpy(p, s->chain_start, REC_SEAL_HASH_LEN);
	memcpy(p + REC_SEAL_HASH_LEN, s->chain_head, REC_SEAL_HASH_LEN);
	memcpy(p + 2 * REC_SEAL_HASH_LEN, s->prev_seal, REC_SEAL_HASH_LEN);
	p += 3 * REC_SEAL_HASH_LEN;
	if ((s->version ? s->version : REC_SEAL_VERSION) >= 2) {
		p = put_le(p, s->batch.schema_version, 4);
		p = put_le(p, (uint64_t)s->batch.t0_ns, 8);
		p = put_le(p, s->batch.config_hash, 8);
		p = put_le(p, (uint64_t)s->batch.mono_t0_ns, 8);
	}
	return (int)(p - buf);
}
