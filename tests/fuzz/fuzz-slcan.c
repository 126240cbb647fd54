/* SPDX-License-Identifier: MIT */
/* fuzz-slcan: the slcan line parser on arbitrary bytes. */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/slcan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acq_item it;

	if (bus_slcan_parse((const char *)data, size, &it) == 0) {
		assert(it.kind == ACQ_ITEM_CAN && it.can.len <= ACQ_CAN_DATA_MAX);
		assert((it.can.flags & ACQ_CAN_FD) || it.can.len <= 8);
	}
	return 0;
}
