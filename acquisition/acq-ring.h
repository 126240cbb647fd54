/* SPDX-License-Identifier: MIT */
/*
 * acq-ring.h - single-producer / single-consumer lock-free ring.
 *
 * Fixed-size slots, power-of-two count, memory owned by the caller and
 * handed over at init (no allocation here, ever).  The producer never
 * blocks: a full ring makes push return false and counts the drop.
 *
 * Layout: the producer's and the consumer's indices live on separate cache
 * lines, and each side keeps a private cached copy of the other side's index
 * so that the shared line is only read when the cached view says full/empty
 * (the trick that gets ck_ring and rigtorp's SPSCQueue to ~200 M items/s).
 *
 * Indices run freely (64-bit, never wrap in practice) and are masked on use.
 *
 * Use the typed wrappers from ACQ_RING_DEFINE(name, type): they copy
 * sizeof(type) bytes with a compile-time size, so memcpy becomes moves.
 *
 * RT-safe: push/pop/peek/stats are wait-free, no syscalls, no allocation.
 */
#pragma once

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "acq-bell.h"

/*
 * The cache line the two sides' indices are kept apart by.  Too small and
 * the producer's and the consumer's stores evict each other's line (false
 * sharing: the ring slows down several times); too large only costs a few
 * bytes per ring.  64 bytes on x86-64 and on the ARMv8 cores boards use
 * (Cortex-A53/A72/A76, Neoverse N1); 128 on Apple's cores and on POWER,
 * whose lines (or adjacent-line prefetch pairs) are 128 bytes; 256 on
 * s390x.  Another target (a ThunderX server with 128-byte lines) sets it
 * with `meson setup -Dcacheline=128`, which defines ACQ_CACHELINE for the
 * whole build.  GCC's __GCC_DESTRUCTIVE_SIZE is not used: GCC sets it to
 * 256 for every generic aarch64 build, four times what the usual boards
 * need.
 */
#ifndef ACQ_CACHELINE
#if defined(__APPLE__) && defined(__aarch64__)
#define ACQ_CACHELINE 128
#elif defined(__powerpc64__)
#define ACQ_CACHELINE 128
#elif defined(__s390x__)
#define ACQ_CACHELINE 256
#else
#define ACQ_CACHELINE 64
#endif
#endif
_Static_assert(ACQ_CACHELINE >= 32 && (ACQ_CACHELINE & (ACQ_CACHELINE - 1)) == 0,
               "ACQ_CACHELINE: a power of two, at least 32");

/*
 * The indices are 64-bit atomics, and the ring is wait-free only if they
 * are lock-free: a libatomic lock on a 32-bit core without 64-bit
 * exclusives (ARMv5/v6, some MIPS) would put a lock between the RX thread
 * and the collector.  There is no fallback: such a target fails to build
 * here rather than run with a lock on the realtime path (test-acquisition
 * also asks atomic_is_lock_free() at run time).  ARMv7-A (LDREXD/STREXD)
 * and every 64-bit target pass.
 */
#if UINT64_MAX == ULONG_MAX
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2, "the ring's 64-bit atomics must be lock-free on this target");
#else
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the ring's 64-bit atomics must be lock-free on this target");
#endif

struct acq_ring {
	/* Producer-owned line. */
	_Alignas(ACQ_CACHELINE) _Atomic uint64_t head; /* next slot to write */
	uint64_t tail_cache;                           /* producer's view of tail */
	_Atomic uint64_t drops;                        /* pushes refused: ring full */
	/* Consumer-owned line. */
	_Alignas(ACQ_CACHELINE) _Atomic uint64_t tail; /* next slot to read */
	uint64_t head_cache;                           /* consumer's view of head */
	/* Doorbells (acq-bell.h) for sides that wait instead of polling: a
	   producer waiting for room (a replay's source) on room, rung by the
	   consumer after it took items; the consumer's own bell in data (the
	   collector's, shared by all its rings; NULL: none), rung by such a
	   producer once the ring is a quarter full.  Their own line: a live
	   ring never touches them. */
	_Alignas(ACQ_CACHELINE) struct acq_bell room;
	struct acq_bell *_Atomic data;
	/* Read-only after init; its own line so neither side's stores evict it. */
	_Alignas(ACQ_CACHELINE) unsigned char *buf;
	uint64_t mask;
	size_t slot_size;
	size_t nslots;
};

/*
 * Set up ring over buf, which holds nslots * slot_size bytes and must stay
 * alive as long as the ring.  nslots must be a power of two >= 2.  Returns
 * 0 or -EINVAL.  Not thread-safe: call before starting either side.
 */
