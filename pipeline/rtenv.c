/* SPDX-License-Identifier: MIT */
/* rtenv.c - what the realtime tail depends on (rtenv.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rtenv.h"

#define QOS_DEFAULT_US 2000000000 /* the kernel's "no request" */

/* root + rel's first line, without its newline; false when unreadable. */
static bool read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static bool read_i64(const char *root, const char *rel, int64_t *ret)
{
	char buf[32], *end;

	if (!read_line(root, rel, buf, sizeof(buf)))
		return false;
	errno = 0;
	*ret = strtoll(buf, &end, 10);
	return !errno && end != buf;
}

/* The PM QoS value in force: the device gives it as a binary int32. */
static void read_qos(const char *root, struct pl_rt_env *e)
{
	char path[512];
	int32_t v;
	int fd;

	snprintf(path, sizeof(path), "%s/dev/cpu_dma_latency", root);
	e->qos_us = -1;
	e->qos_writable = access(path, W_OK) == 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (read(fd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		e->qos_us = v;
	close(fd);
}

static void read_governors(const char *root, struct pl_rt_env *e)
{
	char rel[96], gov[32];

	for (int cpu = 0; cpu < 4096; cpu++) {
		snprintf(rel, sizeof(rel), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu);
		if (!read_line(root, rel, gov, sizeof(gov)))
			break; /* CPUs are numbered without holes */
		if (!e->cpus_freq++)
			snprintf(e->governor, sizeof(e->governor), "%s", gov);
		if (strcmp(gov, "performance"))
			e->cpus_slow++;
	}
}

int pl_rt_env_read(const char *root, struct pl_rt_env *ret_env)
{
	struct pl_rt_env e = { 0 };
	struct rlimit rl;

	if (!root || !ret_env)
		return -EINVAL;
	if (!strcmp(root, "/"))
		root = "";
	(void)read_line(root, "/sys/devices/system/cpu/isolated", e.isolated, sizeof(e.isolated));
	read_governors(root, &e);
	e.rt_known = read_i64(root, "/proc/sys/kernel/sched_rt_runtime_us", &e.rt_runtime_us) &&
	             read_i64(root, "/proc/sys/kernel/sched_rt_period_us", &e.rt_period_us);
	read_qos(root, &e);
	e.fifo_ok = geteuid() == 0 || (getrlimit(RLIMIT_RTPRIO, &rl) == 0 && rl.rlim_cur > 0);
	*ret_env = e;
	return 0;
}

/* Append one formatted line to buf (cut, never overrun). */
static void line(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
	if (n > 0)
		*at = *at + (size_t)n < len ? *at + (size_t)n : len;
}

static void say_summary(const struct pl_rt_env *e, int prio, int lat, char *buf, size_t len, size_t *at)
{
	char qos[64], rt[64];

	if (e->qos_us < 0)
		snprintf(qos, sizeof(qos), "unreadable");
	else if (e->qos_us >= QOS_DEFAULT_US)
		snprintf(qos, sizeof(qos), "no request held now");
	else
		snprintf(qos, sizeof(qos), "%" PRId64 " us held now", e->qos_us);
	if (!e->rt_known)
		snprintf(rt, sizeof(rt), "RT throttling unknown");
	else if (e->rt_runtime_us < 0)
		snprintf(rt, sizeof(rt), "RT throttling off");
	else
		snprintf(rt, sizeof(rt), "RT throttling %" PRId64 " of every %" PRId64 " us", e->rt_runtime_us,
		         e->rt_period_us);
	line(buf, len, at, "realtime: %s; isolated CPUs %s; governor %s%s; PM QoS (/dev/cpu_dma_latency) %s%s; %s\n",
	     prio > 0 ? (e->fifo_ok ? "SCHED_FIFO allowed" : "SCHED_FIFO NOT allowed") : "no SCHED_FIFO asked",
	     e->isolated[0] ? e->isolated : "none", e->cpus_freq ? e->governor : "none (no cpufreq)",
	     e->cpus_freq > 1 && e->cpus_slow && e->cpus_slow < e->cpus_freq ? " (mixed)" : "", qos,
	     lat >= 0 ? (e->qos_writable ? ", the board's request can be held" : ", the board's request CANNOT be held")
	              : "",
	     rt);
}

int pl_rt_env_say(const struct pl_rt_env *e, int rt_priority, int cpu_latency_us, char *buf, size_t len)
{
	size_t at = 0;
	int warnings = 0;

	if (!e || !buf || !len)
		return -EINVAL;
	buf[0] = '\0';
	say_summary(e, rt_priority, cpu_latency_us, buf, len, &at);
	if (rt_priority > 0 && !e->fifo_ok) {
		line(buf, len, &at, "WARNING: rt_priority = %d asks for SCHED_FIFO, but this user may not have it (not "
		     "root, RLIMIT_RTPRIO 0): the bus threads will run at normal priority and wake late under load\n",
		     rt_priority);
		warnings++;
	}
	if (rt_priority > 0 && !e->isolated[0]) {
		line(buf, len, &at, "WARNING: no isolated CPUs (isolcpus= on the kernel command line): the bus "
		     "threads share their CPUs with everything else, and the worst wakeups show it\n");
		warnings++;
	}
	if (rt_priority > 0 && e->cpus_slow) {
		line(buf, len, &at, "WARNING: CPU frequency governor is not 'performance' on %d of %d CPUs: a wakeup "
		     "after idle waits for the clock to ramp up\n", e->cpus_slow, e->cpus_freq);
		warnings++;
	}
	if (cpu_latency_us >= 0 && !e->qos_writable) {
		line(buf, len, &at, "WARNING: the board asks for a PM QoS limit of %d us, but /dev/cpu_dma_latency "
		     "cannot be opened for writing: CPUs may idle deeply and wake the bus threads late\n",
		     cpu_latency_us);
		warnings++;
	}
	if (rt_priority > 0 && e->rt_known && e->rt_runtime_us < 0) {
		line(buf, len, &at, "WARNING: RT throttling is off (sched_rt_runtime_us = -1): a realtime thread that "
		     "runs away can starve the whole system\n");
		warnings++;
	}
	return warnings;
}
