/* SPDX-License-Identifier: MIT */
/*
 * test-storage-powerloss.c - cut the power at every write and sync point
 * of a workload (as littlefs and SQLite test), with 10 patterns of what
 * the disk keeps of the unsynced data; after each cut, recovery must give
 * an unbroken sequence of every confirmed record, and the log must go on.
 */
#include "stor-faultdev.h"
#include "stor-test-util.h"

static struct stor_log_cfg cfg_for(const char *dir, struct fdev *dev)
{
	return (struct stor_log_cfg){
		.dir = dir, .vehicle = "PL", .segment_bytes = 2048,
		.sync_window_ms = 3600 * 1000, .ops = &dev->ops,
	};
}

/* Highest confirmed seq seen from calls that succeeded. */
static void confirm(stor_log_t *log, int r, uint64_t *confirmed)
{
	if (r == 0 && stor_log_confirmed_seq(log) > *confirmed)
		*confirmed = stor_log_confirmed_seq(log);
}

/* Two sessions: appends with syncs and segment rolls, close, reopen
   (recovery), more appends.  Stops at the first failed call. */
static uint64_t workload(const char *dir, struct fdev *dev)
{
	struct stor_log_cfg cfg = cfg_for(dir, dev);
	uint64_t confirmed = 1;
	stor_log_t *log;
	int r;

	for (int session = 0; session < 3; session++) {
		/* The third session keeps 8 KiB: segments are retired and
		   recycled (rename, new salt) while the power may go. */
		cfg.retention_bytes = session == 2 ? 8192 : 0;
		if (stor_log_open(&cfg, &log) < 0)
			return confirmed;
		confirm(log, 0, &confirmed);
		for (int i = 0; i < (session ? 30 : 60); i++) {
			stor_log_set_forwarded(log, stor_log_next_seq(log));
			r = tu_append(log);
			confirm(log, r, &confirmed);
			if (r == 0 && i % 4 == 3) {
				r = stor_log_sync(log);
				confirm(log, r, &confirmed);
			}
			if (r < 0)
				break;
		}
		if (r == 0)
			confirm(log, stor_log_sync(log), &confirmed);
		stor_log_free(log);
		if (r < 0 || dev->dead)
			return confirmed;
	}
	return confirmed;
}

/* After the cut: recover, check, append one more, check again. */
static long n_confirmed_recs, n_beyond, n_damaged;

static void verify(const char *dir, uint64_t confirmed, long at, int pattern)
{
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct tu_verify v = { 0 }; /* filled by tu_verify_log; -O3 cannot tell */
	stor_log_t *log;
	uint64_t next;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	if (stor_log_open(&cfg, &log) < 0 || stor_log_next_seq(log) < confirmed ||
	    tu_verify_log(dir, 0, confirmed, &v) < 0 || (confirmed > 1 && v.first > 1 && v.first + 20 > confirmed)) {
		fprintf(stderr, "FAIL: cut at op %ld, pattern %s, confirmed %" PRIu64 "\n", at,
			fdev_pattern_name(pattern), confirmed);
		abort();
	}
	next = stor_log_next_seq(log);
	n_confirmed_recs += (long)confirmed - 1;
	n_beyond += (long)(v.next - confirmed);
	n_damaged += v.damaged > 0;
	/* Confirmed records start the log (retention keeps the newest 8 KiB
	   in the last session); only unconfirmed ones may be missing (a kept
	   later block can outlive a dropped earlier one). */
	CHECK(v.records == 0 || v.first == 1 || confirmed == 1 || v.first + 20 <= confirmed);
	CHECK(tu_append(log) == 0 && stor_log_sync(log) == 0);
	stor_log_free(log);
	if (tu_verify_log(dir, 0, confirmed, &v) < 0 || v.next != next + 1) {
		fprintf(stderr, "FAIL after re-append: cut at op %ld, pattern %s\n", at,
			fdev_pattern_name(pattern));
		abort();
	}
	fdev_done(&dev);
}

int main(void)
{
	char *dir = tu_tmpdir_in("powerloss", true);
	struct fdev dev;
	long total, runs = 0;
	uint64_t confirmed;

	/* A clean run counts the write and sync points. */
	CHECK(fdev_init(&dev, dir) == 0);
	confirmed = workload(dir, &dev);
	total = dev.ops_seen;
	/* Retired segments were recycled as well as created. */
	CHECK(dev.renames >= 2);
	fdev_done(&dev);
	CHECK(confirmed == 121 && total > 50);
	tu_rm_rf(dir);

	for (long at = 1; at <= total; at++) {
		for (int p = 0; p < FDEV_PATTERNS; p++) {
			CHECK(mkdir(dir, 0755) == 0);
			CHECK(fdev_init(&dev, dir) == 0);
			dev.track = true;
			dev.mode = FDEV_CRASH;
			dev.fail_at = at;
			confirmed = workload(dir, &dev);
			CHECK(dev.dead);
			CHECK(fdev_power_cut(&dev, p, (uint32_t)(at * 16 + p)) == 0);
			fdev_done(&dev);
			verify(dir, confirmed, at, p);
			tu_rm_rf(dir);
			runs++;
		}
	}
	printf("power-loss sweep: %ld cut points x %d patterns = %ld runs, all recovered\n"
	       "  confirmed records checked: %ld, unconfirmed survivors: %ld, "
	       "runs with reported damage after the confirmed part: %ld\n",
	       total, FDEV_PATTERNS, runs, n_confirmed_recs, n_beyond, n_damaged);
	free(dir);
	return 0;
}
