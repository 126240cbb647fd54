/* SPDX-License-Identifier: MIT */
/*
 * monitor.c - the thread that runs the sources' link checks.
 *
 * A check may block for netlink round-trips (libsocketcan: controller
 * state, error counters, interface statistics), under the kernel's rtnl
 * lock that any `ip link` elsewhere holds.  On the SCHED_FIFO receive
 * thread that would stall reception for as long, so checks run here, at
 * normal priority, once a period for every source that has one.  Their
 * events go into each source's check ring; the collector merges them into
 * the source's stream by time stamp, so a bus state change still sits
 * among the frames around it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "acq-private.h"
#include "basic/clock.h"
#include "basic/thread.h"

#define MONITOR_EVENTS 16  /* events per check: a few state changes at most */

struct acq_monitor {
	acq_source_t **sources;
	size_t n;
	int64_t period_ns;
	acq_thread_t *thread;
	/* stop is set under lock and signalled: the thread sleeps its whole
	   period (one wakeup a second), not in slices to look at a flag. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;
};

int acq_monitor_new(acq_source_t *const *sources, size_t n, uint32_t period_ms, acq_monitor_t **ret)
{
	acq_monitor_t *m;

	if ((n && !sources) || !ret)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->sources = calloc(n ? n : 1, sizeof(*m->sources));
	if (!m->sources) {
		free(m);
		return -ENOMEM;
	}
	/* Only the sources that have something to check. */
	for (size_t i = 0; i < n; i++)
		if (acq_source_check_ring(sources[i]))
			m->sources[m->n++] = sources[i];
	m->period_ns = (int64_t)(period_ms ? period_ms : 1000) * BASIC_NS_PER_MS;
	pthread_mutex_init(&m->lock, NULL);
	if (basic_cond_init_monotonic(&m->wake) < 0) {
		pthread_mutex_destroy(&m->lock);
		free(m->sources);
		free(m);
		return -ENOMEM;
	}
	*ret = m;
	return 0;
}

int acq_monitor_poll(acq_monitor_t *m)
{
	struct acq_item ev[MONITOR_EVENTS];
	int total = 0;

	if (!m)
		return -EINVAL;
	for (size_t i = 0; i < m->n; i++)
		total += acq_source_check(m->sources[i], ev, MONITOR_EVENTS);
	return total;
}

static void *monitor_main(void *p)
{
	acq_monitor_t *m = p;
	int64_t next = basic_mono_ns() + m->period_ns;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		int64_t now = basic_mono_ns();

		if (now >= next) {
			pthread_mutex_unlock(&m->lock);
			acq_monitor_poll(m);
			pthread_mutex_lock(&m->lock);
			/* A slow check pushes the next round, never a burst. */
			next += m->period_ns;
			if (next < now)
				next = now + m->period_ns;
			continue;
		}
		struct timespec ts = basic_ns_to_ts(next);
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int acq_monitor_start(acq_monitor_t *m, const struct acq_thread_cfg *tcfg)
{
	struct acq_thread_cfg def = { .name = "monitor", .priority = 0, .cpu = -1 };

	if (!m || m->thread)
		return -EINVAL;
	if (!m->n)
		return 0; /* nothing to check: no thread */
	m->stop = false;
	return acq_thread_start(tcfg ? tcfg : &def, monitor_main, m, &m->thread, NULL);
}

int acq_monitor_stop(acq_monitor_t *m)
{
	if (!m || !m->thread)
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->wake);
	pthread_mutex_unlock(&m->lock);
	m->thread = acq_thread_join(m->thread);
	return 0;
}

acq_monitor_t *acq_monitor_free(acq_monitor_t *m)
{
	if (!m)
		return NULL;
	if (m->thread)
		acq_monitor_stop(m);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->lock);
	free(m->sources);
	free(m);
	return NULL;
}
