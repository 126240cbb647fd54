/* SPDX-License-Identifier: MIT */
/*
 * test-storage-logid.c - the log id (storage/DESIGN.md, "Log id"): random
 * at creation, in every segment header, the same after a restart and after
 * retention deleted every segment it was first written in, new for a new
 * or wiped directory; a version-1 log (tests/storage/v1-log, written by
 * railmon d7180d0) still opens and reads, with the documented derived id;
 * a damaged id block is reported and the other copy used; a new log can
 * start numbering at any seq.
 *
 * usage: test-storage-logid V1_LOG_DIR
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "stor-test-util.h"
#include "storage/stor-private.h"

static struct stor_log_cfg cfg_for(const char *dir)
{
	return (struct stor_log_cfg){
		.dir = dir, .vehicle = "ID-1", .segment_bytes = 2048, .sync_window_ms = 0,
	};
}

static void log_id_of(const char *dir, uint8_t id[STOR_LOG_ID_BYTES], uint64_t *ret_next)
{
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_id(log, id) == 0);
	if (ret_next)
		*ret_next = stor_log_next_seq(log);
	stor_log_free(log);
}

/* Read a segment's header as a reader would. */
static int header_of(const char *dir, uint64_t seq, struct stor_seg_hdr *h)
{
	char path[512];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%020" PRIu64 ".seg", dir, seq);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	r = stor_seg_hdr_read(stor_dev_posix_ops(), fd, h);
	close(fd);
	return r;
}

/* Every segment of dir has a version 2 header carrying id; returns how many. */
static size_t check_headers(const char *dir, const uint8_t id[STOR_LOG_ID_BYTES])
{
	uint64_t *seqs;
	size_t n;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0);
	for (size_t i = 0; i < n; i++) {
		struct stor_seg_hdr h;

		CHECK(header_of(dir, seqs[i], &h) == 0);
		CHECK(h.version == 2 && h.hdr_bytes == STOR_HDR_BYTES && h.has_log_id);
		CHECK(memcmp(h.log_id, id, STOR_LOG_ID_BYTES) == 0);
	}
	free(seqs);
	close(dfd);
	return n;
}

static void append_n(const char *dir, unsigned n, uint64_t retention_bytes)
{
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;

	cfg.retention_bytes = retention_bytes;
	CHECK(stor_log_open(&cfg, &log) == 0);
	for (unsigned i = 0; i < n; i++)
		CHECK(tu_append(log) == 0);
	stor_log_free(log);
}

static void test_bad_args(void)
{
	char *dir = tu_tmpdir_in("logid-args", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	uint8_t id[STOR_LOG_ID_BYTES];
	stor_log_t *log;

	CHECK(stor_log_id(NULL, id) == -EINVAL);
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_log_id(log, NULL) == -EINVAL);
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	printf("bad arguments: ok\n");
}

/* Restarts and retention keep the id; a new or wiped directory gets a new one. */
static void test_lifetime(void)
{
	char *dir = tu_tmpdir_in("logid", true), *other = tu_tmpdir_in("logid-other", true);
	uint8_t id[STOR_LOG_ID_BYTES], again[STOR_LOG_ID_BYTES], zero[STOR_LOG_ID_BYTES] = { 0 };
	uint64_t next;
	char path[512];

	append_n(dir, 30, 0);
	log_id_of(dir, id, &next);
	CHECK(next == 31 && memcmp(id, zero, sizeof(id)) != 0);
	CHECK(check_headers(dir, id) > 3);
	/* Segment 1 (where the id was first written) goes by retention. */
	append_n(dir, 200, 8192);
	snprintf(path, sizeof(path), "%s/%020d.seg", dir, 1);
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);
	log_id_of(dir, again, &next);
	CHECK(next == 231 && memcmp(id, again, sizeof(id)) == 0);
	check_headers(dir, id);

	log_id_of(other, again, NULL);
	CHECK(memcmp(id, again, sizeof(id)) != 0);
	/* Wiped: seq restarts at 1, so it is another log. */
	tu_rm_rf(dir);
	CHECK(mkdir(dir, 0755) == 0);
	log_id_of(dir, again, &next);
	CHECK(next == 1 && memcmp(id, again, sizeof(id)) != 0);
	tu_rm_rf(dir);
	tu_rm_rf(other);
	free(dir);
	free(other);
	printf("log id kept across restarts and retention, new for a new or wiped log: ok\n");
}

static void copy_file(const char *from, const char *to)
{
	char buf[8192];
	ssize_t n;
	int a = open(from, O_RDONLY), b = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(a >= 0 && b >= 0);
	while ((n = read(a, buf, sizeof(buf))) > 0)
		CHECK(write(b, buf, (size_t)n) == n);
	CHECK(n == 0);
	close(a);
	CHECK(close(b) == 0);
}

