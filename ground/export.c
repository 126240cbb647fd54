/* SPDX-License-Identifier: MIT */
/*
 * export.c - the database as a source for `railmon export --db`: one
 * vehicle's records in a time window, in time order, streamed row by row
 * (libpq's single-row mode: memory stays one row whatever the window),
 * named by the vehicle's channel dictionary, each with the log id of the
 * Batch that brought it (the ledger's entry whose seq range and times
 * hold it, found by the ledger's key: one lateral join).  The window is applied
 * here to the microsecond, rounded outwards; the caller applies it exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* One row of the query below as an item and its names. */
static void row_item(PGresult *res, struct acq_item *it, struct rec_names *nm)
{
	const char *hex = PQgetvalue(res, 0, 7);

	memset(it, 0, sizeof(*it));
	memset(nm, 0, sizeof(*nm));
	it->kind = (uint16_t)atoi(PQgetvalue(res, 0, 0));
	it->t_ns = strtoll(PQgetvalue(res, 0, 1), NULL, 10) * 1000;
	it->seq = strtoull(PQgetvalue(res, 0, 2), NULL, 10);
	if (it->kind == ACQ_ITEM_CAN) {
		it->bus = (uint16_t)atoi(PQgetvalue(res, 0, 3));
		it->can.id = (uint32_t)strtoul(PQgetvalue(res, 0, 4), NULL, 10);
		it->can.flags = (uint8_t)atoi(PQgetvalue(res, 0, 5));
		/* encode(data, 'hex'): whole bytes, at most a frame's */
		ssize_t n = basic_hex_decode(hex, strnlen(hex, 2 * ACQ_CAN_DATA_MAX) & ~(size_t)1, it->can.data,
		                             ACQ_CAN_DATA_MAX);

		it->can.len = n > 0 ? (uint8_t)n : 0;
	} else if (it->kind == ACQ_ITEM_SAMPLE) {
		it->bus = (uint16_t)(strtoul(PQgetvalue(res, 0, 3), NULL, 10) >> 16);
		it->sample.channel = (uint32_t)strtoul(PQgetvalue(res, 0, 3), NULL, 10);
		it->sample.quality = (uint32_t)atoi(PQgetvalue(res, 0, 4));
		it->sample.value = strtod(PQgetvalue(res, 0, 6), NULL);
		nm->channel = PQgetisnull(res, 0, 8) ? NULL : PQgetvalue(res, 0, 8);
		nm->unit = PQgetisnull(res, 0, 9) ? NULL : PQgetvalue(res, 0, 9);
	} else if (it->kind == ACQ_ITEM_TEXT) {
		size_t len = strlen(hex); /* column 7: the text */

		it->text.channel = (uint32_t)strtoul(PQgetvalue(res, 0, 3), NULL, 10);
		it->bus = (uint16_t)(it->text.channel >> 16);
		it->text.quality = (uint8_t)atoi(PQgetvalue(res, 0, 4));
		it->text.len = (uint8_t)(len <= ACQ_TEXT_MAX ? len : ACQ_TEXT_MAX);
		memcpy(it->text.text, hex, it->text.len);
		nm->channel = PQgetisnull(res, 0, 8) ? NULL : PQgetvalue(res, 0, 8);
		nm->unit = PQgetisnull(res, 0, 9) ? NULL : PQgetvalue(res, 0, 9);
	} else {
		it->bus = (uint16_t)atoi(PQgetvalue(res, 0, 3));
		it->event.code = (uint32_t)strtoul(PQgetvalue(res, 0, 4), NULL, 10);
		it->event.arg = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
		it->event.detail = (uint32_t)strtoul(PQgetvalue(res, 0, 6), NULL, 10);
	}
}

