/* SPDX-License-Identifier: MIT */
/*
 * test-storage-seek.c - where stor_reader_seek_seq() starts reading, not
 * only what it returns.  A seek to a segment's first seq must open that
 * segment and no other: starting one segment early returns the same
 * records (the earlier segment's are all below the target and skipped),
 * so only the segment files the reader opens tell, and a fault in the
 * earlier segment.  The reader runs on counting ops (posix underneath)
 * that note every segment file opened.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stor-test-util.h"

#define MAX_SEGS 256

struct counting {
	const struct stor_dev_ops *posix;
	uint64_t opened[MAX_SEGS]; /* first seqs of the segment files opened, in order */
	int fd[MAX_SEGS];          /* ... their fds */
	uint64_t bytes[MAX_SEGS];  /* ... the bytes read from each */
	size_t nopened;
};

static int c_open(void *ctx, int dirfd, const char *name, int flags, mode_t mode)
{
	struct counting *c = ctx;
	unsigned long long seq;

	int fd = c->posix->open(c->posix->ctx, dirfd, name, flags, mode);

	if (sscanf(name, "%20llu.seg", &seq) == 1 && c->nopened < MAX_SEGS) {
		c->fd[c->nopened] = fd;
		c->bytes[c->nopened] = 0;
		c->opened[c->nopened++] = seq;
	}
	return fd;
}

static ssize_t c_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
	struct counting *c = ctx;
	ssize_t n = c->posix->pread(c->posix->ctx, fd, buf, len, off);

	for (size_t i = c->nopened; i-- > 0;)
		if (c->fd[i] == fd) {
			c->bytes[i] += n > 0 ? (uint64_t)n : 0;
			break;
		}
	return n;
}

static int c_close(void *ctx, int fd)
{
	struct counting *c = ctx;

	return c->posix->close(c->posix->ctx, fd);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The first seqs of the log's segment files, sorted; returns how many. */
static size_t segments(const char *dir, uint64_t *ret, size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL) {
		unsigned long long seq;
		char tail[8];

		if (sscanf(e->d_name, "%20llu%7s", &seq, tail) == 2 && !strcmp(tail, ".seg")) {
			CHECK(n < max);
			ret[n++] = seq;
		}
	}
	closedir(d);
	qsort(ret, n, sizeof(ret[0]), cmp_u64);
	return n;
}

/* A closed log of single records over many small segments. */
static void write_log(const char *dir, uint64_t records, uint64_t segment_bytes)
{
	struct stor_log_cfg cfg = {
		.dir = dir, .vehicle = "TEST-1", .config_hash = 0x1234,
		.boot_id = { 1, 2, 3 }, .segment_bytes = segment_bytes, .sync_window_ms = 1000,
	};
	stor_log_t *log;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (uint64_t i = 0; i < records; i++)
		CHECK(tu_append(log) == 0);
	stor_log_free(log);
}

/*
 * A seek to each segment's first seq (and to the seq before it, the last
 * of the previous segment) opens exactly the segment holding it, and the
 * record read says so.
 */
