/* SPDX-License-Identifier: MIT */
/*
 * batch-encode.c - acq_item -> railmon.v1.Batch: the encoder.
 *
 * Encoding fills column arrays that were sized at creation and points the
 * protobuf-c message at them, so a Batch costs one pack into a buffer the
 * encoder owns and no allocation.  The channel dictionary and health
 * entries are set in batch-dict.c; the decoder is batch.c.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "batch-encode-private.h"
#include "seal.h"

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
	rec_trdp_encoder_free(e);
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
	    !e->tx_q || !e->tx_buf || !e->tx_ptr || rec_trdp_encoder_alloc(e) < 0) {
		rec_encoder_free(e);
		return -ENOMEM;
	}
	*ret_enc = e;
	return 0;
}

size_t rec_encoder_count(const rec_encoder_t *e)
{
	return e ? e->nrec : 0;
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

	if (!e->nrec) {
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
	/* A classic frame's bytes as one fixed 8-byte move: a copy of a
	   variable length compiled to `rep movs`, the costliest instruction of
	   the encoder.  The bytes past len land where the next frame's go (or
	   past can_data_len, never packed); the column holds max frames of
	   ACQ_CAN_DATA_MAX bytes, so 8 always fit. */
	if (it->can.len <= 8)
		memcpy(e->can_data + e->can_data_len, it->can.data, 8);
	else
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

size_t rec_encoder_wire_max(const rec_encoder_t *e)
{
	return e ? rec_encoder_wire(e) : 0;
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
	case ACQ_ITEM_TRDP:
		return rec_trdp_wire_max(it);
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
	if (e->nrec >= e->max)
		return -ENOBUFS;
	/* Full by size too: a Batch over REC_BATCH_MAX_BYTES would be refused
	   by the log with every record in it (the first always goes in). */
	w = item_wire_max(it);
	if (e->nrec &&
	    (e->wire_records + w > WIRE_RECORDS_MAX || rec_encoder_wire(e) + w > REC_BATCH_MAX_BYTES))
		return -ENOBUFS;
	/* A telegram can be far larger than the room the dictionary and
	   health leave for a Batch's first record (WIRE_ITEM_LARGEST): with
	   them in the Batch it waits for the next one, which has room. */
	if (it->kind == ACQ_ITEM_TRDP && rec_encoder_wire(e) + w > REC_BATCH_MAX_BYTES)
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
	case ACQ_ITEM_TRDP:
		/* checked before the time delta moves the column's base */
		r = rec_trdp_encoder_check(e, it);
		if (r == 0)
			r = rec_trdp_encoder_add(e, it, encoder_delta(e, &e->tr_prev, e->ntr, it->t_ns));
		break;
	default:
		r = -EINVAL;
	}
	if (r == 0) {
		e->wire_records += w;
		e->nrec++;
	}
	return r;
}

static void encoder_reset(rec_encoder_t *e)
{
	e->nrec = e->ncan = e->nsmp = e->nev = e->ntx = 0;
	rec_trdp_encoder_reset(e);
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

/* finish and finish_to: into dst (cap bytes; -ENOBUFS, nothing reset, when
   the Batch needs more), or dst NULL: into the encoder's own buffer */
static int encoder_finish(rec_encoder_t *e, uint64_t first_seq, uint8_t *dst, size_t cap,
                          const uint8_t **ret_buf, size_t *ret_len)
{
	Railmon__V1__Batch b = RAILMON__V1__BATCH__INIT;
	Railmon__V1__CanFrames can = RAILMON__V1__CAN_FRAMES__INIT;
	Railmon__V1__Samples smp = RAILMON__V1__SAMPLES__INIT;
	Railmon__V1__Events ev = RAILMON__V1__EVENTS__INIT;
	Railmon__V1__Seal seal = RAILMON__V1__SEAL__INIT;
	Railmon__V1__Texts tx = RAILMON__V1__TEXTS__INIT;
	Railmon__V1__TrdpTelegrams tr = RAILMON__V1__TRDP_TELEGRAMS__INIT;
	size_t need, count;

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
	b.trdp = rec_trdp_encoder_msg(e, &tr);
	/* the dictionary's messages were filled by set_channels() */
	b.n_channels = e->nchannels;
	b.channels = e->nchannels ? e->ch_ptr : NULL;
	/* and the health entries' by add_health() */
	b.n_health = e->nhealth;
	b.health = e->nhealth ? e->health_ptr : NULL;
	if (e->has_seal)
		b.seal = encoder_seal_msg(e, &seal);

	/* The wire bound is an upper bound of what pack writes (test-batch
	   packs worst cases into a room of exactly that size), so a room that
	   holds it needs no sizing pass, which walked every column once more
	   (7% of a DBC replay's collector).  A Seal is outside the bound. */
	if (!e->has_seal && rec_encoder_wire(e) <= (dst ? cap : e->out_size)) {
		*ret_len = railmon__v1__batch__pack(&b, dst ? dst : e->out);
		*ret_buf = dst ? dst : e->out;
		encoder_reset(e);
		return (int)count;
	}
	need = railmon__v1__batch__get_packed_size(&b);
	if (dst) {
		if (need > cap)
			return -ENOBUFS;
		*ret_len = railmon__v1__batch__pack(&b, dst);
		*ret_buf = dst;
		encoder_reset(e);
		return (int)count;
	}
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

int rec_encoder_finish(rec_encoder_t *e, uint64_t first_seq, const uint8_t **ret_buf, size_t *ret_len)
{
	if (!e || !ret_buf || !ret_len)
		return -EINVAL;
	return encoder_finish(e, first_seq, NULL, 0, ret_buf, ret_len);
}

int rec_encoder_finish_to(rec_encoder_t *e, uint64_t first_seq, uint8_t *dst, size_t cap, size_t *ret_len)
{
	const uint8_t *buf;

	if (!e || !dst || !ret_len)
		return -EINVAL;
	return encoder_finish(e, first_seq, dst, cap, &buf, ret_len);
}
