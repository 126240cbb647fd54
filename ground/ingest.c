/* SPDX-License-Identifier: MIT */
/*
 * ingest.c - a group of Batches into PostgreSQL, in one transaction, in
 * four round trips whatever the group's size (libpq's pipeline mode):
 *
 * 1. BEGIN and, for each Batch (in (vehicle, log id, first_seq) order, so
 *    that receivers lock rows in one order), one statement that looks up
 *    the ledger rows around its seq range and inserts its own ledger row
 *    keyed by (vehicle, log id, first_seq) when nothing overlaps; what it
 *    found tells a duplicate from a conflict.  Each statement sees the
 *    rows of the ones before it, so a Batch twice in one group is a
 *    duplicate the second time.
 * 2. The records of the new Batches by one COPY BINARY per table into the
 *    day partitions,
 * 3. and the group's 1 s aggregates into the rollups' staging table;
 * 4. the rollup merges, the channel dictionaries, the per-day ledger
 *    summary (ledger_days: its rows are locked only for the commit), the
 *    NOTIFY and the COMMIT.
 *
 * A conflict is recorded in a statement of its own (rare).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db-private.h"
#include "acquisition/acq-item.h"
#include "basic/clock.h"
#include "basic/parse.h"
#include "record/digest.h"

#define NS_PER_DAY (INT64_C(86400) * 1000000000)

/* ---- statements ---- */

static const struct {
	const char *name, *sql;
	int nparams;
} stmts[] = {
	{ "vehicle", "INSERT INTO vehicles (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET last_seen = now() "
	             "RETURNING vehicle_id", 1 },
	/* The Batch at or before first_seq and the first one inside the range
	   after it (any other overlapping Batch lies between those two), and
	   the Batch's own ledger row when neither overlaps.  One row at least:
	   mine (1: inserted), then what was found (NULLs: nothing).  mine 0
	   with nothing found: another receiver committed the same key since
	   this statement's snapshot (ON CONFLICT waited for it). */
	/* jump: the log has committed Batches and this one lies over
	   GRD_DB_SEQ_JUMP records from all of them (the ledger remembers
	   across restarts what uplink's receiver keeps in memory); written as
	   differences, which cannot overflow a bigint. */
	{ "ledger", "WITH prev AS ((SELECT first_seq, count, digest FROM batches WHERE vehicle_id = $1::integer AND "
	            "log_id = $2::bytea AND first_seq <= $3::bigint ORDER BY first_seq DESC LIMIT 1) UNION ALL "
	            "(SELECT first_seq, count, digest FROM batches WHERE vehicle_id = $1::integer AND log_id = $2::bytea "
	            "AND first_seq > $3::bigint AND first_seq < $4::bigint ORDER BY first_seq LIMIT 1)), "
	            "span AS (SELECT (SELECT first_seq FROM batches WHERE vehicle_id = $1::integer AND log_id = $2::bytea "
	            "ORDER BY first_seq LIMIT 1) AS lo, (SELECT first_seq + count FROM batches WHERE vehicle_id = "
	            "$1::integer AND log_id = $2::bytea ORDER BY first_seq DESC LIMIT 1) AS hi), "
	            "j AS (SELECT coalesce($3::bigint - hi >= 1099511627776 OR lo - $4::bigint >= 1099511627776, false) "
	            "AS jump FROM span), "
	            "ins AS (INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, "
	            "config_hash, digest) SELECT $1::integer, $2::bytea, $3::bigint, $5::integer, $6::timestamptz, "
	            "$7::timestamptz, $8::boolean, $9::bigint, $10::bigint WHERE NOT EXISTS (SELECT 1 FROM prev p "
	            "WHERE p.first_seq + p.count > $3::bigint AND p.first_seq < $4::bigint) AND NOT (SELECT jump FROM j) "
	            "ON CONFLICT DO NOTHING RETURNING 1) "
	            "SELECT (SELECT count(*) FROM ins), p.first_seq, p.count, p.digest, (SELECT jump FROM j) "
	            "FROM (SELECT 1) o LEFT JOIN prev p ON true", 10 },
	{ "conflict", "INSERT INTO conflicts (vehicle_id, log_id, first_seq, count, digest, reason, payload) "
	              "SELECT $1, $2, $3, $4, $5, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM conflicts WHERE "
	              "vehicle_id = $1 AND log_id = $2 AND first_seq = $3 AND digest = $5)", 7 },
	/* clock_timestamp(): two dictionaries in one group are told apart
	   (now() is the transaction's start). */
	{ "channel", "INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, updated_at, "
	             "value_table) SELECT $1::integer, $2::bigint, $3::bigint, $4::text, $5::text, $6::integer, $7::text, "
	             "clock_timestamp(), $8::text[] WHERE "
	             "current_setting('railmon.dict', true) = 'ok' ON CONFLICT (vehicle_id, "
	             "config_hash, channel) DO UPDATE SET name = excluded.name, unit = excluded.unit, bus = excluded.bus, "
	             "source = excluded.source, updated_at = excluded.updated_at, value_table = excluded.value_table", 8 },
	{ "day", "INSERT INTO ledger_days AS d (vehicle_id, log_id, day, batches, records, min_first, max_end) "
	         "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (vehicle_id, log_id, day) DO UPDATE SET "
	         "batches = d.batches + excluded.batches, records = d.records + excluded.records, "
	         "min_first = least(d.min_first, excluded.min_first), max_end = greatest(d.max_end, excluded.max_end)",
	  7 },
	/* railmon serve's live pages LISTEN here: delivered at the COMMIT */
	{ "notify", "SELECT pg_notify('railmon_batch', $1)", 1 },
	/* A Batch refused at the door: counted per vehicle and reason, kept
	   in refused (its payload only for the first GRD_DB_DOOR_PAYLOADS of
	   a vehicle and reason: a flood costs rows, not megabytes). */
	{ "door", "WITH c AS (INSERT INTO door_refusals AS d (vehicle_id, reason, count, detail) VALUES ($1, $6, 1, $7) "
	          "ON CONFLICT (vehicle_id, reason) DO UPDATE SET count = d.count + 1, last_at = now(), "
	          "detail = excluded.detail RETURNING count) "
	          "INSERT INTO refused (vehicle, log_id, first_seq, count, sqlstate, reason, payload, bytes) "
	          "SELECT $2::text, $3::bytea, $4::bigint, $5::integer, $6, $7, CASE WHEN (SELECT count FROM c) <= 100 "
	          "THEN $8::bytea ELSE ''::bytea END, $9::integer ON CONFLICT (vehicle, log_id, first_seq, sqlstate) DO NOTHING", 9 },
	/* A dictionary at the door: within the channel limit ($3: this
	   Batch's entries, $5 the limit) and, for a config hash new to the
	   vehicle, the rate limit ($6 new ones a day).  The verdict is kept
	   for the transaction (railmon.dict), which the channel rows after it
	   obey; a refusal is counted in door_refusals.  updated_at moves for a
	   live Batch only: a backlog's old dictionary does not become the
	   newest. */
	{ "dict", "WITH have AS (SELECT (SELECT count(*) FROM configs WHERE vehicle_id = $1::integer AND config_hash = "
	          "$2::bigint) AS n, EXISTS (SELECT 1 FROM dictionaries WHERE vehicle_id = $1::integer AND "
	          "config_hash = $2::bigint) AS known, (SELECT count(*) FROM dictionaries WHERE vehicle_id = "
	          "$1::integer AND first_seen > now() - interval '1 day') AS recent), "
	          "v AS (SELECT CASE WHEN $3::integer > $5::integer OR n >= $5::integer THEN 'over the limit of ' || $5 || "
	          "' channels (--max-channels)' WHEN NOT known AND recent >= $6::integer THEN 'a new config hash past "
	          "the limit of ' || $6 || ' a day (--max-configs)' ELSE '' END AS why FROM have), "
	          "ins AS (INSERT INTO dictionaries AS d (vehicle_id, config_hash, updated_at) SELECT $1::integer, "
	          "$2::bigint, CASE WHEN $4::boolean THEN '-infinity'::timestamptz ELSE clock_timestamp() END "
	          "FROM v WHERE why = '' ON CONFLICT (vehicle_id, config_hash) DO UPDATE SET updated_at = "
	          "greatest(d.updated_at, excluded.updated_at) RETURNING 1), "
	          "ref AS (INSERT INTO door_refusals AS d (vehicle_id, reason, count, detail) SELECT $1::integer, "
	          "'dictionary', 1, $7::text || why FROM v WHERE why <> '' ON CONFLICT (vehicle_id, reason) DO UPDATE "
	          "SET count = d.count + 1, last_at = now(), detail = excluded.detail RETURNING 1) "
	          "SELECT why, set_config('railmon.dict', CASE WHEN why = '' THEN 'ok' ELSE 'no' END, true), "
	          "(SELECT count(*) FROM ins), (SELECT count(*) FROM ref) FROM v", 7 },
	{ "refuse", "INSERT INTO refused (vehicle, log_id, first_seq, count, sqlstate, reason, payload) VALUES "
	            "($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (vehicle, log_id, first_seq, sqlstate) DO NOTHING", 7 },
};

