/* SPDX-License-Identifier: MIT */
/*
 * test-reducer.c - uplink/reduce.c by itself: what each policy keeps of a
 * known sequence of samples, frames by id, events always, the state kept
 * across Batches and forgotten by a reset, a Seal Batch sent whole, the
 * reduced Batch's seqs and range as record/'s decoder reads them, and bad
 * configurations refused.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ground/ledger.h"
#include "record/batch.h"
#include "record/seal.h"
#include "uplink/reduce.h"

#define S(ms) ((int64_t)(ms) * 1000000)

/* One stored Batch of n records from first_seq. */
static size_t batch(const struct acq_item *it, size_t n, uint64_t first_seq, uint8_t *out)
{
	struct rec_batch_meta meta = { .vehicle = "V", .config_hash = 7 };
	const uint8_t *buf;
	rec_encoder_t *enc;
	size_t len;

	meta.log_id[0] = 1;
	assert(rec_encoder_new(&meta, 64, &enc) == 0);
	for (size_t i = 0; i < n; i++)
		assert(rec_encoder_add(enc, &it[i]) == 0);
	assert(rec_encoder_finish(enc, first_seq, &buf, &len) == (int)n);
	memcpy(out, buf, len);
	rec_encoder_free(enc);
	return len;
}

static struct acq_item sample(uint32_t ch, int64_t t, double v)
{
	return (struct acq_item){ .kind = ACQ_ITEM_SAMPLE, .t_ns = t, .bus = (uint16_t)(ch >> 16),
	                          .sample = { .channel = ch, .value = v } };
}

/* The seqs the reduced Batch keeps, into seqs; returns how many. */
static size_t reduce(upl_reducer_t *r, const struct acq_item *it, size_t n, uint64_t first, uint64_t *seqs)
{
	static uint8_t in[65536];
	size_t len = batch(it, n, first, in), olen;
	struct rec_batch_info info;
	const uint8_t *out;
	rec_batch_t *b;

	assert(upl_reducer_batch(r, in, len, &out, &olen) == 1);
	assert(rec_batch_decode(out, olen, &b) == 0 && rec_batch_info(b, &info) == 0);
	assert(info.reduced && info.first_seq == first && info.end_seq == first + n);
	assert(!strcmp(info.vehicle, "V") && info.config_hash == 7 && info.log_id_len == REC_LOG_ID_LEN &&
	       info.log_id[0] == 1);
	for (size_t i = 0; i < info.count; i++) {
		struct acq_item got;

		assert(rec_batch_item(b, i, &got) == 0);
		seqs[i] = got.seq;
		/* the record is the source's, seq for seq */
		assert(got.seq >= first && got.seq < first + n);
		assert(got.kind == it[got.seq - first].kind && got.t_ns == it[got.seq - first].t_ns);
	}
	/* a Batch of no record still has its source's time (t0, the first
	   record's), for the ground to place its range on a day */
	assert(info.count || info.t0_ns == it[0].t_ns);
	n = info.count;
	rec_batch_free(b);
	return n;
}

