/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one connection to the ground database and what it knows: the
 * connection itself, its errors and their SQLSTATE classes, the door's
 * counters, the prepared statements and their parameters, libpq's
 * pipeline (statements sent without waiting, answers read at the end),
 * and the vehicle ids met.  Everything else in the database side builds
 * on it (ingest.c, copy.c, dictionary.c, health-table.c, rollup.c, schema.c,
 * commit.c); it uses none of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "db-private.h"

/* ---- the connection and its errors ---- */

const char *grd_db_door_name(enum grd_db_door why)
{
	static const char *const names[GRD_DOOR_MAX] = { "time", "seq-jump", "dictionary", "gone-unasked" };

	return why < GRD_DOOR_MAX ? names[why] : "?";
}

void grd_db_door_count(grd_db_t *db, enum grd_db_door why, const char *words)
{
	pthread_mutex_lock(&db->lock);
	db->st.door[why]++;
	if (db->parent)
		db->door_stamp = __atomic_add_fetch(&db->parent->stamp, 1, __ATOMIC_RELAXED);
	else
		db->door_stamp = __atomic_add_fetch(&db->stamp, 1, __ATOMIC_RELAXED);
	snprintf(db->st.last_door, sizeof(db->st.last_door), "%s", words);
	pthread_mutex_unlock(&db->lock);
}

const char *grd_db_error(const grd_db_t *db)
{
	return db->error;
}

/* Keep libpq's message (one line, without its trailing newline). */
void grd_db_fail(grd_db_t *db, const char *what, const char *msg)
{
	size_t n;

	db->sqlstate[0] = 0;
	snprintf(db->error, sizeof(db->error), "%s%s%s", what, *what ? ": " : "", msg ? msg : "");
	n = strlen(db->error);
	while (n && (db->error[n - 1] == '\n' || db->error[n - 1] == ' '))
		db->error[--n] = 0;
	for (char *p = db->error; *p; p++)
		if (*p == '\n')
			*p = ' ';
	pthread_mutex_lock(&db->lock);
	if (db->parent)
		db->err_stamp = __atomic_add_fetch(&db->parent->stamp, 1, __ATOMIC_RELAXED);
	db->st.failures++;
	db->st.down = true;
	snprintf(db->st.error, sizeof(db->st.error), "%s", db->error);
	pthread_mutex_unlock(&db->lock);
}

void grd_db_fail_res(grd_db_t *db, const char *what, const PGresult *res)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorMessage(res) : NULL;

	grd_db_fail(db, what, msg && *msg ? msg : PQerrorMessage(db->conn));
	snprintf(db->sqlstate, sizeof(db->sqlstate), "%s", state ? state : "");
}

bool grd_db_permanent(const grd_db_t *db)
{
	static const char transient[][3] = { "08", "25", "40", "53", "55", "57", "58" };

	/* No SQLSTATE: the connection or the client failed, not the data. */
	if (!db->sqlstate[0] || !db->conn || PQstatus(db->conn) != CONNECTION_OK)
		return false;
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (!strncmp(db->sqlstate, transient[i], 2))
			return false;
	return true;
}

/* Notices ("relation already exists, skipping") are not ours to print. */
static void quiet(void *arg, const char *msg)
{
}

int grd_db_connect(grd_db_t *db)
{
	if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
		return 0;
	if (db->conn) {
		PQfinish(db->conn);
		db->conn = NULL;
	}
	grd_db_forget(db);
	db->conn = PQconnectdb(db->cfg.url);
	if (!db->conn) {
		grd_db_fail(db, "connect", "out of memory");
		return -ECONNREFUSED;
	}
	if (PQstatus(db->conn) != CONNECTION_OK) {
		grd_db_fail(db, "connect", PQerrorMessage(db->conn));
		PQfinish(db->conn);
		db->conn = NULL;
		return -ECONNREFUSED;
	}
	PQsetNoticeProcessor(db->conn, quiet, NULL);
	pthread_mutex_lock(&db->lock);
	db->st.connects++;
	pthread_mutex_unlock(&db->lock);
	return 0;
}

/* The seqs of [$4, $5) already stored for a vehicle within the times
   $2..$3 (a whole Batch's, over a reduced Batch's row: the records the
   reduced one brought).  Record rows carry no log id: the whole
   Batch's times keep another log's seqs out.
   Not prepared on connecting as the others are: a PREPARE naming the
   record tables would wait for any lock on them (another receiver making
   a day partition), which the other statements never meet before their
   CREATE (test ground-partition); and unprepared, it is planned for its
   times' partitions. */