void grd_db_forget(grd_db_t *db)
{
	db->ndays = 0;
	db->prepared = false;
}

int grd_db_prepare(grd_db_t *db)
{
	for (size_t i = 0; !db->prepared && i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		PGresult *res = PQprepare(db->conn, stmts[i].name, stmts[i].sql, stmts[i].nparams, NULL);
		bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;

		PQclear(res);
		if (!ok) {
			grd_db_fail(db, stmts[i].name, PQerrorMessage(db->conn));
			return -EIO;
		}
	}
	/* Times as UTC whatever the server's default (date_trunc of the
	   rollups); the rollups' staging table, per connection. */
	if (!db->prepared && (grd_db_exec(db, "timezone", "SET TimeZone = 'UTC'") < 0 ||
	                      grd_db_exec(db, "rollup", "CREATE TEMP TABLE IF NOT EXISTS rollup_group (vehicle_id "
	                                  "integer, channel bigint, t timestamptz, n bigint, vmin double precision, "
	                                  "vmax double precision, vsum double precision) ON COMMIT DELETE ROWS") < 0))
		return -EIO;
	db->prepared = true;
	return 0;
}

/* Run a prepared statement; params are text except those with a length. */
static PGresult *run(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens,
                     ExecStatusType want)
{
	int fmts[10] = { 0 };
	PGresult *res;

	for (int i = 0; lens && i < n; i++)
		fmts[i] = lens[i] > 0;
	res = PQexecPrepared(db->conn, name, n, v, lens, fmts, 0);
	if (PQresultStatus(res) != want) {
		grd_db_fail_res(db, name, res);
		PQclear(res);
		return NULL;
	}
	return res;
}

/* ---- values as text ---- */

/* floor(a / b) for b > 0 */
static int64_t floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

/* A timestamptz in UTC, to the microsecond (PostgreSQL's resolution). */
static void fmt_time(int64_t t_ns, char out[48])
{
	int64_t us = floordiv(t_ns, 1000), s = floordiv(us, 1000000);
	time_t tt = (time_t)s;
	struct tm tm;

	gmtime_r(&tt, &tm);
	snprintf(out, 48, "%04d-%02d-%02d %02d:%02d:%02d.%06d+00", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	         tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(us - s * 1000000));
}

