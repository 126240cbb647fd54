/* SPDX-License-Identifier: MIT */
/*
 * test-storage.c - the flash log's contract: bad arguments, round trip,
 * segment roll, seek by seq and time, recovery of a torn tail, damage in
 * the middle, stale generations, retention by bytes and by age.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "stor-faultdev.h"
#include "storage/crc32c.h"
#include "stor-test-util.h"
#include "storage/stor-private.h"

static struct stor_log_cfg cfg_for(const char *dir)
{
	return (struct stor_log_cfg){
		.dir = dir, .vehicle = "TEST-1", .config_hash = 0x1234,
		.boot_id = { 1, 2, 3 }, .segment_bytes = 8192, .sync_window_ms = 1000,
	};
}

static void test_bad_args(void)
{
	char *dir = tu_tmpdir("args");
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec = { .first_seq = 1, .count = 1 };
	struct stor_stats st;
	struct stor_events ev;
	char longname[80];

	CHECK(stor_log_open(NULL, &log) == -EINVAL);
	CHECK(stor_log_open(&cfg, NULL) == -EINVAL);
	cfg.dir = NULL;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg = cfg_for(dir);
	cfg.vehicle = NULL;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	cfg.vehicle = longname;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg = cfg_for(dir);
	cfg.segment_bytes = 100;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg = cfg_for(dir);
	cfg.sync_window_ms = 4000 * 1000;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg = cfg_for(dir);
	cfg.retention_bytes = 2 * cfg.segment_bytes - 1; /* below two segments */
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg.segment_bytes = 0; /* the default, 16 MiB */
	cfg.retention_bytes = 31u << 20;
	CHECK(stor_log_open(&cfg, &log) == -EINVAL);
	cfg = cfg_for(dir);

	CHECK(stor_log_free(NULL) == NULL);
	CHECK(stor_log_append(NULL, &rec) == -EINVAL);
	CHECK(stor_log_sync(NULL) == -EINVAL);
	CHECK(stor_log_tick(NULL) == -EINVAL);
	CHECK(stor_log_next_seq(NULL) == 0);
	CHECK(stor_log_confirmed_seq(NULL) == 0);
	CHECK(stor_log_set_forwarded(NULL, 1) == -EINVAL);
	CHECK(stor_log_stats(NULL, &st) == -EINVAL);
	CHECK(stor_log_take_events(NULL, &ev) == -EINVAL);

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_append(log, NULL) == -EINVAL);
	rec.first_seq = 2; /* not next_seq */
	CHECK(stor_log_append(log, &rec) == -EINVAL);
	rec.first_seq = 1;
	rec.count = 0;
	CHECK(stor_log_append(log, &rec) == -EINVAL);
	rec.count = 1;
	rec.len = 10; /* no payload */
	CHECK(stor_log_append(log, &rec) == -EINVAL);
	rec.len = STOR_MAX_PAYLOAD + 1;
	rec.payload = "x";
	CHECK(stor_log_append(log, &rec) == -EINVAL);
	rec.len = 0;
	rec.t_first_ns = 5;
	rec.t_last_ns = 4;
	CHECK(stor_log_append(log, &rec) == -EINVAL);
	CHECK(stor_log_set_forwarded(log, 99) == -EINVAL);
	CHECK(stor_log_stats(log, NULL) == -EINVAL);
	CHECK(stor_log_take_events(log, NULL) == -EINVAL);
	CHECK(stor_log_next_seq(log) == 1);
	log = stor_log_free(log);

	CHECK(stor_reader_open(NULL, &r) == -EINVAL);
	CHECK(stor_reader_open(dir, NULL) == -EINVAL);
	CHECK(stor_reader_open("/nonexistent/railmon", &r) == -ENOENT);
	CHECK(stor_reader_free(NULL) == NULL);
	CHECK(stor_reader_next(NULL, &rec) == -EINVAL);
	CHECK(stor_reader_seek_seq(NULL, 1) == -EINVAL);
	CHECK(stor_reader_seek_time(NULL, 0) == -EINVAL);
	stor_reader_error(NULL, NULL, NULL);
	CHECK(stor_reader_open_ops(NULL, NULL, &r) == -EINVAL);
	CHECK(stor_reader_open_ops(dir, NULL, NULL) == -EINVAL);
	CHECK(stor_reader_fault(NULL, &(struct stor_fault){ 0 }) == -EINVAL);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_next(r, NULL) == -EINVAL);
	CHECK(stor_reader_seek_seq(r, 0) == -EINVAL);
	CHECK(stor_reader_fault(r, NULL) == -EINVAL);
	CHECK(stor_reader_fault(r, &(struct stor_fault){ 0 }) == -ENOENT);
	stor_reader_free(r);
	tu_rm_rf(dir);
	free(dir);
}

static void test_roundtrip(void)
{
	char *dir = tu_tmpdir("rt");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct tu_verify v;
	struct stor_stats st;
	stor_log_t *log;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 500; i++) {
		CHECK(tu_append(log) == 0);
		if (i % 50 == 49)
			CHECK(stor_log_sync(log) == 0);
	}
	CHECK(stor_log_confirmed_seq(log) == 501);
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.records == 500 && st.segments > 5 && st.syncs >= 10);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 1, 501, &v) == 0);
	CHECK(v.first == 1 && v.next == 501 && v.records == 500 && v.damaged == 0);

	/* Reopen continues the numbering, and a reader sees both runs. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == 501);
	for (int i = 0; i < 100; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 1, 601, &v) == 0);
	CHECK(v.records == 600 && v.damaged == 0);

	/* Nothing happened: no events. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	{
		struct stor_events ev;

		CHECK(stor_log_take_events(log, &ev) == 0 && ev.lost_unsynced == 0);
	}
	log = stor_log_free(log);

	/* An open and close with no records leaves no empty segment behind. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	log = stor_log_free(log);
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == 601);
	log = stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
}

/* Window 0 syncs every append; a window syncs from tick() once elapsed. */
static void test_sync_window(void)
{
	char *dir = tu_tmpdir("window");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct timespec t0, t;
	struct stor_stats st;
	stor_log_t *log;

	cfg.sync_window_ms = 0;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 5; i++) {
		CHECK(tu_append(log) == 0);
		CHECK(stor_log_confirmed_seq(log) == stor_log_next_seq(log));
	}
	CHECK(stor_log_stats(log, &st) == 0 && st.syncs == 5);
	log = stor_log_free(log);

	cfg.sync_window_ms = 20;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(tu_append(log) == 0);
	CHECK(stor_log_tick(log) == 0);
	CHECK(stor_log_confirmed_seq(log) == 6); /* not yet: the window runs */
	/* Poll tick() (bounded) until the window has passed. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK(stor_log_tick(log) == 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
		CHECK(t.tv_sec - t0.tv_sec < 5);
	} while (stor_log_confirmed_seq(log) == 6);
	CHECK(stor_log_confirmed_seq(log) == 7);
	CHECK((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) >= 15000000LL);
	log = stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
}

static void test_seek(void)
{
	char *dir = tu_tmpdir("seek");
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	uint8_t pl[32] = { 0 };

	CHECK(stor_log_open(&cfg, &log) == 0);
	/* Frames of 3 records each: seq 1-3, 4-6, ... */
	for (uint64_t s = 1; s < 3000; s += 3) {
		struct stor_rec w = { .first_seq = s, .count = 3, .t_first_ns = (int64_t)s * 10,
				      .t_last_ns = (int64_t)s * 10 + 20, .payload = pl, .len = 32 };

		memcpy(pl, &s, sizeof(s));
		CHECK(stor_log_append(log, &w) == 0);
	}
	log = stor_log_free(log);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_seek_seq(r, 1502) == 0);
	CHECK(stor_reader_next(r, &rec) == 1);
	CHECK(rec.first_seq == 1501 && rec.count == 3 && rec.len == 32);
	CHECK(memcmp(rec.payload, &rec.first_seq, 8) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == 1504);
	CHECK(stor_reader_seek_seq(r, 1) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == 1);
	CHECK(stor_reader_seek_seq(r, 5000) == 0);
	CHECK(stor_reader_next(r, &rec) == 0);
	/* Time: the first frame whose t_last >= t. */
	CHECK(stor_reader_seek_time(r, 20035) == 0);
	CHECK(stor_reader_next(r, &rec) == 1);
	CHECK(rec.first_seq == 2002 && rec.t_last_ns >= 20035);
	CHECK(stor_reader_seek_time(r, INT64_MIN) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == 1);
	/* Every frame start, across segment boundaries (skipped by seal). */
	for (uint64_t s = 1; s < 3000; s += 99) {
		CHECK(stor_reader_seek_time(r, (int64_t)s * 10 + 20) == 0);
		CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == s);
	}
	CHECK(stor_reader_seek_time(r, INT64_MAX) == 0);
	CHECK(stor_reader_next(r, &rec) == 0);
	stor_reader_free(r);
	tu_rm_rf(dir);
	free(dir);
}

