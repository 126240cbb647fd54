/* SPDX-License-Identifier: MIT */
/*
 * log-open.c - opening the log and recovering it after a power cut:
 * the configuration, the segments found on disk (damaged ones set aside),
 * the last segment's frames checked and sealed, the log id, and
 * stor_log_free().  storage/DESIGN.md specifies what recovery keeps.
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
			r = stor_log_segs_push(log, seqs[i], (uint64_t)st.st_size);
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
	if (stor_log_seg_close(log) < 0 && log->fd >= 0) {
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
	stor_log_holds_refresh(log, now_ns(log, CLOCK_REALTIME));
	if (log->stats.hold_error) {
		r = log->stats.hold_error;
		stor_log_free(log);
		return r;
	}
	log_id_load(log, &derived);
	if (derived)
		(void)stor_log_ensure_segment(log);
	stor_log_retain(log);
	/* A failure to create the first segment is not fatal: appends retry
	   and count what they drop, and last_error tells why. */
	(void)stor_log_ensure_segment(log);
	*ret_log = log;
	return 0;
}

stor_log_t *stor_log_free(stor_log_t *log)
{
	if (!log)
		return NULL;
	if (log->fd >= 0)
		(void)stor_log_seg_close(log);
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
