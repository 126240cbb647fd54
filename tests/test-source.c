/* SPDX-License-Identifier: MIT */
/*
 * test-source.c - acquisition's source side: the pacing of recorded
 * sources (acq-pace.h).
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "acquisition/acq-pace.h"
#include "basic/clock.h"

#define MS 1000000ll

static void test_pace_args(void)
{
	struct acq_pace p;

	assert(acq_pace_init(NULL, 1) == -EINVAL);
	assert(acq_pace_init(&p, 0) == -EINVAL);
	assert(acq_pace_init(&p, -1) == -EINVAL);
	assert(acq_pace_init(&p, NAN) == -EINVAL);
	assert(acq_pace_init(&p, INFINITY) == -EINVAL);
	assert(acq_pace_init(&p, 1e-12) == 0);
}

static void test_pace_due(void)
{
	struct acq_pace p;
	int64_t before = basic_mono_ns(), t0 = 1700000000123456789ll, m0;

	assert(acq_pace_init(&p, 2.0) == 0);
	m0 = acq_pace_due(&p, t0); /* the first item starts the clock, due now */
	assert(m0 >= before && m0 <= basic_mono_ns());
	assert(acq_pace_due(&p, t0 + 1000 * MS) == m0 + 500 * MS); /* exact at 2x */
	assert(acq_pace_due(&p, t0 + 1) == m0);                    /* 0.5 ns: truncated */
	assert(acq_pace_due(&p, t0 - 1000 * MS) == m0);            /* earlier: due at once */
	/* Stamps further apart than any replay: held at the limit, never an
	   overflow (UBSan would report the conversion). */
	assert(acq_pace_due(&p, INT64_MAX) == m0 + ACQ_PACE_MAX_NS);
	assert(acq_pace_due(&p, INT64_MIN) == m0);
	assert(acq_pace_init(&p, 1e-12) == 0);
	m0 = acq_pace_due(&p, 0);
	assert(acq_pace_due(&p, 1000 * MS) == m0 + ACQ_PACE_MAX_NS);
	/* restart: the next item is the new first */
	acq_pace_restart(&p);
	before = basic_mono_ns();
	assert(acq_pace_due(&p, 5000 * MS) >= before);
	assert(acq_pace_due(&p, 5000 * MS) <= basic_mono_ns());
}

static void test_pace_wait(void)
{
	struct acq_pace p;
	atomic_bool stop;
	int64_t t0 = 42 * 1000 * MS, start;

	atomic_init(&stop, false);
	assert(acq_pace_init(&p, 1.0) == 0);
	assert(acq_pace_wait(&p, t0, -1, NULL) == 1); /* the first: at once */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 30 * MS, -1, &stop) == 1);
	assert(basic_mono_ns() - start >= 29 * MS); /* ABSTIME sleeps never wake early */
	/* deadline 0: do not wait */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, 0, NULL) == 0);
	assert(basic_mono_ns() - start < 20 * MS);
	/* a deadline comes first */
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, start + 20 * MS, NULL) == 0);
	assert(basic_mono_ns() - start >= 20 * MS && basic_mono_ns() - start < 500 * MS);
	/* an hour away and a stop: seen within a slice */
	atomic_store(&stop, true);
	start = basic_mono_ns();
	assert(acq_pace_wait(&p, t0 + 3600 * 1000 * MS, -1, &stop) == 0);
	assert(basic_mono_ns() - start < ACQ_PACE_SLICE_NS + 50 * MS);
}

int main(void)
{
	test_pace_args();
	test_pace_due();
	test_pace_wait();
	puts("test-source: ok");
	return 0;
}
