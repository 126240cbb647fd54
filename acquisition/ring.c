/* SPDX-License-Identifier: MIT */
/* ring.c - SPSC ring set-up; the hot paths are inline in acq-ring.h. */
#include <errno.h>

#include "acq-ring.h"

int acq_ring_init(struct acq_ring *ring, void *buf, size_t nslots, size_t slot_size)
{
	if (!ring || !buf || nslots < 2 || (nslots & (nslots - 1)) || !slot_size)
		return -EINVAL;
	atomic_init(&ring->head, 0);
	atomic_init(&ring->tail, 0);
	atomic_init(&ring->drops, 0);
	atomic_init(&ring->room.seq, 0);
	atomic_init(&ring->room.waiters, 0);
	atomic_init(&ring->data, NULL);
	ring->tail_cache = 0;
	ring->head_cache = 0;
	ring->buf = buf;
	ring->mask = nslots - 1;
	ring->slot_size = slot_size;
	ring->nslots = nslots;
	return 0;
}
