/* SPDX-License-Identifier: MIT */
/*
 * ingest.c - a group of Batches into PostgreSQL, in one transaction, in
 * four round trips whatever the group's size (libpq's pipeline mode).
 * One job over ~600 lines, so one file: the statements are queued and
 * their results read back in the same order, over the group's state
 * (the day partitions its COPYs need are made first, make_days()):
 *
 * 1. BEGIN and, for each Batch (in (vehicle, log id, first_seq) order, so
 *    that receivers lock rows in one order), one statement that looks up
 *    the ledger rows around its seq range and inserts its own ledger row
 *    keyed by (vehicle, log id, first_seq) when nothing overlaps; what it
 *    found tells a duplicate from a conflict.  Each statement sees the
 *    rows of the ones before it, so a Batch twice in one group is a
 *    duplicate the second time.
 * 2. The records of the new Batches by one COPY BINARY per table into the
 *    day partitions (samples, can_frames, events, texts, trdp_telegrams:
 *    copy.c),
 * 3. and the group's 1 s aggregates into the rollups' staging table;
 * 4. the rollup merges, the channel dictionaries, the per-day ledger
 *    summary (ledger_days: its rows are locked only for the commit), the
 *    NOTIFY and the COMMIT.
 *
 * A conflict is recorded in a statement of its own (rare), and so are
 * the seqs stored already of a whole Batch over a reduced Batch's row
 * (rare: a request's answer; stored_seqs()).
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
#include "basic/utc.h"
#include "basic/utf8.h"
#include "record/digest.h"

#define NS_PER_DAY GRD_NS_PER_DAY

/* ---- values as text ---- */

/* A timestamptz in UTC, to the microsecond (PostgreSQL's resolution). */
static void fmt_time(int64_t t_ns, char out[48])
{
	basic_utc_text(t_ns, 6, BASIC_UTC_SPACE | BASIC_UTC_PG, out, 48);
}

/* ---- day partitions ---- */

static bool day_known(const grd_db_t *db, int64_t day)
{
	for (size_t i = 0; i < db->ndays; i++)
		if (db->days[i] == day)
			return true;
	return false;
}

/* One day partition, CREATE TABLE IF NOT EXISTS: the check of IF NOT
   EXISTS comes before the wait for the parent's lock, so another receiver
   making the same partition meanwhile (a fleet's receivers on a new day)
   makes this fail once that one commits: 42P07, or 23505 on the catalog's
   unique index.  The partition is there then, and the statement again
   finds it (the failure neither said nor counted). */
static int make_partition(grd_db_t *db, const char *sql)
{
	for (int tries = 0;; tries++) {
		PGresult *res = PQexec(db->conn, sql);
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
		bool made = PQresultStatus(res) == PGRES_COMMAND_OK;
		int r = 0;

		if (!made && !(state && (!strcmp(state, "42P07") || !strcmp(state, "23505")) && tries < 3))
			r = grd_db_failed(db, "partition", res);
		PQclear(res);
		if (made || r < 0)
			return r;
	}
}

/* The day's partition of each table; another receiver may make it at the
   same moment (make_partition). */
static int make_day(grd_db_t *db, int64_t day)
{
	char name[16], from[16], to[16], sql[400];
	int r = 0;

	grd_day_text(day, "%Y%m%d", name);
	grd_day_text(day, "%Y-%m-%d", from);
	grd_day_text(day + 1, "%Y-%m-%d", to);
	/* Made already (by another receiver, or a migration): nothing to do,
	   and a role that may write but not create tables goes on. */
	snprintf(sql, sizeof(sql), "SELECT to_regclass('samples_p%s') IS NOT NULL AND to_regclass('can_frames_p%s') "
	         "IS NOT NULL AND to_regclass('events_p%s') IS NOT NULL AND to_regclass('texts_p%s') IS NOT NULL AND "
	         "to_regclass('trdp_telegrams_p%s') IS NOT NULL", name, name, name, name, name);
	PGresult *res = PQexec(db->conn, sql);
	bool made = PQresultStatus(res) == PGRES_TUPLES_OK && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	for (size_t t = 0; !made && r == 0 && t < GRD_COPY_TABLES; t++) {
		snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM "
		         "('%s 00:00:00+00') TO ('%s 00:00:00+00')", grd_copy_tables[t], name, grd_copy_tables[t], from, to);
		r = make_partition(db, sql);
	}
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
	int64_t last = INT64_MIN, first = grd_floordiv(p->lo, NS_PER_DAY);

	/* Within one day known already (nearly always): no need to look at
	   each record. */
	if (!count || (first == grd_floordiv(p->hi, NS_PER_DAY) && day_known(db, first)))
		return 0;
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;
		int64_t day;
		int r;

		rec_batch_item(b, i, &it);
		day = grd_floordiv(it.t_ns, NS_PER_DAY);
		if (day == last || day_known(db, day))
			continue;
		r = make_day(db, day);
		if (r < 0)
			return r;
		last = day;
	}
	return 0;
}

