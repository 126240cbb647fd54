/* SPDX-License-Identifier: MIT */
/*
 * export.c - the database as a source for `railmon export --db`: one
 * vehicle's records in a time window, in time order, streamed by one
 * COPY (SELECT ...) TO STDOUT (FORMAT binary) (a row a message: memory
 * stays one row whatever the window; no text to parse), each with the log
 * id of the Batch that brought it (the ledger's entry whose seq range and
 * times hold it, read ahead for the window and searched here), named by
 * the vehicle's channel dictionary (read ahead: names, units, value
 * tables, bus names, decimals).  Raw TRDP telegrams come back as the
 * items the vehicle's export writes (record/format.c, one writer).  The window is applied here to the
 * microsecond, rounded outwards; the caller applies it exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/byteorder.h"
#include "db-private.h"
#include "acquisition/acq-item.h"
#include "basic/hex.h"
#include "basic/utc.h"
#include "record/channels.h"
#include "record/format.h"

/* A bound of the query as a timestamptz (to the us), or +-infinity. */
static void fmt_bound(int64_t t_ns, const char *inf, char out[48])
{
	if (t_ns == INT64_MIN || t_ns == INT64_MAX)
		snprintf(out, 48, "%s", inf);
	else
		basic_utc_text(t_ns, 6, BASIC_UTC_SPACE | BASIC_UTC_PG, out, 48);
}

/* The vehicle's Batches that can hold a record of the window, from the
   ledger, by log id then first_seq: each record's log id is found here
   (a binary search per log) instead of by a join per row in the server,
   which cost more than the rows themselves. */
struct ledger_batch {
	int64_t first_seq, end_seq; /* [first, end) */
	int64_t t_first_us, t_last_us; /* INT64_MAX, INT64_MIN: NULL (holds nothing) */
};

struct ledger_log {
	uint8_t id[REC_LOG_ID_LEN];
	size_t id_len;
	struct ledger_batch *b;
	size_t n;
};

struct ledger {
	struct ledger_log *logs;
	size_t nlogs;
	size_t hit_log, hit_batch; /* the last answer: the next row's most likely */
	bool hit;
};

static void ledger_free(struct ledger *l)
{
	for (size_t i = 0; i < l->nlogs; i++)
		free(l->logs[i].b);
	free(l->logs);
}

static int64_t us_or(PGresult *res, int i, int col, int64_t null)
{
	return PQgetisnull(res, i, col) ? null : strtoll(PQgetvalue(res, i, col), NULL, 10);
}

/* res: log_id (hex), first_seq, count, t_first, t_last (us), ordered by
   log_id, first_seq. */
static int ledger_load(struct ledger *l, PGresult *res)
{
	int n = PQntuples(res);
	struct ledger_log *cur = NULL;

	memset(l, 0, sizeof(*l));
	if (n && !(l->logs = calloc((size_t)n, sizeof(*l->logs))))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		const char *hex = PQgetvalue(res, i, 0);
		uint8_t id[REC_LOG_ID_LEN];
		ssize_t len = basic_hex_decode(hex, strnlen(hex, 2 * REC_LOG_ID_LEN) & ~(size_t)1, id, sizeof(id));

		if (len < 0 || strlen(hex) > 2 * REC_LOG_ID_LEN)
			len = 0; /* a log id longer than a log's: given as none, as before */
		if (!cur || cur->id_len != (size_t)len || memcmp(cur->id, id, (size_t)len)) {
			cur = &l->logs[l->nlogs++];
			memcpy(cur->id, id, (size_t)len);
			cur->id_len = (size_t)len;
			/* rows of this log id: at most the rest */
			if (!(cur->b = malloc((size_t)(n - i) * sizeof(*cur->b))))
				return -ENOMEM;
		}
		struct ledger_batch *b = &cur->b[cur->n++];

		b->first_seq = strtoll(PQgetvalue(res, i, 1), NULL, 10);
		b->end_seq = b->first_seq + strtoll(PQgetvalue(res, i, 2), NULL, 10);
		b->t_first_us = us_or(res, i, 3, INT64_MAX);
		b->t_last_us = us_or(res, i, 4, INT64_MIN);
	}
	return 0;
}

