/* SPDX-License-Identifier: MIT */
/*
 * fuzz-batch.c - libFuzzer target: arbitrary bytes on railmon/<v>/data.
 *
 * Drives exactly what `railmon recv` does with a message: upl_recv_feed()
 * decodes and validates the Batch, tracks sequence ranges and writes JSON
 * lines and CSV (to /dev/null).  Each input is fed twice (the second time
 * it is all duplicates) and then as the tail of itself, so the range
 * bookkeeping sees overlaps; the first byte picks the topic check.  A
 * fresh receiver per input keeps runs reproducible.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "uplink/recv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull(void)
{
	static FILE *out;

	if (!out)
		out = fopen("/dev/null", "w");
	if (!out)
		abort();
	return out;
}

static void feed(const uint8_t *data, size_t size, enum upl_recv_format fmt)
{
	struct upl_recv_cfg cfg = { .client_id = "fuzz", .format = fmt, .out = devnull() };
	const char *topic = size && (data[0] & 1) ? "railmon/tram7/data" : NULL;
	upl_recv_t *r;

	if (upl_recv_new(&cfg, &r) < 0)
		abort();
	upl_recv_feed(r, topic, data, size);
	upl_recv_feed(r, topic, data, size);
	if (size > 1)
		upl_recv_feed(r, NULL, data + 1, size - 1);
	upl_recv_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct upl_batch_info info;
	upl_batch_t *b = NULL;

	feed(data, size, size && (data[0] & 2) ? UPL_RECV_CSV : UPL_RECV_JSONL);

	/* Also walk every record and dictionary entry the decoder accepts. */
	if (upl_batch_decode(data, size, &b) == 0 && upl_batch_info(b, &info) == 0) {
		struct acq_item it;
		struct upl_channel ch;

		for (uint32_t i = 0; i < info.count; i++)
			if (upl_batch_item(b, i, &it) < 0)
				abort();
		for (size_t i = 0; i < info.nchannels; i++)
			if (upl_batch_channel(b, i, &ch) < 0)
				abort();
	}
	upl_batch_free(b);
	return 0;
}