/* Append one frame of count records at next_seq (payload: its first seq). */
static void append_frame(stor_log_t *log, uint32_t count)
{
	uint64_t s = stor_log_next_seq(log);
	struct stor_rec w = { .first_seq = s, .count = count, .t_first_ns = (int64_t)s * 10,
			      .t_last_ns = (int64_t)s * 10 + 5, .payload = &s, .len = sizeof(s) };

	CHECK(stor_log_append(log, &w) == 0);
}

/* seek_seq(seq) then next() gives the frame starting at want (0: none). */
static void seek_expect(stor_reader_t *r, uint64_t seq, uint64_t want)
{
	struct stor_rec rec;
	int n;

	CHECK(stor_reader_seek_seq(r, seq) == 0);
	n = stor_reader_next(r, &rec);
	if (want ? n != 1 || rec.first_seq != want || memcmp(rec.payload, &want, 8) : n != 0) {
		fprintf(stderr, "seek_seq(%" PRIu64 "): got %d, first_seq %" PRIu64 ", want %" PRIu64 "\n",
			seq, n, n == 1 ? rec.first_seq : 0, want);
		abort();
	}
}

/*
 * Seeks to a frame's exact first seq, deterministically: every frame of a
 * log with frames of 1-5 records, a gap and several segments (in the middle
 * of a segment and at a segment's first seq), its last seq, a seq inside
 * the gap, the last record, one past the end (then the record written
 * there), in a closed log and in the live segment of an open one.
 */
static void test_seek_exact(void)
{
	char *dir = tu_tmpdir_in("seekx", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	struct { uint64_t first; uint32_t count; uint64_t seg; } fr[2000];
	size_t nfr = 0, seg_starts = 0, mid = 0;
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t end, gap_first = 0, gap_end = 0;

	cfg.segment_bytes = 4096;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 600; i++) {
		if (i == 300) {
			gap_first = stor_log_next_seq(log);
			gap_end = gap_first + 17;
			CHECK(stor_log_skip(log, gap_end) == 0);
		}
		append_frame(log, 1 + i % 5);
	}
	CHECK(stor_log_sync(log) == 0);
	end = stor_log_next_seq(log);
	CHECK(stor_reader_open(dir, &r) == 0);
	while (stor_reader_next(r, &rec) == 1) {
		CHECK(nfr < 2000);
		fr[nfr].first = rec.first_seq;
		fr[nfr].count = rec.count;
		fr[nfr].seg = rec.segment;
		nfr++;
	}
	CHECK(nfr == 600 && fr[nfr - 1].first + fr[nfr - 1].count == end);
	for (int pass = 0; pass < 2; pass++) {
		/* pass 0: the writer is open (the last segment is live);
		   pass 1: closed and sealed. */
		for (size_t i = 0; i < nfr; i++) {
			bool seg_start = fr[i].first == fr[i].seg;

			seek_expect(r, fr[i].first, fr[i].first);
			seek_expect(r, fr[i].first + fr[i].count - 1, fr[i].first);
			if (seg_start) {
				CHECK(stor_reader_seek_seq(r, fr[i].first) == 0);
				CHECK(stor_reader_next(r, &rec) == 1 && rec.segment == fr[i].seg &&
				      rec.offset == STOR_HDR_BYTES);
				seg_starts++;
			} else if (i > 0 && fr[i - 1].seg == fr[i].seg) {
				mid++;
			}
		}
		/* Inside the gap: the first frame after it. */
		seek_expect(r, gap_first, gap_end);
		seek_expect(r, gap_end - 1, gap_end);
		/* The last record, then the end. */
		seek_expect(r, end - 1, fr[nfr - 1].first);
		CHECK(stor_reader_next(r, &rec) == 0);
		seek_expect(r, end, 0);
		seek_expect(r, end + 1000, 0);
		if (pass == 0)
			log = stor_log_free(log);
	}
	CHECK(seg_starts >= 2 * 5 && mid >= 2 * 500);
	/* One past the end, then the writer adds exactly that record: before
	   the writer's segment exists, and inside its live segment. */
	seek_expect(r, end, 0);
	CHECK(stor_log_open(&cfg, &log) == 0 && stor_log_next_seq(log) == end);
	append_frame(log, 3);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == end && rec.count == 3);
	CHECK(stor_reader_next(r, &rec) == 0);
	seek_expect(r, end + 3, 0);
	append_frame(log, 2);
	CHECK(stor_reader_next(r, &rec) == 0); /* not written yet */
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == end + 3 && rec.count == 2);
	seek_expect(r, end + 4, end + 3);
	log = stor_log_free(log);
	printf("seek: every one of %zu frames found by its first and last seq (%zu at a segment's "
	       "first seq), a gap, the last record, one past the end\n", nfr, seg_starts / 2);
	stor_reader_free(r);
	tu_rm_rf(dir);
	free(dir);
}

static uint64_t file_size(const char *dir, const char *name)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHECK(stat(p, &st) == 0);
	return (uint64_t)st.st_size;
}

static void patch(const char *dir, const char *name, uint64_t off, const void *b, size_t n)
{
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDWR);
	CHECK(fd >= 0 && pwrite(fd, b, n, (off_t)off) == (ssize_t)n);
	close(fd);
}

