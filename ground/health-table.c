/* SPDX-License-Identifier: MIT */
/*
 * health-table.c - the Health entries a Batch carries (record/railmon.proto,
 * Health) into the health table (migration 0006): the newest entry of each
 * part of each vehicle, in the transaction of the Batch that carries it,
 * so the dashboard reads "is this train's recorder healthy" from a few
 * rows per vehicle instead of decoding Batches; and a vehicle's retained
 * status into vehicle_status, its remote configuration outcome into
 * vehicle_config_status (migration 0015).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "db-private.h"
#include "basic/utf8.h"
#include "record/batch.h"

/* An entry is replaced only by one written at the same time or later: a
   historical Batch (the backlog) carries older health than a live one. */
static const char health_sql[] =
	"INSERT INTO health AS h (vehicle_id, name, kind, bus, t, items, drops, errors, overruns, rx_dropped, bad_input,"
	" backlog, latency_p99_us, latency_max_us, transaction_p99_us, ring_fill_pct, rate_hz, state, reopens,"
	" window_alarm, clock_unsynced, trdp_telegrams, trdp_refused, trdp_seq_gaps, trdp_byte_ring_drops,"
	" trdp_opts_refused) VALUES ($1, $2, $3, $4, coalesce(to_timestamp($5::float8), now()), $6, $7, $8,"
	" $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26)"
	" ON CONFLICT (vehicle_id, name) DO UPDATE SET kind = excluded.kind, bus = excluded.bus, t = excluded.t,"
	" received_at = now(), items = excluded.items, drops = excluded.drops, errors = excluded.errors,"
	" overruns = excluded.overruns, rx_dropped = excluded.rx_dropped, bad_input = excluded.bad_input,"
	" backlog = excluded.backlog, latency_p99_us = excluded.latency_p99_us, latency_max_us = excluded.latency_max_us,"
	" transaction_p99_us = excluded.transaction_p99_us, ring_fill_pct = excluded.ring_fill_pct,"
	" rate_hz = excluded.rate_hz, state = excluded.state, reopens = excluded.reopens,"
	" window_alarm = excluded.window_alarm, clock_unsynced = excluded.clock_unsynced,"
	" trdp_telegrams = excluded.trdp_telegrams, trdp_refused = excluded.trdp_refused,"
	" trdp_seq_gaps = excluded.trdp_seq_gaps, trdp_byte_ring_drops = excluded.trdp_byte_ring_drops,"
	" trdp_opts_refused = excluded.trdp_opts_refused WHERE h.t <= excluded.t";

/* Names, kinds and states are short words: printable ASCII only, so the
   database never refuses the Batch for a byte of them. */
static bool word_ok(const char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			return false;
	return true;
}

#define NPARAM 26

static int store_one(grd_db_t *db, int vid, const char *t, const struct rec_health *h)
{
	char num[NPARAM][32];
	const char *v[NPARAM];
	uint64_t u[] = { h->items, h->drops, h->errors, h->overruns, h->rx_dropped, h->bad_input, h->backlog,
	                 h->latency_p99_us };

	snprintf(num[0], 32, "%d", vid);
	v[0] = num[0];
	v[1] = h->name;
	v[2] = h->kind;
	snprintf(num[3], 32, "%" PRIu32, h->bus);
	v[3] = num[3];
	v[4] = t;
	for (int i = 0; i < 8; i++) {
		/* bigint: a counter past 2^63 (never in practice) is kept at its top */
		snprintf(num[5 + i], 32, "%" PRIu64, u[i] > INT64_MAX ? (uint64_t)INT64_MAX : u[i]);
		v[5 + i] = num[5 + i];
	}
	snprintf(num[13], 32, "%.3f", (double)h->latency_max_ns / 1000.0);
	snprintf(num[14], 32, "%" PRIu32, h->transaction_p99_us);
	snprintf(num[15], 32, "%" PRIu32, h->ring_fill_pct);
	snprintf(num[16], 32, "%.17g", isfinite(h->rate_hz) ? h->rate_hz : 0.0); /* NaN, inf: 0 */
	v[17] = h->state;
	snprintf(num[18], 32, "%" PRIu64, h->reopens > INT64_MAX ? (uint64_t)INT64_MAX : h->reopens);
	snprintf(num[19], 32, "%" PRIu32, h->window_alarm > 2 ? 2 : h->window_alarm);
	for (int i = 13; i <= 19; i++)
		if (i != 17)
			v[i] = num[i];
	v[20] = h->clock_unsynced ? "t" : "f";
	/* a TRDP bus's main counters (migration 0013; 0 for other parts) */
	const uint64_t bad[] = { h->trdp_bad_short, h->trdp_bad_fcs, h->trdp_bad_version, h->trdp_bad_type,
		                 h->trdp_bad_too_long, h->trdp_bad_truncated };
	uint64_t refused = 0;
	for (int i = 0; i < 6; i++) /* a forged entry's sum kept at the top, not wrapped */
		if (__builtin_add_overflow(refused, bad[i], &refused))
			refused = UINT64_MAX;
	uint64_t tu[] = { h->trdp_telegrams, refused, h->trdp_seq_gaps, h->trdp_byte_ring_drops };
	for (int i = 0; i < 4; i++) {
		snprintf(num[21 + i], 32, "%" PRIu64, tu[i] > INT64_MAX ? (uint64_t)INT64_MAX : tu[i]);
		v[21 + i] = num[21 + i];
	}
	/* integer: the option bits fit in 31 bits */
	snprintf(num[25], 32, "%" PRIu32, h->trdp_opts_refused & 0x7fffffffu);
	v[25] = num[25];
	/* into the group's last pipeline: its answer is read with the
	   COMMIT's, a failure fails the group like any of its statements */
	if (PQsendQueryParams(db->conn, health_sql, NPARAM, NULL, v, NULL, NULL, 0) != 1) {
		grd_db_fail(db, "health", PQerrorMessage(db->conn));
		return -EIO;
	}
	db->nq++;
	return 0;
}

