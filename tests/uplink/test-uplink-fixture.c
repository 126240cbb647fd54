/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-fixture.c - a failing uplink test leaves no broker behind.
 *
 * For each way a test can end badly - a failed CHECK (abort), a signal
 * (meson's timeout sends SIGTERM), an exit without broker_fini() - a child
 * plays the test: it starts a real mosquitto through the fixture, reports
 * its pid, and dies that way.  This process is a child subreaper, so the
 * orphaned broker becomes our child: it must be killed (SIGKILL from the
 * fixture's parent-death signal) without anyone asking.  If it is still
 * running after 10 s the test fails, and kills it itself.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"

enum death { DIE_ABORT, DIE_SIGTERM, DIE_EXIT, DIE_MAX };
static const char *const death_names[DIE_MAX] = { "failed CHECK (abort)", "SIGTERM", "exit(1) without broker_fini" };

/* The "test": start a broker, tell the parent its pid and dir, die. */
static void child(int fd, enum death how)
{
	struct rlimit no_core = { 0, 0 };
	struct broker b;
	char msg[256];
	int n;

	setrlimit(RLIMIT_CORE, &no_core);
	CHECK(broker_init(&b, false, NULL) == 0);
	CHECK(broker_start(&b) == 0);
	n = snprintf(msg, sizeof(msg), "%d %s\n", (int)b.peer.pid, b.dir);
	CHECK(write(fd, msg, (size_t)n) == n);
	close(fd);
	switch (how) {
	case DIE_ABORT:
		fprintf(stderr, "(a deliberate failure follows)\n");
		CHECK(!"deliberate failure");
		break;
	case DIE_SIGTERM:
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		break;
	default:
		break;
	}
	exit(1);
}

int main(void)
{
	int failures = 0;

	/* Orphans of our children are reparented to us, so we can reap the
	   broker and see how it ended. */
	CHECK(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	for (int how = 0; how < DIE_MAX; how++) {
		char line[256], dir[200], *rm[] = { "rm", "-rf", dir, NULL };
		int pfd[2], broker, status;
		pid_t pid;
		FILE *f;

		CHECK(pipe(pfd) == 0);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			close(pfd[0]);
			child(pfd[1], (enum death)how);
		}
		close(pfd[1]);
		f = fdopen(pfd[0], "r");
		CHECK(f && fgets(line, sizeof(line), f));
		fclose(f);
		CHECK(sscanf(line, "%d %199s", &broker, dir) == 2 && broker > 0);
		CHECK(waitpid(pid, &status, 0) == pid);
		if (tlib_wait_exit(broker, 10000) < 0) {
			printf("%-30s: FAIL, mosquitto %d still running after the test died\n", death_names[how], broker);
			kill(broker, SIGKILL);
			waitpid(broker, NULL, 0);
			failures++;
		} else {
			CHECK(waitpid(broker, &status, 0) == broker);
			printf("%-30s: mosquitto %d was killed (%s)\n", death_names[how], broker,
			       WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
			if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
				failures++;
		}
		tlib_run(rm, 30);
	}
	return failures ? 1 : 0;
}
