/* SPDX-License-Identifier: MIT */
/*
 * log.c - the writer side of the flash log: open and recovery, append,
 * sync, segment roll, fault handling and retention.  The order of writes
 * and syncs is specified in storage/DESIGN.md; comments here say why.
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

#include "stor-private.h"
#include "basic/clock.h"

#define BUF_BYTES (1u << 20) /* write buffer: >= 64 KiB, and holds the largest frame */
#define SEAL_BYTES STOR_FRAME_HDR_BYTES
#define NS_PER_MS 1000000LL
#define SPARE_NAME STOR_SPARE_NAME

struct seg_info {
	uint64_t first_seq;
	uint64_t bytes;    /* bytes on disk (the active one: preallocated size) */
	int64_t t_last_ns; /* INT64_MIN until read from the seal */
};

struct stor_log {
	char *dir;
	char vehicle[STOR_VEHICLE_MAX + 1];
	uint64_t config_hash;
	uint8_t boot_id[16];
	uint8_t log_id[STOR_LOG_ID_BYTES]; /* in every segment header (see log_id_load) */
	uint64_t segment_bytes;
	uint32_t sync_window_ms;
	uint64_t retention_bytes, retention_age_s, retention_min_age_s, keep_recent_s;
	const struct stor_dev_ops *ops;
	const struct stor_clock *clock; /* NULL: the system's */
	struct stor_holds *holds;       /* the holds file as last read */
	struct stat holds_st;           /* its identity then (st_ino 0: none) */
	uint32_t window_level;          /* enum stor_window_alarm of the last pass */
	int dirfd;

	struct seg_info *segs; /* oldest first; the active segment is the last */
	size_t nsegs, segs_cap;
	uint64_t spare_bytes;  /* size of SPARE_NAME, 0 if there is none */

	int fd;                /* active segment, -1 if none */
	uint64_t salt;
	uint64_t woff;         /* file offset where buf will be written */
	uint64_t prealloc;     /* bytes fallocate'd for the active segment */
	int64_t seg_tmin, seg_tmax;
	uint8_t *buf;
	size_t buf_len;

	uint64_t next_seq, confirmed_seq, forwarded_seq;
	uint64_t unsynced_records; /* in the active segment since the last sync */
	uint64_t gap_first, gap_count; /* dropped records not yet marked on disk */
	int64_t unsynced_since_ns;
	int64_t last_retention_ns;

	struct stor_stats stats;
	struct stor_events ev;
};


static int64_t now_ns(const stor_log_t *log, clockid_t clk)
{
	return log->clock ? log->clock->now(log->clock->ctx, clk) : basic_now_ns(clk);
}

static int note(stor_log_t *log, int r)
{
	if (r < 0)
		log->stats.last_error = log->ev.last_error = r;
	return r;
}

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

static void seg_name(char buf[STOR_SEG_NAME_LEN], uint64_t seq)
{
	stor_seg_name(buf, seq);
}

static int segs_push(stor_log_t *log, uint64_t first_seq, uint64_t bytes)
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

static uint64_t seg_end_seq(const stor_log_t *log, size_t i)
{
	return i + 1 < log->nsegs ? log->segs[i + 1].first_seq : log->next_seq;
}

/* Retention ---------------------------------------------------------- */

/* t_last of a closed segment from its seal, else the file's mtime. */
static int64_t seg_t_last(stor_log_t *log, size_t i)
{
	if (log->segs[i].t_last_ns == INT64_MIN)
		log->segs[i].t_last_ns = stor_seg_t_last(log->ops, log->dirfd, log->segs[i].first_seq);
	return log->segs[i].t_last_ns;
}

/*
 * Retire segment i (the oldest unless holds keep older ones): recycled as
 * the spare when asked and there is none yet (its blocks are already
 * written: overwriting them makes fdatasync cheaper than converting fresh
 * fallocate'd extents), else unlinked.
 */
