/* SPDX-License-Identifier: MIT */
/*
 * stor-source.h - the board's glue from a stor_reader_t to the forwarder's
 * struct upl_source (as documented in uplink/README.md), for the tests that
 * run the forwarder on the real flash log.
 */
#pragma once

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

static inline struct upl_source stor_source(stor_reader_t *reader)
{
	return (struct upl_source){ .seek = stor_src_seek, .next = stor_src_next,
	                            .seek_time = stor_src_seek_time, .ctx = reader };
}
