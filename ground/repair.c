/* SPDX-License-Identifier: MIT */
/*
 * repair.c - gap repair, the ground's half: find the holes in the
 * ledger that are older than a grace period, ask their vehicles for them
 * (railmon/<vehicle>/resend), and record the vehicles' "gone" answers.
 * The vehicle's half is uplink/forward.c (resend_source).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db-private.h"
#include "ground.h"
#include "basic/hex.h"
#include "basic/name.h"
#include "uplink/range.h"

/* A hole inside a range asked of its vehicle is not asked again for this
   many grace periods: the answer may be on its way (a vehicle sends
   resend_per_s Batches a second, or is offline and gets the request from
   its broker session later).  Asked every pass, each ask was queued and
   served again by the vehicle: the same Batches sent once per pass. */
#define GRD_REASK_GRACES 10

/* A hole of vehicle from row i of res: the log id in hex at column col,
   its first and last seq in the two after it (both queries below). */
static void hole_from_row(struct grd_hole *h, const char *vehicle, const PGresult *res, int i, int col)
{
	snprintf(h->vehicle, sizeof(h->vehicle), "%s", vehicle);
	snprintf(h->log_id, sizeof(h->log_id), "%s", PQgetvalue(res, i, col));
	h->first = strtoull(PQgetvalue(res, i, col + 1), NULL, 10);
	h->last = strtoull(PQgetvalue(res, i, col + 2), NULL, 10);
}

int grd_db_holes(grd_db_t *db, unsigned grace_s, struct grd_hole *ret_holes, size_t max)
{
	char sql[1536];
	PGresult *res;
	int r = grd_db_connect(db), n, k = 0;

	if (r < 0)
		return r;
	/* The holes not asked for lately (inside a range some receiver asked
	   of the vehicle within GRD_REASK_GRACES grace periods: pending), and
	   each one asked for recorded (resend_asked): a "gone" answer is taken
	   only for a range some receiver asked for.  In key order, so
	   receivers asking at once lock the rows in one order. */
	snprintf(sql, sizeof(sql), "WITH h AS (SELECT g.vehicle_id, v.name, g.log_id, g.from_seq, g.to_seq, "
	         "g.received_after FROM gaps g JOIN vehicles v USING (vehicle_id) WHERE NOT g.explained AND "
	         "g.received_after < now() - interval '%u seconds' AND NOT EXISTS (SELECT 1 FROM resend_asked p "
	         "WHERE p.vehicle_id = g.vehicle_id AND p.log_id = g.log_id AND p.first_seq <= g.from_seq AND "
	         "p.last_seq >= g.to_seq AND p.asked_at > now() - interval '%llu seconds') "
	         "ORDER BY g.received_after LIMIT %zu), "
	         "a AS (INSERT INTO resend_asked AS a (vehicle_id, log_id, first_seq, last_seq) SELECT vehicle_id, "
	         "log_id, from_seq, to_seq FROM h WHERE length(log_id) > 0 ORDER BY 1, 2, 3, 4 ON CONFLICT (vehicle_id, "
	         "log_id, first_seq, last_seq) DO UPDATE SET asked_at = now()), "
	         "o AS (DELETE FROM resend_asked WHERE asked_at < now() - interval '30 days') "
	         "SELECT name, encode(log_id, 'hex'), from_seq, to_seq FROM h ORDER BY received_after", grace_s,
	         (unsigned long long)grace_s * GRD_REASK_GRACES, max);
	res = PQexec(db->conn, sql);
	n = grd_db_rows(db, "holes", res);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		/* A name against the rule (a database older than the door) is
		   not asked: cut short, it would name another vehicle's topic. */
		if (basic_vehicle_name_ok(PQgetvalue(res, i, 0)))
			hole_from_row(&ret_holes[k++], PQgetvalue(res, i, 0), res, i, 1);
	}
	PQclear(res);
	return k;
}

int grd_db_request_asked(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns,
                         struct grd_hole *ret, size_t max)
{
	char from_s[24], to_s[24], max_s[24];
	const char *v[4] = { vehicle, from_s, to_s, max_s };
	PGresult *res;
	int r, n;

