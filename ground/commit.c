/* SPDX-License-Identifier: MIT */
/*
 * db.c - the connection, the migrations, the retention by day, and the
 * retry loop of grd_db_store() (the Batch's transaction is ingest.c's).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libpq-fe.h>

#include "db-private.h"

int grd_db_new(const struct grd_db_cfg *cfg, grd_db_t **ret_db)
{
	grd_db_t *db;

	if (!cfg || !cfg->url || !*cfg->url || !ret_db)
		return -EINVAL;
	db = calloc(1, sizeof(*db));
	if (!db)
		return -ENOMEM;
	db->cfg = *cfg;
	db->cfg.url = strdup(cfg->url);
	if (!db->cfg.url) {
		free(db);
		return -ENOMEM;
	}
	if (!db->cfg.backoff_max_ms)
		db->cfg.backoff_max_ms = 5000;
	if (!db->cfg.group_max)
		db->cfg.group_max = GRD_DB_GROUP_MAX;
	if (!db->cfg.group_ms)
		db->cfg.group_ms = GRD_DB_GROUP_MS;
	if (!db->cfg.workers)
		db->cfg.workers = GRD_DB_WORKERS;
	if (db->cfg.workers > GRD_DB_WORKERS_MAX)
		db->cfg.workers = GRD_DB_WORKERS_MAX;
	if (db->cfg.max_age_ns <= 0)
		db->cfg.max_age_ns = GRD_DB_MAX_AGE_NS;
	if (db->cfg.max_skew_ns <= 0)
		db->cfg.max_skew_ns = GRD_DB_MAX_SKEW_NS;
	if (!db->cfg.max_channels)
		db->cfg.max_channels = GRD_DB_MAX_CHANNELS;
	if (!db->cfg.max_configs_day)
		db->cfg.max_configs_day = GRD_DB_MAX_CONFIGS_DAY;
	db->pend = calloc(db->cfg.group_max, sizeof(*db->pend));
	db->keep = calloc(db->cfg.group_max + 1, sizeof(*db->keep));
	if (!db->pend || !db->keep) {
		free(db->pend);
		free(db->keep);
		free((char *)db->cfg.url);
		free(db);
		return -ENOMEM;
	}
	pthread_mutex_init(&db->lock, NULL);
	pthread_mutex_init(&db->wlock, NULL);
	pthread_cond_init(&db->wcond, NULL);
	*ret_db = db;
	return 0;
}

static void workers_stop(grd_db_t *db);

grd_db_t *grd_db_free(grd_db_t *db)
{
	if (!db)
		return NULL;
	workers_stop(db);
	if (db->conn)
		PQfinish(db->conn);
	for (size_t i = 0; i < db->npend; i++) {
		rec_batch_free(db->pend[i].b);
		free(db->pend[i].payload);
	}
	free(db->pend);
	free(db->keep);
	for (size_t i = 0; i < sizeof(db->copy) / sizeof(db->copy[0]); i++)
		free(db->copy[i].p);
	free(db->pts);
	free(db->veh);
	free(db->roll.p);
	free((char *)db->cfg.url);
	pthread_mutex_destroy(&db->lock);
	pthread_mutex_destroy(&db->wlock);
	pthread_cond_destroy(&db->wcond);
	free(db);
	return NULL;
}

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

/* Run sql (no parameters); 0 or -EIO (a lost connection: -ECONNREFUSED). */
int grd_db_exec(grd_db_t *db, const char *what, const char *sql)
{
	PGresult *res = PQexec(db->conn, sql);
	ExecStatusType s = PQresultStatus(res);
	int r = 0;

	if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
		grd_db_fail_res(db, what, res);
		r = PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED;
	}
	PQclear(res);
	return r;
}

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
	grd_db_fail(db, "schema version", PQerrorMessage(db->conn));
	r = PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED;
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

static const char *const grd_day_tables[] = { "samples", "can_frames", "events", "texts" };