static bool batch_holds(const struct ledger_batch *b, int64_t seq, int64_t t_us)
{
	return seq >= b->first_seq && seq < b->end_seq && t_us >= b->t_first_us && t_us <= b->t_last_us;
}

/* The log holding the record (seq, t): per log, the Batch starting at or
   before seq (the last one), if it holds seq and t; the first log that
   has one, in log id order.  NULL: none. */
static const struct ledger_log *ledger_find(struct ledger *l, int64_t seq, int64_t t_us)
{
	if (l->hit && l->nlogs == 1 && batch_holds(&l->logs[0].b[l->hit_batch], seq, t_us))
		return &l->logs[0];
	for (size_t k = 0; k < l->nlogs; k++) {
		const struct ledger_log *g = &l->logs[k];
		size_t lo = 0, hi = g->n; /* the first Batch starting after seq */

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (g->b[mid].first_seq <= seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && batch_holds(&g->b[lo - 1], seq, t_us)) {
			l->hit = true;
			l->hit_log = k;
			l->hit_batch = lo - 1;
			return g;
		}
	}
	return NULL;
}

#define EXPORT_COLS 13 /* kind, t, seq, a, b, c, v, data, text, e, f, g, s: the query below */

/* One row of the binary COPY (p, its n bytes) into its fields: start and
   length of each (-1: NULL).  0, or -EPROTO if it is not a row of
   EXPORT_COLS fields. */
static int split_row(const uint8_t *p, size_t n, const uint8_t *f[EXPORT_COLS], int32_t len[EXPORT_COLS])
{
	size_t o = 2;

	if (n < 2 || basic_get_be16(p) != EXPORT_COLS)
		return -EPROTO;
	for (int i = 0; i < EXPORT_COLS; i++) {
		if (o + 4 > n)
			return -EPROTO;
		len[i] = (int32_t)basic_get_be32(p + o);
		o += 4;
		f[i] = p + o;
		if (len[i] > 0) {
			if ((size_t)len[i] > n - o)
				return -EPROTO;
			o += (size_t)len[i];
		}
	}
	return o == n ? 0 : -EPROTO;
}

static int64_t i64_at(const uint8_t *f, int32_t len)
{
	return len == 8 ? (int64_t)basic_get_be64(f) : 0;
}

/* A telegram's row (copy_sql(): a bus, b com_id, c etbTopoCnt << 32 |
   opTrnTopoCnt, data the telegram, e source << 32 | destination address,
   f sequenceCounter << 32 | msg_type << 16 | flags, g source port << 16 |
   destination port, s the MD session id) as an item whose bytes are the
   row's: valid while the row is. */
static int row_trdp(const uint8_t *const f[EXPORT_COLS], const int32_t len[EXPORT_COLS], struct acq_item *it)
{
	uint64_t c = (uint64_t)i64_at(f[5], len[5]), e = (uint64_t)i64_at(f[9], len[9]);
	uint64_t x = (uint64_t)i64_at(f[10], len[10]), g = (uint64_t)i64_at(f[11], len[11]);
	struct acq_trdp *t = &it->trdp;

	if (len[7] < 0 || (uint32_t)len[7] > ACQ_TRDP_LEN_MAX || (len[12] >= 0 && len[12] != ACQ_TRDP_SESSION_LEN))
		return -EPROTO;
	memset(it, 0, sizeof(*it));
	it->kind = ACQ_ITEM_TRDP;
	it->t_ns = ((int64_t)basic_get_be64(f[1]) + GRD_PG_EPOCH_US) * 1000;
	it->seq = basic_get_be64(f[2]);
	it->bus = (uint16_t)i64_at(f[3], len[3]);
	t->com_id = (uint32_t)i64_at(f[4], len[4]);
	t->etb_topo = (uint32_t)(c >> 32);
	t->op_trn_topo = (uint32_t)c;
	t->src_ip = (uint32_t)(e >> 32);
	t->dst_ip = (uint32_t)e;
	t->seq = (uint32_t)(x >> 32);
	t->msg_type = (uint16_t)(x >> 16);
	t->flags = (uint16_t)x;
	t->src_port = (uint16_t)(g >> 16);
	t->dst_port = (uint16_t)g;
	t->len = (uint32_t)len[7];
	t->data = t->len ? f[7] : NULL;
	if (len[12] == ACQ_TRDP_SESSION_LEN)
		memcpy(t->session_id, f[12], ACQ_TRDP_SESSION_LEN);
	return 0;
}