/* Read the whole log: records [first, next) with their exact content. */
static void verify_all(const char *dir, uint64_t first, uint64_t next)
{
	struct tu_verify v;

	CHECK(tu_verify_log(dir, 0, next, &v) == 0);
	CHECK(v.first == first && v.next == next && v.records == next - first && v.damaged == 0);
}

static uint64_t get64le(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A log written by railmon d7180d0 (header version 1, no log id). */
static void test_v1_log(const char *v1_dir)
{
	static const char *segs[] = { "00000000000000000001.seg", "00000000000000000014.seg",
				      "00000000000000000025.seg", "00000000000000000036.seg" };
	char *dir = tu_tmpdir_in("logid-v1", true);
	uint8_t raw[256], want[STOR_LOG_ID_BYTES], id[STOR_LOG_ID_BYTES];
	char from[512], to[512];
	struct stor_seg_hdr h;
	uint64_t next;
	int fd;

	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
		snprintf(from, sizeof(from), "%s/%s", v1_dir, segs[i]);
		snprintf(to, sizeof(to), "%s/%s", dir, segs[i]);
		copy_file(from, to);
	}
	CHECK(header_of(dir, 1, &h) == 0 && h.version == 1 && h.hdr_bytes == 256 && !h.has_log_id);
	verify_all(dir, 1, 41);
	/* The documented fallback, computed here from the bytes: the oldest
	   segment's salt (offset 24) then its creation time (offset 56). */
	snprintf(from, sizeof(from), "%s/%s", dir, segs[0]);
	fd = open(from, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, raw, sizeof(raw), 0) == (ssize_t)sizeof(raw));
	close(fd);
	for (int i = 0; i < 8; i++) {
		want[i] = (uint8_t)(get64le(raw + 24) >> (8 * i));
		want[8 + i] = (uint8_t)(get64le(raw + 56) >> (8 * i));
	}
	log_id_of(dir, id, &next);
	CHECK(next == 41 && memcmp(id, want, sizeof(id)) == 0);
	verify_all(dir, 1, 41);
	/* Appends go to version 2 segments with that id; retention then deletes
	   every version 1 segment and the id stays. */
	append_n(dir, 20, 0);
	verify_all(dir, 1, 61);
	append_n(dir, 300, 8192);
	CHECK(header_of(dir, 1, &h) == -ENOENT && header_of(dir, 36, &h) == -ENOENT);
	log_id_of(dir, id, &next);
	CHECK(next == 361 && memcmp(id, want, sizeof(id)) == 0);
	check_headers(dir, want);
	tu_rm_rf(dir);
	free(dir);
	printf("version 1 log: opens, reads, derived id kept after its segments are gone: ok\n");
}

/* A version 1 segment smaller than a version 2 header (256-byte header and
   one frame) is still a segment: its records are read. */
static void test_v1_small_segment(const char *v1_dir)
{
	static const char *segs[] = { "00000000000000000001.seg", "00000000000000000014.seg",
				      "00000000000000000025.seg", "00000000000000000036.seg" };
	char *dir = tu_tmpdir_in("logid-v1-small", true);
	char from[512], to[512];

	for (size_t i = 0; i < sizeof(segs) / sizeof(segs[0]); i++) {
		snprintf(from, sizeof(from), "%s/%s", v1_dir, segs[i]);
		snprintf(to, sizeof(to), "%s/%s", dir, segs[i]);
		copy_file(from, to);
	}
	/* seg 36 cut after its first frame (seq 36, 176 bytes from offset 256) */
	CHECK(truncate(to, 432) == 0);
	verify_all(dir, 1, 37);
	tu_rm_rf(dir);
	free(dir);
	printf("version 1 segment of 432 bytes: read\n");
}

static void flip(const char *dir, uint64_t seq, off_t off)
{
	char path[512];
	uint8_t b;
	int fd;

	snprintf(path, sizeof(path), "%s/%020" PRIu64 ".seg", dir, seq);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0 && pread(fd, &b, 1, off) == 1);
	b ^= 0x10;
	CHECK(pwrite(fd, &b, 1, off) == 1);
	close(fd);
}

/* One damaged id block: reported at its offset, the other copy is used.
   Both: the id comes from an older segment. */
