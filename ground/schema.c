/* SPDX-License-Identifier: MIT */
/*
 * schema.c - the ground database's schema and retention: its version, the
 * migrations compiled in (ground/migrations), the check that the schema
 * is the one this railmon writes, and the day partitions dropped by
 * `railmon db prune`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "db-private.h"

/* ---- schema ---- */

static int read_version(grd_db_t *db, int *ret_version)
{
	PGresult *res = PQexec(db->conn, "SELECT to_regclass('schema_migrations') IS NOT NULL");
	int r = 0, v = 0;

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		goto fail;
	if (PQgetvalue(res, 0, 0)[0] == 't') {
		PQclear(res);
		res = PQexec(db->conn, "SELECT coalesce(max(version), 0) FROM schema_migrations");
		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			goto fail;
		v = atoi(PQgetvalue(res, 0, 0));
	}
	PQclear(res);
	*ret_version = v;
	return 0;
fail:
	r = grd_db_failed(db, "schema version", res);
	PQclear(res);
	return r;
}

int grd_db_version(grd_db_t *db, int *ret_version)
{
	int r = grd_db_connect(db);

	return r < 0 ? r : read_version(db, ret_version);
}

static int apply(grd_db_t *db, const struct grd_migration *m)
{
	char sql[256], what[96];
	int r;

	snprintf(what, sizeof(what), "migration %04d-%s", m->version, m->name);
	r = grd_db_exec(db, what, m->sql);
	if (r < 0)
		return r;
	snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')", m->version,
	         m->name);
	return grd_db_exec(db, what, sql);
}

int grd_db_migrate(grd_db_t *db, bool init)
{
	int r = grd_db_connect(db), v = 0, n = 0;

	if (r < 0)
		return r;
	/* The lock makes two migrators (two receivers started at once) apply
	   each version once: the second waits, then finds nothing to do. */
	r = grd_db_exec(db, "migrate", "BEGIN; CREATE TABLE IF NOT EXISTS schema_migrations ("
	                "version integer PRIMARY KEY, name text NOT NULL, "
	                "applied_at timestamptz NOT NULL DEFAULT now()); "
	                "LOCK TABLE schema_migrations IN EXCLUSIVE MODE");
	if (r == 0)
		r = read_version(db, &v);
	if (r == 0 && init && v > 0)
		r = -EEXIST;
	if (r == 0 && (size_t)v > grd_migrations_n)
		r = -EPROTO;
	for (size_t i = (size_t)v; r == 0 && i < grd_migrations_n; i++, n++)
		r = apply(db, &grd_migrations[i]);
	if (r == 0)
		r = grd_db_exec(db, "migrate", "COMMIT");
	if (r < 0 && db->conn && PQstatus(db->conn) == CONNECTION_OK)
		PQclear(PQexec(db->conn, "ROLLBACK"));
	if (r == -EEXIST || r == -EPROTO)
		snprintf(db->error, sizeof(db->error), "the database's schema is at version %d", v);
	return r < 0 ? r : n;
}

int grd_db_check(grd_db_t *db)
{
	int v, r = grd_db_version(db, &v);

	if (r < 0)
		return r;
	snprintf(db->error, sizeof(db->error), "the database's schema is at version %d, this railmon's at %zu", v,
	         grd_migrations_n);
	if (v == 0)
		return -ENOENT;
	if ((size_t)v < grd_migrations_n)
		return -ESTALE;
	if ((size_t)v > grd_migrations_n)
		return -EPROTO;
	db->error[0] = 0;
	return 0;
}

/* ---- retention ---- */

/* The day tables, a record kind each (copy.c fills them, ingest.c makes
   their days, prune drops them), in GRD_COPY_*'s order. */
const char *const grd_copy_tables[GRD_COPY_TABLES] = { "samples", "can_frames", "events", "texts",
	                                                     "trdp_telegrams" };

/* Drop the child tables of each day table that the WHERE clause (on
   c.relname, given the table's name twice) picks; how many in *ret_n. */
static int prune_where(grd_db_t *db, const char *cond, int *ret_n)
{
	char sql[320];
	PGresult *res;
	int r = 0, n;

	for (size_t t = 0; t < GRD_COPY_TABLES; t++) {
		/* The child tables of the parent, from the catalog. */
		int k = snprintf(sql, sizeof(sql), "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
		                 "i.inhrelid WHERE i.inhparent = '%s'::regclass AND ", grd_copy_tables[t]);
		snprintf(sql + k, sizeof(sql) - (size_t)k, cond, grd_copy_tables[t]);
		res = PQexec(db->conn, sql);
		n = grd_db_rows(db, "prune", res);
		if (n < 0)
			return n;
		for (int i = 0; i < n && r == 0; i++) {
			snprintf(sql, sizeof(sql), "DROP TABLE \"%s\"", PQgetvalue(res, i, 0));
			r = grd_db_exec(db, "prune", sql);
			*ret_n += r == 0;
		}
		PQclear(res);
		if (r < 0)
			return r;
	}
	return 0;
}

int grd_db_prune(grd_db_t *db, int64_t cutoff_ns, int64_t future_ns, int *ret_future)
{
	/* Partitions are named <table>_pYYYYMMDD for the day they hold (UTC). */
	char day[16], after[16], cond[160], sql[256];
	int r = grd_db_connect(db), n = 0, nf = 0;

	if (r < 0)
		return r;
	grd_day_text(grd_day_of(cutoff_ns), "%Y%m%d", day);
	grd_day_text(grd_day_of(future_ns), "%Y%m%d", after);
	/* A day ends at or before the cutoff: its name sorts before the
	   cutoff's day (8 digits: up to year 9999). */
	snprintf(cond, sizeof(cond), "c.relname < '%%s_p%s'", day);
	r = prune_where(db, cond, &n);
	/* Days that begin after future_ns's day: no record the door lets in
	   (--max-skew) falls there; made before the door, or by a bad clock. */
	snprintf(cond, sizeof(cond), "c.relname > '%%s_p%s'", after);
	if (r == 0)
		r = prune_where(db, cond, &nf);
	if (r < 0)
		return r;
	/* The 1 s rollups go with the raw days; the 1 min ones are kept. */
	snprintf(sql, sizeof(sql), "DELETE FROM rollup_1s WHERE t < '%.4s-%.2s-%.2s 00:00:00+00' OR t >= "
	         "'%.4s-%.2s-%.2s 00:00:00+00'::timestamptz + interval '1 day'", day, day + 4, day + 6, after,
	         after + 4, after + 6);
	r = grd_db_exec(db, "prune", sql);
	/* summary's too: it answers what the raw rows would (migration 9) */
	if (r == 0 && snprintf(sql, sizeof(sql), "DELETE FROM rollup_summary_1s WHERE t < '%.4s-%.2s-%.2s 00:00:00+00' "
	                       "OR t >= '%.4s-%.2s-%.2s 00:00:00+00'::timestamptz + interval '1 day'", day, day + 4,
	                       day + 6, after, after + 4, after + 6) > 0)
		r = grd_db_exec(db, "prune", sql);
	grd_db_forget(db); /* the partitions this connection knew may be gone */
	if (ret_future)
		*ret_future = nf;
	return r < 0 ? r : n + nf;
}

