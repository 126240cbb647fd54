/* SPDX-License-Identifier: MIT */
/*
 * test-sink-clock.c - the sink writes every Batch's monotonic base from
 * the real clocks (docs/time.md): a live sink's Batches (data, its own
 * events, the Seal) carry mono_t0_ns with t0_ns - mono_t0_ns the offset of
 * this machine's clocks, to within a millisecond; a replay's (a
 * deterministic sink) carry none.  A real log in a temp directory.
 */
#include <stdio.h>
#include <stdlib.h>

#include "basic/clock.h"
#include "pipeline/clockwatch.h"
#include "pipeline/sink.h"
#include "record/batch.h"
#include "stor-test-util.h"
#include "tlib.h"

#define MS 1000000ll

/* Batches with records, and how many of them carry a base within 1 ms
   of the clocks' offset now. */
static void read_back(const char *dir, bool live, uint64_t *ret_batches, uint64_t *ret_based)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	int64_t real, mono, off;
	uint64_t batches = 0, based = 0;
	int k;

	pl_clock_read(&real, &mono);
	off = real - mono;
	CHECK(stor_reader_open(dir, &rd) == 0);
	while ((k = stor_reader_next(rd, &rec)) > 0) {
		rec_batch_t *b;
		struct rec_batch_info info;
		CHECK(rec_batch_decode(rec.payload, rec.len, &b) == 0);
		rec_batch_info(b, &info);
		if (info.count) {
			batches++;
			if (live)
				CHECK(llabs(info.t0_ns - info.mono_t0_ns - off) < MS, "batch at seq %llu: offset %lld, "
				      "clocks %lld", (unsigned long long)info.first_seq,
				      (long long)(info.t0_ns - info.mono_t0_ns), (long long)off);
			based += info.mono_t0_ns != 0;
		}
		rec_batch_free(b);
	}
	CHECK(k == 0);
	stor_reader_free(rd);
	*ret_batches = batches;
	*ret_based = based;
}

static void run(bool live)
{
	char *dir = tu_tmpdir_in("sink-clock", true);
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "CLOCK", .segment_bytes = 1 << 20 };
	struct rec_batch_meta meta = { .vehicle = "CLOCK", .config_hash = 7 };
	stor_log_t *log;
	pl_sink_t *sink;
	uint64_t batches, based;

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(pl_sink_new(&(struct pl_sink_cfg){ .log = log, .meta = &meta, .batch_max = 16, .batch_ms = 1000,
	                                         .meta_interval_s = 3600, .deterministic = !live }, &sink) == 0);
	pl_sink_event(sink, ACQ_EV_START, 1);
	for (int i = 0; i < 100; i++) {
		struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = basic_realtime_ns(), .bus = 0 };
		it.sample.channel = 1;
		it.sample.value = i;
		pl_sink_items(sink, &it, 1);
		pl_sink_tick(sink);
	}
	pl_sink_close(sink);
	pl_sink_free(sink);
	stor_log_free(log);
	read_back(dir, live, &batches, &based);
	/* 100 samples in 16s, the events, the Seal */
	CHECK(batches >= 8, "%llu batches", (unsigned long long)batches);
	if (live)
		CHECK(based == batches, "%llu of %llu batches with a base", (unsigned long long)based,
		      (unsigned long long)batches);
	else
		CHECK(based == 0, "a replay's batches carry no base (%llu do)", (unsigned long long)based);
	printf("%s sink: %llu batches, %llu with a monotonic base%s\n", live ? "live" : "replay",
	       (unsigned long long)batches, (unsigned long long)based, live ? " within 1 ms of the clocks' offset" : "");
	tu_rm_rf(dir);
	free(dir);
}

int main(void)
{
	run(true);
	run(false);
	return 0;
}