static void test_policies(void)
{
	struct upl_reduce_chan chans[] = {
		{ 1, { UPL_POL_DEADBAND | UPL_POL_EVERY, 0.5, S(1000) } },
		{ 2, { UPL_POL_CHANGE, 0, 0 } },
		{ 3, { UPL_POL_NONE, 0, 0 } },
		{ 4, { UPL_POL_ALL, 0, 0 } },
	};
	struct upl_reduce_cfg cfg = { .chans = chans, .nchans = 4 };
	/* channel 1: 10.0 kept (first), 10.4 no, 10.5 yes (moved 0.5 from 10.0),
	   10.6 no, 10.6 at +1 s yes (every); channel 2: 1 kept, 1 no, 2 yes;
	   channel 3 never; channel 4 always; the event always */
	struct acq_item it[] = {
		sample(1, S(0), 10.0), sample(2, S(0), 1), sample(3, S(0), 5), sample(4, S(0), 9),
		sample(1, S(100), 10.4), sample(2, S(100), 1), sample(3, S(100), 6), sample(4, S(100), 9),
		sample(1, S(200), 10.5), sample(2, S(200), 2),
		sample(1, S(300), 10.6), sample(1, S(1200), 10.6),
		{ .kind = ACQ_ITEM_EVENT, .t_ns = S(1300), .bus = 0xffff, .event = { .code = 1 } },
	};
	const uint64_t want[] = { 100, 101, 103, 107, 108, 109, 111, 112 };
	uint64_t seqs[64];
	upl_reducer_t *r;
	struct upl_reduce_stats st;
	size_t n;

	assert(upl_reduce_cfg_active(&cfg));
	assert(upl_reducer_new(&cfg, &r) == 0);
	n = reduce(r, it, sizeof(it) / sizeof(it[0]), 100, seqs);
	assert(n == sizeof(want) / sizeof(want[0]) && !memcmp(seqs, want, sizeof(want)));
	/* the next Batch continues from the last values sent: 10.9 is 0.4 from
	   10.6 (not sent), 11.1 is 0.5 (sent) */
	struct acq_item next[] = { sample(1, S(1300), 10.9), sample(1, S(1400), 11.1) };
	n = reduce(r, next, 2, 200, seqs);
	assert(n == 1 && seqs[0] == 201);
	/* a reset forgets them: the first of each channel goes again */
	upl_reducer_reset(r);
	n = reduce(r, next, 2, 300, seqs);
	assert(n == 1 && seqs[0] == 300);
	/* nothing passes: the last sendable sample goes, so the range has a time */
	struct acq_item quiet[] = { sample(1, S(1500), 10.9), sample(3, S(1500), 1) };
	n = reduce(r, quiet, 2, 400, seqs);
	assert(n == 1 && seqs[0] == 400);
	/* a quality change goes whatever the value */
	struct acq_item bad = sample(2, S(1600), 2);
	bad.sample.quality = ACQ_Q_INVALID;
	n = reduce(r, &bad, 1, 500, seqs);
	assert(n == 1 && seqs[0] == 500);
	upl_reducer_stats(r, &st);
	assert(st.batches == 5 && st.records_out == 8 + 1 + 1 + 1 + 1 && st.whole == 0 && st.errors == 0);
	upl_reducer_free(r);
	puts("policies: deadband, every, change, none, all, events; state across Batches, reset");
}

static void test_frames(void)
{
	struct upl_frame_range ranges[] = { { 0, 0x100, 0x100 }, { 0, 0x200, 0x2ff } };
	struct upl_reduce_cfg cfg = { .ranges = ranges, .nranges = 2 };
	struct acq_item it[4];
	uint32_t ids[4] = { 0x100, 0x1ff, 0x2ff, 0x300 };
	uint64_t seqs[8];
	upl_reducer_t *r;

	cfg.frames[0] = UPL_FRAMES_IDS;
	cfg.frames[1] = UPL_FRAMES_NONE;
	for (int i = 0; i < 4; i++)
		it[i] = (struct acq_item){ .kind = ACQ_ITEM_CAN, .t_ns = S(i + 1), .bus = 0,
		                           .can = { .id = ids[i], .len = 1, .data = { (uint8_t)i } } };
	assert(upl_reducer_new(&cfg, &r) == 0);
	assert(reduce(r, it, 4, 10, seqs) == 2 && seqs[0] == 10 && seqs[1] == 12);
	for (int i = 0; i < 4; i++)
		it[i].bus = 1;
	/* bus 1 none: nothing passes and no sample may stand in: the range
	   alone, no record */
	assert(reduce(r, it, 4, 20, seqs) == 0);
	upl_reducer_free(r);
	puts("frames: ids and ranges per bus, none");
}