static void delete_seg(stor_log_t *log, size_t i, bool recycle)
{
	char name[STOR_SEG_NAME_LEN];
	uint64_t first = log->segs[i].first_seq, end = seg_end_seq(log, i), unfwd = 0;
	int r;

	seg_name(name, first);
	recycle = recycle && !log->spare_bytes && log->ops->rename;
	if (recycle)
		r = log->ops->rename(log->ops->ctx, log->dirfd, name, SPARE_NAME);
	else
		r = log->ops->unlink(log->ops->ctx, log->dirfd, name);
	if (r < 0 && r != -ENOENT) {
		note(log, r);
		return;
	}
	/* Make the delete durable before its space is counted on. */
	note(log, log->ops->dirsync(log->ops->ctx, log->dirfd));
	if (recycle && r == 0)
		log->spare_bytes = log->segs[i].bytes ? log->segs[i].bytes : 1;
	if (end > log->forwarded_seq)
		unfwd = end - (first > log->forwarded_seq ? first : log->forwarded_seq);
	log->stats.retention_deleted += end - first;
	log->stats.retention_unforwarded += unfwd;
	log->ev.retention_unforwarded += unfwd;
	if (i > 0) {
		/* deleted while an older, held segment stays */
		log->stats.retention_past_held++;
		log->ev.past_held++;
	}
	/* For seg_held() the segment after it now starts where this one
	   started: earlier, so whatever held it still does. */
	memmove(log->segs + i, log->segs + i + 1, (log->nsegs - i - 1) * sizeof(*log->segs));
	log->nsegs--;
}

static uint64_t disk_bytes(const stor_log_t *log)
{
	uint64_t sum = log->spare_bytes;

	for (size_t i = 0; i < log->nsegs; i++)
		sum += log->segs[i].bytes;
	/* Without preallocation the active segment grows as it is written. */
	if (log->fd >= 0 && log->nsegs && log->woff > log->segs[log->nsegs - 1].bytes)
		sum += log->woff - log->segs[log->nsegs - 1].bytes;
	return sum;
}

/* The active segment (if any) is the last one and is never deleted. */
static size_t deletable(const stor_log_t *log)
{
	/* (while a segment is being created the fd may come before its entry) */
	return log->fd >= 0 && log->nsegs ? log->nsegs - 1 : log->nsegs;
}

/* Does a hold keep segment i?  Its span starts where the one before it
   ended (the oldest: unknown, so any hold reaching back to its end). */
static bool seg_held(stor_log_t *log, size_t i)
{
	int64_t start = i ? seg_t_last(log, i - 1) : INT64_MIN, last = seg_t_last(log, i);

	for (size_t k = 0; k < log->holds->n; k++)
		if (stor_hold_covers(&log->holds->h[k], start, last))
			return true;
	return false;
}

static void hold_fault(stor_log_t *log, int r, unsigned line)
{
	if (r < 0 && log->stats.hold_error != r) {
		log->ev.hold_error = r;
		log->ev.hold_error_line = line;
	}
	log->stats.hold_error = r;
	log->stats.hold_error_line = line;
}

/*
 * Read the holds file again if it changed (a trigger added a hold, `hold
 * release` removed one: it is replaced by rename, so its inode changes),
 * and end the holds whose period is over.  While the file cannot be read
 * the last good copy is not trusted either: retention deletes nothing
 * (see retention()).
 */
