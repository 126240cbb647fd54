/* SPDX-License-Identifier: MIT */
/*
 * test-ring-layout.c - the SPSC ring's cache-line layout and its lock-free
 * 64-bit atomics (acquisition/acq-ring.h).  argv[1] is the line size the
 * build should have picked: meson passes the architecture's default, or
 * -Dcacheline; a second build of this file with -DACQ_CACHELINE=128 shows
 * that the override reaches the header.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "acquisition/acq-ring.h"

int main(int argc, char **argv)
{
	static struct acq_ring r; /* static: aligned as declared, unlike calloc */
	long want = argc > 1 ? strtol(argv[1], NULL, 10) : 0;

	assert(want > 0 && ACQ_CACHELINE == want);
	assert(_Alignof(struct acq_ring) == ACQ_CACHELINE);
	/* The producer's line, the consumer's line, the read-only line: no
	   two of them share a line, so neither side's stores evict the
	   other's index. */
	assert(offsetof(struct acq_ring, head) % ACQ_CACHELINE == 0);
	assert(offsetof(struct acq_ring, tail) % ACQ_CACHELINE == 0);
	assert(offsetof(struct acq_ring, buf) % ACQ_CACHELINE == 0);
	assert(offsetof(struct acq_ring, drops) < offsetof(struct acq_ring, tail));
	assert(offsetof(struct acq_ring, head_cache) < offsetof(struct acq_ring, buf));
	assert((uintptr_t)&r.tail % ACQ_CACHELINE == 0);
	/* What the static assertion in the header promises, asked at run time. */
	assert(atomic_is_lock_free(&r.head) && atomic_is_lock_free(&r.tail) && atomic_is_lock_free(&r.drops));
	printf("test-ring-layout: %d-byte lines, struct acq_ring is %zu bytes, 64-bit atomics lock-free: ok\n",
	       ACQ_CACHELINE, sizeof(r));
	return 0;
}
