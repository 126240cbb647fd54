/* SPDX-License-Identifier: MIT */
/*
 * segment.c - the on-disk format: segment names and headers, frame
 * encoding and checking, and the cursor that walks and resynchronises.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/byteorder.h"
#include "crc32c.h"
#include "stor-private.h"

void stor_seg_name(char buf[STOR_SEG_NAME_LEN], uint64_t first_seq)
{
	snprintf(buf, STOR_SEG_NAME_LEN, "%020" PRIu64 ".seg", first_seq);
}

int stor_seg_parse_name(const char *name, uint64_t *ret_first_seq)
{
	uint64_t v = 0;

	if (!name || strlen(name) != 24 || strcmp(name + 20, ".seg") != 0)
		return -EINVAL;
	for (int i = 0; i < 20; i++) {
		unsigned d = (unsigned)(name[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*ret_first_seq = v;
	return 0;
}

static void hdr_copy_encode(const struct stor_seg_hdr *h, uint8_t *out)
{
	memset(out, 0, STOR_HDR_COPY_BYTES);
	memcpy(out, STOR_SEG_MAGIC, 8);
	basic_put_le32(out + 8, STOR_SEG_VERSION);
	basic_put_le32(out + 12, STOR_HDR_BYTES);
	basic_put_le64(out + 16, h->first_seq);
	basic_put_le64(out + 24, h->salt);
	basic_put_le64(out + 32, h->config_hash);
	memcpy(out + 40, h->boot_id, 16);
	basic_put_le64(out + 56, (uint64_t)h->created_ns);
	memcpy(out + 64, h->vehicle, strnlen(h->vehicle, STOR_VEHICLE_MAX));
	basic_put_le32(out + 124, stor_crc32c(0, out, 124));
}

/* The log id block's CRC covers the salt, as a frame's does: a block left
   over from an older generation of the file never passes for this one. */
static uint32_t id_block_crc(uint64_t salt, const uint8_t *in)
{
	uint8_t s[8];

	basic_put_le64(s, salt);
	return stor_crc32c(stor_crc32c(0, s, 8), in, 124);
}

static void id_block_encode(const struct stor_seg_hdr *h, uint8_t *out)
{
	memset(out, 0, STOR_HDR_COPY_BYTES);
	memcpy(out, STOR_SEG_ID_MAGIC, 8);
	memcpy(out + 8, h->log_id, STOR_LOG_ID_BYTES);
	basic_put_le32(out + 124, id_block_crc(h->salt, out));
}

void stor_seg_hdr_encode(const struct stor_seg_hdr *h, uint8_t out[STOR_HDR_BYTES])
{
	/* Two copies of each block in the same 512 bytes: one flipped bit must
	   not cost the salt, without which no frame of the segment could be
	   proven, nor the log id. */
	hdr_copy_encode(h, out);
	hdr_copy_encode(h, out + STOR_HDR_COPY_BYTES);
	id_block_encode(h, out + 2 * STOR_HDR_COPY_BYTES);
	id_block_encode(h, out + 3 * STOR_HDR_COPY_BYTES);
}

static int hdr_copy_decode(const uint8_t *in, struct stor_seg_hdr *ret_hdr)
{
	struct stor_seg_hdr h = {0};

	if (memcmp(in, STOR_SEG_MAGIC, 8) != 0 || basic_get_le32(in + 124) != stor_crc32c(0, in, 124))
		return -EBADMSG;
	h.version = basic_get_le32(in + 8);
	h.hdr_bytes = basic_get_le32(in + 12);
	/* Version 1 has no log id blocks: its frames start right after the
	   two header copies. */
	if (!(h.version == STOR_SEG_VERSION && h.hdr_bytes == STOR_HDR_BYTES) &&
	    !(h.version == STOR_SEG_VERSION_V1 && h.hdr_bytes == STOR_HDR_V1_BYTES))
		return -EBADMSG;
	h.first_seq = basic_get_le64(in + 16);
	h.salt = basic_get_le64(in + 24);
	h.config_hash = basic_get_le64(in + 32);
	memcpy(h.boot_id, in + 40, 16);
	h.created_ns = (int64_t)basic_get_le64(in + 56);
	memcpy(h.vehicle, in + 64, STOR_VEHICLE_MAX);
	*ret_hdr = h;
	return 0;
}