static void test_seek_segment_starts(const char *dir, const uint64_t *segs, size_t nsegs)
{
	struct stor_dev_ops ops = { .open = c_open, .pread = c_pread, .close = c_close };
	struct counting c = { .posix = stor_dev_posix_ops() };
	stor_reader_t *r;
	struct stor_rec rec;

	ops.ctx = &c;
	CHECK(stor_reader_open_ops(dir, &ops, &r) == 0);
	for (size_t k = 0; k < nsegs; k++) {
		c.nopened = 0;
		CHECK(stor_reader_seek_seq(r, segs[k]) == 0);
		CHECK(stor_reader_next(r, &rec) == 1);
		CHECK(rec.first_seq == segs[k] && tu_rec_ok(&rec), "seek %" PRIu64 ": read %" PRIu64, segs[k],
		      rec.first_seq);
		CHECK(rec.segment == segs[k], "seek %" PRIu64 ": record from segment %" PRIu64, segs[k],
		      rec.segment);
		CHECK(c.nopened == 1 && c.opened[0] == segs[k],
		      "seek to segment %" PRIu64 "'s first seq opened %zu segment(s), the first %" PRIu64,
		      segs[k], c.nopened, c.nopened ? c.opened[0] : 0);
		if (k == 0)
			continue;
		/* The seq just before: the previous segment's last record. */
		c.nopened = 0;
		CHECK(stor_reader_seek_seq(r, segs[k] - 1) == 0);
		CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == segs[k] - 1);
		CHECK(rec.segment == segs[k - 1] && c.nopened == 1 && c.opened[0] == segs[k - 1]);
		/* and on into the next segment, opened once */
		CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == segs[k] && rec.segment == segs[k]);
		CHECK(c.nopened == 2 && c.opened[1] == segs[k]);
	}
	stor_reader_free(r);
}

/*
 * The fault a reader started one segment early would meet: segment k-1
 * with its header destroyed.  A seek to segment k's first seq reads it
 * without a fault (the damage is not in what was asked for).
 */
static void test_seek_past_damage(const char *dir, const uint64_t *segs, size_t nsegs)
{
	size_t k = nsegs / 2;
	char path[4096];
	stor_reader_t *r;
	struct stor_rec rec;
	struct stor_fault fault;
	int fd;
	static const uint8_t junk[64] = { 0xa5 };

	CHECK(k >= 1);
	snprintf(path, sizeof(path), "%s/%020" PRIu64 ".seg", dir, segs[k - 1]);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, junk, sizeof(junk), 0) == (ssize_t)sizeof(junk));
	close(fd);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_seek_seq(r, segs[k]) == 0);
	CHECK(stor_reader_next(r, &rec) == 1, "seek past a damaged segment: a fault from it");
	CHECK(rec.first_seq == segs[k] && rec.segment == segs[k]);
	CHECK(stor_reader_fault(r, &fault) == -ENOENT);
	/* The damage itself is seen by a reader that reads it. */
	CHECK(stor_reader_seek_seq(r, segs[k - 1]) == 0);
	CHECK(stor_reader_next(r, &rec) == -EBADMSG);
	stor_reader_free(r);
}

/*
 * export --from/--to on a log of many segments: a seek to the window's
 * start and a limit at its end read the frames of the segments that can
 * hold it and the newest (not sealed: its times are not proven), and of
 * the closed segments after the window only the header and seal; the
 * records are those of the window's segments, every one, and no fault.
 */
