/* SPDX-License-Identifier: MIT */
/* forward-private.h - helpers of the forwarder, shared only inside uplink/. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"

/*
 * The events of a stored Batch as an event-only Batch for
 * railmon/<vehicle>/events.  Events are the last records of a Batch, so
 * they form one contiguous range and keep their sequence numbers.
 * Returns the number of events; when > 0, *ret_enc owns *ret_buf (free it
 * with rec_encoder_free() after publishing).  0 if there are none, or
 * -EBADMSG / -ENOMEM.
 */
int upl_events_batch(const void *buf, size_t len, rec_encoder_t **ret_enc,
                     const uint8_t **ret_buf, size_t *ret_len);
