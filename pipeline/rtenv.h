/* SPDX-License-Identifier: MIT */
/*
 * rtenv.h - what the realtime tail depends on outside railmon (issue 30):
 * isolated CPUs, the cpufreq governor, the PM QoS request in force, RT
 * throttling, the kernel's preemption model, and whether this process may
 * have SCHED_FIFO at all; read
 * from a sysfs/proc/dev root (tests give a fake one) and said in plain
 * words, with a warning for each the board's realtime set-up lacks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pl_rt_env {
	char isolated[64];        /* /sys/devices/system/cpu/isolated, "" = none */
	char governor[32];        /* the first CPU's scaling_governor, "" = no cpufreq */
	int cpus_freq;            /* CPUs with a scaling_governor */
	int cpus_slow;            /* ... whose governor is not "performance" */
	int64_t rt_runtime_us;    /* sched_rt_runtime_us; -1 = no throttling */
	int64_t rt_period_us;     /* sched_rt_period_us */
	bool rt_known;            /* the two above were read */
	int64_t qos_us;           /* /dev/cpu_dma_latency now; -1 = unreadable */
	bool qos_writable;        /* this process could hold a request */
	char preempt[16];         /* the kernel's preemption model: "rt",
	                             "full", "lazy", "voluntary", "none";
	                             "" = not found */
	const char *preempt_from; /* where it was read (a static string) */
	bool fifo_ok;             /* SCHED_FIFO allowed (CAP_SYS_NICE/root or
	                             RLIMIT_RTPRIO > 0) */
};

/* Read e from root ("/" on a board; a test's directory); fifo_ok from
   this process.  Files missing are "unknown", never an error: 0, or
   -EINVAL for NULL. */
int pl_rt_env_read(const char *root, struct pl_rt_env *ret_env);

/*
 * The words, one line each ("\n"-separated) into buf: first a summary
 * ("realtime: ..."), then "WARNING: ..." lines for what a board that asks
 * for SCHED_FIFO (rt_priority > 0) or a PM QoS request (cpu_latency_us >=
 * 0) runs without.  Returns the number of warnings.
 */
int pl_rt_env_say(const struct pl_rt_env *e, int rt_priority, int cpu_latency_us, char *buf, size_t len);
