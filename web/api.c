/* SPDX-License-Identifier: MIT */
/*
 * api.c - the JSON API (docs/dashboard-api.md).  PostgreSQL builds every
 * answer (json_build_object, json_agg) in one read-only query, so the
 * JSON is the database's own and nothing is copied row by row here.
 * Parameters are checked before any query: an unknown one, a bad number
 * or time, an absurd range or too many points is a 400 that names it.
 * Each query's rows are bounded by the parameters (px, limit, the span a
 * source may cover) and its time by the pool's statement timeout.
 * One job over ~600 lines: the API's endpoints, each a parameter check and
 * one query, kept side by side so their limits read alike.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/name.h"
#include "basic/utf8.h"
#include "web/web-private.h"

#define WEB_PX_MAX 5000          /* pixel columns a series may ask for */
#define WEB_SPAN_MAX (400 * 86400.0) /* the longest time range */
#define WEB_RAW_SPAN_MAX 86400.0 /* raw rows (source=raw) for at most a day */
#define WEB_LIMIT_MAX 5000       /* events, frames or channels in one answer */
#define WEB_ANSWER_MAX (16 << 20) /* bytes in one answer, whatever the rows */

/* The overview's "active events" are the problems of the window that
   nothing has cleared since (record/railmon.proto's EventCode): events
   that only inform (a start, a connection made, a Seal, a channel fresh
   again) are left out, and a bus-off, device gone, disconnect, uplink
   fault, DTC, stale channel or unsynchronised clock stops being active at
   the later event on the same source that ends it.  Of the remote
   configuration's events (issue 32) CONFIG_RELOAD (60, a board started,
   SIGHUP's or an applied push's) only informs; CONFIG_REFUSED (61) and
   CONFIG_ROLLED_BACK (62) warn: a push the vehicle refused or rolled back
   is for the fleet engineer to see, and no later event clears it within
   the window (a later applied push does not undo the failed one; test
   web-config). */
#define WEB_EVENTS_INFO "1, 2, 13, 17, 19, 25, 51, 60, 72, 80, 81, 86, 90, 93"
#define WEB_EVENTS_CLEARED \
	"((e.code IN (10, 11, 12) AND c.code IN (13, 17)) OR (e.code = 18 AND c.code = 19)" \
	" OR (e.code = 24 AND c.code = 25) OR (e.code = 50 AND c.code = 51)" \
	" OR (e.code = 71 AND c.code = 72 AND c.arg = e.arg) OR (e.code = 89 AND c.code = 90 AND c.detail = e.detail)" \
	" OR (e.code = 92 AND c.code = 93))"

struct args {
	const char *const *allowed;
	const char *unknown;
	bool bad_utf8;
};

static enum MHD_Result check_key(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct args *a = cls;

	/* PostgreSQL refuses text that is not UTF-8 (a 500 with its message
	   before): the parameter is bad input */
	if (!basic_utf8_ok(key) || (value && !basic_utf8_ok(value))) {
		a->unknown = basic_utf8_ok(key) ? key : "?";
		a->bad_utf8 = true;
		return MHD_NO;
	}
	if (!strcmp(key, "token"))
		return MHD_YES;
	for (const char *const *k = a->allowed; *k; k++)
		if (!strcmp(*k, key))
			return MHD_YES;
	a->unknown = key;
	return MHD_NO;
}

/* 0, or r set: a parameter this endpoint does not know. */
static int only(struct MHD_Connection *c, struct web_reply *r, const char *const *allowed)
{
	struct args a = { allowed, NULL, false };

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, check_key, &a);
	if (!a.unknown)
		return 0;
	if (a.bad_utf8)
		return web_reply_error(r, 400, a.unknown, "'%s': not UTF-8 (percent-encode UTF-8 text)", a.unknown), -EINVAL;
	return web_reply_error(r, 400, a.unknown, "unknown parameter '%.100s'", a.unknown), -EINVAL;
}

static const char *arg(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);

	return v && *v ? v : NULL;
}

static int need(struct MHD_Connection *c, struct web_reply *r, const char *name, const char **ret)
{
	*ret = arg(c, name);
	if (*ret)
		return 0;
	return web_reply_error(r, 400, name, "'%s' is required", name), -EINVAL;
}

/* The vehicle parameter (required or not): 0, or r set to a 404 for a
   name the ground cannot have (basic_vehicle_name_ok). */
static int vehicle_arg(struct MHD_Connection *c, struct web_reply *r, bool required, const char **ret)
{
	if (required && need(c, r, "vehicle", ret) < 0)
		return -EINVAL;
	*ret = arg(c, "vehicle");
	if (*ret && !basic_vehicle_name_ok(*ret))
		return web_reply_error(r, 404, "vehicle", "no such vehicle (a name is 1-59 of A-Z a-z 0-9 . _ -)"), -ENOENT;
	return 0;
}

/* An integer in [lo, hi], or def when absent. */
static int int_arg(struct MHD_Connection *c, struct web_reply *r, const char *name, long lo, long hi, long def,
                   long *ret)
{
	const char *v = arg(c, name);
	char *end;
	long n;

	if (!v) {
		*ret = def;
		return 0;
	}
	errno = 0;
	n = strtol(v, &end, 0);
	if (errno || *end || end == v || n < lo || n > hi)
		return web_reply_error(r, 400, name, "'%s': expected a whole number from %ld to %ld, not '%.40s'", name,
		                       lo, hi, v), -EINVAL;
	*ret = n;
	return 0;
}

