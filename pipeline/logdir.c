/* SPDX-License-Identifier: MIT */
/* logdir.c - where the log is, whether it fits, opening it (logdir.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logdir.h"
#include "window.h"
#include "uplink/forward.h"

/*
 * The uplink cursor as retention may trust it: records below it count as
 * forwarded, and a full disk deletes forwarded segments first.  A damaged
 * cursor, or one past the end of the log (the record before it is not
 * there), counts nothing as forwarded: the forwarder sends the whole log
 * again then (upl_forward_stats.cursor_damage), and trusting it could
 * delete records that never left the vehicle.
 */
static uint64_t retention_cursor(const char *data_dir, const char *cursor_path)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	uint64_t seq;
	int r;

	if (upl_cursor_load(cursor_path, &seq) < 0)
		return 0;
	if (seq == 1 || stor_reader_open(data_dir, &rd) < 0)
		return seq == 1 ? 1 : 0;
	r = stor_reader_seek_seq(rd, seq - 1);
	while (r >= 0 && (r = stor_reader_next(rd, &rec)) == -EBADMSG)
		;
	stor_reader_free(rd);
	return r == 1 ? seq : 0;
}

const char *pl_data_dir(const struct conf_board *cfg, const char *override)
{
	if (override)
		return override;
	return cfg && cfg->storage.dir[0] ? cfg->storage.dir : "railmon-data";
}

/* "board.ini:12: " for a [storage] key, "board.ini: [storage] " if it was
   not in the file (a default). */
static void key_where(char *buf, size_t len, const struct conf_board *cfg, int line)
{
	if (line)
		snprintf(buf, len, "%s:%d: ", cfg->path, line);
	else
		snprintf(buf, len, "%s: [storage] ", cfg->path);
}

int pl_log_check_space(const struct conf_board *cfg, const char *dir, char *err, size_t errlen, char *warn,
                          size_t warnlen)
{
	const struct conf_storage *st = &cfg->storage;
	char where[BUS_PATH_MAX + 32], fs[32], avail[32], seg[32], ret[32], most[32];
	struct stor_space sp;
	int r;

	err[0] = warn[0] = 0;
	r = stor_space_query(dir, &sp);
	if (r < 0) {
		/* Not a reason to refuse: the log's own open says what is wrong. */
		snprintf(warn, warnlen, "%s: cannot check the free space for the log: %s", dir, strerror(-r));
		return 0;
	}
	r = stor_space_check(&sp, st->segment_bytes, st->retention_bytes);
	conf_size_text(sp.fs_bytes, fs, sizeof(fs));
	conf_size_text(sp.free_bytes + sp.log_bytes, avail, sizeof(avail));
	conf_size_text(st->segment_bytes, seg, sizeof(seg));
	conf_size_text(st->retention_bytes, ret, sizeof(ret));
	if (r == -EFBIG) {
		key_where(where, sizeof(where), cfg, st->segment_line);
		snprintf(err, errlen, "%ssegment_size %s%s does not fit twice in the filesystem holding %s (%s): the segment "
		         "being written is preallocated whole and space comes back only by deleting a closed one; use at "
		         "most %s", where, seg, st->segment_line ? "" : " (the default)", dir, fs,
		         conf_size_text((sp.fs_bytes / 2) & ~(uint64_t)0xfffff, most, sizeof(most)));
		return r;
	}
	if (r == -E2BIG) {
		key_where(where, sizeof(where), cfg, st->retention_line);
		snprintf(err, errlen, "%sretention_size %s is more than the filesystem holding %s can hold (%s): it would "
		         "fill up before retention deletes anything, and then new records are refused", where, ret, dir, fs);
		return r;
	}
	if (r & STOR_SPACE_LOW_SEGMENT)
		snprintf(warn, warnlen, "%s: only %s free for the log (of %s), less than one segment of %s: it is written "
		         "without preallocation and records that do not fit are refused (counted and said)", dir, avail,
		         fs, seg);
	else if (r & STOR_SPACE_LOW_RETENTION)
		snprintf(warn, warnlen, "%s: only %s free for the log (of %s), less than retention_size %s: the disk will "
		         "fill before retention deletes anything, and then records not yet forwarded are kept and new ones "
		         "refused", dir, avail, fs, ret);
	return 0;
}

int pl_log_open(const struct conf_board *cfg, const char *dir, const uint8_t *boot_id,
                   stor_log_t **ret_log, char *warn, size_t warnlen, char *err, size_t errlen)
{
	struct stor_log_cfg lc = {
		.dir = dir,
		.vehicle = cfg->vehicle,
		.config_hash = cfg->hash,
		.segment_bytes = cfg->storage.segment_bytes,
		.sync_window_ms = cfg->storage.sync_window_ms,
		.retention_bytes = cfg->storage.retention_bytes,
		.retention_age_s = cfg->storage.retention_age_s,
		.retention_min_age_s = cfg->storage.retention_min_age_s,
		/* a hold made a moment from now finds the start of its
		   window (issue 24) */
		.keep_recent_s = pl_keep_recent_s(cfg),
	};
	int r;

	/* Sizes the filesystem can never hold are refused here, before a log
	   that would store nothing exists. */
	r = pl_log_check_space(cfg, dir, err, errlen, warn, warnlen);
	if (r < 0)
		return r;
	memcpy(lc.boot_id, boot_id, sizeof(lc.boot_id));
	if (cfg->uplink.enabled) {
		/* Retention at open must know what already went off-board. */
		char cursor[BUS_PATH_MAX + 32];
		snprintf(cursor, sizeof(cursor), "%s/uplink.cursor", dir);
		lc.forwarded_seq = retention_cursor(dir, cursor);
	}
	r = stor_log_open(&lc, ret_log);
	if (r == -EBADMSG) {
		struct stor_holds *h = malloc(sizeof(*h));
		unsigned line = 0;

		/* The holds file is the only open step that refuses damage
		   (segments are recovered): name it and its line. */
		if (h && stor_holds_read(dir, h, &line) == -EBADMSG) {
			snprintf(err, errlen, "%s/%s:%u: the holds file is damaged (a changed or cut line; its CRC does "
			         "not match): the held windows it names cannot be trusted, so the log is not opened. "
			         "Keep a copy for the investigation, then remove it or repair it", dir, STOR_HOLDS_NAME,
			         line);
			free(h);
			return r;
		}
		free(h);
	}
	if (r < 0)
		snprintf(err, errlen, "%s: cannot open the log: %s", dir, strerror(-r));
	return r;
}
