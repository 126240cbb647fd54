/* SPDX-License-Identifier: MIT */
/* thread.c - realtime thread set-up: SCHED_FIFO, affinity, stack pre-fault. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "acq.h"
#include "basic/clock.h"

#define ACQ_STACK_DEFAULT (256 * 1024)
/* Pre-fault this much of the stack: deep enough for the RX/poll loops
   and libc calls they make, small enough to keep well inside the stack. */
#define ACQ_STACK_PREFAULT (64 * 1024)

#define ACQ_PM_QOS_PATH "/dev/cpu_dma_latency"

struct acq_thread {
	pthread_t tid;
	char name[16];
	void *(*fn)(void *);
	void *arg;
};

struct acq_cpu_latency {
	int fd; /* the request lives as long as this stays open */
};

int acq_rt_lock_memory(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		return -errno;
	return 0;
}

/* Touch the stack pages now, so the first deep call on the realtime path
   does not take a page fault (mlockall covers only mapped pages). */
static void __attribute__((noinline)) prefault_stack(void)
{
	volatile unsigned char buf[ACQ_STACK_PREFAULT];

	for (size_t i = 0; i < sizeof(buf); i += 4096)
		buf[i] = 0;
}

static void *thread_trampoline(void *p)
{
	struct acq_thread *t = p;

	pthread_setname_np(pthread_self(), t->name);
	prefault_stack();
	return t->fn(t->arg);
}

/* Ask for the realtime attributes; returns 0 or the -errno of the refusal. */
static int thread_attr_rt(pthread_attr_t *attr, const struct acq_thread_cfg *cfg)
{
	struct sched_param sp = { .sched_priority = cfg->priority };
	int r;

	if (cfg->priority <= 0)
		return 0;
	if (cfg->priority > sched_get_priority_max(SCHED_FIFO))
		return -EINVAL;
	r = pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED);
	if (!r)
		r = pthread_attr_setschedpolicy(attr, SCHED_FIFO);
	if (!r)
		r = pthread_attr_setschedparam(attr, &sp);
	return -r;
}

static int thread_attr_cpu(pthread_attr_t *attr, int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	if (cpu >= CPU_SETSIZE)
		return -EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_attr_setaffinity_np(attr, sizeof(set), &set);
}

static int thread_create(struct acq_thread *t, const struct acq_thread_cfg *cfg, bool rt, int *degraded)
{
	pthread_attr_t attr;
	int r;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, cfg->stack_bytes ? cfg->stack_bytes : ACQ_STACK_DEFAULT);
	if (rt) {
		r = thread_attr_rt(&attr, cfg);
		if (r < 0 && !*degraded)
			*degraded = r;
		r = thread_attr_cpu(&attr, cfg->cpu);
		if (r < 0 && !*degraded)
			*degraded = r;
	}
	r = pthread_create(&t->tid, &attr, thread_trampoline, t);
	pthread_attr_destroy(&attr);
	return -r;
}

int acq_thread_start(const struct acq_thread_cfg *cfg, void *(*fn)(void *), void *arg,
                     acq_thread_t **ret_thread, int *ret_degraded)
{
	struct acq_thread *t;
	int degraded = 0, r;

	if (!cfg || !fn || !ret_thread || cfg->priority < 0 || cfg->priority > 99)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	strncpy(t->name, cfg->name ? cfg->name : "railmon", sizeof(t->name) - 1);
	t->fn = fn;
	t->arg = arg;
	r = thread_create(t, cfg, true, &degraded);
	/* EPERM: no right to SCHED_FIFO here (container, no CAP_SYS_NICE).
	   Run anyway at normal priority and let the caller warn. */
	if (r == -EPERM && cfg->priority > 0) {
		degraded = r;
		r = thread_create(t, cfg, false, &degraded);
	}
	if (r < 0) {
		free(t);
		return r;
	}
	if (ret_degraded)
		*ret_degraded = degraded;
	*ret_thread = t;
	return 0;
}

acq_thread_t *acq_thread_join(acq_thread_t *t)
{
	if (!t)
		return NULL;
	pthread_join(t->tid, NULL);
	free(t);
	return NULL;
}

int acq_cpu_latency_new(int32_t max_us, acq_cpu_latency_t **ret_req)
{
	acq_cpu_latency_t *q;
	ssize_t w;

	if (max_us < 0 || !ret_req)
		return -EINVAL;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->fd = open(ACQ_PM_QOS_PATH, O_WRONLY | O_CLOEXEC);
	if (q->fd < 0) {
		int r = -errno;

		free(q);
		return r;
	}
	/* The kernel takes a binary s32 (or a hex string); it holds the
	   request until the file is closed. */
	w = write(q->fd, &max_us, sizeof(max_us));
	if (w != (ssize_t)sizeof(max_us)) {
		int r = w < 0 ? -errno : -EIO;

		close(q->fd);
		free(q);
		return r;
	}
	*ret_req = q;
	return 0;
}

acq_cpu_latency_t *acq_cpu_latency_free(acq_cpu_latency_t *req)
{
	if (!req)
		return NULL;
	close(req->fd);
	free(req);
	return NULL;
}

int64_t acq_cpu_latency_current(void)
{
	int32_t v;
	int fd = open(ACQ_PM_QOS_PATH, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, &v, sizeof(v));
	n = n < 0 ? -errno : n;
	close(fd);
	if (n < 0)
		return n;
	return n == (ssize_t)sizeof(v) ? v : -EIO;
}
