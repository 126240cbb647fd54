/* SPDX-License-Identifier: MIT */
/*
 * export-write.c - `railmon export`'s writer (export.h): the filters,
 * the time order, the --channel check against the dictionaries and the
 * output (one schema for CSV and JSON lines, candump, influx, --wide,
 * ASC/BLF traces), for both of its sources, a log (export-log.c) and the
 * ground database (export-db.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/log-channels.h"
#include "report/export.h"
#include "report/say.h"

const char *rpt_export_cmd(const struct rpt_export *x)
{
	return x->cmd ? x->cmd : "export";
}

void rpt_export_say(const struct rpt_export *x, const char *fmt, ...)
{
	va_list ap;

	fprintf(x->err, "railmon %s: ", rpt_export_cmd(x));
	va_start(ap, fmt);
	vfprintf(x->err, fmt, ap);
	va_end(ap);
}

/* name: the sample's channel name, NULL if unknown */
static bool wanted(const struct rpt_export *x, const struct acq_item *it, const char *name)
{
	if (!(x->kinds & (1u << it->kind)))
		return false;
	if (it->t_ns < x->from_ns || it->t_ns >= x->to_ns)
		return false;
	if (x->nchannel_filters && (it->kind == ACQ_ITEM_SAMPLE || it->kind == ACQ_ITEM_TEXT)) {
		for (size_t i = 0; i < x->nchannel_filters; i++)
			if (name && !strcmp(name, x->resolved[i]))
				return true;
		return false;
	}
	return true;
}

/* One record out, in the order it is due. */
static int emit(struct rpt_export *x, const struct acq_item *it)
{
	struct rec_names nm = rec_channels_names(x->chans, it);
	struct rec_origin o = { x->vehicle, x->log_id, x->log_id_len };

	if (x->sink) {
		x->written++;
		return x->sink(x->sink_ctx, it, &nm);
	}
	if (x->tracew) {
		if (it->kind != ACQ_ITEM_CAN) {
			x->not_frames++;
			return 0;
		}
		x->written++;
		return trace_writer_frame(x->tracew, it);
	}
	x->written++;
	if (x->table)
		return rec_wide_add(x->table, it);
	if (!x->writer) {
		int r = rec_writer_new(x->out, x->format, &x->writer);

		if (r < 0)
			return r;
	}
	return rec_writer_item(x->writer, it, &nm, &o);
}

/* Everything the order still holds (end of a log, or a new origin). */
int rpt_export_drain(struct rpt_export *x)
{
	struct acq_item it;
	int r = 0;

	while (r >= 0 && x->order && rec_order_pop(x->order, &it) == 1)
		r = emit(x, &it);
	if (r >= 0 && x->writer)
		r = rec_writer_flush(x->writer);
	return r;
}

int rpt_export_write_item(struct rpt_export *x, const struct acq_item *it)
{
	struct acq_item due;
	int r = 0;

	/* the names only for a --channel filter: emit() looks them up for
	   what it writes */
	if (!wanted(x, it, x->nchannel_filters ? rec_channels_names(x->chans, it).channel : NULL))
		return 0;
	if (!x->order)
		return emit(x, it);
	if (rec_order_push(x->order, it) == -ENOBUFS) {
		/* full: the oldest goes out now (counted late if out of order) */
		if (rec_order_pop(x->order, &due) == 1)
			r = emit(x, &due);
		if (r < 0 || (r = rec_order_push(x->order, it)) < 0)
			return r;
	}
	while (r >= 0 && rec_order_next(x->order, &due) == 1)
		r = emit(x, &due);
	return r;
}

/* Every --channel name is in the dictionaries read ahead, resolved as
   every command resolves one (rpt_channels_resolve) into x->resolved.
   0, or the exit code. */
static int check_channels(struct rpt_export *x)
{
	int bad = rpt_channels_resolve(x->err, rpt_export_cmd(x), x->dir, x->chans, (const char *const *)x->channels,
	                               x->nchannel_filters, x->resolved);

	if (bad < 0)
		return rpt_fail(x->err, rpt_export_cmd(x), "out of memory");
	return bad ? 1 : 0;
}

/* --wide's columns: the --channel ones in their order, else every one. */
static int open_table(struct rpt_export *x, const struct rec_channel *const *list, size_t n)
{
	size_t k = x->nchannel_filters ? x->nchannel_filters : n, m = 0;
	struct rec_wide_column *cols = calloc(k ? k : 1, sizeof(*cols));
	int r;

	if (!cols)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		bool take = !x->nchannel_filters;

		for (size_t j = 0; j < x->nchannel_filters && !take; j++)
			take = !strcmp(list[i]->name, x->resolved[j]);
		if (take && m < k)
			cols[m++] = (struct rec_wide_column){ list[i]->id, list[i]->name, list[i]->unit, list[i]->has_decimals,
			                                           list[i]->decimals };
	}
	r = m ? rec_wide_new(x->out, cols, m, x->raster_ns, x->max_age_ns, &x->table) : -ENODATA;
	free(cols);
	return r;
}

/* After the dictionaries are read ahead: the channel check and the wide
   table.  0 or the exit code. */
int rpt_export_setup_output(struct rpt_export *x, const char *dir)
{
	const struct rec_channel **list;
	int n = rec_channels_sorted(x->chans, &list), r = 0;

	if (n < 0)
		return rpt_fail(x->err, rpt_export_cmd(x), "out of memory");
	x->dir = dir;
	if (x->nchannel_filters)
		r = check_channels(x);
	if (!r && x->wide) {
		int k = open_table(x, list, (size_t)n);

		if (k == -ENODATA)
			r = rpt_fail(x->err, rpt_export_cmd(x), "--wide: %s names no channels", dir);
		else if (k < 0)
			r = rpt_fail(x->err, rpt_export_cmd(x), "--wide: %s", strerror(-k));
	} else if (!r && x->sink_setup) {
		r = x->sink_setup(x->sink_ctx, x);
	} else if (!r && !x->trace && !x->sink) {
		rec_format_header(x->out, x->format);
	}
	free(list);
	return r;
}