static void fmt_day(int64_t day, char out[16], const char *fmt)
{
	time_t tt = (time_t)(day * 86400);
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, 16, fmt, &tm);
}

/* ---- day partitions ---- */

static bool day_known(const grd_db_t *db, int64_t day)
{
	for (size_t i = 0; i < db->ndays; i++)
		if (db->days[i] == day)
			return true;
	return false;
}

/* The day's partition of each table; another receiver may make it at the
   same moment (then this fails and the retry finds it there). */
static int make_day(grd_db_t *db, int64_t day)
{
	static const char *const tables[] = { "samples", "can_frames", "events", "texts" };
	char name[16], from[16], to[16], sql[320];
	int r = 0;

	fmt_day(day, name, "%Y%m%d");
	fmt_day(day, from, "%Y-%m-%d");
	fmt_day(day + 1, to, "%Y-%m-%d");
	/* Made already (by another receiver, or a migration): nothing to do,
	   and a role that may write but not create tables goes on. */
	snprintf(sql, sizeof(sql), "SELECT to_regclass('samples_p%s') IS NOT NULL AND to_regclass('can_frames_p%s') "
	         "IS NOT NULL AND to_regclass('events_p%s') IS NOT NULL AND to_regclass('texts_p%s') IS NOT NULL", name,
	         name, name, name);
	PGresult *res = PQexec(db->conn, sql);
	bool made = PQresultStatus(res) == PGRES_TUPLES_OK && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	for (size_t t = 0; !made && r == 0 && t < sizeof(tables) / sizeof(tables[0]); t++) {
		snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM "
		         "('%s 00:00:00+00') TO ('%s 00:00:00+00')", tables[t], name, tables[t], from, to);
		r = grd_db_exec(db, "partition", sql);
	}
	/* Two receivers making the same day at once: one fails on the
	   catalog's unique index (23505) or finds the table made (42P07);
	   that passes, the next try finds the partition there. */
	if (r < 0 && (!strncmp(db->sqlstate, "23", 2) || !strcmp(db->sqlstate, "42P07")))
		db->sqlstate[0] = 0;
	if (r < 0)
		return r;
	pthread_mutex_lock(&db->lock);
	db->st.partitions += !made;
	pthread_mutex_unlock(&db->lock);
	if (db->ndays < GRD_DAYS_KNOWN)
		db->ndays++;
	db->days[db->day_next] = day;
	db->day_next = (db->day_next + 1) % GRD_DAYS_KNOWN;
	return 0;
}

/* The partitions of p's records' days (p->lo, p->hi known). */
static int make_days(grd_db_t *db, const struct grd_pending *p, uint32_t count)
{
	const rec_batch_t *b = p->b;
	int64_t last = INT64_MIN, first = floordiv(p->lo, NS_PER_DAY);

	/* Within one day known already (nearly always): no need to look at
	   each record. */
	if (!count || (first == floordiv(p->hi, NS_PER_DAY) && day_known(db, first)))
		return 0;
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;
		int64_t day;
		int r;

		rec_batch_item(b, i, &it);
		day = floordiv(it.t_ns, NS_PER_DAY);
		if (day == last || day_known(db, day))
			continue;
		r = make_day(db, day);
		if (r < 0)
			return r;
		last = day;
	}
	return 0;
}

/* ---- the door: record times ---- */

/* Every record of p's Batch (p->lo, p->hi known) within the window:
   at most max_age behind the receiver's clock, at most max_skew ahead of
   it, and at most max_skew from the Batch's own base (t0).  Otherwise
   p->door and p->why say so: one Batch of records a day apart would make
   four partitions a day (issue 26).  Old Batches (gap repair, a backlog)
   pass up to max_age: set it to the retention of `db prune`. */
static void check_times(const grd_db_t *db, struct grd_pending *p, const struct rec_batch_info *info)
{
	int64_t now = basic_realtime_ns(), age = db->cfg.max_age_ns, skew = db->cfg.max_skew_ns;
	bool far_base = (info->t0_ns > INT64_MIN + skew && p->lo < info->t0_ns - skew) ||
	                (info->t0_ns < INT64_MAX - skew && p->hi > info->t0_ns + skew);
	char lo[48], hi[48], base[48], a[BASIC_SIZE_TEXT_MAX], k[BASIC_SIZE_TEXT_MAX];

	p->door = 0;
	if (!info->count || (p->lo >= now - age && p->hi <= now + skew && !far_base))
		return;
	p->door = 1 + GRD_DOOR_TIME;
	fmt_time(p->lo, lo);
	fmt_time(p->hi, hi);
	fmt_time(info->t0_ns, base);
	basic_format_duration((uint64_t)(age / 1000000000), a, sizeof(a));
	basic_format_duration((uint64_t)(skew / 1000000000), k, sizeof(k));
	snprintf(p->why, sizeof(p->why), "record times %.19s .. %.19s: %s (window: %s back, %s ahead of the "
	         "receiver's clock, %s around the Batch's base %.19s)", lo, hi,
	         far_base ? "too far from the Batch's base" : "outside the window", a, k, k, base);
}

/* ---- the digest ---- */

/* The digest and the first and last record times of p's Batch, in one
   pass over its records (each record is unpacked once here, and once more
   only if the Batch is new). */
static void scan(struct grd_pending *p, uint32_t count)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	uint64_t h = REC_DIGEST_SEED;

	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(p->b, i, &it);
		h = rec_item_digest(h, &it);
		lo = it.t_ns < lo ? it.t_ns : lo;
		hi = it.t_ns > hi ? it.t_ns : hi;
	}
	p->digest = h;
	p->lo = lo;
	p->hi = hi;
}