/* A cut power leaves an unsealed, preallocated tail: recovery truncates it. */
static void test_torn_tail(void)
{
	char *dir = tu_tmpdir("torn");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct fdev dev;
	struct stor_events ev;
	struct stor_stats st;
	struct tu_verify v;
	stor_log_t *log;
	uint64_t confirmed;
	char name[STOR_SEG_NAME_LEN];

	cfg.segment_bytes = 1 << 20;
	CHECK(fdev_init(&dev, dir) == 0);
	cfg.ops = &dev.ops;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	confirmed = stor_log_confirmed_seq(log);
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	/* The next write is the last thing the disk does. */
	dev.mode = FDEV_CRASH;
	dev.fail_at = dev.ops_seen + 1;
	dev.which = FDEV_OP_ALL;
	CHECK(stor_log_sync(log) == -EIO);
	log = stor_log_free(log);
	fdev_done(&dev);
	stor_seg_name(name, 1);
	CHECK(file_size(dir, name) == 1 << 20); /* preallocated, unsealed */
	/* A torn frame after the last good one. */
	patch(dir, name, 0x4000, "\x30\0\0\0garbage-garbage", 20);

	cfg.ops = NULL;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == confirmed);
	CHECK(stor_log_stats(log, &st) == 0 && st.recovered_truncated_bytes > 0);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.recovered_truncated_bytes > 0);
	log = stor_log_free(log);
	CHECK(file_size(dir, name) < 0x4000);
	CHECK(tu_verify_log(dir, 1, confirmed, &v) == 0 && v.damaged == 0);
	tu_rm_rf(dir);
	free(dir);
}

/* A bad CRC in a closed segment: reported with its offset, then resync. */
static void test_mid_damage(void)
{
	char *dir = tu_tmpdir("mid");
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec, victim = { 0 };
	uint64_t seg, off, before = 0, after = 0;
	char name[STOR_SEG_NAME_LEN];
	int n, bad = 0;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 300; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	/* Pick the 5th frame of the first segment. */
	CHECK(stor_reader_open(dir, &r) == 0);
	for (int i = 0; i < 5; i++)
		CHECK(stor_reader_next(r, &victim) == 1);
	r = stor_reader_free(r);
	stor_seg_name(name, victim.segment);
	patch(dir, name, victim.offset + 50, "\xff", 1);

	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		if (n == -EBADMSG) {
			stor_reader_error(r, &seg, &off);
			CHECK(seg == victim.segment && off == victim.offset);
			bad++;
			continue;
		}
		CHECK(n == 1 && tu_rec_ok(&rec));
		CHECK(rec.first_seq != victim.first_seq);
		if (rec.first_seq < victim.first_seq)
			before++;
		else
			after++;
	}
	CHECK(bad == 1 && before == victim.first_seq - 1 && after == 300 - victim.first_seq);
	stor_reader_free(r);
	tu_rm_rf(dir);
	free(dir);
}

/* Frames of an older generation of a file never validate under a new salt. */
static void test_stale_generation(void)
{
	char *dir = tu_tmpdir("stale");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_seg_hdr h;
	uint8_t hdr[STOR_HDR_BYTES];
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	char name[STOR_SEG_NAME_LEN], p[512];
	int fd;

	cfg.segment_bytes = 1 << 20;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 50; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	stor_seg_name(name, 1);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDWR);
	CHECK(fd >= 0 && pread(fd, hdr, sizeof(hdr), 0) == sizeof(hdr));
	CHECK(stor_seg_hdr_decode(hdr, &h) == 0 && h.first_seq == 1);
	CHECK(strcmp(h.vehicle, "TEST-1") == 0 && h.config_hash == 0x1234 && h.boot_id[2] == 3);
	h.salt ^= 0x5a5a;
	stor_seg_hdr_encode(&h, hdr);
	CHECK(pwrite(fd, hdr, sizeof(hdr), 0) == sizeof(hdr));
	close(fd);

	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_next(r, &rec) == 0); /* not one old frame accepted */
	stor_reader_free(r);
	/* The writer sees an empty segment and starts it afresh. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == 1);
	CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 1, 2, NULL) == 0);
	tu_rm_rf(dir);
	free(dir);
}

static void test_retention_bytes(void)
{
	char *dir = tu_tmpdir("ret");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_stats st;
	struct stor_events ev;
	struct tu_verify v;
	stor_log_t *log;

	cfg.segment_bytes = 4096;
	cfg.retention_bytes = 32768;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 1000; i++) {
		CHECK(tu_append(log) == 0);
		/* The uplink keeps up, but stops at 500. */
		uint64_t fwd = stor_log_next_seq(log);

		CHECK(stor_log_set_forwarded(log, fwd < 501 ? fwd : 501) == 0);
	}
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.disk_bytes <= 32768 && st.retention_deleted > 0);
	CHECK(stor_log_take_events(log, &ev) == 1);
	/* Deleted before being forwarded: everything beyond 500 that went. */
	CHECK(ev.retention_unforwarded == st.retention_unforwarded);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 1, 0, &v) == 0);
	CHECK(v.next == 1001 && v.first == st.retention_deleted + 1);
	CHECK(st.retention_unforwarded == (v.first > 501 ? v.first - 501 : 0));
	/* At open, with the uplink's persisted cursor: a smaller budget
	   deletes at once, and nothing it deletes counts as unforwarded. */
	cfg.retention_bytes = 16384;
	cfg.forwarded_seq = 1001;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.retention_deleted > 0 && st.retention_unforwarded == 0 && st.disk_bytes <= 16384);
	log = stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
}

static void test_retention_age(void)
{
	char *dir = tu_tmpdir("age");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_stats st;
	struct tu_verify v;
	stor_log_t *log;
	uint8_t pl[100] = { 0 };
	int64_t now = (int64_t)time(NULL) * 1000000000LL;

	cfg.segment_bytes = 4096;
	cfg.retention_age_s = 3600;
	CHECK(stor_log_open(&cfg, &log) == 0);
	/* Two days old, then fresh: only the old segments may go. */
	for (int i = 0; i < 200; i++) {
		int64_t t = i < 100 ? now - 2 * 86400 * 1000000000LL : now;
		struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .count = 1,
					.t_first_ns = t, .t_last_ns = t, .payload = pl, .len = 100 };

		CHECK(stor_log_append(log, &rec) == 0);
	}
	CHECK(stor_log_stats(log, &st) == 0);
	CHECK(st.retention_deleted > 0 && st.retention_deleted <= 100);
	CHECK(st.retention_unforwarded == st.retention_deleted);
	log = stor_log_free(log);
	/* At open too: the last old segment goes once a newer one is closed. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	log = stor_log_free(log);
	{
		stor_reader_t *r;
		struct stor_rec rec;

		CHECK(stor_reader_open(dir, &r) == 0);
		CHECK(stor_reader_next(r, &rec) == 1);
		v.first = rec.first_seq;
		stor_reader_free(r);
	}
	/* Every old segment went, the segment holding fresh data stayed. */
	CHECK(v.first > 50 && v.first <= 101);
	tu_rm_rf(dir);
	free(dir);
}

/* A last segment whose header is garbage (not blank) is set aside, never
   overwritten. */