static bool id_block_decode(const uint8_t *in, struct stor_seg_hdr *h)
{
	if (memcmp(in, STOR_SEG_ID_MAGIC, 8) != 0 || basic_get_le32(in + 124) != id_block_crc(h->salt, in))
		return false;
	memcpy(h->log_id, in + 8, STOR_LOG_ID_BYTES);
	h->has_log_id = true;
	return true;
}

int stor_seg_hdr_decode(const uint8_t in[STOR_HDR_BYTES], struct stor_seg_hdr *ret_hdr)
{
	struct stor_seg_hdr h;
	bool id2, id3;
	int r;

	if (hdr_copy_decode(in, &h) == 0)
		r = hdr_copy_decode(in + STOR_HDR_COPY_BYTES, &(struct stor_seg_hdr){0}) == 0 ? 0 : 2;
	else if (hdr_copy_decode(in + STOR_HDR_COPY_BYTES, &h) == 0)
		r = 1;
	else
		return -EBADMSG;
	if (h.version == STOR_SEG_VERSION) {
		id2 = id_block_decode(in + 2 * STOR_HDR_COPY_BYTES, &h);
		id3 = id_block_decode(in + 3 * STOR_HDR_COPY_BYTES, &h);
		/* Report the first damaged block; the frames stay readable
		   without the id. */
		if (r == 0 && (!id2 || !id3))
			r = id2 ? 4 : 3;
	}
	*ret_hdr = h;
	return r;
}

/* Decode the first avail bytes of a file of file_size bytes. */
static int hdr_decode_prefix(const uint8_t *p, size_t avail, uint64_t file_size,
			     struct stor_seg_hdr *ret_hdr)
{
	uint8_t buf[STOR_HDR_BYTES] = {0};
	int r;

	memcpy(buf, p, avail < sizeof(buf) ? avail : sizeof(buf));
	r = stor_seg_hdr_decode(buf, ret_hdr);
	/* A header that says frames start beyond the end of the file was cut
	   short while being written: there is no header yet. */
	if (r >= 0 && ret_hdr->hdr_bytes > file_size)
		return -EBADMSG;
	return r;
}

static uint32_t frame_crc(uint64_t salt, const uint8_t *in, uint32_t len)
{
	uint8_t s[8];
	uint32_t crc;

	/* The salt is in the CRC but not in the frame: a frame of an older
	   generation of this file (other salt) can never validate. */
	basic_put_le64(s, salt);
	crc = stor_crc32c(0, s, 8);
	crc = stor_crc32c(crc, in, 4);
	return stor_crc32c(crc, in + 8, stor_frame_size(len) - 8);
}

void stor_frame_encode(uint64_t salt, const struct stor_frame *f, const void *payload,
		       uint8_t *out)
{
	uint64_t size = stor_frame_size(f->len);

	basic_put_le32(out, f->len);
	basic_put_le64(out + 8, f->first_seq);
	basic_put_le32(out + 16, f->count);
	basic_put_le32(out + 20, f->flags);
	basic_put_le64(out + 24, (uint64_t)f->t_first_ns);
	basic_put_le64(out + 32, (uint64_t)f->t_last_ns);
	if (f->len)
		memcpy(out + STOR_FRAME_HDR_BYTES, payload, f->len);
	memset(out + STOR_FRAME_HDR_BYTES + f->len, 0, size - STOR_FRAME_HDR_BYTES - f->len);
	basic_put_le32(out + 4, frame_crc(salt, out, f->len));
}