/* A row's fields as an item: the meaning of a, b, c, v by kind as the
   query gives them. */
static int row_item(const uint8_t *const f[EXPORT_COLS], const int32_t len[EXPORT_COLS], struct acq_item *it)
{
	int64_t a = i64_at(f[3], len[3]), b = i64_at(f[4], len[4]), c = i64_at(f[5], len[5]);
	double v = 0;

	if (len[0] != 2 || len[1] != 8 || len[2] != 8)
		return -EPROTO;
	if (basic_get_be16(f[0]) == ACQ_ITEM_TRDP)
		return row_trdp(f, len, it);
	if (len[6] == 8) {
		uint64_t bits = basic_get_be64(f[6]);

		memcpy(&v, &bits, sizeof(v));
	}
	memset(it, 0, sizeof(*it));
	it->kind = basic_get_be16(f[0]);
	it->t_ns = ((int64_t)basic_get_be64(f[1]) + GRD_PG_EPOCH_US) * 1000;
	it->seq = basic_get_be64(f[2]);
	if (it->kind == ACQ_ITEM_CAN) {
		it->bus = (uint16_t)a;
		it->can.id = (uint32_t)b;
		it->can.flags = (uint8_t)c;
		it->can.len = (uint8_t)(len[7] > 0 ? (len[7] < ACQ_CAN_DATA_MAX ? len[7] : ACQ_CAN_DATA_MAX) : 0);
		memcpy(it->can.data, f[7], it->can.len);
	} else if (it->kind == ACQ_ITEM_SAMPLE) {
		it->sample.channel = (uint32_t)a;
		it->bus = (uint16_t)(it->sample.channel >> 16);
		it->sample.quality = (uint32_t)b;
		it->sample.value = v;
	} else if (it->kind == ACQ_ITEM_TEXT) {
		it->text.channel = (uint32_t)a;
		it->bus = (uint16_t)(it->text.channel >> 16);
		it->text.quality = (uint8_t)b;
		it->text.len = (uint8_t)(len[8] > 0 ? (len[8] <= ACQ_TEXT_MAX ? len[8] : ACQ_TEXT_MAX) : 0);
		memcpy(it->text.text, f[8], it->text.len);
	} else {
		it->bus = (uint16_t)a;
		it->event.code = (uint32_t)b;
		it->event.arg = c;
		it->event.detail = (uint32_t)v;
	}
	return 0;
}

/* The ledger's Batches of vehicle id vid that can hold a record of the
   window [from, to]. */
static int load_ledger(grd_db_t *db, const char *vid, const char *from, const char *to, struct ledger *l)
{
	static const char sql[] =
		"SELECT encode(log_id, 'hex'), first_seq, count, (extract(epoch FROM t_first) * 1000000)::bigint, "
		"(extract(epoch FROM t_last) * 1000000)::bigint FROM batches WHERE vehicle_id = $1 AND "
		"t_last >= $2 AND t_first < $3 ORDER BY log_id, first_seq";
	const char *v[3] = { vid, from, to };
	PGresult *res = PQexecParams(db->conn, sql, 3, NULL, v, NULL, NULL, 0);
	int r;

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		grd_db_fail(db, "export", PQerrorMessage(db->conn));
		PQclear(res);
		return -EIO;
	}
	r = ledger_load(l, res);
	PQclear(res);
	return r;
}

