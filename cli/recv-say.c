/* SPDX-License-Identifier: MIT */
/*
 * recv-say.c - recv's words for what the ground station reports (recv-say.h):
 * its setup, the connection, the database, refusals and the summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/clock.h"
#include "cli/progress.h"
#include "cli/recv-say.h"
#include "report/say.h"

void cli_recv_note(void *ctx, const struct grd_note *n)
{
	struct cli_recv_say *say = ctx;
	const struct rec_batch_info *info = n->info;
	int64_t now = basic_mono_ns();
	char id[2 * REC_LOG_ID_LEN + 1];
	/* An oversize Batch with --db is kept out of the database too. */
	const char *what = n->why < GRD_LATE ? "refused" : n->why == GRD_TOO_BIG && n->db ? "not stored" :
	                   "not in the ground log";

	grd_log_id_hex(info->log_id, info->log_id_len, id);
	if (n->why == GRD_CONTINUED) {
		fprintf(say->err, "railmon recv: %s log %.8s: a gap of over 2^32 records before seq %" PRIu64
		        " (more than a log marks): continuing in %s\n", info->vehicle, id[0] ? id : "(none)",
		        info->first_seq, n->dir);
		return;
	}
	if (say->printed[n->why] >= CLI_RECV_PRINT_BURST && now - say->printed_ns[n->why] < CLI_RECV_PRINT_EVERY_NS)
		return;
	if (say->printed[n->why] < CLI_RECV_PRINT_BURST && n->kept && n->cut)
		fprintf(say->err, "railmon recv: %s log %.8s: seq %" PRIu64 "..%" PRIu64 " %s: %s%s%s; its first %zu "
		        "of %zu bytes kept in %s\n", info->vehicle, id[0] ? id : "(none)", info->first_seq,
		        info->first_seq + info->count - (info->count > 0), what, grd_why_text(n->why),
		        n->err ? ": " : "", n->err ? strerror(-n->err) : "", n->len - n->cut, n->len, n->kept);
	else if (say->printed[n->why] < CLI_RECV_PRINT_BURST)
		fprintf(say->err, "railmon recv: %.*s log %.8s: seq %" PRIu64 "..%" PRIu64 " %s: %s%s%s; %s%s\n",
		        /* a name against the rule may be long: its start says enough */
		        n->why == GRD_BAD_VEHICLE ? 64 : 1024, info->vehicle, id[0] ? id : "(none)", info->first_seq,
		        info->first_seq + info->count - (info->count > 0), what, grd_why_text(n->why),
		        n->err ? ": " : "", n->err ? strerror(-n->err) : "", n->kept ? "kept in " : "not kept",
		        n->kept ? n->kept : "");
	else
		fprintf(say->err, "railmon recv: %" PRIu64 " Batches %s so far: %s\n", n->nth, what,
		        grd_why_text(n->why));
	say->printed[n->why]++;
	say->printed_ns[n->why] = now;
}

/* ---- setting up ---- */

/* A failed step of grd_receiver_setup() in the words recv always used. */
static int say_setup(const struct cli_recv *x, const struct grd_receiver_cfg *cfg, grd_receiver_t *rc, int r)
{
	grd_db_t *db = grd_receiver_grd(rc)->db;

	switch (grd_receiver_failed(rc)) {
	case GRD_RECEIVER_DB:
		return rpt_fail(x->err, "recv", "--db: %s", r == -ENOTSUP ? GRD_DB_NOT_BUILT : "out of memory");
	case GRD_RECEIVER_DB_CHECK:
		return rpt_fail(x->err, "recv", "--db: %s: %s", grd_db_error(db),
		                r == -ENOENT ? "run `railmon db init` first" :
		                r == -ESTALE ? "run `railmon db migrate` first" : "use a newer railmon");
	case GRD_RECEIVER_OUTPUT:
		return rpt_fail(x->err, "recv", "%s: %s", cfg->output, strerror(-r));
	case GRD_RECEIVER_LOGDIR:
		return rpt_fail(x->err, "recv", "--log %s: %s", cfg->logdir, strerror(-r));
	case GRD_RECEIVER_MQTT:
		fprintf(x->err, "railmon recv: %s\n", strerror(-r));
		return 1;
	default: /* the repair connection, the text output */
		return rpt_fail(x->err, "recv", "out of memory");
	}
}

