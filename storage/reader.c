/* SPDX-License-Identifier: MIT */
/*
 * reader.c - iterate a log directory by sequence number or time, beside a
 * live writer.  Damage is reported once per spot (-EBADMSG) and skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stor-private.h"

struct stor_reader {
	int dirfd;
	const struct stor_dev_ops *ops;
	bool open;             /* a segment is open in c */
	struct stor_cursor c;
	uint64_t cur_seg;      /* first seq of the open segment */
	uint64_t next_min_seg; /* the next segment opened has first_seq >= this */
	uint64_t min_seq;      /* skip records entirely below this (seek) */
	int64_t min_t;         /* skip records with t_last below this (seek) */
	bool by_time;
	uint64_t err_seg, err_off;
};

int stor_reader_open(const char *dir, stor_reader_t **ret_reader)
{
	stor_reader_t *r;

	if (!dir || !ret_reader)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = stor_dev_posix_ops();
	r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->dirfd < 0) {
		int e = -errno;

		free(r);
		return e;
	}
	*ret_reader = r;
	return 0;
}

static void seg_close(stor_reader_t *r)
{
	if (!r->open)
		return;
	close(r->c.fd);
	stor_cursor_done(&r->c);
	r->open = false;
}

stor_reader_t *stor_reader_free(stor_reader_t *r)
{
	if (!r)
		return NULL;
	seg_close(r);
	close(r->dirfd);
	free(r);
	return NULL;
}

/* First segment with first_seq >= min, and whether one follows it. */
static int seg_find(stor_reader_t *r, uint64_t min, uint64_t *ret_seq, bool *ret_more)
{
	uint64_t *seqs;
	size_t n, i;
	int ret = stor_seg_list(r->dirfd, &seqs, &n);

	if (ret < 0)
		return ret;
	for (i = 0; i < n && seqs[i] < min; i++)
		;
	ret = i < n;
	if (ret) {
		*ret_seq = seqs[i];
		*ret_more = i + 1 < n;
	}
	free(seqs);
	return ret;
}