/* Drop the child tables of each day table that the WHERE clause (on
   c.relname, given the table's name twice) picks; how many in *ret_n. */
static int prune_where(grd_db_t *db, const char *cond, int *ret_n)
{
	char sql[320];
	PGresult *res;
	int r = 0;

	for (size_t t = 0; t < sizeof(grd_day_tables) / sizeof(grd_day_tables[0]); t++) {
		/* The child tables of the parent, from the catalog. */
		int k = snprintf(sql, sizeof(sql), "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = "
		                 "i.inhrelid WHERE i.inhparent = '%s'::regclass AND ", grd_day_tables[t]);
		snprintf(sql + k, sizeof(sql) - (size_t)k, cond, grd_day_tables[t]);
		res = PQexec(db->conn, sql);
		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			grd_db_fail(db, "prune", PQerrorMessage(db->conn));
			PQclear(res);
			return PQstatus(db->conn) == CONNECTION_OK ? -EIO : -ECONNREFUSED;
		}
		for (int i = 0; i < PQntuples(res) && r == 0; i++) {
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
	time_t cut = (time_t)(cutoff_ns / 1000000000), fut = (time_t)(future_ns / 1000000000);
	struct tm tm;
	char day[16], after[16], cond[160], sql[256];
	int r = grd_db_connect(db), n = 0, nf = 0;

	if (r < 0)
		return r;
	gmtime_r(&cut, &tm);
	strftime(day, sizeof(day), "%Y%m%d", &tm);
	gmtime_r(&fut, &tm);
	strftime(after, sizeof(after), "%Y%m%d", &tm);
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
	grd_db_forget(db); /* the partitions this connection knew may be gone */
	if (ret_future)
		*ret_future = nf;
	return r < 0 ? r : n + nf;
}

/* ---- the retry loop ---- */

static bool stopping(const grd_db_t *db)
{
	return db->cfg.stop && *db->cfg.stop;
}

/* Sleep ms in slices of 100 ms, so a stop is seen soon. */
static void backoff(const grd_db_t *db, unsigned ms)
{
	while (ms && !stopping(db)) {
		unsigned slice = ms < 100 ? ms : 100;
		struct timespec ts = { 0, (long)slice * 1000000L };

		nanosleep(&ts, NULL);
		ms -= slice;
	}
}

static void count(grd_db_t *db, enum grd_db_outcome out)
{
	pthread_mutex_lock(&db->lock);
	db->st.batches[out]++;
	pthread_mutex_unlock(&db->lock);
}

/* Commit p[0..n) in one transaction, retrying what passes: 0, -EPERM (a
   permanent error: db->error, db->sqlstate), -ECANCELED (stopped; once:
   one try only). */
static int commit_group(grd_db_t *db, struct grd_pending *p, size_t n, bool once)
{
	unsigned delay = 100;
	int r;

	for (;;) {
		r = grd_db_connect(db);
		if (r == 0)
			r = grd_ingest(db, p, n);
		if (r >= 0)
			return 0;
		for (size_t i = 0; i < n; i++)
			p[i].out = GRD_DB_QUEUED; /* rolled back */
		if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
			PQclear(PQexec(db->conn, "ROLLBACK"));
		if (grd_db_permanent(db))
			return -EPERM;
		if (stopping(db) || once)
			return -ECANCELED;
		backoff(db, delay);
		delay = delay * 2 > db->cfg.backoff_max_ms ? db->cfg.backoff_max_ms : delay * 2;
	}
}

/* Record a Batch the database refuses for good; that record itself is
   retried while the failure passes.  Counted either way. */
static int refuse(grd_db_t *db, struct grd_pending *p, bool once)
{
	struct rec_batch_info info;
	char why[sizeof(db->st.last_refused)], state[sizeof(db->sqlstate)], reason[sizeof(db->error)];
	unsigned delay = 100;
	int r;

	rec_batch_info(p->b, &info);
	snprintf(state, sizeof(state), "%s", db->sqlstate);
	snprintf(reason, sizeof(reason), "%s", db->error);
	snprintf(why, sizeof(why), "%s seq %" PRIu64 "..%" PRIu64 ": SQLSTATE %s: %s", info.vehicle, info.first_seq,
	         info.first_seq + info.count - (info.count > 0), state, reason);
	p->out = GRD_DB_REFUSED;
	for (;;) {
		r = grd_db_connect(db);
		if (r == 0)
			r = grd_ingest_refuse(db, p, state, reason);
		if (r == 0 || grd_db_permanent(db) || stopping(db) || once)
			break;
		backoff(db, delay);
		delay = delay * 2 > db->cfg.backoff_max_ms ? db->cfg.backoff_max_ms : delay * 2;
	}
	pthread_mutex_lock(&db->lock);
	if (db->parent)
		db->refused_stamp = __atomic_add_fetch(&db->parent->stamp, 1, __ATOMIC_RELAXED);
	snprintf(db->st.last_refused, sizeof(db->st.last_refused), "%s", why);
	db->st.refused_lost += r < 0;
	pthread_mutex_unlock(&db->lock);
	return 0;
}

/* The group, or (after a permanent error) each Batch on its own, so one
   bad Batch costs only itself. */
static int commit_pending(grd_db_t *db, bool once)
{
	size_t n = db->npend;
	int r = n ? commit_group(db, db->pend, n, once) : 0;

	for (size_t i = 0; r == -EPERM && n > 1 && i < n; i++) {
		int k = commit_group(db, &db->pend[i], 1, once);

		if (k == -EPERM)
			k = refuse(db, &db->pend[i], once);
		if (k < 0) {
			/* stopped: what is left is dropped, counted */
			for (size_t j = i; j < n; j++)
				db->pend[j].out = GRD_DB_QUEUED;
			r = k;
			break;
		}
		if (i == n - 1)
			r = 0;
	}
	if (r == -EPERM)
		r = refuse(db, &db->pend[0], once);
	for (size_t i = 0; i < n; i++) {
		if (db->pend[i].out == GRD_DB_LIMIT) {
			struct rec_batch_info info;
			char words[sizeof(db->st.last_door)];

			rec_batch_info(db->pend[i].b, &info);
			snprintf(words, sizeof(words), "%s: %s", info.vehicle, db->pend[i].why);
			grd_db_door_count(db, (enum grd_db_door)(db->pend[i].door - 1), words);
		}
		if (db->pend[i].out != GRD_DB_QUEUED) {
			count(db, db->pend[i].out);
		} else {
			pthread_mutex_lock(&db->lock);
			db->st.cancelled++;
			pthread_mutex_unlock(&db->lock);
		}
		rec_batch_free(db->pend[i].b);
		free(db->pend[i].payload);
	}
	db->npend = 0;
	pthread_mutex_lock(&db->lock);
	db->st.groups += r == 0;
	if (r == 0)
		db->st.down = false;
	pthread_mutex_unlock(&db->lock);
	return r;
}

int grd_db_dictionary(grd_db_t *db, const rec_batch_t *b)
{
	unsigned delay = 100;
	int r;

	if (!db || !b)
		return -EINVAL;
	for (;;) {
		r = grd_db_connect(db);
		if (r == 0)
			r = grd_ingest_dictionary(db, b);
		if (r >= 0) {
			pthread_mutex_lock(&db->lock);
			db->st.down = false;
			pthread_mutex_unlock(&db->lock);
			return 0;
		}
		if (db->conn && PQstatus(db->conn) == CONNECTION_OK)
			PQclear(PQexec(db->conn, "ROLLBACK"));
		if (grd_db_permanent(db))
			return -EPERM;
		if (stopping(db))
			return -ECANCELED;
		backoff(db, delay);
		delay = delay * 2 > db->cfg.backoff_max_ms ? db->cfg.backoff_max_ms : delay * 2;
	}
}

/* ---- committers ---- */

static void *worker_main(void *arg)
{
	grd_db_t *w = arg, *db = w->parent;

	pthread_mutex_lock(&db->wlock);
	for (;;) {
		while (!w->busy && !w->quit)
			pthread_cond_wait(&db->wcond, &db->wlock);
		if (!w->busy)
			break;
		pthread_mutex_unlock(&db->wlock);
		int r = commit_pending(w, w->once);
		pthread_mutex_lock(&db->wlock);
		w->last = r;
		w->busy = false;
		pthread_cond_broadcast(&db->wcond);
	}
	pthread_mutex_unlock(&db->wlock);
	return NULL;
}

static int workers_start(grd_db_t *db)
{
	struct grd_db_cfg cfg = db->cfg;

	cfg.workers = 1;
	while (db->nwork < db->cfg.workers) {
		grd_db_t *w;
		int r = grd_db_new(&cfg, &w);

		if (r < 0)
			return r;
		w->parent = db;
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			grd_db_free(w);
			return -EAGAIN;
		}
		/* under wlock: grd_db_stats() reads them from another thread */
		pthread_mutex_lock(&db->wlock);
		db->work[db->nwork++] = w;
		pthread_mutex_unlock(&db->wlock);
	}
	return 0;
}