/* A Batch the ledger holds: one with records, or a reduced one of none
   (a source Batch of which nothing passed its policies: all its seqs on
   the vehicle) placed by its source's t0, so the range is no hole that
   gap repair would fill with whole Batches.  (A Batch of no record and
   no t0 carries only a dictionary or Health: its first_seq is the next
   Batch's.) */
static bool ledgered(const struct rec_batch_info *info)
{
	return info->count || (info->reduced && info->t0_ns);
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
	bool far_base = grd_times_far_base(p->lo, p->hi, info->t0_ns, skew);
	char lo[48], hi[48], base[48], a[BASIC_SIZE_TEXT_MAX], k[BASIC_SIZE_TEXT_MAX];

	p->door = 0;
	if (!ledgered(info) || grd_times_in_window(p->lo, p->hi, info->t0_ns, now, age, skew))
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

/* ---- one Batch ---- */

/* The answer of the "ledger" statement: GRD_DB_COMMITTED (the ledger row
   is ours: a new Batch; or a whole Batch, or a historical reduced one,
   took a reduced Batch's row of the same range: p->upgrade), GRD_DB_DUPLICATE, GRD_DB_CONFLICT; -EAGAIN
   when another receiver committed the same key meanwhile (the retry finds
   it). */
static int ledger_outcome(const PGresult *res, const struct rec_batch_info *info, uint64_t digest,
                          struct grd_pending *p)
{
	uint64_t first = info->first_seq, count = info->end_seq - info->first_seq;
	enum grd_db_outcome *ret = &p->out;

	*ret = GRD_DB_COMMITTED;
	if (PQntuples(res) > 0 && !strcmp(PQgetvalue(res, 0, 0), "1"))
		return 0;
	if (PQntuples(res) > 0 && PQgetvalue(res, 0, 4)[0] == 't') {
		*ret = GRD_DB_LIMIT; /* a seq jump: the caller says which */
		return 0;
	}
	if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 7)) {
		p->upgrade = true;
		p->up_t_first_s = strtoll(PQgetvalue(res, 0, 7), NULL, 10);
		return 0;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		if (PQgetisnull(res, i, 1))
			continue;
		uint64_t f = strtoull(PQgetvalue(res, i, 1), NULL, 10), c = strtoull(PQgetvalue(res, i, 2), NULL, 10);
		uint64_t d = (uint64_t)strtoll(PQgetvalue(res, i, 3), NULL, 10);
		bool reduced = PQgetvalue(res, i, 6)[0] == 't';

		if (f == first && c == count && d == digest)
			*ret = GRD_DB_DUPLICATE;
		/* a whole Batch over a reduced row the statement did not take:
		   another receiver took it meanwhile (the retry finds it whole) */
		else if (f == first && c == count && reduced && !info->reduced)
			return -EAGAIN;
		/* a reduced Batch over a range held whole: nothing new (its
		   records are some of the whole Batch's) */
		else if (f == first && c == count && !reduced && info->reduced)
			*ret = GRD_DB_DUPLICATE;
		else if (f == first)
			*ret = GRD_DB_CONFLICT;
		else if (f + c > first && f < first + count)
			*ret = GRD_DB_CONFLICT;
		if (*ret != GRD_DB_COMMITTED)
			return 0;
	}
	return -EAGAIN;
}

