/* SPDX-License-Identifier: MIT */
/*
 * rollup-read.c - rollup_summary_1s read back (rollup.h): a day of one
 * channel is 86,400 rows at most, fetched in pages the caller asks for, so memory
 * stays bounded whatever the range.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db-private.h"
#include "ground/rollup.h"
#include "basic/byteorder.h"

/* A bound as to_timestamp() takes it: seconds from the epoch (exact
   for any microsecond of a realistic time, |us| < 2^53), or an
   infinity. */
static void bound_text(int64_t t_ns, char out[40])
{
	if (t_ns == INT64_MIN)
		snprintf(out, 40, "-infinity");
	else if (t_ns == INT64_MAX)
		snprintf(out, 40, "infinity");
	else
		snprintf(out, 40, "%" PRId64 "e-6", grd_floordiv(t_ns, 1000));
}

/* The answer's fields are binary (PostgreSQL's network order): a
   timestamptz is the int8 of microseconds since 2000, exact and with
   nothing to parse (its text, through extract(epoch), cost the server
   five times the rows' scan). */
static int64_t be64_at(PGresult *res, int i, int col)
{
	return (int64_t)basic_get_be64(PQgetvalue(res, i, col));
}

static bool field_ok(PGresult *res, int i, int col)
{
	return !PQgetisnull(res, i, col) && PQgetlength(res, i, col) == 8;
}

static int64_t ns_of(PGresult *res, int i, int col, int64_t null)
{
	return field_ok(res, i, col) ? (be64_at(res, i, col) + GRD_PG_EPOCH_US) * 1000 : null;
}

static int64_t dt_ns_of(PGresult *res, int i, int col, int64_t null)
{
	return field_ok(res, i, col) ? be64_at(res, i, col) * 1000 : null;
}

static uint64_t u64_of(PGresult *res, int i, int col)
{
	return field_ok(res, i, col) ? (uint64_t)be64_at(res, i, col) : 0;
}

static double double_of(PGresult *res, int i, int col)
{
	uint64_t bits = field_ok(res, i, col) ? (uint64_t)be64_at(res, i, col) : 0;
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

static PGresult *ask(grd_db_t *db, const char *sql, int n, const char *const *v, int binary)
{
	PGresult *res;

	if (grd_db_connect(db) < 0)
		return NULL;
	res = PQexecParams(db->conn, sql, n, NULL, v, NULL, NULL, binary);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		grd_db_fail(db, "summary rollup", PQerrorMessage(db->conn));
		PQclear(res);
		return NULL;
	}
	return res;
}

int grd_db_summary_rollups(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                           struct grd_summary_row *rows, size_t max)
{
	static const char sql[] =
		"SELECT t, n_all, n_oor, n_inv, a_min, a_max, a_sum, t_first, t_last, dt_min, dt_max FROM rollup_summary_1s WHERE vehicle_id = (SELECT vehicle_id FROM vehicles "
		"WHERE name = $1) AND channel = $2 AND t >= to_timestamp($3::float8) AND t < to_timestamp($4::float8) "
		"ORDER BY t LIMIT $5";
	char ch[16], from[40], to[40], lim[24];
	const char *v[5] = { vehicle, ch, from, to, lim };
	PGresult *res;
	int n;

	if (!vehicle || !rows || !max || max > INT32_MAX)
		return -EINVAL;
	snprintf(ch, sizeof(ch), "%" PRIu32, channel);
	bound_text(from_ns, from);
	bound_text(to_ns, to);
	snprintf(lim, sizeof(lim), "%zu", max);
	if (!(res = ask(db, sql, 5, v, 1)))
		return db->conn ? -EIO : -ECONNREFUSED;
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
		rows[i] = (struct grd_summary_row){
			.t_ns = ns_of(res, i, 0, 0), .n_all = u64_of(res, i, 1), .n_oor = u64_of(res, i, 2),
			.n_inv = u64_of(res, i, 3), .a_min = double_of(res, i, 4), .a_max = double_of(res, i, 5),
			.a_sum = double_of(res, i, 6), .t_first_ns = ns_of(res, i, 7, 0), .t_last_ns = ns_of(res, i, 8, 0),
			.dt_min_ns = dt_ns_of(res, i, 9, INT64_MAX), .dt_max_ns = dt_ns_of(res, i, 10, -1),
		};
	PQclear(res);
	return n;
}

int grd_db_summary_channels(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns, uint32_t **ret_ids)
{
	static const char sql[] =
		"SELECT DISTINCT channel FROM rollup_summary_1s WHERE vehicle_id = (SELECT vehicle_id FROM vehicles "
		"WHERE name = $1) AND t >= to_timestamp($2::float8) AND t < to_timestamp($3::float8) ORDER BY 1";
	char from[40], to[40];
	const char *v[3] = { vehicle, from, to };
	PGresult *res;
	uint32_t *ids;
	int n;

	*ret_ids = NULL;
	bound_text(from_ns, from);
	bound_text(to_ns, to);
	if (!(res = ask(db, sql, 3, v, 0)))
		return db->conn ? -EIO : -ECONNREFUSED;
	n = PQntuples(res);
	ids = malloc(((size_t)n + 1) * sizeof(*ids));
	if (!ids) {
		PQclear(res);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++)
		ids[i] = (uint32_t)strtoul(PQgetvalue(res, i, 0), NULL, 10);
	PQclear(res);
	*ret_ids = ids;
	return n;
}