/* Every group handed over committed (or given up, stopping). */
static void workers_wait(grd_db_t *db)
{
	pthread_mutex_lock(&db->wlock);
	for (size_t i = 0; i < db->nwork; i++)
		while (db->work[i]->busy)
			pthread_cond_wait(&db->wcond, &db->wlock);
	pthread_mutex_unlock(&db->wlock);
}

static void workers_stop(grd_db_t *db)
{
	grd_db_t *w[GRD_DB_WORKERS_MAX];
	size_t n;

	/* Out of grd_db_stats()'s sight first, then ended and freed. */
	pthread_mutex_lock(&db->wlock);
	n = db->nwork;
	memcpy(w, db->work, n * sizeof(*w));
	for (size_t i = 0; i < n; i++)
		w[i]->quit = true;
	db->nwork = 0;
	pthread_cond_broadcast(&db->wcond);
	pthread_mutex_unlock(&db->wlock);
	for (size_t i = 0; i < n; i++) {
		pthread_join(w[i]->thread, NULL);
		grd_db_free(w[i]);
	}
}

/* Hand the filling group to its worker, and make the next idle worker
   the one that fills, waiting for one if all are committing. */
static int hand_over(grd_db_t *db, bool once)
{
	grd_db_t *w = db->work[db->fill];
	int r = 0;

	pthread_mutex_lock(&db->wlock);
	w->once = once;
	w->busy = true;
	pthread_cond_broadcast(&db->wcond);
	for (;;) {
		for (size_t i = 1; i <= db->nwork; i++) {
			size_t k = (db->fill + i) % db->nwork;

			if (!db->work[k]->busy) {
				db->fill = k;
				r = db->work[k]->last;
				db->work[k]->last = 0;
				pthread_mutex_unlock(&db->wlock);
				return r;
			}
		}
		pthread_cond_wait(&db->wcond, &db->wlock);
	}
}

