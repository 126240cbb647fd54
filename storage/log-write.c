/* SPDX-License-Identifier: MIT */
/*
 * log-write.c - the log's write path below the API: the write buffer,
 * frames and gap marks into it, flush and sync, and the active segment's
 * life (allocate or recycle the spare, header, seal and close, roll).  The
 * order of writes and syncs is specified in storage/DESIGN.md; comments
 * here say why.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "log-private.h"
#include "basic/clock.h"

static int write_full(stor_log_t *log, const uint8_t *buf, size_t len, uint64_t off,
		      size_t *ret_done)
{
	size_t done = 0;
	int r = 0;

	while (done < len) {
		ssize_t w = log->ops->pwrite(log->ops->ctx, log->fd, buf + done, len - done,
					     (off_t)(off + done));

		if (w == -EINTR)
			continue;
		if (w <= 0) {
			/* A zero-byte write makes no progress: treat it as an I/O
			   error rather than loop forever. */
			r = w < 0 ? (int)w : -EIO;
			break;
		}
		done += (size_t)w;
	}
	*ret_done = done;
	return r;
}

int stor_log_segs_push(stor_log_t *log, uint64_t first_seq, uint64_t bytes)
{
	if (log->nsegs && log->segs[log->nsegs - 1].first_seq == first_seq) {
		/* An empty segment recreated under the same name. */
		log->segs[log->nsegs - 1] = (struct seg_info){ first_seq, bytes, INT64_MIN };
		return 0;
	}
	if (log->nsegs == log->segs_cap) {
		size_t cap = log->segs_cap ? log->segs_cap * 2 : 16;
		struct seg_info *n = realloc(log->segs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		log->segs = n;
		log->segs_cap = cap;
	}
	log->segs[log->nsegs++] = (struct seg_info){ first_seq, bytes, INT64_MIN };
	return 0;
}

static void abandon(stor_log_t *log, int err)
{
	/* After a failed write or fdatasync the kernel may have dropped the
	   dirty pages and cleared the error: a retried fsync would succeed
	   without the data.  So the segment is never written again. */
	note(log, err);
	log->ops->close(log->ops->ctx, log->fd);
	log->fd = -1;
	if (log->unsynced_records) {
		if (!log->ev.lost_first_seq)
			log->ev.lost_first_seq = log->confirmed_seq;
		log->ev.lost_unsynced += log->unsynced_records;
		log->stats.lost_unsynced += log->unsynced_records;
	}
	log->ev.segments_abandoned++;
	log->stats.segments_abandoned++;
	log->unsynced_records = 0;
	log->unsynced_since_ns = 0;
	log->buf_len = 0;
	log->segs[log->nsegs - 1].bytes = log->woff;
	/* Records below next_seq are now durable or reported lost. */
	log->confirmed_seq = log->next_seq;
}

static int seg_allocate(stor_log_t *log)
{
	int r;

	do {
		r = log->ops->allocate(log->ops->ctx, log->fd, 0, (off_t)log->segment_bytes);
	} while (r == -ENOSPC && stor_log_free_forwarded(log) > 0);
	if (r == -EOPNOTSUPP || r == -ENOSYS) {
		log->prealloc = 0;
		return 0; /* no preallocation on this fs: still correct, slower */
	}
	if (r == -ENOSPC) {
		/* Not room for a whole segment (and nothing forwarded to free):
		   write without preallocation rather than refuse every record.
		   That is safe: a write that then runs out of space keeps its
		   whole frames and drops the rest, counted and marked (GAP),
		   exactly as on a filesystem without fallocate.  Said through
		   last_error. */
		note(log, r);
		log->prealloc = 0;
		return 0;
	}
	if (r == 0)
		log->prealloc = log->segment_bytes;
	return r;
}

static int seg_write_header(stor_log_t *log, uint64_t first_seq)
{
	struct stor_seg_hdr h = {
		.first_seq = first_seq,
		.config_hash = log->config_hash,
		.created_ns = now_ns(log, CLOCK_REALTIME),
	};
	uint8_t buf[STOR_HDR_BYTES];
	size_t done;
	int r;

	/* A fresh salt per file generation: frames left over from an older
	   file of the same name can never validate against it. */
	if (getrandom(&h.salt, sizeof(h.salt), 0) != sizeof(h.salt))
		h.salt = (uint64_t)basic_now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32);
	memcpy(h.boot_id, log->boot_id, 16);
	memcpy(h.log_id, log->log_id, sizeof(h.log_id));
	memcpy(h.vehicle, log->vehicle, sizeof(h.vehicle));
	stor_seg_hdr_encode(&h, buf);
	do {
		r = write_full(log, buf, sizeof(buf), 0, &done);
	} while (r == -ENOSPC && stor_log_free_forwarded(log) > 0);
	log->salt = h.salt;
	return r;
}