/* from and to (both required), from < to, at most max_span apart. */
static int range(struct MHD_Connection *c, struct web_reply *r, double max_span, double *from, double *to)
{
	const char *names[2] = { "from", "to" };
	double *out[2] = { from, to };

	for (int i = 0; i < 2; i++) {
		const char *v;

		if (need(c, r, names[i], &v) < 0)
			return -EINVAL;
		if (web_parse_time(v, out[i]) < 0)
			return web_reply_error(r, 400, names[i], "'%s': expected epoch seconds or ISO 8601 UTC "
			                       "(2026-12-03T19:00:00Z) between 2000 and 2100, not '%.40s'", names[i], v), -EINVAL;
	}
	if (*to <= *from)
		return web_reply_error(r, 400, "to", "'to' must be after 'from'"), -EINVAL;
	if (*to - *from > max_span)
		return web_reply_error(r, 400, "to", "the range is %.0f s, at most %.0f s here", *to - *from, max_span),
		       -EINVAL;
	return 0;
}

/* 503 for a pool with no connection free within the budget: a plain
   message, and Retry-After (send_reply). */
static int busy_reply(web_server_t *srv, struct web_reply *r)
{
	pthread_mutex_lock(&srv->lock);
	srv->st.busy++;
	pthread_mutex_unlock(&srv->lock);
	r->retry_after_s = (srv->cfg.timeout_ms + 999) / 1000;
	return web_reply_error(r, 503, NULL, "busy: no database connection came free within the request's budget "
	                       "(%u ms); try again", srv->cfg.timeout_ms);
}

/* Run sql (one row, one json column) into r: 404 with missing when the
   value is NULL (an unknown vehicle), 503 when the budget ran out
   (waiting for a connection included), 400 when an answer would be more
   than WEB_ANSWER_MAX bytes. */
static int query(web_server_t *srv, struct web_reply *r, const char *missing_param, const char *missing,
                 const char *sql, int n, const char *const *vals)
{
	char err[256];
	bool busy;
	PGconn *conn = web_pool_get(srv, r->heavy, r->deadline_ns, &busy, err, sizeof(err));
	PGresult *res;
	bool ok;
	int set;

	if (!conn)
		return busy ? busy_reply(srv, r) : web_reply_error(r, 503, NULL, "database: %s", err);
	set = web_pool_budget(srv, conn, r->deadline_ns);
	if (set < 0) {
		web_pool_put(srv, conn, r->heavy, true);
		return busy_reply(srv, r);
	}
	res = PQexecParams(conn, sql, n, NULL, vals, NULL, NULL, 0);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	/* no row or NULL: what it asked for is not there */
	if (ok && (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))) {
		web_reply_error(r, 404, missing_param, "%s", missing);
	} else if (ok && (size_t)PQgetlength(res, 0, 0) > WEB_ANSWER_MAX) {
		web_reply_error(r, 400, "limit", "the answer would be %d bytes, more than %d: ask for fewer rows (limit) "
		                "or a shorter range", PQgetlength(res, 0, 0), WEB_ANSWER_MAX);
	} else if (ok) {
		free(r->body);
		r->len = (size_t)PQgetlength(res, 0, 0);
		r->body = malloc(r->len + 1);
		if (r->body)
			memcpy(r->body, PQgetvalue(res, 0, 0), r->len + 1);
		r->status = 200;
	} else {
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		if (state && !strcmp(state, "57014"))
			web_reply_error(r, 503, NULL, "the query ran out of its time budget (%u ms): ask for a shorter range",
			                srv->cfg.timeout_ms);
		else
			web_reply_error(r, 500, NULL, "database: %s", PQerrorMessage(conn));
	}
	PQclear(res);
	if (set > 0)
		web_pool_budget_reset(conn);
	web_pool_put(srv, conn, r->heavy, ok);
	return r->body ? 0 : -ENOMEM;
}

/* The vehicle's id, as text into id (for a parameter): 0, or r set (a
   404 when there is none, a 503).  Queries then filter channel_names by
   this constant: with the id known when the plan is made, PostgreSQL
   reads that vehicle's dictionary rows by the index; by a join or a
   subquery it plans for an average vehicle and, beside one vehicle's
   2,000,000 dictionary rows, scanned them all for every vehicle. */
static int vehicle_id(web_server_t *srv, struct web_reply *r, const char *name, char *id, size_t id_len)
{
	static const char sql[] = "SELECT vehicle_id::text FROM vehicles WHERE name = $1";
	const char *vals[1] = { name };

	if (query(srv, r, "vehicle", "no such vehicle", sql, 1, vals) < 0)
		return -ENOMEM;
	if (r->status != 200)
		return -ENOENT;
	snprintf(id, id_len, "%.*s", (int)r->len, r->body);
	free(r->body);
	r->body = NULL;
	r->len = 0;
	return 0;
}