static int record_conflict(grd_db_t *db, const struct grd_batch_key *k, const void *payload, size_t len)
{
	const char *v[7] = { k->vid, k->log_id, k->first, k->count, k->digest,
	                     "other records under seqs committed before", payload };
	int lens[7] = { 0, k->log_id_len, 0, 0, 0, 0, (int)len };
	PGresult *res = grd_db_run(db, "conflict", 7, v, lens, PGRES_COMMAND_OK);

	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

/* A Batch refused at the door (p->door, p->why) into refused and
   door_refusals, in the open transaction. */
static int record_door(grd_db_t *db, const struct grd_batch_key *k, const struct rec_batch_info *info,
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
	res = grd_db_run(db, "door", 9, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

/* The Batch's ledger statement, into the open pipeline. */
static int send_ledger(grd_db_t *db, const struct grd_batch_key *k, const struct rec_batch_info *info,
                       const struct grd_pending *p, bool neighbour)
{
	char tf[48], tl[48];
	const char *v[12] = { k->vid, k->log_id, k->first, k->end, k->count, tf, tl, info->historical ? "t" : "f",
	                      k->hash, k->digest, neighbour ? "t" : "f", info->reduced ? "t" : "f" };
	int lens[12] = { 0, k->log_id_len, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };

	fmt_time(p->lo, tf);
	fmt_time(p->hi, tl);
	return grd_qsend(db, "ledger", 12, v, lens);
}

/* p[i] and p[j] (sorted by pending_cmp) of one log, p[j] starting where
   p[i] ends, both let in so far. */
static bool adjacent(const struct grd_pending *p, size_t i, size_t j)
{
	struct rec_batch_info a, b;

	rec_batch_info(p[i].b, &a);
	rec_batch_info(p[j].b, &b);
	return p[i].vid == p[j].vid && !p[i].door && !p[j].door && a.end_seq > a.first_seq &&
	       a.log_id_len == b.log_id_len && !memcmp(a.log_id, b.log_id, a.log_id_len) && a.end_seq == b.first_seq;
}

/* A Batch of the group right before or after p[i] in its log: what
   confirms where a log's first Batch far from seq 1 lies ("ledger"). */
static bool group_neighbour(const struct grd_pending *p, size_t n, size_t i)
{
	return (i > 0 && adjacent(p, i - 1, i)) || (i + 1 < n && adjacent(p, i, i + 1));
}

/* A seq jump in words: against the log's committed Batches, or its first
   Batch far from seq 1 (first), held in refused for the next to confirm. */
static void jump_words(struct grd_pending *p, const struct rec_batch_info *info, bool first)
{
	uint64_t last = info->end_seq - 1;

	if (first)
		snprintf(p->why, sizeof(p->why), "seq %" PRIu64 "..%" PRIu64 ": the first Batch of its log, over "
		         "2^40 records from seq 1: held (kept in refused) until a Batch of its log from seq %" PRIu64
		         " confirms it", info->first_seq, last, last + 1);
	else
		snprintf(p->why, sizeof(p->why), "seq %" PRIu64 "..%" PRIu64 " lies over 2^40 records from "
		         "every Batch of its log in the ledger", info->first_seq, last);
}

/* The ledger summary of one (vehicle, log, day) of the group. */
struct day_sum {
	int vid;
	const uint8_t *log_id;
	size_t log_id_len;
	int64_t day;
	uint64_t batches, records, min_first, max_end;
	int64_t on_board;         /* < 0: whole Batches over reduced rows */
	bool any;
};

/* One (vehicle, log, day)'s ledger_days upsert, into the open pipeline. */
static int send_day(grd_db_t *db, const struct day_sum *d)
{
	char vid[16], day[16], nb[24], nr[24], lo[24], hi[24], ob[24];
	const char *v[8] = { vid, d->log_id_len ? (const char *)d->log_id : "", day, nb, nr, lo, hi, ob };
	int lens[8] = { 0, (int)d->log_id_len, 0, 0, 0, 0, 0, 0 };

	if (!d->any)
		return 0;
	snprintf(vid, sizeof(vid), "%d", d->vid);
	grd_day_text(d->day, "%Y-%m-%d", day);
	snprintf(nb, sizeof(nb), "%" PRIu64, d->batches);
	snprintf(nr, sizeof(nr), "%" PRIu64, d->records);
	snprintf(lo, sizeof(lo), "%" PRIu64, d->min_first);
	snprintf(hi, sizeof(hi), "%" PRIu64, d->max_end);
	snprintf(ob, sizeof(ob), "%" PRId64, d->on_board);
	return grd_qsend(db, "day", 8, v, lens);
}

/* Add a new Batch to the run of equal (vehicle, log, day) in *d, sending
   the run before it when the key changes (the group is sorted). */
static int sum_day(grd_db_t *db, struct day_sum *d, int vid, const struct rec_batch_info *info,
                   const struct grd_pending *p)
{
	/* a whole Batch over a reduced row: on the day the reduced one was
	   counted (its t_first), which its first record may precede */
	int64_t day = p->upgrade ? grd_floordiv(p->up_t_first_s, 86400) : grd_floordiv(p->lo, NS_PER_DAY);
	int r = 0;

	if (d->any && (d->vid != vid || d->day != day || d->log_id_len != info->log_id_len ||
	               memcmp(d->log_id, info->log_id, info->log_id_len))) {
		r = send_day(db, d);
		d->any = false;
	}
	if (!d->any)
		*d = (struct day_sum){ vid, info->log_id, info->log_id_len, day, 0, 0, UINT64_MAX, 0, 0, true };
	if (p->upgrade) {
		/* no new row: the records it added leave on_board */
		d->records += p->added;
		d->on_board -= (int64_t)p->added;
		d->min_first = info->first_seq < d->min_first ? info->first_seq : d->min_first;
		d->max_end = info->end_seq > d->max_end ? info->end_seq : d->max_end;
		return r;
	}
	d->batches++;
	/* a reduced Batch accounts for its whole source range: the records it
	   brings arrived, the rest of the range is on the vehicle (on board:
	   neither received nor missing); a whole Batch's range is its records */
	d->records += info->count;
	d->on_board += (int64_t)(info->end_seq - info->first_seq - info->count);
	d->min_first = info->first_seq < d->min_first ? info->first_seq : d->min_first;
	d->max_end = info->end_seq > d->max_end ? info->end_seq : d->max_end;
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
		if (grd_qsend(db, "notify", 1, v, NULL) < 0)
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
		if (!info.count) /* a reduced Batch of none: its source's time */
			p[i].lo = p[i].hi = info.t0_ns;
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
	int r = grd_pipe_enter(db);

	if (r == 0)
		r = grd_qsend_sql(db, "begin", "BEGIN");
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;
		struct grd_batch_key k;

		rec_batch_info(p[i].b, &info);
		grd_batch_key_make(&info, p[i].vid, p[i].digest, &k);
		if (ledgered(&info) && !p[i].door)
			r = send_ledger(db, &k, &info, &p[i], group_neighbour(p, n, i));
	}
	memset(db->keep, 0, (n + 1) * sizeof(*db->keep));
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int k = grd_pipe_run(db, "ledger", db->keep);
		r = r < 0 ? r : k;
	}
	for (size_t i = 0, q = 1; i < n; i++) {
		struct rec_batch_info info;
		struct grd_batch_key k;
		bool first;

		rec_batch_info(p[i].b, &info);
		/* Only a dictionary or health: nothing for the ledger (its
		   first_seq is the next Batch's). */
		p[i].out = p[i].door ? GRD_DB_LIMIT : GRD_DB_COMMITTED;
		p[i].upgrade = false;
		p[i].added = 0;
		grd_batch_key_make(&info, p[i].vid, p[i].digest, &k);
		if (!ledgered(&info) || p[i].door) {
			if (r == 0 && p[i].door)
				r = record_door(db, &k, &info, &p[i]);
			continue;
		}
		if (r == 0 && !db->keep[q])
			r = -EIO;
		first = r == 0 && PQntuples(db->keep[q]) > 0 && PQgetvalue(db->keep[q], 0, 5)[0] == 't';
		if (r == 0 && ledger_outcome(db->keep[q], &info, p[i].digest, &p[i]) < 0) {
			db->sqlstate[0] = 0; /* passes: the retry finds the other receiver's row */
			r = -EAGAIN;
		}
		PQclear(db->keep[q++]);
		if (r == 0 && p[i].out == GRD_DB_CONFLICT)
			r = record_conflict(db, &k, p[i].payload, p[i].len);
		if (r == 0 && p[i].out == GRD_DB_LIMIT) {
			p[i].door = 1 + GRD_DOOR_SEQ_JUMP;
			jump_words(&p[i], &info, first);
			r = record_door(db, &k, &info, &p[i]);
		}
	}
	return r;
}

/* For each whole Batch over a reduced Batch's row (rare: a request's
   answer, gap repair), one more round trip: the seqs of its range stored
   already (the reduced Batch's records), which copy_group leaves out
   (counting the others in p->added).  The row is locked by the
   ledger statement's UPDATE: no other receiver stores into the range
   meanwhile. */
static int stored_seqs(grd_db_t *db, struct grd_pending *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rec_batch_info info;
		struct grd_batch_key k;
		char lo[48], hi[48];
		PGresult *res;
		size_t m;
		int r;

		if (p[i].out != GRD_DB_COMMITTED || !p[i].upgrade)
			continue;
		rec_batch_info(p[i].b, &info);
		grd_batch_key_make(&info, p[i].vid, p[i].digest, &k);
		fmt_time(p[i].lo, lo);
		fmt_time(p[i].hi, hi);
		const char *v[5] = { k.vid, lo, hi, k.first, k.end };
		res = PQexecParams(db->conn, grd_db_stored_sql, 5, NULL, v, NULL, NULL, 0);
		r = grd_db_rows(db, "stored", res);
		if (r < 0)
			return r;
		m = (size_t)r;
		free(p[i].have);
		p[i].have = malloc((m ? m : 1) * sizeof(*p[i].have));
		if (!p[i].have) {
			PQclear(res);
			return -ENOMEM;
		}
		for (size_t j = 0; j < m; j++)
			p[i].have[j] = strtoull(PQgetvalue(res, (int)j, 0), NULL, 10);
		PQclear(res);
		p[i].nhave = m; /* sorted: the statement's ORDER BY */
	}
	return 0;
}

