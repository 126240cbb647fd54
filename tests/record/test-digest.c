/* SPDX-License-Identifier: MIT */
/*
 * test-digest.c - record/digest.h: "the same records?" for every ledger.
 * The digest's value is pinned against an independent FNV-1a over the
 * fields' bytes (computed with Python's struct and int arithmetic when
 * this test was written): the ground database keeps it in batches.digest,
 * so a change would make every re-send of a committed Batch a conflict.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/batch.h"
#include "record/digest.h"

#define T0 INT64_C(1700000000000000000)

/* In the order a decoded Batch gives them back (CAN frames, samples,
   events; a sample carries no bus). */
static void items(struct acq_item it[3], double value)
{
	memset(it, 0, 3 * sizeof(*it));
	it[0].t_ns = T0 + 1000;
	it[0].kind = ACQ_ITEM_CAN;
	it[0].can.id = 0x123;
	it[0].can.len = 3;
	memcpy(it[0].can.data, "\x01\x02\x03", 3);
	it[1].t_ns = T0;
	it[1].kind = ACQ_ITEM_SAMPLE;
	it[1].sample = (struct acq_sample){ .channel = 5, .quality = 0, .value = value };
	it[2].t_ns = T0 + 2000;
	it[2].kind = ACQ_ITEM_EVENT;
	it[2].event = (struct acq_event){ .code = 1, .detail = 7, .arg = -5 };
}

/* Encoded and decoded again: the receiver's side of it. */
static rec_batch_t *batch(uint64_t first_seq, double value, bool historical)
{
	struct rec_batch_meta meta = { .vehicle = "tram7", .config_hash = 9, .historical = historical };
	struct acq_item it[3];
	rec_encoder_t *enc;
	const uint8_t *buf;
	rec_batch_t *b;
	size_t len;

	memset(meta.log_id, 0x5a, sizeof(meta.log_id));
	items(it, value);
	assert(rec_encoder_new(&meta, 8, &enc) == 0);
	for (int i = 0; i < 3; i++)
		assert(rec_encoder_add(enc, &it[i]) == 0);
	assert(rec_encoder_finish(enc, first_seq, &buf, &len) == 3);
	assert(rec_batch_decode(buf, len, &b) == 0);
	rec_encoder_free(enc);
	return b;
}

int main(void)
{
	rec_batch_t *a = batch(10, 1.5, false), *hist = batch(10, 1.5, true), *other = batch(10, 1.25, false);
	rec_batch_t *moved = batch(11, 1.5, false);
	struct acq_item it[3];
	uint64_t h = REC_DIGEST_SEED;

	/* The value the ground database keeps (independent FNV-1a). */
	assert(rec_batch_digest(a, 3, REC_DIGEST_SEED) == UINT64_C(0xbcf7f283d031b097));
	items(it, 1.5);
	for (int i = 0; i < 3; i++)
		h = rec_item_digest(h, &it[i]);
	assert(h == UINT64_C(0xbcf7f283d031b097));
	/* Records, not bytes: a historical re-send is the same. */
	assert(rec_batch_digest(hist, 3, REC_DIGEST_SEED) == rec_batch_digest(a, 3, REC_DIGEST_SEED));
	assert(rec_batch_same_records(a, hist) == 1);
	/* One value other: another digest, not the same records. */
	assert(rec_batch_digest(other, 3, REC_DIGEST_SEED) != rec_batch_digest(a, 3, REC_DIGEST_SEED));
	assert(rec_batch_same_records(a, other) == 0);
	/* The same records under other seqs are not the same Batch. */
	assert(rec_batch_same_records(a, moved) == 0);
	/* Another seed, another digest (the receiver's own). */
	assert(rec_batch_digest(a, 3, 1) != rec_batch_digest(a, 3, REC_DIGEST_SEED));
	/* Fewer records: another digest. */
	assert(rec_batch_digest(a, 2, REC_DIGEST_SEED) != rec_batch_digest(a, 3, REC_DIGEST_SEED));
	assert(rec_batch_same_records(NULL, a) == -EINVAL && rec_batch_same_records(a, NULL) == -EINVAL);
	rec_batch_free(a);
	rec_batch_free(hist);
	rec_batch_free(other);
	rec_batch_free(moved);
	printf("digest pinned, historical re-send the same, one value or seq other not: ok\n");
	return 0;
}
