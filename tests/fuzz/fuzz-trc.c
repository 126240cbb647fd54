/* SPDX-License-Identifier: MIT */
/*
 * fuzz-trc: the text trace readers on arbitrary files: each line through
 * the PEAK TRC reader (trace/trc.c) and, with its own state, the Vector ASC
 * reader (trace/asc.c) and the parser of candump's screen output
 * (trace/candump-screen.c), and the whole input through the detection: no
 * out-of-bounds access, and only frames that are frames.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/candump.h"
#include "trace/trace-fmt.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int r, const struct acq_item *it, unsigned ch)
{
	assert(r == TRACE_FRAME || r == TRACE_SKIP || r == -EBADMSG);
	if (r != TRACE_FRAME)
		return;
	assert(it->kind == ACQ_ITEM_CAN && ch <= 255);
	assert(it->can.len <= ACQ_CAN_DATA_MAX);
	assert((it->can.flags & ACQ_CAN_FD) || it->can.len <= 8);
	/* an error frame's id is its class bits (candump.h): 29 bits */
	assert(it->can.id <= ((it->can.flags & (ACQ_CAN_EXT | ACQ_CAN_ERR)) ? 0x1fffffffu : 0x7ffu));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size;
	struct trace_trc trc;
	struct trace_asc asc;
	struct acq_item it;
	unsigned ch;

	(void)trace_format_detect(data, size);
	trace_trc_init(&trc);
	trace_asc_init(&asc);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);

		ch = 0;
		check(trace_trc_line(&trc, s, n, &it, &ch), &it, ch);
		ch = 0;
		check(trace_asc_line(&asc, s, n, &it, &ch), &it, ch);
		{
			char ifname[16];
			int r = trace_candump_parse_screen(s, n, &it, ifname, sizeof(ifname));

			assert(r == 0 || r == -EBADMSG);
			check(r == 0 ? TRACE_FRAME : -EBADMSG, &it, 0);
			assert(r != 0 || strlen(ifname) < sizeof(ifname));
			(void)trace_candump_screen_cont(s, n);
		}
		s += n + (nl != NULL);
	}
	return 0;
}
