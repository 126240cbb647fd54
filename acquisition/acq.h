/* SPDX-License-Identifier: MIT */
/*
 * acq.h - realtime runtime and the collector.
 *
 * Realtime threads (one per CAN bus, one per Modbus link) only wait, read,
 * timestamp and push into their own SPSC ring of struct acq_item.  The
 * collector thread (normal priority) drains every ring and hands the items
 * to a sink callback (pipeline/sink.c decodes, encodes, stores).  Nothing in this
 * module knows about buses, files or protobuf.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acq-item.h"
#include "acq-latency.h"
#include "acq-ring.h"

ACQ_RING_DEFINE(item, struct acq_item)

/* ------------------------------------------------------------ threads */

struct acq_thread_cfg {
	const char *name;   /* <= 15 chars shown by ps/top; copied */
	int priority;       /* SCHED_FIFO priority 1..99; 0 = SCHED_OTHER */
	int cpu;            /* pin to this CPU; -1 = any */
	size_t stack_bytes; /* 0 = 256 KiB; pre-faulted before fn runs */
};

typedef struct acq_thread acq_thread_t;

/*
 * Start fn(arg) on a new thread configured by cfg.  If SCHED_FIFO or the
 * affinity is refused (no CAP_SYS_NICE, rlimit), the thread still starts at
 * normal priority and *ret_degraded (if not NULL) is set to the -errno of
 * the refusal, so the caller can say so (pl_sources_start, pipeline/sources.c,
 * words it and cli/ prints them); 0 when everything was granted.
 * Returns 0 or -errno (thread could not be created at all).
 */
int acq_thread_start(const struct acq_thread_cfg *cfg, void *(*fn)(void *), void *arg,
                     acq_thread_t **ret_thread, int *ret_degraded);

/* Join and free; accepts NULL; returns NULL.  The caller must have made
   fn return (e.g. through its own stop flag) first. */
acq_thread_t *acq_thread_join(acq_thread_t *t);

/*
 * Lock current and future memory (mlockall) so page faults never stall a
 * realtime thread.  Returns 0 or -errno (EPERM without CAP_IPC_LOCK or
 * enough RLIMIT_MEMLOCK); the caller decides whether that is fatal.
 */
int acq_rt_lock_memory(void);

/*
 * Keep every CPU out of idle states that take longer than max_us to leave,
 * for as long as the handle lives (the kernel's PM QoS request,
 * /dev/cpu_dma_latency, the request cyclictest makes).  Without it an idle
 * CPU sleeps deeply (on a VM: halts, and the host must wake the vCPU) and
 * a timer that expires there runs its thread hundreds of microseconds
 * late: a poll thread then does worse on a quiet board than on a busy one.
 * max_us 0 keeps the CPUs polling (costs power); >= 0.  Returns 0 or
 * -errno (-ENOENT: a kernel without PM QoS; -EACCES: not root).  Not for
 * realtime threads (it opens a file); the request ends when the handle is
 * freed or the process exits.
 */
typedef struct acq_cpu_latency acq_cpu_latency_t;
int acq_cpu_latency_new(int32_t max_us, acq_cpu_latency_t **ret_req);
acq_cpu_latency_t *acq_cpu_latency_free(acq_cpu_latency_t *req);

/* The limit in force now, in microseconds, over every request of every
   process (the kernel's aggregate: the smallest), or -errno. */
int64_t acq_cpu_latency_current(void);

/* ---------------------------------------------------------- collector */

/*
 * The sink receives items drained from the rings, in per-ring order.
 * It returns 0 or -errno; an error is counted and the collector goes on
 * (a sink must not lose what it was given silently: it records a fault).
 * tick() is called at least every tick_ms, also when idle, so the sink can
 * close batches on time and sync the log.
 */
struct acq_source; /* source.h */

/* A check event waits for the source's stream to pass its time at most
   this long: a device whose stamps run on another clock (a controller's
   raw hardware time) must not hold its checks back for ever. */
#define ACQ_MERGE_HOLD_MAX_NS (2 * 1000000000ll)

struct acq_collector_cfg {
	struct acq_ring **rings;   /* rings to drain; must outlive the collector */
	size_t nrings;
	uint16_t *ring_bus;        /* bus index of each ring, for overrun events */
	/*
	 * Optional, per ring (NULL, or NULL entries): the acq_source that
	 * produces it.  A source with link checks has a second ring, filled by
	 * the monitor thread; the collector merges it into the ring's stream
	 * by time stamp: a check event goes to the sink after the items of
	 * the ring stamped at or before it and before those stamped after it,
	 * once the source has published that it read everything stamped
	 * before it (its watermark), or after ACQ_MERGE_HOLD_MAX_NS at most.
	 */
	struct acq_source *const *sources;
	size_t drain_max;          /* items per sink call; 0 = 1024 */
	uint32_t idle_us;          /* period of the passes over the rings while
	                              they keep up; 0 = 1000 */
	uint32_t tick_ms;          /* 0 = 50 */
	int (*sink)(void *ctx, const struct acq_item *items, size_t n);
	int (*tick)(void *ctx);
	void *ctx;
};

struct acq_collector_stats {
	uint64_t items;       /* drained */
	uint64_t ring_drops;  /* sum over rings of producer-side drops seen */
	uint64_t sink_errors;
	uint64_t loops;
};

typedef struct acq_collector acq_collector_t;

int acq_collector_new(const struct acq_collector_cfg *cfg, acq_collector_t **ret_col);
acq_collector_t *acq_collector_free(acq_collector_t *col);

/*
 * Drain once: empty every ring (up to drain_max per sink call), turn new
 * ring drops into ACQ_EV_RING_OVERRUN events, call tick when due.  Returns
 * the number of items drained or -errno.  The thread body calls it in a
 * loop; tests call it directly.
 */
int acq_collector_poll(acq_collector_t *col);

/* The period the collector's thread passes at now (idle_us, shorter while
   a ring fills fast; collector.c), in microseconds; any thread may ask. */
uint32_t acq_collector_period_us(const acq_collector_t *col);

/* Run acq_collector_poll() on a thread until stop; then drain what is left. */
int acq_collector_start(acq_collector_t *col, const struct acq_thread_cfg *tcfg);
int acq_collector_stop(acq_collector_t *col);

int acq_collector_stats(const acq_collector_t *col, struct acq_collector_stats *ret_stats);