/* The COPY statement of the window: the five tables' rows in time order
   (e, f, g, s: a telegram's header fields packed, its session id).
   COPY takes no parameters: the vehicle is its id (a number), the bounds
   timestamptz literals of digits, and the kinds constants. */
static char *copy_sql(const char *vid, const char *from, const char *to, const struct grd_export_query *q)
{
	char *sql = NULL, *chans = NULL;
	const char *w = "vehicle_id = %s AND t >= '%s' AND t < '%s'";
	char where[160];
	unsigned kinds = q->kinds;
	size_t used = 0;

	snprintf(where, sizeof(where), w, vid, from, to);
	/* " AND channel IN (1,2,...)" (numbers: nothing to quote), or "" */
	if (!(chans = malloc(q->nchannels * 11 + 24)))
		return NULL;
	chans[0] = 0;
	for (size_t i = 0; i < q->nchannels; i++)
		used += (size_t)sprintf(chans + used, "%s%" PRIu32, i ? "," : " AND channel IN (", q->channels[i]);
	if (q->nchannels)
		strcpy(chans + used, ")");
	if (asprintf(&sql,
	             "COPY (SELECT * FROM ("
	             "SELECT 0::int2 AS kind, t, seq, bus::int8 AS a, can_id::int8 AS b, flags::int8 AS c, "
	             "NULL::float8 AS v, data AS d, NULL::text AS x, NULL::int8 AS e, NULL::int8 AS f, "
	             "NULL::int8 AS g, NULL::bytea AS s FROM can_frames WHERE %s AND %s "
	             "UNION ALL SELECT 1::int2, t, seq, channel, quality::int8, NULL, value, NULL, NULL, NULL, NULL, "
	             "NULL, NULL FROM samples WHERE %s AND %s%s "
	             "UNION ALL SELECT 2::int2, t, seq, source::int8, code::int8, arg, detail::float8, NULL, NULL, "
	             "NULL, NULL, NULL, NULL FROM events WHERE %s AND %s "
	             "UNION ALL SELECT 3::int2, t, seq, channel, quality::int8, NULL, NULL, NULL, text, NULL, NULL, "
	             "NULL, NULL FROM texts WHERE %s AND %s%s "
	             /* inet - inet: the address as a number; a shift past
	                bit 63 wraps (PostgreSQL is built with -fwrapv) and
	                row_trdp() reads the bits back unsigned.  Every shift
	                in parentheses: SQL's << and | bind alike, left to
	                right. */
	             "UNION ALL SELECT 4::int2, t, seq, bus::int8, com_id, (etb_topo << 32) | op_trn_topo, NULL, "
	             "payload, NULL, ((src_ip - inet '0.0.0.0') << 32) | (dst_ip - inet '0.0.0.0'), "
	             "(seq_counter << 32) | (msg_type::int8 << 16) | flags::int8, (src_port::int8 << 16) | dst_port, "
	             "session_id FROM trdp_telegrams WHERE %s AND %s"
	             ") r ORDER BY t, seq) TO STDOUT (FORMAT binary)",
	             kinds & (1u << ACQ_ITEM_CAN) ? "true" : "false", where,
	             kinds & (1u << ACQ_ITEM_SAMPLE) ? "true" : "false", where, chans,
	             kinds & (1u << ACQ_ITEM_EVENT) ? "true" : "false", where,
	             kinds & (1u << ACQ_ITEM_TEXT) ? "true" : "false", where, chans,
	             kinds & (1u << ACQ_ITEM_TRDP) ? "true" : "false", where) < 0)
		sql = NULL;
	free(chans);
	return sql;
}

/* Asks the server to stop the COPY (its rows end with an error, which
   the caller's own error stands for). */
static void cancel(grd_db_t *db)
{
	PGcancel *c = PQgetCancel(db->conn);
	char why[128];

	if (c) {
		PQcancel(c, why, sizeof(why));
		PQfreeCancel(c);
	}
}

/* The COPY's rows to fn, in the order they come, to its end.  Returns the
   rows read, or fn's negative return, -EIO, -EPROTO (a row not as asked:
   the COPY is cancelled). */