static void test_whole_and_bad(void)
{
	struct upl_reduce_chan dup[] = { { 1, { UPL_POL_CHANGE, 0, 0 } }, { 1, { UPL_POL_NONE, 0, 0 } } };
	struct upl_reduce_chan neg[] = { { 1, { UPL_POL_DEADBAND, -1, 0 } } };
	struct upl_reduce_chan both[] = { { 1, { UPL_POL_NONE | UPL_POL_CHANGE, 0, 0 } } };
	struct upl_reduce_cfg cfg = { .chans = dup, .nchans = 2 };
	struct upl_reduce_cfg all = { 0 };
	struct rec_batch_meta meta = { .vehicle = "V" };
	struct rec_seal seal = { .version = 2, .vehicle = "V", .first_seq = 1, .end_seq = 5 };
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = 1, .bus = 0xffff, .event = { .code = 80, .arg = 4 } };
	const uint8_t *buf, *out = NULL;
	rec_encoder_t *enc;
	upl_reducer_t *r;
	size_t len, olen;

	assert(upl_reducer_new(&cfg, &r) == -EINVAL);
	cfg.chans = neg;
	cfg.nchans = 1;
	assert(upl_reducer_new(&cfg, &r) == -EINVAL);
	cfg.chans = both;
	assert(upl_reducer_new(&cfg, &r) == -EINVAL);
	assert(!upl_reduce_cfg_active(&all) && !upl_reduce_cfg_active(NULL));
	assert(upl_reducer_new(NULL, &r) == -EINVAL);
	cfg.chans = dup;
	cfg.nchans = 1;
	assert(upl_reducer_new(&cfg, &r) == 0);
	/* a Seal Batch goes whole (0), garbage too */
	seal.log_id[0] = 1;
	seal.boot_id[0] = 2;
	assert(rec_encoder_new(&meta, 4, &enc) == 0);
	assert(rec_encoder_add(enc, &ev) == 0);
	assert(rec_encoder_set_seal(enc, &seal) == 0);
	assert(rec_encoder_finish(enc, 5, &buf, &len) == 1);
	assert(upl_reducer_batch(r, buf, len, &out, &olen) == 0 && !out);
	assert(upl_reducer_batch(r, "\xff\xff\xff", 3, &out, &olen) == 0);
	assert(upl_reducer_batch(r, NULL, 3, &out, &olen) == -EINVAL);
	rec_encoder_free(enc);
	upl_reducer_free(r);
	assert(upl_reducer_free(NULL) == NULL);
	puts("whole: a Seal Batch and a malformed one; bad configurations refused");
}

static int count_batch(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *payload,
                       size_t len, void **log_ctx)
{
	(void)info, (void)b, (void)payload, (void)len, (void)log_ctx;
	++*(int *)ctx;
	return 0;
}

/* A source Batch of which nothing passes (raw frames none, no sample to
   stand in): the reduced Batch of no record still goes to the ledger's
   sinks (the ground log and the database) once, as its range on board,
   not a hole.  Catches: on_batch only for Batches with new records. */
static void test_ledger_nothing(void)
{
	struct upl_reduce_cfg cfg = { 0 };
	struct acq_item it[4];
	static uint8_t in[4096];
	struct grd_ledger_stats st;
	const uint8_t *out;
	grd_ledger_t *l;
	upl_reducer_t *r;
	rec_batch_t *dec;
	size_t len, olen;
	int batches = 0;

	cfg.frames[0] = UPL_FRAMES_NONE;
	for (int i = 0; i < 4; i++)
		it[i] = (struct acq_item){ .kind = ACQ_ITEM_CAN, .t_ns = S(5 + i), .bus = 0, .can = { .id = 1, .len = 0 } };
	assert(grd_ledger_new(&(struct grd_ledger_cfg){ .on_batch = count_batch, .ctx = &batches }, &l) == 0);
	assert(upl_reducer_new(&cfg, &r) == 0);
	len = batch(it, 4, 1, in);
	for (int k = 0; k < 2; k++) { /* the second time: the range is known, nothing handed on */
		assert(upl_reducer_batch(r, in, len, &out, &olen) == 1);
		assert(rec_batch_decode(out, olen, &dec) == 0);
		assert(grd_ledger_feed(l, &dec, out, olen) == 0);
		rec_batch_free(dec);
		assert(batches == 1);
	}
	assert(grd_ledger_stats(l, &st) == 0 && st.records == 0 && st.on_board == 4 && st.missing == 0);
	upl_reducer_free(r);
	grd_ledger_free(l);
	puts("ledger: a reduced Batch of no record handed on once, its range on board");
}

/* The ground's ledger (ground/ledger.c) given reduced Batches: the range
   counts as received, the seqs not sent "on board", never missing; the
   same range reduced again differently is no conflict; a hole after it is
   missing; seqs on board that arrive later (a re-reduction keeping more,
   the whole Batch of a request) are handed on once and leave on_board.
   Catches: a range taken as first_seq + count, records numbered
   contiguously, a re-reduction refused as a conflict, a whole Batch over a
   reduced range taken for duplicates (the requested records dropped), a
   record of the reduced Batch handed on again. */
static uint64_t handed[64]; /* how often on_record got each seq - 100 */

static int count_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                        const struct acq_item *item, bool first, void **log_ctx)
{
	(void)ctx, (void)info, (void)b, (void)first, (void)log_ctx;
	assert(item->seq >= 100 && item->seq < 164);
	handed[item->seq - 100]++;
	return 0;
}