int grd_db_export(grd_db_t *db, const struct grd_export_query *q, grd_export_fn fn, void *ctx)
{
	static const char sql[] =
		/* The log id of each row's Batch by one lateral join on the
		   ledger's key (vehicle, log id, first_seq): per log of the
		   vehicle (a few), the Batch starting at or before the row's seq,
		   found by the index, then checked to hold the row's seq and
		   time.  Before, a subquery per row scanned all the vehicle's
		   Batches: quadratic in a day's export.  MATERIALIZED: inlined,
		   the list of logs was made again for every row. */
		"WITH v AS (SELECT vehicle_id FROM vehicles WHERE name = $1), "
		"l AS MATERIALIZED (SELECT DISTINCT log_id FROM batches WHERE vehicle_id = (SELECT vehicle_id FROM v)) "
		"SELECT x.*, encode(lb.log_id, 'hex') FROM ("
		" SELECT 0 AS kind, (extract(epoch FROM t) * 1000000)::bigint AS us, seq, bus::bigint, can_id, flags::bigint,"
		"  NULL::double precision, encode(data, 'hex'), NULL::text, NULL::text, t"
		"  FROM can_frames WHERE $4 AND vehicle_id = (SELECT vehicle_id FROM v) AND t >= $2 AND t < $3"
		" UNION ALL"
		" SELECT 1, (extract(epoch FROM t) * 1000000)::bigint, s.seq, s.channel, s.quality::bigint, NULL, s.value, NULL,"
		"  n.name, n.unit, s.t FROM samples s LEFT JOIN channel_names n ON n.vehicle_id = s.vehicle_id AND "
		"  n.channel = s.channel WHERE $5 AND s.vehicle_id = (SELECT vehicle_id FROM v) AND t >= $2 AND t < $3"
		" UNION ALL"
		" SELECT 2, (extract(epoch FROM t) * 1000000)::bigint, seq, source::bigint, code::bigint, arg,"
		"  detail::double precision, NULL, NULL, NULL, t"
		"  FROM events WHERE $6 AND vehicle_id = (SELECT vehicle_id FROM v) AND t >= $2 AND t < $3"
		" UNION ALL"
		" SELECT 3, (extract(epoch FROM t) * 1000000)::bigint, x.seq, x.channel, x.quality::bigint, NULL, NULL, x.text,"
		"  n.name, n.unit, x.t FROM texts x LEFT JOIN channel_names n ON n.vehicle_id = x.vehicle_id AND "
		"  n.channel = x.channel WHERE $7 AND x.vehicle_id = (SELECT vehicle_id FROM v) AND t >= $2 AND t < $3"
		") x LEFT JOIN LATERAL (SELECT b.log_id FROM l CROSS JOIN LATERAL (SELECT * FROM batches b"
		"  WHERE b.vehicle_id = (SELECT vehicle_id FROM v) AND b.log_id = l.log_id AND b.first_seq <= x.seq"
		"  ORDER BY b.first_seq DESC LIMIT 1) b"
		"  WHERE x.seq < b.first_seq + b.count AND x.t >= b.t_first AND x.t <= b.t_last LIMIT 1) lb ON true"
		" ORDER BY 2, 3";
	char from[48], to[48];
	const char *v[7] = { q->vehicle, from, to, q->kinds & (1u << ACQ_ITEM_CAN) ? "t" : "f",
	                     q->kinds & (1u << ACQ_ITEM_SAMPLE) ? "t" : "f",
	                     q->kinds & (1u << ACQ_ITEM_EVENT) ? "t" : "f",
	                     q->kinds & (1u << ACQ_ITEM_TEXT) ? "t" : "f" };
	PGresult *res;
	int r = grd_db_connect(db), cb = 0;
	uint64_t n = 0;

	if (r < 0)
		return r;
	fmt_bound(q->from_ns, "-infinity", from);
	/* Rounded outwards to microseconds: the caller filters to the
	   nanosecond (a bound may fall inside a microsecond). */
	fmt_bound(q->to_ns < INT64_MAX - 1000 ? q->to_ns + 999 : INT64_MAX, "infinity", to);
	if (!PQsendQueryParams(db->conn, sql, 7, NULL, v, NULL, NULL, 0) || !PQsetSingleRowMode(db->conn)) {
		grd_db_fail(db, "export", PQerrorMessage(db->conn));
		return -EIO;
	}
	while ((res = PQgetResult(db->conn))) {
		ExecStatusType s = PQresultStatus(res);

		if (s == PGRES_SINGLE_TUPLE && cb >= 0) {
			struct acq_item it;
			struct rec_names nm;

			row_item(res, &it, &nm);
			cb = fn(ctx, &it, &nm, PQgetisnull(res, 0, 11) ? "" : PQgetvalue(res, 0, 11));
			n++;
		} else if (s != PGRES_SINGLE_TUPLE && s != PGRES_TUPLES_OK) {
			grd_db_fail(db, "export", PQerrorMessage(db->conn));
			r = -EIO;
		}
		PQclear(res);
	}
	if (r < 0)
		return r;
	return cb < 0 ? cb : (int)(n > INT32_MAX ? INT32_MAX : n);
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
