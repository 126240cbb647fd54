/* SPDX-License-Identifier: MIT */
/*
 * stor-source.h - the board's glue from a stor_reader_t to the forwarder's
 * struct upl_source (as documented in uplink/README.md), for the tests that
 * run the forwarder on the real flash log, and a small real log to run it
 * on.
 */
#pragma once

#include "fixture.h"
#include "storage/stor.h"
#include "uplink/forward.h"

static inline int stor_src_seek(void *ctx, uint64_t seq)
{
	return stor_reader_seek_seq(ctx, seq);
}

static inline int stor_src_next(void *ctx, struct upl_rec *ret)
{
	struct stor_rec r;
	int k = stor_reader_next(ctx, &r);

	if (k == 1)
		*ret = (struct upl_rec){ r.first_seq, r.count, r.t_last_ns, r.payload, r.len, r.t_first_ns };
	return k;
}

static inline int stor_src_seek_time(void *ctx, int64_t t_ns)
{
	return stor_reader_seek_time(ctx, t_ns);
}

static inline int stor_src_last_before(void *ctx, int64_t t_ns, uint64_t *ret_first_seq, uint32_t *ret_count)
{
	struct stor_rec r;
	int k = stor_reader_last_before(ctx, t_ns, &r);

	if (k == 1) {
		*ret_first_seq = r.first_seq;
		*ret_count = r.count;
	}
	return k;
}

static inline struct upl_source stor_source(stor_reader_t *reader)
{
	return (struct upl_source){ .seek = stor_src_seek, .next = stor_src_next,
	                            .seek_time = stor_src_seek_time, .last_before = stor_src_last_before,
	                            .ctx = reader };
}

/* Append n Batches of counts[i] of g's records to log, the first from seq
   on, their records 1 ms apart; Batch i starts at g's time at the call
   + i * every_ns, or right after the Batch before when every_ns is 0.
   Each Batch's first seq in ret_first[i], its last record's time in
   ret_t_last[i] (NULL: not wanted); then synced.  CHECKs. */
static inline void stor_log_fill(stor_log_t *log, struct gen *g, const uint32_t *counts, size_t n, uint64_t seq,
                                 int64_t every_ns, uint64_t *ret_first, int64_t *ret_t_last)
{
	int64_t t0 = g->t_ns;

	for (size_t i = 0; i < n; i++) {
		struct stor_rec rec = { .first_seq = seq, .count = counts[i] };
		const uint8_t *buf;
		size_t len;

		if (every_ns)
			g->t_ns = t0 + (int64_t)i * every_ns;
		rec.t_first_ns = g->t_ns;
		for (uint32_t k = 0; k < counts[i]; k++) {
			struct acq_item it;

			gen_item(g, g->t_ns, &it);
			rec.t_last_ns = g->t_ns;
			g->t_ns += 1000000;
			CHECK(rec_encoder_add(g->enc, &it) == 0);
		}
		CHECK(rec_encoder_finish(g->enc, seq, &buf, &len) == (int)counts[i]);
		rec.payload = buf;
		rec.len = (uint32_t)len;
		CHECK(stor_log_append(log, &rec) == 0);
		ret_first[i] = seq;
		if (ret_t_last)
			ret_t_last[i] = rec.t_last_ns;
		seq += counts[i];
	}
	CHECK(stor_log_sync(log) == 0);
}
