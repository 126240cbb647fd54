/* SPDX-License-Identifier: MIT */
/*
 * recv-text.h - `railmon recv`'s text output: the records of each Batch
 * in time order, through export's writer (record/format.h), named by the
 * Batches' channel dictionaries and, for a log whose Batches carry none
 * yet, by its vehicle's retained dictionary (railmon/<vehicle>/channels)
 * of the same config hash.  All on recv's thread (upl_recv callbacks).
 */
#pragma once

#include "ground.h"

/* g->text for g->out and g->fmt.  0 or -ENOMEM. */
int board_recv_text_new(struct ground *g);

/* Write what is still held (the end of recv: the last Batch's last
   records may have been duplicates, so it was not written out yet).
   0 or the first error of rec_format_item(). */
int board_recv_text_drain(struct ground *g);

/* Free g->text (NULL is fine) and set it NULL. */
void board_recv_text_free(struct ground *g);

/* upl_recv's on_record (ctx: struct ground). */
int board_recv_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                      const struct acq_item *it, bool first, void **log_ctx);

/* upl_recv's on_channels (ctx: struct ground): keep the vehicle's latest
   retained dictionary. */
void board_recv_channels(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b);
