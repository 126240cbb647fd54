/* SPDX-License-Identifier: MIT */
/*
 * counter.h - a 64-bit counter with one writer thread and any number of
 * readers (statistics across threads).
 *
 * The writer adds with a relaxed load and store: an increment readers
 * never see torn (a plain 64-bit store is two stores on 32-bit ARM), and
 * cheaper than a locked read-modify-write on every frame.  Relaxed,
 * because a counter stands alone: nobody reads other data on the strength
 * of its value.  Two writers would lose increments: give each its own.
 * RT-safe.
 */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

/* Add n (the counter's only writer); returns the new value. */
static inline uint64_t basic_counter_add(_Atomic uint64_t *c, uint64_t n)
{
	uint64_t v = atomic_load_explicit(c, memory_order_relaxed) + n;

	atomic_store_explicit(c, v, memory_order_relaxed);
	return v;
}

/* Any thread. */
static inline uint64_t basic_counter_get(const _Atomic uint64_t *c)
{
	return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}
