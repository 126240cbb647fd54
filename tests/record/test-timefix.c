/* SPDX-License-Identifier: MIT */
/*
 * test-timefix.c - the monotonic base of a Batch (field 15) and the
 * correction of stepped times (record/timefix.h), on an injected clock:
 * a run whose CLOCK_REALTIME is stepped forward by an hour and back, and
 * whose records, corrected, lie on one clock that never steps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "record/batch.h"
#include "record/timefix.h"
#include "tlib.h"

#define HOUR_NS 3600000000000ll
#define MS_NS 1000000ll
#define TRUE_OFFSET 1796000000000000000ll /* realtime - monotonic when the clock is right */

struct fake_run {
	rec_encoder_t *enc;
	uint8_t *bufs[64];
	size_t lens[64], n;
	uint64_t seq;
};

static void run_new(struct fake_run *r, uint8_t boot)
{
	struct rec_batch_meta meta = { .vehicle = "loco" };

	memset(r, 0, sizeof(*r));
	memset(meta.boot_id, boot, sizeof(meta.boot_id));
	r->seq = 1;
	CHECK(rec_encoder_new(&meta, 64, &r->enc) == 0);
}

static void run_batch(struct fake_run *r)
{
	const uint8_t *buf;
	size_t len;
	int n = rec_encoder_finish(r->enc, r->seq, &buf, &len);

	CHECK(n >= 0);
	r->seq += (uint64_t)n;
	r->bufs[r->n] = malloc(len);
	memcpy(r->bufs[r->n], buf, len);
	r->lens[r->n++] = len;
}

/* A sample stamped at monotonic time mono with the clock off by offset. */
static void run_sample(struct fake_run *r, int64_t mono, int64_t offset, double v)
{
	struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = mono + offset, .bus = 0 };

	it.sample.channel = 1;
	it.sample.value = v;
	CHECK(rec_encoder_add(r->enc, &it) == 0);
}

static void run_clock_health(struct fake_run *r, bool unsynced)
{
	struct rec_health h = { .name = "clock", .kind = "clock", .bus = ACQ_SOURCE_DAEMON,
	                        .clock_unsynced = unsynced, .clock_max_error_us = 16000000,
	                        .clock_est_error_us = 1234, .clock_status = unsynced ? 0x40 : 0x1 };

	CHECK(rec_encoder_add_health(r->enc, &h) == 0);
}

static void run_free(struct fake_run *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->bufs[i]);
	rec_encoder_free(r->enc);
}

/*
 * Ten Batches of ten samples, one every 10 ms of monotonic time, sample
 * value = its true monotonic time in ms.  The clock is right, then an hour
 * ahead from Batch 3 (a wrong `date -s`), then right again from Batch 7.
 * Corrected, every sample is at mono + the last offset, exactly.
 */
static void test_step_and_back(void)
{
	struct fake_run r;
	rec_timefix_t *tf;
	int64_t prev = INT64_MIN;
	uint64_t runs, steps, corrected = 0;

	run_new(&r, 7);
	for (int b = 0; b < 10; b++) {
		int64_t off = TRUE_OFFSET + (b >= 3 && b < 7 ? HOUR_NS : 0);
		rec_encoder_set_clock_offset(r.enc, off);
		for (int k = 0; k < 10; k++) {
			int64_t mono = 5000 * MS_NS + (b * 10 + k) * 10 * MS_NS;
			run_sample(&r, mono, off, (double)(mono / MS_NS));
		}
		run_batch(&r);
	}
	CHECK(rec_timefix_new(&tf) == 0);
	for (size_t i = 0; i < r.n; i++) {
		rec_batch_t *b;
		struct rec_batch_info info;
		CHECK(rec_batch_decode(r.bufs[i], r.lens[i], &b) == 0);
		CHECK(rec_batch_info(b, &info) == 0);
		/* the base written is t0 minus the offset the records had */
		CHECK(info.mono_t0_ns == 5000 * MS_NS + (int64_t)i * 100 * MS_NS, "batch %zu base %lld", i,
		      (long long)info.mono_t0_ns);
		CHECK(rec_timefix_learn(tf, b) == 0);
		rec_batch_free(b);
	}
	rec_timefix_counts(tf, &runs, &steps);
	CHECK(runs == 1 && steps == 2, "runs %llu steps %llu", (unsigned long long)runs, (unsigned long long)steps);
	for (size_t i = 0; i < r.n; i++) {
		rec_batch_t *b;
		struct rec_batch_info info;
		CHECK(rec_batch_decode(r.bufs[i], r.lens[i], &b) == 0);
		rec_batch_info(b, &info);
		for (size_t k = 0; k < info.count; k++) {
			struct acq_item it;
			CHECK(rec_batch_item(b, k, &it) == 0);
			CHECK(rec_timefix_apply(tf, &info, &it) == 1);
			CHECK(it.t_ns == (int64_t)it.sample.value * MS_NS + TRUE_OFFSET, "batch %zu record %zu", i, k);
			CHECK(it.t_ns > prev, "corrected times rise");
			prev = it.t_ns;
			corrected++;
		}
		rec_batch_free(b);
	}
	CHECK(corrected == 100);
	rec_timefix_free(tf);
	run_free(&r);
}

