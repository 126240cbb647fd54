/* SPDX-License-Identifier: MIT */
/*
 * channels-live.c - each channel's latest value (channels.h
 * pl_channels_set_live, pl_channels_live): the collector writes, any
 * thread reads, with relaxed atomics and a value's time stored last
 * (release); a text under a sequence lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "channels-private.h"
#include "conf/config-schema.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "dbc/j1939.h"
#include "trdp/dataset.h"
#include "trdp/header.h"
#include "trdp/xml.h"

/* ------------------------------------------------------------ live values */

/* Map a channel id to its index, -1 if it is not one of ours. */
static ssize_t channel_index(const pl_channels_t *ch, uint32_t id)
{
	size_t b = id >> 16, i = id & 0xffff;

	if (b >= ch->cfg->nbuses || i >= ch->count[b])
		return -1;
	return (ssize_t)(ch->base[b] + i);
}

/* A text item as the channel's latest (the collector thread, the only writer). */
static void set_live_text(struct live_slot *s, const struct acq_item *it)
{
	uint32_t seq = atomic_load_explicit(&s->text_seq, memory_order_relaxed);
	uint64_t w[LIVE_TEXT_WORDS] = { 0 };

	memcpy(w, it->text.text, it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX);
	atomic_store_explicit(&s->text_seq, seq + 1, memory_order_relaxed);
	/* Each word with release (no fence: TSan does not model them): a
	   reader that acquires a new word sees the odd sequence before it. */
	for (size_t k = 0; k < LIVE_TEXT_WORDS; k++)
		atomic_store_explicit(&s->text[k], w[k], memory_order_release);
	atomic_store_explicit(&s->text_len, it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX,
	                      memory_order_release);
	atomic_store_explicit(&s->is_text, true, memory_order_relaxed);
	/* every word is visible before the even sequence */
	atomic_store_explicit(&s->text_seq, seq + 2, memory_order_release);
	atomic_store_explicit(&s->quality, it->text.quality, memory_order_relaxed);
	atomic_store_explicit(&s->t_ns, it->t_ns, memory_order_release);
}

/* The text of slot s into ret (a reader on any thread): read again while
   the writer was at it. */
static void live_text(struct live_slot *s, struct pl_live *ret)
{
	uint64_t w[LIVE_TEXT_WORDS];
	uint32_t a, b;
	uint8_t len;

	do {
		a = atomic_load_explicit(&s->text_seq, memory_order_acquire);
		/* acquire: the second read of the sequence stays after these */
		for (size_t k = 0; k < LIVE_TEXT_WORDS; k++)
			w[k] = atomic_load_explicit(&s->text[k], memory_order_acquire);
		len = atomic_load_explicit(&s->text_len, memory_order_acquire);
		b = atomic_load_explicit(&s->text_seq, memory_order_relaxed);
	} while ((a & 1) || a != b);
	memcpy(ret->text, w, len);
	ret->text[len] = 0;
	ret->is_text = true;
}

void pl_channels_set_live(pl_channels_t *ch, const struct acq_item *it)
{
	ssize_t i = it->kind == ACQ_ITEM_SAMPLE ? channel_index(ch, it->sample.channel)
	          : it->kind == ACQ_ITEM_TEXT   ? channel_index(ch, it->text.channel) : -1;
	uint64_t bits;

	if (i < 0)
		return;
	if (it->kind == ACQ_ITEM_TEXT) {
		set_live_text(&ch->live[i], it);
		return;
	}
	memcpy(&bits, &it->sample.value, sizeof(bits));
	atomic_store_explicit(&ch->live[i].bits, bits, memory_order_relaxed);
	atomic_store_explicit(&ch->live[i].quality, it->sample.quality, memory_order_relaxed);
	/* Written last with release: a reader that sees the new time sees the
	   value that goes with it. */
	atomic_store_explicit(&ch->live[i].t_ns, it->t_ns, memory_order_release);
}

int pl_channels_live(const pl_channels_t *ch, size_t i, struct pl_live *ret)
{
	struct live_slot *s;
	uint64_t bits;

	if (!ch || !ret || i >= ch->n)
		return -EINVAL;
	s = &ch->live[i];
	ret->t_ns = atomic_load_explicit(&s->t_ns, memory_order_acquire);
	bits = atomic_load_explicit(&s->bits, memory_order_relaxed);
	memcpy(&ret->value, &bits, sizeof(bits));
	ret->quality = atomic_load_explicit(&s->quality, memory_order_relaxed);
	ret->is_text = false;
	if (atomic_load_explicit(&s->is_text, memory_order_relaxed))
		live_text(s, ret);
	return 0;
}

ssize_t pl_channels_index(const pl_channels_t *ch, uint32_t id)
{
	return ch ? channel_index(ch, id) : -1;
}
