/* SPDX-License-Identifier: MIT */
/*
 * window.h - whether a board can keep its retention window
 * ([storage] retention_min_age): the bytes a second the board will log,
 * from what the board file and its DBCs say, against the log's space.
 * For `check`, which refuses a board that cannot hold the window.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "channels.h"
#include "conf/config.h"

/* Bytes a record takes in the log, Batch, frame and dictionary included:
   measured on the demo (cli/demo/train.log replayed, 8,100 frames:
   142,312 bytes raw only, 589,320 with its DBC's 41,413 samples). */
#define PL_BYTES_PER_FRAME 18.0
#define PL_BYTES_PER_SAMPLE 11.0
/* A Seal Batch with its frame, and a Health entry (one per bus, collector,
   log, uplink every health_interval_s). */
#define PL_BYTES_PER_SEAL 420.0
#define PL_BYTES_PER_HEALTH 64.0

/* Beyond a trigger's pre the log keeps this much more undeletable: the
   hold is made at the collector's next pass after the item that fired it,
   which may come a little after the item's time. */
#define PL_PRE_MARGIN_S 10

/* What the log keeps undeletable for a hold still to come
   (stor_log_cfg.keep_recent_s): the longest pre of cfg's triggers and
   PL_PRE_MARGIN_S; 0 without triggers. */
uint64_t pl_keep_recent_s(const struct conf_board *cfg);

struct pl_window {
	double can_frames_s;     /* cyclic messages of every CAN bus's DBC */
	double can_samples_s;    /* their signals */
	double mb_samples_s;     /* Modbus channels, each every period_ms */
	unsigned can_uncounted;  /* messages without a cycle time (GenMsgCycleTime) */
	double bytes_s;          /* all of it, with Seals and Health */
	uint64_t need_bytes;     /* the floor, the longer of retention_min_age and
	                            keep_recent_s, at bytes_s, + two segments */
	uint64_t budget_bytes;   /* retention_size, else the filesystem */
	bool budget_is_fs;
	/* With triggers: */
	uint64_t recent_s;       /* pl_keep_recent_s() */
	uint64_t recent_bytes;   /* recent_s at bytes_s, + two segments (the active one
	                            and the one its start may fall in) */
	uint64_t hold_bytes;     /* the most one hold keeps: the largest pre + post at
	                            bytes_s, + two segments at its edges */
	uint64_t holds_fit;      /* holds of hold_bytes the budget keeps beside the
	                            floor (need_bytes, else recent_bytes) */
};

/*
 * Estimate cfg's log rate and what retention_min_age needs in the log's
 * directory dir (its filesystem when retention_size is 0).  Returns 0 (it
 * fits, or no floor is set: need_bytes 0), -EFBIG (it cannot: the figures
 * and "file:line: ..." in err), -errno (the filesystem could not be
 * asked; err says so).
 */
int pl_window_check(const struct conf_board *cfg, const pl_channels_t *ch, const char *dir,
                    struct pl_window *ret_window, char *err, size_t errlen);

/*
 * What `check` asks of the recorder parts of a board, in one call: the
 * triggers and required channels resolve (pl_watch_new), no required
 * signal asks for more than its message's DBC cycle time gives, and the
 * window fits (pl_window_check).  0 with a line for the plan in note ("" when the
 * board has none of them), or -errno with the message in err.
 */
int pl_recorder_check(const struct conf_board *cfg, const char *dir, char *note, size_t notelen, char *err,
                      size_t errlen);
