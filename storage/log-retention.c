/* SPDX-License-Identifier: MIT */
/*
 * log-retention.c - the log's retention: which closed segments may go
 * (forwarded, old enough, outside every held window, not among the
 * recent ones kept), the holds file as last read, the alarm when the held
 * windows no longer fit, and deleting (or recycling) a segment.  The
 * rules are specified in storage/DESIGN.md.
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

static uint64_t seg_end_seq(const stor_log_t *log, size_t i)
{
	return i + 1 < log->nsegs ? log->segs[i + 1].first_seq : log->next_seq;
}

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

uint64_t stor_log_disk_bytes(const stor_log_t *log)
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
void stor_log_holds_refresh(stor_log_t *log, int64_t now)
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
	return (uint64_t)v.f_bavail * v.f_frsize + stor_log_disk_bytes(log);
}

/* Raise an alarm once when it appears or gets worse (not every pass). */
void stor_log_window_alarm(stor_log_t *log, uint32_t level, uint64_t need)
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

void stor_log_retain(stor_log_t *log)
{
	int64_t now = now_ns(log, CLOCK_REALTIME);
	int64_t cutoff = now - (int64_t)log->retention_age_s * 1000000000LL;
	int64_t young = now - (int64_t)log->retention_min_age_s * 1000000000LL;
	int64_t recent = log->keep_recent_s ? now - (int64_t)log->keep_recent_s * 1000000000LL : INT64_MAX;
	uint32_t level = STOR_WINDOW_OK;
	uint64_t need;

	log->last_retention_ns = now_ns(log, CLOCK_MONOTONIC);
	stor_log_holds_refresh(log, now);
	/* A holds file we cannot read may name any segment: keep them all
	   until it is readable again (the fault is an event). */
	while (!log->stats.hold_error) {
		bool over = log->retention_bytes && stor_log_disk_bytes(log) > log->retention_bytes;
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
	stor_log_window_alarm(log, level, need);
	held_stats(log, now);
}

/* ENOSPC: free the spare, else the oldest segment that was forwarded, no
   hold keeps and the floor allows.  1 if something was freed. */
int stor_log_free_forwarded(stor_log_t *log)
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
		stor_log_window_alarm(log, STOR_WINDOW_DUE, window_need(log));
	if (i == deletable(log) || seg_end_seq(log, i) > log->forwarded_seq)
		return 0;
	delete_seg(log, i, false);
	return log->nsegs < n;
}
