/* SPDX-License-Identifier: MIT */
/*
 * fuzz-batch.c - libFuzzer target: arbitrary bytes on railmon/<v>/data.
 *
 * Drives exactly what `railmon recv` does with a message: upl_recv_feed()
 * decodes and validates the Batch, tracks sequence ranges and writes JSON
 * lines (to /dev/null).  One receiver lives across inputs, so the range
 * bookkeeping also sees long, hostile histories.  The first input byte
 * picks the topic check, so mismatching vehicles are exercised too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "uplink/recv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static upl_recv_t *recv_once(void)
{
	static upl_recv_t *r;
	static FILE *out;

	if (!r) {
		struct upl_recv_cfg cfg = { .client_id = "fuzz", .format = UPL_RECV_JSONL };

		out = fopen("/dev/null", "w");
		if (!out)
			abort();
		cfg.out = out;
		if (upl_recv_new(&cfg, &r) < 0)
			abort();
	}
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	upl_recv_t *r = recv_once();
	const char *topic = NULL;
	struct upl_batch_info info;
	upl_batch_t *b = NULL;

	if (size && (data[0] & 1))
		topic = "railmon/tram7/data";
	upl_recv_feed(r, topic, data, size);

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
