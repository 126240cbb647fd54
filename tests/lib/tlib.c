/* SPDX-License-Identifier: MIT */
/* tlib.c - see tlib.h. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tlib.h"

#define TLIB_SOCAT_WAIT_MS 15000

/* A test is one process: the count of its failed checks. */
static unsigned failures;

static void check_report(const char *file, int line, const char *expr, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: check failed: %s", file, line, expr);
	if (fmt) {
		fputs(": ", stderr);
		vfprintf(stderr, fmt, ap);
	}
	fputc('\n', stderr);
	failures++;
}

void tlib_check_abort(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_report(file, line, expr, fmt, ap);
	va_end(ap);
	abort();
}

void tlib_check_count(const char *file, int line, const char *expr, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	check_report(file, line, expr, fmt, ap);
	va_end(ap);
}

bool tlib_str_eq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

unsigned tlib_failures(void)
{
	return failures;
}

void tlib_sleep_ms(unsigned ms)
{
	basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + (int64_t)ms * BASIC_NS_PER_MS);
}

/* The ELF machine this test was built for: a program of the same machine
   that the test starts (stor-writer, a fault server) was built with it. */
#if defined(__aarch64__)
#define TLIB_EM EM_AARCH64
#elif defined(__arm__)
#define TLIB_EM EM_ARM
#elif defined(__x86_64__)
#define TLIB_EM EM_X86_64
#else
#define TLIB_EM EM_NONE
#endif

/* Is path an ELF executable of our own machine? */
static bool own_elf(const char *path)
{
	unsigned char h[EI_NIDENT + 4];
	uint16_t machine;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG))
		return false;
	/* e_type (2 bytes) then e_machine, in the file's (our) byte order */
	memcpy(&machine, h + EI_NIDENT + 2, sizeof(machine));
	return machine == TLIB_EM;
}

/* execvp(), but a program built with the test in a cross build runs under
   meson's exe_wrapper (MESON_EXE_WRAPPER, set by `meson test` there:
   "qemu-aarch64-static"), as the test itself does: qemu-user hands an
   execve to the host kernel, which cannot run an ARM binary without
   binfmt_misc (not mounted in CI's container).  Host programs (sh,
   python3, socat) run as they are.  The wrapper is split on blanks. */
void tlib_execvp(char *const argv[])
{
	const char *wrapper = getenv("MESON_EXE_WRAPPER");
	char words[512], *nargv[64], *save = NULL, *w;
	size_t n = 0;

	if (wrapper && *wrapper && strchr(argv[0], '/') && own_elf(argv[0]) &&
	    strlen(wrapper) < sizeof(words)) {
		strcpy(words, wrapper);
		for (w = strtok_r(words, " ", &save); w && n < 8; w = strtok_r(NULL, " ", &save))
			nargv[n++] = w;
		for (size_t i = 0; argv[i] && n < 63; i++)
			nargv[n++] = argv[i];
		nargv[n] = NULL;
		execvp(nargv[0], nargv);
		return;
	}
	execvp(argv[0], argv);
}

