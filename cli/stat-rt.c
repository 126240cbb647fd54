/* SPDX-License-Identifier: MIT */
/*
 * stat-rt.c - `railmon stat`'s realtime lines (stat-rt.h).
 *
 * `check` says what a board's tail will depend on where it is checked;
 * stat says what it depends on now, for the daemon that runs: a SCHED_FIFO
 * request that was refused at start (the threads degrade to SCHED_OTHER
 * and only a line in the journal said so), a PM QoS request not held, and
 * the machine's isolated CPUs, governor and RT throttling.  The policy is
 * read back per thread from the kernel, not from the board file, since
 * that is what the scheduler does.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/stat-rt.h"
#include "pipeline/rtenv.h"

#define RT_TEXT_MAX 2048

struct rt_threads {
	unsigned bus, bus_fifo, others;
	int min_prio;            /* the lowest priority among bus threads at SCHED_FIFO/RR */
	char not_fifo[256];      /* bus threads that are not */
	char list[1024];         /* "rx-x SCHED_FIFO 80, ..." */
};

static const char *policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "SCHED_OTHER";
	case SCHED_FIFO: return "SCHED_FIFO";
	case SCHED_RR: return "SCHED_RR";
	case SCHED_BATCH: return "SCHED_BATCH";
	case SCHED_IDLE: return "SCHED_IDLE";
	default: return "SCHED_?";
	}
}

static void append(char *buf, size_t len, const char *sep, const char *text)
{
	size_t at = strlen(buf);

	snprintf(buf + at, len - at, "%s%s", at ? sep : "", text);
}

/* One thread of the daemon: a bus thread (rx-*) is listed with its policy. */
static void thread_note(struct rt_threads *t, const char *proc_root, pid_t pid, const char *tid_name)
{
	char path[512], comm[32] = "", item[96];
	struct sched_param sp = { 0 };
	pid_t tid = (pid_t)atoi(tid_name);
	int policy = sched_getscheduler(tid);
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/%d/task/%s/comm", proc_root, (int)pid, tid_name);
	if ((f = fopen(path, "re"))) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	if (strncmp(comm, "rx-", 3)) {
		t->others++;
		return;
	}
	t->bus++;
	if (policy < 0 || sched_getparam(tid, &sp) < 0) {
		snprintf(item, sizeof(item), "%s (gone)", comm);
		append(t->list, sizeof(t->list), ", ", item);
		return;
	}
	snprintf(item, sizeof(item), "%s %s %d", comm, policy_name(policy), sp.sched_priority);
	append(t->list, sizeof(t->list), ", ", item);
	if (policy == SCHED_FIFO || policy == SCHED_RR) {
		if (!t->bus_fifo++ || sp.sched_priority < t->min_prio)
			t->min_prio = sp.sched_priority;
	} else {
		append(t->not_fifo, sizeof(t->not_fifo), ", ", comm);
	}
}

static int threads_read(const char *proc_root, pid_t pid, struct rt_threads *t)
{
	char path[512];
	struct dirent *de;
	DIR *dir;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "%s/proc/%d/task", proc_root, (int)pid);
	if (!(dir = opendir(path)))
		return -errno;
	while ((de = readdir(dir)))
		if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
			thread_note(t, proc_root, pid, de->d_name);
	closedir(dir);
	return 0;
}

/* The daemon's side: its bus threads' policy, its PM QoS request. */
static int say_daemon(FILE *out, pid_t pid, const struct cli_stat_daemon *d, const struct rt_threads *t)
{
	int warnings = 0;

	fprintf(out, "realtime: daemon %d: bus threads %s; PM QoS request %s\n", (int)pid, t->bus ? t->list : "none",
	        d->pm_qos_held ? "held" : d->cpu_latency_us >= 0 && d->rt_priority > 0 ? "NOT held" : "none asked");
	if (d->rt_priority > 0 && d->cpu_latency_us >= 0 && !d->pm_qos_held) {
		fprintf(out, "WARNING: the board asks for a PM QoS limit of %d us, but the daemon holds no request: "
		        "CPUs may idle deeply and wake the bus threads late\n", d->cpu_latency_us);
		warnings++;
	}
	return warnings;
}

int cli_stat_realtime(FILE *out, pid_t pid, const struct cli_stat_daemon *d, const char *root, const char *proc_root)
{
	struct pl_rt_env e;
	struct rt_threads t;
	char text[RT_TEXT_MAX];
	int warnings, r = threads_read(proc_root, pid, &t);

	if (r < 0) {
		fprintf(out, "realtime: the daemon's threads (pid %d) cannot be read: %s\n", (int)pid, strerror(-r));
		return r;
	}
	warnings = say_daemon(out, pid, d, &t);
	if (pl_rt_env_read(root, &e) < 0)
		return warnings;
	/* Whether SCHED_FIFO is allowed: to the daemon, as its bus threads
	   show, not to whoever runs stat (check can only ask the latter). */
	e.fifo_ok = !t.not_fifo[0];
	/* The machine's side, in check's words; the daemon's PM QoS request
	   was said above (whether this user could open the device does not
	   matter to a daemon that holds it or was refused it). */
	r = pl_rt_env_say(&e, d->rt_priority, -1, text, sizeof(text));
	fputs(text, out);
	return warnings + (r > 0 ? r : 0);
}