const char grd_db_stored_sql[] =
	"SELECT seq FROM samples WHERE vehicle_id = $1::integer AND t BETWEEN $2::timestamptz AND $3::timestamptz "
	"AND seq >= $4::bigint AND seq < $5::bigint UNION ALL "
	"SELECT seq FROM can_frames WHERE vehicle_id = $1::integer AND t BETWEEN $2::timestamptz AND $3::timestamptz "
	"AND seq >= $4::bigint AND seq < $5::bigint UNION ALL "
	"SELECT seq FROM events WHERE vehicle_id = $1::integer AND t BETWEEN $2::timestamptz AND $3::timestamptz "
	"AND seq >= $4::bigint AND seq < $5::bigint UNION ALL "
	"SELECT seq FROM texts WHERE vehicle_id = $1::integer AND t BETWEEN $2::timestamptz AND $3::timestamptz "
	"AND seq >= $4::bigint AND seq < $5::bigint UNION ALL "
	"SELECT seq FROM trdp_telegrams WHERE vehicle_id = $1::integer AND t BETWEEN $2::timestamptz AND "
	"$3::timestamptz AND seq >= $4::bigint AND seq < $5::bigint ORDER BY 1";

int grd_db_failed(grd_db_t *db, const char *what, const PGresult *res)
{
	grd_db_fail_res(db, what, res);
	return PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED;
}

int grd_db_rows(grd_db_t *db, const char *what, PGresult *res)
{
	int r;

	if (PQresultStatus(res) == PGRES_TUPLES_OK)
		return PQntuples(res);
	r = grd_db_failed(db, what, res);
	PQclear(res);
	return r;
}

/* Run sql (no parameters); 0 or -EIO (a lost connection: -ECONNREFUSED). */
int grd_db_exec(grd_db_t *db, const char *what, const char *sql)
{
	PGresult *res = PQexec(db->conn, sql);
	ExecStatusType s = PQresultStatus(res);
	int r = 0;

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK)
		r = grd_db_failed(db, what, res);
	PQclear(res);
	return r;
}

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
	   differences, which cannot overflow a bigint.  A log's first Batch
	   over 2^40 from seq 1 (where every log starts) is one too, unless
	   confirmed: its neighbour is in the same group ($11), or the Batch
	   ending where it starts was held so (refused as a seq-jump).
	   upd: a whole Batch ($12 false) over a reduced Batch's row of the
	   same range (a request's answer) takes the row (its digest, reduced
	   false) and answers the second of the row's t_first (the day its
	   on_board was counted); a historical reduced one ($8, $12: the answer
	   to a request naming channels) adds its records the row lacks the
	   same way but leaves the row reduced, with its digest: the range
	   stays on board for the channels not asked.  Row-locked: of two receivers with the same
	   whole Batch one updates; the other's UPDATE waits, finds the row no
	   longer reduced and updates nothing (its retry finds a duplicate). */
	{ "ledger", "WITH prev AS ((SELECT first_seq, count, digest, reduced FROM batches WHERE vehicle_id = $1::integer "
	            "AND log_id = $2::bytea AND first_seq <= $3::bigint ORDER BY first_seq DESC LIMIT 1) UNION ALL "
	            "(SELECT first_seq, count, digest, reduced FROM batches WHERE vehicle_id = $1::integer AND log_id = "
	            "$2::bytea AND first_seq > $3::bigint AND first_seq < $4::bigint ORDER BY first_seq LIMIT 1)), "
	            "span AS (SELECT (SELECT first_seq FROM batches WHERE vehicle_id = $1::integer AND log_id = $2::bytea "
	            "ORDER BY first_seq LIMIT 1) AS lo, (SELECT first_seq + count FROM batches WHERE vehicle_id = "
	            "$1::integer AND log_id = $2::bytea ORDER BY first_seq DESC LIMIT 1) AS hi), "
	            "j AS (SELECT CASE WHEN lo IS NULL THEN $3::bigint > 1099511627776 AND NOT $11::boolean AND NOT "
	            "EXISTS (SELECT 1 FROM refused r WHERE r.vehicle = (SELECT name FROM vehicles WHERE vehicle_id = "
	            "$1::integer) AND r.log_id = $2::bytea AND r.sqlstate = 'seq-jump' AND r.first_seq + r.count = "
	            "$3::bigint) ELSE coalesce($3::bigint - hi >= 1099511627776 OR lo - $4::bigint >= 1099511627776, "
	            "false) END AS jump, lo IS NULL AS first FROM span), "
	            "ins AS (INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, "
	            "config_hash, digest, reduced) SELECT $1::integer, $2::bytea, $3::bigint, $5::integer, $6::timestamptz, "
	            "$7::timestamptz, $8::boolean, $9::bigint, $10::bigint, $12::boolean WHERE NOT EXISTS (SELECT 1 FROM "
	            "prev p WHERE p.first_seq + p.count > $3::bigint AND p.first_seq < $4::bigint) AND NOT (SELECT jump "
	            "FROM j) ON CONFLICT DO NOTHING RETURNING 1), "
	            "upd AS (UPDATE batches b SET digest = CASE WHEN $12::boolean THEN b.digest ELSE $10::bigint END, "
	            "reduced = $12::boolean WHERE b.vehicle_id = $1::integer "
	            "AND b.log_id = $2::bytea AND b.first_seq = $3::bigint AND b.count = $5::integer AND b.reduced AND "
	            "b.digest <> $10::bigint AND (NOT $12::boolean OR $8::boolean) "
	            "RETURNING coalesce(floor(extract(epoch FROM "
	            "b.t_first))::bigint, 0)) "
	            "SELECT (SELECT count(*) FROM ins), p.first_seq, p.count, p.digest, (SELECT jump FROM j), "
	            "(SELECT first FROM j), p.reduced, (SELECT * FROM upd) FROM (SELECT 1) o LEFT JOIN prev p ON true", 12 },
	{ "conflict", "INSERT INTO conflicts (vehicle_id, log_id, first_seq, count, digest, reason, payload) "
	              "SELECT $1, $2, $3, $4, $5, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM conflicts WHERE "
	              "vehicle_id = $1 AND log_id = $2 AND first_seq = $3 AND digest = $5)", 7 },
	/* clock_timestamp(): two dictionaries in one group are told apart
	   (now() is the transaction's start). */
	{ "channel", "INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, updated_at, "
	             "value_table, bus_name, decimals) SELECT $1::integer, $2::bigint, $3::bigint, $4::text, $5::text, "
	             "$6::integer, $7::text, clock_timestamp(), $8::text[], $9::text, $10::integer WHERE "
	             "current_setting('railmon.dict', true) = 'ok' ON CONFLICT (vehicle_id, "
	             "config_hash, channel) DO UPDATE SET name = excluded.name, unit = excluded.unit, bus = excluded.bus, "
	             "source = excluded.source, updated_at = excluded.updated_at, value_table = excluded.value_table, "
	             "bus_name = excluded.bus_name, decimals = excluded.decimals", 10 },
	/* records: those that arrived; on_board: a reduced Batch's seqs of its
	   range not sent (in the vehicle's log, neither received nor missing) */
	{ "day", "INSERT INTO ledger_days AS d (vehicle_id, log_id, day, batches, records, min_first, max_end, "
	         "on_board) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (vehicle_id, log_id, day) DO UPDATE SET "
	         "batches = d.batches + excluded.batches, records = d.records + excluded.records, "
	         "min_first = least(d.min_first, excluded.min_first), max_end = greatest(d.max_end, excluded.max_end), "
	         "on_board = d.on_board + excluded.on_board",
	  8 },
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
	                                  "vmax double precision, vsum double precision, n_all bigint, n_oor bigint, n_inv bigint, "
	                                  "a_min double precision, a_max double precision, a_sum double precision, "
	                                  "t_first timestamptz, t_last timestamptz, dt_min bigint, dt_max bigint) "
	                                  "ON COMMIT DELETE ROWS") < 0))
		return -EIO;
	db->prepared = true;
	return 0;
}