int stor_frame_peek(const uint8_t *in, struct stor_frame *ret_f)
{
	struct stor_frame f = {
		.len = basic_get_le32(in),
		.first_seq = basic_get_le64(in + 8),
		.count = basic_get_le32(in + 16),
		.flags = basic_get_le32(in + 20),
		.t_first_ns = (int64_t)basic_get_le64(in + 24),
		.t_last_ns = (int64_t)basic_get_le64(in + 32),
	};
	bool seal = f.flags & STOR_FRAME_SEAL;

	if (f.len > STOR_MAX_PAYLOAD || f.t_first_ns > f.t_last_ns)
		return -EBADMSG;
	if (f.flags != 0 && f.flags != STOR_FRAME_SEAL && f.flags != STOR_FRAME_GAP)
		return -EBADMSG;
	if (seal ? (f.count != 0 || f.len != 0) : f.count == 0)
		return -EBADMSG;
	if ((f.flags & STOR_FRAME_GAP) && f.len != 0)
		return -EBADMSG;
	if (f.first_seq == 0 || f.first_seq > UINT64_MAX - f.count)
		return -EBADMSG;
	*ret_f = f;
	return 0;
}

bool stor_frame_crc_ok(uint64_t salt, const uint8_t *in, const struct stor_frame *f)
{
	return basic_get_le32(in + 4) == frame_crc(salt, in, f->len);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int stor_seg_list(int dirfd, uint64_t **ret_seqs, size_t *ret_n)
{
	int fd = dup(dirfd);
	DIR *d;
	struct dirent *de;
	uint64_t *v = NULL, seq;
	size_t n = 0, cap = 0;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (stor_seg_parse_name(de->d_name, &seq) < 0)
			continue;
		if (n == cap) {
			uint64_t *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = seq;
	}
	closedir(d);
	if (n) /* qsort(NULL, 0) is undefined: an empty directory */
		qsort(v, n, sizeof(*v), cmp_u64);
	*ret_seqs = v;
	*ret_n = n;
	return 0;
}

bool stor_dir_holds_log(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	while (d && !found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		found = n > 4 && !strcmp(de->d_name + n - 4, ".seg");
	}
	if (d)
		closedir(d);
	return found;
}

int stor_seg_open(const struct stor_dev_ops *ops, int dirfd, const char *name, int flags,
		  uint64_t *ret_size, uint32_t *ret_type)
{
	struct stat st;
	int fd, r;

	*ret_type = 0;
	fd = ops->open(ops->ctx, dirfd, name, flags | O_NONBLOCK | O_NOFOLLOW, 0);
	if (fd == -ELOOP)
		*ret_type = S_IFLNK;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		ops->close(ops->ctx, fd);
		return r;
	}
	*ret_type = st.st_mode & S_IFMT;
	if (!S_ISREG(st.st_mode)) {
		/* Not something the writer made: never read it. */
		ops->close(ops->ctx, fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	*ret_size = (uint64_t)st.st_size;
	return fd;
}

/* Cursor ------------------------------------------------------------- */

static ssize_t read_full(const struct stor_dev_ops *ops, int fd, uint8_t *buf, size_t len,
			 uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = ops->pread(ops->ctx, fd, buf + done, len - done, (off_t)(off + done));

		if (r == -EINTR)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

#define WIN_BYTES (256u << 10)

/* 1 and *ret points at len bytes at off; 0 if the file is shorter; -errno. */
static int win_get(struct stor_cursor *c, uint64_t off, size_t len, const uint8_t **ret)
{
	ssize_t r;
	size_t want;

	if (off > c->file_size || len > c->file_size - off)
		return 0;
	if (off >= c->win_off && off + len <= c->win_off + c->win_len) {
		*ret = c->win + (off - c->win_off);
		return 1;
	}
	/* 256 KiB reads keep a live reader's polls cheap and its memory
	   small; a bigger frame gets what it needs. */
	want = len > WIN_BYTES ? len : WIN_BYTES;
	if (want > c->file_size - off)
		want = (size_t)(c->file_size - off);
	if (want > c->win_cap) {
		uint8_t *w = realloc(c->win, want);

		if (!w)
			return -ENOMEM;
		c->win = w;
		c->win_cap = want;
	}
	r = read_full(c->ops, c->fd, c->win, want, off);
	if (r < 0)
		return (int)r;
	c->win_off = off;
	c->win_len = (size_t)r;
	if ((size_t)r < len)
		return 0; /* the file shrank under us */
	*ret = c->win;
	return 1;
}

int stor_seg_hdr_read(const struct stor_dev_ops *ops, int fd, struct stor_seg_hdr *ret_hdr)
{
	uint8_t buf[STOR_HDR_BYTES];
	ssize_t n = read_full(ops, fd, buf, sizeof(buf), 0);

	if (n < 0)
		return (int)n;
	/* Fewer bytes than asked: the end of the file. */
	return hdr_decode_prefix(buf, (size_t)n, (uint64_t)n, ret_hdr);
}

int stor_cursor_init(struct stor_cursor *c, const struct stor_dev_ops *ops, int fd,
		     uint64_t file_size)
{
	/* A version 1 segment may be shorter than a version 2 header. */
	size_t want = file_size >= STOR_HDR_BYTES ? STOR_HDR_BYTES : STOR_HDR_V1_BYTES;
	const uint8_t *p;
	int r;

	*c = (struct stor_cursor){ .ops = ops, .fd = fd, .file_size = file_size };
	r = win_get(c, 0, want, &p);
	if (r == 1)
		r = hdr_decode_prefix(p, want, file_size, &c->hdr);
	else if (r == 0)
		r = -EBADMSG;
	if (r < 0) {
		stor_cursor_done(c);
		return r;
	}
	c->hdr_copy_damaged = r;
	c->off = c->data_end = c->hdr.hdr_bytes;
	c->expect_seq = c->hdr.first_seq;
	c->t_min = INT64_MAX;
	c->t_max = INT64_MIN;
	return 0;
}

void stor_cursor_done(struct stor_cursor *c)
{
	free(c->win);
	c->win = NULL;
}

/*
 * 1: a good frame at off (CRC and, if chained, first_seq == expect_seq;
 * otherwise first_seq >= expect_seq).  0: not one.  -errno on I/O error.
 */
static int frame_at(struct stor_cursor *c, uint64_t off, bool chained, struct stor_frame *ret_f,
		    const uint8_t **ret_p)
{
	struct stor_frame f;
	const uint8_t *p;
	int r;

	r = win_get(c, off, STOR_FRAME_HDR_BYTES, &p);
	if (r <= 0)
		return r;
	if (stor_frame_peek(p, &f) < 0)
		return 0;
	if (chained ? f.first_seq != c->expect_seq : f.first_seq < c->expect_seq)
		return 0;
	r = win_get(c, off, stor_frame_size(f.len), &p);
	if (r <= 0)
		return r;
	if (!stor_frame_crc_ok(c->hdr.salt, p, &f))
		return 0;
	*ret_f = f;
	*ret_p = p;
	return 1;
}

/*
 * Offset of the next provable frame at or after c->off, where the chain
 * broke: 1 and *ret_off, or 0 if none.  At c->off itself that is a good
 * frame whose first_seq jumps ahead (records missing, reported).
 */
static int resync(struct stor_cursor *c, uint64_t *ret_off)
{
	struct stor_frame f;
	const uint8_t *p;

	for (uint64_t off = c->off;
	     off + STOR_FRAME_HDR_BYTES <= c->file_size; off += STOR_FRAME_ALIGN) {
		int r = frame_at(c, off, false, &f, &p);

		if (r < 0)
			return r;
		if (r == 1) {
			*ret_off = off;
			return 1;
		}
	}
	return 0;
}

int stor_cursor_next(struct stor_cursor *c, struct stor_frame *ret_f, const uint8_t **ret_payload,
		     uint64_t *ret_off)
{
	struct stor_frame f;
	const uint8_t *p;
	uint64_t good;
	int r;

	if (c->sealed)
		return 0;
	r = frame_at(c, c->off, true, &f, &p);
	if (r < 0)
		return r;
	if (r == 0) {
		/* A live tail may be mid-write (a pwrite being copied): wait
		   for the segment to close before calling anything damage. */
		if (c->live_tail)
			return 0;
		r = resync(c, &good);
		if (r <= 0)
			return r;
		c->bad_off = c->off;
		c->off = good;
		/* The damaged frames' records are gone; continue the chain from
		   the proven frame. */
		r = frame_at(c, good, false, &f, &p);
		if (r < 0)
			return r;
		c->expect_seq = f.first_seq;
		return -EBADMSG;
	}
	*ret_off = c->off;
	c->off += stor_frame_size(f.len);
	c->data_end = c->off;
	c->expect_seq = f.first_seq + f.count;
	if (f.flags & STOR_FRAME_SEAL) {
		c->sealed = true;
		c->seal = f;
		return 0;
	}
	if (f.t_first_ns < c->t_min)
		c->t_min = f.t_first_ns;
	if (f.t_last_ns > c->t_max)
		c->t_max = f.t_last_ns;
	*ret_f = f;
	*ret_payload = p + STOR_FRAME_HDR_BYTES;
	return 1;
}

int stor_cursor_ahead(struct stor_cursor *c)
{
	struct stor_frame f;
	const uint8_t *p;
	uint64_t good;
	int r;

	c->win_len = 0; /* bytes read before may be older than the file's */
	r = frame_at(c, c->off, true, &f, &p);
	if (r != 0)
		return r < 0 ? r : 2;
	return resync(c, &good);
}

bool stor_seg_read_seal(const struct stor_dev_ops *ops, int fd, uint64_t size, const struct stor_cursor *c,
                        struct stor_frame *ret_seal)
{
	uint8_t tail[STOR_FRAME_HDR_BYTES];
	struct stor_frame f;

	/* The seal is the last frame of a closed segment. */
	if (size < c->off + STOR_FRAME_HDR_BYTES ||
	    ops->pread(ops->ctx, fd, tail, STOR_FRAME_HDR_BYTES, (off_t)(size - STOR_FRAME_HDR_BYTES)) !=
	            STOR_FRAME_HDR_BYTES ||
	    stor_frame_peek(tail, &f) != 0 || !(f.flags & STOR_FRAME_SEAL) || !stor_frame_crc_ok(c->hdr.salt, tail, &f))
		return false;
	*ret_seal = f;
	return true;
}

int64_t stor_seg_t_last(const struct stor_dev_ops *ops, int dirfd, uint64_t first_seq)
{
	char name[STOR_SEG_NAME_LEN];
	struct stor_cursor c;
	struct stor_frame f;
	struct stat st = {0};
	int64_t t = INT64_MIN;
	uint64_t size;
	uint32_t type;
	int fd;

	stor_seg_name(name, first_seq);
	/* Never blocks (a FIFO in its place) and reads regular files only. */
	fd = stor_seg_open(ops, dirfd, name, O_RDONLY, &size, &type);
	if (fd < 0)
		return INT64_MIN;
	if (fstat(fd, &st) == 0 && stor_cursor_init(&c, ops, fd, (uint64_t)st.st_size) == 0) {
		if (stor_seg_read_seal(ops, fd, (uint64_t)st.st_size, &c, &f))
			t = f.t_last_ns;
		stor_cursor_done(&c);
	}
	if (t == INT64_MIN)
		t = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	ops->close(ops->ctx, fd);
	return t;
}
