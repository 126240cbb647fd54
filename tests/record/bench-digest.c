/* SPDX-License-Identifier: MIT */
/*
 * bench-digest.c - "the same records?" per Batch as bench-ground's
 * Batches make it (1,000 samples): the FNV-1a digest the ground database
 * stores (rec_batch_digest, the baseline) against the keyed hash the
 * ground's in-memory ledger uses (rec_batch_hash), in the same run, as a
 * ratio.  ROUNDS rounds of N Batches each, alternating which goes first;
 * the median round.  No timing assertion: figures only.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record/batch.h"
#include "record/digest.h"

#define SAMPLES 1000
#define N 2000
#define ROUNDS 9

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* seconds for N hashes of b; *sink keeps the work from being optimised out */
static double run(const rec_batch_t *b, bool fnv, uint64_t *sink)
{
	double t = now_s();

	for (int i = 0; i < N; i++)
		*sink ^= fnv ? rec_batch_digest(b, SAMPLES, (uint64_t)i) : rec_batch_hash(b, SAMPLES, (uint64_t)i);
	return now_s() - t;
}

int main(void)
{
	struct rec_batch_meta meta = { .vehicle = "bv0", .config_hash = 7 };
	double fnv[ROUNDS], keyed[ROUNDS];
	rec_encoder_t *enc;
	const uint8_t *buf;
	rec_batch_t *b;
	uint64_t sink = 0;
	size_t len;

	assert(rec_encoder_new(&meta, SAMPLES, &enc) == 0);
	for (int i = 0; i < SAMPLES; i++) {
		struct acq_item it = { .t_ns = INT64_C(1700000000000000000) + i * 1000, .kind = ACQ_ITEM_SAMPLE };

		it.sample.channel = (uint16_t)(i % 50);
		it.sample.value = (1 + i) * 0.5;
		assert(rec_encoder_add(enc, &it) == 0);
	}
	assert(rec_encoder_finish(enc, 1, &buf, &len) == SAMPLES);
	assert(rec_batch_decode(buf, len, &b) == 0);
	rec_encoder_free(enc);
	for (int r = 0; r < ROUNDS; r++) {
		if (r % 2) {
			keyed[r] = run(b, false, &sink);
			fnv[r] = run(b, true, &sink);
		} else {
			fnv[r] = run(b, true, &sink);
			keyed[r] = run(b, false, &sink);
		}
	}
	qsort(fnv, ROUNDS, sizeof(*fnv), cmp);
	qsort(keyed, ROUNDS, sizeof(*keyed), cmp);
	printf("per Batch of %d samples, median of %d rounds of %d (sink %016llx)\n", SAMPLES, ROUNDS, N,
	       (unsigned long long)sink);
	printf("| what | us per Batch | ratio |\n|---|---|---|\n");
	printf("| FNV-1a digest, stored by the database (baseline) | %.1f | 1.00x |\n", fnv[ROUNDS / 2] / N * 1e6);
	printf("| keyed hash, the ground's in-memory ledger | %.1f | %.2fx faster |\n", keyed[ROUNDS / 2] / N * 1e6,
	       fnv[ROUNDS / 2] / keyed[ROUNDS / 2]);
	rec_batch_free(b);
	return 0;
}
