/* SPDX-License-Identifier: MIT */
/*
 * forward.h - store-and-forward: publish the flash log over MQTT.
 *
 * The forwarder runs in its own thread at normal priority.  It reads stored
 * records (encoded Batches) from a persistent cursor, publishes their bytes
 * unchanged to railmon/<vehicle>/data with QoS 1 (and, if asked, their
 * events to railmon/<vehicle>/events), keeps up to cfg.inflight
 * messages unacknowledged, and moves the cursor (a small file, replaced
 * atomically) only to the lowest sequence number not yet acknowledged.
 *
 * The log is reached through struct upl_source, not through storage/:
 * modules never include each other, so pipeline/forwarder.c wires a
 * stor_reader_t into it (see uplink/README.md).  The forwarder never touches acquisition: a
 * stalled link only makes the backlog grow on flash.
 *
 * Nothing here logs.  Conditions the board must report (insecure TLS at
 * every start, connects, faults) come back as counters in
 * struct upl_forward_stats and as the return of upl_forwarder_new().
 */
#pragma once

#include <stdint.h>

#include "cursor.h"
#include "fwd-types.h"

/*
 * Validate cfg and allocate.  Strings are copied; the source ctx must live
 * until upl_forwarder_free().  Reads the cursor file (missing = 1); a
 * damaged or unreadable one is no error: the whole log is sent again and
 * the damage is reported in the stats and as UPL_FWD_CURSOR_RESET.
 * Returns 0, -EINVAL (bad cfg: insecure without use_tls, TLS without a CA,
 * key without cert, ...) or -ENOMEM.
 */
int upl_forwarder_new(const struct upl_forward_cfg *cfg, upl_forwarder_t **ret_fwd);

/* Start the thread.  0, -EALREADY, or -errno from pthread_create. */
int upl_forwarder_start(upl_forwarder_t *fwd);

/* Ask the thread to stop and join it (within about 100 ms plus one
   blocking DNS lookup).  Publishes status "offline" when connected.
   0 or -EINVAL; stopping a stopped forwarder is 0. */
int upl_forwarder_stop(upl_forwarder_t *fwd);

/*
 * Send the stored Batches whose records fall in [from_ns, to_ns] (record
 * time: a hold's window) ahead of the backlog: after live records, before
 * the oldest backlog, once each, flagged historical as the backlog is
 * (unless younger than the live window) and under the same rate cap.
 * Batches already acknowledged or in flight (backlog, live, an earlier
 * window) are not sent again; the backlog skips those the window sent.
 * A window whose end is not stored yet is followed until HOLD_WAIT (10 s)
 * past to_ns.  Callable from any thread: no allocation, only the stats
 * lock.  0; -EINVAL (from > to); -ENOTSUP (no cfg.hold_source) and
 * -ENOSPC (UPL_HOLD_MAX windows waiting), both counted in hold_refused.
 */
int upl_forwarder_hold(upl_forwarder_t *fwd, int64_t from_ns, int64_t to_ns);

/*
 * The outcome of the last remote configuration (issue 32): json is
 * published retained (QoS 1) on railmon/<vehicle>/config/status as soon
 * as connected, and again at each connect.  Callable from any thread
 * (copies json).  0; -EINVAL; -ENOMEM.
 */
int upl_forwarder_config_status(upl_forwarder_t *fwd, const char *json);

/* Consistent snapshot; callable from any thread. */
int upl_forwarder_stats(upl_forwarder_t *fwd, struct upl_forward_stats *ret_stats);

/*
 * Block until the in-memory cursor reaches seq (everything below it is
 * acknowledged) or timeout_ms passes: 0 or -ETIMEDOUT.  For tests and for
 * a board that wants to drain before shutdown.
 */
int upl_forwarder_wait_cursor(upl_forwarder_t *fwd, uint64_t seq, unsigned timeout_ms);


/* Stops if running, frees; accepts NULL; returns NULL. */
upl_forwarder_t *upl_forwarder_free(upl_forwarder_t *fwd);
