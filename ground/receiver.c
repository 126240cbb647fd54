/* SPDX-License-Identifier: MIT */
/*
 * receiver.c - `railmon recv`'s receiver wired up (receiver.h): the
 * database and gap repair, the text output, the ground logs, the MQTT
 * thread, the wait and the end.  cli/recv-cmd.c parses the options and
 * cli/recv-say.c says what happens; nothing here prints.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/parse.h"
#include "receiver.h"

struct grd_receiver {
	struct grd_receiver_cfg cfg;
	struct grd g;
	upl_recv_t *r;
	grd_ledger_t *ledger;     /* behind r: the receiver hands it each decoded Batch */
	struct grd_ledger_cfg lcfg;
	enum grd_receiver_step failed;
	bool db_waiting;
	FILE *out;                /* cfg.out or the file cfg.output */
	grd_db_t *repair_db;      /* its own connection: g.db is the MQTT thread's */
	int64_t repair_next_ns;
	uint64_t repair_asked;
	char gone_topic[256], keep_default[PATH_MAX];
	pthread_t tid;
	bool started;
	int ret;                  /* upl_recv_run()'s */
	atomic_bool done;
};

/* Each ground log holds two file descriptors: take what the system allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int grd_receiver_new(const struct grd_receiver_cfg *cfg, grd_receiver_t **ret_rc)
{
	grd_receiver_t *rc;

	if (!cfg || !cfg->stop || !ret_rc)
		return -EINVAL;
	/* gap repair off (0) or a period it can keep: not nan, negative or
	   over BASIC_SECONDS_MAX */
	if (cfg->repair_after != 0 && !(cfg->repair_after > 0 && cfg->repair_after <= BASIC_SECONDS_MAX))
		return -EINVAL;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	rc->cfg = *cfg;
	rc->out = cfg->out;
	*ret_rc = rc;
	return 0;
}

static int fail(grd_receiver_t *rc, enum grd_receiver_step step, int r)
{
	rc->failed = step;
	return r;
}

/* The database: its schema must be this railmon's; one that cannot be
   reached now is waited for when the first Batch comes. */
static int receiver_db(grd_receiver_t *rc)
{
	struct grd_receiver_cfg *o = &rc->cfg;
	struct grd_db_cfg cfg = o->limits;

	cfg.url = o->db_url;
	cfg.stop = o->stop;
	int r;

	r = grd_db_new(&cfg, &rc->g.db);
	if (r < 0)
		return fail(rc, GRD_RECEIVER_DB, r);
	o->recv.on_status = grd_on_status; /* online/offline for the dashboard; kept while the database is away */
	o->recv.on_config_status = grd_on_config_status; /* the last remote configuration's outcome, the same */
	r = grd_db_check(rc->g.db);
	if (r == -ECONNREFUSED || r == -EIO)
		rc->db_waiting = true; /* gap repair too: its passes fail until the server is back */
	else if (r < 0)
		return fail(rc, GRD_RECEIVER_DB_CHECK, r);
	if (o->repair_after > 0 && (r = grd_db_new(&cfg, &rc->repair_db)) < 0)
		return fail(rc, GRD_RECEIVER_REPAIR_DB, r);
	/* The vehicles' "gone" answers, shared like the data. */
	snprintf(rc->gone_topic, sizeof(rc->gone_topic), "%s%s%srailmon/+/gone", o->share ? "$share/" : "",
	         o->share ? o->share : "", o->share ? "/" : "");
	o->recv.aux_topic = rc->gone_topic;
	o->recv.on_aux = grd_on_gone;
	return 0;
}

/* The text output, the ground logs and the refused Batches: grd's
   callbacks on the receiver. */
static int receiver_outputs(grd_receiver_t *rc)
{
	struct grd_receiver_cfg *o = &rc->cfg;
	struct grd *g = &rc->g;

	if (o->output && !(rc->out = fopen(o->output, "we")))
		return fail(rc, GRD_RECEIVER_OUTPUT, -errno);
	if (o->text) {
		g->out = rc->out;
		g->fmt = o->fmt;
		if (grd_text_new(g, o->window_ns) < 0)
			return fail(rc, GRD_RECEIVER_TEXT, -ENOMEM);
		rc->lcfg.on_record = grd_text_record;
		o->recv.on_tick = o->window_ns < 0 ? NULL : grd_text_tick;
		rec_format_header(g->out, g->fmt);
	}
	if (o->logdir && mkdir(o->logdir, 0755) < 0 && errno != EEXIST)
		return fail(rc, GRD_RECEIVER_LOGDIR, -errno);
	if (!o->keep_dir) {
		snprintf(rc->keep_default, sizeof(rc->keep_default), "%s/refused", o->logdir ? o->logdir : ".");
		o->keep_dir = o->logdir ? rc->keep_default : "railmon-refused";
	}
	g->dir = o->logdir;
	g->keep_dir = o->keep_dir;
	g->keep_budget = o->keep_budget;
	g->max_age_ns = o->limits.max_age_ns; /* the database's window for ground logs too */
	g->max_skew_ns = o->limits.max_skew_ns;
	g->on_note = o->on_note;
	g->note_ctx = o->note_ctx;
	return 0;
}