/* ---- COPY BINARY ---- */

/* The copy buffer of a record's table: 0 samples, 1 can_frames, 2 events,
   3 texts. */
static int table_of(const struct acq_item *it)
{
	return it->kind == ACQ_ITEM_SAMPLE ? 0 : it->kind == ACQ_ITEM_CAN ? 1 : it->kind == ACQ_ITEM_TEXT ? 3 : 2;
}

/* One row of its kind's table (table_of()). */
static int add_row(grd_db_t *db, int vid, const struct acq_item *it)
{
	int k = table_of(it);
	struct grd_buf *b = &db->copy[k];
	int64_t t_pg = floordiv(it->t_ns, 1000) - GRD_PG_EPOCH_US;

	if (grd_buf_room(b, 19 + 2 + 7 * 12 + (ACQ_CAN_DATA_MAX > ACQ_TEXT_MAX ? ACQ_CAN_DATA_MAX : ACQ_TEXT_MAX)) < 0)
		return -ENOMEM;
	if (!b->used)
		grd_copy_head(b);
	if (k == 0) {
		grd_put16(b, 6);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f64(b, it->sample.channel);
		grd_fdouble(b, it->sample.value);
		grd_f16(b, (int16_t)it->sample.quality);
	} else if (k == 1) {
		unsigned len = it->can.len < ACQ_CAN_DATA_MAX ? it->can.len : ACQ_CAN_DATA_MAX;

		grd_put16(b, 7);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f32(b, it->bus);
		grd_f64(b, it->can.id);
		grd_f16(b, (int16_t)it->can.flags);
		grd_put32(b, len);
		memcpy(b->p + b->used, it->can.data, len);
		b->used += len;
	} else if (k == 3) {
		/* text: the bytes as they are (printable ASCII, record/batch.c) */
		unsigned len = it->text.len < ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

		grd_put16(b, 6);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f64(b, it->text.channel);
		grd_put32(b, len);
		memcpy(b->p + b->used, it->text.text, len);
		b->used += len;
		grd_f16(b, (int16_t)it->text.quality);
	} else {
		grd_put16(b, 7);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f32(b, it->bus);
		grd_f32(b, (int32_t)it->event.code);
		grd_f64(b, it->event.arg);
		grd_f64(b, it->event.detail);
	}
	return 0;
}

/* A new Batch's records into the copy buffers (rows counted in n[]) and
   its samples into the rollups, in one pass. */
static int add_rows(grd_db_t *db, int vid, const rec_batch_t *b, uint64_t first_seq, uint32_t count,
                    uint64_t n[4])
{
	if (grd_rollup_reserve(db, count) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		it.seq = first_seq + i; /* CAN frames, samples, events: the Batch's order */
		if (add_row(db, vid, &it) < 0)
			return -ENOMEM;
		grd_rollup_item(db, vid, &it);
		n[table_of(&it)]++;
	}
	return 0;
}

static int copy_table(grd_db_t *db, const char *table, struct grd_buf *b)
{
	char sql[128];
	PGresult *res;
	int r = 0;

	if (!b->used)
		return 0;
	if (grd_buf_room(b, 2) < 0)
		return -ENOMEM;
	grd_put16(b, 0xffff); /* the end */
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN (FORMAT binary)", table);
	res = PQexec(db->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		grd_db_fail_res(db, sql, res);
		PQclear(res);
		return -EIO;
	}
	PQclear(res);
	if (PQputCopyData(db->conn, b->p, (int)b->used) != 1 || PQputCopyEnd(db->conn, NULL) != 1) {
		grd_db_fail(db, sql, PQerrorMessage(db->conn));
		return -EIO;
	}
	while ((res = PQgetResult(db->conn))) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			grd_db_fail_res(db, sql, res);
			r = -EIO;
		}
		PQclear(res);
	}
	return r;
}

/* ---- pipelines ---- */

/* Statements sent without waiting for their answers, read back at the
   end: a group costs a round trip per pipeline, not per statement. */
static int pipe_enter(grd_db_t *db)
{
	db->nq = 0;
	if (PQenterPipelineMode(db->conn) != 1) {
		grd_db_fail(db, "pipeline", PQerrorMessage(db->conn));
		return -EIO;
	}
	return 0;
}

/* A prepared statement into the pipeline; params are text except those
   with a length. */
static int qsend(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens)
{
	int fmts[10] = { 0 };

	for (int i = 0; lens && i < n; i++)
		fmts[i] = lens[i] > 0;
	if (PQsendQueryPrepared(db->conn, name, n, v, lens, fmts, 0) != 1) {
		grd_db_fail(db, name, PQerrorMessage(db->conn));
		return -EIO;
	}
	db->nq++;
	return 0;
}

/* A statement without parameters into the pipeline. */
static int qsend_sql(grd_db_t *db, const char *what, const char *sql)
{
	if (PQsendQueryParams(db->conn, sql, 0, NULL, NULL, NULL, NULL, 0) != 1) {
		grd_db_fail(db, what, PQerrorMessage(db->conn));
		return -EIO;
	}
	db->nq++;
	return 0;
}

/* Send the pipeline and read every answer, keeping the rows of statement
   q in keep[q] (keep may be NULL; the caller clears what it gets).  The
   first failure is kept with its SQLSTATE (the server skips the rest up to
   the sync).  0, -EIO, -ECONNREFUSED (the connection is lost). */
