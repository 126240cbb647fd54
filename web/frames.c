/* SPDX-License-Identifier: MIT */
/*
 * frames.c - ground DBC files for the CAN frame view (`serve --dbc
 * BUS=FILE`): the frames of /api/frames on such a bus are decoded here
 * with bus/dbc (as the vehicle would), beside the samples the vehicle
 * decoded.  A frame the vehicle did not decode (a message added to the
 * DBC since, a board without that DBC) thus still reads as signals, and a
 * vehicle's decoding can be checked against the ground's file.
 *
 * The frames of the range are read once (bounded by the request's limit),
 * decoded into a JSON array keyed by (time in µs, seq), and that array is
 * a parameter of the query that builds the answer (web/api.c), which
 * joins it to its frames.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/hex.h"
#include "dbc/dbc.h"
#include "web/web-private.h"

struct web_dbc {
	unsigned bus;
	dbc_t *dbc;
};

int web_dbc_open(web_server_t *srv, const struct web_cfg *cfg, char *err, size_t err_len)
{
	if (cfg->ndbc > WEB_DBC_MAX)
		return snprintf(err, err_len, "--dbc: at most %d files", WEB_DBC_MAX), -EINVAL;
	srv->dbcs = calloc(cfg->ndbc ? cfg->ndbc : 1, sizeof(*srv->dbcs));
	if (!srv->dbcs)
		return -ENOMEM;
	for (unsigned i = 0; i < cfg->ndbc; i++) {
		const char *spec = cfg->dbc[i], *eq = strchr(spec, '=');
		char *end, why[256] = "";
		unsigned long bus = eq ? strtoul(spec, &end, 10) : 0;
		int r;

		if (!eq || eq == spec || end != eq || bus > 65535 || !eq[1])
			return snprintf(err, err_len, "--dbc %s: expected BUS=FILE, BUS the bus index (0-65535) the "
			                "frames carry", spec), -EINVAL;
		for (unsigned j = 0; j < srv->ndbc; j++)
			if (srv->dbcs[j].bus == bus)
				return snprintf(err, err_len, "--dbc %s: bus %lu has a DBC file already", spec, bus), -EINVAL;
		r = dbc_load(eq + 1, &srv->dbcs[srv->ndbc].dbc, why, sizeof(why));
		if (r < 0)
			return snprintf(err, err_len, "--dbc %s: %s", spec, why[0] ? why : strerror(-r)), -EINVAL;
		srv->dbcs[srv->ndbc++].bus = (unsigned)bus;
	}
	return 0;
}

void web_dbc_close(web_server_t *srv)
{
	for (unsigned i = 0; i < srv->ndbc; i++)
		dbc_free(srv->dbcs[i].dbc);
	free(srv->dbcs);
	srv->dbcs = NULL;
	srv->ndbc = 0;
}

static const dbc_t *dbc_of(const web_server_t *srv, unsigned bus)
{
	for (unsigned i = 0; i < srv->ndbc; i++)
		if (srv->dbcs[i].bus == bus)
			return srv->dbcs[i].dbc;
	return NULL;
}

static void put_str(FILE *b, const char *s)
{
	char tmp[512];

	if (basic_json_string_buf(s ? s : "", tmp, sizeof(tmp)) < 0)
		fputs("null", b);
	else
		fputs(tmp, b);
}

/* "\\x0102..." (bytea's text form) into data: its length, or -1 (not
   that form, or more than max bytes).  basic/hex.h decodes the digits. */
static int unhex(const char *s, uint8_t *data, size_t max)
{
	ssize_t n;

	if (s[0] != '\\' || s[1] != 'x')
		return -1;
	n = basic_hex_decode(s + 2, strlen(s + 2), data, max);
	return n < 0 ? -1 : (int)n;
}

/* One frame's signals: {"tus":..,"seq":..,"d":[{"name","value","unit","label","quality"}]} */
static void decode_one(const dbc_t *dbc, const struct acq_item *f, const char *tus, const char *seq,
                       struct acq_item *out, size_t max, FILE *b, bool *first)
{
	int n = dbc_decode(dbc, f, 0, out, max);

