/* SPDX-License-Identifier: MIT */
/*
 * commit.c - Batches into the ground database in groups: grd_db_store_batch()
 * and its group, the retry loop (what passes is retried, a permanent
 * error tried Batch by Batch and recorded in refused), the committers
 * (threads with a connection each) and the counters of them all.  One
 * group's transaction is ingest.c's, the connection conn.c's, the schema
 * schema.c's.
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

/* The counters of the parent (dictionaries) and its workers
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
		t->trdp_telegrams += w->st.trdp_telegrams;
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
