/* SPDX-License-Identifier: MIT */
/*
 * forwarder.h - the uplink of a running railmon: the MQTT forwarder
 * (uplink/forward.h) over the log, through readers of its own (uplink/
 * cannot see storage/): the backlog from the cursor file, and with
 * live_ahead the head of the log.  Its events (connected, faults) come
 * back into the pipeline through a ring, so they are records too.
 */
#pragma once

#include "acquisition/acq.h"
#include "conf/config.h"
#include "storage/stor.h"
#include "uplink/forward.h"

struct pl_channels;

struct pl_forwarder {
	upl_forwarder_t *fwd;          /* NULL without [uplink] */
	stor_reader_t *reader, *live_reader, *resend_reader, *hold_reader;
	char client[96];               /* MQTT client id: railmon-<vehicle> */
	char cursor[BUS_PATH_MAX + 32];
	char requests[BUS_PATH_MAX + 32]; /* the ground's full-rate requests, pending and served */
	/* The retained channels message names dict_sent of the board's
	   dict_channels channels: fewer when the dictionary is over 1 MiB
	   (the others are named by the Batches' dictionaries); cli/ says
	   so (cli_uplink_dictionary), this module prints nothing. */
	size_t dict_sent, dict_channels;
};

/*
 * Set up f for cfg's [uplink] (nothing without one) over the log in dir;
 * its events go into events (its only producer; must outlive it).  The
 * channel dictionary of ch (NULL: none) goes out retained on
 * railmon/<vehicle>/channels at every connect (how much of it: f->dict_*).  Not
 * started.  on_config (NULL: none) gets the ground's signed board files
 * (upl_fwd_cfg.on_config, on the forwarder's thread).  0, or -errno with the message in err; close f either way.
 */
int pl_forwarder_open(struct pl_forwarder *f, const struct conf_board *cfg, const char *dir, stor_log_t *log,
                         const struct pl_channels *ch, struct acq_ring *events,
                         void (*on_config)(void *ctx, const void *payload, size_t len), void *config_ctx,
                         char *err, size_t errlen);

/* Does cfg reduce anything on the uplink (a policy or a bus's frames not
   all)?  Without, the stored Batches go as they are. */
bool pl_uplink_reduces(const struct conf_board *cfg);

/*
 * The uplink's reduction of cfg (`uplink =` of buses, [channel] and
 * [signal] sections, `uplink_frames =` of CAN buses) as the forwarder takes
 * it: every channel of ch with its own policy or its bus's.  *ret_cfg's
 * arrays are allocated (pl_uplink_reduce_free()).  Returns 1 when
 * something is reduced, 0 when everything goes as stored (then nothing is
 * allocated), -ENOENT/-ENOTUNIQ with "file:line: ..." in err for a policy
 * naming no channel of the board, -ENOMEM.
 */
int pl_uplink_reduce(const struct conf_board *cfg, const struct pl_channels *ch, struct upl_reduce_cfg *ret_cfg,
                     char *err, size_t errlen);
void pl_uplink_reduce_free(struct upl_reduce_cfg *rc);

/* The log as uplink/ reads it (seek, next, seek_time over a
   stor_reader_t), for the forwarder and the Sparkplug publisher. */
struct upl_source pl_log_source(stor_reader_t *reader);

/* Free the forwarder and its readers (stop it first); f may be zeroed. */
void pl_forwarder_close(struct pl_forwarder *f);
