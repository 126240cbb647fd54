/* SPDX-License-Identifier: MIT */
/*
 * peer.h - start and stop the real Modbus peers the tests talk to
 * (mb-fault-server, pymodbus-server.py, socat pty pairs) without sleeps:
 * a peer is ready when it has printed its READY line, socat when it has
 * printed both "PTY is" lines; a peer stops when its stdin is closed, and
 * every wait is bounded.  Test helper, header-only; may print.
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PEER_WAIT_MS 15000

struct peer {
	pid_t pid;
	int in_fd;          /* its stdin: closing it asks the peer to stop */
	int out_fd;         /* its stdout (or stderr for socat) */
	char buf[8192];
	size_t len;
	int port;           /* from "READY <port>" */
};

static inline int64_t peer_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read one line into line (without '\n'); 0, or -ETIMEDOUT, or -EPIPE at EOF. */
static inline int peer_readline(struct peer *p, char *line, size_t size, int timeout_ms)
{
	int64_t end = peer_now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		struct pollfd pfd = { .fd = p->out_fd, .events = POLLIN };
		ssize_t n;
		int left;

		if (nl) {
			size_t l = (size_t)(nl - p->buf);

			snprintf(line, size, "%.*s", (int)l, p->buf);
			memmove(p->buf, nl + 1, p->len - l - 1);
			p->len -= l + 1;
			return 0;
		}
		left = (int)(end - peer_now_ms());
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -ETIMEDOUT;
		n = read(p->out_fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			return -EPIPE;
		p->len += (size_t)n;
	}
}

/* Fork/exec argv with stdin and stdout (or stderr, want_stderr) piped. */
static inline void peer_spawn(struct peer *p, char *const argv[], int want_stderr)
{
	int in[2], out[2];

	memset(p, 0, sizeof(*p));
	assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	p->pid = fork();
	assert(p->pid >= 0);
	if (p->pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		/* a peer never outlives a test that crashed or timed out */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], 0);
		if (want_stderr)
			dup2(null, 1); /* keep the test's stdout pipe free */
		dup2(out[1], want_stderr ? 2 : 1);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
}

/* Start a Modbus peer and wait for its READY line; aborts if it never comes. */
static inline void peer_start(struct peer *p, char *const argv[])
{
	char line[256];

	peer_spawn(p, argv, 0);
	if (peer_readline(p, line, sizeof(line), PEER_WAIT_MS) < 0 || strncmp(line, "READY", 5)) {
		fprintf(stderr, "peer %s did not get ready\n", argv[0]);
		kill(p->pid, SIGKILL);
		abort();
	}
	p->port = atoi(line + 5);
}

/* Wait (bounded) until pid has exited, on its pidfd: 0 or -ETIMEDOUT. */
static inline int peer_wait_exit(pid_t pid, int timeout_ms)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	assert(fd >= 0);
	r = poll(&pfd, 1, timeout_ms);
	close(fd);
	return r == 1 ? 0 : -ETIMEDOUT;
}

/*
 * Stop a peer: close its stdin, collect "FC <code> <count>" lines into
 * fc_count (may be NULL) until EOF, reap it.  Returns its exit status.
 */
static inline int peer_stop(struct peer *p, uint64_t fc_count[256])
{
	char line[256];
	int status = -1;

	close(p->in_fd);
	while (peer_readline(p, line, sizeof(line), PEER_WAIT_MS) == 0) {
		unsigned fc;
		unsigned long long n;

		if (fc_count && sscanf(line, "FC %u %llu", &fc, &n) == 2 && fc < 256)
			fc_count[fc] += n;
	}
	close(p->out_fd);
	if (peer_wait_exit(p->pid, PEER_WAIT_MS) == 0 && waitpid(p->pid, &status, 0) == p->pid)
		return status;
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	fprintf(stderr, "peer %d did not stop\n", (int)p->pid);
	abort();
}

/* socat pty pair: links a and b exist once both "PTY is" lines are printed. */
static inline void peer_socat_start(struct peer *p, const char *a, const char *b)
{
	char la[300], lb[300], line[512];
	char *argv[] = { "socat", "-d", "-d", la, lb, NULL };
	int ptys = 0;

	snprintf(la, sizeof(la), "pty,raw,echo=0,link=%s", a);
	snprintf(lb, sizeof(lb), "pty,raw,echo=0,link=%s", b);
	peer_spawn(p, argv, 1);
	while (ptys < 2) {
		if (peer_readline(p, line, sizeof(line), PEER_WAIT_MS) < 0) {
			fprintf(stderr, "socat did not start\n");
			kill(p->pid, SIGKILL);
			abort();
		}
		if (strstr(line, "PTY is"))
			ptys++;
	}
	/* socat prints "starting data transfer loop" after creating the links */
	while (access(a, F_OK) || access(b, F_OK))
		if (peer_readline(p, line, sizeof(line), PEER_WAIT_MS) < 0)
			abort();
}

static inline void peer_socat_stop(struct peer *p)
{
	int status;

	kill(p->pid, SIGTERM);
	if (peer_wait_exit(p->pid, PEER_WAIT_MS) < 0)
		kill(p->pid, SIGKILL);
	waitpid(p->pid, &status, 0);
	close(p->in_fd);
	close(p->out_fd);
}