static void test_damaged_id(void)
{
	char *dir = tu_tmpdir_in("logid-dmg", true);
	uint8_t id[STOR_LOG_ID_BYTES], again[STOR_LOG_ID_BYTES];
	struct stor_seg_hdr h;
	stor_reader_t *r;
	struct stor_rec rec;
	uint64_t *seqs, seg, off, records = 0, reports = 0;
	size_t n;
	int dfd, k;

	append_n(dir, 40, 0);
	log_id_of(dir, id, NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0 && stor_seg_list(dfd, &seqs, &n) == 0 && n >= 3);
	close(dfd);
	flip(dir, seqs[0], 2 * STOR_HDR_COPY_BYTES + 9);
	CHECK(header_of(dir, seqs[0], &h) == 3 && h.has_log_id && memcmp(h.log_id, id, sizeof(id)) == 0);
	CHECK(stor_reader_open(dir, &r) == 0);
	while ((k = stor_reader_next(r, &rec)) != 0) {
		if (k == -EBADMSG) {
			stor_reader_error(r, &seg, &off);
			CHECK(seg == seqs[0] && off == 2 * STOR_HDR_COPY_BYTES);
			reports++;
			continue;
		}
		CHECK(k == 1 && tu_rec_ok(&rec));
		records++;
	}
	stor_reader_free(r);
	CHECK(reports == 1 && records == 40);
	/* Both blocks of the two newest segments: found in an older one. */
	for (size_t i = n - 2; i < n; i++) {
		flip(dir, seqs[i], 2 * STOR_HDR_COPY_BYTES + 9);
		flip(dir, seqs[i], 3 * STOR_HDR_COPY_BYTES + 9);
		CHECK(header_of(dir, seqs[i], &h) == 3 && !h.has_log_id);
	}
	log_id_of(dir, again, NULL);
	CHECK(memcmp(id, again, sizeof(id)) == 0);
	free(seqs);
	tu_rm_rf(dir);
	free(dir);
	printf("damaged log id block: reported, other copy or older segment used: ok\n");
}

/* Id blocks of another file generation (other salt) never pass; a
   version 2 header cut short (the file ends inside it) is no header. */
static void test_header_blocks(void)
{
	struct stor_seg_hdr h = { .first_seq = 7, .salt = 0x1122, .log_id = { 5 } }, got;
	uint8_t buf[STOR_HDR_BYTES], stale[STOR_HDR_BYTES];
	char *dir = tu_tmpdir_in("logid-short", true);
	char path[512];
	int fd;

	strcpy(h.vehicle, "ID-1");
	stor_seg_hdr_encode(&h, buf);
	CHECK(stor_seg_hdr_decode(buf, &got) == 0 && got.has_log_id && got.log_id[0] == 5);
	CHECK(got.version == 2 && got.first_seq == 7 && got.hdr_bytes == STOR_HDR_BYTES);
	h.salt = 0x3344;
	stor_seg_hdr_encode(&h, stale);
	memcpy(buf + 2 * STOR_HDR_COPY_BYTES, stale + 2 * STOR_HDR_COPY_BYTES, 2 * STOR_HDR_COPY_BYTES);
	CHECK(stor_seg_hdr_decode(buf, &got) == 3 && !got.has_log_id && got.salt == 0x1122);

	h.salt = 0x1122;
	stor_seg_hdr_encode(&h, buf);
	snprintf(path, sizeof(path), "%s/%020d.seg", dir, 7);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0 && write(fd, buf, 300) == 300);
	close(fd);
	CHECK(header_of(dir, 7, &got) == -EBADMSG);
	tu_rm_rf(dir);
	free(dir);
	printf("stale or cut-short header blocks: ok\n");
}

/* A new log may start numbering anywhere (a ground log meeting a vehicle
   at seq 5e9); an existing one keeps its own numbering. */
static void test_first_seq(void)
{
	char *dir = tu_tmpdir_in("logid-first", true);
	struct stor_log_cfg cfg = cfg_for(dir);
	stor_log_t *log;
	uint8_t buf[8] = { 0 };
	struct stor_rec rec = { .first_seq = 5000000001ull, .count = 3, .payload = buf, .len = sizeof(buf) };
	stor_reader_t *r;

	cfg.first_seq = 5000000001ull;
	CHECK(stor_log_open(&cfg, &log) == 0 && stor_log_next_seq(log) == 5000000001ull);
	CHECK(stor_log_append(log, &rec) == 0);
	stor_log_free(log);
	cfg.first_seq = 7;
	CHECK(stor_log_open(&cfg, &log) == 0 && stor_log_next_seq(log) == 5000000004ull);
	stor_log_free(log);
	CHECK(stor_reader_open(dir, &r) == 0);
	CHECK(stor_reader_next(r, &rec) == 1 && rec.first_seq == 5000000001ull && rec.count == 3);
	CHECK(stor_reader_next(r, &rec) == 0);
	stor_reader_free(r);
	tu_rm_rf(dir);
	free(dir);
	printf("a new log starts at cfg.first_seq, an existing one ignores it: ok\n");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s V1_LOG_DIR\n", argv[0]);
		return 2;
	}
	test_bad_args();
	test_lifetime();
	test_v1_log(argv[1]);
	test_v1_small_segment(argv[1]);
	test_damaged_id();
	test_header_blocks();
	test_first_seq();
	return 0;
}
