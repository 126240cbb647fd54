/* SPDX-License-Identifier: MIT */
/*
 * thread.h - a normal-priority thread with an explicit stack and a name.
 *
 * glibc's default stack is 8 MiB, and `railmon run` locks all its memory
 * (mlockall), so a thread left at the default holds 8 MiB of RAM for the
 * few KiB it uses.  The name is what top -H and /proc/PID/task show.
 * Realtime threads are acquisition's (acq_thread_start()).
 */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>

/* 0 or the -errno of pthread_create(); *ret_thread only on success. */
static inline int basic_thread_create(pthread_t *ret_thread, const char *name, size_t stack_bytes,
                                      void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, stack_bytes);
	r = pthread_create(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (r)
		return -r;
	pthread_setname_np(t, name);
	*ret_thread = t;
	return 0;
}

/*
 * A condition variable whose timed waits take CLOCK_MONOTONIC deadlines
 * (basic_mono_ns()), so a step of the wall clock neither ends a sleep
 * early nor holds it for the size of the step.  0 or -errno.
 */
static inline int basic_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t attr;
	int r;

	pthread_condattr_init(&attr);
	r = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!r)
		r = pthread_cond_init(cond, &attr);
	pthread_condattr_destroy(&attr);
	return -r;
}
