/* SPDX-License-Identifier: MIT */
/*
 * fuzz-verify.c - libFuzzer target: the evidence verifier (evidence/evd.h)
 * on arbitrary records, as `railmon verify` feeds it a log.
 *
 * Input: one flags byte (bit 0: check signatures, bit 1: --whole), a
 * 32-byte public key, then records, each [u32 LE length][payload]; a
 * length of 0xffffffff is a fault the log's reader reported instead.  A
 * record's seq range is the one its Batch claims when it decodes (so the
 * Seals and their chains are exercised), else the next seq.  The seeds
 * (corpus/verify) are real signed logs: their key and their frames.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "evidence/evd.h"
#include "record/batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The range the record's Batch claims, else [next, next + 1). */
static void rec_range(struct stor_rec *rec, uint64_t next)
{
	struct rec_batch_info info;
	rec_batch_t *b;

	rec->first_seq = next ? next : 1;
	rec->count = 1;
	if (rec_batch_decode(rec->payload, rec->len, &b) < 0)
		return;
	rec_batch_info(b, &info);
	if (info.first_seq && info.count && info.first_seq < UINT64_MAX / 2) {
		rec->first_seq = info.first_seq;
		rec->count = info.count;
		rec->t_first_ns = info.t0_ns;
		rec->t_last_ns = info.t0_ns;
	}
	rec_batch_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evd_verify_cfg cfg = { 0 };
	struct evd_problem p;
	struct evd_result res;
	evd_verifier_t *v;
	uint64_t next = 1, k = 0;
	size_t off = 1 + EVD_PUBLIC_LEN;

	if (size < off)
		return 0;
	cfg.public_key = data[0] & 1 ? data + 1 : NULL;
	cfg.whole = data[0] & 2;
	if (evd_verifier_new(&cfg, &v) < 0)
		return 0;
	while (off + 4 <= size) {
		uint32_t len = le32(data + off);
		struct stor_rec rec = { .segment = 1, .offset = off };

		off += 4;
		if (len == UINT32_MAX) {
			struct stor_fault f = { .kind = (enum stor_fault_kind)(k++ % STOR_FAULT_KIND_MAX),
			                        .err = -74, .segment = 1, .offset = off,
			                        .lost_first = next, .lost_end = next + 1 };
			evd_verifier_fault(v, &f, &p);
			continue;
		}
		if (len > size - off)
			len = (uint32_t)(size - off);
		rec.payload = data + off;
		rec.len = len;
		rec_range(&rec, next);
		if (evd_verifier_record(v, &rec, &p) < 0)
			break;
		next = rec.first_seq + rec.count;
		off += len;
	}
	evd_verifier_end(v, NULL, &p);
	evd_verifier_result(v, &res);
	evd_verifier_free(v);
	return 0;
}