int acq_ring_init(struct acq_ring *ring, void *buf, size_t nslots, size_t slot_size);

/* Items currently queued; exact only from either side's own thread. */
static inline size_t acq_ring_count(const struct acq_ring *ring)
{
	uint64_t h = atomic_load_explicit(&ring->head, memory_order_acquire);
	uint64_t t = atomic_load_explicit(&ring->tail, memory_order_acquire);

	return (size_t)(h - t);
}

/* The consumer, after it took items: wake the producer if it waits for
   room (an acq_source with backpressure), once a quarter of the ring is
   free, the most a waiting producer asks for (acq_ring_room_wanted): a
   wakeup per take of a few items would cost more than the items.  A
   read-modify-write when no one waits. */
static inline void acq_ring_took(struct acq_ring *ring)
{
	if ((ring->nslots - acq_ring_count(ring)) * 4 >= ring->nslots)
		acq_bell_ring(&ring->room);
}

/* The room a producer that waits asks for before it reads on: want, or a
   quarter of the ring if that is more (a burst's worth to fill while the
   consumer works, not one wakeup per batch). */
static inline size_t acq_ring_room_wanted(const struct acq_ring *ring, size_t want)
{
	size_t q = ring->nslots / 4;

	return want > q ? want : q;
}

/* A producer that waits for room: wake the consumer if it waits on the
   ring's data bell (none: nothing). */
static inline void acq_ring_wake_consumer(struct acq_ring *ring)
{
	struct acq_bell *b = atomic_load_explicit(&ring->data, memory_order_relaxed);

	if (b)
		acq_bell_ring(b);
}

/* The same, after a push (its release store of head), once a quarter of
   the ring is queued: enough for one of the consumer's passes to be
   worth the wakeup. */
static inline void acq_ring_nudge(struct acq_ring *ring)
{
	if (acq_ring_count(ring) * 4 >= ring->nslots)
		acq_ring_wake_consumer(ring);
}

static inline uint64_t acq_ring_drops(const struct acq_ring *ring)
{
	return atomic_load_explicit(&ring->drops, memory_order_relaxed);
}

/* Producer: copy one slot in.  Returns false (and counts a drop) if full.
   size must be the ring's slot_size (the typed wrappers see to it). */
static inline bool acq_ring_push_sized(struct acq_ring *ring, const void *item, size_t size)
{
	/* Only the producer writes head, so a relaxed load of our own index is exact. */
	uint64_t h = atomic_load_explicit(&ring->head, memory_order_relaxed);

	if (h - ring->tail_cache > ring->mask) {
		/* Looks full: refresh our view.  Acquire pairs with the consumer's
		   release store of tail, so the slot it freed is no longer being
		   read when we overwrite it. */
		ring->tail_cache = atomic_load_explicit(&ring->tail, memory_order_acquire);
		if (h - ring->tail_cache > ring->mask) {
			/* Single writer of drops: relaxed load+store is an increment. */
			atomic_store_explicit(&ring->drops,
			                      atomic_load_explicit(&ring->drops, memory_order_relaxed) + 1,
			                      memory_order_relaxed);
			return false;
		}
	}
	/* size, not ring->slot_size: the typed wrappers pass sizeof(type), so
	   the slot's offset is a multiply by a constant and the copy is moves
	   (what ck_ring's prototypes get), not a load and a library call. */
	memcpy(ring->buf + (h & ring->mask) * size, item, size);
	/* Release: the slot contents become visible before the new head does. */
	atomic_store_explicit(&ring->head, h + 1, memory_order_release);
	return true;
}

/*
 * Producer, batched: copy up to n items in (an array of slot_size
 * elements) and publish them with one release store, so the consumer's
 * core takes the head's cache line once per batch, not once per item (a
 * source hands over what one recv() gave).  What does not fit is refused
 * and counted as drops, like n single pushes into a full ring.  Returns
 * the number pushed.
 */
