/* SPDX-License-Identifier: MIT */
/*
 * fwd-events.c - event-only Batches for railmon/<vehicle>/events, so a
 * ground system can watch faults without decoding every CAN frame.
 */
#include <errno.h>

#include "forward-private.h"

/* Index of the first event: records go CAN frames, samples, events. */
static uint32_t first_event(const rec_batch_t *b, uint32_t count)
{
	uint32_t i = count;

	while (i > 0) {
		struct acq_item it;

		if (rec_batch_item(b, i - 1, &it) < 0 || it.kind != ACQ_ITEM_EVENT)
			break;
		i--;
	}
	return i;
}

int upl_events_batch(const void *buf, size_t len, rec_encoder_t **ret_enc,
                     const uint8_t **ret_buf, size_t *ret_len)
{
	struct rec_batch_meta meta = { 0 };
	struct rec_batch_info info;
	rec_encoder_t *enc = NULL;
	rec_batch_t *b;
	uint64_t first_seq = 0;
	uint32_t first;
	int r;

	r = rec_batch_decode(buf, len, &b);
	if (r < 0)
		return r;
	r = rec_batch_info(b, &info);
	first = r < 0 ? 0 : first_event(b, info.count);
	if (r < 0 || first == info.count)
		goto out;
	meta.vehicle = info.vehicle;
	meta.config_hash = info.config_hash;
	meta.historical = info.historical;
	for (size_t k = 0; k < info.boot_id_len && k < REC_BOOT_ID_LEN; k++)
		meta.boot_id[k] = info.boot_id[k];
	/* The ground keys the events topic on the log id too. */
	for (size_t k = 0; k < info.log_id_len; k++)
		meta.log_id[k] = info.log_id[k];
	r = rec_encoder_new(&meta, info.count - first, &enc);
	for (uint32_t i = first; r == 0 && i < info.count; i++) {
		struct acq_item it;

		r = rec_batch_item(b, i, &it);
		/* its own seq: in a reduced Batch the records before it are not
		   contiguous (the events always are: every one is kept) */
		if (r == 0 && i == first)
			first_seq = it.seq;
		if (r == 0)
			r = rec_encoder_add(enc, &it);
	}
	if (r == 0)
		r = rec_encoder_finish(enc, first_seq, ret_buf, ret_len);
	if (r > 0) {
		*ret_enc = enc;
		enc = NULL;
	}
out:
	rec_encoder_free(enc);
	rec_batch_free(b);
	return r;
}