	if (n <= 0)
		return;
	fprintf(b, "%s{\"tus\":%s,\"seq\":%s,\"d\":[", *first ? "" : ",", tus, seq);
	*first = false;
	for (int i = 0, put = 0; i < n; i++) {
		struct dbc_signal_info si;
		const char *label = NULL;
		char name[256];
		double v = out[i].sample.value;

		if (dbc_signal_info(dbc, out[i].sample.channel, &si) < 0)
			continue;
		snprintf(name, sizeof(name), "%s.%s", si.message, si.name);
		/* a comma before every signal written but the first: a
		   signal without its info is left out, so i cannot say */
		fprintf(b, "%s{\"name\":", put++ ? "," : "");
		put_str(b, name);
		if (isfinite(v))
			fprintf(b, ",\"value\":%.17g,\"unit\":", v);
		else
			fprintf(b, ",\"value\":null,\"unit\":");
		put_str(b, si.unit);
		fprintf(b, ",\"quality\":%u,\"label\":", (unsigned)out[i].sample.quality);
		if (dbc_value_label(dbc, si.index, v, &label) == 0)
			put_str(b, label);
		else
			fprintf(b, "null");
		fprintf(b, "}");
	}
	fprintf(b, "]}");
}

int web_frames_decode(web_server_t *srv, const struct web_reply *req, const char *const *vals, char **ret_json)
{
	static const char sql[] =
		"SELECT (extract(epoch from f.t) * 1000000)::bigint, f.seq, f.bus, f.can_id, f.flags, f.data"
		" FROM can_frames f JOIN vehicles v USING (vehicle_id) WHERE v.name = $1"
		" AND f.t >= to_timestamp($2::float8) AND f.t < to_timestamp($3::float8)"
		" AND ($4::bigint IS NULL OR f.can_id = $4::bigint) AND ($5::int IS NULL OR f.bus = $5::int)"
		" AND f.bus = ANY($7::int[]) ORDER BY f.t, f.seq LIMIT $6::int";
	char *json = NULL;
	size_t json_len = 0;
	FILE *b;
	char buses[WEB_DBC_MAX * 8 + 3] = "{", err[256];
	const char *v[7] = { vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], buses };
	struct acq_item *out = NULL;
	size_t max = 0;
	bool first = true;
	PGresult *res;
	PGconn *conn;
	bool busy;
	int r = 0, set;

	*ret_json = NULL;
	for (unsigned i = 0; i < srv->ndbc; i++) {
		size_t l = strlen(buses);
		snprintf(buses + l, sizeof(buses) - l, "%s%u", i ? "," : "", srv->dbcs[i].bus);
		max = dbc_decode_max(srv->dbcs[i].dbc) > max ? dbc_decode_max(srv->dbcs[i].dbc) : max;
	}
	strcat(buses, "}");
	conn = web_pool_get(srv, true, req->deadline_ns, &busy, err, sizeof(err));
	if (!conn)
		return busy ? -EBUSY : -ECONNREFUSED;
	/* within what the wait left of the request's budget */
	set = web_pool_budget(srv, conn, req->deadline_ns);
	if (set < 0) {
		web_pool_put(srv, conn, true, true);
		return -EBUSY;
	}
	res = PQexecParams(conn, sql, 7, NULL, v, NULL, NULL, 0);
	if (set > 0)
		web_pool_budget_reset(conn);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		PQclear(res);
		web_pool_put(srv, conn, true, false);
		return -EIO;
	}
	out = calloc(max ? max : 1, sizeof(*out));
	b = open_memstream(&json, &json_len);
	if (b)
		fputc('[', b);
	for (int i = 0; out && b && i < PQntuples(res); i++) {
		struct acq_item f = { .kind = ACQ_ITEM_CAN };
		int len = unhex(PQgetvalue(res, i, 5), f.can.data, sizeof(f.can.data));
		const dbc_t *dbc = dbc_of(srv, (unsigned)atoi(PQgetvalue(res, i, 2)));

		if (len < 0 || !dbc)
			continue;
		f.bus = (uint16_t)atoi(PQgetvalue(res, i, 2));
		f.can.id = (uint32_t)strtoul(PQgetvalue(res, i, 3), NULL, 10);
		f.can.flags = (uint8_t)atoi(PQgetvalue(res, i, 4));
		f.can.len = (uint8_t)len;
		decode_one(dbc, &f, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), out, max, b, &first);
	}
	PQclear(res);
	web_pool_put(srv, conn, true, true);
	if (b) {
		fputc(']', b);
		if (ferror(b))
			r = -ENOMEM;
		if (fclose(b) != 0)
			r = -ENOMEM;
	}
	if (!out || !b)
		r = -ENOMEM;
	free(out);
	if (r < 0)
		free(json);
	else
		*ret_json = json;
	return r;
}