static void test_damaged_header(void)
{
	char *dir = tu_tmpdir("dmghdr");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_events ev;
	struct tu_verify v;
	stor_log_t *log;
	uint64_t *seqs, last;
	size_t n;
	char name[STOR_SEG_NAME_LEN], bad[STOR_SEG_NAME_LEN + 16], p[600];

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 200; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	{
		int dfd = open(dir, O_RDONLY | O_DIRECTORY);

		CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 3);
		close(dfd);
	}
	last = seqs[n - 1];
	free(seqs);
	stor_seg_name(name, last);
	patch(dir, name, 10, "junkjunk", 8);
	patch(dir, name, 138, "junkjunk", 8);
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == last);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.recovered_damage == 1);
	log = stor_log_free(log);
	snprintf(bad, sizeof(bad), "%s.damaged", name);
	snprintf(p, sizeof(p), "%s/%s", dir, bad);
	CHECK(access(p, F_OK) == 0);
	CHECK(tu_verify_log(dir, 1, last, &v) == 0 && v.next == last);
	tu_rm_rf(dir);
	free(dir);
}

/* What stands in place of a middle (or the newest) segment file. */
enum swap_kind {
	SWAP_DIR, SWAP_FIFO, SWAP_SYMLINK, SWAP_EMPTY, SWAP_MISNAMED, SWAP_DELETED,
	SWAP_UNREADABLE, SWAP_EIO, SWAP_MAX
};

static const char *const swap_names[] = {
	"a directory in its place", "a FIFO in its place", "a symbolic link in its place",
	"zero-length", "the header of another segment", "deleted", "no read permission",
	"a read error inside it",
};

/* A read error (EIO) from offset eio.from of one file, through the reader's
   ops: a bad sector in a closed segment. */
static struct {
	char name[STOR_SEG_NAME_LEN];
	int fd;
	uint64_t from;
} eio = { .fd = -1 };

static int eio_open(void *ctx, int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = stor_dev_posix_ops()->open(ctx, dirfd, name, flags, mode);

	if (fd >= 0 && !strcmp(name, eio.name))
		eio.fd = fd;
	return fd;
}

static ssize_t eio_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
	if (fd == eio.fd && (uint64_t)off + len > eio.from)
		return -EIO;
	return stor_dev_posix_ops()->pread(ctx, fd, buf, len, off);
}

static int eio_close(void *ctx, int fd)
{
	if (fd == eio.fd)
		eio.fd = -1;
	return stor_dev_posix_ops()->close(ctx, fd);
}

static const struct stor_dev_ops eio_ops = { .open = eio_open, .pread = eio_pread,
					     .close = eio_close };

struct read_result {
	uint64_t records, faults, lost;  /* lost: records in the faults' ranges */
	struct stor_fault fault;         /* the last one */
	bool lost_to_end;
};

/* Read everything from seq `from` (0: from the start); records must be the
   written ones, in order. */
static void read_faults(const char *dir, const struct stor_dev_ops *ops, uint64_t from,
			struct read_result *ret)
{
	struct read_result res = { 0 };
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t next = 0;
	int n;

	CHECK(stor_reader_open_ops(dir, ops, &r) == 0);
	CHECK(stor_reader_fault(r, &res.fault) == -ENOENT);
	if (from)
		CHECK(stor_reader_seek_seq(r, from) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		if (n == -EBADMSG) {
			CHECK(stor_reader_fault(r, &res.fault) == 0);
			res.faults++;
			if (res.fault.lost_end)
				res.lost += res.fault.lost_end - res.fault.lost_first;
			else
				res.lost_to_end = true;
			continue;
		}
		CHECK(n == 1 && tu_rec_ok(&rec) && rec.first_seq >= next && rec.first_seq >= from);
		next = rec.first_seq + 1;
		res.records++;
	}
	stor_reader_free(r);
	*ret = res;
}

/* Put kind in place of segment `seq`; `donor` is another segment's file. */
static void swap_segment(const char *dir, uint64_t seq, uint64_t donor, enum swap_kind kind)
{
	char name[STOR_SEG_NAME_LEN], p[600], q[600];

	stor_seg_name(name, seq);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (kind == SWAP_UNREADABLE || kind == SWAP_EIO) {
		CHECK(chmod(p, 0) == 0 || kind == SWAP_EIO);
		snprintf(eio.name, sizeof(eio.name), "%s", name);
		return;
	}
	if (kind == SWAP_MISNAMED) {
		uint8_t *buf = malloc(1 << 16);
		ssize_t k;
		int in, out;

		stor_seg_name(name, donor);
		snprintf(q, sizeof(q), "%s/%s", dir, name);
		in = open(q, O_RDONLY);
		out = open(p, O_WRONLY | O_TRUNC);
		CHECK(buf && in >= 0 && out >= 0);
		while ((k = read(in, buf, 1 << 16)) > 0)
			CHECK(write(out, buf, (size_t)k) == k);
		close(in);
		close(out);
		free(buf);
		return;
	}
	CHECK(unlink(p) == 0);
	if (kind == SWAP_DIR)
		CHECK(mkdir(p, 0755) == 0);
	else if (kind == SWAP_FIFO)
		CHECK(mkfifo(p, 0644) == 0);
	else if (kind == SWAP_SYMLINK)
		CHECK(symlink("/dev/zero", p) == 0); /* endless if followed */
	else if (kind == SWAP_EMPTY)
		CHECK(close(open(p, O_WRONLY | O_CREAT, 0644)) == 0);
}

/* Without CAP_DAC_OVERRIDE, so a chmod 0 file is really unreadable: the
   reading runs in a child as nobody. */
static void read_faults_unprivileged(const char *dir, struct read_result *ret)
{
	struct read_result *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
					  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int st;
	pid_t pid;

	CHECK(shared != MAP_FAILED && chmod(dir, 0755) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
				       setresuid(65534, 65534, 65534) < 0))
			_exit(3);
		read_faults(dir, NULL, 0, shared);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	*ret = *shared;
	munmap(shared, sizeof(*shared));
}

/*
 * Whatever stands where a segment should be, the reader never blocks,
 * reports it once with the records it cost, and reads every other segment.
 */
