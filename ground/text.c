/* SPDX-License-Identifier: MIT */
/*
 * text.c - recv's records as text: export's writer (record/format.h),
 * named by the dictionaries each (vehicle, log id) sent, with the vehicle
 * and log each record came from.
 */
#include <errno.h>
#include <stdio.h>

#include "ground.h"

int grd_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                    const struct acq_item *it, bool first, void **log_ctx)
{
	struct grd *g = ctx;
	struct grd_log *gl = grd_log_get(g, info, log_ctx);
	struct rec_origin origin = { info->vehicle, info->log_id, info->log_id_len, info->historical };
	struct rec_names nm;
	int r;

	if (!gl || (!gl->names && rec_channels_new(&gl->names) < 0))
		return -ENOMEM;
	/* A name that could not be kept (no memory) is printed empty. */
	if (first)
		rec_channels_learn(gl->names, b);
	if (g->fmt == REC_FORMAT_CANDUMP && it->kind != ACQ_ITEM_CAN)
		return 0;
	nm = rec_channels_names(gl->names, it);
	r = rec_format_item(g->out, g->fmt, it, &nm, &origin);
	if (r == -EIO)
		clearerr(g->out); /* counted (sink_errors); the next records may go out */
	return r;
}
