/* SPDX-License-Identifier: MIT */
/*
 * dictionary.c - a Batch's channel dictionary into the database: the
 * door's verdict on it (statement "dict") and its entries, in a group's
 * transaction or alone (a retained railmon/<vehicle>/channels message);
 * the value tables as text[] literals; what the database takes as text
 * (well-formed UTF-8).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "db-private.h"
#include "basic/utf8.h"
#include "record/batch.h"

/* The Batch's channel dictionary, into the open pipeline: first the
   door's verdict (statement "dict", its answer the *ret_q-th of the
   pipeline), then the entries, which obey it. */
int grd_send_dictionary(grd_db_t *db, const struct grd_batch_key *k, const rec_batch_t *b, size_t n,
                           bool historical, size_t *ret_q)
{
	char nch[24], maxch[16], maxday[16], words[96];
	const char *dv[7] = { k->vid, k->hash, nch, historical ? "t" : "f", maxch, maxday, words };
	int r;

	*ret_q = SIZE_MAX;
	if (!n)
		return 0;
	snprintf(nch, sizeof(nch), "%zu", n);
	snprintf(maxch, sizeof(maxch), "%u", db->cfg.max_channels);
	snprintf(maxday, sizeof(maxday), "%u", db->cfg.max_configs_day);
	snprintf(words, sizeof(words), "config hash %s, %zu entries: ", k->hash, n);
	*ret_q = db->nq;
	r = grd_qsend(db, "dict", 7, dv, NULL);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct rec_channel ch;
		char id[16], bus[16], dec[16];

		if (rec_batch_channel(b, i, &ch) < 0)
			continue;
		/* well-formed UTF-8 only (basic_utf8_ok): the database refuses
		   anything else in text, and a Batch it refuses for ever would
		   stop the receiver */
		if (!basic_utf8_ok(ch.name) || !basic_utf8_ok(ch.unit) || !basic_utf8_ok(ch.source) ||
		    !basic_utf8_ok(ch.bus_name)) {
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
		snprintf(dec, sizeof(dec), "%" PRIu32, ch.decimals);
		/* bus name and decimals NULL when not given: export --db then
		   writes what export of the log writes without them */
		const char *v[10] = { k->vid, k->hash, id, ch.name ? ch.name : "", ch.unit ? ch.unit : "", bus,
		                      ch.source ? ch.source : "", vt, ch.bus_name && *ch.bus_name ? ch.bus_name : NULL,
		                      ch.has_decimals ? dec : NULL };
		/* libpq copies the parameters into its output buffer at once */
		r = grd_qsend(db, "channel", 10, v, NULL);
		free(vt);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The door's verdict on a dictionary (statement "dict"'s answer in
   keep[q]): a refusal counted and said. */
static void dictionary_verdict(grd_db_t *db, PGresult **keep, size_t q, const char *vehicle)
{
	char words[320];

	if (q == SIZE_MAX || !keep[q] || PQntuples(keep[q]) < 1 || !*PQgetvalue(keep[q], 0, 0))
		return;
	snprintf(words, sizeof(words), "%s: dictionary refused: %s", vehicle, PQgetvalue(keep[q], 0, 0));
	grd_db_door_count(db, GRD_DOOR_DICTIONARY, words);
}

/* Run the pipeline, keeping every statement's rows for the verdicts;
   counted only once the COMMIT (the last statement) went through. */
int grd_pipe_run_verdicts(grd_db_t *db, const char *what, const size_t *qs, const char *const *vehicles,
                             size_t n)
{
	PGresult **keep = calloc(db->nq + 1, sizeof(*keep));
	size_t nq = db->nq;
	int r = grd_pipe_run(db, what, keep);

	for (size_t i = 0; keep && r == 0 && i < n; i++)
		dictionary_verdict(db, keep, qs[i], vehicles[i]);
	for (size_t i = 0; keep && i <= nq; i++)
		PQclear(keep[i]);
	free(keep);
	return r;
}

/* "VALUE LABEL": VALUE a finite number (what value_label() in SQL reads),
   LABEL not empty and well-formed UTF-8. */
static bool entry_ok(const char *e)
{
	const char *sp = strchr(e, ' ');
	char num[48], *end;
	double v;

	if (!sp || sp == e || (size_t)(sp - e) >= sizeof(num) || !sp[1] || !basic_utf8_ok(sp + 1))
		return false;
	memcpy(num, e, (size_t)(sp - e));
	num[sp - e] = 0;
	v = strtod(num, &end);
	return *end == 0 && isfinite(v) && strspn(num, "+-0123456789.eE") == strlen(num);
}

int grd_value_table(grd_db_t *db, const struct rec_channel *ch, char **ret_literal)
{
	size_t cap = 3, used = 0, kept = 0, bad = 0;
	char *out;

	*ret_literal = NULL;
	for (size_t i = 0; i < ch->nvalue_table; i++)
		cap += 2 * strlen(ch->value_table[i]) + 3; /* quoted, every byte escaped at worst, a comma */
	if (!ch->nvalue_table || !(out = malloc(cap)))
		return ch->nvalue_table ? -ENOMEM : 0;
	out[used++] = '{';
	for (size_t i = 0; i < ch->nvalue_table; i++) {
		const char *e = ch->value_table[i];

		if (!entry_ok(e)) {
			bad++;
			continue;
		}
		if (kept++)
			out[used++] = ',';
		out[used++] = '"';
		for (; *e; e++) {
			if (*e == '"' || *e == '\\')
				out[used++] = '\\';
			out[used++] = *e;
		}
		out[used++] = '"';
	}
	out[used++] = '}';
	out[used] = 0;
	if (bad) {
		pthread_mutex_lock(&db->lock);
		db->st.bad_names += bad;
		pthread_mutex_unlock(&db->lock);
	}
	if (!kept) {
		free(out);
		out = NULL;
	}
	*ret_literal = out;
	return 0;
}

int grd_ingest_dictionary(grd_db_t *db, const rec_batch_t *b)
{
	struct rec_batch_info info;
	struct grd_batch_key k;
	size_t dq = SIZE_MAX;
	int vid, r;

	rec_batch_info(b, &info);
	r = grd_db_prepare(db);
	if (r == 0)
		r = grd_db_vehicle_id(db, info.vehicle, &vid);
	if (r < 0)
		return r;
	grd_batch_key_make(&info, vid, 0, &k);
	r = grd_pipe_enter(db);
	if (r == 0)
		r = grd_qsend_sql(db, "begin", "BEGIN");
	if (r == 0)
		r = grd_send_dictionary(db, &k, b, info.nchannels, info.historical, &dq);
	if (r == 0)
		r = grd_qsend_sql(db, "commit", "COMMIT");
	if (r == 0 || PQpipelineStatus(db->conn) != PQ_PIPELINE_OFF) {
		int q = grd_pipe_run_verdicts(db, "dictionary", &dq, &info.vehicle, 1);
		r = r < 0 ? r : q;
	}
	return r;
}