/* Round trips 2 and 3: the new Batches' records and rollups. */
static int copy_group(grd_db_t *db, struct grd_pending *p, size_t n, uint64_t rows[GRD_COPY_TABLES],
                      bool *ret_merge)
{
	int r = 0;

	for (size_t t = 0; t < sizeof(db->copy) / sizeof(db->copy[0]); t++)
		db->copy[t].used = 0;
	db->npts = 0;
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;

		rec_batch_info(p[i].b, &info);
		if (p[i].out == GRD_DB_COMMITTED && info.count) {
			r = grd_copy_rows(db, p[i].vid, p[i].b, info.first_seq, info.count, p[i].have, p[i].nhave, rows);
			p[i].added = r > 0 ? (uint64_t)r : 0;
			r = r < 0 ? r : 0;
		}
	}
	for (size_t t = 0; r == 0 && t < GRD_COPY_TABLES; t++)
		r = grd_copy_table(db, grd_copy_tables[t], &db->copy[t]);
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
	int r = qs && veh ? grd_pipe_enter(db) : -ENOMEM;

	for (size_t i = 0; qs && i < n; i++)
		qs[i] = SIZE_MAX;
	for (int i = 0; r == 0 && merge && i < GRD_ROLLUP_MERGES; i++)
		r = grd_qsend_sql(db, "rollup", grd_rollup_merge[i]);
	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;
		struct grd_batch_key k;

		if (p[i].out != GRD_DB_COMMITTED)
			continue;
		rec_batch_info(p[i].b, &info);
		grd_batch_key_make(&info, p[i].vid, p[i].digest, &k);
		veh[i] = info.vehicle;
		r = grd_send_dictionary(db, &k, p[i].b, info.nchannels, info.historical, &qs[i]);
		/* a whole Batch over a reduced one: its Health came with that */
		if (r == 0 && !p[i].upgrade)
			r = grd_health_store(db, p[i].vid, p[i].b);
		if (r == 0 && ledgered(&info))
			r = sum_day(db, &days, p[i].vid, &info, &p[i]);
	}
	if (r == 0)
		r = send_day(db, &days);
	if (r == 0)
		r = notify_vehicles(db, p, n);
	if (r == 0)
		r = grd_qsend_sql(db, "commit", "COMMIT");
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int k = grd_pipe_run_verdicts(db, "commit", qs, veh, n);
		r = r < 0 ? r : k;
	}
	free(qs);
	free(veh);
	return r;
}

