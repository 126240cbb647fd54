/* SPDX-License-Identifier: MIT */
/*
 * digest.c - a Batch's records as one 64-bit digest, and compared field
 * by field (digest.h).
 */
#include <errno.h>
#include <string.h>

#include "digest.h"
#include "basic/hash.h"

uint64_t rec_item_digest(uint64_t h, const struct acq_item *it)
{
	h = basic_fnv1a(h, &it->t_ns, sizeof(it->t_ns));
	h = basic_fnv1a(h, &it->kind, sizeof(it->kind));
	h = basic_fnv1a(h, &it->bus, sizeof(it->bus));
	if (it->kind == ACQ_ITEM_CAN) {
		h = basic_fnv1a(h, &it->can.id, sizeof(it->can.id));
		h = basic_fnv1a(h, &it->can.flags, 1);
		h = basic_fnv1a(h, &it->can.len, 1);
		h = basic_fnv1a(h, it->can.data, it->can.len);
	} else if (it->kind == ACQ_ITEM_SAMPLE) {
		h = basic_fnv1a(h, &it->sample.channel, sizeof(it->sample.channel));
		h = basic_fnv1a(h, &it->sample.quality, sizeof(it->sample.quality));
		h = basic_fnv1a(h, &it->sample.value, sizeof(it->sample.value));
	} else if (it->kind == ACQ_ITEM_TEXT) {
		h = basic_fnv1a(h, &it->text.channel, sizeof(it->text.channel));
		h = basic_fnv1a(h, &it->text.quality, 1);
		h = basic_fnv1a(h, &it->text.len, 1);
		h = basic_fnv1a(h, it->text.text, it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX);
	} else if (it->kind == ACQ_ITEM_TRDP) {
		/* the fields the Batch holds, then the telegram's bytes (never
		   the pointer to them) */
		const struct acq_trdp *t = &it->trdp;
		uint32_t f[9] = { t->src_ip, t->dst_ip, (uint32_t)t->src_port << 16 | t->dst_port, t->com_id, t->seq,
			          t->etb_topo, t->op_trn_topo, (uint32_t)t->msg_type << 16 | t->flags, t->len };
		h = basic_fnv1a(h, f, sizeof(f));
		if (t->data)
			h = basic_fnv1a(h, t->data, t->len);
		if (t->flags & ACQ_TRDP_MD)
			h = basic_fnv1a(h, t->session_id, sizeof(t->session_id));
	} else {
		h = basic_fnv1a(h, &it->event.code, sizeof(it->event.code));
		h = basic_fnv1a(h, &it->event.detail, sizeof(it->event.detail));
		h = basic_fnv1a(h, &it->event.arg, sizeof(it->event.arg));
	}
	return h;
}

/* The first count records of b folded into h by item(), in order: the
   one walk of both digests (static with a constant item(): the compiler
   makes each caller's loop call its own function directly). */
static inline uint64_t fold_items(const rec_batch_t *b, uint32_t count, uint64_t h,
                                  uint64_t (*item)(uint64_t h, const struct acq_item *it))
{
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		h = item(h, &it);
	}
	return h;
}

uint64_t rec_batch_digest(const rec_batch_t *b, uint32_t count, uint64_t seed)
{
	return fold_items(b, count, seed, rec_item_digest);
}

/* One 64-bit word into the hash: multiply, rotate, multiply, xorshift. */
static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v * UINT64_C(0x9e3779b97f4a7c15);
	h = (h << 31 | h >> 33) * UINT64_C(0xbf58476d1ce4e5b9);
	return h ^ (h >> 29);
}

/* len bytes (up to 64) a word at a time, the last word zero-padded; the
   length is mixed in by the caller. */
static uint64_t mix_bytes(uint64_t h, const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = 0;

		memcpy(&w, p + i, len - i < 8 ? len - i : 8);
		h = mix(h, w);
	}
	return h;
}

