/* SPDX-License-Identifier: MIT */
/*
 * rollup.c - the 1 s and 1 min rollups of one group's samples, inside the
 * group's transaction: aggregated here per (channel, second), copied
 * (COPY BINARY) into a temporary table, and merged into rollup_1s and
 * rollup_1min with one upsert each (sent by ingest.c with the group's
 * last statements; in key order, so two receivers merging the same
 * vehicle lock rows in the same order and do not deadlock).
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

int grd_rollup_reserve(grd_db_t *db, size_t n)
{
	if (db->npts + n > db->cappts) {
		size_t cap = db->cappts ? db->cappts : 4096;
		while (cap < db->npts + n)
			cap *= 2;
		struct grd_point *p = realloc(db->pts, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		db->pts = p;
		db->cappts = cap;
	}
	return 0;
}

void grd_rollup_item(grd_db_t *db, int vid, const struct acq_item *it)
{
	if (it->kind != ACQ_ITEM_SAMPLE || it->sample.quality != ACQ_Q_GOOD || !isfinite(it->sample.value))
		return;
	db->pts[db->npts++] = (struct grd_point){ vid, it->sample.channel,
	                                          it->t_ns / 1000000000 - (it->t_ns % 1000000000 < 0),
	                                          it->sample.value };
}

/* One aggregate row per (vehicle, channel, second) into db->roll, COPY
   BINARY: no float to print here or to parse there. */
static int rows(grd_db_t *db, const struct grd_point *pts, size_t n)
{
	struct grd_buf *b = &db->roll;

	b->used = 0;
	if (grd_buf_room(b, 19) < 0)
		return -ENOMEM;
	grd_copy_head(b);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		double lo = pts[i].value, hi = lo, sum = 0;

		for (; j < n && pts[j].vid == pts[i].vid && pts[j].channel == pts[i].channel && pts[j].sec == pts[i].sec;
		     j++) {
			lo = pts[j].value < lo ? pts[j].value : lo;
			hi = pts[j].value > hi ? pts[j].value : hi;
			sum += pts[j].value;
		}
		if (grd_buf_room(b, 2 + 7 * 12 + 2) < 0)
			return -ENOMEM;
		grd_put16(b, 7);
		grd_f32(b, pts[i].vid);
		grd_f64(b, pts[i].channel);
		grd_f64(b, pts[i].sec * INT64_C(1000000) - GRD_PG_EPOCH_US);
		grd_f64(b, (int64_t)(j - i));
		grd_fdouble(b, lo);
		grd_fdouble(b, hi);
		grd_fdouble(b, sum);
		i = j;
	}
	grd_put16(b, 0xffff); /* the end */
	return 0;
}

static int copy_in(grd_db_t *db)
{
	PGresult *res = PQexec(db->conn, "COPY rollup_group FROM STDIN (FORMAT binary)");
	int r = 0;

	if (PQresultStatus(res) != PGRES_COPY_IN) {
		grd_db_fail_res(db, "rollup", res);
		PQclear(res);
		return -EIO;
	}
	PQclear(res);
	if (PQputCopyData(db->conn, db->roll.p, (int)db->roll.used) != 1 || PQputCopyEnd(db->conn, NULL) != 1) {
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

/* Rows unique per key already (aggregated above), merged in key order, so
   two receivers lock rollup rows in the same order. */
const char *const grd_rollup_merge[2] = {
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

int grd_rollup_copy(grd_db_t *db, bool *ret_merge)
{
	size_t n = db->npts;
	int r;

	db->npts = 0;
	*ret_merge = false;
	if (!n)
		return 0;
	qsort(db->pts, n, sizeof(*db->pts), point_cmp);
	r = rows(db, db->pts, n);
	if (r == 0)
		r = copy_in(db);
	*ret_merge = r == 0;
	return r;
}
