/* SPDX-License-Identifier: MIT */
/*
 * test-storage-faults.c - EIO and ENOSPC injected once and persistently,
 * short writes, and a real full filesystem (a tmpfs with size=) while
 * logging.  Needs root for the mount: it FAILS, never skips, without it.
 */
#include <sys/mount.h>

#include "stor-faultdev.h"
#include "stor-test-util.h"
#include "storage/stor-private.h"

static struct stor_log_cfg cfg_for(const char *dir, struct fdev *dev)
{
	return (struct stor_log_cfg){
		.dir = dir, .vehicle = "FAULT", .segment_bytes = 4096,
		.sync_window_ms = 3600 * 1000, .ops = dev ? &dev->ops : NULL,
	};
}

static void arm(struct fdev *d, enum fdev_mode mode, unsigned which, bool persistent)
{
	d->mode = mode;
	d->which = which;
	d->persistent = persistent;
	d->ops_seen = 0;
	d->fail_at = 1;
}

/* Count records and damage reports a reader sees. */
static void read_all(const char *dir, uint64_t *ret_records, uint64_t *ret_damaged)
{
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t n = 0, bad = 0, next = 0;
	int ret;

	CHECK(stor_reader_open(dir, &r) == 0);
	while ((ret = stor_reader_next(r, &rec)) != 0) {
		if (ret == -EBADMSG) {
			bad++;
			continue;
		}
		CHECK(ret == 1 && tu_rec_ok(&rec) && rec.first_seq >= next);
		next = rec.first_seq + rec.count;
		n += rec.count;
	}
	stor_reader_free(r);
	*ret_records = n;
	*ret_damaged = bad;
}

/* fdatasync fails once: the segment is abandoned, never retried. */
static void test_eio_sync_once(void)
{
	char *dir = tu_tmpdir("eio1");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	struct tu_verify v;
	stor_log_t *log;
	long writes_before;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	cfg.segment_bytes = 1 << 20;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	arm(&dev, FDEV_EIO, FDEV_OP_SYNC, false);
	CHECK(stor_log_sync(log) == -EIO);
	CHECK(stor_log_take_events(log, &ev) == 1);
	CHECK(ev.lost_unsynced == 10 && ev.lost_first_seq == 21 && ev.segments_abandoned == 1);
	CHECK(ev.last_error == -EIO);
	/* The failed data is reported lost, not confirmed durable, and the
	   next segment is already there. */
	CHECK(stor_log_confirmed_seq(log) == 31);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/00000000000000000031.seg", dir);
		CHECK(access(p, F_OK) == 0);
	}
	dev.fail_at = 0;
	writes_before = dev.ops_seen;
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(dev.ops_seen > writes_before);
	log = stor_log_free(log);
	fdev_done(&dev);
	/* 1..20 durable; 21..30 were in the abandoned segment; 31.. in a new
	   one.  The abandoned one ends unsealed: reported, once. */
	CHECK(access(dir, F_OK) == 0);
	CHECK(tu_verify_log(dir, 1, 21, &v) == 0);
	CHECK(v.next == 41 && v.damaged == 1);
	{
		char p[512];

		snprintf(p, sizeof(p), "%s/00000000000000000031.seg", dir);
		CHECK(access(p, F_OK) == 0);
	}
	tu_rm_rf(dir);
	free(dir);
}

/* The seal written by recovery fails: the open still succeeds. */
static void test_eio_at_recovery(void)
{
	char *dir = tu_tmpdir("eiorec");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	struct tu_verify v;
	stor_log_t *log;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	cfg.segment_bytes = 1 << 20;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 50; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	arm(&dev, FDEV_CRASH, FDEV_OP_ALL, false); /* no seal: the process dies */
	log = stor_log_free(log);
	fdev_done(&dev);

	CHECK(fdev_init(&dev, dir) == 0);
	arm(&dev, FDEV_EIO, FDEV_OP_SYNC, false);
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == 51);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.segments_abandoned == 1);
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	log = stor_log_free(log);
	fdev_done(&dev);
	CHECK(tu_verify_log(dir, 1, 61, &v) == 0 && v.next == 61);
	tu_rm_rf(dir);
	free(dir);
}

/* A write fails with EIO, once and then for good: exact accounting. */
static void test_eio_write(bool persistent)
{
	char *dir = tu_tmpdir("eiow");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	struct stor_stats st;
	stor_log_t *log;
	uint64_t ok = 0, failed = 0, n, bad;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	arm(&dev, FDEV_EIO, FDEV_OP_WRITE | FDEV_OP_SYNC | FDEV_OP_CREATE, persistent);
	for (int i = 0; i < 300; i++) {
		int r = tu_append(log);

		if (i % 10 == 9 && r == 0)
			r = stor_log_sync(log);
		if (r == 0)
			ok++;
		else
			failed++;
	}
	CHECK(failed > 0);
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.segments_abandoned >= 1);
	dev.fail_at = 0;
	for (int i = 0; i < 50; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_log_next_seq(log) == 451);
	log = stor_log_free(log);
	fdev_done(&dev);
	read_all(dir, &n, &bad);
	/* Every record is stored, or counted as dropped or lost. */
	CHECK(n + st.dropped + st.lost_unsynced >= 450);
	CHECK(n >= 150 + (persistent ? 0 : 200));
	CHECK(bad >= 1);
	tu_rm_rf(dir);
	free(dir);
}

