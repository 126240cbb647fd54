/* SPDX-License-Identifier: MIT */
/* export-cli.c - what export checks and says around the engine: the option
   combinations, the end of the output, the totals (export.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "report/export.h"
#include "report/say.h"

int rpt_export_check(struct rpt_export *x)
{
	if (x->raster_ns && !x->wide)
		return rpt_fail(x->err, rpt_export_cmd(x), "--raster needs --wide");
	if (x->wide && x->trace)
		return rpt_fail(x->err, rpt_export_cmd(x), "--wide writes CSV: no --format asc or blf");
	if (x->wide && x->format != REC_FORMAT_CSV)
		return rpt_fail(x->err, rpt_export_cmd(x), "--wide writes CSV: no --format %s",
		                x->format == REC_FORMAT_JSONL ? "jsonl" : x->format == REC_FORMAT_INFLUX ? "influx" : "candump");
	if (x->wide && x->window_ns < 0)
		return rpt_fail(x->err, rpt_export_cmd(x), "--wide needs time order: no --order seq");
	if (x->from_ns >= x->to_ns) /* [from, to): an empty span would write a header and exit 0 */
		return rpt_fail(x->err, rpt_export_cmd(x), "--from is not before --to: no time is between them");
	if (!x->kinds)
		x->kinds = x->format == REC_FORMAT_CANDUMP || x->trace ? 1u << ACQ_ITEM_CAN
		         : x->nchannel_filters || x->wide ? 1u << ACQ_ITEM_SAMPLE | 1u << ACQ_ITEM_TEXT
		                                          : (1u << ACQ_ITEM_KIND_MAX) - 1;
	if (x->window_ns >= 0 && rec_order_new(REC_ORDER_MAX_ITEMS, x->window_ns, &x->order) < 0)
		return rpt_fail(x->err, rpt_export_cmd(x), "out of memory");
	return 0;
}

void rpt_export_summary(const struct rpt_export *x)
{
	uint64_t late = rec_order_late(x->order);

	if (late)
		rpt_export_say(x, "%" PRIu64 " records were more than the window (--window %.3gs) "
		        "out of time order and came out late\n", late, (double)x->window_ns / 1e9);
	if (x->uncorrected)
		rpt_export_say(x, "%" PRIu64 " records without a monotonic base (a replay, railmon before "
		        "it) left as recorded\n", x->uncorrected);
	if (x->table)
		rpt_export_say(x, "%" PRIu64 " rows of %s\n", rec_wide_rows(x->table),
		        x->raster_ns ? "raster points" : "timestamps");
	if (x->damaged)
		rpt_export_say(x, "%" PRIu64 " records written; %" PRIu64 " unreadable part%s of the log "
		        "skipped (see above)\n", x->written, x->damaged, x->damaged == 1 ? "" : "s");
	else
		rpt_export_say(x, "%" PRIu64 " records written\n", x->written);
}

int rpt_export_finish(struct rpt_export *x, int r)
{
	if (x->tracew) {
		int k = trace_writer_close(x->tracew);

		if (k < 0)
			rpt_export_say(x, "write: %s\n", strerror(-k));
		r = r != 0 ? r : k;
		if (x->not_frames)
			rpt_export_say(x, "%" PRIu64 " records that are no CAN frame left out of the trace\n",
			        x->not_frames);
	}
	if (x->writer && rec_writer_flush(x->writer) < 0 && r >= 0)
		r = -EIO;
	if (x->table && rec_wide_finish(x->table) < 0 && r >= 0)
		r = -EIO;
	if (x->out && fflush(x->out) != 0 && r >= 0)
		r = -errno;
	return r;
}
