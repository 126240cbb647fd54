/* SPDX-License-Identifier: MIT */
/*
 * acq-pace.h - replaying a recorded source (a candump trace, a railmon log)
 * at X times real time.
 *
 * An item whose record time is t is due at mono0 + (t - t0) / speed on
 * CLOCK_MONOTONIC, where t0 is the record time of the first item paced and
 * mono0 when it was paced (so a clock step never stretches a replay).  One
 * implementation for every recorded source: the trace driver
 * (bus/can-trace.c) and log replay (acq_source's pace_speed).  The delay is
 * kept within [0, ACQ_PACE_MAX_NS]: a record a century away (a bad stamp, a
 * tiny speed) waits a long time instead of overflowing the conversion from
 * double to int64 (undefined behaviour).
 *
 * Plain state owned by one thread (the source's); RT-safe: no allocation,
 * no locks, clock_nanosleep only.  bus/ may include this header.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define ACQ_PACE_MAX_NS 3000000000000000000ll /* ~95 years: far, but no overflow */
#define ACQ_PACE_SLICE_NS 100000000ll         /* a stop flag is seen this often */

struct acq_pace {
	double speed;     /* > 0: x real time */
	bool started;     /* t0/mono0 set by the first item */
	int64_t t0_ns;    /* record time of the first item paced */
	int64_t mono0_ns; /* CLOCK_MONOTONIC when it was paced */
};

/* Set up for speed (finite, > 0).  Returns 0 or -EINVAL. */
int acq_pace_init(struct acq_pace *p, double speed);

/* The next item starts the clock again (a source that was away: a live
   bus does not make up for the time it was gone). */
void acq_pace_restart(struct acq_pace *p);

/* CLOCK_MONOTONIC time at which an item of record time t_ns is due; the
   first call starts the clock (that item is due at once). */
int64_t acq_pace_due(struct acq_pace *p, int64_t t_ns);

/*
 * Wait until the item of record time t_ns is due.  Returns 1 when it is,
 * 0 when deadline_ns (CLOCK_MONOTONIC; < 0: none; 0: do not wait) comes
 * first, or when *stop is set (stop may be NULL; it is looked at every
 * ACQ_PACE_SLICE_NS, so a SIGTERM is seen even across an hour's gap
 * between two records).
 */
int acq_pace_wait(struct acq_pace *p, int64_t t_ns, int64_t deadline_ns, const atomic_bool *stop);