static int pipe_run(grd_db_t *db, const char *what, PGresult **keep)
{
	size_t q = 0;
	int r = 0;

	if (PQpipelineSync(db->conn) != 1) {
		grd_db_fail(db, what, PQerrorMessage(db->conn));
		r = -EIO;
	}
	while (r == 0) {
		PGresult *res = PQgetResult(db->conn);
		ExecStatusType st;

		if (!res) {
			/* The end of one statement's answer; or of all, when
			   the connection broke. */
			if (PQstatus(db->conn) != CONNECTION_OK || q++ > db->nq) {
				grd_db_fail(db, what, PQerrorMessage(db->conn));
				r = -ECONNREFUSED;
			}
			continue;
		}
		st = PQresultStatus(res);
		if (st == PGRES_PIPELINE_SYNC) {
			PQclear(res);
			break;
		}
		if (st == PGRES_FATAL_ERROR && !db->pipe_failed) {
			grd_db_fail_res(db, what, res);
			db->pipe_failed = true;
		}
		if (keep && q < db->nq && st == PGRES_TUPLES_OK && !keep[q])
			keep[q] = res;
		else
			PQclear(res);
	}
	if (db->pipe_failed && r == 0)
		r = PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED;
	db->pipe_failed = false;
	if (PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF && PQexitPipelineMode(db->conn) != 1 && r == 0) {
		grd_db_fail(db, what, PQerrorMessage(db->conn));
		r = -EIO;
	}
	return r;
}

/* ---- one Batch ---- */

int grd_db_vehicle_id(grd_db_t *db, const char *name, int *ret_id)
{
	const char *v[1] = { name };
	PGresult *res;

	for (size_t i = 0; i < db->nveh; i++)
		if (!strcmp(db->veh[i].name, name)) {
			*ret_id = db->veh[i].id;
			return 0;
		}
	res = run(db, "vehicle", 1, v, NULL, PGRES_TUPLES_OK);
	if (!res)
		return -EIO;
	*ret_id = atoi(PQgetvalue(res, 0, 0));
	PQclear(res);
	pthread_mutex_lock(&db->lock);
	db->st.vehicle_ids++; /* status.c writes the states that waited for a new vehicle */
	pthread_mutex_unlock(&db->lock);
	if (strlen(name) >= GRD_VEHICLE_NAME_MAX)
		return 0;
	if (db->nveh == db->capveh) {
		size_t cap = db->capveh ? db->capveh * 2 : 64;
		struct grd_vehicle_id *n = realloc(db->veh, cap * sizeof(*n));
		if (!n)
			return 0; /* not cached: asked again next time */
		db->veh = n;
		db->capveh = cap;
	}
	snprintf(db->veh[db->nveh].name, GRD_VEHICLE_NAME_MAX, "%s", name);
	db->veh[db->nveh++].id = *ret_id;
	return 0;
}

struct batch_key {
	char vid[16], first[24], end[24], count[16], digest[24], hash[24];
	const char *log_id;
	int log_id_len;
};

/* The answer of the "ledger" statement: GRD_DB_COMMITTED (the ledger row
   is ours: a new Batch), GRD_DB_DUPLICATE, GRD_DB_CONFLICT; -EAGAIN when
   another receiver committed the same key meanwhile (the retry finds
   it). */
static int ledger_outcome(const PGresult *res, uint64_t first, uint32_t count, uint64_t digest,
                          enum grd_db_outcome *ret)
{
	*ret = GRD_DB_COMMITTED;
	if (PQntuples(res) > 0 && !strcmp(PQgetvalue(res, 0, 0), "1"))
		return 0;
	if (PQntuples(res) > 0 && PQgetvalue(res, 0, 4)[0] == 't') {
		*ret = GRD_DB_LIMIT; /* a seq jump: the caller says which */
		return 0;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		if (PQgetisnull(res, i, 1))
			continue;
		uint64_t f = strtoull(PQgetvalue(res, i, 1), NULL, 10), c = strtoull(PQgetvalue(res, i, 2), NULL, 10);
		uint64_t d = (uint64_t)strtoll(PQgetvalue(res, i, 3), NULL, 10);

		if (f == first)
			*ret = c == count && d == digest ? GRD_DB_DUPLICATE : GRD_DB_CONFLICT;
		else if (f + c > first && f < first + count)
			*ret = GRD_DB_CONFLICT;
		if (*ret != GRD_DB_COMMITTED)
			return 0;
	}
	return -EAGAIN;
}

