/* SPDX-License-Identifier: MIT */
/*
 * fuzz-batch.c - libFuzzer target: arbitrary bytes on railmon/<v>/data.
 *
 * Drives what `railmon recv` does with a message: upl_recv_feed()
 * decodes and validates the Batch and hands it to the ground's ledger
 * (grd_ledger_feed(), ground/ledger.c), which tracks sequence ranges, and
 * each record it hands out goes through record/'s writer in the format the
 * first byte picks (CSV, JSON lines or candump, to /dev/null), named
 * from the Batch's own dictionary, with the vehicle and log id it
 * claims.  Each input is fed twice (the second time it is all
 * duplicates) and then as the tail of itself, so the range bookkeeping
 * sees overlaps; the first byte also picks the topic check.  A fresh
 * receiver and ledger per input keep runs reproducible.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "record/channels.h"
#include "record/format.h"
#include "record/timefix.h"
#include "ground/ledger.h"
#include "uplink/recv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct sink {
	FILE *out;
	enum rec_format fmt;
	rec_channels_t *names;
};

static FILE *devnull(void)
{
	static FILE *out;

	if (!out)
		out = fopen("/dev/null", "w");
	if (!out)
		abort();
	return out;
}

/* As cli/recv-cmd.c's on_record does it. */
static int write_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                        const struct acq_item *it, bool first, void **log_ctx)
{
	struct sink *s = ctx;
	struct rec_origin o = { info->vehicle, info->log_id, info->log_id_len };
	struct rec_names nm;

	if (first)
		rec_channels_learn(s->names, b);
	nm = rec_channels_names(s->names, it);
	return rec_format_item(s->out, s->fmt, it, &nm, &o);
}

static void feed(const uint8_t *data, size_t size, enum rec_format fmt)
{
	struct sink s = { devnull(), fmt, NULL };
	struct grd_ledger_cfg lcfg = { .on_record = write_record, .ctx = &s };
	struct upl_recv_cfg cfg = { .client_id = "fuzz", .on_data = grd_ledger_feed };
	const char *topic = size && (data[0] & 1) ? "railmon/tram7/data" : NULL;
	grd_ledger_t *l;
	upl_recv_t *r;

	if (rec_channels_new(&s.names) < 0 || grd_ledger_new(&lcfg, &l) < 0)
		abort();
	cfg.data_ctx = l;
	if (upl_recv_new(&cfg, &r) < 0)
		abort();
	upl_recv_feed(r, topic, data, size);
	upl_recv_feed(r, topic, data, size);
	if (size > 1)
		upl_recv_feed(r, NULL, data + 1, size - 1);
	upl_recv_free(r);
	grd_ledger_free(l);
	rec_channels_free(s.names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_batch_info info;
	rec_batch_t *b = NULL;

	feed(data, size, size ? (enum rec_format)((data[0] >> 1) % REC_FORMAT_MAX) : REC_FORMAT_JSONL);

	/* Also walk every record and dictionary entry the decoder accepts,
	   and correct their times as export --corrected-time does (any
	   t0_ns, mono_t0_ns and record time: overflow is refused, not UB). */
	if (rec_batch_decode(data, size, &b) == 0 && rec_batch_info(b, &info) == 0) {
		struct acq_item it;
		struct rec_channel ch;
		rec_timefix_t *tf;

		if (rec_timefix_new(&tf) < 0 || rec_timefix_learn(tf, b) < 0)
			abort();
		for (uint32_t i = 0; i < info.count; i++)
			if (rec_batch_item(b, i, &it) < 0 || rec_timefix_apply(tf, &info, &it) < 0)
				abort();
		rec_timefix_free(tf);
		for (size_t i = 0; i < info.nchannels; i++)
			if (rec_batch_channel(b, i, &ch) < 0)
				abort();
	}
	rec_batch_free(b);
	return 0;
}