int grd_health_store(grd_db_t *db, int vid, const rec_batch_t *b)
{
	struct rec_batch_info info;
	char t[32];

	rec_batch_info(b, &info);
	/* the Batch's time base, to the microsecond; none: when it came */
	if (info.t0_ns > 0)
		snprintf(t, sizeof(t), "%" PRId64 ".%06" PRId64, info.t0_ns / 1000000000, info.t0_ns % 1000000000 / 1000);
	for (size_t i = 0; i < info.nhealth; i++) {
		struct rec_health h;
		int r;

		if (rec_batch_health(b, i, &h) < 0)
			continue;
		if (!h.name[0] || !word_ok(h.name) || !word_ok(h.kind) || !word_ok(h.state)) {
			pthread_mutex_lock(&db->lock);
			db->st.bad_names++;
			pthread_mutex_unlock(&db->lock);
			continue;
		}
		r = store_one(db, vid, info.t0_ns > 0 ? t : NULL, &h);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A new vehicle only from "online" (its forwarder connected): a retained
   "offline" of a vehicle this database never had adds nothing to show.
   since moves only when the state changes, so the retained message a
   receiver gets again at each reconnect keeps it. */
static const char status_sql[] =
	"INSERT INTO vehicle_status AS s (vehicle_id, state) SELECT vehicle_id, $2 FROM vehicles WHERE name = $1"
	" ON CONFLICT (vehicle_id) DO UPDATE SET state = excluded.state, updated_at = now(),"
	" since = CASE WHEN s.state = excluded.state THEN s.since ELSE now() END";

/* A retained status topic's row (sql, $1 the vehicle's name): 0, -ENOENT
   (a name no Batch brought: no vehicle is made from a status message),
   -ECONNREFUSED, -EIO. */
static int status_row(grd_db_t *db, const char *what, const char *sql, int n, const char *const *vals)
{
	PGresult *res;
	int r = grd_db_connect(db);

	if (r < 0)
		return r;
	res = PQexecParams(db->conn, sql, n, NULL, vals, NULL, NULL, 0);
	r = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : -EIO;
	if (r < 0)
		grd_db_fail_res(db, what, res);
	else if (!strcmp(PQcmdTuples(res), "0"))
		r = -ENOENT;
	PQclear(res);
	return r;
}

int grd_db_status(grd_db_t *db, const char *vehicle, bool online)
{
	const char *v[2] = { vehicle, online ? "online" : "offline" };

	return status_row(db, "status", status_sql, 2, v);
}

/* at moves only when the outcome changes, so the retained message a
   receiver gets again at each reconnect keeps the time it was first heard. */
static const char config_status_sql[] =
	"INSERT INTO vehicle_config_status AS s (vehicle_id, version, outcome, why)"
	" SELECT vehicle_id, $2::bigint, $3, $4 FROM vehicles WHERE name = $1"
	" ON CONFLICT (vehicle_id) DO UPDATE SET version = excluded.version, outcome = excluded.outcome,"
	" why = excluded.why, updated_at = now(), at = CASE WHEN (s.version, s.outcome, s.why) ="
	" (excluded.version, excluded.outcome, excluded.why) THEN s.at ELSE now() END";

int grd_db_config_status(grd_db_t *db, const char *vehicle, const struct grd_config_status_msg *m)
{
	char version[24];
	const char *v[4] = { vehicle, version, m->outcome, m->why };

	snprintf(version, sizeof(version), "%" PRIu64, m->version);
	return status_row(db, "config status", config_status_sql, 4, v);
}
