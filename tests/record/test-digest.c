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

/* A record of each kind with every field set to something not zero. */
static void kinds(struct acq_item k[4])
{
	memset(k, 0, 4 * sizeof(*k));
	for (int i = 0; i < 4; i++) {
		k[i].t_ns = T0 + i;
		k[i].bus = 2;
	}
	k[0].kind = ACQ_ITEM_CAN;
	k[0].can.id = 0x1abcdef;
	k[0].can.flags = 1;
	k[0].can.len = 12;
	memcpy(k[0].can.data, "ABCDEFGHIJKL", 12);
	k[1].kind = ACQ_ITEM_SAMPLE;
	k[1].sample = (struct acq_sample){ .channel = 7, .quality = 2, .value = -3.25 };
	k[2].kind = ACQ_ITEM_TEXT;
	k[2].text.channel = 9;
	k[2].text.quality = 1;
	k[2].text.len = 11;
	memcpy(k[2].text.text, "hello world", 11);
	k[3].kind = ACQ_ITEM_EVENT;
	k[3].event = (struct acq_event){ .code = 3, .detail = 4, .arg = -6 };
}

/* The in-memory ledger's keyed hash (rec_item_hash): every field of every
   kind changes it, every byte of a frame's or a text's payload too (both
   sides of a word boundary), and so does the key.  A field left out would
   let the ground's ledger take a Batch with other records for a re-send
   and drop it silently. */
static void test_hash(void)
{
	struct acq_item k[4], m;
	unsigned changed = 0, tried = 0;

	kinds(k);
#define DIFFERS(i, change) do { \
		m = k[i]; change; tried++; \
		if (rec_item_hash(42, &m) != rec_item_hash(42, &k[i])) \
			changed++; \
		else \
			fprintf(stderr, "hash: %s of kind %d left out\n", #change, (int)k[i].kind); \
	} while (0)
	for (int i = 0; i < 4; i++) {
		DIFFERS(i, m.t_ns++);
		DIFFERS(i, m.bus++);
		assert(rec_item_hash(42, &k[i]) != rec_item_hash(43, &k[i]));
	}
	DIFFERS(0, m.kind = ACQ_ITEM_SAMPLE);
	DIFFERS(0, m.can.id ^= 0x1000000);
	DIFFERS(0, m.can.flags = 0);
	DIFFERS(0, m.can.len = 11);
	for (int b = 0; b < 12; b++)
		DIFFERS(0, m.can.data[b] ^= 0x80);
	DIFFERS(1, m.sample.channel++);
	DIFFERS(1, m.sample.quality++);
	DIFFERS(1, m.sample.value = -3.0);
	DIFFERS(2, m.text.channel++);
	DIFFERS(2, m.text.quality = 0);
	DIFFERS(2, m.text.len = 10);
	for (int b = 0; b < 11; b++)
		DIFFERS(2, m.text.text[b] ^= 0x20);
	DIFFERS(3, m.event.code++);
	DIFFERS(3, m.event.detail++);
	DIFFERS(3, m.event.arg = 6);
#undef DIFFERS
	assert(changed == tried);
	printf("keyed hash: each of %u field and byte changes gives another hash: ok\n", tried);
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
	/* The in-memory ledger's keyed hash: the Batch's is its records' in
	   order, a historical re-send the same, one value or the key other not. */
	h = 77;
	for (int i = 0; i < 3; i++)
		h = rec_item_hash(h, &it[i]);
	assert(rec_batch_hash(a, 3, 77) == h);
	assert(rec_batch_hash(hist, 3, 77) == rec_batch_hash(a, 3, 77));
	assert(rec_batch_hash(other, 3, 77) != rec_batch_hash(a, 3, 77));
	assert(rec_batch_hash(a, 3, 78) != rec_batch_hash(a, 3, 77));
	assert(rec_batch_hash(a, 2, 77) != rec_batch_hash(a, 3, 77));
	test_hash();
	rec_batch_free(a);
	rec_batch_free(hist);
	rec_batch_free(other);
	rec_batch_free(moved);
	printf("digest pinned, historical re-send the same, one value or seq other not: ok\n");
	return 0;
}