/* A part's drops as `railmon stat` counts them (cli_health_row() in
   cli/stat-table.c): its ring's and its socket's, the frames the kernel
   dropped (rx_dropped) as lost as those the ring refused.  The one SQL
   spelling of that sum: the summary and the vehicle's parts use it. */
#define PART_DROPS "(h.drops + h.rx_dropped)"

/* A vehicle's health in a few figures (from its parts' newest Health
   entries, migration 0006): the uplink's records not yet acknowledged and
   the log's not yet synced, drops (PART_DROPS: ring full, log refused,
   frames the kernel dropped; rx_dropped alone too), bus errors, log
   faults, the worst bus latency p99, buses not up, the clock
   unsynchronised, the retention window's alarm; problems lists what a
   depot engineer should look at. */
#define HEALTH_SUMMARY \
	" LEFT JOIN LATERAL (SELECT json_build_object('t', extract(epoch from x.t), 'age_s', extract(epoch from now() - x.t)," \
	"   'parts', x.parts, 'uplink_backlog', x.uplink_backlog, 'log_backlog', x.log_backlog, 'drops', x.drops," \
	"   'bus_errors', x.bus_errors, 'rx_dropped', x.rx_dropped, 'log_faults', x.log_faults," \
	"   'latency_p99_us', x.latency_p99_us, 'buses_down', x.buses_down, 'clock_unsynced', x.clock_unsynced," \
	"   'window_alarm', x.window_alarm, 'problems', array_remove(ARRAY[" \
	"    CASE WHEN x.drops > 0 THEN x.drops || ' records dropped' END," \
	"    CASE WHEN x.bus_errors > 0 THEN x.bus_errors || ' bus errors' END," \
	"    CASE WHEN x.log_faults > 0 THEN x.log_faults || ' log faults' END," \
	"    CASE WHEN json_array_length(x.buses_down) > 0 THEN 'bus down: ' || (SELECT string_agg(b, ', ')" \
	"     FROM json_array_elements_text(x.buses_down) b) END," \
	"    CASE WHEN x.clock_unsynced THEN 'clock not synchronised' END," \
	"    CASE WHEN x.window_alarm > 0 THEN 'retention window ' || CASE x.window_alarm WHEN 1 THEN 'projected short'" \
	"     ELSE 'due' END END], NULL)) j" \
	"  FROM (SELECT max(h.t) t, count(*) parts, sum(h.backlog) FILTER (WHERE h.kind = 'uplink') uplink_backlog," \
	"   sum(h.backlog) FILTER (WHERE h.kind = 'log') log_backlog, sum" PART_DROPS " drops," \
	"   coalesce(sum(h.errors) FILTER (WHERE h.kind IN ('can', 'modbus')), 0) bus_errors," \
	"   coalesce(sum(h.rx_dropped), 0) rx_dropped, coalesce(sum(h.errors) FILTER (WHERE h.kind = 'log'), 0) log_faults," \
	"   max(h.latency_p99_us) FILTER (WHERE h.kind IN ('can', 'modbus')) latency_p99_us," \
	"   coalesce(json_agg(h.name ORDER BY h.name) FILTER (WHERE h.kind IN ('can', 'modbus') AND h.state NOT IN ('', 'up'))," \
	"    '[]') buses_down, coalesce(bool_or(h.clock_unsynced) FILTER (WHERE h.kind = 'clock'), false) clock_unsynced," \
	"   coalesce(max(h.window_alarm) FILTER (WHERE h.kind = 'log'), 0) window_alarm" \
	"   FROM health h WHERE h.vehicle_id = v.vehicle_id HAVING count(*) > 0) x) hl ON true"

