/* SPDX-License-Identifier: MIT */
/*
 * export-db.c - `railmon export --db URL --vehicle V`: the ground's
 * PostgreSQL database as export's source (ground/export.c streams the
 * vehicle's records in time order), named by the vehicle's dictionary in
 * the database, through the same filters and writers as a log
 * (export.h): every format of export, --wide and --raster included.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ground/db.h"
#include "report/export.h"

/* grd_db_export()'s callback: the same filters and writer as a log's
   (names from the dictionary read ahead); the records of another log id
   wait for the ones before to go out first, as in export-log.c. */
static int db_item(void *ctx, const struct acq_item *it, const uint8_t *log_id, size_t len)
{
	struct rpt_export *x = ctx;
	int r = 0;

	if (len > REC_LOG_ID_LEN)
		len = 0;
	if (len != x->log_id_len || (len && memcmp(log_id, x->log_id, len))) {
		r = rpt_export_drain(x);
		x->log_id_len = len;
		if (len)
			memcpy(x->log_id, log_id, len);
	}
	if (r >= 0)
		r = rpt_export_write_item(x, it);
	/* the stream's errno (ENOSPC, EPIPE...), said as the output's, not
	   the database's; taken before the progress line may set errno */
	r = r < 0 ? r : ferror(x->out) ? -(errno > 0 ? errno : EIO) : 0;
	/* the callback per 4096 records: the rows come one by one, not in Batches */
	if (x->progress && (++x->progress_n & 4095) == 0)
		x->progress(x->progress_ctx, x->progress_n, 0);
	return r;
}

/* The ids of the channels export's --channel names (x->resolved, once
   the output is set up): every entry of the dictionary with one of those
   names, as the filter compares names.  *ret malloc'd (NULL: no
   --channel, every channel).  Its count, or -ENOMEM. */
static const char *resolved_at(const void *ctx, size_t i)
{
	return ((const struct rpt_export *)ctx)->resolved[i];
}

static int channel_ids(const struct rpt_export *x, uint32_t **ret)
{
	*ret = NULL;
	if (!x->nchannel_filters)
		return 0;
	return rec_channels_ids(x->chans, resolved_at, x, x->nchannel_filters, ret);
}

static void say_db(const struct rpt_export *x, grd_db_t *db, int r)
{
	rpt_export_say(x, "--db: %s\n", r == -EIO && !*grd_db_error(db) ? strerror(EIO) :
	        *grd_db_error(db) ? grd_db_error(db) : strerror(-r));
}

int rpt_export_db(struct rpt_export *x, const char *url, const char *vehicle)
{
	struct grd_db_cfg cfg = { .url = url };
	struct grd_export_query q = { .vehicle = vehicle, .from_ns = x->from_ns, .to_ns = x->to_ns };
	char *where = NULL;
	grd_db_t *db;
	int r;

	r = grd_db_new(&cfg, &db);
	if (r == -ENOTSUP)
		rpt_export_say(x, "--db: %s\n", GRD_DB_NOT_BUILT);
	if (r < 0)
		return r;
	r = grd_db_check(db);
	if (r == 0 && (r = grd_db_vehicle_known(db, vehicle)) == 0) {
		/* an empty answer with exit 0 would look like a vehicle that sent nothing in the window */
		rpt_export_say(x, "--vehicle %s: the database has no such vehicle (it never sent a Batch)\n",
		        vehicle);
		grd_db_free(db);
		return 1;
	}
	if (r > 0)
		r = grd_db_channels(db, vehicle, x->chans);
	if (r < 0) {
		say_db(x, db, r);
		grd_db_free(db);
		return r;
	}
	free(x->vehicle);
	x->vehicle = strdup(vehicle);
	x->log_id_len = 0;
	if (!x->vehicle || asprintf(&where, "vehicle %s in the database", vehicle) < 0) {
		grd_db_free(db);
		return -ENOMEM;
	}
	r = rpt_export_setup_output(x, where);
	if (r == 0) {
		if (x->progress) /* the line from the start: the query's first rows can take a while */
			x->progress(x->progress_ctx, 0, 0);
		/* The database sends the rows sorted by (time, seq), the time
		   order's own key: its heap would give them back as they come,
		   at a tenth of the export's time.  Set aside, not freed: it is
		   the caller's (and says no record late). */
		rec_order_t *order = x->order;
		uint32_t *ids = NULL;
		int k = channel_ids(x, &ids);

		x->order = NULL;
		/* the kinds as the setup left them (plot --db drew the samples
		   from the rollup there: its events only are read here) */
		q.kinds = x->kinds;
		q.channels = ids;
		q.nchannels = k > 0 ? (size_t)k : 0;
		/* (k 0: every channel is read; the filter in
		   rpt_export_write_item() still picks, as it always does) */
		r = k < 0 ? k : grd_db_export(db, &q, db_item, x);
		free(ids);
		x->order = order;
		if (r < 0 && ferror(x->out))
			rpt_export_say(x, "write: %s\n", strerror(-r));
		else if (r < 0 && r != -EIO && r != -ECONNREFUSED && r != -EPROTO)
			rpt_export_say(x, "write: %s\n", strerror(-r));
		else if (r < 0)
			say_db(x, db, r);
		else
			r = rpt_export_drain(x);
		r = r > 0 ? 0 : r;
	}
	free(where);
	grd_db_free(db);
	return r;
}