int cli_recv_open(const struct cli_recv *x, const struct grd_receiver_cfg *cfg, grd_receiver_t **ret_rc)
{
	grd_receiver_t *rc;
	enum grd_receiver_step step;
	int r = grd_receiver_new(cfg, &rc);

	if (r < 0)
		return rpt_fail(x->err, "recv", "%s", strerror(-r));
	r = grd_receiver_setup(rc);
	step = grd_receiver_failed(rc);
	if (grd_receiver_db_waiting(rc))
		fprintf(x->err, "railmon recv: database: %s (retrying when Batches come; none is acknowledged "
		        "before it is committed)\n", grd_db_error(grd_receiver_grd(rc)->db));
	if ((step == GRD_RECEIVER_OK || step == GRD_RECEIVER_MQTT) && x->insecure)
		fprintf(x->err, "railmon recv: WARNING: --insecure: the broker's host name is NOT checked\n");
	if (r < 0) {
		r = say_setup(x, cfg, rc, r);
		grd_receiver_free(rc);
		return r;
	}
	*ret_rc = rc;
	return 0;
}

/* ---- running ---- */

/* Connection trouble, said once when it starts or changes, then at most
   every CLI_RECV_PRINT_EVERY_NS while it lasts. */
struct conn_report {
	uint64_t seen;
	enum grd_receiver_fail fail;
	char text[sizeof(((struct grd_receiver_stats *)0)->fail_text)];
	int64_t printed_ns;
	bool subscribed;
};

/* The database's state as last said. */
struct db_report {
	uint64_t failures;
	int64_t printed_ns;
	uint64_t refused;         /* Batches refused for good, said */
	int64_t refused_ns;
	bool down;
};

/* What the wait says as it goes. */
struct watch {
	const struct cli_recv *x;
	grd_db_t *db;
	struct conn_report conn;
	struct db_report dbr;
	struct cli_progress pg;   /* records received (of --count) */
};

static void report_connection(struct conn_report *c, const struct grd_receiver_stats *st, const struct cli_recv *o)
{
	uint64_t n = st->connect_failures + st->disconnects;
	bool changed = st->fail != c->fail || strcmp(st->fail_text, c->text) != 0;
	int64_t now = basic_mono_ns();
	FILE *err = o->err;

	if (st->subscribed && !c->subscribed)
		fprintf(err, "railmon recv: subscribed to %s on %s:%d\n", o->topic ? o->topic : "railmon/+/data",
		        o->host, o->port);
	c->subscribed = st->subscribed;
	if (n == c->seen || (!changed && now - c->printed_ns < CLI_RECV_PRINT_EVERY_NS))
		return;
	if (st->fail == GRD_RECEIVER_FAIL_RESOLVE)
		fprintf(err, "railmon recv: cannot resolve the broker's host name '%s': %s", o->host, st->fail_text);
	else if (st->fail == GRD_RECEIVER_FAIL_LOST)
		fprintf(err, "railmon recv: connection to %s:%d lost: %s", o->host, o->port, st->fail_text);
	else if (st->fail == GRD_RECEIVER_FAIL_TLS)
		fprintf(err, "railmon recv: TLS with %s:%d failed: %s (check --ca, the broker's certificate and "
		        "its host name)", o->host, o->port, st->fail_text);
	else
		fprintf(err, "railmon recv: cannot connect to %s:%d: %s", o->host, o->port, st->fail_text);
	if (st->connect_failures > 1)
		fprintf(err, " (%" PRIu64 " attempts so far, retrying)\n", st->connect_failures);
	else
		fputs(" (retrying)\n", err);
	c->seen = n;
	c->fail = st->fail;
	snprintf(c->text, sizeof(c->text), "%s", st->fail_text);
	c->printed_ns = now;
}

/* The database down (said when it starts, then every CLI_RECV_PRINT_EVERY_NS
   while it lasts), and back; nothing without a database. */