static int api_vehicles(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r)
{
	static const char *const allowed[] = { NULL };
	/* The ledger's views are computed once for the whole fleet (the gaps
	   window, one pass), then picked per vehicle: not once per vehicle. */
	static const char sql[] =
		"WITH day0 AS (SELECT date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day' AS t),"
		" g AS MATERIALIZED (SELECT * FROM gaps WHERE t_after >= (SELECT t FROM day0)),"
		/* completeness from the per-day ledger (ledger_days), as the view
		   computes it: a few rows per vehicle and day */
		" cp AS MATERIALIZED (SELECT * FROM completeness WHERE day >= CAST((SELECT t FROM day0) AT TIME ZONE 'UTC' AS date)),"
		" bl AS MATERIALIZED (SELECT vehicle_id, count(*) n FROM batches WHERE historical AND received_at > now() - interval '1 hour'"
		"  GROUP BY 1)"
		/* at most $4 vehicles (by name): the answer's rows and bytes bounded
		   however many vehicles the database has (issue 26) */
		" SELECT json_build_object('limit', $4::int, 'truncated', (SELECT count(*) > $4::int FROM (SELECT 1 FROM"
		"  vehicles LIMIT $4::int + 1) k), 'vehicles', coalesce(json_agg(json_build_object("
		" 'vehicle', v.name, 'first_seen', extract(epoch from v.first_seen), 'last_seen', extract(epoch from lb.seen),"
		/* the retained status topic when a receiver heard it, else the last Batch */
		" 'online', coalesce(vs.state = 'online', lb.seen > now() - make_interval(secs => $1::int)),"
		" 'state_from', CASE WHEN vs.state IS NULL THEN 'last_batch' ELSE 'status' END,"
		" 'state_since', extract(epoch from vs.since), 'age_s', extract(epoch from now() - lb.seen),"
		" 'last_batch', lb.j, 'backlog_batches_1h', coalesce((SELECT n FROM bl WHERE bl.vehicle_id = v.vehicle_id), 0),"
		" 'health', hl.j, 'completeness', cm.j, 'gaps', gp.j, 'events', ev.j) ORDER BY v.name), '[]'))"
		" FROM (SELECT * FROM vehicles ORDER BY name LIMIT $4::int) v LEFT JOIN vehicle_status vs USING (vehicle_id)"
		HEALTH_SUMMARY
		/* last seen: its newest Batch, or vehicles.last_seen (the receiver
		   sets it when it first meets the vehicle, a dictionary included) */
		" LEFT JOIN LATERAL (SELECT greatest(v.last_seen, max(b.received_at)) seen, (array_agg(json_build_object("
		"   'received_at', extract(epoch from b.received_at), 't_last', extract(epoch from b.t_last),"
		"   'historical', b.historical, 'lag_s', extract(epoch from b.received_at - b.t_last))))[1] j"
		"   FROM (SELECT * FROM batches b WHERE b.vehicle_id = v.vehicle_id ORDER BY b.received_at DESC LIMIT 1) b) lb ON true"
		" LEFT JOIN LATERAL (SELECT json_agg(json_build_object('day', c.day, 'batches', c.batches, 'records', c.records,"
		/* on_board: seqs sent reduced, in the vehicle's log (neither here
		   nor missing; migration 0012) */
		"   'missing', c.missing, 'complete', c.complete, 'on_board', c.on_board) ORDER BY c.day DESC) j"
		"   FROM cp c WHERE c.vehicle = v.name) cm ON true"
		" LEFT JOIN LATERAL (SELECT json_agg(json_build_object('from_seq', g.from_seq, 'to_seq', g.to_seq,"
		"   'records', g.records, 't_after', extract(epoch from g.t_after), 'explained', g.explained) ORDER BY g.t_after) j"
		"   FROM (SELECT * FROM g WHERE g.vehicle_id = v.vehicle_id ORDER BY g.t_after DESC LIMIT 50) g) gp ON true"
		" LEFT JOIN LATERAL (SELECT json_agg(json_build_object('code', e.code, 'name', coalesce(($2::text[])[e.code + 1],"
		"   e.code::text), 'source', e.source, 'count', e.n, 'last', extract(epoch from e.last)) ORDER BY e.last DESC) j"
		"   FROM (SELECT code, source, count(*) n, max(t) last FROM events e WHERE e.vehicle_id = v.vehicle_id"
		"    AND e.t > now() - make_interval(secs => $3::int) AND e.code NOT IN (" WEB_EVENTS_INFO ")"
		"    AND NOT EXISTS (SELECT 1 FROM events c WHERE c.vehicle_id = e.vehicle_id AND c.source = e.source"
		"     AND c.t > now() - make_interval(secs => $3::int) AND c.t >= e.t AND " WEB_EVENTS_CLEARED ")"
		"    GROUP BY code, source ORDER BY max(t) DESC LIMIT 20) e) ev ON true";
	char off[16], win[16], lim[16];
	long window, limit;
	const char *vals[4] = { off, srv->event_names, win, lim };

	if (only(c, r, (const char *const[]){ "events_s", "limit", NULL }) < 0 ||
	    int_arg(c, r, "events_s", 1, 7 * 86400, 600, &window) < 0 ||
	    int_arg(c, r, "limit", 1, WEB_LIMIT_MAX, 1000, &limit) < 0)
		return 0;
	(void)allowed;
	snprintf(off, sizeof(off), "%u", srv->cfg.offline_after_s);
	snprintf(win, sizeof(win), "%ld", window);
	snprintf(lim, sizeof(lim), "%ld", limit);
	return query(srv, r, NULL, NULL, sql, 4, vals);
}