static int seg_open_next(stor_reader_t *r)
{
	char name[STOR_SEG_NAME_LEN];
	struct stat st;
	uint64_t seq;
	bool more;
	int fd, ret;

	for (;;) {
		ret = seg_find(r, r->next_min_seg, &seq, &more);
		if (ret <= 0)
			return ret;
		r->next_min_seg = seq + 1;
		stor_seg_name(name, seq);
		fd = openat(r->dirfd, name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue; /* deleted by retention meanwhile */
		if (fd < 0)
			return -errno;
		if (fstat(fd, &st) < 0) {
			ret = -errno;
			close(fd);
			return ret;
		}
		ret = stor_cursor_init(&r->c, r->ops, fd, (uint64_t)st.st_size);
		if (ret == 0 && r->c.hdr.first_seq != seq) {
			/* A header for another name: never read its frames. */
			stor_cursor_done(&r->c);
			ret = -EBADMSG;
		}
		if (ret < 0) {
			close(fd);
			if (ret == -EBADMSG && !more) {
				/* The newest segment, its header being written:
				   look at it again next time. */
				r->next_min_seg = seq;
				return 0;
			}
			if (ret != -EBADMSG)
				return ret;
			r->err_seg = seq;
			r->err_off = 0;
			return -EBADMSG;
		}
		r->c.live_tail = !more;
		r->cur_seg = seq;
		r->open = true;
		if (r->c.hdr_copy_damaged) {
			/* Readable through the other copy, but say so. */
			r->err_seg = seq;
			r->err_off = (uint64_t)(r->c.hdr_copy_damaged - 1) * STOR_HDR_COPY_BYTES;
			return -EBADMSG;
		}
		return 1;
	}
}

/* A record passed by a pending seek? */
static bool skip(stor_reader_t *r, const struct stor_frame *f)
{
	if (f->flags & STOR_FRAME_GAP)
		return true;
	if (r->by_time) {
		if (f->t_last_ns < r->min_t)
			return true;
		r->by_time = false;
	} else if (r->min_seq) {
		if (f->first_seq + f->count <= r->min_seq)
			return true;
		r->min_seq = 0;
	}
	return false;
}

/* End of the open segment's good frames.  1: go on with the next one. */
static int seg_end(stor_reader_t *r)
{
	struct stat st;
	uint64_t seq;
	bool more;
	int ret;

	if (r->c.sealed) {
		seg_close(r);
		return 1;
	}
	ret = seg_find(r, r->cur_seg + 1, &seq, &more);
	if (ret < 0)
		return ret;
	if (r->c.live_tail) {
		/* The writer may have written (and grown the file) since we
		   looked: look again, at the current size. */
		if (fstat(r->c.fd, &st) < 0)
			return -errno;
		r->c.file_size = (uint64_t)st.st_size;
		r->c.win_len = 0;
	}
	if (ret == 0)
		return 0; /* the live tail: look again next time */
	if (r->c.live_tail) {
		/* A later segment exists, so this one is closed: what stopped
		   us is now damage or its end; look again with resync. */
		r->c.live_tail = false;
		return 1;
	}
	r->err_seg = r->cur_seg;
	r->err_off = r->c.off;
	seg_close(r);
	return -EBADMSG; /* closed but never sealed: its end is not proven */
}

int stor_reader_next(stor_reader_t *r, struct stor_rec *ret_rec)
{
	struct stor_frame f;
	const uint8_t *p;
	uint64_t off;
	int ret;

	if (!r || !ret_rec)
		return -EINVAL;
	for (;;) {
		if (!r->open) {
			ret = seg_open_next(r);
			if (ret <= 0)
				return ret;
		}
		ret = stor_cursor_next(&r->c, &f, &p, &off);
		if (ret == -EBADMSG) {
			r->err_seg = r->cur_seg;
			r->err_off = r->c.bad_off;
			return ret;
		}
		if (ret < 0)
			return ret;
		if (ret == 1 && skip(r, &f))
			continue;
		if (ret == 1)
			break;
		ret = seg_end(r);
		if (ret <= 0)
			return ret;
	}
	*ret_rec = (struct stor_rec){
		.first_seq = f.first_seq, .count = f.count,
		.t_first_ns = f.t_first_ns, .t_last_ns = f.t_last_ns,
		.payload = p, .len = f.len, .segment = r->cur_seg, .offset = off,
	};
	return 1;
}

int stor_reader_seek_seq(stor_reader_t *r, uint64_t seq)
{
	uint64_t *seqs;
	size_t n;
	int ret;

	if (!r || seq == 0)
		return -EINVAL;
	ret = stor_seg_list(r->dirfd, &seqs, &n);
	if (ret < 0)
		return ret;
	seg_close(r);
	r->next_min_seg = 0;
	/* The segment holding seq is the last one starting at or before it. */
	for (size_t i = 0; i < n && seqs[i] <= seq; i++)
		r->next_min_seg = seqs[i];
	free(seqs);
	r->min_seq = seq;
	r->by_time = false;
	return 0;
}

/* Newest record time of a closed segment, from its seal; INT64_MAX if it
   cannot be proven (no good seal): then the segment must be scanned. */
static int64_t seal_t_last(stor_reader_t *r, uint64_t seq)
{
	char name[STOR_SEG_NAME_LEN];
	uint8_t tail[STOR_FRAME_HDR_BYTES];
	struct stor_cursor c;
	struct stor_frame f;
	struct stat st;
	int64_t t = INT64_MAX;
	int fd;

	stor_seg_name(name, seq);
	fd = openat(r->dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return t;
	if (fstat(fd, &st) == 0 && st.st_size >= STOR_HDR_BYTES + STOR_FRAME_HDR_BYTES &&
	    stor_cursor_init(&c, r->ops, fd, (uint64_t)st.st_size) == 0) {
		if (pread(fd, tail, sizeof(tail), st.st_size - (off_t)sizeof(tail)) ==
		    sizeof(tail) && stor_frame_peek(tail, &f) == 0 &&
		    (f.flags & STOR_FRAME_SEAL) && stor_frame_crc_ok(c.hdr.salt, tail, &f) &&
		    c.hdr.first_seq == seq)
			t = f.t_last_ns;
		stor_cursor_done(&c);
	}
	close(fd);
	return t;
}

int stor_reader_seek_time(stor_reader_t *r, int64_t t_ns)
{
	uint64_t *seqs;
	size_t n, i;
	int ret;

	if (!r)
		return -EINVAL;
	ret = stor_seg_list(r->dirfd, &seqs, &n);
	if (ret < 0)
		return ret;
	seg_close(r);
	/* Record times need not be monotonic (clock steps), so no bisection;
	   but a closed segment whose seal says all its records are older can
	   be skipped without reading its frames. */
	for (i = 0; i + 1 < n && seal_t_last(r, seqs[i]) < t_ns; i++)
		;
	r->next_min_seg = n ? seqs[i] : 0;
	free(seqs);
	r->min_seq = 0;
	r->min_t = t_ns;
	r->by_time = true;
	return 0;
}

void stor_reader_error(const stor_reader_t *r, uint64_t *ret_segment, uint64_t *ret_offset)
{
	if (!r)
		return;
	if (ret_segment)
		*ret_segment = r->err_seg;
	if (ret_offset)
		*ret_offset = r->err_off;
}
