/* SPDX-License-Identifier: MIT */
/*
 * timefix.h - times corrected for clock steps (`railmon export
 * --corrected-time`, docs/time.md).
 *
 * Every Batch a running railmon writes carries its monotonic base
 * (Batch.mono_t0_ns): the writer's CLOCK_REALTIME - CLOCK_MONOTONIC offset
 * when its records were stamped is t0_ns - mono_t0_ns.  A record's
 * monotonic time is then its time minus that offset, a clock that never
 * steps; adding one offset for the whole run, the reference, gives a
 * wall-clock time that does not step either.  The reference of a run
 * (one boot_id: the monotonic clock is only comparable inside one) is the
 * offset of its last Batch written while its latest "clock" Health entry
 * said the kernel was synchronised, else of its last Batch: the clock as
 * it was last set, which is normally the corrected one.
 *
 * Two passes: rec_timefix_learn over every Batch of the log, then
 * rec_timefix_apply to each record.  Not for RT use; allocates in learn.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "acquisition/acq-item.h"
#include "batch.h"

typedef struct rec_timefix rec_timefix_t;

int rec_timefix_new(rec_timefix_t **ret_tf);
rec_timefix_t *rec_timefix_free(rec_timefix_t *tf);

/* Learn a Batch's offset and (from its "clock" Health entry) the sync
   state, in log order.  0, -EINVAL, -ENOMEM. */
int rec_timefix_learn(rec_timefix_t *tf, const rec_batch_t *b);

/* Correct it->t_ns, a record of the Batch described by info: 1 corrected
   (possibly by 0), 0 left as recorded (the Batch has no monotonic base or
   no boot id, or its run was not learnt), -EINVAL. */
int rec_timefix_apply(const rec_timefix_t *tf, const struct rec_batch_info *info, struct acq_item *it);

/* What was learnt: runs (boot ids) and, summed over them, the offset
   changes between consecutive Batches of a run larger than 1 ms (steps). */
void rec_timefix_counts(const rec_timefix_t *tf, uint64_t *ret_runs, uint64_t *ret_steps);