int grd_ingest(grd_db_t *db, struct grd_pending *p, size_t n)
{
	uint64_t rows[GRD_COPY_TABLES] = { 0 };
	bool merge = false;
	int r = grd_db_prepare(db);

	if (r == 0)
		r = prepare_group(db, p, n);
	if (r < 0)
		return r;
	qsort(p, n, sizeof(*p), pending_cmp);
	r = ledger_group(db, p, n);
	if (r == 0)
		r = stored_seqs(db, p, n);
	if (r == 0)
		r = copy_group(db, p, n, rows, &merge);
	if (r == 0)
		r = finish_group(db, p, n, merge);
	for (size_t i = 0; i < n; i++) {
		free(p[i].have);
		p[i].have = NULL;
		p[i].nhave = 0;
	}
	if (r == 0) {
		pthread_mutex_lock(&db->lock);
		db->st.samples += rows[GRD_COPY_SAMPLES];
		db->st.can_frames += rows[GRD_COPY_CAN];
		db->st.events += rows[GRD_COPY_EVENTS];
		db->st.trdp_telegrams += rows[GRD_COPY_TRDP];
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
	if (!basic_utf8_ok(info.vehicle))
		v[0] = "(not UTF-8)";
	if (!basic_utf8_ok(reason))
		v[5] = "(not UTF-8)";
	if (grd_db_prepare(db) < 0)
		return -EIO;
	res = grd_db_run(db, "refuse", 7, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