static void report_db(struct db_report *d, grd_db_t *db, FILE *err)
{
	struct grd_db_stats st;
	int64_t now = basic_mono_ns();

	if (!db)
		return;
	grd_db_stats(db, &st);
	if (st.down && st.failures != d->failures && (!d->down || now - d->printed_ns >= CLI_RECV_PRINT_EVERY_NS)) {
		fprintf(err, "railmon recv: database: %s (%" PRIu64 " failed attempts so far; retrying, and "
		        "acknowledging nothing more until it commits)\n", st.error, st.failures);
		d->printed_ns = now;
		d->failures = st.failures;
	}
	if (d->down && !st.down)
		fprintf(err, "railmon recv: database: committing again\n");
	if (st.batches[GRD_DB_REFUSED] != d->refused && (!d->refused || now - d->refused_ns >= CLI_RECV_PRINT_EVERY_NS)) {
		fprintf(err, "railmon recv: database: refused for good (kept in table refused, %" PRIu64 " so far): "
		        "%s\n", st.batches[GRD_DB_REFUSED], st.last_refused);
		d->refused = st.batches[GRD_DB_REFUSED];
		d->refused_ns = now;
	}
	d->down = st.down;
}

/* grd_receiver_wait's on_pass: the database, then the connection (not
   while a commit holds the counters). */
static void on_pass(void *ctx, const struct grd_receiver_stats *st)
{
	struct watch *w = ctx;
	struct cli_recv x = *w->x;
	char *buf = NULL;
	size_t len = 0;
	/* with a progress line drawn, what is said goes through a buffer: if
	   anything, the line is cleared first (no message glued to it) */
	FILE *m = w->pg.drawn ? open_memstream(&buf, &len) : NULL;

	if (m)
		x.err = m;
	report_db(&w->dbr, w->db, x.err);
	if (st)
		report_connection(&w->conn, st, &x);
	if (m) {
		fclose(m);
		if (len) {
			cli_progress_clear(&w->pg);
			fwrite(buf, 1, len, w->x->err);
		}
		free(buf);
	}
	if (st && st->subscribed)
		cli_progress_update(&w->pg, st->records, w->x->count);
}

/* ---- the summary ---- */

/* The summary line of the ground logs and the refused Batches kept. */
static void print_ground(const struct grd *g, FILE *err)
{
	uint64_t refused = 0;

	for (int i = GRD_LATE; i < GRD_WHY_MAX; i++)
		refused += g->refused[i];
	if (!g->dir && !g->kept && !g->keep_failed && !g->keep_over)
		return;
	if (g->dir)
		fprintf(err, "railmon recv: ground logs: %" PRIu64 " Batches stored", g->appended);
	else
		fprintf(err, "railmon recv: no ground log (--log)");
	if (g->answered)
		fprintf(err, " (%" PRIu64 " of them requests' answers over ranges held reduced: in "
		        "answers logs, <log>/answers.<n>/)", g->answered);
	if (g->had)
		fprintf(err, ", %" PRIu64 " received again that they held already", g->had);
	if (refused) {
		fprintf(err, "; not stored:");
		for (int i = GRD_LATE; i < GRD_WHY_MAX; i++)
			if (g->refused[i])
				fprintf(err, " %" PRIu64 " %s;", g->refused[i], grd_why_name((enum grd_why)i));
	}
	if (g->kept || g->keep_failed)
		fprintf(err, " %" PRIu64 " refused Batches kept in %s/ (%" PRIu64 " bytes)%s", g->kept, g->keep_dir,
		        g->kept_bytes, g->keep_failed ? " (some could not be written, see above)" : "");
	if (g->keep_over)
		fprintf(err, "; %" PRIu64 " refused Batches NOT kept: past the byte budget (--refused-max) or "
		        "10000 files", g->keep_over);
	fputc('\n', err);
}

