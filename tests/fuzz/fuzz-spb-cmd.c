/* SPDX-License-Identifier: MIT */
/*
 * fuzz-spb-cmd: sparkplug/'s NCMD/DCMD parser (spb_cmd_parse) on any
 * bytes, as a host (or anyone allowed on the broker) may send them.  The
 * answers must agree with each other: a refused count never above the
 * metrics, a rebirth only from an NCMD with a metric left unrefused, and
 * a DCMD refusing every metric it has.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "sparkplug/spb-session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spb_cmd n = { 0 }, d = { 0 };
	int rn = spb_cmd_parse(data, size, false, &n);
	int rd = spb_cmd_parse(data, size, true, &d);

	if (rn != rd)
		abort();
	if (rn < 0) {
		if (rn != -EBADMSG && rn != -EMSGSIZE)
			abort();
		return 0;
	}
	if (n.refused > n.metrics || (n.rebirth && n.refused == n.metrics))
		abort();
	if (d.rebirth || d.metrics != n.metrics || d.refused != d.metrics)
		abort();
	return 0;
}