int grd_receiver_setup(grd_receiver_t *rc)
{
	struct grd_receiver_cfg *o = &rc->cfg;
	int r;

	if (o->db_url && (r = receiver_db(rc)) < 0)
		return r;
	if ((r = receiver_outputs(rc)) < 0)
		return r;
	rc->lcfg.on_refused = grd_refused;
	rc->lcfg.ctx = &rc->g;
	rc->lcfg.max_vehicles = o->max_vehicles;
	o->recv.ctx = &rc->g;
	o->recv.on_channels = o->text || rc->g.db ? grd_channels : NULL; /* retained dictionaries: names, configs */
	o->recv.on_idle = grd_idle; /* a database group that is due is committed between messages */
	if (o->logdir || rc->g.db)
		rc->lcfg.on_batch = grd_batch;
	if (rc->g.db)
		rc->lcfg.on_jump = grd_jump; /* the database's ledger remembers across restarts */
	if (o->logdir)
		raise_fd_limit();
	r = grd_ledger_new(&rc->lcfg, &rc->ledger);
	if (r < 0)
		return fail(rc, GRD_RECEIVER_MQTT, r);
	o->recv.on_data = grd_ledger_feed;
	o->recv.data_ctx = rc->ledger;
	r = upl_recv_new(&o->recv, &rc->r);
	return r < 0 ? fail(rc, GRD_RECEIVER_MQTT, r) : 0;
}

enum grd_receiver_step grd_receiver_failed(const grd_receiver_t *rc)
{
	return rc->failed;
}

bool grd_receiver_db_waiting(const grd_receiver_t *rc)
{
	return rc->db_waiting;
}

const struct grd *grd_receiver_grd(const grd_receiver_t *rc)
{
	return &rc->g;
}

static void *recv_thread(void *p)
{
	grd_receiver_t *rc = p;

	rc->ret = upl_recv_run(rc->r);
	atomic_store(&rc->done, true);
	return NULL;
}

int grd_receiver_start(grd_receiver_t *rc)
{
	int r;

	if (!rc->r || rc->started)
		return -EINVAL;
	r = pthread_create(&rc->tid, NULL, recv_thread, rc);
	if (r)
		return -r;
	rc->started = true;
	return 0;
}

/* The session's and the ledger's counters in recv's terms: the failures
   it tells apart, the refusals by grd_why (a dictionary of a vehicle name
   against the rule is counted with the Batches so refused). */
static void plain_stats(const struct upl_recv_stats *u, const struct grd_ledger_stats *l,
                        struct grd_receiver_stats *st)
{
	_Static_assert((int)GRD_LATE == (int)GRD_LEDGER_REFUSAL_MAX, "grd_why's refusals are the ledger's");
	*st = (struct grd_receiver_stats){
		.messages = u->messages, .records = l->records, .duplicates = l->duplicates,
		.missing = l->missing, .bad = u->bad, .vehicles = l->vehicles, .logs = l->logs,
		.on_board = l->on_board,
		.unverified = l->unverified, .old = l->old, .conflict_records = l->conflict_records,
		.sink_errors = l->sink_errors, .connects = u->connects,
		.connect_failures = u->connect_failures, .disconnects = u->disconnects,
		.subscribed = u->subscribed,
		.fail = u->fail == UPL_RECV_FAIL_NONE ? GRD_RECEIVER_FAIL_NONE :
		        u->fail == UPL_RECV_FAIL_RESOLVE ? GRD_RECEIVER_FAIL_RESOLVE :
		        u->fail == UPL_RECV_FAIL_LOST ? GRD_RECEIVER_FAIL_LOST :
		        u->fail == UPL_RECV_FAIL_TLS ? GRD_RECEIVER_FAIL_TLS : GRD_RECEIVER_FAIL_OTHER,
	};
	memcpy(st->refused, l->refused, sizeof(st->refused));
	st->refused[GRD_BAD_VEHICLE] += u->channels_refused;
	memcpy(st->fail_text, u->fail_text, sizeof(st->fail_text));
}

int grd_receiver_repair_period(double after_s, unsigned *ret_grace_s, int64_t *ret_period_ns)
{
	/* the grace in whole seconds for the query's interval (at least 1,
	   at most BASIC_SECONDS_MAX as the command line allows); the period
	   in ns from the double, not from a whole number of seconds: 3 s
	   gives 1.5 s, not 1; and nothing converted that would not fit (a
	   double too large for the integer is undefined behaviour, a product
	   over INT64_MAX too) */
	if (!ret_grace_s || !ret_period_ns || !(after_s > 0) || after_s > BASIC_SECONDS_MAX)
		return -EINVAL;
	*ret_grace_s = after_s < 1 ? 1 : (unsigned)(after_s + 0.5);
	*ret_period_ns = after_s > 2 ? (int64_t)(after_s / 2 * 1e9) : 1000000000;
	return 0;
}