static int api_channels_of(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r, const char *vehicle)
{
	/* At most $3 channels (sorted by bus and name) and 500 health parts:
	   a vehicle with a dictionary of 100,000 channels gets the first ones
	   and "truncated" (the chart's search finds the others). */
	static const char sql[] =
		"SELECT json_build_object('vehicle', v.name, 'now', extract(epoch from now()), 'stale_after_s', $2::int,"
		" 'status', (SELECT json_build_object('state', s.state, 'since', extract(epoch from s.since)) FROM vehicle_status s"
		"  WHERE s.vehicle_id = v.vehicle_id),"
		/* the last remote configuration's outcome (issue 32, migration 0015):
		   why is the vehicle's text, checked by the receiver, shown as text */
		" 'config', (SELECT json_build_object('version', cs.version, 'outcome', cs.outcome, 'why', cs.why,"
		"  'at', extract(epoch from cs.at), 'updated_at', extract(epoch from cs.updated_at))"
		"  FROM vehicle_config_status cs WHERE cs.vehicle_id = v.vehicle_id),"
		/* what the receivers' door refused of it (issue 26), by reason */
		" 'refusals', (SELECT json_agg(json_build_object('reason', d.reason, 'count', d.count, 'first_at',"
		"  extract(epoch from d.first_at), 'last_at', extract(epoch from d.last_at), 'detail', d.detail) ORDER BY d.reason) FROM door_refusals d WHERE d.vehicle_id = v.vehicle_id),"
		" 'health', (SELECT json_agg(json_build_object('name', h.name, 'kind', h.kind, 'bus', h.bus, 't', extract(epoch"
		"  from h.t), 'age_s', extract(epoch from now() - h.t), 'items', h.items, 'rate_hz', h.rate_hz, 'drops', " PART_DROPS ","
		"  'errors', h.errors, 'rx_dropped', h.rx_dropped, 'overruns', h.overruns, 'bad_input', h.bad_input,"
		"  'backlog', h.backlog, 'latency_p99_us', h.latency_p99_us, 'transaction_p99_us', h.transaction_p99_us,"
		"  'ring_fill_pct', h.ring_fill_pct, 'state', h.state, 'reopens', h.reopens, 'window_alarm', h.window_alarm,"
		"  'clock_unsynced', h.clock_unsynced) ORDER BY h.bus, h.name) FROM (SELECT * FROM health h"
		"  WHERE h.vehicle_id = v.vehicle_id ORDER BY h.bus, h.name LIMIT 500) h),"
		" 'limit', $3::int, 'truncated', (SELECT count(*) > $3::int FROM (SELECT 1 FROM channel_names n"
		"  WHERE n.vehicle_id = $4::int LIMIT $3::int + 1) k),"
		" 'channels', coalesce((SELECT json_agg(x ORDER BY x.bus, x.name) FROM ("
		"  SELECT n.channel AS id, n.name, n.unit, n.bus, n.source, extract(epoch from l.t) AS t, l.value, l.quality,"
		"   value_label(n.value_table, l.value) AS label, n.value_table,"
		"   extract(epoch from now() - l.t) AS age_s, (l.t IS NULL OR l.t < now() - make_interval(secs => $2::int)) AS stale,"
		"   (SELECT json_agg(json_build_array(extract(epoch from s.b), s.mean) ORDER BY s.b) FROM"
		"    (SELECT date_bin('1 minute', r.t, 'epoch') b, sum(r.vsum) / sum(r.n) mean FROM rollup_1s r"
		"     WHERE r.vehicle_id = n.vehicle_id AND r.channel = n.channel AND r.t > now() - interval '1 hour' GROUP BY 1) s)"
		"    AS spark"
		"  FROM (SELECT * FROM channel_names n WHERE n.vehicle_id = $4::int ORDER BY n.bus, n.name LIMIT $3::int) n"
		"  LEFT JOIN LATERAL (SELECT s.t, s.value, s.quality FROM samples s,"
		"    (SELECT max(r.t) mt FROM rollup_1s r WHERE r.vehicle_id = n.vehicle_id AND r.channel = n.channel) m"
		"    WHERE s.vehicle_id = n.vehicle_id AND s.channel = n.channel AND s.t >= m.mt AND s.t < m.mt + interval '1 second'"
		"    ORDER BY s.t DESC LIMIT 1) l ON true) x), '[]'))"
		" FROM vehicles v WHERE v.vehicle_id = $4::int AND v.name = $1";
	char stale[16], lim[16], id[16];
	long limit;
	const char *vals[4] = { vehicle, stale, lim, id };

	if (only(c, r, (const char *const[]){ "vehicle", "limit", NULL }) < 0 ||
	    int_arg(c, r, "limit", 1, WEB_LIMIT_MAX, 1000, &limit) < 0)
		return 0;
	if (!basic_utf8_ok(vehicle) || !basic_vehicle_name_ok(vehicle))
		return web_reply_error(r, 404, "vehicle", "no such vehicle (a name is 1-59 of A-Z a-z 0-9 . _ -)");
	snprintf(stale, sizeof(stale), "%u", srv->cfg.stale_after_s);
	snprintf(lim, sizeof(lim), "%ld", limit);
	r->heavy = true;
	if (vehicle_id(srv, r, vehicle, id, sizeof(id)) < 0)
		return r->body ? 0 : -ENOMEM;
	return query(srv, r, "vehicle", "no such vehicle", sql, 4, vals);
}

static int api_channels(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r)
{
	static const char sql[] =
		"SELECT coalesce(json_agg(json_build_object('vehicle', x.vname, 'id', x.channel, 'name', x.name, 'unit', x.unit,"
		" 'bus', x.bus) ORDER BY x.vname, x.name), '[]') FROM (SELECT v.name vname, n.* FROM channel_names n"
		/* a restriction on vehicle_id by a constant (not a join) reaches
		   into the view's window: only that vehicle's dictionaries are read */
		" JOIN vehicles v USING (vehicle_id) WHERE ($1::text IS NULL OR n.vehicle_id = $4::int)"
		" AND ($2::text IS NULL OR strpos(lower(n.name), lower($2)) > 0) ORDER BY v.name, n.name LIMIT $3::int) x";
	const char *vals[4] = { NULL, arg(c, "q"), NULL, NULL };
	char lim[16], id[16];
	long limit;

	if (only(c, r, (const char *const[]){ "vehicle", "q", "limit", NULL }) < 0 ||
	    vehicle_arg(c, r, false, &vals[0]) < 0 || int_arg(c, r, "limit", 1, WEB_LIMIT_MAX, 200, &limit) < 0)
		return 0;
	snprintf(lim, sizeof(lim), "%ld", limit);
	vals[2] = lim;
	if (vals[0] && vehicle_id(srv, r, vals[0], id, sizeof(id)) < 0)
		return r->body ? 0 : -ENOMEM;
	vals[3] = vals[0] ? id : NULL;
	return query(srv, r, NULL, NULL, sql, 4, vals);
}

