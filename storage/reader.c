/* SPDX-License-Identifier: MIT */
/*
 * reader.c - iterate a log directory by sequence number or time, beside a
 * live writer.  Whatever cannot be read (a damaged frame, a segment that is
 * not a readable segment file, a seq range no segment holds) is reported
 * once (-EBADMSG, stor_reader_fault()) with the records it cost, and skipped.
 * One job, over 600 lines: reading a log back; the seeks by seq and time,
 * the time limit and last_before all stand on the same segment walk and
 * seal reads (seg_load, loaded_seal), which a split would have to share.
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
	uint64_t chain_seq;    /* where the next segment must start for no seq to be
				  missing; 0 = unknown (at the start, after a seek) */
	uint64_t min_seq;      /* skip records entirely below this (seek) */
	uint64_t last_end;     /* seq after the last record returned, 0: none since
				  the start or a seek; below it is a repeat */
	uint64_t last_seg;     /* the segment it came from */
	int64_t min_t;         /* skip records with t_last below this (seek) */
	int64_t max_t;         /* skip closed segments sealed as all at or after this
				  (stor_reader_limit_time); INT64_MAX: none */
	uint64_t beyond_seg;   /* with max_t: from this segment on, every one is
				  sealed as all at or after it (UINT64_MAX: none) */
	uint64_t beyond_newest; /* ... as found with this newest segment, 0: not yet */
	bool by_time;
	bool has_fault;
	struct stor_fault fault;
};

int stor_reader_open_ops(const char *dir, const struct stor_dev_ops *ops,
			 stor_reader_t **ret_reader)
{
	stor_reader_t *r;

	if (!dir || !ret_reader)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ops = ops ? ops : stor_dev_posix_ops();
	r->max_t = INT64_MAX;
	r->beyond_seg = UINT64_MAX;
	r->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r->dirfd < 0) {
		int e = -errno;

		free(r);
		return e;
	}
	*ret_reader = r;
	return 0;
}

int stor_reader_open(const char *dir, stor_reader_t **ret_reader)
{
	return stor_reader_open_ops(dir, NULL, ret_reader);
}

static void seg_close(stor_reader_t *r)
{
	if (!r->open)
		return;
	r->ops->close(r->ops->ctx, r->c.fd);
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

/*
 * Record a fault and return -EBADMSG.  [first, end) is what it cost (end 0:
 * up to the end of the log; first == end: nothing).  The records below a
 * pending seek target were not asked for: a range wholly below it is no
 * loss to the caller (0: nothing to report), one reaching past it is cut
 * at it.
 */
static int fault(stor_reader_t *r, enum stor_fault_kind kind, int err, uint32_t type,
		 uint64_t seg, uint64_t off, uint64_t first, uint64_t end)
{
	if (r->min_seq && !r->by_time && first < r->min_seq && (first < end || !end)) {
		if (end && end <= r->min_seq)
			return 0;
		first = r->min_seq;
	}
	r->fault = (struct stor_fault){ .kind = kind, .err = err, .type = type, .segment = seg,
					.offset = off, .lost_first = first, .lost_end = end };
	r->has_fault = true;
	return -EBADMSG;
}

/* First segment with first_seq >= min, and the one after it (0 if none). */
static int seg_find(stor_reader_t *r, uint64_t min, uint64_t *ret_seq, bool *ret_more,
		    uint64_t *ret_next)
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
		*ret_next = i + 1 < n ? seqs[i + 1] : 0;
	}
	free(seqs);
	return ret;
}

/* Open segment seq into the cursor: 0, or -errno (the fd is closed). */
static int seg_load(stor_reader_t *r, uint64_t seq, uint32_t *ret_type)
{
	char name[STOR_SEG_NAME_LEN];
	uint64_t size = 0;
	int fd, ret;

	stor_seg_name(name, seq);
	fd = stor_seg_open(r->ops, r->dirfd, name, O_RDONLY, &size, ret_type);
	if (fd < 0)
		return fd;
	ret = size < STOR_HDR_V1_BYTES ? -ENODATA : stor_cursor_init(&r->c, r->ops, fd, size);
	if (ret == 0 && r->c.hdr.first_seq != seq) {
		/* A header for another name: never read its frames. */
		stor_cursor_done(&r->c);
		ret = -EXDEV;
	}
	if (ret < 0)
		r->ops->close(r->ops->ctx, fd);
	return ret;
}

static bool loaded_seal(stor_reader_t *r, struct stor_frame *f);

