/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include "acquisition/acq-ring.h"

int main(void)
{
	struct acq_ring r;
	uint64_t buf[4];
	assert(acq_ring_init(&r, buf, 3, 8) == -EINVAL);
	return 0;
}
