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
#include <stdlib.h>
#include <string.h>

#include "acq-private.h"
#include "basic/clock.h"

#define MONITOR_EVENTS 16  /* events per check: a few state changes at most */

struct acq_monitor {
	acq_source_t **sources;
	size_t n;
	int64_t period_ns;
	acq_thread_t *thread;
	atomic_bool stop;
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
	atomic_init(&m->stop, false);
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

	while (!atomic_load_explicit(&m->stop, memory_order_relaxed)) {
		int64_t now = basic_mono_ns();

		if (now >= next) {
			acq_monitor_poll(m);
			/* A slow check pushes the next round, never a burst. */
			next += m->period_ns;
			if (next < now)
				next = now + m->period_ns;
			continue;
		}
		/* In slices, so a stop is seen within 100 ms. */
		basic_sleep_until(CLOCK_MONOTONIC, next - now > 100 * BASIC_NS_PER_MS ? now + 100 * BASIC_NS_PER_MS : next);
	}
	return NULL;
}

int acq_monitor_start(acq_monitor_t *m, const struct acq_thread_cfg *tcfg)
{
	struct acq_thread_cfg def = { .name = "monitor", .priority = 0, .cpu = -1 };

	if (!m || m->thread)
		return -EINVAL;
	if (!m->n)
		return 0; /* nothing to check: no thread */
	atomic_store(&m->stop, false);
	return acq_thread_start(tcfg ? tcfg : &def, monitor_main, m, &m->thread, NULL);
}

int acq_monitor_stop(acq_monitor_t *m)
{
	if (!m || !m->thread)
		return -EINVAL;
	atomic_store_explicit(&m->stop, true, memory_order_relaxed);
	m->thread = acq_thread_join(m->thread);
	return 0;
}

acq_monitor_t *acq_monitor_free(acq_monitor_t *m)
{
	if (!m)
		return NULL;
	if (m->thread)
		acq_monitor_stop(m);
	free(m->sources);
	free(m);
	return NULL;
}