	if (!vehicle || !basic_vehicle_name_ok(vehicle) || from_ns < 0 || to_ns <= from_ns || (!ret && max))
		return -EINVAL;
	r = grd_db_connect(db);
	if (r < 0)
		return r;
	snprintf(from_s, sizeof(from_s), "%" PRId64, from_ns);
	snprintf(to_s, sizeof(to_s), "%" PRId64, to_ns);
	snprintf(max_s, sizeof(max_s), "%zu", max);
	/* ns to timestamptz in integer microseconds (a double would round
	   at this size); the seq range per log from the Batches around the
	   window, as resend_asked rows a "gone" answer is checked against.
	   In key order, like grd_db_holes(), so concurrent askers lock rows in
	   one order. */
	res = PQexecParams(db->conn, "WITH t AS (SELECT 'epoch'::timestamptz + ($2::bigint / 1000) * interval "
	                   "'1 microsecond' AS f, 'epoch'::timestamptz + ($3::bigint / 1000) * interval '1 microsecond' "
	                   "AS e), l AS (SELECT DISTINCT b.vehicle_id, b.log_id FROM batches b JOIN vehicles v USING "
	                   "(vehicle_id) WHERE v.name = $1 AND length(b.log_id) > 0), "
	                   "h AS (SELECT l.vehicle_id, l.log_id, coalesce((SELECT max(b.first_seq + b.count) FROM "
	                   "batches b, t WHERE b.vehicle_id = l.vehicle_id AND b.log_id = l.log_id AND b.t_last < t.f), "
	                   "1) AS lo, coalesce((SELECT min(b.first_seq) - 1 FROM batches b, t WHERE b.vehicle_id = "
	                   "l.vehicle_id AND b.log_id = l.log_id AND b.t_first >= t.e), 9223372036854775807) AS hi "
	                   "FROM l), "
	                   "a AS (INSERT INTO resend_asked AS a (vehicle_id, log_id, first_seq, last_seq) SELECT "
	                   "vehicle_id, log_id, lo, hi FROM h WHERE lo <= hi ORDER BY 1, 2, 3, 4 ON CONFLICT (vehicle_id, "
	                   "log_id, first_seq, last_seq) DO UPDATE SET asked_at = now() RETURNING log_id, first_seq, "
	                   "last_seq) "
	                   "SELECT encode(log_id, 'hex'), first_seq, last_seq FROM a ORDER BY 1 LIMIT $4::bigint",
	                   4, NULL, v, NULL, NULL, 0);
	n = grd_db_rows(db, "request", res);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		hole_from_row(&ret[i], vehicle, res, i, 0);
	PQclear(res);
	return n;
}