/*
 * Reuse the spare as segment name: the new header (new salt, which makes
 * every frame of its previous life invalid) is written while it is still
 * the spare, so no reader ever finds the old header under the new name.
 * 0 with log->fd set, or -errno (then there is no spare any more).
 */
static int recycle_spare(stor_log_t *log, const char *name, uint64_t first_seq)
{
	int r;

	if (!log->spare_bytes || !log->ops->rename)
		return -ENOENT;
	log->spare_bytes = 0;
	r = log->ops->open(log->ops->ctx, log->dirfd, SPARE_NAME, O_RDWR | O_NOFOLLOW, 0);
	if (r < 0)
		return r;
	log->fd = r;
	r = seg_write_header(log, first_seq);
	if (r == 0)
		r = log->ops->rename(log->ops->ctx, log->dirfd, SPARE_NAME, name);
	if (r < 0) {
		log->ops->close(log->ops->ctx, log->fd);
		log->fd = -1;
		log->ops->unlink(log->ops->ctx, log->dirfd, SPARE_NAME);
	}
	return r;
}

/*
 * Create the segment for next_seq: header, preallocation, fdatasync, then
 * fsync of the directory, so the name and the header are durable before
 * any record in it can be confirmed.  Records dropped while there was no
 * segment (gap_count) are not forgotten: the segment starts at the first
 * of them and its first frame is their GAP mark (written with the next
 * append), so the seq chain runs unbroken from one segment to the next and
 * a reader can tell a drop from a missing segment file.
 */
