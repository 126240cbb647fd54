/* SPDX-License-Identifier: MIT */
/*
 * test-storage-kill.c - kill -9 a logging process (stor-writer) at random
 * moments, 1,000 times in a row on one log: after each kill, recovery must
 * take under 2 s, keep every record the writer had confirmed, accept no
 * corrupt record, and lose at most what was appended within the sync
 * window.  Coordination is by pipe and waitpid, never sleep.
 *
 * usage: test-storage-kill STOR_WRITER [RUNS]
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include "stor-test-util.h"

#define WINDOW_MS 10
#define SEGMENT "262144"
#define RETENTION "16777216"
#define SLACK_MS 1000 /* one fdatasync and scheduling on a loaded 2-core box */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void parse_lines(char *acc, size_t *acc_len, uint64_t *confirmed)
{
	char *nl;

	while ((nl = memchr(acc, '\n', *acc_len))) {
		uint64_t v;

		*nl = 0;
		CHECK(sscanf(acc, "C %" SCNu64, &v) == 1);
		if (v > *confirmed)
			*confirmed = v;
		*acc_len -= (size_t)(nl + 1 - acc);
		memmove(acc, nl + 1, *acc_len);
	}
}

/* Read the child's lines until the deadline (or EOF). */
static void read_until(int fd, int64_t deadline, char *acc, size_t *acc_len, uint64_t *conf)
{
	for (;;) {
		int64_t left = deadline ? (deadline - mono_ns()) / 1000000 : -1;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (deadline && left < 0)
			return;
		if (poll(&p, 1, deadline ? (int)left : 5000) <= 0)
			return;
		n = read(fd, acc + *acc_len, 4096 - *acc_len - 1);
		if (n <= 0)
			return;
		*acc_len += (size_t)n;
		parse_lines(acc, acc_len, conf);
	}
}

static pid_t spawn(const char *writer, const char *dir, int *ret_fd)
{
	int p[2];
	pid_t pid;

	CHECK(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl(writer, writer, dir, "10", SEGMENT, RETENTION, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*ret_fd = p[0];
	return pid;
}

struct run_result {
	uint64_t records;
	int64_t loss_ns; /* kill time - append time of the last record kept */
};

/* Records [from, next): contiguous, exact content, no damage. */
static struct run_result check_run(const char *dir, uint64_t from, uint64_t next, int64_t t_kill)
{
	struct run_result res = { 0, -1 };
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t expect = from;
	int n;

	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_seek_seq(r, from) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		uint8_t buf[256];
		int64_t t;

		if (n != 1) {
			fprintf(stderr, "corrupt record reported (%d) after seq %" PRIu64 "\n", n,
				expect);
			abort();
		}
		CHECK(rec.first_seq == expect && rec.count == 1 && rec.len == 8 + tu_len(expect));
		tu_fill(buf, expect, tu_len(expect));
		CHECK(memcmp(buf, (const uint8_t *)rec.payload + 8, tu_len(expect)) == 0);
		memcpy(&t, rec.payload, 8);
		res.loss_ns = t_kill - t;
		expect++;
		res.records++;
	}
	CHECK(expect == next);
	stor_reader_free(r);
	return res;
}

int main(int argc, char **argv)
{
	char *dir = tu_tmpdir("kill");
	int runs = argc > 2 ? atoi(argv[2]) : 1000;
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "KILL", .sync_window_ms = WINDOW_MS,
				    .segment_bytes = 262144, .retention_bytes = 16777216 };
	uint64_t from = 1, total = 0;
	int64_t max_loss = 0, max_recovery = 0, sum_recovery = 0;
	uint32_t seed = 12345;

	if (argc < 2 || access(argv[1], X_OK) < 0) {
		fprintf(stderr, "usage: %s STOR_WRITER [RUNS] (writer not executable)\n", argv[0]);
		return 1;
	}
	for (int i = 0; i < runs; i++) {
		char acc[4096];
		size_t acc_len = 0;
		uint64_t confirmed = 0;
		int fd, status;
		int64_t t_kill, t0;
		stor_log_t *log;
		pid_t pid;
		struct run_result res;

		seed = seed * 1103515245u + 12345u;
		pid = spawn(argv[1], dir, &fd);
		read_until(fd, mono_ns() + (int64_t)(seed >> 8) % 20000 * 1000, acc, &acc_len,
			   &confirmed);
		CHECK(kill(pid, SIGKILL) == 0);
		t_kill = mono_ns();
		CHECK(waitpid(pid, &status, 0) == pid);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		/* Lines written before the kill are still in the pipe. */
		read_until(fd, 0, acc, &acc_len, &confirmed);
		close(fd);

		t0 = mono_ns();
		CHECK(stor_log_open(&cfg, &log) == 0);
		t0 = mono_ns() - t0;
		sum_recovery += t0;
		if (t0 > max_recovery)
			max_recovery = t0;
		CHECK(t0 < 2000000000LL);
		if (stor_log_next_seq(log) < confirmed) {
			fprintf(stderr, "run %d: confirmed %" PRIu64 " but recovered up to %" PRIu64
				"\n", i, confirmed, stor_log_next_seq(log));
			abort();
		}
		res = check_run(dir, from, stor_log_next_seq(log), t_kill);
		from = stor_log_next_seq(log);
		stor_log_free(log);
		total += res.records;
		if (res.records && res.loss_ns > max_loss)
			max_loss = res.loss_ns;
		CHECK(!res.records || res.loss_ns <= (WINDOW_MS + SLACK_MS) * 1000000LL);
	}
	/* The whole log once more, from its oldest retained record. */
	{
		stor_reader_t *r;
		struct stor_rec rec;
		uint64_t n = 0;

		CHECK(stor_reader_open(dir, &r) == 0);
		CHECK(stor_reader_next(r, &rec) == 1);
		n = rec.first_seq;
		stor_reader_free(r);
		check_run(dir, n, from, 0);
	}
	printf("kill -9: %d runs, %" PRIu64 " records kept, 0 corrupt, 0 confirmed lost; "
	       "max loss window %.1f ms (sync window %d ms); recovery max %.1f ms, mean %.2f ms\n",
	       runs, total, max_loss / 1e6, WINDOW_MS, max_recovery / 1e6,
	       sum_recovery / 1e6 / runs);
	tu_rm_rf(dir);
	free(dir);
	return 0;
}
