/* SPDX-License-Identifier: MIT */
/*
 * rollup.c - the 1 s and 1 min rollups of one Batch's samples, inside the
 * Batch's transaction: aggregated here per (channel, second), copied into
 * a temporary table, and merged into rollup_1s and rollup_1min with one
 * upsert each (in key order, so two receivers merging the same vehicle
 * lock rows in the same order and do not deadlock).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db-private.h"
#include "acquisition/acq-item.h"

struct grd_point {
	int vid;
	uint32_t channel;
	int64_t sec;
	double value;
};

static int point_cmp(const void *a, const void *b)
{
	const struct grd_point *x = a, *y = b;

	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	if (x->channel != y->channel)
		return x->channel < y->channel ? -1 : 1;
	return (x->sec > y->sec) - (x->sec < y->sec);
}

int grd_rollup_add(grd_db_t *db, int vid, const rec_batch_t *b, uint32_t count)
{
	if (db->npts + count > db->cappts) {
		size_t cap = db->cappts ? db->cappts : 4096;
		while (cap < db->npts + count)
			cap *= 2;
		struct grd_point *p = realloc(db->pts, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		db->pts = p;
		db->cappts = cap;
	}
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		if (it.kind != ACQ_ITEM_SAMPLE || it.sample.quality != ACQ_Q_GOOD || !isfinite(it.sample.value))
			continue;
		db->pts[db->npts++] = (struct grd_point){ vid, it.sample.channel,
		                                          it.t_ns / 1000000000 - (it.t_ns % 1000000000 < 0),
		                                          it.sample.value };
	}
	return 0;
}

/* One aggregate row per (vehicle, channel, second) into db->buf, COPY text. */
static int rows(grd_db_t *db, const struct grd_point *pts, size_t n)
{
	db->used = 0;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double lo = pts[i].value, hi = lo, sum = 0;
		time_t tt = (time_t)pts[i].sec;
		struct tm tm;

		for (; j < n && pts[j].vid == pts[i].vid && pts[j].channel == pts[i].channel && pts[j].sec == pts[i].sec;
		     j++) {
			lo = pts[j].value < lo ? pts[j].value : lo;
			hi = pts[j].value > hi ? pts[j].value : hi;
			sum += pts[j].value;
		}
		if (db->used + 200 > db->cap) {
			size_t cap = db->cap ? db->cap * 2 : 65536;
			char *p = realloc(db->buf, cap);
			if (!p)
				return -ENOMEM;
			db->buf = p;
			db->cap = cap;
		}
		gmtime_r(&tt, &tm);
		db->used += (size_t)sprintf(db->buf + db->used,
		                            "%d\t%" PRIu32 "\t%04d-%02d-%02d %02d:%02d:%02d+00\t%zu\t%.17g\t%.17g\t%.17g\n",
		                            pts[i].vid, pts[i].channel, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		                            tm.tm_hour, tm.tm_min, tm.tm_sec, j - i, lo, hi, sum);
		i = j;
	}
	return 0;
}

static int copy_in(grd_db_t *db)
{
	PGresult *res = PQexec(db->conn, "COPY rollup_group FROM STDIN");
	int r = 0;

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		grd_db_fail_res(db, "rollup", res);
		PQclear(res);
		return -EIO;
	}
	PQclear(res);
	if (PQputCopyData(db->conn, db->buf, (int)db->used) != 1 || PQputCopyEnd(db->conn, NULL) != 1) {
		grd_db_fail(db, "rollup", PQerrorMessage(db->conn));
		return -EIO;
	}
	while ((res = PQgetResult(db->conn))) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			grd_db_fail_res(db, "rollup", res);
			r = -EIO;
		}
		PQclear(res);
	}
	return r;
}

int grd_rollup(grd_db_t *db)
{
	/* Rows unique per key already (aggregated above), merged in key
	   order, so two receivers lock rollup rows in the same order. */
	static const char *const merge[2] = {
		"INSERT INTO rollup_1s AS r (vehicle_id, channel, t, n, vmin, vmax, vsum) "
		"SELECT vehicle_id, channel, t, n, vmin, vmax, vsum FROM rollup_group ORDER BY 1, 2, 3 "
		"ON CONFLICT (vehicle_id, channel, t) DO UPDATE SET n = r.n + excluded.n, "
		"vmin = least(r.vmin, excluded.vmin), vmax = greatest(r.vmax, excluded.vmax), vsum = r.vsum + excluded.vsum",
		"INSERT INTO rollup_1min AS r (vehicle_id, channel, t, n, vmin, vmax, vsum) "
		"SELECT vehicle_id, channel, date_trunc('minute', t), sum(n), min(vmin), max(vmax), sum(vsum) "
		"FROM rollup_group GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 "
		"ON CONFLICT (vehicle_id, channel, t) DO UPDATE SET n = r.n + excluded.n, "
		"vmin = least(r.vmin, excluded.vmin), vmax = greatest(r.vmax, excluded.vmax), vsum = r.vsum + excluded.vsum",
	};
	size_t n = db->npts;
	int r;

	db->npts = 0;
	if (!n)
		return 0;
	qsort(db->pts, n, sizeof(*db->pts), point_cmp);
	r = rows(db, db->pts, n);
	if (r == 0)
		r = copy_in(db);
	for (int i = 0; r == 0 && i < 2; i++)
		r = grd_db_exec(db, "rollup", merge[i]);
	return r;
}
