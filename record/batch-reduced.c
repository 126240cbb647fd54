/* SPDX-License-Identifier: MIT */
/*
 * batch-reduced.c - the fields that make an encoded Batch a reduced one
 * (railmon.proto: reduced, source_end_seq, seq_delta), written by hand and
 * appended, as the forwarder appends Batch.historical: the records
 * themselves are encoded once by rec_encoder, and every protobuf parser
 * merges fields that follow a message.  The decoder's checks are
 * batch.c's batch_check_reduced().
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

int rec_reduced_tail(uint64_t first_seq, uint64_t end_seq, const uint64_t *seqs, size_t n, uint8_t *buf,
                     size_t cap)
{
	uint64_t prev = first_seq;
	size_t packed = 0, k = 0;

	if ((!seqs && n) || !buf || end_seq <= first_seq || end_seq - first_seq > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		/* the first may be first_seq itself (delta 0), the rest must grow */
		if (seqs[i] >= end_seq || seqs[i] < prev || (i && seqs[i] == prev))
			return -EINVAL;
		packed += varint_len(seqs[i] - prev);
		prev = seqs[i];
	}
	if (cap < 3 + 2 + varint_len(end_seq) + (n ? 2 + varint_len(packed) + packed : 0))
		return -ENOBUFS;
	/* field 18 reduced (varint) = 1: tag 18 << 3 | 0 = 144, two bytes */
	k += put_varint(buf + k, 18 << 3 | 0);
	buf[k++] = 1;
	/* field 19 source_end_seq (varint) */
	k += put_varint(buf + k, 19 << 3 | 0);
	k += put_varint(buf + k, end_seq);
	/* field 20 seq_delta, packed (length-delimited); none when no record */
	if (n) {
		k += put_varint(buf + k, 20 << 3 | 2);
		k += put_varint(buf + k, packed);
		prev = first_seq;
		for (size_t i = 0; i < n; i++) {
			k += put_varint(buf + k, seqs[i] - prev);
			prev = seqs[i];
		}
	}
	return (int)k;
}

int rec_reduced_t0(int64_t t0_ns, uint8_t *buf, size_t cap)
{
	/* sint64: zigzag */
	uint64_t z = ((uint64_t)t0_ns << 1) ^ (uint64_t)(t0_ns >> 63);
	size_t k = 0;

	if (!buf)
		return -EINVAL;
	if (cap < 1 + varint_len(z))
		return -ENOBUFS;
	/* field 6 t0_ns (varint): tag 6 << 3 | 0 = 48 */
	k += put_varint(buf + k, 6 << 3 | 0);
	k += put_varint(buf + k, z);
	return (int)k;
}
