/* SPDX-License-Identifier: MIT */
/*
 * fuzz-dbc: the DBC parser and compiler on arbitrary text; whatever loads
 * must then decode frames (taken from the input's tail) without faults;
 * strict and lenient loads, the lenient one's warnings read back.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dbc/dbc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acq_item frame = { .kind = ACQ_ITEM_CAN }, out[64];
	char err[256];
	dbc_t *dbc = NULL;
	unsigned n;

	/* every input read strictly, then leniently (the one decoded below) */
	if (dbc_load_buffer_flags("fuzz.dbc", (const char *)data, size, DBC_STRICT, &dbc, err, sizeof(err)) == 0)
		dbc = dbc_free(dbc);
	if (dbc_load_buffer("fuzz.dbc", (const char *)data, size, &dbc, err, sizeof(err)) < 0)
		return 0;
	for (unsigned i = 0; i < dbc_warning_count(dbc); i++)
		if (!dbc_warning(dbc, i))
			__builtin_trap();
	n = dbc_signal_count(dbc);
	for (unsigned i = 0; i < n; i++) {
		struct dbc_signal_info info;
		const char *label;

		if (dbc_signal_info(dbc, i, &info) == 0) {
			frame.can.id = info.msg_id;
			frame.can.flags = info.ext ? ACQ_CAN_EXT : 0;
			frame.can.len = 64;
			memset(frame.can.data, 0, sizeof(frame.can.data));
			memcpy(frame.can.data, data, size < 64 ? size : 64);
			(void)dbc_decode(dbc, &frame, 0, out, 64);
			frame.can.len = (uint8_t)(i % 65);
			(void)dbc_decode(dbc, &frame, 0, out, i % 64);
			(void)dbc_value_label(dbc, i, (double)(i % 7), &label);
		}
	}
	dbc_free(dbc);
	return 0;
}