static int64_t copy_rows(grd_db_t *db, struct ledger *l, grd_export_fn fn, void *ctx)
{
	static const uint8_t sig[11] = "PGCOPY\n\377\r\n";
	int64_t n = 0;
	int cb = 0, len;
	bool header = true;
	char *buf;

	/* COPY sends one row a message; libpq hands over each as it comes,
	   so memory stays one row whatever the window */
	while ((len = PQgetCopyData(db->conn, &buf, 0)) > 0) {
		const uint8_t *p = (const uint8_t *)buf;
		size_t left = (size_t)len;

		if (header && cb >= 0) { /* signature, flags, header extension */
			if (left < 19 || memcmp(p, sig, sizeof(sig)) || left - 19 < basic_get_be32(p + 15)) {
				cb = -EPROTO;
				cancel(db);
			} else {
				left -= 19 + basic_get_be32(p + 15);
				p += 19 + basic_get_be32(p + 15);
			}
			header = false;
		}
		if (left >= 2 && basic_get_be16(p) == 0xffff) { /* the trailer */
			PQfreemem(buf);
			continue;
		}
		if (left && cb >= 0) {
			const uint8_t *f[EXPORT_COLS];
			int32_t flen[EXPORT_COLS];
			struct acq_item it;
			const struct ledger_log *g;
			int r = split_row(p, left, f, flen);

			if (r == 0)
				r = row_item(f, flen, &it);
			if (r == 0) {
				g = ledger_find(l, (int64_t)it.seq, it.t_ns / 1000);
				cb = fn(ctx, &it, g ? g->id : NULL, g ? g->id_len : 0);
				n++;
			} else {
				cb = r;
			}
			/* fn's error (an output that cannot be written) or a row
			   not as asked: the server stops, the rest is read out
			   (libpq leaves the COPY only at its end) */
			if (cb < 0)
				cancel(db);
		}
		PQfreemem(buf);
	}
	if (len == -2 && cb >= 0) {
		grd_db_fail(db, "export", PQerrorMessage(db->conn));
		return -EIO;
	}
	if (cb == -EPROTO)
		grd_db_fail(db, "export", "a row of the COPY is not as asked (binary, 13 fields)");
	return cb < 0 ? cb : n;
}

int grd_db_export(grd_db_t *db, const struct grd_export_query *q, grd_export_fn fn, void *ctx)
{
	char from[48], to[48], vid[24];
	const char *v[1] = { q->vehicle };
	struct ledger l = { 0 };
	PGresult *res;
	char *sql = NULL;
	int64_t n = 0;
	int r = grd_db_connect(db);

	if (r < 0)
		return r;
	fmt_bound(q->from_ns, "-infinity", from);
	/* Rounded outwards to microseconds: the caller filters to the
	   nanosecond (a bound may fall inside a microsecond). */
	fmt_bound(q->to_ns < INT64_MAX - 1000 ? q->to_ns + 999 : INT64_MAX, "infinity", to);
	res = PQexecParams(db->conn, "SELECT vehicle_id FROM vehicles WHERE name = $1", 1, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		grd_db_fail(db, "export", PQerrorMessage(db->conn));
		PQclear(res);
		return -EIO;
	}
	if (PQntuples(res) < 1) { /* no such vehicle: nothing */
		PQclear(res);
		return 0;
	}
	snprintf(vid, sizeof(vid), "%" PRId64, (int64_t)strtoll(PQgetvalue(res, 0, 0), NULL, 10));
	PQclear(res);
	r = load_ledger(db, vid, from, to, &l);
	if (r == 0 && !(sql = copy_sql(vid, from, to, q)))
		r = -ENOMEM;
	if (r == 0) {
		res = PQexec(db->conn, sql);
		if (PQresultStatus(res) != PGRES_COPY_OUT) {
			grd_db_fail(db, "export", PQerrorMessage(db->conn));
			r = -EIO;
		}
		PQclear(res);
	}
	if (r == 0) {
		n = copy_rows(db, &l, fn, ctx);
		/* the COPY's end (or its error), read out whatever fn said */
		while ((res = PQgetResult(db->conn))) {
			if (PQresultStatus(res) != PGRES_COMMAND_OK && n >= 0) {
				grd_db_fail(db, "export", PQerrorMessage(db->conn));
				n = -EIO;
			}
			PQclear(res);
		}
		r = n < 0 ? (int)n : (int)(n > INT32_MAX ? INT32_MAX : n);
	}
	free(sql);
	ledger_free(&l);
	return r;
}

