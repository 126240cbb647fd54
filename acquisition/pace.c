/* SPDX-License-Identifier: MIT */
/* pace.c - one pacing loop for every recorded source (acq-pace.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "acq-pace.h"
#include "basic/clock.h"

int acq_pace_init(struct acq_pace *p, double speed)
{
	if (!p || !isfinite(speed) || speed <= 0)
		return -EINVAL;
	*p = (struct acq_pace){ .speed = speed };
	return 0;
}

void acq_pace_restart(struct acq_pace *p)
{
	p->started = false;
}

int64_t acq_pace_due(struct acq_pace *p, int64_t t_ns)
{
	int64_t diff;
	double delay;

	if (!p->started) {
		p->started = true;
		p->t0_ns = t_ns;
		p->mono0_ns = basic_mono_ns();
	}
	/* Exact in int64 (a double of a 2026 stamp is 256 ns coarse); two
	   stamps further apart than int64 holds are as far as it goes. */
	if (__builtin_sub_overflow(t_ns, p->t0_ns, &diff))
		diff = t_ns > p->t0_ns ? INT64_MAX : INT64_MIN;
	delay = (double)diff / p->speed;
	if (!(delay > 0))
		delay = 0; /* earlier than the first item: due at once */
	if (delay > (double)ACQ_PACE_MAX_NS)
		delay = (double)ACQ_PACE_MAX_NS;
	return p->mono0_ns + (int64_t)delay;
}

int acq_pace_wait(struct acq_pace *p, int64_t t_ns, int64_t deadline_ns, const atomic_bool *stop)
{
	int64_t due = acq_pace_due(p, t_ns);

	for (;;) {
		int64_t now = basic_mono_ns(), until = due;

		if (now >= due)
			return 1;
		if (deadline_ns >= 0 && deadline_ns <= now)
			return 0;
		if (stop && atomic_load_explicit(stop, memory_order_relaxed))
			return 0;
		if (deadline_ns >= 0 && deadline_ns < until)
			until = deadline_ns;
		if (stop && until - now > ACQ_PACE_SLICE_NS)
			until = now + ACQ_PACE_SLICE_NS;
		basic_sleep_until(CLOCK_MONOTONIC, until);
	}
}