/* The series' source: "raw" rows, "1s" or "1min" rollups.  auto: the
   finest whose rows per pixel column stay bounded (raw while a column is
   under a second, so at most px seconds of raw rows). */
static const char *pick_source(const char *want, double bucket)
{
	if (!want || !strcmp(want, "auto"))
		return bucket < 1.0 ? "raw" : bucket < 60.0 ? "1s" : "1min";
	if (!strcmp(want, "raw") || !strcmp(want, "1s") || !strcmp(want, "1min"))
		return want;
	return NULL;
}

static int series_sql(const char *source, char *sql, size_t len)
{
	static const char head[] =
		"WITH v AS (SELECT vehicle_id, name FROM vehicles WHERE name = $1),"
		/* vehicle_id as a restriction (not a join with v): it reaches into
		   channel_names' window, so only this vehicle's dictionaries are
		   read, not every vehicle's */
		" c AS (SELECT n.channel, n.name, n.unit, n.value_table FROM channel_names n"
		"  WHERE n.vehicle_id = $7::int"
		"  AND (n.name = $2 OR n.channel::text = $2) ORDER BY n.name = $2 DESC LIMIT 1),"
		" x AS (SELECT floor((extract(epoch from t)::float8 - $3::float8) / $5::float8)::int b, %s"
		"  FROM %s, v, c WHERE %s.vehicle_id = v.vehicle_id AND %s.channel = c.channel"
		"  AND t >= to_timestamp($3::float8) AND t < to_timestamp($4::float8) %s GROUP BY 1)"
		" SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM v) THEN NULL"
		" WHEN NOT EXISTS (SELECT 1 FROM c) THEN json_build_object('missing', 'channel') ELSE"
		" (SELECT json_build_object('vehicle', $1, 'channel', (SELECT channel FROM c), 'name', (SELECT name FROM c),"
		"  'unit', (SELECT unit FROM c), 'value_table', (SELECT value_table FROM c), 'source', $6::text, 'from', $3::float8, 'to', $4::float8, 'bucket_s', $5::float8,"
		"  'rows', coalesce(sum(n), 0), 't', coalesce(json_agg($3::float8 + b * $5::float8 ORDER BY b), '[]'),"
		"  'min', coalesce(json_agg(mn ORDER BY b), '[]'), 'max', coalesce(json_agg(mx ORDER BY b), '[]'),"
		"  'mean', coalesce(json_agg(mean ORDER BY b), '[]'), 'n', coalesce(json_agg(n ORDER BY b), '[]')) FROM x) END";
	int n;

	if (!strcmp(source, "raw"))
		n = snprintf(sql, len, head, "min(value) mn, max(value) mx, avg(value) mean, count(*) n", "samples s",
		             "s", "s", "AND quality = 0 AND value NOT IN ('NaN', 'Infinity', '-Infinity')");
	else
		n = snprintf(sql, len, head, "min(vmin) mn, max(vmax) mx, sum(vsum) / sum(n) mean, sum(n) n",
		             !strcmp(source, "1s") ? "rollup_1s r" : "rollup_1min r", "r", "r", "");
	return n > 0 && (size_t)n < len ? 0 : -ENOSPC;
}

static int api_series(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r)
{
	const char *vehicle, *channel, *source;
	char sql[3072], f[32], t[32], bw[32], id[16];
	double from, to, bucket;
	long px;
	const char *vals[7];

	if (only(c, r, (const char *const[]){ "vehicle", "channel", "from", "to", "px", "source", NULL }) < 0 ||
	    vehicle_arg(c, r, true, &vehicle) < 0 || need(c, r, "channel", &channel) < 0 ||
	    range(c, r, WEB_SPAN_MAX, &from, &to) < 0 || int_arg(c, r, "px", 1, WEB_PX_MAX, 1000, &px) < 0)
		return 0;
	r->heavy = true;
	bucket = (to - from) / (double)px;
	source = pick_source(arg(c, "source"), bucket);
	if (!source)
		return web_reply_error(r, 400, "source", "'source': auto, raw, 1s or 1min");
	if (!strcmp(source, "raw") && to - from > WEB_RAW_SPAN_MAX)
		return web_reply_error(r, 400, "source", "raw rows for at most %.0f s: use the rollups (source=auto)",
		                       WEB_RAW_SPAN_MAX);
	if (series_sql(source, sql, sizeof(sql)) < 0)
		return -ENOMEM;
	snprintf(f, sizeof(f), "%.6f", from);
	snprintf(t, sizeof(t), "%.6f", to);
	snprintf(bw, sizeof(bw), "%.9g", bucket);
	vals[0] = vehicle, vals[1] = channel, vals[2] = f, vals[3] = t, vals[4] = bw, vals[5] = source, vals[6] = id;
	if (vehicle_id(srv, r, vehicle, id, sizeof(id)) < 0)
		return r->body ? 0 : -ENOMEM;
	query(srv, r, "vehicle", "no such vehicle", sql, 7, vals);
	if (r->status == 200 && r->body && !strcmp(r->body, "{\"missing\" : \"channel\"}"))
		web_reply_error(r, 404, "channel", "vehicle %.100s has no channel '%.100s'", vehicle, channel);
	return r->body ? 0 : -ENOMEM;
}