/*
 * The run of segments at the end of the log whose seals prove all their
 * records at or after max_t (r->beyond_seg), found from the newest one
 * back, again whenever a newer segment appeared.  Only those are skipped
 * by the limit: a segment before a clock step back can hold records of
 * the wanted time in a later one, and Batches the caller must read
 * before them (a channel dictionary); past the run, no later record is
 * in time.  A newest segment without a seal (a live log) is read whole
 * anyway and does not end the run: a step back inside it is the one case
 * left (storage/DESIGN.md).  Uses r->c: called while no segment is open.
 */
static int find_beyond(stor_reader_t *r)
{
	uint64_t *seqs;
	size_t n;
	int ret = stor_seg_list(r->dirfd, &seqs, &n);

	if (ret < 0)
		return ret;
	if (n && seqs[n - 1] != r->beyond_newest) {
		r->beyond_newest = seqs[n - 1];
		r->beyond_seg = UINT64_MAX;
		for (size_t i = n; i-- > 0;) {
			struct stor_frame f;
			uint32_t type;
			bool beyond, sealed;

			if (seg_load(r, seqs[i], &type) < 0)
				break;
			sealed = loaded_seal(r, &f);
			beyond = sealed && f.t_first_ns >= r->max_t;
			r->ops->close(r->ops->ctx, r->c.fd);
			stor_cursor_done(&r->c);
			if (i == n - 1 && !sealed)
				continue; /* the live tail: read whole anyway */
			if (!beyond)
				break;
			r->beyond_seg = seqs[i];
		}
	}
	free(seqs);
	return 0;
}