static void print_totals(const struct grd_receiver_stats *st, FILE *err)
{
	uint64_t refused = 0;

	fprintf(err, "railmon recv: %" PRIu64 " messages, %" PRIu64 " records, %" PRIu64 " duplicates skipped, %"
	        PRIu64 " missing, %" PRIu64 " malformed payloads, %" PRIu64 " vehicles, %" PRIu64 " logs\n",
	        st->messages, st->records, st->duplicates, st->missing, st->bad, st->vehicles, st->logs);
	/* only a reducing vehicle has any: the line stays as it was otherwise */
	if (st->on_board)
		fprintf(err, "railmon recv: %" PRIu64 " records on board: sent reduced (uplink = policies), in the "
		        "vehicles' logs, not missing\n", st->on_board);
	if (st->unverified || st->old)
		fprintf(err, "railmon recv: %" PRIu64 " of the duplicates skipped without comparing them (their "
		        "Batch is older than the last %d kept per log); %" PRIu64 " records below the %d seq ranges "
		        "kept per log written again (may be duplicates)\n", st->unverified, GRD_RECEIVER_MAX_DIGESTS,
		        st->old, GRD_RECEIVER_MAX_RANGES);
	for (int i = 0; i < GRD_LATE; i++)
		refused += st->refused[i];
	if (refused)
		fprintf(err, "railmon recv: %" PRIu64 " Batches refused: %" PRIu64 " conflicts (%" PRIu64
		        " records), %" PRIu64 " implausible seq, %" PRIu64 " from vehicles past --max-vehicles, %"
		        PRIu64 " out of memory, %" PRIu64 " vehicle names against the rule (1-59 letters, digits, "
		        "'-', '_', '.'; not '.' or '..')\n", refused, st->refused[GRD_CONFLICT], st->conflict_records,
		        st->refused[GRD_SEQ_JUMP], st->refused[GRD_TOO_MANY_VEHICLES],
		        st->refused[GRD_NO_MEMORY], st->refused[GRD_BAD_VEHICLE]);
	if (st->sink_errors)
		fprintf(err, "railmon recv: %" PRIu64 " Batches not stored or output not written (see above)\n",
		        st->sink_errors);
}

static void print_db(const struct grd *g, FILE *err)
{
	struct grd_db_stats st;

	if (!g->db)
		return;
	grd_db_stats(g->db, &st);
	fprintf(err, "railmon recv: database: %" PRIu64 " Batches committed (%" PRIu64 " samples, %" PRIu64
	        " CAN frames, %" PRIu64 " events, %" PRIu64 " TRDP telegrams), %" PRIu64 " duplicates, %" PRIu64
	        " conflicts kept in conflicts, %" PRIu64 " connections, %" PRIu64 " failed attempts\n",
	        st.batches[GRD_DB_COMMITTED], st.samples, st.can_frames, st.events, st.trdp_telegrams,
	        st.batches[GRD_DB_DUPLICATE], st.batches[GRD_DB_CONFLICT], st.connects, st.failures);
	if (st.bad_names)
		fprintf(err, "railmon recv: database: %" PRIu64 " channel dictionary, value-table or Health entries not "
		        "stored: a name, unit, source or label that is not UTF-8, a value that is not a number\n",
		        st.bad_names);
	if (st.batches[GRD_DB_REFUSED])
		fprintf(err, "railmon recv: database: %" PRIu64 " Batches refused for good, kept in table refused "
		        "(%" PRIu64 " of them not even there); the last: %s\n", st.batches[GRD_DB_REFUSED],
		        st.refused_lost, st.last_refused);
	if (st.batches[GRD_DB_LIMIT] || st.door[GRD_DOOR_DICTIONARY] || st.door[GRD_DOOR_GONE])
		fprintf(err, "railmon recv: database: refused at the door (counted per vehicle and reason in table "
		        "door_refusals): %" PRIu64 " Batches with record times outside the window (--max-age, "
		        "--max-skew), %" PRIu64 " Batches over 2^40 records from their log's committed Batches (a "
		        "log's first: from seq 1, until the next confirms it), %"
		        PRIu64 " dictionaries over the limits (--max-channels, --max-configs), %" PRIu64 " \"gone\" "
		        "answers for ranges not asked for; the Batches kept in table refused; the last: %s\n",
		        st.door[GRD_DOOR_TIME], st.door[GRD_DOOR_SEQ_JUMP], st.door[GRD_DOOR_DICTIONARY],
		        st.door[GRD_DOOR_GONE], st.last_door);
	if (g->dict_refused)
		fprintf(err, "railmon recv: database: %" PRIu64 " retained channel dictionaries refused for good: "
		        "%s\n", g->dict_refused, st.error);
	if (st.cancelled)
		fprintf(err, "railmon recv: database: %" PRIu64 " Batches NOT committed (stopped while the "
		        "database was down: %s); the gap repair asks their vehicles again\n", st.cancelled, st.error);
}

