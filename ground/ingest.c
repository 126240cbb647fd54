/* SPDX-License-Identifier: MIT */
/*
 * ingest.c - one Batch into PostgreSQL, in one transaction: the ledger row
 * keyed by (vehicle, log id, first_seq) first (a duplicate or a conflict
 * stops there), then the records by COPY (text format) into the day
 * partitions, then the channel dictionary it carries.
 */
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
	{ "channel", "INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source) VALUES "
	             "($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (vehicle_id, config_hash, channel) DO UPDATE SET "
	             "name = excluded.name, unit = excluded.unit, bus = excluded.bus, source = excluded.source, "
	             "updated_at = now()", 7 },
	/* railmon serve's live pages LISTEN here: delivered at the COMMIT */
	{ "notify", "SELECT pg_notify('railmon_batch', $1)", 1 },
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
	                      grd_db_exec(db, "rollup", "CREATE TEMP TABLE IF NOT EXISTS rollup_in (channel bigint, "
	                                  "t timestamptz, n bigint, vmin double precision, vmax double precision, "
	                                  "vsum double precision) ON COMMIT DELETE ROWS") < 0))
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
		grd_db_fail(db, name, PQerrorMessage(db->conn));
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
	for (size_t t = 0; r == 0 && t < sizeof(tables) / sizeof(tables[0]); t++) {
		snprintf(sql, sizeof(sql), "CREATE TABLE IF NOT EXISTS %s_p%s PARTITION OF %s FOR VALUES FROM "
		         "('%s 00:00:00+00') TO ('%s 00:00:00+00')", tables[t], name, tables[t], from, to);
		r = grd_db_exec(db, "partition", sql);
	}
	if (r < 0)
		return r;
	pthread_mutex_lock(&db->lock);
	db->st.partitions++;
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

/* ---- COPY ---- */

static int buf_room(grd_db_t *db, size_t n)
{
	if (db->used + n <= db->cap)
		return 0;
	size_t cap = db->cap ? db->cap : 65536;
	while (cap < db->used + n)
		cap *= 2;
	char *p = realloc(db->buf, cap);
	if (!p)
		return -ENOMEM;
	db->buf = p;
	db->cap = cap;
	return 0;
}

/* One row of kind's table, text format (tab separated, \\x for bytea). */
static int add_row(grd_db_t *db, int vid, const struct acq_item *it)
{
	char t[48];
	int k;

	if (buf_room(db, 64 + 48 + 2 * ACQ_CAN_DATA_MAX + 64) < 0)
		return -ENOMEM;
	fmt_time(it->t_ns, t);
	char *p = db->buf + db->used;
	if (it->kind == ACQ_ITEM_SAMPLE) {
		k = sprintf(p, "%d\t%s\t%" PRIu64 "\t%" PRIu32 "\t%.17g\t%" PRIu32 "\n", vid, t, it->seq, it->sample.channel,
		            it->sample.value, it->sample.quality);
	} else if (it->kind == ACQ_ITEM_CAN) {
		k = sprintf(p, "%d\t%s\t%" PRIu64 "\t%u\t%" PRIu32 "\t%u\t\\\\x", vid, t, it->seq, it->bus, it->can.id,
		            it->can.flags);
		for (unsigned i = 0; i < it->can.len && i < ACQ_CAN_DATA_MAX; i++)
			k += sprintf(p + k, "%02x", it->can.data[i]);
		p[k++] = '\n';
	} else if (it->kind == ACQ_ITEM_TEXT) {
		k = sprintf(p, "%d\t%s\t%" PRIu64 "\t%" PRIu32 "\t", vid, t, it->seq, it->text.channel);
		/* COPY's text format: a backslash is the one character of a text
		   (printable ASCII) it would read as an escape */
		for (unsigned i = 0; i < it->text.len && i < ACQ_TEXT_MAX; i++) {
			if (it->text.text[i] == '\\')
				p[k++] = '\\';
			p[k++] = it->text.text[i];
		}
		k += sprintf(p + k, "\t%u\n", it->text.quality);
	} else {
		k = sprintf(p, "%d\t%s\t%" PRIu64 "\t%u\t%" PRIu32 "\t%" PRId64 "\t%" PRIu32 "\n", vid, t, it->seq, it->bus,
		            it->event.code, it->event.arg, it->event.detail);
	}
	db->used += (size_t)k;
	return 0;
}

static int copy_rows(grd_db_t *db, const char *table, int vid, const rec_batch_t *b, uint64_t first_seq,
                     uint32_t count, uint16_t kind, uint64_t *ret_rows)
{
	char sql[128];
	uint64_t rows = 0;
	PGresult *res;
	int r = 0;

	db->used = 0;
	for (uint32_t i = 0; i < count && r == 0; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		it.seq = first_seq + i; /* CAN frames, samples, events: the Batch's order */
		if (it.kind == kind) {
			r = add_row(db, vid, &it);
			rows++;
		}
	}
	if (r < 0 || !rows)
		return r;
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN", table);
	res = PQexec(db->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		grd_db_fail(db, sql, PQerrorMessage(db->conn));
		PQclear(res);
		return -EIO;
	}
	PQclear(res);
	if (PQputCopyData(db->conn, db->buf, (int)db->used) != 1 || PQputCopyEnd(db->conn, NULL) != 1) {
		grd_db_fail(db, sql, PQerrorMessage(db->conn));
		return -EIO;
	}
	while ((res = PQgetResult(db->conn))) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			grd_db_fail(db, sql, PQerrorMessage(db->conn));
			r = -EIO;
		}
		PQclear(res);
	}
	if (r == 0)
		*ret_rows = rows;
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
		const char *v[7] = { k->vid, k->hash, id, ch.name ? ch.name : "", ch.unit ? ch.unit : "", bus,
		                     ch.source ? ch.source : "" };
		res = run(db, "channel", 7, v, NULL, PGRES_COMMAND_OK);
		if (!res)
			return -EIO;
		PQclear(res);
	}
	return 0;
}