static void holds_refresh(stor_log_t *log, int64_t now)
{
	struct stat st = { 0 };
	unsigned line = 0;
	size_t expired = 0;
	int r;

	if (fstatat(log->dirfd, STOR_HOLDS_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno != ENOENT) {
		hold_fault(log, -errno, 0);
		return;
	}
	if (st.st_ino != log->holds_st.st_ino || st.st_size != log->holds_st.st_size ||
	    st.st_mtim.tv_sec != log->holds_st.st_mtim.tv_sec ||
	    st.st_mtim.tv_nsec != log->holds_st.st_mtim.tv_nsec || log->stats.hold_error) {
		r = stor_holds_read(log->dir, log->holds, &line);
		hold_fault(log, r, line);
		if (r < 0)
			return;
		log->holds_st = st;
	}
	for (size_t k = 0; k < log->holds->n; k++)
		if (log->holds->h[k].expiry_ns && log->holds->h[k].expiry_ns <= now)
			expired++;
	if (!expired)
		return;
	r = stor_holds_expire(log->dir, now, &expired, &line);
	if (r == 0) {
		log->ev.holds_expired += expired;
		log->holds_st.st_ino = 0; /* read it again at the next pass */
		r = stor_holds_read(log->dir, log->holds, &line);
	}
	hold_fault(log, r, line);
}

/* Held segments and bytes, and the age of the oldest record kept. */
static void held_stats(stor_log_t *log, int64_t now)
{
	log->stats.held_segments = log->stats.held_bytes = 0;
	for (size_t i = 0; i < deletable(log); i++) {
		if (seg_held(log, i)) {
			log->stats.held_segments++;
			log->stats.held_bytes += log->segs[i].bytes;
		}
	}
	log->stats.holds = (uint32_t)log->holds->n;
	log->stats.window_ns = log->nsegs > 1 && seg_t_last(log, 0) != INT64_MIN ? now - seg_t_last(log, 0) : 0;
}

/* What the floor needs at the rate of the newest closed segments on disk
   (up to 8: the rate now, not the day's average; their bytes over the
   time they span), with the active segment and the spare; 0 while fewer
   than three closed segments tell a rate. */
static uint64_t window_need(stor_log_t *log)
{
	size_t k = deletable(log), lo = k > 9 ? k - 8 : 1;
	uint64_t bytes = 0;
	int64_t span;

	if (!log->retention_min_age_s || k < 3)
		return 0;
	span = seg_t_last(log, k - 1) - seg_t_last(log, lo - 1);
	if (span <= 0)
		return 0;
	for (size_t i = lo; i < k; i++)
		bytes += log->segs[i].bytes;
	return (uint64_t)((double)bytes * (double)log->retention_min_age_s * 1e9 / (double)span) +
	       2 * log->segment_bytes;
}

/* The budget the floor must fit in: retention_size, else the disk. */
static uint64_t window_budget(stor_log_t *log)
{
	struct statvfs v;

	if (log->retention_bytes)
		return log->retention_bytes;
	if (fstatvfs(log->dirfd, &v) < 0)
		return UINT64_MAX;
	return (uint64_t)v.f_bavail * v.f_frsize + disk_bytes(log);
}

/* Raise an alarm once when it appears or gets worse (not every pass). */
static void window_alarm(stor_log_t *log, uint32_t level, uint64_t need)
{
	if (level > log->window_level) {
		if (level > log->ev.window_alarm)
			log->ev.window_alarm = level;
		log->ev.window_need_bytes = need;
	}
	log->window_level = level;
	log->stats.window_alarm = level;
	log->stats.window_need_bytes = need;
}

/*
 * The segment retention may delete next: the oldest one no hold keeps and
 * no floor protects (deletable() if none).  *ret_young: the oldest unheld
 * one was younger than the floor.  Nor is one deleted whose newest record
 * is at or after recent (keep_recent_s: a trigger's pre window that a
 * hold may still claim; INT64_MAX: none), without an alarm: while holds
 * fill the budget every closed segment would otherwise go at the next
 * roll, and a trigger firing a moment later would find the start of its
 * window gone.
 */
static size_t victim(stor_log_t *log, int64_t young, int64_t recent, bool *ret_young)
{
	*ret_young = false;
	for (size_t i = 0; i < deletable(log); i++) {
		if (seg_held(log, i))
			continue;
		if (log->retention_min_age_s && seg_t_last(log, i) >= young) {
			*ret_young = true;
			return deletable(log);
		}
		if (seg_t_last(log, i) >= recent)
			return deletable(log);
		return i;
	}
	return deletable(log);
}

static void retention(stor_log_t *log)
{
	int64_t now = now_ns(log, CLOCK_REALTIME);
	int64_t cutoff = now - (int64_t)log->retention_age_s * 1000000000LL;
	int64_t young = now - (int64_t)log->retention_min_age_s * 1000000000LL;
	int64_t recent = log->keep_recent_s ? now - (int64_t)log->keep_recent_s * 1000000000LL : INT64_MAX;
	uint32_t level = STOR_WINDOW_OK;
	uint64_t need;

	log->last_retention_ns = now_ns(log, CLOCK_MONOTONIC);
	holds_refresh(log, now);
	/* A holds file we cannot read may name any segment: keep them all
	   until it is readable again (the fault is an event). */
	while (!log->stats.hold_error) {
		bool over = log->retention_bytes && disk_bytes(log) > log->retention_bytes;
		bool is_young;
		size_t i = victim(log, young, recent, &is_young), n = log->nsegs;

		if (over && is_young)
			level = STOR_WINDOW_DUE;
		if (i == deletable(log) || (!over && !(log->retention_age_s && seg_t_last(log, i) < cutoff)))
			break;
		/* The spare stays within the byte budget: with it the log
		   keeps one segment less. */
		delete_seg(log, i, true);
		if (log->nsegs == n)
			break; /* unlink failed: do not spin */
	}
	need = window_need(log);
	if (level == STOR_WINDOW_OK && need > window_budget(log))
		level = STOR_WINDOW_PROJECTED;
	window_alarm(log, level, need);
	held_stats(log, now);
}

/* ENOSPC: free the spare, else the oldest segment that was forwarded, no
   hold keeps and the floor allows.  1 if something was freed. */
static int free_forwarded(stor_log_t *log)
{
	int64_t young = now_ns(log, CLOCK_REALTIME) - (int64_t)log->retention_min_age_s * 1000000000LL;
	size_t n = log->nsegs, i;
	bool is_young;

	if (log->spare_bytes) {
		if (log->ops->unlink(log->ops->ctx, log->dirfd, SPARE_NAME) < 0)
			return 0;
		note(log, log->ops->dirsync(log->ops->ctx, log->dirfd));
		log->spare_bytes = 0;
		return 1;
	}
	if (log->stats.hold_error)
		return 0;
	/* A full disk does not wait for a trigger that may fire: recent
	   segments may go (INT64_MAX), the floor's may not. */
	i = victim(log, young, INT64_MAX, &is_young);
	if (is_young)
		window_alarm(log, STOR_WINDOW_DUE, window_need(log));
	if (i == deletable(log) || seg_end_seq(log, i) > log->forwarded_seq)
		return 0;
	delete_seg(log, i, false);
	return log->nsegs < n;
}

/* Segments ------------------------------------------------------------ */

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
	} while (r == -ENOSPC && free_forwarded(log) > 0);
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
	} while (r == -ENOSPC && free_forwarded(log) > 0);
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
		} while (r == -ENOSPC && free_forwarded(log) > 0);
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
		r = segs_push(log, first, log->prealloc > STOR_HDR_BYTES ?
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

static void buf_put(stor_log_t *log, const struct stor_frame *f, const void *payload)
{
	stor_frame_encode(log->salt, f, payload, log->buf + log->buf_len);
	log->buf_len += stor_frame_size(f->len);
}

/* GAP frames needed to mark the pending gap (one counts < 2^32 records). */
static uint64_t gap_frames(const stor_log_t *log)
{
	return (log->gap_count + UINT32_MAX - 1) / UINT32_MAX;
}

/* Mark the records dropped since the last frame, so the chain holds. */
static void buf_put_gap(stor_log_t *log)
{
	while (log->gap_count) {
		uint32_t n = log->gap_count > UINT32_MAX ? UINT32_MAX : (uint32_t)log->gap_count;

		buf_put(log, &(struct stor_frame){ .flags = STOR_FRAME_GAP,
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
static int flush(stor_log_t *log)
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
		if (free_forwarded(log) <= 0) {
			buf_drop_from(log, 0);
			return note(log, -ENOSPC);
		}
	}
	return 0;
}

static int sync_now(stor_log_t *log)
{
	int r, rf;

	if (log->fd < 0)
		return 0;
	rf = flush(log);
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
static int seg_close(stor_log_t *log)
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
	buf_put_gap(log);
	buf_put(log, &seal, NULL);
	r = flush(log);
	if (r == -ENOSPC && log->fd >= 0) {
		/* The seal was dropped with the buffer: the segment stays open
		   (sealed later, or by recovery), but what was written must
		   still become durable. */
		(void)sync_now(log);
		return r;
	}
	if (r == 0 && log->fd >= 0)
		r = log->ops->truncate(log->ops->ctx, log->fd, (off_t)log->woff);
	if (log->fd < 0)
		return r;
	if (r == 0)
		r = sync_now(log);
	if (log->fd < 0)
		return r;
	log->segs[log->nsegs - 1].bytes = log->woff;
	log->segs[log->nsegs - 1].t_last_ns = seal.t_last_ns;
	log->ops->close(log->ops->ctx, log->fd);
	log->fd = -1;
	return note(log, r);
}

static int ensure_segment(stor_log_t *log)
{
	if (log->fd >= 0)
		return 0;
	return seg_create(log);
}

static int roll(stor_log_t *log)
{
	int r = seg_close(log);

	/* No room for the seal: keep the segment open and try again at the
	   next append, rather than leave a closed segment without a seal. */
	if (r < 0 && log->fd >= 0)
		return r;
	if (r < 0 && r != -ENOSPC) {
		retention(log);
		return r;
	}
	r = seg_create(log);
	/* After the create, so the new segment's preallocation counts too. */
	retention(log);
	return r;
}

/* Open and recovery ---------------------------------------------------- */

static int cfg_check(const struct stor_log_cfg *cfg)
{
	if (!cfg || !cfg->dir || !*cfg->dir || !cfg->vehicle)
		return -EINVAL;
	if (strlen(cfg->vehicle) > STOR_VEHICLE_MAX)
		return -EINVAL;
	if (cfg->segment_bytes && cfg->segment_bytes < STOR_MIN_SEGMENT)
		return -EINVAL;
	if (cfg->sync_window_ms > 3600 * 1000)
		return -EINVAL;
	/* The budget counts the active segment's preallocation and the spare:
	   below two segments it could never be kept. */
	if (cfg->retention_bytes &&
	    cfg->retention_bytes / 2 < (cfg->segment_bytes ? cfg->segment_bytes : STOR_DEFAULT_SEGMENT))
		return -EINVAL;
	return 0;
}

static int log_setup(stor_log_t *log, const struct stor_log_cfg *cfg)
{
	log->fd = -1;
	log->dirfd = -1;
	log->dir = strdup(cfg->dir);
	log->buf = malloc(BUF_BYTES + 2 * SEAL_BYTES + stor_frame_size(STOR_MAX_PAYLOAD));
	if (!log->dir || !log->buf)
		return -ENOMEM;
	strcpy(log->vehicle, cfg->vehicle);
	log->config_hash = cfg->config_hash;
	memcpy(log->boot_id, cfg->boot_id, 16);
	log->segment_bytes = cfg->segment_bytes ? cfg->segment_bytes : STOR_DEFAULT_SEGMENT;
	log->sync_window_ms = cfg->sync_window_ms;
	log->retention_bytes = cfg->retention_bytes;
	log->retention_age_s = cfg->retention_age_s;
	log->retention_min_age_s = cfg->retention_min_age_s;
	log->keep_recent_s = cfg->keep_recent_s;
	log->clock = cfg->clock;
	log->holds = calloc(1, sizeof(*log->holds));
	if (!log->holds)
		return -ENOMEM;
	log->forwarded_seq = cfg->forwarded_seq;
	log->ops = cfg->ops ? cfg->ops : stor_dev_posix_ops();
	if (mkdir(cfg->dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	log->dirfd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return log->dirfd < 0 ? -errno : 0;
}

/*
 * Rename damaged data we must not overwrite out of the way, as
 * <name>.damaged (unlinked only if the ops cannot rename and it is a
 * file), and count it.  0 or -errno.
 */
static int set_aside(stor_log_t *log, const char *name, bool is_file)
{
	char bad[STOR_SEG_NAME_LEN + 8];
	int r;

	snprintf(bad, sizeof(bad), "%s.damaged", name);
	if (log->ops->rename)
		r = log->ops->rename(log->ops->ctx, log->dirfd, name, bad);
	else
		r = is_file ? log->ops->unlink(log->ops->ctx, log->dirfd, name) : -EOPNOTSUPP;
	if (r < 0)
		return r;
	log->ev.recovered_damage++;
	return log->ops->dirsync(log->ops->ctx, log->dirfd);
}

static int load_segments(stor_log_t *log)
{
	uint64_t *seqs;
	size_t n;
	struct stat sp;
	int r = stor_seg_list(log->dirfd, &seqs, &n);

	if (r < 0)
		return r;
	if (fstatat(log->dirfd, SPARE_NAME, &sp, AT_SYMLINK_NOFOLLOW) == 0) {
		/* A spare that is not a regular file would stop every retire
		   (a rename onto a directory fails) or be written through. */
		if (S_ISREG(sp.st_mode))
			log->spare_bytes = sp.st_size ? (uint64_t)sp.st_size : 1;
		else
			note(log, set_aside(log, SPARE_NAME, false));
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		char name[STOR_SEG_NAME_LEN];
		struct stat st;

		seg_name(name, seqs[i]);
		if (fstatat(log->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
		} else if (!S_ISREG(st.st_mode)) {
			/* A directory, FIFO or symbolic link under a segment's
			   name is not ours: reading it could block, retention
			   could never delete it, and a new segment could not
			   be created under its name.  Set it aside (kept for
			   whoever put it there); if that fails, leave it out. */
			note(log, set_aside(log, name, false));
		} else {
			r = segs_push(log, seqs[i], (uint64_t)st.st_size);
		}
	}
	free(seqs);
	return r;
}

static bool all_zero_after_header(stor_log_t *log, int fd, uint64_t size)
{
	uint8_t buf[4096];

	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		ssize_t r = log->ops->pread(log->ops->ctx, fd, buf, sizeof(buf), (off_t)off);

		if (r <= 0)
			return r == 0;
		for (ssize_t i = off ? 0 : STOR_HDR_BYTES; i < r; i++)
			if (buf[i])
				return false;
	}
	return true;
}

/*
 * The last segment has no valid header: either its creation was cut by a
 * power loss (all zeros: reuse the name), or it is damaged data we must
 * not overwrite (set aside as <name>.damaged; unlinked only if the ops
 * cannot rename).
 */
static int recover_headerless(stor_log_t *log, int fd, uint64_t size, const char *name)
{
	int r;

	if (all_zero_after_header(log, fd, size))
		return 0;
	r = set_aside(log, name, true);
	if (r == 0)
		log->nsegs--;
	return r;
}

/* Walk the last segment; seal it after its last good frame. */
static int recover_frames(stor_log_t *log, struct stor_cursor *c)
{
	struct stor_frame f;
	const uint8_t *p;
	uint64_t off;
	int r;

	while ((r = stor_cursor_next(c, &f, &p, &off)) != 0) {
		if (r == -EBADMSG)
			log->ev.recovered_damage++;
		else if (r < 0)
			return r;
	}
	log->next_seq = c->expect_seq;
	if (c->sealed)
		return 0;
	log->stats.recovered_truncated_bytes += c->file_size - c->data_end;
	log->ev.recovered_truncated_bytes += c->file_size - c->data_end;
	if (c->expect_seq == c->hdr.first_seq)
		return 0; /* empty: seg_create() reuses the name */
	/* Seal through the normal close path: cut the torn tail and any
	   preallocation, write the seal, fdatasync. */
	log->fd = c->fd;
	c->fd = -1;
	log->salt = c->hdr.salt;
	log->woff = c->data_end;
	log->seg_tmin = c->t_min;
	log->seg_tmax = c->t_max;
	/* If the seal cannot be written the segment is abandoned (EIO) or
	   left unsealed (ENOSPC), and the log goes on in a new segment: a
	   reader reports the unproven end, nothing is lost. */
	if (seg_close(log) < 0 && log->fd >= 0) {
		log->ops->close(log->ops->ctx, log->fd);
		log->fd = -1;
	}
	return 0;
}

static int recover_last(stor_log_t *log)
{
	struct seg_info *last = &log->segs[log->nsegs - 1];
	char name[STOR_SEG_NAME_LEN];
	struct stor_cursor c;
	uint64_t size;
	uint32_t type;
	int fd, r;

	log->next_seq = last->first_seq;
	seg_name(name, last->first_seq);
	fd = stor_seg_open(log->ops, log->dirfd, name, O_RDWR, &size, &type);
	if (fd < 0)
		return fd;
	r = stor_cursor_init(&c, log->ops, fd, last->bytes);
	if (r == 0 && c.hdr.first_seq != last->first_seq) {
		/* A recycled file renamed before its new header was durable:
		   it holds no record of this name. */
		stor_cursor_done(&c);
	} else if (r == -EBADMSG)
		r = recover_headerless(log, fd, last->bytes, name);
	else if (r == 0) {
		r = recover_frames(log, &c);
		fd = c.fd;
		stor_cursor_done(&c);
	}
	if (fd >= 0)
		log->ops->close(log->ops->ctx, fd);
	return r;
}

/* A new log id.  getrandom fails only before the kernel's pool is ready
   (early boot): then the clocks and the pid make a collision unlikely. */
static void random_log_id(uint8_t id[STOR_LOG_ID_BYTES])
{
	uint64_t a, b;

	if (getrandom(id, STOR_LOG_ID_BYTES, 0) == STOR_LOG_ID_BYTES)
		return;
	a = (uint64_t)basic_now_ns(CLOCK_REALTIME);
	b = (uint64_t)basic_now_ns(CLOCK_MONOTONIC) ^ ((uint64_t)getpid() << 32);
	for (size_t i = 0; i < 8; i++) {
		id[i] = (uint8_t)(a >> (8 * i));
		id[8 + i] = (uint8_t)(b >> (8 * i));
	}
}

static int seg_header(stor_log_t *log, uint64_t seq, struct stor_seg_hdr *ret_hdr)
{
	char name[STOR_SEG_NAME_LEN];
	int fd, r;

	seg_name(name, seq);
	/* O_NONBLOCK: a FIFO in place of a segment must not hang the open. */
	fd = log->ops->open(log->ops->ctx, log->dirfd, name, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	r = stor_seg_hdr_read(log->ops, fd, ret_hdr);
	log->ops->close(log->ops->ctx, fd);
	return r;
}

/*
 * The log's identity (storage/DESIGN.md, "Log id"): the id of the newest
 * segment header that has one, so it survives restarts and retention.  A
 * log of version 1 segments only gets one derived from its oldest readable
 * header (salt and creation time): every open derives the same until the
 * first version 2 segment stores it (*ret_derived asks the caller to create
 * that segment before retention may delete the oldest).  A log without a
 * readable segment is a new log: a new random id.
 */
static void log_id_load(stor_log_t *log, bool *ret_derived)
{
	struct stor_seg_hdr h, oldest;
	bool any = false;

	*ret_derived = false;
	for (size_t i = log->nsegs; i-- > 0;) {
		if (seg_header(log, log->segs[i].first_seq, &h) < 0)
			continue;
		if (h.has_log_id) {
			memcpy(log->log_id, h.log_id, sizeof(log->log_id));
			return;
		}
		oldest = h;
		any = true;
	}
	if (!any) {
		random_log_id(log->log_id);
		return;
	}
	for (size_t i = 0; i < 8; i++) {
		log->log_id[i] = (uint8_t)(oldest.salt >> (8 * i));
		log->log_id[8 + i] = (uint8_t)((uint64_t)oldest.created_ns >> (8 * i));
	}
	*ret_derived = true;
}

int stor_log_open(const struct stor_log_cfg *cfg, stor_log_t **ret_log)
{
	bool derived;
	stor_log_t *log;
	int r = cfg_check(cfg);

	if (r < 0 || !ret_log)
		return -EINVAL;
	log = calloc(1, sizeof(*log));
	if (!log)
		return -ENOMEM;
	r = log_setup(log, cfg);
	if (r == 0)
		r = load_segments(log);
	while (r == 0 && log->nsegs > 0) {
		size_t n = log->nsegs;

		r = recover_last(log);
		if (log->nsegs == n)
			break; /* else a damaged last segment was set aside */
	}
	if (r < 0) {
		stor_log_free(log);
		return r;
	}
	/* A new log (no segment) may start anywhere. */
	if (!log->nsegs && cfg->first_seq)
		log->next_seq = cfg->first_seq;
	if (log->next_seq == 0)
		log->next_seq = 1;
	log->confirmed_seq = log->next_seq;
	/* A damaged holds file is an error at start, never "no holds": the
	   caller names it (stor_holds_read() gives the line). */
	holds_refresh(log, now_ns(log, CLOCK_REALTIME));
	if (log->stats.hold_error) {
		r = log->stats.hold_error;
		stor_log_free(log);
		return r;
	}
	log_id_load(log, &derived);
	if (derived)
		(void)ensure_segment(log);
	retention(log);
	/* A failure to create the first segment is not fatal: appends retry
	   and count what they drop, and last_error tells why. */
	(void)ensure_segment(log);
	*ret_log = log;
	return 0;
}

stor_log_t *stor_log_free(stor_log_t *log)
{
	if (!log)
		return NULL;
	if (log->fd >= 0)
		(void)seg_close(log);
	if (log->fd >= 0)
		log->ops->close(log->ops->ctx, log->fd);
	if (log->dirfd >= 0)
		close(log->dirfd);
	free(log->segs);
	free(log->holds);
	free(log->buf);
	free(log->dir);
	free(log);
	return NULL;
}

/* Append and sync -------------------------------------------------------- */

static int drop(stor_log_t *log, uint32_t count, int err)
{
	if (!log->gap_count)
		log->gap_first = log->next_seq;
	log->gap_count += count;
	log->next_seq += count;
	log->stats.dropped += count;
	if (err == -ENOSPC)
		log->ev.dropped_nospace += count;
	else
		log->ev.dropped_other += count;
	if (log->fd < 0)
		log->confirmed_seq = log->next_seq;
	return note(log, err);
}

static bool rec_ok(const stor_log_t *log, const struct stor_rec *rec)
{
	return rec && (rec->payload || !rec->len) && rec->len <= STOR_MAX_PAYLOAD &&
	       rec->count > 0 && rec->first_seq == log->next_seq &&
	       rec->first_seq <= UINT64_MAX - rec->count && rec->t_first_ns <= rec->t_last_ns;
}

/* Room for the frame (and a gap mark before it) in segment and buffer. */
static int make_room(stor_log_t *log, uint64_t need)
{
	int r = ensure_segment(log);

	if (r < 0)
		return r;
	if (log->woff + log->buf_len + need + SEAL_BYTES > log->segment_bytes &&
	    log->woff + log->buf_len > STOR_HDR_BYTES) {
		r = roll(log);
		if (r < 0)
			return r;
	}
	if (log->buf_len + need + SEAL_BYTES > BUF_BYTES) {
		r = flush(log);
		if (log->fd < 0)
			return ensure_segment(log);
		if (r == -ENOSPC)
			return r;
	}
	return 0;
}

bool stor_log_would_roll(const stor_log_t *log, uint32_t len)
{
	uint64_t need;

	if (!log || log->fd < 0)
		return false;
	need = stor_frame_size(len) + gap_frames(log) * STOR_FRAME_HDR_BYTES;
	/* make_room()'s test: a segment with records that cannot take it */
	return log->woff + log->buf_len + need + SEAL_BYTES > log->segment_bytes &&
	       log->woff + log->buf_len > STOR_HDR_BYTES;
}

int stor_log_append(stor_log_t *log, const struct stor_rec *rec)
{
	struct stor_frame f;
	uint64_t need;
	int r;

	if (!log || !rec_ok(log, rec))
		return -EINVAL;
	need = stor_frame_size(rec->len) + gap_frames(log) * STOR_FRAME_HDR_BYTES;
	r = make_room(log, need);
	if (r < 0)
		return drop(log, rec->count, r);
	buf_put_gap(log);
	f = (struct stor_frame){ .len = rec->len, .first_seq = rec->first_seq,
		.count = rec->count, .t_first_ns = rec->t_first_ns, .t_last_ns = rec->t_last_ns };
	buf_put(log, &f, rec->payload);
	log->next_seq += rec->count;
	log->unsynced_records += rec->count;
	log->stats.records += rec->count;
	log->stats.bytes += rec->len;
	if (rec->t_first_ns < log->seg_tmin)
		log->seg_tmin = rec->t_first_ns;
	if (rec->t_last_ns > log->seg_tmax)
		log->seg_tmax = rec->t_last_ns;
	if (log->sync_window_ms == 0)
		return sync_now(log);
	if (!log->unsynced_since_ns)
		log->unsynced_since_ns = now_ns(log, CLOCK_MONOTONIC);
	return 0;
}

/* After an abandon, start the next segment now rather than at the next
   append; a failure here is retried by that append. */
static int after_sync(stor_log_t *log, int r)
{
	if (r < 0 && log->fd < 0)
		(void)ensure_segment(log);
	return r;
}

int stor_log_sync(stor_log_t *log)
{
	if (!log)
		return -EINVAL;
	return after_sync(log, sync_now(log));
}

int stor_log_tick(stor_log_t *log)
{
	int64_t now;
	int r = 0;

	if (!log)
		return -EINVAL;
	now = now_ns(log, CLOCK_MONOTONIC);
	if (log->unsynced_since_ns &&
	    now - log->unsynced_since_ns >= (int64_t)log->sync_window_ms * NS_PER_MS)
		r = after_sync(log, sync_now(log));
	/* Once a second whatever is set: a hold a trigger made, or one
	   released, is read and an expiry is noticed within a second, not at
	   the next roll (with 16 MiB segments that can be hours).  The pass
	   is a stat of the holds file and a walk of the cached segment
	   times; the caller's thread (the collector), never a bus thread. */
	if (now - log->last_retention_ns >= 1000 * NS_PER_MS)
		retention(log);
	return r;
}

int stor_log_id(const stor_log_t *log, uint8_t ret_id[STOR_LOG_ID_BYTES])
{
	if (!log || !ret_id)
		return -EINVAL;
	memcpy(ret_id, log->log_id, STOR_LOG_ID_BYTES);
	return 0;
}

uint64_t stor_log_next_seq(const stor_log_t *log)
{
	return log ? log->next_seq : 0;
}

uint64_t stor_log_confirmed_seq(const stor_log_t *log)
{
	return log ? log->confirmed_seq : 0;
}

int stor_log_set_forwarded(stor_log_t *log, uint64_t seq)
{
	if (!log || seq > log->next_seq)
		return -EINVAL;
	if (seq > log->forwarded_seq)
		log->forwarded_seq = seq;
	return 0;
}

int stor_log_stats(const stor_log_t *log, struct stor_stats *ret_stats)
{
	struct stor_stats s;

	if (!log || !ret_stats)
		return -EINVAL;
	s = log->stats;
	s.segments = log->nsegs;
	s.disk_bytes = disk_bytes(log);
	s.recovered_truncated_bytes = log->stats.recovered_truncated_bytes;
	*ret_stats = s;
	return 0;
}

int stor_log_take_events(stor_log_t *log, struct stor_events *ret_events)
{
	struct stor_events e;

	if (!log || !ret_events)
		return -EINVAL;
	e = log->ev;
	log->ev = (struct stor_events){0};
	*ret_events = e;
	return e.lost_unsynced || e.dropped_nospace || e.dropped_other ||
	       e.retention_unforwarded || e.segments_abandoned || e.recovered_damage ||
	       e.recovered_truncated_bytes || e.last_error || e.window_alarm || e.past_held ||
	       e.holds_expired || e.hold_error;
}

/* Records [next_seq, seq) will never come (a ground log that joined late or
   missed them): mark them as a gap, exactly as dropped records are marked,
   so readers see the hole instead of a silent jump. */
int stor_log_skip(stor_log_t *log, uint64_t seq)
{
	if (!log || seq < log->next_seq)
		return -EINVAL;
	/* a gap marker frame counts at most UINT32_MAX records */
	if (log->gap_count + (seq - log->next_seq) > UINT32_MAX)
		return -ERANGE;
	if (seq == log->next_seq)
		return 0;
	if (!log->gap_count)
		log->gap_first = log->next_seq;
	log->gap_count += seq - log->next_seq;
	log->next_seq = seq;
	return 0;
}
