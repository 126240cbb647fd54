/* SPDX-License-Identifier: MIT */
/* clockwatch.c - clock steps and the kernel's sync state (clockwatch.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/timex.h>

#include "acquisition/acq-item.h"
#include "basic/clock.h"
#include "clockwatch.h"

/* How long after a step records stamped before it are still expected. */
#define SETTLE_NS (2 * BASIC_NS_PER_SEC)
/* Monotonic readings jitter against each other by this much at most. */
#define WHICH_SLACK_NS 1000000ll

struct pl_clockwatch {
	int64_t threshold;
	bool started, sync_known, unsynced;
	int64_t offset, prev_offset;   /* realtime - monotonic: now, before the last step */
	int64_t last_mono, step_mono;  /* the last reading; the last step's (0: none) */
	uint64_t epoch, steps;
};

int pl_clock_sync_read(struct pl_clock_sync *ret)
{
	struct timex tx = { .modes = 0 };
	int state;

	if (!ret)
		return -EINVAL;
	state = adjtimex(&tx);
	if (state < 0)
		return -errno;
	ret->unsynced = state == TIME_ERROR || (tx.status & STA_UNSYNC);
	ret->max_error_us = tx.maxerror > 0 ? (uint64_t)tx.maxerror : 0;
	ret->est_error_us = tx.esterror > 0 ? (uint64_t)tx.esterror : 0;
	ret->status = (uint32_t)tx.status;
	return 0;
}

void pl_clock_read(int64_t *ret_real, int64_t *ret_mono)
{
	basic_clock_pair(ret_real, ret_mono);
}

int pl_clockwatch_new(int64_t threshold_ns, pl_clockwatch_t **ret)
{
	pl_clockwatch_t *cw;

	if (!ret || threshold_ns <= 0)
		return -EINVAL;
	cw = calloc(1, sizeof(*cw));
	if (!cw)
		return -ENOMEM;
	cw->threshold = threshold_ns;
	*ret = cw;
	return 0;
}

pl_clockwatch_t *pl_clockwatch_free(pl_clockwatch_t *cw)
{
	free(cw);
	return NULL;
}

int pl_clockwatch_check(pl_clockwatch_t *cw, int64_t real, int64_t mono, int64_t *ret_step, int64_t *ret_window)
{
	int64_t off, step;

	if (!cw || !ret_step || !ret_window || __builtin_sub_overflow(real, mono, &off))
		return -EINVAL;
	if (!cw->started) {
		cw->started = true;
		cw->offset = off;
		cw->last_mono = mono;
		cw->epoch = 1;
		return 0;
	}
	/* Against the last reading, not a fixed base: a slewing clock moves
	   the offset by microseconds per pass, never by the threshold. */
	if (__builtin_sub_overflow(off, cw->offset, &step))
		return -EINVAL;
	if (step < cw->threshold && step > -cw->threshold) {
		cw->offset = off;
		cw->last_mono = mono;
		return 0;
	}
	*ret_step = step;
	*ret_window = mono - cw->last_mono;
	cw->prev_offset = cw->offset;
	cw->offset = off;
	cw->step_mono = mono;
	cw->last_mono = mono;
	cw->epoch++;
	cw->steps++;
	return 1;
}

uint64_t pl_clockwatch_which(const pl_clockwatch_t *cw, int64_t t_ns, int64_t *ret_offset)
{
	int64_t m_now, m_prev;

	if (!cw || !cw->started) {
		*ret_offset = 0;
		return 0;
	}
	*ret_offset = cw->offset;
	if (!cw->step_mono || cw->last_mono - cw->step_mono > SETTLE_NS)
		return cw->epoch;
	/* The record's monotonic time under each offset; one that lies after
	   the last reading cannot be (the record was read before it). */
	if (__builtin_sub_overflow(t_ns, cw->offset, &m_now) || __builtin_sub_overflow(t_ns, cw->prev_offset, &m_prev))
		return cw->epoch;
	if (m_prev <= cw->last_mono + WHICH_SLACK_NS &&
	    (m_now > cw->last_mono + WHICH_SLACK_NS || m_prev > m_now)) {
		*ret_offset = cw->prev_offset;
		return cw->epoch - 1;
	}
	return cw->epoch;
}

uint64_t pl_clockwatch_steps(const pl_clockwatch_t *cw)
{
	return cw ? cw->steps : 0;
}

int pl_clockwatch_sync(pl_clockwatch_t *cw, const struct pl_clock_sync *sync)
{
	bool was, known;

	if (!cw || !sync)
		return -EINVAL;
	was = cw->unsynced;
	known = cw->sync_known;
	cw->sync_known = true;
	cw->unsynced = sync->unsynced;
	if (!known)
		return sync->unsynced ? ACQ_EV_CLOCK_UNSYNCED : 0;
	if (was == sync->unsynced)
		return 0;
	return sync->unsynced ? ACQ_EV_CLOCK_UNSYNCED : ACQ_EV_CLOCK_SYNCED;
}
