/* SPDX-License-Identifier: MIT */
/*
 * fuzz-candump: the candump line parser on arbitrary bytes; every line
 * it accepts must format and parse back to the same frame.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/candump.h"
#include "record/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acq_item it, back;
	char ifname[32], buf[TRACE_CANDUMP_LINE_MAX + 32];
	int n;

	if (trace_candump_parse((const char *)data, size, &it, ifname, sizeof(ifname)) < 0)
		return 0;
	n = trace_candump_format(&it, ifname, buf, sizeof(buf));
	assert(n > 0);
	assert(trace_candump_parse(buf, (size_t)n, &back, NULL, 0) == 0);
	assert(back.t_ns == it.t_ns && back.can.id == it.can.id && back.can.flags == it.can.flags);
	assert(back.can.len == it.can.len);
	assert((it.can.flags & ACQ_CAN_RTR) || memcmp(back.can.data, it.can.data, it.can.len) == 0);
	return 0;
}