static int record_conflict(grd_db_t *db, const struct batch_key *k, const void *payload, size_t len)
{
	const char *v[7] = { k->vid, k->log_id, k->first, k->count, k->digest,
	                     "other records under seqs committed before", payload };
	int lens[7] = { 0, k->log_id_len, 0, 0, 0, 0, (int)len };
	PGresult *res = run(db, "conflict", 7, v, lens, PGRES_COMMAND_OK);

	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

/* A Batch refused at the door (p->door, p->why) into refused and
   door_refusals, in the open transaction. */
static int record_door(grd_db_t *db, const struct batch_key *k, const struct rec_batch_info *info,
                       const struct grd_pending *p)
{
	char bytes[16];
	const char *v[9] = { k->vid, info->vehicle, k->log_id, k->first, k->count,
	                     grd_db_door_name((enum grd_db_door)(p->door - 1)), p->why, p->payload, bytes };
	int lens[9] = { 0, 0, k->log_id_len, 0, 0, 0, 0, (int)p->len, 0 };
	PGresult *res;

	snprintf(bytes, sizeof(bytes), "%zu", p->len);
	/* an empty log id or payload goes as text: '' (a length 0 would be
	   taken for text format anyway) */
	res = run(db, "door", 9, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

/* Well-formed UTF-8 (no overlongs, surrogates or code points past
   U+10FFFF): the database refuses anything else in text, and a Batch it
   refuses for ever would stop the receiver. */
static bool utf8_ok(const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	while (*s) {
		unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 :
		             (c & 0xf8) == 0xf0 ? 3 : 4;
		uint32_t cp = n == 0 ? c : n == 1 ? c & 0x1f : n == 2 ? c & 0x0f : c & 0x07;

		if (n == 4)
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

bool grd_utf8_ok(const char *s)
{
	return utf8_ok(s);
}

/* The Batch's channel dictionary, into the open pipeline: first the
   door's verdict (statement "dict", its answer the *ret_q-th of the
   pipeline), then the entries, which obey it. */
static int send_dictionary(grd_db_t *db, const struct batch_key *k, const rec_batch_t *b, size_t n,
                           bool historical, size_t *ret_q)
{
	char nch[24], maxch[16], maxday[16], words[96];
	const char *dv[7] = { k->vid, k->hash, nch, historical ? "t" : "f", maxch, maxday, words };
	int r;

	*ret_q = SIZE_MAX;
	if (!n)
		return 0;
	snprintf(nch, sizeof(nch), "%zu", n);
	snprintf(maxch, sizeof(maxch), "%u", db->cfg.max_channels);
	snprintf(maxday, sizeof(maxday), "%u", db->cfg.max_configs_day);
	snprintf(words, sizeof(words), "config hash %s, %zu entries: ", k->hash, n);
	*ret_q = db->nq;
	r = qsend(db, "dict", 7, dv, NULL);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct rec_channel ch;
		char id[16], bus[16];

		if (rec_batch_channel(b, i, &ch) < 0)
			continue;
		if (!utf8_ok(ch.name) || !utf8_ok(ch.unit) || !utf8_ok(ch.source)) {
			pthread_mutex_lock(&db->lock);
			db->st.bad_names++;
			pthread_mutex_unlock(&db->lock);
			continue;
		}
		snprintf(id, sizeof(id), "%" PRIu32, ch.id);
		snprintf(bus, sizeof(bus), "%" PRIu32, ch.bus);
		char *vt = NULL;
		if (grd_value_table(db, &ch, &vt) < 0)
			return -ENOMEM;
		const char *v[8] = { k->vid, k->hash, id, ch.name ? ch.name : "", ch.unit ? ch.unit : "", bus,
		                     ch.source ? ch.source : "", vt };
		/* libpq copies the parameters into its output buffer at once */
		r = qsend(db, "channel", 8, v, NULL);
		free(vt);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The door's verdict on a dictionary (statement "dict"'s answer in
   keep[q]): a refusal counted and said. */
static void dictionary_verdict(grd_db_t *db, PGresult **keep, size_t q, const char *vehicle)
{
	char words[320];

	if (q == SIZE_MAX || !keep[q] || PQntuples(keep[q]) < 1 || !*PQgetvalue(keep[q], 0, 0))
		return;
	snprintf(words, sizeof(words), "%s: dictionary refused: %s", vehicle, PQgetvalue(keep[q], 0, 0));
	grd_db_door_count(db, GRD_DOOR_DICTIONARY, words);
}

/* Run the pipeline, keeping every statement's rows for the verdicts;
   counted only once the COMMIT (the last statement) went through. */
static int pipe_run_verdicts(grd_db_t *db, const char *what, const size_t *qs, const char *const *vehicles,
                             size_t n)
{
	PGresult **keep = calloc(db->nq + 1, sizeof(*keep));
	size_t nq = db->nq;
	int r = pipe_run(db, what, keep);

	for (size_t i = 0; keep && r == 0 && i < n; i++)
		dictionary_verdict(db, keep, qs[i], vehicles[i]);
	for (size_t i = 0; keep && i <= nq; i++)
		PQclear(keep[i]);
	free(keep);
	return r;
}

/* The Batch's ledger statement, into the open pipeline. */
static int send_ledger(grd_db_t *db, const struct batch_key *k, const struct rec_batch_info *info,
                       const struct grd_pending *p)
{
	char tf[48], tl[48];
	const char *v[10] = { k->vid, k->log_id, k->first, k->end, k->count, tf, tl, info->historical ? "t" : "f",
	                      k->hash, k->digest };
	int lens[10] = { 0, k->log_id_len, 0, 0, 0, 0, 0, 0, 0, 0 };

	fmt_time(p->lo, tf);
	fmt_time(p->hi, tl);
	return qsend(db, "ledger", 10, v, lens);
}

static void make_key(const struct rec_batch_info *info, int vid, uint64_t digest, struct batch_key *k)
{
	snprintf(k->vid, sizeof(k->vid), "%d", vid);
	snprintf(k->first, sizeof(k->first), "%" PRIu64, info->first_seq);
	snprintf(k->end, sizeof(k->end), "%" PRIu64, info->first_seq + info->count);
	snprintf(k->count, sizeof(k->count), "%" PRIu32, info->count);
	snprintf(k->digest, sizeof(k->digest), "%" PRId64, (int64_t)digest);
	snprintf(k->hash, sizeof(k->hash), "%" PRId64, (int64_t)info->config_hash);
	/* A Batch without a log id (railmon before log ids) is keyed under an
	   empty one (length 0: sent as the text '', an empty bytea). */
	k->log_id = info->log_id_len ? (const char *)info->log_id : "";
	k->log_id_len = (int)info->log_id_len;
}

/* The ledger summary of one (vehicle, log, day) of the group. */
struct day_sum {
	int vid;
	const uint8_t *log_id;
	size_t log_id_len;
	int64_t day;
	uint64_t batches, records, min_first, max_end;
};

/* One (vehicle, log, day)'s ledger_days upsert, into the open pipeline. */
static int send_day(grd_db_t *db, const struct day_sum *d)
{
	char vid[16], day[16], nb[24], nr[24], lo[24], hi[24];
	const char *v[7] = { vid, d->log_id_len ? (const char *)d->log_id : "", day, nb, nr, lo, hi };
	int lens[7] = { 0, (int)d->log_id_len, 0, 0, 0, 0, 0 };

	if (!d->batches)
		return 0;
	snprintf(vid, sizeof(vid), "%d", d->vid);
	fmt_day(d->day, day, "%Y-%m-%d");
	snprintf(nb, sizeof(nb), "%" PRIu64, d->batches);
	snprintf(nr, sizeof(nr), "%" PRIu64, d->records);
	snprintf(lo, sizeof(lo), "%" PRIu64, d->min_first);
	snprintf(hi, sizeof(hi), "%" PRIu64, d->max_end);
	return qsend(db, "day", 7, v, lens);
}

/* Add a new Batch to the run of equal (vehicle, log, day) in *d, sending
   the run before it when the key changes (the group is sorted). */
static int sum_day(grd_db_t *db, struct day_sum *d, int vid, const struct rec_batch_info *info, int64_t lo)
{
	int64_t day = floordiv(lo, NS_PER_DAY);
	int r = 0;

	if (d->batches && (d->vid != vid || d->day != day || d->log_id_len != info->log_id_len ||
	                   memcmp(d->log_id, info->log_id, info->log_id_len))) {
		r = send_day(db, d);
		d->batches = 0;
	}
	if (!d->batches)
		*d = (struct day_sum){ vid, info->log_id, info->log_id_len, day, 0, 0, UINT64_MAX, 0 };
	d->batches++;
	d->records += info->count;
	d->min_first = info->first_seq < d->min_first ? info->first_seq : d->min_first;
	d->max_end = info->first_seq + info->count > d->max_end ? info->first_seq + info->count : d->max_end;
	return r;
}

/* Tell railmon serve's live pages (LISTEN railmon_batch) which vehicles
   have news, once each (the group is in vehicle order); PostgreSQL sends it
   when this transaction commits, never for one that rolls back. */
static int notify_vehicles(grd_db_t *db, const struct grd_pending *p, size_t n)
{
	int last = -1; /* vehicle ids are serial: > 0 */

	for (size_t i = 0; i < n; i++) {
		struct rec_batch_info info;

		if (p[i].out != GRD_DB_COMMITTED || p[i].vid == last)
			continue;
		last = p[i].vid;
		rec_batch_info(p[i].b, &info);
		const char *v[1] = { info.vehicle };
		if (qsend(db, "notify", 1, v, NULL) < 0)
			return -EIO;
	}
	return 0;
}

/* (vehicle, log id, first_seq): receivers take row locks in one order. */
static int pending_cmp(const void *a, const void *b)
{
	const struct grd_pending *x = a, *y = b;
	struct rec_batch_info i, j;
	int c;

	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	rec_batch_info(x->b, &i);
	rec_batch_info(y->b, &j);
	if (i.log_id_len != j.log_id_len)
		return i.log_id_len < j.log_id_len ? -1 : 1;
	c = i.log_id_len ? memcmp(i.log_id, j.log_id, i.log_id_len) : 0;
	if (c)
		return c;
	return (i.first_seq > j.first_seq) - (i.first_seq < j.first_seq);
}

/* Before the transaction: each Batch's vehicle id, digest, span, and the
   day partitions its records need. */
static int prepare_group(grd_db_t *db, struct grd_pending *p, size_t n)
{
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;

		rec_batch_info(p[i].b, &info);
		scan(&p[i], info.count);
		check_times(db, &p[i], &info);
		r = grd_db_vehicle_id(db, info.vehicle, &p[i].vid);
		/* partitions only for the days of Batches let in */
		if (r == 0 && !p[i].door)
			r = make_days(db, &p[i], info.count);
	}
	return r;
}

/* Round trip 1: BEGIN and each Batch's ledger statement; then each
   Batch's outcome, and the conflicts recorded. */
static int ledger_group(grd_db_t *db, struct grd_pending *p, size_t n)
{
	int r = pipe_enter(db);

	if (r == 0)
		r = qsend_sql(db, "begin", "BEGIN");
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;
		struct batch_key k;

		rec_batch_info(p[i].b, &info);
		make_key(&info, p[i].vid, p[i].digest, &k);
		if (info.count && !p[i].door)
			r = send_ledger(db, &k, &info, &p[i]);
	}
	memset(db->keep, 0, (n + 1) * sizeof(*db->keep));
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int k = pipe_run(db, "ledger", db->keep);
		r = r < 0 ? r : k;
	}
	for (size_t i = 0, q = 1; i < n; i++) {
		struct rec_batch_info info;
		struct batch_key k;

		rec_batch_info(p[i].b, &info);
		/* Only a dictionary or health: nothing for the ledger (its
		   first_seq is the next Batch's). */
		p[i].out = p[i].door ? GRD_DB_LIMIT : GRD_DB_COMMITTED;
		make_key(&info, p[i].vid, p[i].digest, &k);
		if (!info.count || p[i].door) {
			if (r == 0 && p[i].door)
				r = record_door(db, &k, &info, &p[i]);
			continue;
		}
		if (r == 0 && !db->keep[q])
			r = -EIO;
		if (r == 0 && ledger_outcome(db->keep[q], info.first_seq, info.count, p[i].digest, &p[i].out) < 0) {
			db->sqlstate[0] = 0; /* passes: the retry finds the other receiver's row */
			r = -EAGAIN;
		}
		PQclear(db->keep[q++]);
		if (r == 0 && p[i].out == GRD_DB_CONFLICT)
			r = record_conflict(db, &k, p[i].payload, p[i].len);
		if (r == 0 && p[i].out == GRD_DB_LIMIT) {
			p[i].door = 1 + GRD_DOOR_SEQ_JUMP;
			snprintf(p[i].why, sizeof(p[i].why), "seq %" PRIu64 "..%" PRIu64 " lies over 2^40 records from "
			         "every Batch of its log in the ledger", info.first_seq, info.first_seq + info.count - 1);
			r = record_door(db, &k, &info, &p[i]);
		}
	}
	return r;
}

/* Round trips 2 and 3: the new Batches' records and rollups. */
static int copy_group(grd_db_t *db, struct grd_pending *p, size_t n, uint64_t rows[4], bool *ret_merge)
{
	int r = 0;

	for (size_t t = 0; t < sizeof(db->copy) / sizeof(db->copy[0]); t++)
		db->copy[t].used = 0;
	db->npts = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;

		rec_batch_info(p[i].b, &info);
		if (p[i].out == GRD_DB_COMMITTED && info.count)
			r = add_rows(db, p[i].vid, p[i].b, info.first_seq, info.count, rows);
	}
	if (r == 0)
		r = copy_table(db, "samples", &db->copy[0]);
	if (r == 0)
		r = copy_table(db, "can_frames", &db->copy[1]);
	if (r == 0)
		r = copy_table(db, "events", &db->copy[2]);
	if (r == 0)
		r = copy_table(db, "texts", &db->copy[3]);
	if (r == 0)
		r = grd_rollup_copy(db, ret_merge);
	return r;
}

/* Round trip 4: the rollup merges, the dictionaries, the Health entries,
   ledger_days, the NOTIFY and the COMMIT. */
static int finish_group(grd_db_t *db, struct grd_pending *p, size_t n, bool merge)
{
	struct day_sum days = { 0 };
	size_t *qs = calloc(n ? n : 1, sizeof(*qs));
	const char **veh = calloc(n ? n : 1, sizeof(*veh));
	int r = qs && veh ? pipe_enter(db) : -ENOMEM;

	for (size_t i = 0; qs && i < n; i++)
		qs[i] = SIZE_MAX;
	for (int i = 0; r == 0 && merge && i < 2; i++)
		r = qsend_sql(db, "rollup", grd_rollup_merge[i]);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;
		struct batch_key k;

		if (p[i].out != GRD_DB_COMMITTED)
			continue;
		rec_batch_info(p[i].b, &info);
		make_key(&info, p[i].vid, p[i].digest, &k);
		veh[i] = info.vehicle;
		r = send_dictionary(db, &k, p[i].b, info.nchannels, info.historical, &qs[i]);
		if (r == 0)
			r = grd_health_store(db, p[i].vid, p[i].b);
		if (r == 0 && info.count)
			r = sum_day(db, &days, p[i].vid, &info, p[i].lo);
	}
	if (r == 0)
		r = send_day(db, &days);
	if (r == 0)
		r = notify_vehicles(db, p, n);
	if (r == 0)
		r = qsend_sql(db, "commit", "COMMIT");
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int k = pipe_run_verdicts(db, "commit", qs, veh, n);
		r = r < 0 ? r : k;
	}
	free(qs);
	free(veh);
	return r;
}

