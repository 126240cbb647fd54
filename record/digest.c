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
	} else {
		h = basic_fnv1a(h, &it->event.code, sizeof(it->event.code));
		h = basic_fnv1a(h, &it->event.detail, sizeof(it->event.detail));
		h = basic_fnv1a(h, &it->event.arg, sizeof(it->event.arg));
	}
	return h;
}

uint64_t rec_batch_digest(const rec_batch_t *b, uint32_t count, uint64_t seed)
{
	uint64_t h = seed;

	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		h = rec_item_digest(h, &it);
	}
	return h;
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