/* ENOSPC once: the buffered frames are dropped whole and counted exactly;
   no partial record, and the gap is marked (no damage reported). */
static void test_enospc_once(void)
{
	char *dir = tu_tmpdir("nospc1");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	stor_log_t *log;
	uint64_t n, bad;

	CHECK(fdev_init(&dev, dir) == 0);
	dev.no_alloc = true; /* else writes land in preallocated blocks */
	cfg = cfg_for(dir, &dev);
	cfg.segment_bytes = 1 << 20;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	for (int i = 0; i < 7; i++)
		CHECK(tu_append(log) == 0);
	arm(&dev, FDEV_ENOSPC, FDEV_OP_WRITE, false);
	CHECK(stor_log_sync(log) == -ENOSPC);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.dropped_nospace == 7);
	CHECK(ev.lost_unsynced == 0 && ev.segments_abandoned == 0);
	for (int i = 0; i < 20; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	fdev_done(&dev);
	read_all(dir, &n, &bad);
	CHECK(n == 40 && bad == 0);
	tu_rm_rf(dir);
	free(dir);
}

/* ENOSPC for good: forwarded segments are freed first, then records are
   refused whole and counted; unforwarded data is never deleted for room. */
static void test_enospc_persistent(bool no_alloc)
{
	char *dir = tu_tmpdir("nospcp");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_stats st;
	stor_log_t *log;
	uint64_t n, bad, refused = 0;

	CHECK(fdev_init(&dev, dir) == 0);
	/* Without fallocate even the seal may not fit: the segment must then
	   stay open rather than close unsealed. */
	dev.no_alloc = no_alloc;
	cfg = cfg_for(dir, &dev);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 200; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_log_set_forwarded(log, 100) == 0);
	arm(&dev, FDEV_ENOSPC, FDEV_OP_WRITE | FDEV_OP_ALLOC | FDEV_OP_CREATE, true);
	for (int i = 0; i < 300; i++) {
		int r = tu_append(log);

		CHECK(r == 0 || r == -ENOSPC);
		refused += r == -ENOSPC;
	}
	(void)stor_log_sync(log);
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.retention_deleted > 0 && st.retention_unforwarded == 0);
	CHECK(st.retention_deleted <= 100);
	CHECK(refused > 0 && st.dropped >= refused && st.lost_unsynced == 0);
	dev.fail_at = 0;
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	fdev_done(&dev);
	read_all(dir, &n, &bad);
	CHECK(bad == 0);
	CHECK(n + st.dropped + st.retention_deleted == 510);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * No segment can be created for a while (ENOSPC at the roll): the records
 * refused meanwhile are marked by a GAP frame at the start of the next
 * segment, which is named after the first of them, so the chain runs on
 * from segment to segment: a reader reports nothing (a drop is not a
 * deleted file), and a seek to the first refused seq or to that segment's
 * first seq lands on the first record after the gap.
 */
static void test_gap_between_segments(void)
{
	char *dir = tu_tmpdir("gapseg");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t refused = 0, first_refused = 0, after, n, bad, *seqs;
	size_t nseg;
	int dfd, ret;
	bool found = false;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 20; i++)
		CHECK(tu_append(log) == 0);
	arm(&dev, FDEV_ENOSPC, FDEV_OP_CREATE, true);
	while (refused < 25) {
		uint64_t seq = stor_log_next_seq(log);

		ret = tu_append(log);
		CHECK(ret == 0 || ret == -ENOSPC);
		if (ret == -ENOSPC && !refused++)
			first_refused = seq;
		CHECK(seq < 1000);
	}
	dev.fail_at = 0;
	after = stor_log_next_seq(log);
	for (int i = 0; i < 30; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.dropped_nospace == refused);
	log = stor_log_free(log);
	fdev_done(&dev);
	read_all(dir, &n, &bad);
	CHECK(bad == 0 && n == after + 30 - 1 - refused);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &nseg) == 0);
	close(dfd);
	for (size_t i = 0; i < nseg; i++)
		found |= seqs[i] == first_refused;
	CHECK(found); /* the segment after the gap starts at the gap */
	free(seqs);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_seek_seq(r, first_refused) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == after && tu_rec_ok(&rec));
	CHECK(stor_reader_seek_seq(r, after - 1) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == after);
	stor_reader_free(r);
	printf("gap between segments: %" PRIu64 " records refused from seq %" PRIu64 " while no segment "
	       "could be created; the next segment starts there, no fault reported\n", refused,
	       first_refused);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * fallocate fails with ENOSPC for good (a segment larger than the free
 * space) and nothing is forwarded to free: the log writes without
 * preallocation instead of refusing every record, and says why.
 */
