/* SPDX-License-Identifier: MIT */
/*
 * test-rtenv.c - what the realtime tail depends on (pipeline/rtenv.h),
 * read from fake sysfs/proc/dev roots: a tuned board says it all and
 * warns of nothing; an untuned one gets one plain warning per lack
 * (SCHED_FIFO refused, no isolated CPUs, a slow governor, a PM QoS request
 * that cannot be held, RT throttling off, a kernel that preempts only at
 * its own points); a board that asks for no realtime gets no warnings.
 * The preemption model from each place the kernel says it, in order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pipeline/rtenv.h"
#include "tlib.h"

static void put(const char *root, const char *rel, const void *data, size_t len)
{
	char path[512], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		(void)mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	CHECK(f && fwrite(data, 1, len, f) == len && fclose(f) == 0, "write %s", path);
}

static void puts_root(const char *root, const char *rel, const char *text)
{
	put(root, rel, text, strlen(text));
}

#define HAS(text, needle) CHECK(strstr(text, needle), "no \"%s\" in:\n%s", needle, text)

static void test_tuned(const char *root)
{
	int32_t qos = 10;
	struct pl_rt_env e;
	char text[2048];

	puts_root(root, "/sys/devices/system/cpu/isolated", "2-3\n");
	puts_root(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
	puts_root(root, "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance\n");
	puts_root(root, "/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
	puts_root(root, "/proc/sys/kernel/sched_rt_period_us", "1000000\n");
	put(root, "/dev/cpu_dma_latency", &qos, sizeof(qos)); /* binary, as the device */
	/* PREEMPT_DYNAMIC switched to full: debugfs says the model in force,
	   over the command line and the configuration's default */
	puts_root(root, "/sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
	puts_root(root, "/proc/cmdline", "quiet preempt=none\n");
	CHECK(pl_rt_env_read(root, &e) == 0);
	CHECK(!strcmp(e.preempt, "full") && !strcmp(e.preempt_from, "debugfs sched/preempt"), "%s", e.preempt);
	CHECK(!strcmp(e.isolated, "2-3") && e.cpus_freq == 2 && e.cpus_slow == 0 && e.rt_known &&
	      e.rt_runtime_us == 950000 && e.rt_period_us == 1000000 && e.qos_us == 10 && e.qos_writable);
	e.fifo_ok = true;
	CHECK(pl_rt_env_say(&e, 80, 10, text, sizeof(text)) == 0, "warnings for a tuned board:\n%s", text);
	HAS(text, "realtime: SCHED_FIFO allowed; isolated CPUs 2-3; governor performance; ");
	HAS(text, "PM QoS (/dev/cpu_dma_latency) 10 us held now, the board's request can be held; ");
	HAS(text, "RT throttling 950000 of every 1000000 us; kernel preemption full (debugfs sched/preempt)\n");
	CHECK(!strstr(text, "WARNING"), "%s", text);
	printf("tuned: %s", text);
}