static int seg_open_next(stor_reader_t *r)
{
	uint64_t seq, next;
	uint32_t type;
	bool more;
	int ret;

	for (;;) {
		ret = seg_find(r, r->next_min_seg, &seq, &more, &next);
		if (ret <= 0)
			return ret;
		/* (a segment that repeated seqs ended below what was read) */
		if (r->chain_seq && r->chain_seq < r->last_end)
			r->chain_seq = r->last_end;
		if (r->chain_seq && seq > r->chain_seq) {
			/* The previous segment ended before this one starts:
			   the segments between them are gone.  Said once; the
			   next call opens this one. */
			uint64_t first = r->chain_seq;

			r->chain_seq = seq;
			ret = fault(r, STOR_FAULT_MISSING, -ENOENT, 0, seq, 0, first, seq);
			if (ret < 0)
				return ret;
		}
		r->next_min_seg = seq + 1;
		if (more && r->max_t != INT64_MAX) {
			if ((ret = find_beyond(r)) < 0)
				return ret;
			if (seq >= r->beyond_seg) {
				/* its header and seal were read there: all its
				   records at or after the limit (the seal's
				   t_first is the oldest), and so are all after
				   it; not one frame read, not opened again.  Its
				   records end where the next segment starts. */
				r->chain_seq = next;
				continue;
			}
		}
		ret = seg_load(r, seq, &type);
		if (ret == -ENOENT || ((ret == -EBADMSG || ret == -ENODATA) && !more)) {
			/* Deleted by retention meanwhile (the chain says if a
			   range is lost), or the newest segment while its
			   header is being written (or its creation failed and
			   it is being unlinked): look at that name again. */
			if (!more) {
				r->next_min_seg = seq;
				return 0;
			}
			continue;
		}
		if (ret < 0) {
			/* Cannot be read at all: skip it whole.  Its records
			   end where the next segment starts (unknown for the
			   newest one). */
			r->chain_seq = next;
			ret = fault(r, ret == -EXDEV ? STOR_FAULT_MISNAMED : STOR_FAULT_SEGMENT,
				    ret == -EXDEV ? -EBADMSG : ret, type, seq, 0, seq, next);
			if (ret < 0)
				return ret;
			continue; /* wholly below the seek target */
		}
		r->c.live_tail = !more;
		r->cur_seg = seq;
		r->open = true;
		r->chain_seq = 0;
		if (r->c.hdr_copy_damaged) {
			/* Readable through the other copy, but say so. */
			return fault(r, STOR_FAULT_HEADER_COPY, -EBADMSG, S_IFREG, seq,
				     (uint64_t)(r->c.hdr_copy_damaged - 1) * STOR_HDR_COPY_BYTES, seq, seq);
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
	uint64_t seq, next, first, off;
	bool more;
	int ret;

	if (r->c.sealed) {
		r->chain_seq = r->c.expect_seq;
		seg_close(r);
		return 1;
	}
	ret = seg_find(r, r->cur_seg + 1, &seq, &more, &next);
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
	/* Closed but never sealed: its end is not proven.  What it did not
	   hold up to the next segment is lost (an abandoned segment). */
	first = r->c.expect_seq > r->last_end ? r->c.expect_seq : r->last_end;
	off = r->c.off;
	seg_close(r);
	r->chain_seq = seq;
	return fault(r, STOR_FAULT_UNSEALED, -EBADMSG, S_IFREG, r->cur_seg, off, first,
		     first < seq ? seq : first);
}

/*
 * A read error inside the open segment.  In the newest one it is returned
 * (the caller may retry later); in a closed one the rest of the segment is
 * skipped and reported, so one bad spot does not hide the segments after it.
 */
static int seg_read_error(stor_reader_t *r, int err)
{
	uint64_t seq, next, first = r->c.expect_seq, off = r->c.off;
	bool more;
	int ret = seg_find(r, r->cur_seg + 1, &seq, &more, &next);

	if (ret <= 0)
		return ret < 0 ? ret : err;
	seg_close(r);
	r->chain_seq = seq;
	return fault(r, STOR_FAULT_SEGMENT, err, S_IFREG, r->cur_seg, off, first,
		     first < seq ? seq : first);
}

int stor_reader_next(stor_reader_t *r, struct stor_rec *ret_rec)
{
	struct stor_frame f;
	const uint8_t *p;
	uint64_t off, expect;
	int ret;

	if (!r || !ret_rec)
		return -EINVAL;
	for (;;) {
		if (!r->open) {
			ret = seg_open_next(r);
			if (ret <= 0)
				return ret;
		}
		expect = r->c.expect_seq;
		ret = stor_cursor_next(&r->c, &f, &p, &off);
		if (ret == -EBADMSG) {
			/* Resynchronised at a proven frame: the records between
			   are the damaged ones. */
			ret = fault(r, STOR_FAULT_FRAME, -EBADMSG, S_IFREG, r->cur_seg, r->c.bad_off,
				    expect, r->c.expect_seq);
			if (ret < 0)
				return ret;
			continue;
		}
		if (ret < 0) {
			ret = seg_read_error(r, ret);
			if (ret == 0)
				continue; /* below the seek target */
			return ret;
		}
		if (ret == 1 && skip(r, &f))
			continue;
		if (ret == 1 && r->last_end && f.first_seq < r->last_end) {
			/* Seqs already returned: whatever a segment's name
			   and header say, a seq is read once (the frame is
			   skipped whole; what it held above last_end is lost). */
			uint64_t end = f.first_seq + f.count;

			ret = fault(r, STOR_FAULT_REPEATED, -EEXIST, S_IFREG, r->cur_seg, off, f.first_seq, end);
			r->fault.other_segment = r->last_seg;
			r->fault.repeat_end = end < r->last_end ? end : r->last_end;
			return ret;
		}
		if (ret == 1)
			break;
		ret = seg_end(r);
		if (ret == 0 && !r->open)
			continue; /* an unsealed end below the seek target */
		if (ret <= 0)
			return ret;
	}
	r->last_end = f.first_seq + f.count;
	r->last_seg = r->cur_seg;
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
	r->chain_seq = 0;
	r->last_end = 0;
	return 0;
}

/* Newest record time of a closed segment, from its seal; INT64_MAX if it
   cannot be proven (no good seal): then the segment must be scanned. */
/* The seal frame at the end of the segment loaded in r->c, if it has a
   good one. */
static bool loaded_seal(stor_reader_t *r, struct stor_frame *f)
{
	uint8_t tail[STOR_FRAME_HDR_BYTES];

	return r->c.file_size >= (uint64_t)r->c.hdr.hdr_bytes + STOR_FRAME_HDR_BYTES &&
	       r->ops->pread(r->ops->ctx, r->c.fd, tail, sizeof(tail),
			     (off_t)(r->c.file_size - sizeof(tail))) == sizeof(tail) &&
	       stor_frame_peek(tail, f) == 0 && (f->flags & STOR_FRAME_SEAL) &&
	       stor_frame_crc_ok(r->c.hdr.salt, tail, f);
}

static int64_t seal_t_last(stor_reader_t *r, uint64_t seq)
{
	struct stor_frame f;
	int64_t t = INT64_MAX;
	uint32_t type;

	if (seg_load(r, seq, &type) < 0)
		return t;
	if (loaded_seal(r, &f))
		t = f.t_last_ns;
	r->ops->close(r->ops->ctx, r->c.fd);
	stor_cursor_done(&r->c);
	return t;
}

int stor_reader_limit_time(stor_reader_t *r, int64_t t_ns)
{
	if (!r)
		return -EINVAL;
	r->max_t = t_ns;
	r->beyond_newest = 0;
	r->beyond_seg = UINT64_MAX;
	return 0;
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
	r->chain_seq = 0;
	r->last_end = 0;
	return 0;
}

/*
 * Why from the newest segment back: the last record starting before t_ns
 * ends a time window's seq range (a full-rate request, uplink/
 * fwd-resend.c).  Times need not rise (a clock stepped back; records
 * stamped by the clock beside a replay's stamped by its trace), so the
 * first record reaching t_ns does not end it: a later one may start
 * before it.  A closed segment whose seal proves every record at or after
 * t_ns (its t_first is the oldest) is passed with its header and seal
 * read; the first one back that is not is read whole, and holds it.
 */
int stor_reader_last_before(stor_reader_t *r, int64_t t_ns, struct stor_rec *ret)
{
	uint64_t *seqs;
	size_t n;
	int k = 0, ret_ = 0;
	bool found = false;

	if (!r || !ret)
		return -EINVAL;
	if ((ret_ = stor_seg_list(r->dirfd, &seqs, &n)) < 0)
		return ret_;
	seg_close(r);
	for (size_t i = n; i-- > 0 && !found && ret_ >= 0;) {
		struct stor_frame f;
		struct stor_rec rec;
		uint32_t type;
		bool sealed;

		if (seg_load(r, seqs[i], &type) < 0)
			continue; /* deleted meanwhile, or unreadable: the older ones */
		sealed = loaded_seal(r, &f);
		r->ops->close(r->ops->ctx, r->c.fd);
		stor_cursor_done(&r->c);
		if (sealed && f.t_first_ns >= t_ns)
			continue;
		if ((ret_ = stor_reader_seek_seq(r, seqs[i])) < 0)
			break;
		while ((k = stor_reader_next(r, &rec)) == 1 && (i + 1 == n || rec.first_seq < seqs[i + 1]))
			if (rec.t_first_ns < t_ns) {
				*ret = rec;
				ret->payload = NULL; /* the reader's buffer: gone at the next read */
				found = true;
			}
		if (k < 0)
			ret_ = k;
	}
	free(seqs);
	seg_close(r);
	return ret_ < 0 ? ret_ : found;
}

void stor_reader_error(const stor_reader_t *r, uint64_t *ret_segment, uint64_t *ret_offset)
{
	if (!r)
		return;
	if (ret_segment)
		*ret_segment = r->fault.segment;
	if (ret_offset)
		*ret_offset = r->fault.offset;
}

int stor_reader_fault(const stor_reader_t *r, struct stor_fault *ret_fault)
{
	if (!r || !ret_fault)
		return -EINVAL;
	if (!r->has_fault)
		return -ENOENT;
	*ret_fault = r->fault;
	return 0;
}

/* 1 and *ret_off: the first byte other than zero at or after off; 0: none. */
static int first_nonzero(stor_reader_t *r, uint64_t off, uint64_t *ret_off)
{
	uint8_t buf[4096];

	while (off < r->c.file_size) {
		size_t want = r->c.file_size - off < sizeof(buf) ? (size_t)(r->c.file_size - off) : sizeof(buf);
		ssize_t n = r->ops->pread(r->ops->ctx, r->c.fd, buf, want, (off_t)off);

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i]) {
				*ret_off = off + (uint64_t)i;
				return 1;
			}
		off += (uint64_t)n;
	}
	return 0;
}