int grd_db_flush(grd_db_t *db, bool force)
{
	struct timespec now;
	grd_db_t *w;
	int r = 0;

	if (!db || !db->nwork)
		return 0;
	w = db->work[db->fill];
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (w->npend && (force || (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - w->pend_since_ns >=
	                              (int64_t)db->cfg.group_ms * 1000000))
		r = hand_over(db, force && stopping(db));
	if (!force)
		return r;
	workers_wait(db);
	for (size_t i = 0; i < db->nwork; i++) {
		r = r < 0 ? r : db->work[i]->last;
		db->work[i]->last = 0;
	}
	return r;
}

int grd_db_store(grd_db_t *db, const void *payload, size_t len, enum grd_db_outcome *ret_outcome)
{
	rec_batch_t *b = NULL;
	int r;

	if (!db || (!payload && len) || !ret_outcome)
		return -EINVAL;
	if (rec_batch_decode(payload, len, &b) < 0) {
		pthread_mutex_lock(&db->lock);
		db->st.bad++;
		pthread_mutex_unlock(&db->lock);
		return -EBADMSG;
	}
	r = grd_db_store_batch(db, &b, payload, len, ret_outcome);
	rec_batch_free(b);
	return r;
}

int grd_db_store_batch(grd_db_t *db, rec_batch_t **b, const void *payload, size_t len,
                       enum grd_db_outcome *ret_outcome)
{
	struct grd_pending *p;
	grd_db_t *w;
	int r;

	if (!db || !b || !*b || (!payload && len) || !ret_outcome)
		return -EINVAL;
	r = workers_start(db);
	if (r < 0)
		return r;
	w = db->work[db->fill];
	p = &w->pend[w->npend];
	*p = (struct grd_pending){ .len = len, .out = GRD_DB_QUEUED, .payload = malloc(len ? len : 1) };
	if (!p->payload)
		return -ENOMEM;
	memcpy(p->payload, payload, len);
	/* Ours from here: the group frees it once committed. */
	p->b = *b;
	*b = NULL;
	if (w->npend++ == 0) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		w->pend_since_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	*ret_outcome = GRD_DB_QUEUED;
	if (w->npend < db->cfg.group_max)
		return grd_db_flush(db, false);
	/* Full: to its committer; when every committer is busy (an outage:
	   each retries until its group commits), wait, reading nothing more,
	   so the broker keeps what follows. */
	return hand_over(db, false);
}

/* The counters of the parent (decoding, dictionaries) and its workers
   (groups), the newest error and refusal. */
void grd_db_stats(grd_db_t *db, struct grd_db_stats *ret_stats)
{
	uint64_t err = 0, ref = 0, door;

	pthread_mutex_lock(&db->lock);
	*ret_stats = db->st;
	door = db->door_stamp;
	pthread_mutex_unlock(&db->lock);
	pthread_mutex_lock(&db->wlock);
	for (size_t i = 0; i < db->nwork; i++) {
		grd_db_t *w = db->work[i];
		struct grd_db_stats *t = ret_stats;

		pthread_mutex_lock(&w->lock);
		for (size_t k = 0; k < GRD_DB_OUTCOME_MAX; k++)
			t->batches[k] += w->st.batches[k];
		t->samples += w->st.samples;
		t->can_frames += w->st.can_frames;
		t->events += w->st.events;
		t->bad_names += w->st.bad_names;
		t->connects += w->st.connects;
		t->failures += w->st.failures;
		t->partitions += w->st.partitions;
		t->refused_lost += w->st.refused_lost;
		t->cancelled += w->st.cancelled;
		t->groups += w->st.groups;
		t->vehicle_ids += w->st.vehicle_ids;
		for (size_t k = 0; k < GRD_DOOR_MAX; k++)
			t->door[k] += w->st.door[k];
		if (w->st.last_door[0] && w->door_stamp > door) {
			door = w->door_stamp;
			snprintf(t->last_door, sizeof(t->last_door), "%s", w->st.last_door);
		}
		t->down = t->down || w->st.down;
		if (w->st.error[0] && w->err_stamp > err) {
			err = w->err_stamp;
			snprintf(t->error, sizeof(t->error), "%s", w->st.error);
		}
		if (w->st.last_refused[0] && w->refused_stamp > ref) {
			ref = w->refused_stamp;
			snprintf(t->last_refused, sizeof(t->last_refused), "%s", w->st.last_refused);
		}
		pthread_mutex_unlock(&w->lock);
	}
	pthread_mutex_unlock(&db->wlock);
}