int grd_db_rollup_valid_second(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                               bool last, int64_t *ret_t_ns)
{
	/* the primary key's order, from either end: one row read */
	static const char *const sql[2] = {
		"SELECT t FROM rollup_summary_1s WHERE vehicle_id = (SELECT vehicle_id FROM vehicles WHERE name = $1) "
		"AND channel = $2 AND t >= to_timestamp($3::float8) AND t < to_timestamp($4::float8) AND n_all > n_inv "
		"ORDER BY t LIMIT 1",
		"SELECT t FROM rollup_summary_1s WHERE vehicle_id = (SELECT vehicle_id FROM vehicles WHERE name = $1) "
		"AND channel = $2 AND t >= to_timestamp($3::float8) AND t < to_timestamp($4::float8) AND n_all > n_inv "
		"ORDER BY t DESC LIMIT 1",
	};
	char ch[16], from[40], to[40];
	const char *v[4] = { vehicle, ch, from, to };
	PGresult *res;
	int n;

	if (!vehicle || !ret_t_ns)
		return -EINVAL;
	snprintf(ch, sizeof(ch), "%" PRIu32, channel);
	bound_text(from_ns, from);
	bound_text(to_ns, to);
	if (!(res = ask(db, sql[last], 4, v, 1)))
		return db->conn ? -EIO : -ECONNREFUSED;
	n = PQntuples(res) == 1 && field_ok(res, 0, 0);
	if (n)
		*ret_t_ns = ns_of(res, 0, 0, 0);
	PQclear(res);
	return n;
}

/* "{s,s,...}": the seconds since the epoch, a float8[] literal; and
   "{t,f,...}" of whole, a bool[] */
static char *seconds_array(const int64_t *secs, const bool *whole, size_t n)
{
	char *a = malloc(n * 24 + 3), *p = a;

	if (!a)
		return NULL;
	*p++ = '{';
	for (size_t i = 0; i < n; i++) {
		if (whole)
			p += sprintf(p, "%s%c", i ? "," : "", whole[i] ? 't' : 'f');
		else
			p += sprintf(p, "%s%" PRId64, i ? "," : "", grd_floordiv(secs[i], 1000000000));
	}
	strcpy(p, "}");
	return a;
}

int grd_db_samples_of(grd_db_t *db, const char *vehicle, uint32_t channel, const int64_t *secs, const bool *whole,
                      size_t n, grd_sample_fn fn, void *ctx)
{
	/* One scan of the seconds' span (the day's partition, its BRIN index
	   on t), the rows of the seconds asked picked by a hash of them:
	   a probe per second would read a BRIN range of all channels each.
	   NaN = NaN in PostgreSQL's float8, so the list finds it. */
	static const char sql[] =
		"SELECT s.t, s.seq, s.value, s.quality::int8 FROM samples s JOIN (SELECT to_timestamp(x) AS sec, "
		"bool_or(w) AS w FROM unnest($3::float8[], $4::bool[]) u(x, w) GROUP BY 1) k "
		"ON date_bin('1 second', s.t, timestamptz 'epoch') = k.sec "
		"WHERE s.vehicle_id = (SELECT vehicle_id FROM vehicles WHERE name = $1) AND s.channel = $2 "
		"AND s.t >= to_timestamp($5::float8) AND s.t < to_timestamp($6::float8) "
		"AND (k.w OR s.quality = 2 OR s.value IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)) "
		"ORDER BY s.t, s.seq";
	char ch[16], from[40], to[40], *arr, *warr;
	const char *v[6] = { vehicle, ch, NULL, NULL, from, to };
	PGresult *res;
	int rows, r = 0;

	if (!vehicle || !fn || !secs || !whole || !n || n > GRD_SAMPLE_SECONDS_MAX)
		return -EINVAL;
	snprintf(ch, sizeof(ch), "%" PRIu32, channel);
	bound_text(secs[0], from);
	bound_text(secs[n - 1] + 1000000000, to);
	arr = seconds_array(secs, NULL, n);
	warr = seconds_array(secs, whole, n);
	v[2] = arr;
	v[3] = warr;
	res = arr && warr ? ask(db, sql, 6, v, 1) : NULL;
	free(arr);
	free(warr);
	if (!res)
		return !arr || !warr ? -ENOMEM : db->conn ? -EIO : -ECONNREFUSED;
	rows = PQntuples(res);
	for (int i = 0; i < rows && r >= 0; i++) {
		struct grd_sample s = { .t_ns = ns_of(res, i, 0, 0), .seq = u64_of(res, i, 1),
		                        .value = double_of(res, i, 2), .quality = (int)u64_of(res, i, 3) };
		r = fn(ctx, &s);
	}
	PQclear(res);
	return r < 0 ? r : rows;
}

int grd_db_snapshot(grd_db_t *db)
{
	int r = grd_db_connect(db);

	return r < 0 ? r : grd_db_exec(db, "snapshot", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
}