static void test_alloc_enospc(void)
{
	char *dir = tu_tmpdir("noalloc");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct stor_events ev;
	struct stor_stats st;
	struct tu_verify v;
	stor_log_t *log;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	arm(&dev, FDEV_ENOSPC, FDEV_OP_ALLOC, true);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 300; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_log_stats(log, &st) == 0 && st.dropped == 0 && st.segments > 3);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.last_error == -ENOSPC);
	CHECK(ev.dropped_nospace == 0 && ev.dropped_other == 0);
	log = stor_log_free(log);
	CHECK(dev.ops_seen > 3); /* every segment tried to preallocate */
	fdev_done(&dev);
	CHECK(tu_verify_log(dir, 1, 301, &v) == 0 && v.damaged == 0 && v.next == 301);
	tu_rm_rf(dir);
	free(dir);
}

static void test_short_writes(void)
{
	char *dir = tu_tmpdir("short");
	struct fdev dev;
	struct stor_log_cfg cfg;
	struct tu_verify v;
	stor_log_t *log;

	CHECK(fdev_init(&dev, dir) == 0);
	cfg = cfg_for(dir, &dev);
	arm(&dev, FDEV_SHORT, FDEV_OP_WRITE, true);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 300; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	log = stor_log_free(log);
	CHECK(dev.ops_seen > 100);
	fdev_done(&dev);
	CHECK(tu_verify_log(dir, 1, 301, &v) == 0 && v.damaged == 0 && v.next == 301);
	tu_rm_rf(dir);
	free(dir);
}

static char *mnt;

static void umount_tmpfs(void)
{
	if (mnt) {
		umount2(mnt, MNT_DETACH);
		rmdir(mnt);
	}
}

/* A real tmpfs of 1 MiB fills up while logging. */
static void test_full_fs(void)
{
	struct stor_log_cfg cfg;
	struct stor_stats st;
	struct stor_events ev;
	stor_log_t *log;
	uint64_t n, bad, attempted = 0, refused = 0;
	char dir[600];

	mnt = tu_tmpdir("fullfs");
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0) {
		fprintf(stderr, "FAIL: cannot mount a 1 MiB tmpfs on %s (%s): this test needs "
			"root (CAP_SYS_ADMIN) to fill a real filesystem\n", mnt, strerror(errno));
		exit(1);
	}
	atexit(umount_tmpfs);
	snprintf(dir, sizeof(dir), "%s/log", mnt);
	cfg = cfg_for(dir, NULL);
	cfg.segment_bytes = 64 * 1024;
	CHECK(stor_log_open(&cfg, &log) == 0);
	/* Phase 1: nothing forwarded, so nothing may be deleted: drops. */
	while (refused < 100) {
		int r = tu_append(log);

		attempted++;
		CHECK(r == 0 || r == -ENOSPC);
		refused += r == -ENOSPC;
		if (attempted % 64 == 0)
			CHECK(stor_log_sync(log) == 0 || stor_log_confirmed_seq(log));
		CHECK(attempted < 100000);
	}
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.retention_deleted == 0 && st.lost_unsynced == 0 && st.dropped >= refused);
	/* Phase 2: the uplink caught up with half: room is made from that. */
	CHECK(stor_log_set_forwarded(log, stor_log_next_seq(log) / 2) == 0);
	for (int i = 0; i < 2000; i++) {
		attempted++;
		(void)tu_append(log);
	}
	(void)stor_log_sync(log);
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(stor_log_take_events(log, &ev) == 1);
	CHECK(st.retention_deleted > 0 && st.retention_unforwarded == 0);
	CHECK(ev.dropped_nospace == st.dropped && ev.lost_unsynced == 0);
	log = stor_log_free(log);
	read_all(dir, &n, &bad);
	printf("full tmpfs: %" PRIu64 " attempted, %" PRIu64 " stored, %" PRIu64
	       " dropped, %" PRIu64 " freed (forwarded), %" PRIu64 " damage reports\n",
	       attempted, n, st.dropped, st.retention_deleted, bad);
	CHECK(bad == 0);
	CHECK(n + st.dropped + st.retention_deleted == attempted);
	umount_tmpfs();
	free(mnt);
	mnt = NULL;
}

int main(void)
{
	test_eio_sync_once();
	test_eio_at_recovery();
	test_eio_write(false);
	test_eio_write(true);
	test_enospc_once();
	test_enospc_persistent(false);
	test_enospc_persistent(true);
	test_gap_between_segments();
	test_alloc_enospc();
	test_short_writes();
	test_full_fs();
	printf("test-storage-faults: all passed\n");
	return 0;
}
