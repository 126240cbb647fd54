/* SPDX-License-Identifier: MIT */
/*
 * log.c - the writer side of the flash log, its API after open: append
 * (dropped records counted and marked), sync, the periodic tick, and the
 * queries.  Open and recovery are in log-open.c, the write path below
 * append in log-write.c, retention in log-retention.c (log-private.h).
 * The order of writes and syncs is specified in storage/DESIGN.md;
 * comments here say why.
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
	int r = stor_log_ensure_segment(log);

	if (r < 0)
		return r;
	if (log->woff + log->buf_len + need + SEAL_BYTES > log->segment_bytes &&
	    log->woff + log->buf_len > STOR_HDR_BYTES) {
		r = stor_log_roll(log);
		if (r < 0)
			return r;
	}
	if (log->buf_len + need + SEAL_BYTES > BUF_BYTES) {
		r = stor_log_flush(log);
		if (log->fd < 0)
			return stor_log_ensure_segment(log);
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
	need = stor_frame_size(len) + stor_log_gap_frames(log) * STOR_FRAME_HDR_BYTES;
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
	need = stor_frame_size(rec->len) + stor_log_gap_frames(log) * STOR_FRAME_HDR_BYTES;
	r = make_room(log, need);
	if (r < 0)
		return drop(log, rec->count, r);
	stor_log_buf_put_gap(log);
	f = (struct stor_frame){ .len = rec->len, .first_seq = rec->first_seq,
		.count = rec->count, .t_first_ns = rec->t_first_ns, .t_last_ns = rec->t_last_ns };
	stor_log_buf_put(log, &f, rec->payload);
	log->next_seq += rec->count;
	log->unsynced_records += rec->count;
	log->stats.records += rec->count;
	log->stats.bytes += rec->len;
	if (rec->t_first_ns < log->seg_tmin)
		log->seg_tmin = rec->t_first_ns;
	if (rec->t_last_ns > log->seg_tmax)
		log->seg_tmax = rec->t_last_ns;
	if (log->sync_window_ms == 0)
		return stor_log_sync_now(log);
	if (!log->unsynced_since_ns)
		log->unsynced_since_ns = now_ns(log, CLOCK_MONOTONIC);
	return 0;
}

/* After an abandon, start the next segment now rather than at the next
   append; a failure here is retried by that append. */
static int after_sync(stor_log_t *log, int r)
{
	if (r < 0 && log->fd < 0)
		(void)stor_log_ensure_segment(log);
	return r;
}

int stor_log_sync(stor_log_t *log)
{
	if (!log)
		return -EINVAL;
	return after_sync(log, stor_log_sync_now(log));
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
		r = after_sync(log, stor_log_sync_now(log));
	/* Once a second whatever is set: a hold a trigger made, or one
	   released, is read and an expiry is noticed within a second, not at
	   the next roll (with 16 MiB segments that can be hours).  The pass
	   is a stat of the holds file and a walk of the cached segment
	   times; the caller's thread (the collector), never a bus thread. */
	if (now - log->last_retention_ns >= 1000 * NS_PER_MS)
		stor_log_retain(log);
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
	s.disk_bytes = stor_log_disk_bytes(log);
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
