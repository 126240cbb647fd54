/* SPDX-License-Identifier: MIT */
/*
 * stor-writer.c - a logging process for test-storage-kill: appends records
 * as fast as it can, syncs on the window, and after every sync that moved
 * the confirmed seq writes "C <seq>\n" to stdout (one write(2), so a line
 * is out before the next record is appended).  Each payload starts with
 * the CLOCK_MONOTONIC time of its append, for measuring what a kill loses.
 *
 * usage: stor-writer DIR SYNC_WINDOW_MS SEGMENT_BYTES RETENTION_BYTES
 */
#include "stor-test-util.h"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct stor_log_cfg cfg = { .vehicle = "KILL" };
	uint8_t buf[8 + 256];
	uint64_t reported = 0;
	stor_log_t *log;
	char line[64];

	if (argc != 5) {
		fprintf(stderr, "usage: %s DIR SYNC_WINDOW_MS SEGMENT_BYTES RETENTION_BYTES\n",
			argv[0]);
		return 2;
	}
	cfg.dir = argv[1];
	cfg.sync_window_ms = (uint32_t)strtoul(argv[2], NULL, 10);
	cfg.segment_bytes = strtoull(argv[3], NULL, 10);
	cfg.retention_bytes = strtoull(argv[4], NULL, 10);
	if (stor_log_open(&cfg, &log) < 0) {
		fprintf(stderr, "stor-writer: cannot open the log in %s\n", cfg.dir);
		return 1;
	}
	for (;;) {
		uint64_t seq = stor_log_next_seq(log);
		int64_t now = mono_ns();
		struct stor_rec rec = { .first_seq = seq, .count = 1, .t_first_ns = tu_time(seq),
					.t_last_ns = tu_time(seq), .payload = buf,
					.len = 8 + tu_len(seq) };
		int n;

		memcpy(buf, &now, 8);
		tu_fill(buf + 8, seq, tu_len(seq));
		if (stor_log_append(log, &rec) < 0 || stor_log_tick(log) < 0) {
			fprintf(stderr, "stor-writer: append failed\n");
			return 1;
		}
		if (stor_log_confirmed_seq(log) != reported) {
			reported = stor_log_confirmed_seq(log);
			n = snprintf(line, sizeof(line), "C %" PRIu64 "\n", reported);
			if (write(1, line, (size_t)n) != n)
				return 1;
		}
	}
}