/* Gap repair every half grace period (at least 1 s): a database that
   cannot be reached is said by cli/recv-say.c already. */
static void receiver_repair(grd_receiver_t *rc)
{
	unsigned grace;
	int64_t now = basic_mono_ns(), period;
	uint64_t asked = 0;

	if (!rc->repair_db || now < rc->repair_next_ns ||
	    grd_receiver_repair_period(rc->cfg.repair_after, &grace, &period) < 0)
		return;
	rc->repair_next_ns = now + period;
	grd_repair_pass(rc->repair_db, rc->r, grace, &asked);
	rc->repair_asked += asked;
}

/* Until stop, --count or --duration; connected or not. */
int grd_receiver_wait(grd_receiver_t *rc, uint64_t count, double duration_s, grd_receiver_pass_fn on_pass,
                      void *ctx, struct grd_receiver_stats *ret_last)
{
	int64_t end = duration_s > 0 ? basic_mono_ns() + (int64_t)(duration_s * 1e9) : INT64_MAX;
	struct upl_recv_stats st;
	struct grd_ledger_stats lst;
	struct grd_receiver_stats plain;
	bool connected = false;

	while (!*rc->cfg.stop && !atomic_load(&rc->done) && basic_mono_ns() < end) {
		receiver_repair(rc);
		/* Busy: a Batch is being committed, perhaps waiting for the database. */
		if (grd_ledger_stats_try(rc->ledger, &lst) < 0) {
			if (on_pass)
				on_pass(ctx, NULL);
			usleep(100000);
			continue;
		}
		upl_recv_stats(rc->r, &st);
		plain_stats(&st, &lst, &plain);
		if (on_pass)
			on_pass(ctx, &plain);
		connected = connected || st.connects > 0;
		if (count && lst.records >= count)
			break;
		if (count)
			grd_ledger_wait_records(rc->ledger, count, 100);
		else
			usleep(100000);
	}
	upl_recv_stats(rc->r, &st);
	grd_ledger_stats(rc->ledger, &lst);
	plain_stats(&st, &lst, ret_last);
	return connected || st.connects > 0;
}

int grd_receiver_stop(grd_receiver_t *rc)
{
	/* A commit waiting for the database gives up now (grd_db_store_batch()). */
	*rc->cfg.stop = 1;
	if (!rc->started)
		return 0;
	upl_recv_stop(rc->r);
	pthread_join(rc->tid, NULL);
	rc->started = false;
	return rc->ret;
}

int grd_receiver_finish(grd_receiver_t *rc, uint64_t *ret_late)
{
	struct grd *g = &rc->g;
	uint64_t late = 0;
	int r = 0;

	grd_db_flush(g->db, true); /* the last group: one try (stopping), else counted as not committed */
	if (g->text) {
		r = grd_text_drain(g); /* what the logs still hold */
		late = grd_text_late(g);
	}
	grd_text_free(g);
	if (rc->out)
		fflush(rc->out);
	*ret_late = late;
	return r;
}

void grd_receiver_stats(grd_receiver_t *rc, struct grd_receiver_stats *ret_stats)
{
	struct upl_recv_stats st;
	struct grd_ledger_stats lst;

	upl_recv_stats(rc->r, &st);
	grd_ledger_stats(rc->ledger, &lst);
	plain_stats(&st, &lst, ret_stats);
}

int grd_receiver_log(grd_receiver_t *rc, size_t i, struct grd_receiver_log *ret_log)
{
	struct grd_ledger_log l;
	int r = grd_ledger_log(rc->ledger, i, &l);

	if (r < 0)
		return r;
	*ret_log = (struct grd_receiver_log){
		.vehicle = l.vehicle, .first_seq = l.first_seq, .next_seq = l.next_seq, .missing = l.missing,
		.duplicates = l.duplicates, .conflicts = l.conflicts, .ground = l.log_ctx, .on_board = l.on_board,
	};
	grd_log_id_hex(l.log_id, l.log_id_len, ret_log->log_id);
	return 0;
}

bool grd_receiver_repairs(const grd_receiver_t *rc, uint64_t *ret_asked)
{
	*ret_asked = rc->repair_asked;
	return rc->repair_db != NULL;
}

grd_receiver_t *grd_receiver_free(grd_receiver_t *rc)
{
	if (!rc)
		return NULL;
	if (rc->started)
		grd_receiver_stop(rc);
	grd_free(&rc->g); /* the ground logs, the database */
	grd_text_free(&rc->g);
	upl_recv_free(rc->r);
	grd_ledger_free(rc->ledger);
	grd_db_free(rc->repair_db);
	if (rc->cfg.output && rc->out && rc->out != rc->cfg.out)
		fclose(rc->out);
	free(rc);
	return NULL;
}