static void test_untuned(const char *root)
{
	struct pl_rt_env e;
	char text[2048];

	puts_root(root, "/sys/devices/system/cpu/isolated", "\n");
	puts_root(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "performance\n");
	puts_root(root, "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
	puts_root(root, "/proc/sys/kernel/sched_rt_runtime_us", "-1\n");
	puts_root(root, "/proc/sys/kernel/sched_rt_period_us", "1000000\n");
	/* no /dev/cpu_dma_latency: no PM QoS on this kernel; no debugfs, no
	   preempt= (after "--" is init's): the configuration's default */
	puts_root(root, "/proc/cmdline", "quiet -- preempt=full\n");
	puts_root(root, "/proc/sys/kernel/osrelease", "6.1.0-test\n");
	puts_root(root, "/boot/config-6.1.0-test",
	          "CONFIG_PREEMPT_BUILD=y\nCONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\n"
	          "CONFIG_PREEMPT_DYNAMIC=y\n");
	CHECK(pl_rt_env_read(root, &e) == 0);
	CHECK(!strcmp(e.preempt, "voluntary") && !strcmp(e.preempt_from, "the kernel's configuration"), "%s",
	      e.preempt);
	CHECK(!e.isolated[0] && e.cpus_freq == 2 && e.cpus_slow == 1 && e.rt_runtime_us == -1 && e.qos_us == -1 &&
	      !e.qos_writable);
	e.fifo_ok = false;
	CHECK(pl_rt_env_say(&e, 80, 10, text, sizeof(text)) == 6, "want 6 warnings:\n%s", text);
	HAS(text, "realtime: SCHED_FIFO NOT allowed; isolated CPUs none; governor performance (mixed); ");
	HAS(text, "PM QoS (/dev/cpu_dma_latency) unreadable, the board's request CANNOT be held; RT throttling off; kernel preemption voluntary (the kernel's configuration)\n");
	HAS(text, "WARNING: the kernel preempts only at its own preemption points (model voluntary, from the "
	          "kernel's configuration)");
	HAS(text, "WARNING: rt_priority = 80 asks for SCHED_FIFO, but this user may not have it");
	HAS(text, "WARNING: no isolated CPUs");
	HAS(text, "WARNING: CPU frequency governor is not 'performance' on 1 of 2 CPUs");
	HAS(text, "WARNING: the board asks for a PM QoS limit of 10 us, but /dev/cpu_dma_latency cannot be opened");
	HAS(text, "WARNING: RT throttling is off (sched_rt_runtime_us = -1)");
	printf("untuned: %s", text);

	/* a board that asks for no realtime is warned of nothing */
	CHECK(pl_rt_env_say(&e, 0, -1, text, sizeof(text)) == 0, "%s", text);
	HAS(text, "realtime: no SCHED_FIFO asked;");
	/* an empty root: everything unknown, nothing made up */
	CHECK(pl_rt_env_read("/nonexistent-rtenv-root", &e) == 0);
	CHECK(!e.isolated[0] && !e.cpus_freq && !e.rt_known && e.qos_us == -1);
	CHECK(pl_rt_env_say(&e, 80, -1, text, sizeof(text)) >= 1);
	CHECK(!e.preempt[0]);
	HAS(text, "governor none (no cpufreq); PM QoS (/dev/cpu_dma_latency) unreadable; RT throttling unknown; "
	          "kernel preemption unknown\n");
	CHECK(!strstr(text, "preemption points"), "%s", text);
	/* bad arguments; a short buffer is cut, never overrun */
	CHECK(pl_rt_env_read(NULL, &e) == -EINVAL && pl_rt_env_read(root, NULL) == -EINVAL);
	CHECK(pl_rt_env_say(NULL, 80, 10, text, sizeof(text)) == -EINVAL);
	CHECK(pl_rt_env_say(&e, 80, 10, text, 0) == -EINVAL);
	memset(text, 'x', sizeof(text));
	CHECK(pl_rt_env_say(&e, 80, 10, text, 16) >= 1 && strlen(text) == 15 && text[16] == 'x');
}

/* Each place the model is read from, in the order the kernel's word
   counts: a PREEMPT_RT kernel's flag over everything, the command line
   over the configuration, /proc/config.gz (gzip) before /boot. */
static void test_preempt_sources(const char *root)
{
	char path[512], text[2048];
	struct pl_rt_env e;
	gzFile gz;

	snprintf(path, sizeof(path), "%s/proc/config.gz", root);
	puts_root(root, "/proc/sys/kernel/osrelease", "6.1.0-rt\n");
	puts_root(root, "/boot/config-6.1.0-rt", "CONFIG_PREEMPT_VOLUNTARY=y\n");
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "voluntary"), "%s", e.preempt);
	/* gzip, as the kernel gives it: CONFIG_PREEMPT is set beside _RT */
	gz = gzopen(path, "wb");
	CHECK(gz && gzputs(gz, "CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=y\n") > 0 &&
	      gzclose(gz) == Z_OK);
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "rt") &&
	      !strcmp(e.preempt_from, "the kernel's configuration"), "%s", e.preempt);
	puts_root(root, "/proc/cmdline", "BOOT_IMAGE=/vmlinuz preempt=none ro\n");
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "none") &&
	      !strcmp(e.preempt_from, "the kernel command line"), "%s", e.preempt);
	e.fifo_ok = true;
	CHECK(pl_rt_env_say(&e, 80, -1, text, sizeof(text)) >= 1);
	HAS(text, "WARNING: the kernel preempts only at its own preemption points (model none, from the kernel "
	          "command line)");
	puts_root(root, "/proc/cmdline", "preempt=bogus\n"); /* not a model: the configuration says it */
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "rt"), "%s", e.preempt);
	puts_root(root, "/sys/kernel/realtime", "1\n");
	puts_root(root, "/sys/kernel/debug/sched/preempt", "(none) voluntary full\n");
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "rt") &&
	      !strcmp(e.preempt_from, "/sys/kernel/realtime"), "%s", e.preempt);
	CHECK(pl_rt_env_say(&e, 80, -1, text, sizeof(text)) >= 0 && !strstr(text, "preemption points"), "%s", text);
	HAS(text, "kernel preemption rt (/sys/kernel/realtime)");
	/* lazy preempts a realtime thread at once (only fair tasks wait) */
	puts_root(root, "/sys/kernel/realtime", "0\n");
	puts_root(root, "/sys/kernel/debug/sched/preempt", "none voluntary full (lazy)\n");
	CHECK(pl_rt_env_read(root, &e) == 0 && !strcmp(e.preempt, "lazy"), "%s", e.preempt);
	CHECK(pl_rt_env_say(&e, 80, -1, text, sizeof(text)) >= 0 && !strstr(text, "preemption points"), "%s", text);
}

int main(void)
{
	char a[] = "/tmp/test-rtenv-XXXXXX", b[] = "/tmp/test-rtenv-XXXXXX", c[] = "/tmp/test-rtenv-XXXXXX";
	char cmd[192];

	CHECK(mkdtemp(a) && mkdtemp(b) && mkdtemp(c));
	test_tuned(a);
	test_untuned(b);
	test_preempt_sources(c);
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s", a, b, c);
	CHECK(system(cmd) == 0);
	printf("test-rtenv: ok\n");
	return 0;
}