static void test_limit_time(const char *dir, const uint64_t *segs, size_t nsegs)
{
	struct stor_dev_ops ops = { .open = c_open, .pread = c_pread, .close = c_close };
	struct counting c = { .posix = stor_dev_posix_ops() };
	size_t a = 1, b = nsegs / 2;
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t want = segs[a], small = UINT64_MAX, large = 0;
	int k;

	ops.ctx = &c;
	CHECK(stor_reader_open_ops(dir, &ops, &r) == 0);
	CHECK(stor_reader_seek_time(r, tu_time(segs[a])) == 0);
	CHECK(stor_reader_limit_time(r, tu_time(segs[b])) == 0);
	c.nopened = 0;
	while ((k = stor_reader_next(r, &rec)) == 1) {
		if (want == segs[b]) /* after the window: the newest segment's */
			want = segs[nsegs - 1];
		CHECK(rec.first_seq == want && tu_rec_ok(&rec), "read %" PRIu64 ", want %" PRIu64, rec.first_seq, want);
		want++;
	}
	CHECK(k == 0, "no fault: %d", k);
	CHECK(want > segs[nsegs - 1], "the newest segment read too");
	/* no segment before a opened; the window's and the newest read
	   whole; the ones after the window opened once, for their header
	   and seal (the reader proves that run from the newest back first:
	   the newest and the last of the window are looked at twice) */
	{
		uint64_t total[MAX_SEGS] = { 0 };
		unsigned opens[MAX_SEGS] = { 0 };

		for (size_t i = 0; i < c.nopened; i++) {
			size_t j = 0;

			while (j < nsegs && segs[j] != c.opened[i])
				j++;
			CHECK(j < nsegs && j >= a, "segment %" PRIu64 " opened", c.opened[i]);
			total[j] += c.bytes[i];
			opens[j]++;
		}
		for (size_t j = a; j < nsegs; j++) {
			bool skipped = j >= b && j != nsegs - 1;

			CHECK(opens[j] >= 1 && (opens[j] == 1 || j == b - 1 || j == nsegs - 1),
			      "segment %" PRIu64 " opened %u times", segs[j], opens[j]);
			if (skipped && total[j] > large)
				large = total[j];
			if (!skipped && j != nsegs - 1 && total[j] < small)
				small = total[j];
		}
	}
	CHECK(large > 0 && large * 2 < small, "segments after the window: up to %" PRIu64 " bytes read, the "
	      "window's at least %" PRIu64, large, small);
	/* without the limit, every segment's frames are read */
	CHECK(stor_reader_seek_time(r, tu_time(segs[a])) == 0 && stor_reader_limit_time(r, INT64_MAX) == 0);
	c.nopened = 0;
	while (stor_reader_next(r, &rec) == 1)
		;
	for (size_t i = 0; i + 1 < c.nopened; i++)
		CHECK(c.bytes[i] > 2 * large, "segment %" PRIu64 ": %" PRIu64 " bytes", c.opened[i], c.bytes[i]);
	CHECK(stor_reader_limit_time(NULL, 0) == -EINVAL);
	stor_reader_free(r);
	printf("limit time: segments %zu..%zu of %zu read, the %zu after the window %" PRIu64 " bytes each at most "
	       "(the others %" PRIu64 " at least)\n", a, b - 1, nsegs, nsegs - 1 - b, large, small);
}

/*
 * stor_reader_last_before() on the monotonic log: the record before each
 * segment's first one's time is the last of the segment before, reading
 * only the segments after it for their header and seal; before the
 * oldest record, none; past the newest, the newest.
 */
static void test_last_before(const char *dir, const uint64_t *segs, size_t nsegs)
{
	struct stor_dev_ops ops = { .open = c_open, .pread = c_pread, .close = c_close };
	struct counting c = { .posix = stor_dev_posix_ops() };
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t last;

	ops.ctx = &c;
	CHECK(stor_reader_open_ops(dir, &ops, &r) == 0);
	for (size_t j = 1; j < nsegs; j++) {
		c.nopened = 0;
		CHECK(stor_reader_last_before(r, tu_time(segs[j]), &rec) == 1 && rec.first_seq == segs[j] - 1 &&
		      rec.count == 1 && !rec.payload, "before segment %" PRIu64 "'s time: %" PRIu64, segs[j],
		      rec.first_seq);
		/* none older than the one holding it opened; those after it
		   once each, for their header and seal */
		for (size_t i = 0; i < c.nopened; i++)
			CHECK(c.opened[i] >= segs[j - 1], "segment %" PRIu64 " opened for a record of %" PRIu64,
			      c.opened[i], segs[j - 1]);
		CHECK(c.nopened <= nsegs - j + 3, "%zu segment opens for segment %zu of %zu", c.nopened, j, nsegs);
		/* and the reader reads on from a seek afterwards */
		CHECK(stor_reader_seek_seq(r, segs[j]) == 0 && stor_reader_next(r, &rec) == 1 &&
		      rec.first_seq == segs[j] && tu_rec_ok(&rec));
	}
	CHECK(stor_reader_last_before(r, tu_time(1), &rec) == 0, "before the oldest record");
	CHECK(stor_reader_last_before(r, tu_time(1) + 1, &rec) == 1 && rec.first_seq == 1);
	CHECK(stor_reader_seek_seq(r, 1) == 0);
	for (last = 0; stor_reader_next(r, &rec) == 1;)
		last = rec.first_seq;
	CHECK(stor_reader_last_before(r, INT64_MAX, &rec) == 1 && rec.first_seq == last);
	CHECK(stor_reader_last_before(NULL, 0, &rec) == -EINVAL && stor_reader_last_before(r, 0, NULL) == -EINVAL);
	stor_reader_free(r);
}

