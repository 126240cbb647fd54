/* SPDX-License-Identifier: MIT */
/*
 * bench-storage.c - the flash log beside dd (conv=fdatasync, and a sync per
 * 64 KiB) and SQLite (WAL, synchronous=FULL, 1000 records a transaction),
 * all in the same run, in the same directory, with 64-byte records.
 * Also CRC-32C software (slicing-by-8) against the SSE4.2 instruction.
 *
 * usage: bench-storage [DIR]   (default $STOR_BENCH_DIR or /var/tmp; not tmpfs)
 */
#include <sqlite3.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "stor-test-util.h"
#include "storage/crc32c.h"
#include "storage/stor-private.h"

#define REC_BYTES 64
#define STOR_RECORDS (2u << 20)   /* 128 MiB of payload */
#define SQLITE_RECORDS 500000u
#define DD_MIB 256

struct row {
	const char *name;
	double records, payload_bytes, disk_bytes, secs;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct row bench_dd(const char *dir, const char *name, const char *flag, int mib)
{
	char of[600], count[32];
	struct row row = { name, 0, 0, (double)mib * 1048576, 0 };
	double t0 = now_s();
	int status;
	pid_t pid;

	snprintf(of, sizeof(of), "of=%s/dd.bin", dir);
	snprintf(count, sizeof(count), "count=%d", mib * 16);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		execlp("dd", "dd", "if=/dev/zero", of, "bs=64k", count, flag, "status=none",
		       (char *)NULL);
		_exit(127);
	}
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	row.secs = now_s() - t0;
	row.payload_bytes = row.disk_bytes;
	snprintf(of, sizeof(of), "%s/dd.bin", dir);
	unlink(of);
	return row;
}

static void append_n(stor_log_t *log, uint32_t n, uint32_t every, uint8_t *payload)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seq = stor_log_next_seq(log);
		struct stor_rec rec = { .first_seq = seq, .count = 1, .t_first_ns = (int64_t)seq,
					.t_last_ns = (int64_t)seq, .payload = payload,
					.len = REC_BYTES };

		memcpy(payload, &seq, sizeof(seq));
		CHECK(stor_log_append(log, &rec) == 0);
		if (every ? (i + 1) % every == 0 : (i & 255) == 255)
			CHECK((every ? stor_log_sync(log) : stor_log_tick(log)) == 0);
		/* The uplink keeps up: retention may recycle everything old. */
		if ((i & 4095) == 0)
			CHECK(stor_log_set_forwarded(log, seq) == 0);
	}
}

/*
 * every == 0: sync on the 200 ms window; else stor_log_sync every N records.
 * retention != 0: steady state - the log is first filled past its budget
 * (not timed), so new segments are recycled ones, as on a recorder that
 * has run for a while.
 */
static struct row bench_stor(const char *dir, const char *name, uint32_t every,
			     uint64_t retention)
{
	char sub[600];
	struct stor_log_cfg cfg = { .vehicle = "BENCH", .sync_window_ms = 200,
				    .segment_bytes = retention ? 8u << 20 : 64u << 20,
				    .retention_bytes = retention };
	struct row row = { name, STOR_RECORDS, (double)STOR_RECORDS * REC_BYTES, 0, 0 };
	uint8_t payload[REC_BYTES];
	struct stor_stats st;
	stor_log_t *log;
	double t0;

	snprintf(sub, sizeof(sub), "%s/stor", dir);
	tu_rm_rf(sub);
	cfg.dir = sub;
	memset(payload, 0xa5, sizeof(payload));
	CHECK(stor_log_open(&cfg, &log) == 0);
	if (retention)
		append_n(log, (uint32_t)(retention * 3 / 2 / stor_frame_size(REC_BYTES)), 0,
			 payload);
	t0 = now_s();
	append_n(log, STOR_RECORDS, every, payload);
	CHECK(stor_log_sync(log) == 0);
	row.secs = now_s() - t0;
	CHECK(stor_log_stats(log, &st) == 0);
	row.disk_bytes = (double)STOR_RECORDS * stor_frame_size(REC_BYTES);
	stor_log_free(log);
	tu_rm_rf(sub);
	return row;
}

static void exec_sql(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "sqlite: %s: %s\n", sql, err);
		abort();
	}
}

static struct row bench_sqlite(const char *dir)
{
	char path[600];
	struct row row = { "sqlite WAL sync=FULL 1000/txn", SQLITE_RECORDS,
			   (double)SQLITE_RECORDS * REC_BYTES, 0, 0 };
	uint8_t payload[REC_BYTES];
	sqlite3_stmt *ins;
	sqlite3 *db;
	double t0;

