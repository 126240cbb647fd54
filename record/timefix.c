/* SPDX-License-Identifier: MIT */
/* timefix.c - times corrected for clock steps (timefix.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "timefix.h"

/* An offset change this large between two Batches of a run is a step
   (the kernel slews at most 0.5 ms/s, so a Batch apart never differs by
   that much without one). */
#define TIMEFIX_STEP_NS 1000000ll

struct timefix_run {
	uint8_t boot_id[REC_BOOT_ID_LEN];
	bool any, synced_any, synced_now;
	int64_t last;                 /* offset of the run's last Batch */
	int64_t last_synced;          /* ... written while synchronised */
};

struct rec_timefix {
	struct timefix_run *runs;
	size_t n, cap;
	uint64_t steps;
};

int rec_timefix_new(rec_timefix_t **ret)
{
	if (!ret)
		return -EINVAL;
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

rec_timefix_t *rec_timefix_free(rec_timefix_t *tf)
{
	if (tf)
		free(tf->runs);
	free(tf);
	return NULL;
}

static struct timefix_run *find_run(const rec_timefix_t *tf, const struct rec_batch_info *info)
{
	if (info->boot_id_len != REC_BOOT_ID_LEN)
		return NULL;
	/* newest first: a log holds a handful of runs, and Batches come run by run */
	for (size_t i = tf->n; i-- > 0;)
		if (!memcmp(tf->runs[i].boot_id, info->boot_id, REC_BOOT_ID_LEN))
			return &tf->runs[i];
	return NULL;
}

static struct timefix_run *add_run(rec_timefix_t *tf, const struct rec_batch_info *info)
{
	if (tf->n == tf->cap) {
		size_t cap = tf->cap ? tf->cap * 2 : 8;
		struct timefix_run *r = realloc(tf->runs, cap * sizeof(*r));
		if (!r)
			return NULL;
		tf->runs = r;
		tf->cap = cap;
	}
	memset(&tf->runs[tf->n], 0, sizeof(tf->runs[0]));
	memcpy(tf->runs[tf->n].boot_id, info->boot_id, REC_BOOT_ID_LEN);
	return &tf->runs[tf->n++];
}

/* The offset a Batch's records were stamped with; false: not carried. */
static bool batch_offset(const struct rec_batch_info *info, int64_t *ret)
{
	if (!info->mono_t0_ns)
		return false;
	return !__builtin_sub_overflow(info->t0_ns, info->mono_t0_ns, ret);
}

/* The sync state a Batch's "clock" Health entry gives, if it has one. */
static void learn_sync(struct timefix_run *run, const rec_batch_t *b, size_t nhealth)
{
	struct rec_health h;

	for (size_t i = 0; i < nhealth; i++)
		if (rec_batch_health(b, i, &h) == 0 && !strcmp(h.kind, "clock"))
			run->synced_now = !h.clock_unsynced;
}

/* Two offsets further apart than a step (forged ones too: no overflow). */
static bool is_step(int64_t a, int64_t b)
{
	int64_t d;

	if (__builtin_sub_overflow(a, b, &d))
		return true;
	return d > TIMEFIX_STEP_NS || d < -TIMEFIX_STEP_NS;
}

int rec_timefix_learn(rec_timefix_t *tf, const rec_batch_t *b)
{
	struct rec_batch_info info;
	struct timefix_run *run;
	int64_t off;

	if (!tf || !b || rec_batch_info(b, &info) < 0)
		return -EINVAL;
	if (info.boot_id_len != REC_BOOT_ID_LEN)
		return 0;
	run = find_run(tf, &info);
	if (!run && !(run = add_run(tf, &info)))
		return -ENOMEM;
	learn_sync(run, b, info.nhealth);
	/* A Batch of health or dictionary only has no records, and no t0. */
	if (!info.count || !batch_offset(&info, &off))
		return 0;
	if (run->any && is_step(off, run->last))
		tf->steps++;
	run->any = true;
	run->last = off;
	if (run->synced_now) {
		run->synced_any = true;
		run->last_synced = off;
	}
	return 0;
}

int rec_timefix_apply(const rec_timefix_t *tf, const struct rec_batch_info *info, struct acq_item *it)
{
	const struct timefix_run *run;
	int64_t off, ref, t;

	if (!tf || !info || !it)
		return -EINVAL;
	run = find_run(tf, info);
	if (!run || !run->any || !batch_offset(info, &off))
		return 0;
	ref = run->synced_any ? run->last_synced : run->last;
	/* t - off is the record's monotonic time; + ref puts it on the run's
	   reference clock.  Out of int64 range only for forged Batches: left. */
	if (__builtin_sub_overflow(it->t_ns, off, &t) || __builtin_add_overflow(t, ref, &t))
		return 0;
	it->t_ns = t;
	return 1;
}

void rec_timefix_counts(const rec_timefix_t *tf, uint64_t *ret_runs, uint64_t *ret_steps)
{
	if (ret_runs)
		*ret_runs = tf ? tf->n : 0;
	if (ret_steps)
		*ret_steps = tf ? tf->steps : 0;
}