static void test_ledger(void)
{
	struct upl_reduce_chan ch[] = { { 1, { UPL_POL_DEADBAND, 1.0, 0 } } };
	struct upl_reduce_cfg cfg = { .chans = ch, .nchans = 1 };
	struct acq_item a[] = { sample(1, S(0), 0), sample(1, S(1), 0.5), sample(1, S(2), 0.7), sample(1, S(3), 1.2) };
	struct acq_item b[10];
	static uint8_t in[4096], red[4096];
	struct grd_ledger_stats st;
	struct grd_ledger_log lg;
	grd_ledger_t *l;
	upl_reducer_t *r;
	const uint8_t *out;
	rec_batch_t *dec;
	size_t len, olen;

	for (int i = 0; i < 10; i++)
		b[i] = sample(1, S(10 + i), 5);
	assert(grd_ledger_new(&(struct grd_ledger_cfg){ .on_record = count_record }, &l) == 0);
	assert(upl_reducer_new(&cfg, &r) == 0);
	/* [100, 104) keeps 100 (first) and 103 (1.2 >= 0 + 1) */
	len = batch(a, 4, 100, in);
	assert(upl_reducer_batch(r, in, len, &out, &olen) == 1);
	memcpy(red, out, olen);
	assert(rec_batch_decode(red, olen, &dec) == 0);
	assert(grd_ledger_feed(l, &dec, red, olen) == 2);
	rec_batch_free(dec);
	assert(grd_ledger_stats(l, &st) == 0 && st.records == 2 && st.on_board == 2 && st.missing == 0 &&
	       st.reduced == 1);
	/* the same range reduced otherwise (a restarted forwarder; here a
	   deadband of 0.4: 100, 101, 103): no conflict; 101 was on board and
	   arrives now (handed on), 100 and 103 are duplicates */
	ch[0].pol.deadband = 0.4;
	upl_reducer_free(r);
	assert(upl_reducer_new(&cfg, &r) == 0);
	assert(upl_reducer_batch(r, in, len, &out, &olen) == 1);
	assert(rec_batch_decode(out, olen, &dec) == 0);
	assert(grd_ledger_feed(l, &dec, out, olen) == 1);
	rec_batch_free(dec);
	assert(grd_ledger_stats(l, &st) == 0 && st.records == 3 && st.on_board == 1 && st.duplicates == 2);
	/* the stored Batch whole over it (a request's answer): the one still
	   on board, 102, is new; the rest duplicates, not a conflict.  (Before
	   the on-board set all four were duplicates and 102 was lost.) */
	assert(rec_batch_decode(in, len, &dec) == 0);
	assert(grd_ledger_feed(l, &dec, in, len) == 1);
	rec_batch_free(dec);
	assert(grd_ledger_stats(l, &st) == 0 && st.refused[GRD_LEDGER_CONFLICT] == 0 && st.records == 4 &&
	       st.on_board == 0 && st.missing == 0 && st.duplicates == 5);
	for (int i = 0; i < 4; i++)
		assert(handed[i] == 1);
	/* [110, 120) after a hole of 6: one kept, 9 on board, 6 missing */
	len = batch(b, 10, 110, in);
	assert(upl_reducer_batch(r, in, len, &out, &olen) == 1);
	assert(rec_batch_decode(out, olen, &dec) == 0);
	assert(grd_ledger_feed(l, &dec, out, olen) == 1);
	rec_batch_free(dec);
	assert(grd_ledger_stats(l, &st) == 0 && st.records == 5 && st.on_board == 9 && st.missing == 6);
	assert(grd_ledger_log(l, 0, &lg) == 0 && lg.first_seq == 100 && lg.next_seq == 120 && lg.on_board == 9 &&
	       lg.missing == 6 && lg.reduced == 2);
	/* its whole Batch: the 9 on board arrive, each handed on once */
	assert(rec_batch_decode(in, len, &dec) == 0);
	assert(grd_ledger_feed(l, &dec, in, len) == 9);
	rec_batch_free(dec);
	assert(grd_ledger_stats(l, &st) == 0 && st.records == 14 && st.on_board == 0 && st.missing == 6);
	for (int i = 10; i < 20; i++)
		assert(handed[i] == 1);
	for (int i = 4; i < 10; i++)
		assert(handed[i] == 0);
	upl_reducer_free(r);
	grd_ledger_free(l);
	puts("ledger: reduced ranges received, the rest on board, a hole after them missing, no conflict");
}

int main(void)
{
	test_policies();
	test_frames();
	test_whole_and_bad();
	test_ledger();
	test_ledger_nothing();
	puts("test-reducer: ok");
	return 0;
}