	snprintf(path, sizeof(path), "%s/bench.sqlite", dir);
	unlink(path);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
		 "CREATE TABLE rec(seq INTEGER PRIMARY KEY, t INTEGER, payload BLOB);");
	CHECK(sqlite3_prepare_v2(db, "INSERT INTO rec VALUES(?,?,?)", -1, &ins, NULL) == SQLITE_OK);
	memset(payload, 0xa5, sizeof(payload));
	t0 = now_s();
	for (uint32_t i = 0; i < SQLITE_RECORDS; i++) {
		if (i % 1000 == 0)
			exec_sql(db, "BEGIN");
		sqlite3_bind_int64(ins, 1, i + 1);
		sqlite3_bind_int64(ins, 2, i + 1);
		sqlite3_bind_blob(ins, 3, payload, REC_BYTES, SQLITE_STATIC);
		CHECK(sqlite3_step(ins) == SQLITE_DONE);
		sqlite3_reset(ins);
		if (i % 1000 == 999)
			exec_sql(db, "COMMIT");
	}
	row.secs = now_s() - t0;
	sqlite3_finalize(ins);
	sqlite3_close(db);
	{
		struct stat st;

		row.disk_bytes = stat(path, &st) == 0 ? (double)st.st_size : 0;
	}
	unlink(path);
	strcat(path, "-wal");
	unlink(path);
	return row;
}

static void bench_crc(void)
{
	static uint8_t buf[1 << 20];
	uint32_t crc = 0;
	double t0, sw, hw;

	memset(buf, 0x5a, sizeof(buf));
	t0 = now_s();
	for (int i = 0; i < 256; i++)
		crc = stor_crc32c_sw(crc, buf, sizeof(buf));
	sw = 256.0 / (now_s() - t0);
	t0 = now_s();
	for (int i = 0; i < 256; i++)
		crc ^= stor_crc32c_hw(crc, buf, sizeof(buf));
	hw = 256.0 / (now_s() - t0);
	printf("\ncrc32c over 256 MiB: slicing-by-8 %.0f MiB/s, %s %.0f MiB/s (%s), "
	       "ratio %.1fx  [%08x]\n", sw,
#if defined(__aarch64__)
	       "armv8 crc",
#else
	       "sse4.2",
#endif
	       hw,
	       stor_crc32c_hw_available() ? "in use" : "not available here", hw / sw, crc);
}

static struct row median3(struct row a, struct row b, struct row c)
{
	if ((a.secs <= b.secs && b.secs <= c.secs) || (c.secs <= b.secs && b.secs <= a.secs))
		return b;
	if ((b.secs <= a.secs && a.secs <= c.secs) || (c.secs <= a.secs && a.secs <= b.secs))
		return a;
	return c;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("STOR_BENCH_DIR");
	struct row rows[8], runs[3][8];
	struct statfs sfs;
	char *sub;
	int n = 0;

	sub = tu_tmpdir("bench");
	if (dir) {
		free(sub);
		sub = strdup(dir);
	}
	CHECK(statfs(sub, &sfs) == 0);
	if (sfs.f_type == 0x01021994) /* TMPFS_MAGIC: syncs would be free */
		fprintf(stderr, "warning: %s is tmpfs; the figures do not measure a disk\n", sub);
	/* Each figure is the median of 3 runs: the box is shared. */
	for (int k = 0; k < 3; k++) {
		n = 0;
		runs[k][n++] = bench_dd(sub, "dd bs=64k conv=fdatasync", "conv=fdatasync", DD_MIB);
		runs[k][n++] = bench_dd(sub, "dd bs=64k oflag=dsync", "oflag=dsync", DD_MIB / 4);
		runs[k][n++] = bench_sqlite(sub);
		runs[k][n++] = bench_stor(sub, "stor window 200 ms", 0, 0);
		runs[k][n++] = bench_stor(sub, "stor sync/1000 rec", 1000, 0);
		runs[k][n++] = bench_stor(sub, "stor window 200 ms, steady", 0, 64u << 20);
		runs[k][n++] = bench_stor(sub, "stor sync/1000 rec, steady", 1000, 64u << 20);
	}
	for (int i = 0; i < n; i++)
		rows[i] = median3(runs[0][i], runs[1][i], runs[2][i]);
	printf("dir %s, median of 3 runs, records of %d bytes payload (stor frames %u bytes on disk);\n"
	       "MB/s = payload; vs dd = payload MB/s / dd conv=fdatasync MB/s; vs sqlite = "
	       "records/s ratio;\nsteady = 64 MiB retention filled first, so segments are "
	       "recycled (written blocks overwritten)\n\n", sub, REC_BYTES,
	       (unsigned)stor_frame_size(REC_BYTES));
	printf("%-30s %10s %8s %12s %10s %10s %9s %9s\n", "writer", "records", "secs",
	       "records/s", "MB/s", "disk MB/s", "vs dd", "vs sqlite");
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		double mbs = r->payload_bytes / r->secs / 1e6;
		double dd = rows[0].payload_bytes / rows[0].secs / 1e6;
		double sq = rows[2].records / rows[2].secs;

		printf("%-30s %10.0f %8.3f %12.0f %10.1f %10.1f %8.1f%% ", r->name, r->records,
		       r->secs, r->records ? r->records / r->secs : 0, mbs,
		       r->disk_bytes / r->secs / 1e6, 100 * mbs / dd);
		if (r->records)
			printf("%8.2fx\n", r->records / r->secs / sq);
		else
			printf("%9s\n", "-");
	}
	bench_crc();
	if (!dir)
		tu_rm_rf(sub);
	free(sub);
	return 0;
}