int grd_ingest(grd_db_t *db, struct grd_pending *p, size_t n)
{
	uint64_t rows[4] = { 0, 0, 0, 0 };
	bool merge = false;
	int r = grd_db_prepare(db);

	if (r == 0)
		r = prepare_group(db, p, n);
	if (r < 0)
		return r;
	qsort(p, n, sizeof(*p), pending_cmp);
	r = ledger_group(db, p, n);
	if (r == 0)
		r = copy_group(db, p, n, rows, &merge);
	if (r == 0)
		r = finish_group(db, p, n, merge);
	if (r == 0) {
		pthread_mutex_lock(&db->lock);
		db->st.samples += rows[0];
		db->st.can_frames += rows[1];
		db->st.events += rows[2];
		pthread_mutex_unlock(&db->lock);
	}
	return r;
}

int grd_ingest_refuse(grd_db_t *db, const struct grd_pending *p, const char *sqlstate, const char *reason)
{
	struct rec_batch_info info;
	char first[24], count[16];
	PGresult *res;

	rec_batch_info(p->b, &info);
	snprintf(first, sizeof(first), "%" PRIu64, info.first_seq);
	snprintf(count, sizeof(count), "%" PRIu32, info.count);
	const char *v[7] = { info.vehicle, info.log_id_len ? (const char *)info.log_id : "", first, count,
	                     sqlstate, reason, p->payload };
	int lens[7] = { 0, (int)info.log_id_len, 0, 0, 0, 0, (int)p->len };
	/* The vehicle's name as the Batch says: it may be what failed. */
	if (!utf8_ok(info.vehicle))
		v[0] = "(not UTF-8)";
	if (!utf8_ok(reason))
		v[5] = "(not UTF-8)";
	if (grd_db_prepare(db) < 0)
		return -EIO;
	res = run(db, "refuse", 7, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

int grd_ingest_dictionary(grd_db_t *db, const rec_batch_t *b)
{
	struct rec_batch_info info;
	struct batch_key k;
	size_t dq = SIZE_MAX;
	int vid, r;

	rec_batch_info(b, &info);
	r = grd_db_prepare(db);
	if (r == 0)
		r = grd_db_vehicle_id(db, info.vehicle, &vid);
	if (r < 0)
		return r;
	make_key(&info, vid, 0, &k);
	r = pipe_enter(db);
	if (r == 0)
		r = qsend_sql(db, "begin", "BEGIN");
	if (r == 0)
		r = send_dictionary(db, &k, b, info.nchannels, info.historical, &dq);
	if (r == 0)
		r = qsend_sql(db, "commit", "COMMIT");
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int q = pipe_run_verdicts(db, "dictionary", &dq, &info.vehicle, 1);
		r = r < 0 ? r : q;
	}
	return r;
}