static void test_reader_skips(enum swap_kind kind, bool newest)
{
	char *dir = tu_tmpdir("skip");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct read_result res;
	uint64_t *seqs, total, victim, end;
	const struct stor_dev_ops *ops = NULL;
	stor_log_t *log;
	size_t n;
	int dfd;

	if (kind == SWAP_EIO)
		cfg.segment_bytes = 1 << 20; /* the error past the reader's first window */
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < (kind == SWAP_EIO ? 25000 : 400); i++)
		CHECK(tu_append(log) == 0);
	total = stor_log_next_seq(log) - 1;
	log = stor_log_free(log);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 3);
	close(dfd);
	victim = newest ? seqs[n - 1] : seqs[1];
	end = newest ? 0 : seqs[2];
	swap_segment(dir, victim, seqs[0], kind);
	eio.from = 600 << 10;
	if (kind == SWAP_EIO)
		ops = &eio_ops;
	if (kind == SWAP_UNREADABLE)
		read_faults_unprivileged(dir, &res);
	else
		read_faults(dir, ops, 0, &res);
	printf("reader: %s segment %" PRIu64 " (%s): %" PRIu64 " fault, %" PRIu64 " of %" PRIu64
	       " records read, %s%" PRIu64 " reported lost\n", newest ? "newest" : "middle", victim,
	       swap_names[kind], res.faults, res.records, total, res.lost_to_end ? "from " : "",
	       res.lost_to_end ? res.fault.lost_first : res.lost);
	CHECK(res.faults == 1);
	CHECK(res.fault.kind == (kind == SWAP_DELETED ? STOR_FAULT_MISSING :
				 kind == SWAP_MISNAMED ? STOR_FAULT_MISNAMED : STOR_FAULT_SEGMENT));
	CHECK(res.fault.segment == (kind == SWAP_DELETED ? seqs[2] : victim));
	switch (kind) {
	case SWAP_DIR: CHECK(res.fault.err == -EISDIR && res.fault.type == S_IFDIR); break;
	case SWAP_FIFO: CHECK(res.fault.err == -EINVAL && res.fault.type == S_IFIFO); break;
	case SWAP_SYMLINK: CHECK(res.fault.err == -ELOOP && res.fault.type == S_IFLNK); break;
	case SWAP_EMPTY: CHECK(res.fault.err == -ENODATA); break;
	case SWAP_UNREADABLE: CHECK(res.fault.err == -EACCES); break;
	case SWAP_EIO: CHECK(res.fault.err == -EIO && res.fault.offset > 0); break;
	default: CHECK(res.fault.err == -EBADMSG || res.fault.err == -ENOENT); break;
	}
	/* Exactly the victim's records are missing, and they are the range said. */
	if (kind == SWAP_EIO) {
		CHECK(res.fault.lost_first > victim && res.fault.lost_end == end);
		CHECK(res.records + res.lost == total);
	} else if (newest) {
		CHECK(res.lost_to_end && res.fault.lost_first == victim && res.records == victim - 1);
	} else {
		CHECK(res.fault.lost_first == victim && res.fault.lost_end == end);
		CHECK(res.records == total - (end - victim));
	}
	/* A seek into the lost range reports only what is at or after it; one
	   past it reports nothing. */
	if (!newest && kind != SWAP_UNREADABLE) {
		read_faults(dir, ops, victim + 3, &res);
		CHECK(res.faults == 1 && res.fault.lost_first == (kind == SWAP_EIO ? res.fault.lost_first :
								   victim + 3));
		CHECK(res.fault.lost_end == end);
		read_faults(dir, ops, end, &res);
		CHECK(res.faults == 0 && res.records == total - end + 1);
	}
	if (newest && kind != SWAP_UNREADABLE) {
		/* Seeking into it: lost from the target to the end. */
		read_faults(dir, ops, victim + 3, &res);
		CHECK(res.faults == 1 && res.records == 0 && res.lost_to_end);
		CHECK(res.fault.lost_first == victim + 3 && res.fault.lost_end == 0);
	}
	eio.name[0] = 0;
	free(seqs);
	tu_rm_rf(dir);
	free(dir);
}

static uint8_t *file_load(const char *p, size_t *ret_len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(p, O_RDONLY);

	CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0);
	buf = malloc((size_t)st.st_size);
	CHECK(buf && read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static void file_store(const char *p, const uint8_t *buf, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);

	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len && close(fd) == 0);
}

/*
 * A segment forged in between two others (issue 24): the tail of segment 2
 * from its third frame, under a header naming that frame's seq (both
 * agree, so nothing else catches it).  The reader returns every seq once,
 * and says each repeated frame, naming the segment read before.
 */
static void test_reader_repeated(void)
{
	char *dir = tu_tmpdir("repeated");
	struct stor_log_cfg cfg = cfg_for(dir);
	char name[STOR_SEG_NAME_LEN], p[600];
	struct stor_seg_hdr h;
	struct read_result res;
	struct stor_frame f;
	uint64_t *seqs, total, off, x = 0, frames = 0;
	uint8_t *buf;
	size_t n, len;
	stor_log_t *log;
	int dfd;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 400; i++)
		CHECK(tu_append(log) == 0);
	total = stor_log_next_seq(log) - 1;
	log = stor_log_free(log);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 3);
	close(dfd);
	stor_seg_name(name, seqs[1]);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	buf = file_load(p, &len);
	CHECK(len > STOR_HDR_BYTES && stor_seg_hdr_decode(buf, &h) == 0);
	/* the third frame: where the copy starts */
	for (off = h.hdr_bytes; frames < 2; frames++) {
		CHECK(stor_frame_peek(buf + off, &f) == 0);
		off += stor_frame_size(f.len);
	}
	CHECK(stor_frame_peek(buf + off, &f) == 0 && !(f.flags & STOR_FRAME_SEAL));
	x = f.first_seq;
	h.first_seq = x;
	off -= STOR_HDR_BYTES;
	stor_seg_hdr_encode(&h, buf + off);
	stor_seg_name(name, x);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	file_store(p, buf + off, len - off);
	read_faults(dir, NULL, 0, &res);
	printf("reader: a segment copied in at seq %" PRIu64 " (the tail of segment %" PRIu64 "): %" PRIu64
	       " repeated frames said, %" PRIu64 " of %" PRIu64 " records read, each once\n", x, seqs[1], res.faults,
	       res.records, total);
	/* each record once (read_faults checks the order), all of them */
	CHECK(res.records == total && res.faults >= 1);
	CHECK(res.fault.kind == STOR_FAULT_REPEATED && res.fault.segment == x && res.fault.other_segment == seqs[1] &&
	      res.fault.lost_first >= x && res.fault.repeat_end <= seqs[2] && res.fault.err == -EEXIST);
	free(buf);
	free(seqs);
	tu_rm_rf(dir);
	free(dir);
}

/* One header copy damaged: said, nothing lost, every record read. */
static void test_header_copy_fault(void)
{
	char *dir = tu_tmpdir_in("hdrcopy", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	struct read_result res;
	char name[STOR_SEG_NAME_LEN];
	uint64_t *seqs;
	stor_log_t *log;
	size_t n;
	int dfd;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 200; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 3);
	close(dfd);
	stor_seg_name(name, seqs[1]);
	patch(dir, name, 20, "\xff", 1); /* the first copy's first_seq */
	read_faults(dir, NULL, 0, &res);
	CHECK(res.faults == 1 && res.fault.kind == STOR_FAULT_HEADER_COPY && res.fault.offset == 0);
	CHECK(res.fault.segment == seqs[1] && res.fault.lost_first == seqs[1] && res.fault.lost_end == seqs[1]);
	CHECK(res.records == 200 && res.lost == 0 && !res.lost_to_end);
	free(seqs);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * The writer finds something that is not a segment file under a segment's
 * name (a directory, a FIFO, a symbolic link): the open neither fails nor
 * blocks, the thing is set aside as <name>.damaged and counted, retention
 * is not stuck on it, and the log goes on from the last real segment.
 */
static void test_writer_sets_aside(enum swap_kind kind, bool newest)
{
	char *dir = tu_tmpdir_in("aside", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_events ev;
	struct stor_stats st;
	struct tu_verify v = { 0 };
	uint64_t *seqs, victim, next;
	char name[STOR_SEG_NAME_LEN], p[600];
	stor_log_t *log;
	size_t n;
	int dfd;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 400; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 4);
	close(dfd);
	victim = newest ? seqs[n - 1] : seqs[0];
	next = newest ? victim : 401;
	swap_segment(dir, victim, 0, kind);
	/* A byte budget that must delete the oldest segments at open. */
	cfg.retention_bytes = 4 * cfg.segment_bytes;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_next_seq(log) == next);
	for (int i = 0; i < 50; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_log_stats(log, &st) == 0 && st.disk_bytes <= cfg.retention_bytes);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.recovered_damage == 1);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 0, next + 50, &v) == 0 && v.next == next + 50);
	stor_seg_name(name, victim);
	snprintf(p, sizeof(p), "%s/%s.damaged", dir, name);
	CHECK(access(p, F_OK) == 0 || faccessat(AT_FDCWD, p, F_OK, AT_SYMLINK_NOFOLLOW) == 0);
	free(seqs);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * recycle.spare replaced by a directory (every retire would fail: a rename
 * onto a directory, and retention would stop for good) or by a symbolic
 * link to a file outside the log (which a recycle would overwrite).
 */