static int api_events(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r)
{
	static const char sql[] =
		"SELECT CASE WHEN $1::text IS NOT NULL AND NOT EXISTS (SELECT 1 FROM vehicles WHERE name = $1) THEN NULL ELSE"
		" (SELECT json_build_object('events', coalesce(json_agg(json_build_object('vehicle', x.vname, 't', extract(epoch"
		"  from x.t), 'code', x.code, 'name', coalesce(($4::text[])[x.code + 1], x.code::text), 'source', x.source,"
		"  'arg', x.arg, 'detail', x.detail) ORDER BY x.t) FILTER (WHERE x.rn <= $5::int), '[]'),"
		"  'truncated', count(*) > $5::int) FROM"
		"  (SELECT v.name vname, row_number() OVER (ORDER BY e.t, e.seq) rn, e.* FROM events e JOIN vehicles v USING (vehicle_id) WHERE ($1::text IS NULL OR v.name = $1)"
		"   AND e.t >= to_timestamp($2::float8) AND e.t < to_timestamp($3::float8) ORDER BY e.t, e.seq LIMIT $5::int + 1) x) END";
	char f[32], t[32], lim[16];
	double from, to;
	long limit;
	const char *vals[5] = { NULL, f, t, srv->event_names, lim };

	if (only(c, r, (const char *const[]){ "vehicle", "from", "to", "limit", NULL }) < 0 ||
	    vehicle_arg(c, r, false, &vals[0]) < 0 || range(c, r, WEB_SPAN_MAX, &from, &to) < 0 ||
	    int_arg(c, r, "limit", 1, WEB_LIMIT_MAX, 1000, &limit) < 0)
		return 0;
	r->heavy = true;
	snprintf(f, sizeof(f), "%.6f", from);
	snprintf(t, sizeof(t), "%.6f", to);
	snprintf(lim, sizeof(lim), "%ld", limit);
	return query(srv, r, "vehicle", "no such vehicle", sql, 5, vals);
}

