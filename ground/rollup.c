/* SPDX-License-Identifier: MIT */
/*
 * rollup.c - the rollups of one group's samples, inside the group's
 * transaction: aggregated here per (channel, second), copied (COPY
 * BINARY) into a temporary table, and merged into rollup_1s, rollup_1min
 * (the dashboard's: good samples) and rollup_summary_1s (summary's:
 * every sample, with the intervals inside each second) with one upsert
 * each (sent by ingest.c with the group's last statements; in key order,
 * so two receivers merging the same vehicle lock rows in the same order
 * and do not deadlock).
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

/* Every sample of the group: the time to the microsecond, as the samples
   table holds it, so the intervals here are the ones a scan of the raw
   rows sees (report/summary.c compares the two). */
struct grd_point {
	int vid;
	uint32_t channel;
	int64_t t_us;
	uint64_t seq;
	double value;
	int quality;
};

/* (vehicle, channel, time, seq): the raw rows' order, so the intervals
   and sums go as a scan of them does */
static int point_cmp(const void *a, const void *b)
{
	const struct grd_point *x = a, *y = b;

	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	if (x->channel != y->channel)
		return x->channel < y->channel ? -1 : 1;
	if (x->t_us != y->t_us)
		return x->t_us < y->t_us ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

static int64_t point_sec(const struct grd_point *p)
{
	return grd_floordiv(p->t_us, 1000000);
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
	if (it->kind != ACQ_ITEM_SAMPLE)
		return;
	db->pts[db->npts++] = (struct grd_point){ vid, it->sample.channel, grd_floordiv(it->t_ns, 1000), it->seq,
	                                          it->sample.value, it->sample.quality };
}

/* One second of one channel: the dashboard's good samples and summary's
   every sample (rollup_summary_1s's columns, migration 0009). */
struct sec_agg {
	int64_t n, n_all, n_oor, n_inv;
	double vmin, vmax, vsum, amin, amax, asum;
	int64_t dt_min, dt_max;  /* us; dt_min 0: no positive interval */
};

static void sec_take(struct sec_agg *a, const struct grd_point *p, const struct grd_point *prev)
{
	bool ok = p->quality != ACQ_Q_INVALID && isfinite(p->value);

	if (prev) {
		int64_t dt = p->t_us - prev->t_us;

		if (dt > 0 && (!a->dt_min || dt < a->dt_min))
			a->dt_min = dt;
		a->dt_max = dt > a->dt_max ? dt : a->dt_max;
	}
	a->n_all++;
	a->n_oor += p->quality == ACQ_Q_OUT_OF_RANGE;
	a->n_inv += !ok;
	if (ok) {
		a->amin = a->n_all - a->n_inv == 1 || p->value < a->amin ? p->value : a->amin;
		a->amax = a->n_all - a->n_inv == 1 || p->value > a->amax ? p->value : a->amax;
		a->asum += p->value;
	}
	if (p->quality == ACQ_Q_GOOD && isfinite(p->value)) {
		a->vmin = !a->n || p->value < a->vmin ? p->value : a->vmin;
		a->vmax = !a->n || p->value > a->vmax ? p->value : a->vmax;
		a->vsum += p->value;
		a->n++;
	}
}

/* A double field, or NULL (length -1) when there is none. */
static void put_double_or_null(struct grd_buf *b, bool some, double v)
{
	if (some)
		grd_fdouble(b, v);
	else
		grd_put32(b, UINT32_MAX);
}

#define ROLLUP_COLS 17

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
		struct sec_agg a = { 0 };
		int64_t sec = point_sec(&pts[i]);

		for (; j < n && pts[j].vid == pts[i].vid && pts[j].channel == pts[i].channel && point_sec(&pts[j]) == sec;
		     j++)
			sec_take(&a, &pts[j], j > i ? &pts[j - 1] : NULL);
		if (grd_buf_room(b, 2 + ROLLUP_COLS * 12 + 2) < 0)
			return -ENOMEM;
		grd_put16(b, ROLLUP_COLS);
		grd_f32(b, pts[i].vid);
		grd_f64(b, pts[i].channel);
		grd_f64(b, sec * INT64_C(1000000) - GRD_PG_EPOCH_US);
		grd_f64(b, a.n);
		put_double_or_null(b, a.n, a.vmin);
		put_double_or_null(b, a.n, a.vmax);
		grd_fdouble(b, a.vsum);
		grd_f64(b, a.n_all);
		grd_f64(b, a.n_oor);
		grd_f64(b, a.n_inv);
		put_double_or_null(b, a.n_all > a.n_inv, a.amin);
		put_double_or_null(b, a.n_all > a.n_inv, a.amax);
		grd_fdouble(b, a.asum);
		grd_f64(b, pts[i].t_us - GRD_PG_EPOCH_US);
		grd_f64(b, pts[j - 1].t_us - GRD_PG_EPOCH_US);
		if (a.dt_min)
			grd_f64(b, a.dt_min);
		else
			grd_put32(b, UINT32_MAX);
		grd_f64(b, a.dt_max);
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
   two receivers lock rollup rows in the same order.  The dashboard's
   rollups take the seconds with a good sample (n > 0).  Summary's second
   on a conflict (a second cut between two groups' Batches): the interval
   between the row already there and the new one, when they do not
   interleave (else dt_max NULL: not known, summary reads the raw rows). */
const char *const grd_rollup_merge[GRD_ROLLUP_MERGES] = {
	"INSERT INTO rollup_1s AS r (vehicle_id, channel, t, n, vmin, vmax, vsum) "
	"SELECT vehicle_id, channel, t, n, vmin, vmax, vsum FROM rollup_group WHERE n > 0 ORDER BY 1, 2, 3 "
	"ON CONFLICT (vehicle_id, channel, t) DO UPDATE SET n = r.n + excluded.n, "
	"vmin = least(r.vmin, excluded.vmin), vmax = greatest(r.vmax, excluded.vmax), vsum = r.vsum + excluded.vsum",
	"INSERT INTO rollup_1min AS r (vehicle_id, channel, t, n, vmin, vmax, vsum) "
	"SELECT vehicle_id, channel, date_trunc('minute', t), sum(n), min(vmin), max(vmax), sum(vsum) "
	"FROM rollup_group WHERE n > 0 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3 "
	"ON CONFLICT (vehicle_id, channel, t) DO UPDATE SET n = r.n + excluded.n, "
	"vmin = least(r.vmin, excluded.vmin), vmax = greatest(r.vmax, excluded.vmax), vsum = r.vsum + excluded.vsum",
	"INSERT INTO rollup_summary_1s AS r (vehicle_id, channel, t, n_all, n_oor, n_inv, a_min, a_max, a_sum, "
	"t_first, t_last, dt_min, dt_max) "
	"SELECT vehicle_id, channel, t, n_all, n_oor, n_inv, a_min, a_max, a_sum, t_first, t_last, dt_min, dt_max "
	"FROM rollup_group ORDER BY 1, 2, 3 "
	"ON CONFLICT (vehicle_id, channel, t) DO UPDATE SET n_all = r.n_all + excluded.n_all, "
	"n_oor = r.n_oor + excluded.n_oor, n_inv = r.n_inv + excluded.n_inv, a_min = least(r.a_min, excluded.a_min), "
	"a_max = greatest(r.a_max, excluded.a_max), a_sum = r.a_sum + excluded.a_sum, "
	"t_first = least(r.t_first, excluded.t_first), t_last = greatest(r.t_last, excluded.t_last), "
	"dt_min = least(r.dt_min, excluded.dt_min, nullif(CASE WHEN r.t_last <= excluded.t_first THEN (extract(epoch FROM excluded.t_first - r.t_last) * 1000000)::bigint WHEN excluded.t_last <= r.t_first THEN (extract(epoch FROM r.t_first - excluded.t_last) * 1000000)::bigint END, 0)), "
	"dt_max = CASE WHEN r.dt_max IS NULL OR excluded.dt_max IS NULL OR (CASE WHEN r.t_last <= excluded.t_first THEN (extract(epoch FROM excluded.t_first - r.t_last) * 1000000)::bigint WHEN excluded.t_last <= r.t_first THEN (extract(epoch FROM r.t_first - excluded.t_last) * 1000000)::bigint END) IS NULL THEN NULL "
	"ELSE greatest(r.dt_max, excluded.dt_max, CASE WHEN r.t_last <= excluded.t_first THEN (extract(epoch FROM excluded.t_first - r.t_last) * 1000000)::bigint WHEN excluded.t_last <= r.t_first THEN (extract(epoch FROM r.t_first - excluded.t_last) * 1000000)::bigint END) END",
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
