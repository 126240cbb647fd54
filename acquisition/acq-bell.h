/* SPDX-License-Identifier: MIT */
/*
 * acq-bell.h - a doorbell: one side sleeps until the other says there is
 * something for it (an eventcount over a futex).
 *
 * For the sides of a ring that may wait (a replay's source, which waits
 * for room, and the collector that drains it), not for a live bus: a live
 * source never waits and never rings, so nothing here is on its path.  A
 * replay polled with sleeps instead: its source looked for room every
 * 100 us and the collector came every 0.3-5 ms, and on two cores the
 * replay spent half its time with both asleep (perf sched: CPUs 47% and
 * 66% idle).
 *
 * The waiter: key = acq_bell_prepare(b); look at the condition again; if
 * it still does not hold, acq_bell_wait(b, key, deadline); then
 * acq_bell_done(b).  The ringer: make the condition true (a store, a
 * ring's head or tail), then acq_bell_ring(b).  Both sides meet in a
 * read-modify-write of waiters (acq_rel; no fence, which TSan does not
 * model): the RMWs of one word are totally ordered, so either the
 * ringer's comes second and sees the waiter, and moves seq (a futex wait
 * on the old key returns at once), or the waiter's comes second, reads
 * what the ringer's released, and its look at the condition sees the
 * store before it.  No wakeup is lost.  A ringer that sees no waiter
 * makes no syscall.
 */
#pragma once
#include <stdatomic.h>
#include <stdint.h>

struct acq_bell {
	_Atomic uint32_t seq;     /* moved by each ring that found a waiter */
	_Atomic uint32_t waiters; /* inside prepare..done */
};

static inline uint32_t acq_bell_prepare(struct acq_bell *b)
{
	uint32_t key = atomic_load_explicit(&b->seq, memory_order_acquire);

	atomic_fetch_add_explicit(&b->waiters, 1, memory_order_acq_rel);
	return key;
}

static inline void acq_bell_done(struct acq_bell *b)
{
	atomic_fetch_sub_explicit(&b->waiters, 1, memory_order_relaxed);
}

/* Wake every waiter, if there is one (out of line: the syscall). */
void acq_bell_wake(struct acq_bell *b);

static inline void acq_bell_ring(struct acq_bell *b)
{
	if (atomic_fetch_add_explicit(&b->waiters, 0, memory_order_acq_rel))
		acq_bell_wake(b);
}

/* Sleep until rung after prepare gave key, or until deadline_ns on
   CLOCK_MONOTONIC (or a signal).  Allocation-free. */
void acq_bell_wait(struct acq_bell *b, uint32_t key, int64_t deadline_ns);