/* Records at these times (ms after a base), in seq order: a clock ahead,
   then stepped back into the window. */
static int64_t stepped_time(uint64_t seq)
{
	int64_t ms = seq <= 300 ? (int64_t)seq : seq <= 600 ? 100000 + (int64_t)seq : 50 + (int64_t)seq - 600;

	return 1700000000000000000LL + ms * 1000000;
}

/*
 * A clock stepped back: records 1-300 at 1..300 ms, 301-600 at 100 s on,
 * 601-900 at 51..350 ms, over segments of 4 KiB.  The last record before
 * 200 ms is 749 (at 199 ms), after the run ahead, not 199: the first
 * record reaching 200 ms is 200, but 601-749 start before it.
 */
static void test_last_before_stepped(const char *dir)
{
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "TEST-1", .segment_bytes = 4096, .sync_window_ms = 1000 };
	stor_log_t *log;
	stor_reader_t *r;
	struct stor_rec rec;
	uint8_t buf[256];

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (uint64_t seq = 1; seq <= 900; seq++) {
		struct stor_rec w = { .first_seq = seq, .count = 1, .t_first_ns = stepped_time(seq),
		                      .t_last_ns = stepped_time(seq), .payload = buf, .len = tu_len(seq) };

		tu_fill(buf, seq, w.len);
		CHECK(stor_log_append(log, &w) == 0);
	}
	stor_log_free(log);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_last_before(r, stepped_time(200), &rec) == 1 && rec.first_seq == 749,
	      "before 200 ms: %" PRIu64 ", want 749", rec.first_seq);
	CHECK(stor_reader_last_before(r, stepped_time(601), &rec) == 1 && rec.first_seq == 50,
	      "before 51 ms: %" PRIu64 ", want 50", rec.first_seq);
	CHECK(stor_reader_last_before(r, stepped_time(301) + 1, &rec) == 1 && rec.first_seq == 900,
	      "past the newest record's time: %" PRIu64, rec.first_seq);
	stor_reader_free(r);
	printf("last before: a clock stepped back over %zu segments: the record before 200 ms is 749, after the "
	       "records ahead\n", segments(dir, (uint64_t[MAX_SEGS]){ 0 }, MAX_SEGS));
}

int main(void)
{
	char *dir = tu_tmpdir_in("seekseg", true);
	uint64_t segs[MAX_SEGS];
	size_t nsegs;

	write_log(dir, 2000, 4096);
	nsegs = segments(dir, segs, MAX_SEGS);
	CHECK(nsegs >= 8 && segs[0] == 1, "%zu segments", nsegs);
	test_seek_segment_starts(dir, segs, nsegs);
	test_last_before(dir, segs, nsegs);
	test_seek_past_damage(dir, segs, nsegs);
	tu_rm_rf(dir);
	free(dir);
	dir = tu_tmpdir_in("seekstep", true);
	test_last_before_stepped(dir);
	tu_rm_rf(dir);
	free(dir);
	/* segments of 1 MiB: a skipped one costs its header's first read
	   (the reader's window, 256 KiB) and the seal, a read one all of it */
	dir = tu_tmpdir_in("seeklimit", true);
	write_log(dir, 52000, 1 << 20);
	nsegs = segments(dir, segs, MAX_SEGS);
	CHECK(nsegs >= 6, "%zu segments", nsegs);
	test_limit_time(dir, segs, nsegs);
	tu_rm_rf(dir);
	free(dir);
	printf("seek: %zu segments, each first seq opens its own segment only\n", nsegs);
	return 0;
}