static void summary(grd_receiver_t *rc, FILE *err)
{
	const struct grd *g = grd_receiver_grd(rc);
	struct grd_receiver_stats st;
	struct grd_receiver_log l;

	grd_receiver_stats(rc, &st);
	print_totals(&st, err);
	print_ground(g, err);
	print_db(g, err);
	for (size_t i = 0; grd_receiver_log(rc, i, &l) == 0; i++) {
		const struct grd_log *gl = l.ground;

		if (!l.next_seq)
			continue;
		fprintf(err, "railmon recv: %s log %s: seq %" PRIu64 "..%" PRIu64 ", %" PRIu64 " missing, %" PRIu64
		        " duplicates, %" PRIu64 " conflicts", l.vehicle, l.log_id[0] ? l.log_id : "(none)", l.first_seq,
		        l.next_seq - 1, l.missing, l.duplicates, l.conflicts);
		if (l.on_board)
			fprintf(err, ", %" PRIu64 " on board (sent reduced)", l.on_board);
		if (gl)
			fprintf(err, "; ground log %s: %" PRIu64 " Batches stored, %" PRIu64 " not", gl->dir,
			        gl->stored, gl->not_stored);
		fputc('\n', err);
	}
}

int cli_recv_run(const struct cli_recv *x, grd_receiver_t *rc)
{
	const struct grd *g = grd_receiver_grd(rc);
	struct watch w = { .x = x, .db = g->db };
	struct grd_receiver_stats st;
	bool connected = false;
	uint64_t late, asked;
	int ret;

	cli_progress_init(&w.pg, x->err, "recv", CLI_PROGRESS_RECORDS, x->quiet);
	if ((ret = grd_receiver_start(rc)) < 0) {
		fprintf(x->err, "railmon recv: cannot start the receiver thread: %s\n", strerror(-ret));
		return 1;
	}
	connected = grd_receiver_wait(rc, x->count, x->duration_s, on_pass, &w, &st) > 0;
	cli_progress_clear(&w.pg);
	if (!connected && st.fail != GRD_RECEIVER_FAIL_NONE)
		fprintf(x->err, "railmon recv: never connected to %s:%d: %s\n", x->host, x->port, st.fail_text);
	else if (!connected)
		fprintf(x->err, "railmon recv: never connected to %s:%d\n", x->host, x->port);
	ret = grd_receiver_stop(rc);
	if (ret < 0)
		fprintf(x->err, "railmon recv: cannot set up the MQTT client: %s\n", strerror(-ret));
	grd_receiver_finish(rc, &late);
	if (late)
		fprintf(x->err, "railmon recv: %" PRIu64 " records were more than the window (--window %.3gs) out of "
		        "time order and came out late\n", late, (double)x->window_ns / 1e9);
	summary(rc, x->err);
	if (grd_receiver_repairs(rc, &asked))
		fprintf(x->err, "railmon recv: gap repair: %" PRIu64 " ranges asked for again; %" PRIu64 " \"gone\" "
		        "ranges recorded, %" PRIu64 " answers refused (%" PRIu64 " for ranges not asked for)\n", asked,
		        g->gone, g->gone_bad, g->gone_unasked);
	if (g->status_bad || g->status_lost)
		fprintf(x->err, "railmon recv: status topic: %" PRIu64 " states, %" PRIu64 " malformed messages refused, %"
		        PRIu64 " not recorded\n", g->status_seen, g->status_bad, g->status_lost);
	if (g->config_status_bad || g->config_status_lost || grd_config_status_waiting(g))
		fprintf(x->err, "railmon recv: config status topic: %" PRIu64 " outcomes, %" PRIu64 " malformed messages "
		        "refused (over 4096 bytes, not UTF-8, not the JSON version/outcome/why), %" PRIu64 " lost, %" PRIu64
		        " not recorded (no Batch of their vehicle yet, or the database away)\n", g->config_status_seen,
		        g->config_status_bad, g->config_status_lost, grd_config_status_waiting(g));
	if (grd_status_unknown(g))
		fprintf(x->err, "railmon recv: status topic: %" PRIu64 " states of vehicles no Batch brought yet not "
		        "recorded (a status message makes no vehicle)\n", grd_status_unknown(g));
	return ret < 0 || !connected ? 1 : 0;
}