static void test_spare_not_a_file(bool symlink_to_outside)
{
	char *dir = tu_tmpdir_in("spare", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	struct stor_events ev;
	struct stor_stats st;
	char spare[600], outside[600], aside[600];
	stor_log_t *log;
	struct stat sb;

	cfg.segment_bytes = 4096;
	cfg.retention_bytes = 16384;
	snprintf(spare, sizeof(spare), "%s/recycle.spare", dir);
	snprintf(aside, sizeof(aside), "%s/recycle.spare.damaged", dir);
	snprintf(outside, sizeof(outside), "%s.outside", dir);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 200; i++)
		CHECK(tu_append(log) == 0);
	log = stor_log_free(log);
	CHECK(lstat(spare, &sb) < 0 || (S_ISREG(sb.st_mode) && unlink(spare) == 0));
	if (symlink_to_outside) {
		int fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		CHECK(fd >= 0 && write(fd, "keep me", 7) == 7 && close(fd) == 0);
		CHECK(symlink(outside, spare) == 0);
	} else {
		CHECK(mkdir(spare, 0755) == 0);
	}
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 400; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_stats(log, &st) == 0);
	if (symlink_to_outside) {
		char buf[16] = { 0 };
		int fd = open(outside, O_RDONLY);

		/* Never written through the link. */
		CHECK(fd >= 0 && read(fd, buf, sizeof(buf)) == 7 && !strcmp(buf, "keep me"));
		close(fd);
		unlink(outside);
	}
	/* Retention kept the budget the whole time. */
	CHECK(st.disk_bytes <= cfg.retention_bytes && st.retention_deleted > 300);
	CHECK(stor_log_take_events(log, &ev) == 1 && ev.recovered_damage == 1);
	log = stor_log_free(log);
	CHECK(lstat(aside, &sb) == 0 && (symlink_to_outside ? S_ISLNK(sb.st_mode) : S_ISDIR(sb.st_mode)));
	CHECK(lstat(spare, &sb) < 0 || S_ISREG(sb.st_mode)); /* a real spare, if any */
	CHECK(tu_verify_log(dir, 0, 601, NULL) == 0);
	tu_rm_rf(dir);
	free(dir);
}

/* replay's refusal to add to a log without --append asks this */
static void test_holds_log(void)
{
	char *dir = tu_tmpdir("holds"), path[512];
	int fd;

	assert(!stor_dir_holds_log(dir));
	assert(!stor_dir_holds_log("/nonexistent-railmon-dir"));
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	assert((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0 && close(fd) == 0);
	assert(!stor_dir_holds_log(dir));
	snprintf(path, sizeof(path), "%s/00000000000000000001.seg", dir);
	assert((fd = open(path, O_CREAT | O_WRONLY, 0600)) >= 0 && close(fd) == 0);
	assert(stor_dir_holds_log(dir));
	tu_rm_rf(dir);
	free(dir);
}

/* The filesystem check: bad arguments, the refusals and warnings. */
static void test_space(void)
{
	char *dir = tu_tmpdir("space"), sub[600];
	struct stor_space sp, small = { .fs_bytes = 8u << 20, .free_bytes = 6u << 20, .log_bytes = 1u << 20 };

	CHECK(stor_space_query(NULL, &sp) == -EINVAL);
	CHECK(stor_space_query(dir, NULL) == -EINVAL);
	CHECK(stor_space_query("", &sp) == -EINVAL);
	CHECK(stor_space_check(NULL, 0, 0) == -EINVAL);
	/* A log directory that does not exist yet: its parent's filesystem. */
	snprintf(sub, sizeof(sub), "%s/not/yet/", dir);
	CHECK(stor_space_query(sub, &sp) == 0 && sp.fs_bytes > 0 && sp.log_bytes == 0);
	CHECK(stor_space_query("relative-not-there", &sp) == 0 && sp.fs_bytes > 0);
	CHECK(stor_space_check(&small, 0, 0) == -EFBIG);         /* 16 MiB default */
	CHECK(stor_space_check(&small, 5u << 20, 0) == -EFBIG); /* not twice */
	CHECK(stor_space_check(&small, 4u << 20, 0) == 0);
	CHECK(stor_space_check(&small, 1u << 20, 9u << 20) == -E2BIG);
	CHECK(stor_space_check(&small, 1u << 20, 7u << 20) == 0);
	CHECK(stor_space_check(&small, 1u << 20, 8u << 20) == STOR_SPACE_LOW_RETENTION);
	small.free_bytes = 100 << 10;
	small.log_bytes = 0;
	CHECK(stor_space_check(&small, 1u << 20, 2u << 20) ==
	      (STOR_SPACE_LOW_SEGMENT | STOR_SPACE_LOW_RETENTION));
	/* The log's own files count as space it can use. */
	{
		struct stor_log_cfg cfg = cfg_for(dir);
		stor_log_t *log;

		CHECK(stor_log_open(&cfg, &log) == 0);
		for (int i = 0; i < 300; i++)
			CHECK(tu_append(log) == 0);
		log = stor_log_free(log);
		CHECK(stor_space_query(dir, &sp) == 0 && sp.log_bytes >= 300 * 48);
	}
	tu_rm_rf(dir);
	free(dir);
}

/* Retired segments are reused in place; their old frames never show. */
static void test_recycle(void)
{
	char *dir = tu_tmpdir("recycle");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct tu_verify v;
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	char spare[512];
	int n, seen = 0;

	cfg.segment_bytes = 8192;
	cfg.retention_bytes = 40000;
	snprintf(spare, sizeof(spare), "%s/recycle.spare", dir);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 2000; i++) {
		CHECK(tu_append(log) == 0);
		CHECK(stor_log_set_forwarded(log, stor_log_next_seq(log)) == 0);
	}
	CHECK(access(spare, F_OK) == 0);
	/* A live reader follows the active (recycled) segment: stale frames
	   past the written part are neither records nor damage. */
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		CHECK(n == 1 && tu_rec_ok(&rec));
		seen++;
	}
	CHECK(rec.first_seq == 2000 && seen > 100);
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == 2001);
	stor_reader_free(r);
	log = stor_log_free(log);
	CHECK(tu_verify_log(dir, 0, 2011, &v) == 0 && v.damaged == 0 && v.next == 2011);
	/* Reopen: the spare is found again and reused. */
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(access(spare, F_OK) < 0);
	log = stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
}

