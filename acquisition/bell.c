/* SPDX-License-Identifier: MIT */
/*
 * bell.c - the doorbell's syscalls (acq-bell.h): a private futex on seq.
 */
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "acq-bell.h"
#include "basic/clock.h"

/* A 32-bit target built with a 64-bit time_t (armhf, _TIME_BITS=64) has
   to pass its timespec to futex_time64; futex there takes 32-bit
   seconds. */
#ifdef SYS_futex_time64
#define BELL_FUTEX (sizeof(time_t) == 8 ? SYS_futex_time64 : SYS_futex)
#else
#define BELL_FUTEX SYS_futex
#endif

void acq_bell_wake(struct acq_bell *b)
{
	atomic_fetch_add_explicit(&b->seq, 1, memory_order_relaxed);
	syscall(BELL_FUTEX, &b->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void acq_bell_wait(struct acq_bell *b, uint32_t key, int64_t deadline_ns)
{
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline, so a
	   wait cut short by a signal and not resumed costs no clock read.
	   EAGAIN (rung since prepare), ETIMEDOUT and EINTR all mean: look
	   again. */
	struct timespec ts = basic_ns_to_ts(deadline_ns);

	syscall(BELL_FUTEX, &b->seq, FUTEX_WAIT_BITSET_PRIVATE, key, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}
