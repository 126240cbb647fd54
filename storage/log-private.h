/* SPDX-License-Identifier: MIT */
/*
 * log-private.h - the log writer's state and the functions its files
 * share, internal to storage/: log.c (append, sync, tick, queries: the
 * API's hot path), log-open.c (open, recovery, free), log-write.c (write
 * buffer, flush, sync, the active segment), log-retention.c (what may be
 * deleted, holds).  Calls go down that list, never up.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

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

static inline int64_t now_ns(const stor_log_t *log, clockid_t clk)
{
	return log->clock ? log->clock->now(log->clock->ctx, clk) : basic_now_ns(clk);
}

static inline int note(stor_log_t *log, int r)
{
	if (r < 0)
		log->stats.last_error = log->ev.last_error = r;
	return r;
}

static inline void seg_name(char buf[STOR_SEG_NAME_LEN], uint64_t seq)
{
	stor_seg_name(buf, seq);
}

/* log-retention.c */
uint64_t stor_log_disk_bytes(const stor_log_t *log);
void stor_log_holds_refresh(stor_log_t *log, int64_t now);
void stor_log_window_alarm(stor_log_t *log, uint32_t level, uint64_t need);
void stor_log_retain(stor_log_t *log);
int stor_log_free_forwarded(stor_log_t *log);

/* log-write.c */
int stor_log_segs_push(stor_log_t *log, uint64_t first_seq, uint64_t bytes);

static inline void stor_log_buf_put(stor_log_t *log, const struct stor_frame *f, const void *payload)
{
	stor_frame_encode(log->salt, f, payload, log->buf + log->buf_len);
	log->buf_len += stor_frame_size(f->len);
}

/* GAP frames needed to mark the pending gap (one counts < 2^32 records). */
static inline uint64_t stor_log_gap_frames(const stor_log_t *log)
{
	return (log->gap_count + UINT32_MAX - 1) / UINT32_MAX;
}

void stor_log_buf_put_gap(stor_log_t *log);
int stor_log_flush(stor_log_t *log);
int stor_log_sync_now(stor_log_t *log);
int stor_log_seg_close(stor_log_t *log);
int stor_log_ensure_segment(stor_log_t *log);
int stor_log_roll(stor_log_t *log);
