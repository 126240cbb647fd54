/* SPDX-License-Identifier: MIT */
/*
 * acq-bytes.h - an SPSC ring of bytes beside a bus's item ring, for the
 * records whose bytes do not fit an acq_item (a TRDP telegram: up to 1472
 * bytes of PD, 65504 of MD; acq_item is ~100 bytes and stays so).
 *
 * The producer (the bus's RX thread) reserves room for what it is about to
 * receive, receives into it, and commits what it kept; the item it pushes
 * points at those bytes (acq_trdp.data).  The consumer (the collector's
 * sink) copies the bytes into the Batch and then releases everything up
 * to the end of that item's bytes: items and their bytes travel in the
 * same order, so releasing "up to here" also frees the bytes of items the
 * item ring dropped when it was full.  A producer that finds no room
 * drops what it receives and counts it (acq_bytes_drops), as the item
 * ring does: nothing waits, nothing is allocated after init.
 *
 * Positions are byte counts since init (64-bit, never wrap); a reservation
 * is contiguous in memory: one that would cross the end of the buffer
 * starts again at its beginning, and the bytes skipped are released with
 * the ones before them.  Lock-free with C11 atomics; the same 64-bit
 * lock-free rule as acq-ring.h.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acq-ring.h" /* ACQ_CACHELINE and the lock-free assertion */

struct acq_bytes {
	/* Producer-owned line. */
	_Alignas(ACQ_CACHELINE) _Atomic uint64_t head; /* committed up to here */
	uint64_t reserved;                             /* reserved up to here (producer only) */
	uint64_t released_cache;                       /* producer's view of released */
	_Atomic uint64_t drops;                        /* records dropped: no room */
	/* Consumer-owned line. */
	_Alignas(ACQ_CACHELINE) _Atomic uint64_t released; /* free below here */
	/* Read-only after init. */
	_Alignas(ACQ_CACHELINE) uint8_t *buf;
	uint64_t size;
};

/* Set up over buf[0..size), which must outlive the ring; size >= 64.
   Returns 0 or -EINVAL.  Call before either side runs. */
static inline int acq_bytes_init(struct acq_bytes *b, void *buf, size_t size)
{
	if (!b || !buf || size < 64)
		return -22; /* -EINVAL, without errno.h in a plain-data header */
	atomic_init(&b->head, 0);
	atomic_init(&b->released, 0);
	atomic_init(&b->drops, 0);
	b->reserved = 0;
	b->released_cache = 0;
	b->buf = buf;
	b->size = size;
	return 0;
}

/* The producer's free room from position pos on, contiguous in memory,
   for n bytes: the position to write at (pos itself, or the start of the
   next lap when n would cross the end), or UINT64_MAX when the consumer
   has not released enough. */
static inline uint64_t acq_bytes_fit_(struct acq_bytes *b, uint64_t pos, size_t n)
{
	uint64_t off = pos % b->size, at = off + n > b->size ? pos + (b->size - off) : pos;

	if (n > b->size)
		return UINT64_MAX;
	if (at + n - b->released_cache > b->size) {
		/* Acquire pairs with the consumer's release store: the bytes
		   it freed are no longer being read when we overwrite them. */
		b->released_cache = atomic_load_explicit(&b->released, memory_order_acquire);
		if (at + n - b->released_cache > b->size)
			return UINT64_MAX;
	}
	return at;
}

/*
 * Producer: n contiguous bytes after what is reserved so far, or NULL when
 * there is no room (the caller drops and calls acq_bytes_drop).  Several
 * reservations may be made before one commit (a recvmmsg burst).
 */
static inline uint8_t *acq_bytes_reserve(struct acq_bytes *b, size_t n)
{
	uint64_t at = acq_bytes_fit_(b, b->reserved, n);

	if (at == UINT64_MAX)
		return NULL;
	b->reserved = at + n;
	return b->buf + at % b->size;
}

/* Producer: give back the reservations after position pos (what a burst
   did not fill), pos = acq_bytes_pos() taken before them. */
static inline void acq_bytes_unreserve(struct acq_bytes *b, uint64_t pos)
{
	b->reserved = pos;
}

/* Producer: the position of the next reservation. */
static inline uint64_t acq_bytes_pos(const struct acq_bytes *b)
{
	return b->reserved;
}

/* Producer: what is reserved is written; publish it before the items that
   point at it are pushed (release: the consumer that sees head sees the
   bytes). */
static inline void acq_bytes_commit(struct acq_bytes *b)
{
	atomic_store_explicit(&b->head, b->reserved, memory_order_release);
}

/* Producer: count n records dropped for want of room. */
static inline void acq_bytes_drop(struct acq_bytes *b, uint64_t n)
{
	atomic_store_explicit(&b->drops, atomic_load_explicit(&b->drops, memory_order_relaxed) + n,
	                      memory_order_relaxed);
}

static inline uint64_t acq_bytes_drops(const struct acq_bytes *b)
{
	return atomic_load_explicit(&b->drops, memory_order_relaxed);
}

/* Consumer: everything before end (a pointer one past the last byte of a
   record it has copied) is free again.  end must be in the buffer, of a
   record not released yet. */
static inline void acq_bytes_release(struct acq_bytes *b, const uint8_t *end)
{
	uint64_t rel = atomic_load_explicit(&b->released, memory_order_relaxed);
	uint64_t off = (uint64_t)(end - b->buf), cur = rel % b->size;
	/* end is ahead of released by less than one lap; a record ending at
	   the buffer's end has off == size. */
	uint64_t ahead = off >= cur ? off - cur : b->size - cur + off;
	/* Release: our reads of the record are done before the producer may
	   overwrite it. */
	atomic_store_explicit(&b->released, rel + ahead, memory_order_release);
}