static int seg_create(stor_log_t *log)
{
	char name[STOR_SEG_NAME_LEN];
	uint64_t first = log->gap_count ? log->gap_first : log->next_seq;
	int r;

	seg_name(name, first);
	r = recycle_spare(log, name, first);
	if (r < 0) {
		do {
			/* O_NOFOLLOW: never write through a symbolic link. */
			r = log->ops->open(log->ops->ctx, log->dirfd, name,
					   O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
		} while (r == -ENOSPC && stor_log_free_forwarded(log) > 0);
		if (r < 0)
			return note(log, r);
		log->fd = r;
		r = seg_write_header(log, first);
	}
	if (r == 0)
		r = seg_allocate(log);
	if (r == 0)
		r = log->ops->datasync(log->ops->ctx, log->fd);
	if (r == 0)
		r = log->ops->dirsync(log->ops->ctx, log->dirfd);
	if (r == 0)
		r = stor_log_segs_push(log, first, log->prealloc > STOR_HDR_BYTES ?
			      log->prealloc : STOR_HDR_BYTES);
	if (r < 0) {
		log->ops->close(log->ops->ctx, log->fd);
		log->fd = -1;
		log->ops->unlink(log->ops->ctx, log->dirfd, name);
		return note(log, r);
	}
	log->woff = STOR_HDR_BYTES;
	log->seg_tmin = INT64_MAX;
	log->seg_tmax = INT64_MIN;
	log->stats.segments = log->nsegs;
	return 0;
}

/* Mark the records dropped since the last frame, so the chain holds. */
void stor_log_buf_put_gap(stor_log_t *log)
{
	while (log->gap_count) {
		uint32_t n = log->gap_count > UINT32_MAX ? UINT32_MAX : (uint32_t)log->gap_count;

		stor_log_buf_put(log, &(struct stor_frame){ .flags = STOR_FRAME_GAP,
			.first_seq = log->gap_first, .count = n }, NULL);
		log->gap_first += n;
		log->gap_count -= n;
	}
}

/* Bytes of the whole frames within the first n bytes of buf, and records. */
static size_t buf_whole_frames(const stor_log_t *log, size_t n, uint64_t *ret_records)
{
	size_t off = 0;
	uint64_t recs = 0;
	struct stor_frame f;

	while (off < log->buf_len && stor_frame_peek(log->buf + off, &f) == 0 &&
	       off + stor_frame_size(f.len) <= n) {
		if (!(f.flags & STOR_FRAME_GAP))
			recs += f.count;
		off += stor_frame_size(f.len);
	}
	*ret_records = recs;
	return off;
}

/* ENOSPC left frames from off unwritten: drop them whole, exactly counted. */
static void buf_drop_from(stor_log_t *log, size_t off)
{
	struct stor_frame f;
	uint64_t recs = 0;

	for (size_t o = off; o < log->buf_len; o += stor_frame_size(f.len)) {
		stor_frame_peek(log->buf + o, &f);
		if (o == off && !log->gap_count)
			log->gap_first = f.first_seq;
		log->gap_count += f.count;
		if (!(f.flags & STOR_FRAME_GAP))
			recs += f.count;
	}
	log->stats.dropped += recs;
	log->ev.dropped_nospace += recs;
	log->unsynced_records -= recs;
	log->buf_len = 0;
}

/* Write the buffer at woff.  On ENOSPC whole frames are kept, the rest are
   dropped and counted (never a partial record).  Other errors abandon. */
int stor_log_flush(stor_log_t *log)
{
	size_t done, whole;
	uint64_t recs;
	int r;

	while (log->buf_len) {
		r = write_full(log, log->buf, log->buf_len, log->woff, &done);
		if (r == 0) {
			/* Start the writeback now, so the fdatasync at the end of
			   the window finds less to wait for.  A hint only: its
			   errors come back from that fdatasync. */
			if (log->ops->writeback)
				(void)log->ops->writeback(log->ops->ctx, log->fd, (off_t)log->woff,
							  (off_t)log->buf_len);
			log->woff += log->buf_len;
			log->buf_len = 0;
			break;
		}
		if (r != -ENOSPC) {
			abandon(log, r);
			return r;
		}
		/* The torn frame after the whole ones will be overwritten by the
		   next write at woff, or cut by recovery. */
		whole = buf_whole_frames(log, done, &recs);
		log->woff += whole;
		memmove(log->buf, log->buf + whole, log->buf_len - whole);
		log->buf_len -= whole;
		if (stor_log_free_forwarded(log) <= 0) {
			buf_drop_from(log, 0);
			return note(log, -ENOSPC);
		}
	}
	return 0;
}

int stor_log_sync_now(stor_log_t *log)
{
	int r, rf;

	if (log->fd < 0)
		return 0;
	rf = stor_log_flush(log);
	if (log->fd < 0)
		return rf;
	r = log->ops->datasync(log->ops->ctx, log->fd);
	if (r < 0) {
		abandon(log, r);
		return r;
	}
	log->confirmed_seq = log->next_seq;
	log->unsynced_records = 0;
	log->unsynced_since_ns = 0;
	log->stats.syncs++;
	return rf;
}

/*
 * Close the active segment: seal frame, cut the unused preallocation,
 * fdatasync.  The seal lets a reader prove the segment ended cleanly.
 */
int stor_log_seg_close(stor_log_t *log)
{
	struct stor_frame seal = {
		.flags = STOR_FRAME_SEAL,
		.first_seq = log->next_seq,
		.t_first_ns = log->seg_tmin <= log->seg_tmax ? log->seg_tmin : 0,
		.t_last_ns = log->seg_tmin <= log->seg_tmax ? log->seg_tmax : 0,
	};
	int r;

	if (log->fd < 0)
		return 0;
	/* Mark records dropped at the end, so the chain still holds. */
	stor_log_buf_put_gap(log);
	stor_log_buf_put(log, &seal, NULL);
	r = stor_log_flush(log);
	if (r == -ENOSPC && log->fd >= 0) {
		/* The seal was dropped with the buffer: the segment stays open
		   (sealed later, or by recovery), but what was written must
		   still become durable. */
		(void)stor_log_sync_now(log);
		return r;
	}
	if (r == 0 && log->fd >= 0)
		r = log->ops->truncate(log->ops->ctx, log->fd, (off_t)log->woff);
	if (log->fd < 0)
		return r;
	if (r == 0)
		r = stor_log_sync_now(log);
	if (log->fd < 0)
		return r;
	log->segs[log->nsegs - 1].bytes = log->woff;
	log->segs[log->nsegs - 1].t_last_ns = seal.t_last_ns;
	log->ops->close(log->ops->ctx, log->fd);
	log->fd = -1;
	return note(log, r);
}

int stor_log_ensure_segment(stor_log_t *log)
{
	if (log->fd >= 0)
		return 0;
	return seg_create(log);
}

int stor_log_roll(stor_log_t *log)
{
	int r = stor_log_seg_close(log);

	/* No room for the seal: keep the segment open and try again at the
	   next append, rather than leave a closed segment without a seal. */
	if (r < 0 && log->fd >= 0)
		return r;
	if (r < 0 && r != -ENOSPC) {
		stor_log_retain(log);
		return r;
	}
	r = seg_create(log);
	/* After the create, so the new segment's preallocation counts too. */
	stor_log_retain(log);
	return r;
}