/*
 * The reference is the last offset written while the kernel said the clock
 * was synchronised, not a later step of an unsynchronised clock.  A second
 * run (another boot id) has its own reference; a Batch without a base (a
 * replay, an old writer) is left as recorded.
 */
static void test_trusted_reference(void)
{
	struct fake_run r, r2;
	rec_timefix_t *tf;
	struct acq_item it;
	struct rec_batch_info info;
	rec_batch_t *b;

	run_new(&r, 1);
	rec_encoder_set_clock_offset(r.enc, TRUE_OFFSET);
	run_clock_health(&r, false);
	run_sample(&r, 1000 * MS_NS, TRUE_OFFSET, 1000);
	run_batch(&r);
	/* someone sets the clock 20 s back; the kernel drops its sync */
	rec_encoder_set_clock_offset(r.enc, TRUE_OFFSET - 20000 * MS_NS);
	run_clock_health(&r, true);
	run_sample(&r, 2000 * MS_NS, TRUE_OFFSET - 20000 * MS_NS, 2000);
	run_batch(&r);
	/* a Batch without a base */
	rec_encoder_clear_clock_offset(r.enc);
	run_sample(&r, 3000 * MS_NS, TRUE_OFFSET - 20000 * MS_NS, 3000);
	run_batch(&r);

	run_new(&r2, 2);
	rec_encoder_set_clock_offset(r2.enc, TRUE_OFFSET + 5 * MS_NS);
	run_sample(&r2, 9000 * MS_NS, TRUE_OFFSET + 5 * MS_NS, 9000);
	run_batch(&r2);

	CHECK(rec_timefix_new(&tf) == 0);
	for (size_t i = 0; i < r.n; i++) {
		CHECK(rec_batch_decode(r.bufs[i], r.lens[i], &b) == 0);
		CHECK(rec_timefix_learn(tf, b) == 0);
		rec_batch_free(b);
	}
	CHECK(rec_batch_decode(r2.bufs[0], r2.lens[0], &b) == 0);
	CHECK(rec_timefix_learn(tf, b) == 0);
	rec_batch_free(b);

	CHECK(rec_batch_decode(r.bufs[1], r.lens[1], &b) == 0);
	rec_batch_info(b, &info);
	rec_batch_item(b, 0, &it);
	CHECK(rec_timefix_apply(tf, &info, &it) == 1);
	CHECK(it.t_ns == 2000 * MS_NS + TRUE_OFFSET, "on the synchronised clock, not the stepped one");
	rec_batch_free(b);

	CHECK(rec_batch_decode(r.bufs[2], r.lens[2], &b) == 0);
	rec_batch_info(b, &info);
	CHECK(info.mono_t0_ns == 0);
	rec_batch_item(b, 0, &it);
	CHECK(rec_timefix_apply(tf, &info, &it) == 0);
	CHECK(it.t_ns == 3000 * MS_NS + TRUE_OFFSET - 20000 * MS_NS, "left as recorded");
	rec_batch_free(b);

	CHECK(rec_batch_decode(r2.bufs[0], r2.lens[0], &b) == 0);
	rec_batch_info(b, &info);
	rec_batch_item(b, 0, &it);
	CHECK(rec_timefix_apply(tf, &info, &it) == 1);
	CHECK(it.t_ns == 9000 * MS_NS + TRUE_OFFSET + 5 * MS_NS, "its own run's reference");
	/* the health entry's clock fields go through the codec */
	rec_batch_free(b);
	CHECK(rec_batch_decode(r.bufs[1], r.lens[1], &b) == 0);
	{
		struct rec_health h;
		CHECK(rec_batch_health(b, 0, &h) == 0);
		CHECK(h.clock_unsynced && h.clock_max_error_us == 16000000 && h.clock_est_error_us == 1234 &&
		      h.clock_status == 0x40);
	}
	/* bad arguments */
	CHECK(rec_timefix_learn(NULL, b) == -EINVAL);
	CHECK(rec_timefix_learn(tf, NULL) == -EINVAL);
	CHECK(rec_timefix_apply(tf, NULL, &it) == -EINVAL);
	CHECK(rec_timefix_apply(NULL, &info, &it) == -EINVAL);
	CHECK(rec_timefix_new(NULL) == -EINVAL);
	CHECK(rec_timefix_free(NULL) == NULL);
	rec_batch_free(b);
	rec_timefix_free(tf);
	run_free(&r);
	run_free(&r2);
}

int main(void)
{
	test_step_and_back();
	test_trusted_reference();
	return 0;
}
