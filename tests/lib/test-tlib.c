/* SPDX-License-Identifier: MIT */
/*
 * test-tlib.c - the tests' own helpers, checked before anything relies on
 * them: what a failed CHECK prints and that it aborts, WAIT_FOR's bound,
 * a peer's lines, its stop (SIGTERM, then SIGKILL for one that ignores
 * it), its bounded finish, and that a peer dies with the test.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlib.h"

/* Run fn in a child with stderr on a pipe: its stderr and wait status. */
static int in_child(void (*fn)(void), char *err, size_t size)
{
	int p[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	assert(pipe(p) == 0);
	pid = fork();
	assert(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 2);
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	close(p[1]);
	while ((n = read(p[0], err + len, size - 1 - (size_t)len)) > 0)
		len += n;
	err[len] = '\0';
	close(p[0]);
	assert(waitpid(pid, &status, 0) == pid);
	return status;
}

static void fail_plain(void)
{
	int x = 1;

	CHECK(x == 2);
}

static void fail_message(void)
{
	CHECK(1 + 1 == 3, "arithmetic says %d", 1 + 1);
}

static void fail_str(void)
{
	CHECK_STR("abc", "abd");
}

static void pass_all(void)
{
	CHECK(1);
	CHECK(2 > 1, "never printed %s", "x");
	CHECK_STR("same", "same");
}

static void test_check(void)
{
	char err[1024];
	int st;

	st = in_child(fail_plain, err, sizeof(err));
	assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	assert(strstr(err, "test-tlib.c:") && strstr(err, ": check failed: x == 2\n"));
	st = in_child(fail_message, err, sizeof(err));
	assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	assert(strstr(err, ": check failed: 1 + 1 == 3: arithmetic says 2\n"));
	st = in_child(fail_str, err, sizeof(err));
	assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	assert(strstr(err, "\n got  'abc'\n want 'abd'\n"));
	st = in_child(pass_all, err, sizeof(err));
	assert(WIFEXITED(st) && WEXITSTATUS(st) == 0 && err[0] == '\0');
	assert(tlib_failures() == 0);
	printf("CHECK: file:line, expression, message; aborts: ok\n");
}

static void test_wait_for(void)
{
	int64_t t0 = tlib_mono_ms();
	int n = 0;

	assert(WAIT_FOR(++n >= 5, 5000) && n >= 5);
	assert(tlib_mono_ms() - t0 < 1000);
	t0 = tlib_mono_ms();
	assert(!WAIT_FOR(n < 0, 100));
	assert(tlib_mono_ms() - t0 >= 100 && tlib_mono_ms() - t0 < 1000);
	printf("WAIT_FOR: true at once, false after its bound: ok\n");
}

static void test_peer_lines(void)
{
	char *argv[] = { "sh", "-c", "read x; echo \"got $x\"; echo two; echo err >&2", NULL };
	struct tlib_peer p;
	char line[64];
	int st;

	assert(tlib_peer_start(&p, argv, TLIB_PEER_STDIN | TLIB_PEER_STDOUT) == 0);
	assert(write(p.in_fd, "one\n", 4) == 4);
	assert(tlib_peer_readline(&p, line, sizeof(line), 5000) == 0 && !strcmp(line, "got one"));
	assert(tlib_peer_wait_line(&p, "tw", line, sizeof(line), 5000) == 0 && !strcmp(line, "two"));
	assert(tlib_peer_readline(&p, line, sizeof(line), 5000) == -EPIPE);
	st = tlib_peer_finish(&p, 5000);
	assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("peer: lines in and out, EOF, finish: ok\n");
}

static void test_peer_stop(void)
{
	char *quiet[] = { "sleep", "60", NULL };
	char *deaf[] = { "sh", "-c", "trap '' TERM; echo armed; while :; do sleep 1; done", NULL };
	char line[64];
	struct tlib_peer p;
	int64_t t0;
	int st;

	assert(tlib_peer_start(&p, quiet, TLIB_PEER_STDOUT) == 0);
	assert(tlib_peer_readline(&p, line, sizeof(line), 50) == -ETIMEDOUT);
	st = tlib_peer_stop(&p, 5000);
	assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	/* one that ignores SIGTERM is killed after the grace period */
	assert(tlib_peer_start(&p, deaf, TLIB_PEER_STDOUT) == 0);
	assert(tlib_peer_readline(&p, line, sizeof(line), 5000) == 0 && !strcmp(line, "armed"));
	t0 = tlib_mono_ms();
	st = tlib_peer_stop(&p, 200);
	assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && tlib_mono_ms() - t0 >= 200);
	/* finish kills one that does not end by itself, and says so */
	assert(tlib_peer_start(&p, quiet, 0) == 0);
	assert(tlib_peer_finish(&p, 100) == -ETIMEDOUT);
	assert(tlib_run((char *[]){ "sh", "-c", "exit 3", NULL }, 10) == 3);
	assert(tlib_run((char *[]){ "sleep", "60", NULL }, 1) == -ETIMEDOUT);
	printf("peer: SIGTERM, SIGKILL after the grace period, bounded finish and run: ok\n");
}

/* Gone: no such process, or a zombie nobody reaped yet. */
static bool gone(pid_t pid)
{
	char path[64], buf[256], *rp;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return !rp || rp[1] != ' ' || rp[2] == 'Z';
}

/* A child "test" starts a peer and dies without stopping it. */
static void test_peer_dies_with_test(void)
{
	char *argv[] = { "sleep", "60", NULL };
	int p[2], status;
	pid_t test, peer;

	assert(pipe(p) == 0);
	test = fork();
	assert(test >= 0);
	if (test == 0) {
		struct tlib_peer pr;

		if (tlib_peer_start(&pr, argv, 0) < 0)
			_exit(2);
		if (write(p[1], &pr.pid, sizeof(pr.pid)) != sizeof(pr.pid))
			_exit(2);
		_exit(1);
	}
	close(p[1]);
	assert(read(p[0], &peer, sizeof(peer)) == sizeof(peer));
	close(p[0]);
	assert(waitpid(test, &status, 0) == test && WIFEXITED(status) && WEXITSTATUS(status) == 1);
	/* the orphan is reparented (to init or a subreaper); it must go */
	assert(WAIT_FOR(gone(peer), 10000));
	printf("peer: killed when its test dies: ok\n");
}

/* tlib_fds_on counts this process's descriptors on one path, and only them */
static void test_fds_on(void)
{
	int before = tlib_fds_on("/dev/null"), a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_RDONLY);
	int z = open("/dev/zero", O_RDONLY);

	CHECK(a >= 0 && b >= 0 && z >= 0);
	CHECK(tlib_fds_on("/dev/null") == before + 2, "%d then %d", before, tlib_fds_on("/dev/null"));
	close(a);
	CHECK(tlib_fds_on("/dev/null") == before + 1);
	CHECK(tlib_fds_on("/dev/zero") == 1 && tlib_fds_on("/nonexistent") == 0);
	close(b);
	close(z);
	CHECK(tlib_fds_on("/dev/null") == before && tlib_fds_on("/dev/zero") == 0);
}

int main(void)
{
	test_fds_on();
	test_check();
	test_wait_for();
	test_peer_lines();
	test_peer_stop();
	test_peer_dies_with_test();
	printf("test-tlib: ok\n");
	return 0;
}
