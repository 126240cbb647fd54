/* SPDX-License-Identifier: MIT */
/*
 * ingest.c - a group of Batches into PostgreSQL, in one transaction: for
 * each Batch (in (vehicle, log id, first_seq) order, so that receivers
 * lock rows in one order) the ledger row keyed by (vehicle, log id,
 * first_seq) first (a duplicate or a conflict stops that Batch there),
 * then the records of all new Batches by one COPY BINARY per table into
 * the day partitions, the rollups, the channel dictionaries, and the
 * per-day ledger summary (ledger_days) last, so its rows are locked only
 * for the commit.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db-private.h"
#include "acquisition/acq-item.h"

#define NS_PER_DAY (INT64_C(86400) * 1000000000)

/* ---- statements ---- */

static const struct {
	const char *name, *sql;
	int nparams;
} stmts[] = {
	{ "vehicle", "INSERT INTO vehicles (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET last_seen = now() "
	             "RETURNING vehicle_id", 1 },
	/* The Batch at or before first_seq, and the first one inside the range
	   after it: any other overlapping Batch lies between those two. */
	{ "check", "(SELECT first_seq, count, digest FROM batches WHERE vehicle_id = $1 AND log_id = $2 AND "
	           "first_seq <= $3 ORDER BY first_seq DESC LIMIT 1) UNION ALL "
	           "(SELECT first_seq, count, digest FROM batches WHERE vehicle_id = $1 AND log_id = $2 AND "
	           "first_seq > $3 AND first_seq < $4 ORDER BY first_seq LIMIT 1)", 4 },
	{ "ledger", "INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, "
	            "config_hash, digest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING", 9 },
	{ "conflict", "INSERT INTO conflicts (vehicle_id, log_id, first_seq, count, digest, reason, payload) "
	              "SELECT $1, $2, $3, $4, $5, $6, $7 WHERE NOT EXISTS (SELECT 1 FROM conflicts WHERE "
	              "vehicle_id = $1 AND log_id = $2 AND first_seq = $3 AND digest = $5)", 7 },
	/* clock_timestamp(): two dictionaries in one group are told apart
	   (now() is the transaction's start). */
	{ "channel", "INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, updated_at, "
	             "value_table) VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8) ON CONFLICT (vehicle_id, "
	             "config_hash, channel) DO UPDATE SET name = excluded.name, unit = excluded.unit, bus = excluded.bus, "
	             "source = excluded.source, updated_at = excluded.updated_at, value_table = excluded.value_table", 8 },
	{ "day", "INSERT INTO ledger_days AS d (vehicle_id, log_id, day, batches, records, min_first, max_end) "
	         "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (vehicle_id, log_id, day) DO UPDATE SET "
	         "batches = d.batches + excluded.batches, records = d.records + excluded.records, "
	         "min_first = least(d.min_first, excluded.min_first), max_end = greatest(d.max_end, excluded.max_end)",
	  7 },
	/* railmon serve's live pages LISTEN here: delivered at the COMMIT */
	{ "notify", "SELECT pg_notify('railmon_batch', $1)", 1 },
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
	int fmts[9] = { 0 };
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

static int make_days(grd_db_t *db, const rec_batch_t *b, uint32_t count)
{
	int64_t last = INT64_MIN;

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

/* ---- the digest ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * UINT64_C(0x100000001b3);
	return h;
}

uint64_t grd_batch_digest(const rec_batch_t *b, uint32_t count)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		h = fnv(h, &it.t_ns, sizeof(it.t_ns));
		h = fnv(h, &it.kind, sizeof(it.kind));
		h = fnv(h, &it.bus, sizeof(it.bus));
		if (it.kind == ACQ_ITEM_CAN) {
			h = fnv(h, &it.can.id, sizeof(it.can.id));
			h = fnv(h, &it.can.flags, 1);
			h = fnv(h, &it.can.len, 1);
			h = fnv(h, it.can.data, it.can.len);
		} else if (it.kind == ACQ_ITEM_SAMPLE) {
			h = fnv(h, &it.sample.channel, sizeof(it.sample.channel));
			h = fnv(h, &it.sample.quality, sizeof(it.sample.quality));
			h = fnv(h, &it.sample.value, sizeof(it.sample.value));
		} else if (it.kind == ACQ_ITEM_TEXT) {
			h = fnv(h, &it.text.channel, sizeof(it.text.channel));
			h = fnv(h, &it.text.quality, 1);
			h = fnv(h, &it.text.len, 1);
			h = fnv(h, it.text.text, it.text.len <= ACQ_TEXT_MAX ? it.text.len : ACQ_TEXT_MAX);
		} else {
			h = fnv(h, &it.event.code, sizeof(it.event.code));
			h = fnv(h, &it.event.detail, sizeof(it.event.detail));
			h = fnv(h, &it.event.arg, sizeof(it.event.arg));
		}
	}
	return h;
}

/* ---- COPY BINARY ---- */

/* PostgreSQL's binary COPY: no text to format here or to parse there. */
static const char copy_sig[11] = "PGCOPY\n\377\r\n";
#define PG_EPOCH_US (INT64_C(946684800) * 1000000) /* 2000-01-01 in Unix µs */

static int buf_room(struct grd_buf *b, size_t n)
{
	if (b->used + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 65536;
	while (cap < b->used + n)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static void put16(struct grd_buf *b, uint16_t v)
{
	v = htobe16(v);
	memcpy(b->p + b->used, &v, 2);
	b->used += 2;
}

static void put32(struct grd_buf *b, uint32_t v)
{
	v = htobe32(v);
	memcpy(b->p + b->used, &v, 4);
	b->used += 4;
}

static void put64(struct grd_buf *b, uint64_t v)
{
	v = htobe64(v);
	memcpy(b->p + b->used, &v, 8);
	b->used += 8;
}

/* Fields: int4, int8, float8 and int2 with their lengths. */
static void f32(struct grd_buf *b, int32_t v)
{
	put32(b, 4);
	put32(b, (uint32_t)v);
}

static void f64(struct grd_buf *b, int64_t v)
{
	put32(b, 8);
	put64(b, (uint64_t)v);
}

static void f16(struct grd_buf *b, int16_t v)
{
	put32(b, 2);
	put16(b, (uint16_t)v);
}

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
	int64_t t_pg = floordiv(it->t_ns, 1000) - PG_EPOCH_US;

	if (buf_room(b, 19 + 2 + 7 * 12 + (ACQ_CAN_DATA_MAX > ACQ_TEXT_MAX ? ACQ_CAN_DATA_MAX : ACQ_TEXT_MAX)) < 0)
		return -ENOMEM;
	if (!b->used) {
		memcpy(b->p, copy_sig, sizeof(copy_sig));
		b->used = sizeof(copy_sig);
		put32(b, 0); /* flags */
		put32(b, 0); /* header extension */
	}
	if (k == 0) {
		double v = it->sample.value;
		uint64_t bits;

		memcpy(&bits, &v, 8);
		put16(b, 6);
		f32(b, vid);
		f64(b, t_pg);
		f64(b, (int64_t)it->seq);
		f64(b, it->sample.channel);
		f64(b, (int64_t)bits);
		f16(b, (int16_t)it->sample.quality);
	} else if (k == 1) {
		unsigned len = it->can.len < ACQ_CAN_DATA_MAX ? it->can.len : ACQ_CAN_DATA_MAX;

		put16(b, 7);
		f32(b, vid);
		f64(b, t_pg);
		f64(b, (int64_t)it->seq);
		f32(b, it->bus);
		f64(b, it->can.id);
		f16(b, (int16_t)it->can.flags);
		put32(b, len);
		memcpy(b->p + b->used, it->can.data, len);
		b->used += len;
	} else if (k == 3) {
		/* text: the bytes as they are (printable ASCII, record/batch.c) */
		unsigned len = it->text.len < ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

		put16(b, 6);
		f32(b, vid);
		f64(b, t_pg);
		f64(b, (int64_t)it->seq);
		f64(b, it->text.channel);
		put32(b, len);
		memcpy(b->p + b->used, it->text.text, len);
		b->used += len;
		f16(b, (int16_t)it->text.quality);
	} else {
		put16(b, 7);
		f32(b, vid);
		f64(b, t_pg);
		f64(b, (int64_t)it->seq);
		f32(b, it->bus);
		f32(b, (int32_t)it->event.code);
		f64(b, it->event.arg);
		f64(b, it->event.detail);
	}
	return 0;
}

/* Each new Batch's records into the copy buffers (rows counted in n[]). */
static int add_rows(grd_db_t *db, int vid, const rec_batch_t *b, uint64_t first_seq, uint32_t count,
                    uint64_t n[4])
{
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		it.seq = first_seq + i; /* CAN frames, samples, events: the Batch's order */
		if (add_row(db, vid, &it) < 0)
			return -ENOMEM;
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
	if (buf_room(b, 2) < 0)
		return -ENOMEM;
	put16(b, 0xffff); /* the end */
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

/* Committed before?  GRD_DB_COMMITTED: no, go on. */
static int check_ledger(grd_db_t *db, const struct batch_key *k, uint64_t first, uint32_t count, uint64_t digest,
                        enum grd_db_outcome *ret)
{
	const char *v[4] = { k->vid, k->log_id, k->first, k->end };
	int lens[4] = { 0, k->log_id_len, 0, 0 };
	PGresult *res = run(db, "check", 4, v, lens, PGRES_TUPLES_OK);

	if (!res)
		return -EIO;
	*ret = GRD_DB_COMMITTED;
	for (int i = 0; i < PQntuples(res); i++) {
		uint64_t f = strtoull(PQgetvalue(res, i, 0), NULL, 10), c = strtoull(PQgetvalue(res, i, 1), NULL, 10);
		uint64_t d = (uint64_t)strtoll(PQgetvalue(res, i, 2), NULL, 10);

		if (f == first)
			*ret = c == count && d == digest ? GRD_DB_DUPLICATE : GRD_DB_CONFLICT;
		else if (f + c > first && f < first + count)
			*ret = GRD_DB_CONFLICT;
		if (*ret != GRD_DB_COMMITTED)
			break;
	}
	PQclear(res);
	return 0;
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

static int store_dictionary(grd_db_t *db, const struct batch_key *k, const rec_batch_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rec_channel ch;
		char id[16], bus[16];
		PGresult *res;

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
		res = run(db, "channel", 8, v, NULL, PGRES_COMMAND_OK);
		free(vt);
		if (!res)
			return -EIO;
		PQclear(res);
	}
	return 0;
}

/* The Batch's first and last record times (ns). */
static void span(const rec_batch_t *b, uint32_t count, int64_t *ret_lo, int64_t *ret_hi)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		lo = it.t_ns < lo ? it.t_ns : lo;
		hi = it.t_ns > hi ? it.t_ns : hi;
	}
	*ret_lo = lo;
	*ret_hi = hi;
}

static int insert_ledger(grd_db_t *db, const struct batch_key *k, const struct rec_batch_info *info,
                         int64_t lo, int64_t hi)
{
	char tf[48], tl[48];
	const char *v[9] = { k->vid, k->log_id, k->first, k->count, tf, tl, info->historical ? "t" : "f", k->hash,
	                     k->digest };
	int lens[9] = { 0, k->log_id_len, 0, 0, 0, 0, 0, 0, 0 };
	PGresult *res;
	bool mine;

	fmt_time(lo, tf);
	fmt_time(hi, tl);
	res = run(db, "ledger", 9, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	/* Another receiver committed the same key since the check: try again,
	   and the check finds it. */
	mine = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	return mine ? 0 : -EAGAIN;
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

static int put_day(grd_db_t *db, const struct day_sum *d)
{
	char vid[16], day[16], nb[24], nr[24], lo[24], hi[24];
	const char *v[7] = { vid, d->log_id_len ? (const char *)d->log_id : "", day, nb, nr, lo, hi };
	int lens[7] = { 0, (int)d->log_id_len, 0, 0, 0, 0, 0 };
	PGresult *res;

	if (!d->batches)
		return 0;
	snprintf(vid, sizeof(vid), "%d", d->vid);
	fmt_day(d->day, day, "%Y-%m-%d");
	snprintf(nb, sizeof(nb), "%" PRIu64, d->batches);
	snprintf(nr, sizeof(nr), "%" PRIu64, d->records);
	snprintf(lo, sizeof(lo), "%" PRIu64, d->min_first);
	snprintf(hi, sizeof(hi), "%" PRIu64, d->max_end);
	res = run(db, "day", 7, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	PQclear(res);
	return 0;
}

/* Add a new Batch to the run of equal (vehicle, log, day) in *d, writing
   the run before it out when the key changes (the group is sorted). */
static int sum_day(grd_db_t *db, struct day_sum *d, int vid, const struct rec_batch_info *info, int64_t lo)
{
	int64_t day = floordiv(lo, NS_PER_DAY);
	int r = 0;

	if (d->batches && (d->vid != vid || d->day != day || d->log_id_len != info->log_id_len ||
	                   memcmp(d->log_id, info->log_id, info->log_id_len))) {
		r = put_day(db, d);
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

/* One Batch of the group, in the open transaction: its ledger row and its
   rows into the copy buffers, or a duplicate, or a conflict. */
static int ingest_one(grd_db_t *db, struct grd_pending *p, uint64_t n[4], struct day_sum *days)
{
	struct rec_batch_info info;
	struct batch_key k;
	uint64_t digest;
	int64_t lo, hi;
	int r;

	rec_batch_info(p->b, &info);
	digest = grd_batch_digest(p->b, info.count);
	make_key(&info, p->vid, digest, &k);
	if (info.count == 0) {
		/* Only a dictionary or health: nothing for the ledger (its
		   first_seq is the next Batch's). */
		p->out = GRD_DB_COMMITTED;
		r = store_dictionary(db, &k, p->b, info.nchannels);
		return r < 0 ? r : grd_health_store(db, p->vid, p->b);
	}
	r = check_ledger(db, &k, info.first_seq, info.count, digest, &p->out);
	if (r < 0)
		return r;
	if (p->out == GRD_DB_CONFLICT)
		return record_conflict(db, &k, p->payload, p->len);
	if (p->out != GRD_DB_COMMITTED)
		return 0;
	span(p->b, info.count, &lo, &hi);
	r = insert_ledger(db, &k, &info, lo, hi);
	if (r == 0)
		r = add_rows(db, p->vid, p->b, info.first_seq, info.count, n);
	if (r == 0)
		r = grd_rollup_add(db, p->vid, p->b, info.count);
	if (r == 0)
		r = store_dictionary(db, &k, p->b, info.nchannels);
	if (r == 0)
		r = grd_health_store(db, p->vid, p->b);
	if (r == 0)
		r = sum_day(db, days, p->vid, &info, lo);
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
		PGresult *res;

		if (p[i].out != GRD_DB_COMMITTED || p[i].vid == last)
			continue;
		last = p[i].vid;
		rec_batch_info(p[i].b, &info);
		const char *v[1] = { info.vehicle };
		res = run(db, "notify", 1, v, NULL, PGRES_TUPLES_OK);
		if (!res)
			return -EIO;
		PQclear(res);
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

int grd_ingest(grd_db_t *db, struct grd_pending *p, size_t n)
{
	struct day_sum days = { 0 };
	uint64_t rows[4] = { 0, 0, 0, 0 };
	int r = grd_db_prepare(db);

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct rec_batch_info info;

		rec_batch_info(p[i].b, &info);
		r = grd_db_vehicle_id(db, info.vehicle, &p[i].vid);
		if (r == 0)
			r = make_days(db, p[i].b, info.count);
	}
	if (r < 0)
		return r;
	qsort(p, n, sizeof(*p), pending_cmp);
	for (size_t t = 0; t < sizeof(db->copy) / sizeof(db->copy[0]); t++)
		db->copy[t].used = 0;
	db->npts = 0;
	r = grd_db_exec(db, "begin", "BEGIN");
	for (size_t i = 0; r == 0 && i < n; i++)
		r = ingest_one(db, &p[i], rows, &days);
	if (r == 0)
		r = copy_table(db, "samples", &db->copy[0]);
	if (r == 0)
		r = copy_table(db, "can_frames", &db->copy[1]);
	if (r == 0)
		r = copy_table(db, "events", &db->copy[2]);
	if (r == 0)
		r = copy_table(db, "texts", &db->copy[3]);
	if (r == 0)
		r = grd_rollup(db);
	if (r == 0)
		r = put_day(db, &days);
	if (r == 0)
		r = notify_vehicles(db, p, n);
	if (r == 0)
		r = grd_db_exec(db, "commit", "COMMIT");
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
	int vid, r;

	rec_batch_info(b, &info);
	r = grd_db_prepare(db);
	if (r == 0)
		r = grd_db_vehicle_id(db, info.vehicle, &vid);
	if (r < 0)
		return r;
	make_key(&info, vid, 0, &k);
	r = grd_db_exec(db, "begin", "BEGIN");
	if (r == 0)
		r = store_dictionary(db, &k, b, info.nchannels);
	if (r == 0)
		r = grd_db_exec(db, "commit", "COMMIT");
	return r;
}
