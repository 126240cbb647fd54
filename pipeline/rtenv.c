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
#include <zlib.h>

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

/*
 * The kernel's preemption model.  Under "none" or "voluntary" a woken
 * realtime thread waits until the kernel code running on its CPU reaches
 * a preemption point: milliseconds under I/O or memory load, and no
 * priority shortens it.  Read where the kernel says it, best first:
 * /sys/kernel/realtime (PREEMPT_RT kernels), debugfs's sched/preempt
 * (the model in force with PREEMPT_DYNAMIC, "none (voluntary) full"),
 * preempt= on the command line (a PREEMPT_DYNAMIC kernel takes it), and
 * the kernel's configuration (/proc/config.gz, /boot/config-<release>),
 * whose choice is the boot default.
 */
static bool preempt_name(const char *word, size_t len, struct pl_rt_env *e)
{
	static const char *const known[] = { "none", "voluntary", "full", "lazy" };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (len == strlen(known[i]) && !strncmp(word, known[i], len)) {
			snprintf(e->preempt, sizeof(e->preempt), "%s", known[i]);
			return true;
		}
	return false;
}

static bool preempt_cmdline(const char *root, struct pl_rt_env *e)
{
	char cmd[4096];

	if (!read_line(root, "/proc/cmdline", cmd, sizeof(cmd)))
		return false;
	for (char *w = strtok(cmd, " "); w; w = strtok(NULL, " ")) {
		if (!strcmp(w, "--"))
			break; /* init's arguments follow */
		if (!strncmp(w, "preempt=", 8) && preempt_name(w + 8, strlen(w + 8), e))
			return true;
	}
	return false;
}

/* A kernel configuration's CONFIG_PREEMPT* choice; gz reads plain files
   too. */
static bool preempt_config(const char *path, struct pl_rt_env *e)
{
	static const struct {
		const char *line, *model;
	} choice[] = { { "CONFIG_PREEMPT_RT=y", "rt" },           { "CONFIG_PREEMPT=y", "full" },
		       { "CONFIG_PREEMPT_LAZY=y", "lazy" },       { "CONFIG_PREEMPT_VOLUNTARY=y", "voluntary" },
		       { "CONFIG_PREEMPT_NONE=y", "none" } };
	char line[256];
	size_t best = sizeof(choice) / sizeof(choice[0]);
	gzFile f = gzopen(path, "rb");

	if (!f)
		return false;
	while (gzgets(f, line, sizeof(line))) {
		line[strcspn(line, "\n")] = '\0';
		for (size_t i = 0; i < best; i++)
			if (!strcmp(line, choice[i].line))
				best = i; /* RT builds set CONFIG_PREEMPT too: the first wins */
	}
	gzclose(f);
	if (best == sizeof(choice) / sizeof(choice[0]))
		return false;
	snprintf(e->preempt, sizeof(e->preempt), "%s", choice[best].model);
	return true;
}

static void read_preempt(const char *root, struct pl_rt_env *e)
{
	char buf[128], path[512], rel[96];
	char *open_paren, *close_paren;

	if (read_line(root, "/sys/kernel/realtime", buf, sizeof(buf)) && !strcmp(buf, "1")) {
		snprintf(e->preempt, sizeof(e->preempt), "rt");
		e->preempt_from = "/sys/kernel/realtime";
		return;
	}
	if (read_line(root, "/sys/kernel/debug/sched/preempt", buf, sizeof(buf)) &&
	    (open_paren = strchr(buf, '(')) && (close_paren = strchr(open_paren, ')')) &&
	    preempt_name(open_paren + 1, (size_t)(close_paren - open_paren - 1), e)) {
		e->preempt_from = "debugfs sched/preempt";
		return;
	}
	if (preempt_cmdline(root, e)) {
		e->preempt_from = "the kernel command line";
		return;
	}
	snprintf(path, sizeof(path), "%s/proc/config.gz", root);
	if (preempt_config(path, e)) {
		e->preempt_from = "the kernel's configuration";
		return;
	}
	if (read_line(root, "/proc/sys/kernel/osrelease", rel, sizeof(rel))) {
		snprintf(path, sizeof(path), "%s/boot/config-%s", root, rel);
		if (preempt_config(path, e))
			e->preempt_from = "the kernel's configuration";
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
	read_preempt(root, &e);
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
	char qos[64], rt[64], pre[96];

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
	if (e->preempt[0])
		snprintf(pre, sizeof(pre), "kernel preemption %s (%s)", e->preempt, e->preempt_from);
	else
		snprintf(pre, sizeof(pre), "kernel preemption unknown");
	line(buf, len, at, "realtime: %s; isolated CPUs %s; governor %s%s; PM QoS (/dev/cpu_dma_latency) %s%s; %s; %s\n",
	     prio > 0 ? (e->fifo_ok ? "SCHED_FIFO allowed" : "SCHED_FIFO NOT allowed") : "no SCHED_FIFO asked",
	     e->isolated[0] ? e->isolated : "none", e->cpus_freq ? e->governor : "none (no cpufreq)",
	     e->cpus_freq > 1 && e->cpus_slow && e->cpus_slow < e->cpus_freq ? " (mixed)" : "", qos,
	     lat >= 0 ? (e->qos_writable ? ", the board's request can be held" : ", the board's request CANNOT be held")
	              : "",
	     rt, pre);
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
	if (rt_priority > 0 && (!strcmp(e->preempt, "none") || !strcmp(e->preempt, "voluntary"))) {
		line(buf, len, &at, "WARNING: the kernel preempts only at its own preemption points (model %s, from "
		     "%s): a woken bus thread waits for the kernel work on its CPU to reach one, milliseconds under "
		     "I/O or memory load, whatever its priority; boot with preempt=full (a PREEMPT_DYNAMIC kernel) or "
		     "run a PREEMPT_RT kernel\n", e->preempt, e->preempt_from);
		warnings++;
	}
	if (rt_priority > 0 && e->rt_known && e->rt_runtime_us < 0) {
		line(buf, len, &at, "WARNING: RT throttling is off (sched_rt_runtime_us = -1): a realtime thread that "
		     "runs away can starve the whole system\n");
		warnings++;
	}
	return warnings;
}
