/* SPDX-License-Identifier: MIT */
/*
 * fuzz-j1939: the J1939 transport reassembler on arbitrary frame
 * sequences.  Each 13 input bytes are one frame: kind (even: TP.CM, odd
 * below 0x80: TP.DT, else an id from the next bytes), SA, DA, length,
 * 8 data bytes, milliseconds since the last frame.  Every message must
 * fit the size its session announced; the counters must add up.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "dbc/j1939.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	struct dbc_j1939_stats st;
	struct dbc_j1939_msg m;
	struct dbc_j1939_fault f;
	uint64_t faults = 0, msgs = 0, total = 0;
	dbc_j1939_t *j = NULL;
	int64_t t = 0;

	if (dbc_j1939_new(&j) < 0)
		return 0;
	for (size_t o = 0; o + 13 <= size; o += 13) {
		const uint8_t *r = data + o;
		uint32_t pf = r[0] & 1 ? 0xEB : 0xEC;
		int k;

		it.can.id = r[0] < 0x80 ? (7u << 26 | pf << 16 | (uint32_t)r[2] << 8 | r[1])
		                        : ((uint32_t)r[1] | (uint32_t)r[2] << 8 | (uint32_t)r[4] << 16 | (uint32_t)r[0] << 24) & 0x1fffffff;
		it.can.flags = ACQ_CAN_EXT;
		it.can.len = (uint8_t)(r[3] % 9);
		memset(it.can.data, 0, sizeof(it.can.data));
		memcpy(it.can.data, r + 4, 8);
		t += (int64_t)r[12] * 10000000; /* 0..2.55 s: timeouts happen */
		it.t_ns = t;
		while ((k = dbc_j1939_expire(j, t, &f)) == 1)
			faults++;
		if (k != 0)
			__builtin_trap();
		k = dbc_j1939_feed(j, &it, &m, &f);
		if (k == 1) {
			if (m.len < 9 || m.len > DBC_J1939_TP_MAX)
				__builtin_trap();
			for (unsigned i = 0; i < m.len; i++)
				total += m.data[i]; /* every byte readable (ASan) */
			msgs++;
		} else if (k == 2) {
			if (f.kind < 1 || f.kind >= DBC_J1939_FAULT_MAX)
				__builtin_trap();
			faults++;
		} else if (k != 0) {
			__builtin_trap();
		}
	}
	dbc_j1939_stats(j, &st);
	for (int k = 1; k < DBC_J1939_FAULT_MAX; k++)
		faults -= st.faults[k];
	if (faults != 0 || msgs != st.messages)
		__builtin_trap();
	(void)total;
	dbc_j1939_free(j);
	return 0;
}