/* Recovery reads one segment: a full, unsealed 16 MiB one takes < 2 s. */
static void test_recovery_time(void)
{
	char *dir = tu_tmpdir("rectime");
	struct stor_log_cfg cfg = cfg_for(dir);
	struct fdev dev;
	struct timespec a, b;
	stor_log_t *log;
	double secs;

	cfg.segment_bytes = 16u << 20;
	CHECK(fdev_init(&dev, dir) == 0);
	cfg.ops = &dev.ops;
	CHECK(stor_log_open(&cfg, &log) == 0);
	while (stor_log_next_seq(log) < 110000) /* about 15.8 MB: one segment */
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	dev.mode = FDEV_CRASH; /* the close never happens: no seal */
	dev.fail_at = dev.ops_seen + 1;
	log = stor_log_free(log);
	fdev_done(&dev);
	cfg.ops = NULL;
	clock_gettime(CLOCK_MONOTONIC, &a);
	CHECK(stor_log_open(&cfg, &log) == 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	CHECK(stor_log_next_seq(log) == 110000);
	log = stor_log_free(log);
	printf("recovery of an unsealed 16 MiB segment: %.1f ms\n", secs * 1e3);
	CHECK(secs < 2.0);
	tu_rm_rf(dir);
	free(dir);
}

struct follow {
	const char *dir;
	uint64_t total;
	_Atomic uint64_t read_up_to; /* the reader's next seq */
};

static void *follow_writer(void *arg)
{
	struct follow *f = arg;
	struct stor_log_cfg cfg = cfg_for(f->dir);
	stor_log_t *log;

	cfg.segment_bytes = 65536;
	cfg.retention_bytes = 1 << 20;
	cfg.sync_window_ms = 2;
	CHECK(stor_log_open(&cfg, &log) == 0);
	while (stor_log_next_seq(log) <= f->total) {
		uint64_t seq = stor_log_next_seq(log);

		/* Flow control, so retention never deletes what was not read. */
		while (seq > atomic_load(&f->read_up_to) + 3000)
			sched_yield();
		CHECK(tu_append(log) == 0 && stor_log_tick(log) == 0);
		CHECK(stor_log_set_forwarded(log, atomic_load(&f->read_up_to)) == 0);
	}
	stor_log_free(log);
	return NULL;
}

/* A reader follows a live writer (rolls, recycling): every record, in
   order, and never a false damage report from a write in progress. */
static void test_live_follow(void)
{
	char *dir = tu_tmpdir("follow");
	struct follow f = { .dir = dir, .total = 60000, .read_up_to = 1 };
	stor_reader_t *r;
	struct stor_rec rec;
	pthread_t th;
	uint64_t empty = 0;
	int n;

	CHECK(pthread_create(&th, NULL, follow_writer, &f) == 0);
	CHECK(stor_reader_open(dir, &r) == 0);
	while (atomic_load(&f.read_up_to) <= f.total) {
		n = stor_reader_next(r, &rec);
		if (n == 0) {
			empty++;
			sched_yield();
			continue;
		}
		if (n != 1) {
			uint64_t seg, off;

			stor_reader_error(r, &seg, &off);
			fprintf(stderr, "live reader: %d at seg %" PRIu64 " off %" PRIu64 "\n", n,
				seg, off);
			abort();
		}
		CHECK(rec.first_seq == atomic_load(&f.read_up_to) && tu_rec_ok(&rec));
		atomic_store(&f.read_up_to, rec.first_seq + 1);
	}
	CHECK(pthread_join(th, NULL) == 0);
	stor_reader_free(r);
	CHECK(empty > 0); /* it did wait for the writer */
	tu_rm_rf(dir);
	free(dir);
}

/* Read r to its end: every record in order from *next on; returns 0 (the
   end) and leaves *next after the last record. */
static int read_to_end(stor_reader_t *r, uint64_t *next)
{
	struct stor_rec rec;
	int n;

	while ((n = stor_reader_next(r, &rec)) == 1) {
		if (rec.first_seq != *next || !tu_rec_ok(&rec)) {
			fprintf(stderr, "live read: seq %" PRIu64 ", expected %" PRIu64 "\n", rec.first_seq, *next);
			return -1;
		}
		*next = rec.first_seq + rec.count;
	}
	return n;
}

/* The salt of a segment file (to write frames a reader can prove). */
static uint64_t seg_salt(const char *dir, uint64_t seq)
{
	char name[STOR_SEG_NAME_LEN], p[512];
	struct stor_seg_hdr h;
	int fd;

	stor_seg_name(name, seq);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_RDONLY);
	CHECK(fd >= 0 && stor_seg_hdr_read(stor_dev_posix_ops(), fd, &h) >= 0);
	close(fd);
	return h.salt;
}

/*
 * The end of a live log, as stor_reader_tail() judges it once next() said
 * 0 (what export, summary, stat and verify report as damage): the writer
 * may have written there meanwhile (CI: `export` of a log `run` was
 * writing exited 1, "bytes other than zeros"), a pwrite may be half
 * copied, a recycled segment holds its earlier life's frames.  None of
 * them is damage; a damaged frame with provable frames after it still is.
 */
static void test_live_tail(void)
{
	char *dir = tu_tmpdir("livetail");
	struct stor_log_cfg cfg = cfg_for(dir);
	char name[STOR_SEG_NAME_LEN];
	uint8_t frame[STOR_FRAME_HDR_BYTES + 64], payload[64];
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_tail t;
	struct stor_frame f;
	uint64_t next = 1, end, last;
	char spare[512];

	cfg.segment_bytes = 1 << 20;
	stor_seg_name(name, 1);
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 50; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(read_to_end(r, &next) == 0 && next == 51);
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage && t.segment == 1);
	end = t.offset;
	/* the writer appends after next() returned 0: more log, no damage */
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage && t.offset == end && t.size == 1 << 20);
	CHECK(read_to_end(r, &next) == 0 && next == 61);
	/* a pwrite being copied: the next frame's header, its payload not yet
	   (its CRC fails), nothing provable after it */
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage);
	end = t.offset;
	memset(payload, 0xa5, sizeof(payload));
	f = (struct stor_frame){ .len = sizeof(payload), .first_seq = 61, .count = 1, .t_first_ns = 5,
				 .t_last_ns = 5 };
	stor_frame_encode(seg_salt(dir, 1), &f, payload, frame);
	patch(dir, name, end, frame, STOR_FRAME_HDR_BYTES + 8);
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage);
	CHECK(read_to_end(r, &next) == 0 && next == 61); /* and no record of it */
	/* the copy done (the writer writes the same place) */
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	CHECK(read_to_end(r, &next) == 0 && next == 71);
	/* damage: the next frame's length changed, frames it hides after it
	   (the reader waits at it in an open segment: said by the tail) */
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage);
	end = t.offset;
	for (int i = 0; i < 10; i++)
		CHECK(tu_append(log) == 0);
	CHECK(stor_log_sync(log) == 0);
	patch(dir, name, end, "\x07", 1);
	CHECK(read_to_end(r, &next) == 0 && next == 71);
	CHECK(stor_reader_tail(r, &t) == 1 && t.garbage && t.garbage_offset == end && t.offset == end);
	stor_reader_free(r);
	log = stor_log_free(log);
	tu_rm_rf(dir);

	/* a recycled active segment: its earlier life's frames after the end */
	cfg.segment_bytes = 8192;
	cfg.retention_bytes = 40000;
	CHECK(stor_log_open(&cfg, &log) == 0);
	snprintf(spare, sizeof(spare), "%s/recycle.spare", dir);
	/* until a roll took the spare: the active segment is a recycled one
	   (retention makes the next spare at the roll after) */
	for (int i = 0; i < 2000 || access(spare, F_OK) == 0; i++) {
		CHECK(tu_append(log) == 0 && i < 4000);
		CHECK(stor_log_set_forwarded(log, stor_log_next_seq(log)) == 0);
	}
	CHECK(tu_append(log) == 0 && stor_log_sync(log) == 0);
	last = stor_log_next_seq(log);
	CHECK(stor_reader_open(dir, &r) == 0);
	next = 0;
	{
		struct stor_rec rec;
		int n;

		/* from the oldest record retention kept */
		CHECK(stor_reader_next(r, &rec) == 1 && tu_rec_ok(&rec));
		next = rec.first_seq + 1;
		CHECK((n = read_to_end(r, &next)) == 0 && next == last);
	}
	CHECK(stor_reader_tail(r, &t) == 1 && !t.garbage);
	{
		/* (the case is there: bytes other than zeros after the end) */
		char p[512];
		uint8_t b[4096];
		ssize_t k;
		bool other = false;
		int fd;

		stor_seg_name(name, t.segment);
		snprintf(p, sizeof(p), "%s/%s", dir, name);
		fd = open(p, O_RDONLY);
		CHECK(fd >= 0 && (k = pread(fd, b, sizeof(b), (off_t)t.offset)) > 0);
		close(fd);
		for (ssize_t i = 0; i < k; i++)
			other |= b[i] != 0;
		CHECK(other);
	}
	stor_reader_free(r);
	log = stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	printf("live tail: frames written after the end, a frame half copied, a recycled segment's old frames: "
	       "no damage; a damaged frame hiding good ones: damage at its offset\n");
}