static void span(const rec_batch_t *b, uint32_t count, char first[48], char last[48])
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		lo = it.t_ns < lo ? it.t_ns : lo;
		hi = it.t_ns > hi ? it.t_ns : hi;
	}
	fmt_time(lo, first);
	fmt_time(hi, last);
}

static int insert_ledger(grd_db_t *db, const struct batch_key *k, const struct rec_batch_info *info,
                         const rec_batch_t *b)
{
	char tf[48], tl[48];
	const char *v[9] = { k->vid, k->log_id, k->first, k->count, tf, tl, info->historical ? "t" : "f", k->hash,
	                     k->digest };
	int lens[9] = { 0, k->log_id_len, 0, 0, 0, 0, 0, 0, 0 };
	PGresult *res;
	bool mine;

	span(b, info->count, tf, tl);
	res = run(db, "ledger", 9, v, lens, PGRES_COMMAND_OK);
	if (!res)
		return -EIO;
	/* Another receiver committed the same key since the check: try again,
	   and the check finds it. */
	mine = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	return mine ? 0 : -EAGAIN;
}

/* Tell railmon serve's live pages (LISTEN railmon_batch) which vehicle
   has news; PostgreSQL sends it when this transaction commits, never for
   one that rolls back. */
static int notify(grd_db_t *db, const char *vehicle)
{
	const char *v[1] = { vehicle };
	PGresult *res = run(db, "notify", 1, v, NULL, PGRES_TUPLES_OK);

	PQclear(res);
	return res ? 0 : -EIO;
}

static int fill(grd_db_t *db, const struct batch_key *k, int vid, const struct rec_batch_info *info,
                const rec_batch_t *b)
{
	uint64_t n[4] = { 0, 0, 0, 0 };
	int r = insert_ledger(db, k, info, b);

	if (r == 0)
		r = copy_rows(db, "samples", vid, b, info->first_seq, info->count, ACQ_ITEM_SAMPLE, &n[0]);
	if (r == 0)
		r = copy_rows(db, "can_frames", vid, b, info->first_seq, info->count, ACQ_ITEM_CAN, &n[1]);
	if (r == 0)
		r = copy_rows(db, "events", vid, b, info->first_seq, info->count, ACQ_ITEM_EVENT, &n[2]);
	if (r == 0)
		r = copy_rows(db, "texts", vid, b, info->first_seq, info->count, ACQ_ITEM_TEXT, &n[3]);
	if (r == 0 && n[0])
		r = grd_rollup(db, vid, b, info->count);
	if (r == 0)
		r = store_dictionary(db, k, b, info->nchannels);
	if (r == 0)
		r = notify(db, info->vehicle);
	if (r == 0)
		r = grd_db_exec(db, "commit", "COMMIT");
	if (r == 0) {
		pthread_mutex_lock(&db->lock);
		db->st.samples += n[0];
		db->st.can_frames += n[1];
		db->st.events += n[2];
		pthread_mutex_unlock(&db->lock);
	}
	return r;
}

int grd_ingest(grd_db_t *db, const rec_batch_t *b, const void *payload, size_t len,
               enum grd_db_outcome *ret_outcome)
{
	struct rec_batch_info info;
	struct batch_key k;
	enum grd_db_outcome out;
	uint64_t digest;
	int vid, r;

	rec_batch_info(b, &info);
	r = grd_db_prepare(db);
	if (r == 0)
		r = grd_db_vehicle_id(db, info.vehicle, &vid);
	if (r == 0)
		r = make_days(db, b, info.count);
	if (r < 0)
		return r;
	digest = grd_batch_digest(b, info.count);
	snprintf(k.vid, sizeof(k.vid), "%d", vid);
	snprintf(k.first, sizeof(k.first), "%" PRIu64, info.first_seq);
	snprintf(k.end, sizeof(k.end), "%" PRIu64, info.first_seq + info.count);
	snprintf(k.count, sizeof(k.count), "%" PRIu32, info.count);
	snprintf(k.digest, sizeof(k.digest), "%" PRId64, (int64_t)digest);
	snprintf(k.hash, sizeof(k.hash), "%" PRId64, (int64_t)info.config_hash);
	/* A Batch without a log id (railmon before log ids) is keyed under an
	   empty one (length 0: sent as the text '', an empty bytea). */
	k.log_id = info.log_id_len ? (const char *)info.log_id : "";
	k.log_id_len = (int)info.log_id_len;
	r = grd_db_exec(db, "begin", "BEGIN");
	if (r == 0 && info.count == 0) {
		/* Only a dictionary or health: nothing for the ledger (its
		   first_seq is the next Batch's). */
		r = store_dictionary(db, &k, b, info.nchannels);
		if (r == 0)
			r = grd_db_exec(db, "commit", "COMMIT");
		*ret_outcome = GRD_DB_COMMITTED;
		return r;
	}
	if (r == 0)
		r = check_ledger(db, &k, info.first_seq, info.count, digest, &out);
	if (r == 0 && out == GRD_DB_COMMITTED)
		r = fill(db, &k, vid, &info, b);
	else if (r == 0 && out == GRD_DB_CONFLICT)
		r = record_conflict(db, &k, payload, len);
	if (r == 0 && out != GRD_DB_COMMITTED)
		r = grd_db_exec(db, "commit", "COMMIT");
	if (r == 0)
		*ret_outcome = out;
	return r;
}