int grd_db_gone(grd_db_t *db, const char *vehicle, const uint8_t *log_id, size_t log_id_len, uint64_t first,
                uint64_t last)
{
	char first_s[24], last_s[24], words[320];
	const char *v[4] = { vehicle, (const char *)log_id, first_s, last_s };
	int lens[4] = { 0, (int)log_id_len, 0, 0 }, fmts[4] = { 0, 1, 0, 0 };
	PGresult *res;
	int r;

	if (!vehicle || !log_id || log_id_len != REC_LOG_ID_LEN || !first || last < first ||
	    !basic_vehicle_name_ok(vehicle))
		return -EINVAL;
	r = grd_db_connect(db);
	if (r < 0)
		return r;
	snprintf(first_s, sizeof(first_s), "%" PRIu64, first);
	snprintf(last_s, sizeof(last_s), "%" PRIu64, last);
	/* Only inside a range asked of that vehicle (resend_asked), and no
	   vehicle is made here: an unknown name finds no row.  A known
	   vehicle's unasked answer is counted in door_refusals. */
	res = PQexecParams(db->conn, "WITH ok AS (SELECT a.vehicle_id FROM resend_asked a JOIN vehicles v USING "
	                   "(vehicle_id) WHERE v.name = $1 AND a.log_id = $2::bytea AND a.first_seq <= $3::bigint "
	                   "AND a.last_seq >= $4::bigint LIMIT 1), "
	                   "ins AS (INSERT INTO gone (vehicle_id, log_id, first_seq, last_seq) SELECT vehicle_id, "
	                   "$2::bytea, $3::bigint, $4::bigint FROM ok ON CONFLICT DO NOTHING), "
	                   "ref AS (INSERT INTO door_refusals AS d (vehicle_id, reason, count, detail) SELECT "
	                   "vehicle_id, 'gone-unasked', 1, 'gone ' || $3 || '..' || $4 || ': not a range asked for' "
	                   "FROM vehicles WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM ok) ON CONFLICT (vehicle_id, "
	                   "reason) DO UPDATE SET count = d.count + 1, last_at = now(), detail = excluded.detail) "
	                   "SELECT count(*) FROM ok", 4, NULL, v, lens, fmts, 0);
	r = grd_db_rows(db, "gone", res);
	if (r < 0)
		return r;
	r = PQgetvalue(res, 0, 0)[0] == '1' ? 0 : -EPERM;
	PQclear(res);
	if (r == -EPERM) {
		snprintf(words, sizeof(words), "%s: \"gone\" for seq %" PRIu64 "..%" PRIu64 ": not a range asked for",
		         vehicle, first, last);
		grd_db_door_count(db, GRD_DOOR_GONE, words);
	}
	return r;
}

void grd_on_gone(void *ctx, const char *topic, const void *payload, size_t len)
{
	struct grd *g = ctx;
	const char *p = payload, *end = p + len;
	char vehicle[BASIC_VEHICLE_NAME_MAX + 1];

	if (!basic_topic_vehicle(topic, vehicle, sizeof(vehicle))) {
		g->gone_bad++;
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		struct upl_range rg;
		int r = -EINVAL;

		if (n && upl_range_parse(p, n, &rg) == 0 && g->db)
			r = grd_db_gone(g->db, vehicle, rg.log_id, sizeof(rg.log_id), rg.first, rg.last);
		g->gone += r == 0;
		g->gone_bad += n && r < 0;
		g->gone_unasked += n && r == -EPERM;
		p += n + 1;
	}
}

/* One message per vehicle, up to UPL_RESEND_LINES ranges each. */
#define GRD_RESEND_LINES 64

int grd_repair_pass(grd_db_t *db, upl_recv_t *r, unsigned grace_s, uint64_t *ret_asked)
{
	struct grd_hole *h = calloc(GRD_REPAIR_MAX, sizeof(*h));
	char *msg = malloc(GRD_RESEND_LINES * UPL_RANGE_LINE_MAX), topic[96];
	size_t used = 0, lines = 0;
	uint64_t asked = 0;
	int n, err = 0;

	if (!h || !msg) {
		free(h);
		free(msg);
		return -ENOMEM;
	}
	n = grd_db_holes(db, grace_s, h, GRD_REPAIR_MAX);
	for (int i = 0; i < n; i++) {
		struct upl_range rg = { .first = h[i].first, .last = h[i].last };
		int len;

		/* a sender without log ids cannot be asked by range (and its hole
		   must not keep the lines before it from being sent, below) */
		if (basic_hex_decode(h[i].log_id, strlen(h[i].log_id), rg.log_id, sizeof(rg.log_id)) == REC_LOG_ID_LEN &&
		    (len = upl_range_format(&rg, msg + used, UPL_RANGE_LINE_MAX)) >= 0) {
			used += (size_t)len;
			lines++;
			asked++;
		}
		/* the holes come oldest first, not by vehicle: send when it changes */
		if (lines && (lines == GRD_RESEND_LINES || i + 1 == n || strcmp(h[i + 1].vehicle, h[i].vehicle) != 0)) {
			snprintf(topic, sizeof(topic), "railmon/%s/resend", h[i].vehicle);
			if (upl_recv_publish(r, topic, msg, used) < 0)
				err = -ENOBUFS;
			used = lines = 0;
		}
	}
	free(h);
	free(msg);
	*ret_asked = asked;
	return n < 0 ? n : err;
}