/* The rows of channel i (one per value-table entry, or one without) into
   map: the entry as the Batch's dictionary gave it.  The index of the
   next channel's first row. */
static int put_channel(PGresult *res, int i, int n, struct rec_channels *map, int *r)
{
	const char *id_text = PQgetvalue(res, i, 0);
	int k = i;
	size_t nvt = 0;
	const char **vt;

	while (k < n && !strcmp(PQgetvalue(res, k, 0), id_text))
		nvt += !PQgetisnull(res, k++, 7);
	vt = calloc(nvt ? nvt : 1, sizeof(*vt));
	if (!vt) {
		*r = -ENOMEM;
		return n;
	}
	nvt = 0;
	for (int j = i; j < k; j++)
		if (!PQgetisnull(res, j, 7))
			vt[nvt++] = PQgetvalue(res, j, 7);
	struct rec_channel c = {
		.id = (uint32_t)strtoul(id_text, NULL, 10),
		.name = PQgetvalue(res, i, 1),
		.unit = PQgetvalue(res, i, 2),
		.bus = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10),
		.source = PQgetvalue(res, i, 4),
		.value_table = vt,
		.nvalue_table = nvt,
		/* NULL: not given, or stored before schema version 8 */
		.bus_name = PQgetisnull(res, i, 5) ? NULL : PQgetvalue(res, i, 5),
		.has_decimals = !PQgetisnull(res, i, 6),
		.decimals = (uint32_t)strtoul(PQgetvalue(res, i, 6), NULL, 10),
	};

	*r = rec_channels_put(map, &c);
	*r = *r == -EINVAL ? 0 : *r; /* a name the map cannot hold: that channel stays unnamed */
	free(vt);
	return k;
}

int grd_db_channels(grd_db_t *db, const char *vehicle, struct rec_channels *map)
{
	/* one row per value-table entry (in its order: the first entry for
	   a value is the label, as in the log), one for a channel without */
	static const char sql[] =
		"SELECT n.channel, n.name, n.unit, n.bus, n.source, n.bus_name, n.decimals, e.entry FROM channel_names n "
		"JOIN vehicles v ON v.vehicle_id = n.vehicle_id LEFT JOIN LATERAL unnest(n.value_table) "
		"WITH ORDINALITY AS e(entry, i) ON true WHERE v.name = $1 ORDER BY n.channel, e.i";
	const char *v[1] = { vehicle };
	PGresult *res;
	int r = grd_db_connect(db), n, nch = 0;

	if (r < 0)
		return r;
	res = PQexecParams(db->conn, sql, 1, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		grd_db_fail(db, "channels", PQerrorMessage(db->conn));
		PQclear(res);
		return -EIO;
	}
	n = PQntuples(res);
	for (int i = 0; i < n && r >= 0; nch++)
		i = put_channel(res, i, n, map, &r);
	PQclear(res);
	return r < 0 ? r : nch;
}

int grd_db_vehicle_known(grd_db_t *db, const char *vehicle)
{
	const char *v[1] = { vehicle };
	PGresult *res;
	int r = grd_db_connect(db);

	if (r < 0)
		return r;
	res = PQexecParams(db->conn, "SELECT 1 FROM vehicles WHERE name = $1", 1, NULL, v, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		grd_db_fail(db, "vehicle", PQerrorMessage(db->conn));
		PQclear(res);
		return -EIO;
	}
	r = PQntuples(res) > 0;
	PQclear(res);
	return r;
}
