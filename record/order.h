/* SPDX-License-Identifier: MIT */
/*
 * order.h - records back in time order with bounded memory.
 *
 * A Batch holds its CAN frames, then its samples, then its events, and
 * the buses' rings drain at their own pace, so a log read in seq order
 * steps back in time (up to a collect period or so).  rec_order is a
 * merge over a time window: records are held in (time, seq) order (a few
 * sorted queues, a min-heap for what they do not take: order.c), and the
 * oldest comes out once it is older than the last record pushed
 * minus the window, or when the heap is full (memory stays bounded; the
 * records that then come out of order are counted as late).  The last
 * record, not the newest: a log's time need not rise (a replay's START
 * event has the replay's time, its records the trace's; a clock step
 * back), and one record far ahead must not let all others out unsorted.  At the end,
 * rec_order_pop() drains the rest in order.  Not thread-safe.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

typedef struct rec_order rec_order_t;

/* Default window: records more than this out of order are late. */
#define REC_ORDER_WINDOW_NS 5000000000LL
/* Default bound: records held at most (about 100 bytes each). */
#define REC_ORDER_MAX_ITEMS (1u << 18)

/* An empty order holding up to max_items (>= 1) records, window_ns >= 0.
   The heap grows as records come, up to max_items.  0, -EINVAL, -ENOMEM. */
int rec_order_new(size_t max_items, int64_t window_ns, rec_order_t **ret_order);
rec_order_t *rec_order_free(rec_order_t *o);

/* Take a copy of it (of a TRDP telegram's bytes too: they live until the
   next rec_order_next()/rec_order_pop() after it came out, or
   rec_order_free()).  0; -ENOBUFS when full (take one out first with
   rec_order_next()); -ENOMEM; -EINVAL. */
int rec_order_push(rec_order_t *o, const struct acq_item *it);

/* The oldest record into *ret_item if it is due: older than the last
   pushed minus the window, or the heap is full.  1 if one came out, 0 if
   none is due. */
int rec_order_next(rec_order_t *o, struct acq_item *ret_item);

/* The oldest record whatever the window (draining at the end): 1, or 0 if
   empty. */
int rec_order_pop(rec_order_t *o, struct acq_item *ret_item);

/* Records pushed older than one already taken out: they came out late,
   out of time order (more than the window behind, or the heap was full). */
uint64_t rec_order_late(const rec_order_t *o);

/* Records held now. */
size_t rec_order_count(const rec_order_t *o);