struct live_reads {
	const char *dir;
	_Atomic uint64_t confirmed; /* the writer's confirmed seq */
	_Atomic int reads;          /* whole reads started */
	_Atomic bool reading;       /* one is going on: write */
	_Atomic bool done;
};

static void *live_reads_writer(void *arg)
{
	struct live_reads *w = arg;
	struct stor_log_cfg cfg = cfg_for(w->dir);
	stor_log_t *log;

	cfg.segment_bytes = 16384; /* rolls every ~100 records */
	cfg.sync_window_ms = 0;    /* each record written and synced at once */
	CHECK(stor_log_open(&cfg, &log) == 0);
	while (!atomic_load(&w->done)) {
		/* while a read goes on, up to its end (where the old reader
		   took what was written after it for damage); at most 60
		   records a read, so the log stays small */
		if (!atomic_load(&w->reading) || stor_log_next_seq(log) > 60 * (uint64_t)atomic_load(&w->reads)) {
			sched_yield();
			continue;
		}
		CHECK(tu_append(log) == 0);
		atomic_store(&w->confirmed, stor_log_confirmed_seq(log));
	}
	stor_log_free(log);
	return NULL;
}

/*
 * Whole reads of a log beside its writer (export --data of a log `run`
 * writes), many times: each from seq 1 to at least what was confirmed
 * when it started, every record once, no fault, no damage at the end.
 * The writer writes while a read goes on; each read starts once it has
 * confirmed 20 more records than at the start of the one before (an
 * event, not a time), so every read meets a log that moves and the reads
 * span about 20 segment rolls.
 */
static void test_live_reads(void)
{
	char *dir = tu_tmpdir("livereads");
	struct live_reads w = { .dir = dir };
	const int reads = 100;
	uint64_t before = 0, grew = 0;
	pthread_t th;

	CHECK(pthread_create(&th, NULL, live_reads_writer, &w) == 0);
	for (int i = 0; i < reads; i++) {
		uint64_t confirmed, next = 1;
		stor_reader_t *r;
		struct stor_tail t;
		int n;

		atomic_store(&w.reads, i + 1);
		atomic_store(&w.reading, true);
		while ((confirmed = atomic_load(&w.confirmed)) < before + 20)
			sched_yield();
		before = confirmed;
		CHECK(stor_reader_open(dir, &r) == 0);
		n = read_to_end(r, &next);
		if (n != 0) {
			struct stor_fault f = { 0 };

			stor_reader_fault(r, &f);
			fprintf(stderr, "live read %d: %d, fault %d seg %" PRIu64 " off %" PRIu64 "\n", i, n, f.kind,
				f.segment, f.offset);
			abort();
		}
		CHECK(next >= confirmed);
		n = stor_reader_tail(r, &t);
		if (n < 0 || (n == 1 && t.garbage)) {
			fprintf(stderr, "live read %d: tail %d, seg %" PRIu64 " end %" PRIu64 " other bytes at %" PRIu64
				" size %" PRIu64 "\n", i, n, t.segment, t.offset, t.garbage_offset, t.size);
			abort();
		}
		grew += atomic_load(&w.confirmed) > next;
		atomic_store(&w.reading, false);
		stor_reader_free(r);
	}
	atomic_store(&w.done, true);
	CHECK(pthread_join(th, NULL) == 0);
	printf("live reads: %d whole reads beside the writer (%" PRIu64 " records), %" PRIu64 " ended while it "
	       "had confirmed more: no fault, no damage at the end\n", reads, atomic_load(&w.confirmed), grew);
	tu_rm_rf(dir);
	free(dir);
}

/* CRC-32C: the standard check value, and software == SSE4.2 on every
   length and alignment, in one piece or continued. */
static void test_crc32c(void)
{
	uint8_t buf[300];

	CHECK(stor_crc32c(0, "123456789", 9) == 0xe3069283u);
	CHECK(stor_crc32c_sw(0, "123456789", 9) == 0xe3069283u);
	CHECK(stor_crc32c_hw(0, "123456789", 9) == 0xe3069283u);
	CHECK(stor_crc32c(0, "", 0) == 0);
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t off = 0; off < 8; off++) {
		for (size_t len = 0; off + len <= sizeof(buf); len += 1 + len / 16) {
			uint32_t sw = stor_crc32c_sw(0, buf + off, len);

			CHECK(stor_crc32c_hw(0, buf + off, len) == sw);
			CHECK(stor_crc32c(stor_crc32c(0, buf + off, len / 3), buf + off + len / 3,
					  len - len / 3) == sw);
		}
	}
}

int main(void)
{
	test_crc32c();
	test_bad_args();
	test_roundtrip();
	test_sync_window();
	test_seek();
	test_seek_exact();
	test_torn_tail();
	test_mid_damage();
	test_stale_generation();
	test_retention_bytes();
	test_retention_age();
	test_damaged_header();
	for (int k = 0; k < SWAP_MAX; k++) {
		test_reader_skips(k, false);
		if (k != SWAP_DELETED && k != SWAP_EIO && k != SWAP_EMPTY && k != SWAP_MISNAMED)
			test_reader_skips(k, true);
	}
	test_header_copy_fault();
	test_reader_repeated();
	test_spare_not_a_file(false);
	test_spare_not_a_file(true);
	test_space();
	test_holds_log();
	for (int k = SWAP_DIR; k <= SWAP_SYMLINK; k++) {
		test_writer_sets_aside(k, false);
		test_writer_sets_aside(k, true);
	}
	test_recycle();
	test_recovery_time();
	test_live_follow();
	test_live_tail();
	test_live_reads();
	printf("test-storage: all passed\n");
	return 0;
}
