/* SPDX-License-Identifier: MIT */
/*
 * tlib.h - what the C tests share: one CHECK, a bounded wait for a
 * condition, and the peers a test starts (brokers, Modbus servers, socat,
 * Python adapters) and must never leave behind.  Test code: it prints,
 * aborts and allocates as it likes.  Link with tlib_dep (tests/lib/).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "basic/clock.h"

/* ---- checks ---- */

/*
 * CHECK(cond) or CHECK(cond, fmt, ...): when cond is false, print
 * "file:line: check failed: cond" (and ": " with the formatted message)
 * on stderr, after flushing stdout so the two stay in order, then abort()
 * (a core, and a peer started with tlib_peer_start() dies with the test).
 * A test that reports every failure of one expensive run (the CAN VM's
 * one boot) defines TLIB_CHECK_CONTINUE before including tlib.h: its
 * failed checks are counted (tlib_failures()) and it goes on.
 */
#define CHECK(cond, ...)                                                                        \
	do {                                                                                    \
		if (!(cond))                                                                    \
			TLIB_CHECK_FAILED_(__FILE__, __LINE__, #cond, __VA_ARGS__ TLIB_NO_MSG_(__VA_ARGS__)); \
	} while (0)

/* Two strings equal; on failure both are printed. */
#define CHECK_STR(got, want)                                                                    \
	do {                                                                                    \
		const char *got_ = (got), *want_ = (want);                                      \
		if (!tlib_str_eq(got_, want_))                                                  \
			TLIB_CHECK_FAILED_(__FILE__, __LINE__, #got " == " #want,               \
			                  "\n got  '%s'\n want '%s'", got_ ? got_ : "(null)",   \
			                  want_ ? want_ : "(null)");                            \
	} while (0)

/* NULL as the format when CHECK has no message: __VA_OPT__ swallows the
   (NULL) after a message. */
#define TLIB_EAT_(x)
#define TLIB_NO_MSG_(...) __VA_OPT__(TLIB_EAT_)(NULL)

#ifdef TLIB_CHECK_CONTINUE
#define TLIB_CHECK_FAILED_ tlib_check_count
#else
#define TLIB_CHECK_FAILED_ tlib_check_abort
#endif

/* Print the failure (fmt may be NULL); abort, or count it and return. */
__attribute__((format(printf, 4, 5), noreturn))
void tlib_check_abort(const char *file, int line, const char *expr, const char *fmt, ...);
__attribute__((format(printf, 4, 5)))
void tlib_check_count(const char *file, int line, const char *expr, const char *fmt, ...);
bool tlib_str_eq(const char *a, const char *b);

/* How many CHECKs failed so far (more than 0 only with TLIB_CHECK_CONTINUE). */
unsigned tlib_failures(void);

/* ---- waiting ---- */

static inline int64_t tlib_mono_ms(void)
{
	return basic_mono_ns() / BASIC_NS_PER_MS;
}

void tlib_sleep_ms(unsigned ms);

/*
 * WAIT_FOR(cond, timeout_ms): evaluate cond every millisecond until it
 * holds or timeout_ms have passed on CLOCK_MONOTONIC; the value of cond
 * at the end (true: it held).  cond is evaluated at least twice.
 */
#define WAIT_FOR(cond, timeout_ms)                                                  \
	({                                                                          \
		int64_t tlib_end_ = tlib_mono_ms() + (timeout_ms);                  \
		while (!(cond) && tlib_mono_ms() < tlib_end_)                       \
			tlib_sleep_ms(1);                                           \
		(bool)(cond);                                                       \
	})

/* ---- peers ---- */

enum {
	TLIB_PEER_STDIN = 1 << 0,  /* in_fd writes the peer's stdin (closing it: EOF) */
	TLIB_PEER_STDOUT = 1 << 1, /* out_fd reads the peer's stdout */
	TLIB_PEER_STDERR = 1 << 2, /* out_fd reads the peer's stderr; without
	                              TLIB_PEER_STDOUT its stdout goes to /dev/null */
};

struct tlib_peer {
	pid_t pid;
	int in_fd;           /* -1 unless TLIB_PEER_STDIN */
	int out_fd;          /* -1 unless TLIB_PEER_STDOUT or _STDERR */
	char buf[8192];      /* read ahead of the lines handed out */
	size_t len;
};

/*
 * Start argv[0] (searched in PATH) with the pipes flags ask for.  The
 * peer is killed (SIGKILL) when the thread that started it ends, however
 * the test ends: abort, a signal (meson's timeout), exit without a stop.
 * Start peers from the main thread.  0 or -errno.
 */
int tlib_peer_start(struct tlib_peer *p, char *const argv[], unsigned flags);
/* execvp(argv[0], argv), through MESON_EXE_WRAPPER when argv[0] is a path
   to a program of the test's own (cross) machine; returns only on error.
   tlib_peer_start() and tlib_run() exec with it. */
void tlib_execvp(char *const argv[]);
/* One line of out_fd without its '\n', within timeout_ms: 0, -ETIMEDOUT,
   or -EPIPE at EOF. */
int tlib_peer_readline(struct tlib_peer *p, char *line, size_t size, int timeout_ms);
/* Read lines until one contains needle (copied to line when not NULL):
   0, -ETIMEDOUT or -EPIPE. */
int tlib_peer_wait_line(struct tlib_peer *p, const char *needle, char *line, size_t size,
                        int timeout_ms);
/* Close the pipes, then tlib_stop_pid(): the peer's wait status. */
int tlib_peer_stop(struct tlib_peer *p, int grace_ms);
/* For a peer that ends by itself (at EOF on its stdin, or done): close the
   pipes, wait up to timeout_ms, reap.  Its wait status, or -ETIMEDOUT when
   it had to be killed (SIGKILL). */
int tlib_peer_finish(struct tlib_peer *p, int timeout_ms);

/* Wait until our child pid has exited, without reaping it: 0 or -ETIMEDOUT. */
int tlib_wait_exit(pid_t pid, int timeout_ms);
/* SIGTERM, SIGKILL if it has not exited within grace_ms, reap: its wait
   status (-errno if it was not our child). */
int tlib_stop_pid(pid_t pid, int grace_ms);
/* Run argv to its end, killed at timeout_s: its exit status, 128 + the
   signal that ended it, -ETIMEDOUT or -errno. */
int tlib_run(char *const argv[], unsigned timeout_s);

/* A socat pty pair whose links a and b exist when it returns (aborts if
   socat does not come up).  Stop it with tlib_peer_stop(). */
void tlib_socat_pty_pair(struct tlib_peer *p, const char *a, const char *b);

/* How many descriptors of this process are open on path (by
   /proc/self/fd's links): what a test holds open, released or leaked. */
int tlib_fds_on(const char *path);

/* A stream into memory (open_memstream), for what report/ writes to the
   caller's FILE*: tlib_mem_text() reads back what was written so far. */
struct tlib_mem {
	FILE *f;
	char *buf;
	size_t len;
};
void tlib_mem_open(struct tlib_mem *m);
const char *tlib_mem_text(struct tlib_mem *m);
void tlib_mem_close(struct tlib_mem *m);
