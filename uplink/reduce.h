/* SPDX-License-Identifier: MIT */
/*
 * reduce.h - the uplink's reduced stream: a stored Batch decoded, the
 * records each channel's policy passes kept, and encoded again as a
 * Batch flagged reduced that names the seq range it was made from
 * (railmon.proto: reduced, source_end_seq, seq_delta).  The log keeps
 * every record; what was not sent stays on board.
 *
 * State per channel (the last value sent and its time) lives in a table
 * allocated at creation; a Batch costs its decode and, when the source's
 * vehicle, boot, log or config changes or it holds more records than any
 * before, a new encoder: nothing per record.  One thread (the
 * forwarder's) uses a reducer.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Policy bits, combined: a sample goes when any of them says so. */
enum {
	UPL_POL_ALL = 0,
	UPL_POL_NONE = 1 << 0,
	UPL_POL_CHANGE = 1 << 1,   /* value, NaN-ness or quality differs from the last sent */
	UPL_POL_DEADBAND = 1 << 2, /* |value - last sent| >= deadband */
	UPL_POL_EVERY = 1 << 3,    /* every_ns since the last sent sample of the channel */
};

struct upl_policy {
	unsigned flags;
	double deadband;
	int64_t every_ns;
};

/* A channel's policy (samples and texts of that channel id). */
struct upl_reduce_chan {
	uint32_t id;
	struct upl_policy pol;
};

/* A CAN identifier range [lo, hi] sent from bus bus (uplink_frames = ids). */
struct upl_frame_range {
	uint16_t bus;
	uint32_t lo, hi;
};

#define UPL_REDUCE_BUSES 16

enum upl_frames_mode { UPL_FRAMES_ALL, UPL_FRAMES_NONE, UPL_FRAMES_IDS };

struct upl_reduce_cfg {
	const struct upl_reduce_chan *chans; /* any order, ids unique; copied */
	size_t nchans;
	/* Channels not in chans: their bus's default (samples of a bus past
	   UPL_REDUCE_BUSES: all). */
	struct upl_policy bus_default[UPL_REDUCE_BUSES];
	enum upl_frames_mode frames[UPL_REDUCE_BUSES];
	const struct upl_frame_range *ranges; /* for UPL_FRAMES_IDS buses; copied */
	size_t nranges;
};

/* What the reducer did (forwarder thread; read with the forwarder's stats). */
struct upl_reduce_stats {
	uint64_t batches;        /* stored Batches reduced */
	uint64_t records_in;     /* their records */
	uint64_t records_out;    /* records kept */
	uint64_t bytes_in;       /* their stored bytes */
	uint64_t bytes_out;      /* the reduced Batches' bytes */
	uint64_t whole;          /* sent whole: Seal Batches */
	uint64_t errors;         /* could not be reduced (sent whole) */
};

typedef struct upl_reducer upl_reducer_t;

/* True when cfg reduces anything (else the forwarder sends the stored
   Batches as they are and needs no reducer). */
bool upl_reduce_cfg_active(const struct upl_reduce_cfg *cfg);

/* 0, -EINVAL (bad policy, duplicate id, bad range), -ENOMEM. */
int upl_reducer_new(const struct upl_reduce_cfg *cfg, upl_reducer_t **ret_reducer);
upl_reducer_t *upl_reducer_free(upl_reducer_t *r);

/* Forget the last values sent: the next sample of each channel goes.
   Called when the stream sent skips records (sent ahead of it, or whole). */
void upl_reducer_reset(upl_reducer_t *r);

/*
 * Reduce the stored Batch buf[0..len) covering [first_seq, first_seq +
 * count).  Returns 1 and the reduced Batch in *ret_buf (owned by r, valid
 * until the next call), 0 when it is to be sent whole (a Seal Batch, or
 * one that cannot be reduced: counted in errors; the state is then reset),
 * or -EINVAL.
 */
int upl_reducer_batch(upl_reducer_t *r, const void *buf, size_t len, const uint8_t **ret_buf, size_t *ret_len);

void upl_reducer_stats(const upl_reducer_t *r, struct upl_reduce_stats *ret_stats);