/* In the child: wire the pipes, die with the parent, exec. */
static void peer_exec(char *const argv[], unsigned flags, pid_t parent, int in, int out)
{
	/* PR_SET_PDEATHSIG fires when the forking thread ends; if the test is
	   already gone, do not start at all. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	if (flags & TLIB_PEER_STDIN)
		dup2(in, 0);
	if ((flags & TLIB_PEER_STDERR) && !(flags & TLIB_PEER_STDOUT)) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1); /* keep the test's own stdout free of the peer */
	}
	if (flags & TLIB_PEER_STDOUT)
		dup2(out, 1);
	if (flags & TLIB_PEER_STDERR)
		dup2(out, 2);
	tlib_execvp(argv);
	fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int tlib_peer_start(struct tlib_peer *p, char *const argv[], unsigned flags)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, r = 0;
	pid_t parent = getpid();

	memset(p, 0, sizeof(*p));
	p->in_fd = p->out_fd = -1;
	if ((flags & TLIB_PEER_STDIN) && pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if ((flags & (TLIB_PEER_STDOUT | TLIB_PEER_STDERR)) && pipe2(out, O_CLOEXEC) < 0) {
		r = -errno;
		goto fail;
	}
	p->pid = fork();
	if (p->pid < 0) {
		r = -errno;
		goto fail;
	}
	if (p->pid == 0)
		peer_exec(argv, flags, parent, in[0], out[1]);
	if (in[0] >= 0)
		close(in[0]);
	if (out[1] >= 0)
		close(out[1]);
	p->in_fd = in[1];
	p->out_fd = out[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	return r;
}

int tlib_peer_readline(struct tlib_peer *p, char *line, size_t size, int timeout_ms)
{
	int64_t end = tlib_mono_ms() + timeout_ms;

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
		left = (int)(end - tlib_mono_ms());
		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			return -ETIMEDOUT;
		/* a line longer than the buffer comes out in pieces */
		if (p->len == sizeof(p->buf) - 1) {
			snprintf(line, size, "%.*s", (int)p->len, p->buf);
			p->len = 0;
			return 0;
		}
		n = read(p->out_fd, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			return -EPIPE;
		p->len += (size_t)n;
	}
}

int tlib_peer_wait_line(struct tlib_peer *p, const char *needle, char *line, size_t size,
                        int timeout_ms)
{
	int64_t end = tlib_mono_ms() + timeout_ms;
	char buf[1024];
	int r;

	do {
		r = tlib_peer_readline(p, buf, sizeof(buf), (int)(end - tlib_mono_ms()));
		if (r < 0)
			return r;
	} while (!strstr(buf, needle));
	if (line)
		snprintf(line, size, "%s", buf);
	return 0;
}

int tlib_wait_exit(pid_t pid, int timeout_ms)
{
	/* A pidfd becomes readable when the process exits: a bounded wait
	   that neither polls nor reaps. */
	int fd = (int)syscall(SYS_pidfd_open, pid, 0), r;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (fd < 0)
		return -errno;
	r = poll(&pfd, 1, timeout_ms);
	close(fd);
	return r == 1 ? 0 : -ETIMEDOUT;
}

int tlib_stop_pid(pid_t pid, int grace_ms)
{
	int status;

	kill(pid, SIGTERM);
	if (tlib_wait_exit(pid, grace_ms) < 0)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return status;
}

static void peer_close(struct tlib_peer *p)
{
	if (p->in_fd >= 0)
		close(p->in_fd);
	if (p->out_fd >= 0)
		close(p->out_fd);
	p->in_fd = p->out_fd = -1;
}

int tlib_peer_stop(struct tlib_peer *p, int grace_ms)
{
	peer_close(p);
	return tlib_stop_pid(p->pid, grace_ms);
}

int tlib_peer_finish(struct tlib_peer *p, int timeout_ms)
{
	bool killed = false;
	int status;

	peer_close(p);
	if (tlib_wait_exit(p->pid, timeout_ms) < 0) {
		kill(p->pid, SIGKILL);
		killed = true;
	}
	if (waitpid(p->pid, &status, 0) != p->pid)
		return -errno;
	return killed ? -ETIMEDOUT : status;
}

int tlib_run(char *const argv[], unsigned timeout_s)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		tlib_execvp(argv);
		_exit(127);
	}
	/* a hung child is killed at the deadline */
	if (tlib_wait_exit(pid, (int)timeout_s * 1000) == -ETIMEDOUT)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return -ETIMEDOUT;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void tlib_socat_pty_pair(struct tlib_peer *p, const char *a, const char *b)
{
	char la[300], lb[300], line[512];
	char *argv[] = { "socat", "-d", "-d", la, lb, NULL };
	int ptys = 0;

	snprintf(la, sizeof(la), "pty,raw,echo=0,link=%s", a);
	snprintf(lb, sizeof(lb), "pty,raw,echo=0,link=%s", b);
	CHECK(tlib_peer_start(p, argv, TLIB_PEER_STDIN | TLIB_PEER_STDERR) == 0);
	while (ptys < 2) {
		int r = tlib_peer_readline(p, line, sizeof(line), TLIB_SOCAT_WAIT_MS);

		if (r < 0)
			kill(p->pid, SIGKILL);
		CHECK(r == 0, "socat did not come up (is socat installed?)");
		if (r < 0)
			return;
		if (strstr(line, "PTY is"))
			ptys++;
	}
	/* socat prints "starting data transfer loop" after creating the links */
	while (access(a, F_OK) || access(b, F_OK))
		CHECK(tlib_peer_readline(p, line, sizeof(line), TLIB_SOCAT_WAIT_MS) == 0,
		      "socat made no links %s %s", a, b);
}

void tlib_mem_open(struct tlib_mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	CHECK(m->f);
}

const char *tlib_mem_text(struct tlib_mem *m)
{
	fflush(m->f);
	return m->buf ? m->buf : "";
}

void tlib_mem_close(struct tlib_mem *m)
{
	fclose(m->f);
	free(m->buf);
}

int tlib_fds_on(const char *path)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		tlib_check_abort(__FILE__, __LINE__, "opendir(\"/proc/self/fd\")", "%s", strerror(errno));
	while ((e = readdir(d))) {
		char link[300], target[256];
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len < 0)
			continue;
		target[len] = 0;
		n += !strcmp(target, path);
	}
	closedir(d);
	return n;
}