int stor_reader_tail(stor_reader_t *r, struct stor_tail *ret)
{
	struct stat st;
	uint64_t first;
	int k;

	if (!r || !ret)
		return -EINVAL;
	*ret = (struct stor_tail){ 0 };
	if (!r->open || r->c.sealed)
		return 0;
	/* The file as it is now: the writer may have grown it, or rolled
	   (sealed and truncated it), since next() last looked. */
	if (fstat(r->c.fd, &st) < 0)
		return -errno;
	r->c.file_size = (uint64_t)st.st_size;
	ret->segment = r->cur_seg;
	ret->offset = r->c.off;
	ret->size = r->c.file_size;
	/* A writer preallocates its segment: zeros after the last frame are a
	   live log's room. */
	k = first_nonzero(r, r->c.off, &first);
	if (k <= 0)
		return k < 0 ? k : 1;
	/*
	 * Other bytes are not damage by themselves: on a live log they are
	 * what the writer wrote since next() returned 0 (a frame chaining on
	 * now), a pwrite being copied (a frame cut short), or a recycled
	 * file's frames of its earlier life (another salt: never provable).
	 * They are damage when they hide a record the reader could prove (a
	 * frame of this salt, with a later seq) that nothing chains on to.
	 * A writer's pwrite is copied in order, so once such a frame is
	 * visible, what was written before it is too: look at the end again
	 * after finding one, and it chains on if it was only being written.
	 */
	k = stor_cursor_ahead(&r->c);
	if (k == 1)
		k = stor_cursor_ahead(&r->c);
	if (k < 0)
		return k;
	if (k == 1) {
		ret->garbage = true;
		ret->garbage_offset = first;
	}
	return 1;
}
