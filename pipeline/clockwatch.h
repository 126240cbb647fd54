/* SPDX-License-Identifier: MIT */
/*
 * clockwatch.h - CLOCK_REALTIME watched against CLOCK_MONOTONIC, and the
 * kernel's synchronisation state (docs/time.md).
 *
 * Records are stamped with CLOCK_REALTIME; a step of it (`date -s`, an NTP
 * or GPS daemon stepping, an RTC read late) moves every later stamp.  The
 * sink compares the two clocks once per collector pass (three vDSO reads,
 * never on an RT thread): a change of their offset beyond the threshold
 * between two passes is a step, and becomes an EVENT_CLOCK_STEP; the
 * offset each record was stamped with rides in its Batch (mono_t0_ns), so
 * the ground can correct.  Slewing (NTP's normal correction, at most
 * 0.5 ms/s) is followed silently.
 *
 * The watch takes its readings from the caller, so a test injects any
 * clock.  One thread (the collector's).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* The kernel's view of CLOCK_REALTIME (adjtimex(2) with modes = 0). */
struct pl_clock_sync {
	bool unsynced;          /* STA_UNSYNC, or the state TIME_ERROR */
	uint64_t max_error_us;  /* timex.maxerror */
	uint64_t est_error_us;  /* timex.esterror */
	uint32_t status;        /* timex.status bits */
};

/* Read it.  0 or -errno (adjtimex refused: a seccomp filter, say). */
int pl_clock_sync_read(struct pl_clock_sync *ret_sync);

/* Both clocks at one instant (basic_clock_pair()).  RT-safe. */
void pl_clock_read(int64_t *ret_real_ns, int64_t *ret_mono_ns);

typedef struct pl_clockwatch pl_clockwatch_t;

/* threshold_ns > 0: the smallest offset change reported as a step. */
int pl_clockwatch_new(int64_t threshold_ns, pl_clockwatch_t **ret_cw);
pl_clockwatch_t *pl_clockwatch_free(pl_clockwatch_t *cw);

/*
 * One reading of both clocks.  The first sets the offset.  Returns 1 for a
 * step: *ret_step_ns = new offset - old, *ret_window_ns = the monotonic
 * time since the previous reading (the step happened in it); 0 otherwise
 * (the ret values untouched); -EINVAL.
 */
int pl_clockwatch_check(pl_clockwatch_t *cw, int64_t real_ns, int64_t mono_ns, int64_t *ret_step_ns,
                        int64_t *ret_window_ns);

/*
 * The offset a record stamped t_ns was stamped with, and its epoch (a
 * number that changes at every step: the sink closes a Batch when it
 * changes).  For 2 s after a step a record may still come stamped before
 * it (a ring, the monitor's events): of the two offsets, the one that puts
 * the record's monotonic time latest but not after the last reading is
 * taken.  Exact when the step is larger than the record's way through the
 * rings (milliseconds); a smaller one may be put on the wrong side, an
 * error of at most the step.  Before the first reading: epoch 0, offset 0.
 */
uint64_t pl_clockwatch_which(const pl_clockwatch_t *cw, int64_t t_ns, int64_t *ret_offset_ns);

/* Steps seen so far. */
uint64_t pl_clockwatch_steps(const pl_clockwatch_t *cw);

/*
 * The sync state read now against the last one: returns the event to
 * record (ACQ_EV_CLOCK_UNSYNCED or ACQ_EV_CLOCK_SYNCED) when the
 * unsynchronised flag changed, or, at the first reading, when it is
 * unsynchronised (a run that starts synchronised says nothing); 0
 * otherwise; -EINVAL.
 */
int pl_clockwatch_sync(pl_clockwatch_t *cw, const struct pl_clock_sync *sync);