/* Run a prepared statement; params are text except those with a length. */
PGresult *grd_db_run(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens,
                     ExecStatusType want)
{
	int fmts[12] = { 0 };
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

/* ---- pipelines ---- */

/* Statements sent without waiting for their answers, read back at the
   end: a group costs a round trip per pipeline, not per statement. */
int grd_pipe_enter(grd_db_t *db)
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
int grd_qsend(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens)
{
	int fmts[12] = { 0 };

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
int grd_qsend_sql(grd_db_t *db, const char *what, const char *sql)
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
int grd_pipe_run(grd_db_t *db, const char *what, PGresult **keep)
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
		r = PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED; /* kept above */
	db->pipe_failed = false;
	if (PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF && PQexitPipelineMode(db->conn) != 1 && r == 0) {
		grd_db_fail(db, what, PQerrorMessage(db->conn));
		r = -EIO;
	}
	return r;
}

/* ---- the vehicle ids and the ledger's key ---- */

int grd_db_vehicle_id(grd_db_t *db, const char *name, int *ret_id)
{
	const char *v[1] = { name };
	PGresult *res;

	for (size_t i = 0; i < db->nveh; i++)
		if (!strcmp(db->veh[i].name, name)) {
			*ret_id = db->veh[i].id;
			return 0;
		}
	res = grd_db_run(db, "vehicle", 1, v, NULL, PGRES_TUPLES_OK);
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

void grd_batch_key_make(const struct rec_batch_info *info, int vid, uint64_t digest, struct grd_batch_key *k)
{
	snprintf(k->vid, sizeof(k->vid), "%d", vid);
	snprintf(k->first, sizeof(k->first), "%" PRIu64, info->first_seq);
	/* the seq range the Batch accounts for: a reduced one's whole source
	   range (its other seqs are on the vehicle), else its records */
	snprintf(k->end, sizeof(k->end), "%" PRIu64, info->end_seq);
	snprintf(k->count, sizeof(k->count), "%" PRIu64, info->end_seq - info->first_seq);
	snprintf(k->digest, sizeof(k->digest), "%" PRId64, (int64_t)digest);
	snprintf(k->hash, sizeof(k->hash), "%" PRId64, (int64_t)info->config_hash);
	/* A Batch without a log id (railmon before log ids) is keyed under an
	   empty one (length 0: sent as the text '', an empty bytea). */
	k->log_id = info->log_id_len ? (const char *)info->log_id : "";
	k->log_id_len = (int)info->log_id_len;
}

