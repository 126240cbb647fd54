/* SPDX-License-Identifier: MIT */
/*
 * watch.h - what the sink watches in the stream besides storing it: the
 * board's [trigger NAME] sections (a channel condition or an event code
 * that holds the log around the moment it happens) and its required
 * channels (required_within_ms: STALE / FRESH events naming the channel).
 *
 * Per item (pl_watch_item) the work is O(1) for an item no trigger or
 * requirement names (one table look-up) and O(triggers on that channel)
 * otherwise, with no allocation and no I/O: a firing is only noted.  The
 * hold itself (a file written and synced beside the log, storage/hold.c)
 * and its TRIGGER event are made at the next tick, with the time it fired.
 * One thread (the collector's).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"
#include "channels.h"
#include "conf/config.h"

struct pl_watch_cfg {
	const struct conf_board *board; /* triggers and required channels; outlives the watch */
	const pl_channels_t *channels;  /* names and value tables; outlives the watch */
	const char *log_dir;            /* holds are made here (copied) */
	int64_t start_ns;               /* wall time the run starts: a required channel
	                                   never seen is stale within_ms after it;
	                                   0: the first pl_watch_tick() */
	/* optional: told each hold made, with its window, on the thread
	   calling pl_watch_tick() (the uplink sends the window first) */
	void (*on_hold)(void *ctx, int64_t from_ns, int64_t to_ns);
	void *hold_ctx;
};

typedef struct pl_watch pl_watch_t;

/*
 * Resolve every trigger's channel (pl_channels_find: a bare signal name
 * where only one message has it), value (a number or a label of the
 * channel's value table) or event name, and every required channel.
 * 0, or -ENOENT / -ENOTUNIQ / -EINVAL with "file:line: what" in err;
 * -ENOMEM.  `check` calls it too, so a board that names nothing real
 * never runs.
 */
int pl_watch_new(const struct pl_watch_cfg *cfg, pl_watch_t **ret_watch, char *err, size_t errlen);

/* Free; accepts NULL; returns NULL. */
pl_watch_t *pl_watch_free(pl_watch_t *w);

/*
 * Look at one item (a sample or an event; the collector thread).  Notes a
 * trigger that fired (made into a hold at the next tick) and writes a
 * CHANNEL_FRESH event for a required channel that was stale into out
 * (room for max).  Returns the events written.  No allocation, no I/O.
 */
size_t pl_watch_item(pl_watch_t *w, const struct acq_item *it, struct acq_item *out, size_t max);

/*
 * Once in a while (the collector's tick; now_ns wall time): the holds for
 * the triggers that fired (stor_hold_add, synced) with their TRIGGER
 * events (arg the hold id, or -errno if the hold could not be made), and
 * CHANNEL_STALE events for required channels late now.  Returns the events
 * written into out (room for max; what does not fit waits for the next
 * tick).
 */
size_t pl_watch_tick(pl_watch_t *w, int64_t now_ns, struct acq_item *out, size_t max);

struct pl_watch_stats {
	uint64_t fired;       /* triggers that fired */
	uint64_t holds;       /* holds made */
	uint64_t hold_errors; /* holds that could not be made */
	uint64_t missed;      /* firings lost: more than the pending queue holds */
	uint32_t stale;       /* required channels stale now */
	uint32_t last_hold_id;
	int last_error;       /* of the last hold that failed */
};

/* Counters (the collector thread's, or after it stopped).  0, -EINVAL. */
int pl_watch_stats(const pl_watch_t *w, struct pl_watch_stats *ret_stats);