static int api_frames(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r)
{
	/* A frame's decoded signals are the samples the vehicle decoded from
	   it: on its bus, with its receive timestamp; "decoded" those of the
	   ground's DBC for its bus (serve --dbc, $7: web/frames.c). */
	/* The frames' times first ($8, a timestamptz[] literal), so that the
	   samples at those times are found in one pass over the range they
	   span, each row checked against the array by a hash (a constant
	   array: PostgreSQL hashes it), and grouped by time and bus once (sg,
	   MATERIALIZED) before the join to the frames.  As a subquery per
	   frame the lookup was inlined and scanned the samples' unsummarised
	   BRIN tail once per frame (issue 26: a 503 for 202 frames over 211k
	   rows since the last vacuum); as one IN (SELECT t FROM f) the
	   planner, which cannot know the frames' count, sorted the whole tail
	   for a merge join. */
	static const char times_sql[] =
		"SELECT CASE WHEN EXISTS (SELECT 1 FROM vehicles WHERE name = $1) THEN coalesce((SELECT array_agg(x.t ORDER BY x.t)::text"
		" FROM (SELECT f.t FROM can_frames f JOIN vehicles v USING (vehicle_id) WHERE v.name = $1"
		"  AND f.t >= to_timestamp($2::float8) AND f.t < to_timestamp($3::float8) AND ($4::bigint IS NULL OR f.can_id = $4::bigint)"
		"  AND ($5::int IS NULL OR f.bus = $5::int) ORDER BY f.t, f.seq LIMIT $6::int) x), '{}') END";
	static const char sql[] =
		"WITH v AS (SELECT vehicle_id FROM vehicles WHERE name = $1),"
		" dec AS (SELECT (d->>'tus')::bigint tus, (d->>'seq')::bigint seq, d->'d' j FROM json_array_elements($7::json) d),"
		" f AS MATERIALIZED (SELECT f.* FROM can_frames f, v WHERE f.vehicle_id = v.vehicle_id AND f.t >= to_timestamp($2::float8)"
		"  AND f.t < to_timestamp($3::float8) AND ($4::bigint IS NULL OR f.can_id = $4::bigint)"
		"  AND ($5::int IS NULL OR f.bus = $5::int) ORDER BY f.t, f.seq LIMIT $6::int + 1),"
		" sg AS MATERIALIZED (SELECT s.t, s.channel >> 16 bus, json_agg(json_build_object('channel', s.channel, 'name', n.name,"
		"  'value', s.value, 'unit', n.unit) ORDER BY n.name) j FROM samples s JOIN v USING (vehicle_id)"
		"  LEFT JOIN (SELECT * FROM channel_names WHERE vehicle_id = $9::int) n ON n.channel = s.channel"
		"  WHERE s.t >= ($8::timestamptz[])[1] AND s.t <= ($8::timestamptz[])[array_upper($8::timestamptz[], 1)]"
		"  AND s.t = ANY ($8::timestamptz[]) GROUP BY 1, 2)"
		" SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM v) THEN NULL ELSE json_build_object("
		"  'frames', coalesce((SELECT json_agg(json_build_object('t', extract(epoch from f.t), 'seq', f.seq, 'bus', f.bus,"
		"   'id', f.can_id, 'flags', f.flags, 'data', encode(f.data, 'hex'), 'signals', sg.j, 'decoded', dec.j)"
		"   ORDER BY f.t, f.seq)"
		"   FROM (SELECT * FROM f ORDER BY t, seq LIMIT $6::int) f LEFT JOIN sg ON sg.t = f.t AND sg.bus = f.bus"
		"   LEFT JOIN dec ON dec.tus = (extract(epoch from f.t) * 1000000)::bigint AND dec.seq = f.seq), '[]'),"
		"  'truncated', (SELECT count(*) FROM f) > $6::int) END";
	char f[32], t[32], lim[16], id[24], bus[16], vid[16], *decoded = NULL, *times;
	double from, to;
	long limit, busn, idn;
	const char *vehicle, *vals[9] = { NULL, f, t, NULL, NULL, lim, "[]", NULL, vid };
	int ret;

	if (only(c, r, (const char *const[]){ "vehicle", "from", "to", "id", "bus", "limit", NULL }) < 0 ||
	    vehicle_arg(c, r, true, &vehicle) < 0 || range(c, r, 86400.0, &from, &to) < 0 ||
	    int_arg(c, r, "limit", 1, WEB_LIMIT_MAX, 500, &limit) < 0 ||
	    int_arg(c, r, "id", 0, 0x1fffffff, -1, &idn) < 0 || int_arg(c, r, "bus", 0, 65535, -1, &busn) < 0)
		return 0;
	vals[0] = vehicle;
	r->heavy = true;
	snprintf(f, sizeof(f), "%.6f", from);
	snprintf(t, sizeof(t), "%.6f", to);
	snprintf(lim, sizeof(lim), "%ld", limit);
	snprintf(id, sizeof(id), "%ld", idn);
	snprintf(bus, sizeof(bus), "%ld", busn);
	vals[3] = idn >= 0 ? id : NULL;
	vals[4] = busn >= 0 ? bus : NULL;
	if (vehicle_id(srv, r, vehicle, vid, sizeof(vid)) < 0)
		return r->body ? 0 : -ENOMEM;
	if (srv->ndbc) {
		ret = web_frames_decode(srv, r, vals, &decoded);
		if (ret == -ENOMEM)
			return ret;
		if (ret == -EBUSY)
			return busy_reply(srv, r);
		if (ret < 0)
			return web_reply_error(r, 503, NULL, "database: the frames to decode could not be read");
		vals[6] = decoded;
	}
	ret = query(srv, r, "vehicle", "no such vehicle", times_sql, 6, vals);
	if (ret < 0 || r->status != 200) {
		free(decoded);
		return ret;
	}
	times = r->body;
	r->body = NULL;
	vals[7] = times;
	ret = query(srv, r, "vehicle", "no such vehicle", sql, 9, vals);
	free(times);
	free(decoded);
	return ret;
}

int web_api(web_server_t *srv, struct MHD_Connection *c, const char *url, struct web_reply *r)
{
	static const char prefix[] = "/api/vehicle/", suffix[] = "/channels";
	size_t n = strlen(url);

	if (!strcmp(url, "/api/vehicles"))
		return api_vehicles(srv, c, r);
	if (!strcmp(url, "/api/channels"))
		return api_channels(srv, c, r);
	if (!strcmp(url, "/api/series"))
		return api_series(srv, c, r);
	if (!strcmp(url, "/api/events"))
		return api_events(srv, c, r);
	if (!strcmp(url, "/api/frames"))
		return api_frames(srv, c, r);
	/* the dashboard's form: a name in the query, where no URL
	   normalisation turns /api/vehicle/../channels into /api/channels */
	if (!strcmp(url, "/api/vehicle")) {
		const char *vehicle;

		if (need(c, r, "vehicle", &vehicle) < 0)
			return 0;
		return api_channels_of(srv, c, r, vehicle);
	}
	if (!strncmp(url, prefix, sizeof(prefix) - 1) && n > sizeof(prefix) + sizeof(suffix) - 2 &&
	    !strcmp(url + n - (sizeof(suffix) - 1), suffix)) {
		char vehicle[256];
		size_t vl = n - (sizeof(prefix) - 1) - (sizeof(suffix) - 1);

		/* longer than any name the ground takes: the same JSON 404 */
		if (vl >= sizeof(vehicle))
			return web_reply_error(r, 404, "vehicle", "no such vehicle (a name is 1-59 of A-Z a-z 0-9 . _ -)");
		memcpy(vehicle, url + sizeof(prefix) - 1, vl);
		vehicle[vl] = '\0';
		return api_channels_of(srv, c, r, vehicle);
	}
	return web_reply_error(r, 404, NULL, "no such endpoint: %.200s (docs/dashboard-api.md)", url);
}