uint64_t rec_item_hash(uint64_t h, const struct acq_item *it)
{
	uint64_t w;

	h = mix(h, (uint64_t)it->t_ns);
	h = mix(h, (uint64_t)it->kind << 32 | it->bus);
	if (it->kind == ACQ_ITEM_CAN) {
		h = mix(h, (uint64_t)it->can.id << 16 | (uint64_t)it->can.flags << 8 | it->can.len);
		return mix_bytes(h, it->can.data, it->can.len <= sizeof(it->can.data) ? it->can.len : sizeof(it->can.data));
	}
	if (it->kind == ACQ_ITEM_SAMPLE) {
		memcpy(&w, &it->sample.value, sizeof(w));
		h = mix(h, (uint64_t)it->sample.channel << 32 | it->sample.quality);
		return mix(h, w);
	}
	if (it->kind == ACQ_ITEM_TEXT) {
		size_t n = it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

		h = mix(h, (uint64_t)it->text.channel << 32 | (uint64_t)it->text.quality << 8 | it->text.len);
		return mix_bytes(h, (const uint8_t *)it->text.text, n);
	}
	if (it->kind == ACQ_ITEM_TRDP) {
		const struct acq_trdp *t = &it->trdp;

		h = mix(h, (uint64_t)t->src_ip << 32 | t->dst_ip);
		h = mix(h, (uint64_t)t->src_port << 48 | (uint64_t)t->dst_port << 32 | t->com_id);
		h = mix(h, (uint64_t)t->seq << 32 | t->etb_topo);
		h = mix(h, (uint64_t)t->op_trn_topo << 32 | (uint64_t)t->msg_type << 16 | t->flags);
		h = mix(h, t->len);
		if (t->flags & ACQ_TRDP_MD)
			h = mix_bytes(h, t->session_id, sizeof(t->session_id));
		return t->data ? mix_bytes(h, t->data, t->len) : h;
	}
	h = mix(h, (uint64_t)it->event.code << 32 | it->event.detail);
	return mix(h, (uint64_t)it->event.arg);
}

uint64_t rec_batch_hash(const rec_batch_t *b, uint32_t count, uint64_t key)
{
	return fold_items(b, count, key, rec_item_hash);
}

static bool item_eq(const struct acq_item *x, const struct acq_item *y)
{
	if (x->kind != y->kind || x->t_ns != y->t_ns || x->bus != y->bus || x->seq != y->seq)
		return false;
	if (x->kind == ACQ_ITEM_CAN)
		return x->can.id == y->can.id && x->can.flags == y->can.flags && x->can.len == y->can.len &&
		       memcmp(x->can.data, y->can.data, x->can.len) == 0;
	if (x->kind == ACQ_ITEM_SAMPLE)
		return x->sample.channel == y->sample.channel && x->sample.quality == y->sample.quality &&
		       memcmp(&x->sample.value, &y->sample.value, sizeof(x->sample.value)) == 0;
	if (x->kind == ACQ_ITEM_TEXT)
		return x->text.channel == y->text.channel && x->text.quality == y->text.quality &&
		       x->text.len == y->text.len && memcmp(x->text.text, y->text.text, x->text.len) == 0;
	if (x->kind == ACQ_ITEM_TRDP) {
		const struct acq_trdp *a = &x->trdp, *b = &y->trdp;

		return a->src_ip == b->src_ip && a->dst_ip == b->dst_ip && a->src_port == b->src_port &&
		       a->dst_port == b->dst_port && a->com_id == b->com_id && a->seq == b->seq &&
		       a->etb_topo == b->etb_topo && a->op_trn_topo == b->op_trn_topo &&
		       a->msg_type == b->msg_type && a->flags == b->flags && a->len == b->len &&
		       (!a->len || memcmp(a->data, b->data, a->len) == 0) &&
		       memcmp(a->session_id, b->session_id, sizeof(a->session_id)) == 0;
	}
	return x->event.code == y->event.code && x->event.arg == y->event.arg &&
	       x->event.detail == y->event.detail;
}

int rec_batch_same_records(const rec_batch_t *a, const rec_batch_t *b)
{
	struct rec_batch_info ia, ib;
	int same;

	if (!a || !b || rec_batch_info(a, &ia) < 0 || rec_batch_info(b, &ib) < 0)
		return -EINVAL;
	same = ia.first_seq == ib.first_seq && ia.count == ib.count;
	for (uint32_t i = 0; same && i < ia.count; i++) {
		struct acq_item x, y;

		rec_batch_item(a, i, &x);
		rec_batch_item(b, i, &y);
		same = item_eq(&x, &y);
	}
	return same;
}

int rec_batch_records_agree(const rec_batch_t *a, const rec_batch_t *b, uint8_t *held)
{
	struct rec_batch_info ia, ib;
	uint32_t i = 0, j = 0;

	if (!a || !b || rec_batch_info(a, &ia) < 0 || rec_batch_info(b, &ib) < 0)
		return -EINVAL;
	/* both in rising seq order (a whole Batch's first_seq + i, a reduced
	   one's strictly increasing deltas): one merge */
	while (i < ia.count && j < ib.count) {
		uint64_t sa = rec_batch_seq(a, i), sb = rec_batch_seq(b, j);
		struct acq_item x, y;

		if (sa < sb) {
			i++;
			continue;
		}
		if (sb < sa) {
			j++;
			continue;
		}
		rec_batch_item(a, i++, &x);
		rec_batch_item(b, j, &y);
		if (!item_eq(&x, &y))
			return 0;
		if (held)
			held[j / 8] |= (uint8_t)(1u << (j % 8));
		j++;
	}
	return 1;
}