static inline size_t acq_ring_push_bulk_sized(struct acq_ring *ring, const void *items, size_t n, size_t size)
{
	uint64_t h = atomic_load_explicit(&ring->head, memory_order_relaxed);
	size_t room = (size_t)(ring->nslots - (h - ring->tail_cache)), k, first, at;

	if (room < n) {
		/* Acquire: as in push, the slots it freed are no longer read. */
		ring->tail_cache = atomic_load_explicit(&ring->tail, memory_order_acquire);
		room = (size_t)(ring->nslots - (h - ring->tail_cache));
	}
	k = n < room ? n : room;
	if (k < n)
		atomic_store_explicit(&ring->drops,
		                      atomic_load_explicit(&ring->drops, memory_order_relaxed) + (n - k),
		                      memory_order_relaxed);
	if (!k)
		return 0;
	/* In at most two runs: up to the end of the buffer, then from 0. */
	at = (size_t)(h & ring->mask);
	first = ring->nslots - at;
	if (first > k)
		first = k;
	memcpy(ring->buf + at * size, items, first * size);
	if (k > first)
		memcpy(ring->buf, (const unsigned char *)items + first * size, (k - first) * size);
	/* Release: every slot's contents before the head that covers them. */
	atomic_store_explicit(&ring->head, h + k, memory_order_release);
	return k;
}

/* Consumer: copy one slot out.  Returns false if empty. */
static inline bool acq_ring_pop_sized(struct acq_ring *ring, void *item, size_t size)
{
	/* Only the consumer writes tail. */
	uint64_t t = atomic_load_explicit(&ring->tail, memory_order_relaxed);

	if (t == ring->head_cache) {
		/* Acquire pairs with the producer's release of head: the slot's
		   bytes are visible once we see the index that covers it. */
		ring->head_cache = atomic_load_explicit(&ring->head, memory_order_acquire);
		if (t == ring->head_cache)
			return false;
	}
	memcpy(item, ring->buf + (t & ring->mask) * size, size);
	/* Release: our read of the slot is complete before the producer may
	   reuse it. */
	atomic_store_explicit(&ring->tail, t + 1, memory_order_release);
	return true;
}

/*
 * Consumer, batched: pop up to max items into out (an array of slot_size
 * elements).  One acquire and one release for the whole run, which is what
 * the collector wants.  Returns the number popped.
 */
static inline size_t acq_ring_pop_bulk(struct acq_ring *ring, void *out, size_t max)
{
	uint64_t t = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	uint64_t h = ring->head_cache;
	size_t n, first;

	/* The head's line is the producer's, and every read of it is a
	   transfer from its core: when what we already saw published fills
	   max, take that.  Otherwise acquire (pairs with the producer's
	   release of head, see pop); the slots below a cached head were
	   acquired when it was loaded. */
	if (h - t < max) {
		h = atomic_load_explicit(&ring->head, memory_order_acquire);
		ring->head_cache = h;
	}
	n = (size_t)(h - t);
	if (n > max)
		n = max;
	if (!n)
		return 0;
	/* Copy in at most two runs: up to the end of the buffer, then from 0. */
	first = ring->nslots - (size_t)(t & ring->mask);
	if (first > n)
		first = n;
	memcpy(out, ring->buf + (t & ring->mask) * ring->slot_size, first * ring->slot_size);
	if (n > first)
		memcpy((unsigned char *)out + first * ring->slot_size, ring->buf,
		       (n - first) * ring->slot_size);
	/* Release: all copies out are done before the slots are handed back. */
	atomic_store_explicit(&ring->tail, t + n, memory_order_release);
	return n;
}

/*
 * ACQ_RING_DEFINE(name, type) generates typed wrappers
 *   bool acq_ring_name_push(struct acq_ring *, const type *)
 *   bool acq_ring_name_pop(struct acq_ring *, type *)
 *   size_t acq_ring_name_pop_bulk(struct acq_ring *, type *, size_t)
 *   size_t acq_ring_name_push_bulk(struct acq_ring *, const type *, size_t)
 * The ring must have been initialised with slot_size == sizeof(type).
 */
#define ACQ_RING_DEFINE(name, type)                                                       \
	static inline __attribute__((unused)) bool acq_ring_##name##_push(struct acq_ring *ring, const type *item)  \
	{                                                                                   \
		return acq_ring_push_sized(ring, item, sizeof(type));                       \
	}                                                                                   \
	static inline __attribute__((unused)) bool acq_ring_##name##_pop(struct acq_ring *ring, type *item)         \
	{                                                                                   \
		return acq_ring_pop_sized(ring, item, sizeof(type));                        \
	}                                                                                   \
	static inline __attribute__((unused)) size_t acq_ring_##name##_pop_bulk(struct acq_ring *ring, type *out,   \
	                                                size_t max)                         \
	{                                                                                   \
		return acq_ring_pop_bulk(ring, out, max);                                   \
	}                                                                                   \
	static inline __attribute__((unused)) size_t acq_ring_##name##_push_bulk(struct acq_ring *ring,             \
	                                                 const type *items, size_t n)       \
	{                                                                                   \
		return acq_ring_push_bulk_sized(ring, items, n, sizeof(type));              \
	}
