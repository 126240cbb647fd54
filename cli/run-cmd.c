/* SPDX-License-Identifier: MIT */
/*
 * run-cmd.c - `railmon run`, the daemon's life: start, status, SIGHUP reload, watchdogs, stop.
 *
 * The main thread only supervises: the pipeline runs on the daemon's own
 * threads.  A reload validates the new board file completely first; only
 * then is the running daemon stopped (its rings drained, its last Batch
 * closed and synced) and a new one started on the same log, so sequence
 * numbers continue and nothing confirmed is lost.  `run`'s options are
 * parsed at the end of this file (cli_cmd_run); replay runs its daemon
 * through cli_run_daemon too.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "cli/check-plan.h"
#include "cli.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "uplink/spb-pub.h"
#include "pipeline/evidence.h"
#include "pipeline/faults.h"
#include "pipeline/logdir.h"
#include "pipeline/notify.h"
#include "pipeline/rconf-install.h"
#include "pipeline/runner.h"
#include "cli/progress.h"
#include "cli/run-say.h"
#include "pipeline/statserver.h"
#include "storage/stor.h"
#include "uplink/forward.h"
#include "basic/clock.h"
#include "basic/escape.h"
#include "evidence/evd.h"

#define STATUS_PERIOD_NS (60 * 1000000000ll)
/* The main loop's round: the watchdogs, the status, the faults and the
   log's refusals all work on second scales, and a signal ends the wait at
   once, so 4 wakeups/s instead of 50 on an idle board (issue 12).  A
   replay polls for its sources' end every 20 ms, or a short replay would
   end up to a round late. */
#define ROUND_NS (250 * BASIC_NS_PER_MS)
#define ROUND_REPLAY_NS (20 * BASIC_NS_PER_MS)

/* A pushed board must keep its collector running (ticking: the pipeline's
   heartbeat, pl_daemon_heartbeat) through its first 30 s, or it goes back
   to the previous files (issue 32): a board that starts but records
   nothing is no better than one that does not start.  The tests set
   RCONF_PROBATION_ENV (ms) not to wait 30 s. */
#define RCONF_PROBATION_NS (30 * BASIC_NS_PER_SEC)
#define RCONF_PROBATION_ENV "RAILMON_CONFIG_PROBATION_MS"

/* The ground's last signed board file (issue 32): the forwarder's thread
   leaves it here, the main thread takes it between rounds, so a change
   never runs on the thread it stops. */
struct rconf_box {
	pthread_mutex_t mu;
	uint8_t *buf;               /* NULL: nothing waiting */
	size_t len;
	uint8_t digest[EVD_HASH_LEN]; /* of the message as it came, even too large */
};

/* A pushed board on probation: what rolling it back needs. */
struct rconf_trial {
	struct evd_rconf *m;        /* NULL: none on probation */
	uint8_t *buf;               /* m's file names and data point into it */
	struct conf_board *prev;    /* the board it replaced */
	int64_t until;              /* monotonic: applied if still running then */
	char data[BUS_PATH_MAX];    /* the log directory its config.trial is in (the
	                               new board may name another) */
};

struct runner {
	const char *cmd;
	struct rconf_box rconf;
	struct rconf_trial trial;
	int64_t probation_ns;
	/* The last refused message: the broker sends a retained one again at
	   each connect, said once (not a line and a status each time). */
	bool refused_any;
	uint8_t refused_digest[EVD_HASH_LEN];
	struct conf_board *cfg;
	struct conf_board *orig;    /* the caller's; never freed here */
	struct pl_daemon_opts opts;
	bool no_service;
	struct pl_daemon *d;
	struct pl_stat_server *stat;
	bool started;              /* a daemon ran before: this is a restart */
	bool strict;               /* this start must open every bus (a pushed board) */
	char start_err[CONF_ERR_MAX + 32]; /* why the last start failed */
	struct pl_watchdogs dogs;
	struct pl_uplink_watch up;
	char broker[160];          /* mqtt[s]://host:port, for messages */
	struct pl_link_seen seen[CONF_BUSES_MAX]; /* of the running daemon */
	struct pl_fault_reporter faults;     /* what was said of its faults */
	struct pl_run_totals totals; /* over every daemon of this run (reloads) */
	/* The log refusing records is said loudly, not only counted. */
	struct pl_refuse_watch refuse; /* of the current daemon */
};

/* Acquisition never waits for the cursor: say what is wrong with it. */
static void uplink_start_warnings(struct runner *rn)
{
	struct upl_forward_stats st;
	struct pl_daemon_stats ds;

	struct upl_spb_stats sp;

	if (pl_daemon_sparkplug_stats(rn->d, &sp) == 0)
		cli_spb_start_warning(stderr, rn->cmd, pl_daemon_data_dir(rn->d), &sp);
	if (pl_daemon_uplink_stats(rn->d, &st) < 0 || !st.cursor_damage)
		return;
	pl_daemon_stats(rn->d, &ds);
	cli_uplink_cursor_warning(stderr, rn->cmd, pl_daemon_data_dir(rn->d), &st, ds.first_seq);
}

/* Connection trouble, said once when it starts, then at most once a
   minute while it lasts, and when the link is back. */
static void uplink_watch(struct runner *rn, int64_t now)
{
	struct upl_forward_stats st;
	struct pl_uplink_news news;

	if (!rn->d || pl_daemon_uplink_stats(rn->d, &st) < 0)
		return;
	if (pl_uplink_watch_step(&rn->up, &st, now, &news))
		cli_uplink_news(stderr, rn->cmd, rn->broker, &news, st.last_error_text);
}

/* The daemon's counters as cli/run-say.h takes them. */
static struct cli_run_counts run_counts(const struct pl_daemon_stats *st)
{
	return (struct cli_run_counts){ .records = st->records, .batches = st->batches, .first_seq = st->first_seq,
	                                .next_seq = st->next_seq, .ring_drops = st->ring_drops,
	                                .log_dropped = st->log_dropped, .bus_rx = st->bus_rx,
	                                .bus_errors = st->bus_errors };
}

static void print_status(struct runner *rn)
{
	struct pl_daemon_stats st;
	struct upl_forward_stats up;
	struct upl_spb_stats sp;
	struct acq_link_state links[CONF_BUSES_MAX] = { 0 };
	struct cli_run_counts c;
	char status[256];

	pl_daemon_stats(rn->d, &st);
	c = run_counts(&st);
	for (size_t b = 0; b < rn->cfg->nbuses; b++)
		pl_daemon_bus_link(rn->d, b, &links[b]);
	cli_run_status(stderr, rn->cfg, &c, links);
	/* the uplink's part of the summary: what is still to be sent, and why */
	if (pl_daemon_uplink_stats(rn->d, &up) >= 0)
		cli_uplink_status(stderr, rn->broker, &up, st.next_seq);
	if (pl_daemon_sparkplug_stats(rn->d, &sp) == 0) {
		char broker[sizeof(rn->broker)];
		cli_broker_url(&rn->cfg->sparkplug.mqtt, broker, sizeof(broker));
		cli_spb_status(stderr, broker, &sp, st.next_seq);
	}
	cli_run_status_text(&c, status, sizeof(status));
	pl_notify(status);
}

/*
 * Say on stderr (the journal) when a bus's device goes away, fails to
 * reopen in a new way, and comes back; and put it in the service status.
 * At most one line per bus per second: a device that flaps is summed up
 * ("3 losses since the last message"), never a line per attempt.
 */
static void report_link(struct runner *rn, size_t b, int64_t now)
{
	struct acq_link_state l;
	char msg[BUS_PATH_MAX + 256], status[BUS_PATH_MAX + 272];
	uint64_t lost;

	if (pl_daemon_bus_link(rn->d, b, &l) < 0 || !pl_link_watch_step(&rn->seen[b], &l, now, &lost))
		return;
	cli_link_words(&rn->cfg->buses[b], &l, lost, msg, sizeof(msg));
	fprintf(stderr, "railmon %s: %s\n", rn->cmd, msg);
	snprintf(status, sizeof(status), "STATUS=%s", msg);
	pl_notify(status);
}

/* The first DBC warnings whole (file:line: what; what was done), then
   their count: a production file can have hundreds, said at every start.
   replay --dbc has no board file for check, so decode is named too. */
#define RUN_DBC_WARNINGS_SHOWN 5

static void dbc_warnings(const struct runner *rn, size_t b, const dbc_t *dbc)
{
	unsigned n = dbc_warning_count(dbc);

	for (unsigned i = 0; i < n && i < RUN_DBC_WARNINGS_SHOWN; i++)
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, dbc_warning(dbc, i));
	if (n > RUN_DBC_WARNINGS_SHOWN)
		fprintf(stderr, "railmon %s: warning: dbc %s: %u more warnings ('railmon check --board FILE' or "
		        "'railmon decode --dbc %s < /dev/null' lists them)\n", rn->cmd, rn->cfg->buses[b].can.dbc,
		        n - RUN_DBC_WARNINGS_SHOWN, rn->cfg->buses[b].can.dbc);
}

/* A bus too busy for its poll periods or its bitrate, a Modbus address in
   Modicon notation: said at every start, with the words `check` uses. */
static void load_warnings(struct runner *rn)
{
	char msg[BUS_NAME_MAX + 128], modicon[320];

	for (size_t b = 0; b < rn->cfg->nbuses; b++) {
		const struct bus_cfg *bc = &rn->cfg->buses[b];
		const dbc_t *dbc = pl_daemon_dbc(rn->d, b);

		if (cli_bus_load_warning(rn->cfg, b, dbc, msg, sizeof(msg)))
			fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, msg);
		dbc_warnings(rn, b, dbc);
		for (size_t i = 0; bc->kind == BUS_KIND_MODBUS && i < bc->mb.nchannels; i++)
			if (cli_mb_modicon_warning(&bc->mb.channels[i], modicon, sizeof(modicon)))
				fprintf(stderr, "railmon %s: warning: [modbus %s] %s\n", rn->cmd, bc->name, modicon);
	}
}

/* Create and start a daemon for rn->cfg; with a stat socket beside it. */
static int runner_start(struct runner *rn, uint64_t reloaded_hash)
{
	struct pl_daemon_opts o = rn->opts;
	char err[CONF_ERR_MAX], warn[256], sock[BUS_PATH_MAX + 16];
	size_t sent, channels;
	int r;

	o.reloaded_hash = reloaded_hash;
	/* The first start refuses a device that is not there (a wrong path is
	   said at once; the service manager restarts us).  A restart (reload,
	   or the fallback to the old file) must not stop recording the other
	   buses because one adapter is unplugged: that one starts gone.  But a
	   pushed board whose bus cannot open goes back to the previous one
	   (issue 32): no one is there to plug the adapter in. */
	o.absent_ok = rn->started && !rn->strict;
	memset(rn->seen, 0, sizeof(rn->seen)); /* a new daemon counts from 0 */
	rn->faults = (struct pl_fault_reporter){ .cmd = rn->cmd, .cfg = rn->cfg };
	r = pl_daemon_new(rn->cfg, &o, &rn->d, err, sizeof(err));
	if (r < 0) {
		snprintf(rn->start_err, sizeof(rn->start_err), "%s", err);
		fprintf(stderr, "railmon %s: %s\n", rn->cmd, err);
		return r;
	}
	if (pl_daemon_uplink_dictionary(rn->d, &sent, &channels) == 0)
		cli_uplink_dictionary(stderr, sent, channels);
	rn->faults.log_dir = pl_daemon_data_dir(rn->d); /* the holds file is named with it */
	r = pl_daemon_start(rn->d, warn, sizeof(warn));
	if (r < 0) {
		snprintf(rn->start_err, sizeof(rn->start_err), "cannot start: %s", strerror(-r));
		fprintf(stderr, "railmon %s: cannot start: %s\n", rn->cmd, strerror(-r));
		rn->d = pl_daemon_free(rn->d);
		return r;
	}
	rn->started = true;
	cli_run_started(stderr, rn->cmd, rn->cfg, pl_daemon_data_dir(rn->d), warn, pl_daemon_log_warning(rn->d));
	/* A new daemon has a new forwarder: its counters start again. */
	memset(&rn->up, 0, sizeof(rn->up));
	cli_broker_url(&rn->cfg->uplink, rn->broker, sizeof(rn->broker));
	uplink_start_warnings(rn);
	if (rn->no_service) {
		/* a replay is a command: no stat socket, no watchdogs, no bus
		   load; what its DBC's load accepted is still said */
		for (size_t b = 0; b < rn->cfg->nbuses; b++)
			dbc_warnings(rn, b, pl_daemon_dbc(rn->d, b));
		return 0;
	}
	load_warnings(rn);
	if (rn->cfg->stat_socket[0])
		snprintf(sock, sizeof(sock), "%s", rn->cfg->stat_socket);
	else
		snprintf(sock, sizeof(sock), "%s/railmon.sock", pl_daemon_data_dir(rn->d));
	r = pl_stat_server_start(rn->d, sock, &rn->stat);
	if (r < 0)
		fprintf(stderr, "railmon %s: warning: no stat socket %s: %s\n", rn->cmd, sock, strerror(-r));
	return 0;
}

/* Watch the log's refusals (every round, 250 ms; pipeline/runner.h): a
   daemon must never store nothing for minutes without saying so. */
static void runner_log_watch(struct runner *rn, int64_t now)
{
	struct pl_daemon_stats st;
	char status[256];

	if (!rn->d || pl_daemon_stats(rn->d, &st) < 0)
		return;
	if (st.log_error)
		rn->totals.log_error = st.log_error;
	switch (pl_refuse_watch_step(&rn->refuse, st.log_dropped, st.log_unreported, now)) {
	case PL_REFUSE_REFUSING:
		cli_log_refusing(stderr, rn->cmd, st.log_error, rn->totals.refused + st.log_dropped, status,
		                 sizeof(status));
		pl_notify(status);
		break;
	case PL_REFUSE_RECOVERED:
		cli_log_recovered(stderr, rn->cmd, rn->totals.refused + st.log_dropped);
		pl_notify("STATUS=the log takes records again");
		break;
	default:
		break;
	}
}

/* The faults the sink noted (faults.h): the first at once, then a summary
   a minute, on stderr and in the service status. */
static void runner_faults(struct runner *rn, int64_t now, bool final)
{
	char last[600], status[620];

	if (!rn->d)
		return;
	last[0] = 0;
	if (pl_faults_report(pl_daemon_faults(rn->d), &rn->faults, now, final, stderr, last, sizeof(last)) > 0) {
		snprintf(status, sizeof(status), "STATUS=%s", last);
		pl_notify(status);
	}
}

/* A holds file that could not be read during the run (retention deleted
   nothing while it was so) makes the exit status 1, and whether it still
   cannot be read at the stop is said with it. */
static void runner_holds_verdict(struct runner *rn)
{
	const struct pl_fault_slot *s = &pl_daemon_faults(rn->d)->slot[PL_FAULT_SOURCES - 1][PL_FAULT_HOLD];
	struct stor_holds *h;
	unsigned line = 0;

	if (!atomic_load_explicit(&s->count, memory_order_acquire)) {
		rn->totals.hold_error_now = 0; /* readable for this daemon's life */
		return;
	}
	rn->totals.hold_error = (int)atomic_load_explicit(&s->arg, memory_order_relaxed);
	rn->totals.hold_error_line = atomic_load_explicit(&s->detail, memory_order_relaxed);
	snprintf(rn->totals.holds_dir, sizeof(rn->totals.holds_dir), "%s", pl_daemon_data_dir(rn->d));
	h = malloc(sizeof(*h));
	rn->totals.hold_error_now = h ? stor_holds_read(rn->totals.holds_dir, h, &line) : -ENOMEM;
	if (rn->totals.hold_error_now == -EBADMSG)
		rn->totals.hold_error_line = line;
	free(h);
}

static void runner_stop(struct runner *rn)
{
	struct pl_daemon_stats st;

	rn->stat = pl_stat_server_free(rn->stat);
	if (!rn->d)
		return;
	pl_daemon_stop(rn->d);
	runner_faults(rn, basic_mono_ns(), true); /* what the last minute held */
	print_status(rn);
	pl_daemon_stats(rn->d, &st);
	pl_run_totals_add(&rn->totals, st.replay_skipped, st.replay_error, st.log_dropped, st.log_unreported,
	                  st.log_error);
	runner_holds_verdict(rn);
	rn->refuse.seen = 0;
	rn->d = pl_daemon_free(rn->d);
}

/* The forwarder's thread: keep only the newest (a newer version replaces
   one not yet taken; the version check orders them anyway). */
static void rconf_arrived(void *ctx, const void *payload, size_t len)
{
	struct rconf_box *box = ctx;
	uint8_t *copy = len <= EVD_RCONF_MAX ? malloc(len ? len : 1) : NULL;

	if (copy)
		memcpy(copy, payload, len);
	pthread_mutex_lock(&box->mu);
	evd_digest(payload, len, box->digest);
	free(box->buf);
	box->buf = copy;
	box->len = len; /* no copy: too large or no memory, refused as such */
	pthread_mutex_unlock(&box->mu);
}

/* Write m's files under dir (CONTENT as sent, HASH as a link to the file
   on board) so that the new board file can be loaded and checked there
   with nothing of the running one changed. */
static int rconf_scratch(const char *dir, const char *board_dir, const struct evd_rconf *m, char *why, size_t whylen)
{
	char path[BUS_PATH_MAX * 2], target[BUS_PATH_MAX * 2];

	for (size_t i = 0; i < m->nfiles; i++) {
		const struct evd_rconf_file *f = &m->files[i];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
			*s = 0;
			(void)mkdir(path, 0700); /* an error shows at the fopen below */
			*s = '/';
		}
		if (f->kind == EVD_RCONF_HASH) {
			snprintf(target, sizeof(target), "%s/%s", board_dir, f->name);
			if (symlink(target, path) < 0)
				return snprintf(why, whylen, "%s: %s", path, strerror(errno)), -errno;
			continue;
		}
		fp = fopen(path, "wb"); /* a file two buses name comes twice */
		if (!fp || fwrite(f->data, 1, f->len, fp) != f->len || fclose(fp) != 0) {
			int e = errno ? errno : EIO;
			snprintf(why, whylen, "cannot write %s to check it: %s", path, strerror(e));
			return -e;
		}
	}
	return 0;
}

static void rconf_scratch_remove(const char *dir, const struct evd_rconf *m)
{
	char path[BUS_PATH_MAX * 2];

	for (size_t i = m->nfiles; i-- > 0;) {
		snprintf(path, sizeof(path), "%s/%s", dir, m->files[i].name);
		(void)unlink(path);
		for (char *s = strrchr(path, '/'); s && s > path + strlen(dir); s = strrchr(path, '/')) {
			*s = 0;
			(void)rmdir(path); /* only empties go; the others' later */
		}
	}
	(void)rmdir(dir);
}

/* What `check` says of the new board, run on it where it was written:
   0, or -EINVAL with its first complaint in why. */
static int rconf_check(struct runner *rn, const char *board, const char *data, char *why, size_t whylen)
{
	struct conf_board *next;
	struct cli_check_key key = { 0 };
	uint8_t secret[EVD_SECRET_LEN];
	char err[CONF_ERR_MAX], *out = NULL, *bad = NULL;
	size_t outlen = 0, badlen = 0;
	FILE *o, *e;
	int r;

	if (conf_load(board, &next, err, sizeof(err)) < 0)
		return snprintf(why, whylen, "fails check: %s", err), -EINVAL;
	if (strcmp(next->vehicle, rn->cfg->vehicle) != 0) {
		snprintf(why, whylen, "fails check: the board is for vehicle %s, this is %s", next->vehicle,
		         rn->cfg->vehicle);
		conf_free(next);
		return -EINVAL;
	}
	key.r = pl_evidence_key(next, secret, err, sizeof(err));
	key.err = err;
	if (key.r > 0)
		evd_key_public_of(secret, key.public_key);
	memset(secret, 0, sizeof(secret));
	o = open_memstream(&out, &outlen);
	e = open_memstream(&bad, &badlen);
	r = o && e ? cli_check_board(o, e, next, data, &key) : -ENOMEM;
	if (o)
		fclose(o);
	if (e)
		fclose(e);
	if (r != 0) {
		const char *s = bad && bad[0] ? bad : "check refused it", *p = strstr(s, "railmon check: ");
		size_t n;

		s = p ? p + strlen("railmon check: ") : s;
		n = strcspn(s, "\n");
		snprintf(why, whylen, "fails check: %.*s", (int)n, s);
		r = -EINVAL;
	}
	free(out);
	free(bad);
	conf_free(next);
	return r;
}

/* Each outcome on stderr (the journal) and, retained, to the ground on
   railmon/<vehicle>/config/status (docs/remote-config.md). */
static void rconf_said(struct runner *rn, uint64_t version, const char *outcome, uint32_t code, const char *why)
{
	char *json = NULL;
	size_t len = 0;
	FILE *f;
	int r = -ENOMEM;
	uint32_t ev = !strcmp(outcome, "refused") ? ACQ_EV_CONFIG_REFUSED
	              : !strcmp(outcome, "rolled back") ? ACQ_EV_CONFIG_ROLLED_BACK : 0;

	/* in the log too (an applied one's restart records CONFIG_RELOAD) */
	if (ev && rn->d && pl_daemon_event(rn->d, ev, (int64_t)version, code) < 0)
		fprintf(stderr, "railmon %s: warning: remote configuration event not recorded: the event ring is full\n",
		        rn->cmd);

	fprintf(stderr, "railmon %s: remote configuration version %llu %s%s%s\n", rn->cmd, (unsigned long long)version,
	        outcome, why[0] ? ": " : "", why);
	if ((f = open_memstream(&json, &len))) {
		fprintf(f, "{\"version\":%llu,\"outcome\":\"%s\",\"why\":", (unsigned long long)version, outcome);
		basic_json_string(f, why);
		fputs("}", f);
		if (fclose(f) == 0)
			r = rn->d ? pl_daemon_config_status(rn->d, json) : -ENOTCONN;
	}
	if (r < 0 && r != -ENOTCONN)
		fprintf(stderr, "railmon %s: warning: remote configuration status not sent: %s\n", rn->cmd, strerror(-r));
	free(json);
}

static int runner_start(struct runner *rn, uint64_t reloaded_hash);
static void runner_stop(struct runner *rn);

/* Refused: said (line, status, event) and remembered, so that the same
   message again (the broker's retained one at each reconnect) is passed
   over in silence. */
static void rconf_refused(struct runner *rn, const uint8_t digest[EVD_HASH_LEN], uint64_t version, uint32_t code,
                          const char *why)
{
	rconf_said(rn, version, "refused", code, why);
	memcpy(rn->refused_digest, digest, EVD_HASH_LEN);
	rn->refused_any = true;
}

/* evd_rconf_verify's refusal as the CONFIG_REFUSED event's detail */
static uint32_t rconf_verify_why(int r)
{
	switch (r) {
	case -EMSGSIZE: return ACQ_CONFIG_TOO_LARGE;
	case -EKEYREJECTED: return ACQ_CONFIG_BAD_SIGNATURE;
	case -EXDEV: return ACQ_CONFIG_OTHER_VEHICLE;
	case -ESTALE: return ACQ_CONFIG_OLD_VERSION;
	default: return ACQ_CONFIG_MALFORMED;
	}
}

/* The probation's end, whichever: data/config.trial goes. */
static void rconf_trial_clear(struct runner *rn, const char *data)
{
	int r = pl_rconf_trial_clear(data);

	if (r < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.trial: %s\n", rn->cmd, data, strerror(-r));
}

static void rconf_trial_end(struct rconf_trial *t)
{
	free(t->m);
	free(t->buf);
	*t = (struct rconf_trial){ 0 };
}

/* Back to the previous files and board (the new one rn->cfg failed: why),
   started again; said by the previous board's forwarder. */
static void rconf_roll_back(struct runner *rn, const char *data, struct conf_board *prev, const struct evd_rconf *m,
                            uint32_t code, const char *why)
{
	char msg[CONF_ERR_MAX + 256];
	int r;

	runner_stop(rn); /* a daemon that did not start is stopped already */
	r = pl_rconf_rollback(prev->path, m);
	rconf_trial_clear(rn, data);
	snprintf(msg, sizeof(msg), "%s%s", why, r < 0 ? "; putting the previous files back failed too" : "");
	if (rn->cfg != prev) {
		conf_free(rn->cfg);
		rn->cfg = prev;
	}
	(void)runner_start(rn, 0);
	rconf_said(rn, m->version, "rolled back", code, msg);
}

/* The pushed board on probation, each round: its collector must tick
   (the heartbeat within PL_ALIVE_NS, as the watchdogs want it) until the
   probation ends; then it is applied. */
static void runner_trial(struct runner *rn, int64_t now, bool final)
{
	struct rconf_trial *t = &rn->trial;
	char why[96];
	int64_t beat;

	if (!t->m || !rn->d)
		return;
	beat = pl_daemon_heartbeat(rn->d);
	if (now - beat > PL_ALIVE_NS) {
		snprintf(why, sizeof(why), "the new board's collector did not run for %.1f s within %.1f s of its start",
		         (double)(now - beat) / 1e9, (double)rn->probation_ns / 1e9);
		rconf_roll_back(rn, t->data, t->prev, t->m, ACQ_CONFIG_COLLECTOR_STOPPED, why);
	} else if (now >= t->until || final) {
		/* a clean stop with the collector running: it ran well so far */
		if (t->prev != rn->orig)
			conf_free(t->prev);
		rconf_trial_clear(rn, t->data);
		rconf_said(rn, t->m->version, "applied", 0, "");
	} else {
		return;
	}
	pl_notify("READY=1");
	rconf_trial_end(t);
}

/* A signed board file from the ground (issue 32, docs/remote-config.md):
   verified, checked as `check` does, put in place and started as SIGHUP
   does; back to the previous files if it does not start or its collector
   does not keep running through its probation (runner_trial). */
static void runner_rconf(struct runner *rn)
{
	struct evd_rconf *m = NULL;
	uint8_t pk[EVD_PUBLIC_LEN], *buf, digest[EVD_HASH_LEN];
	char why[CONF_ERR_MAX + 160], data[BUS_PATH_MAX], board_dir[BUS_PATH_MAX], scratch[BUS_PATH_MAX + 32];
	char path[BUS_PATH_MAX * 2], *slash;
	struct conf_board *next, *prev = rn->cfg;
	uint64_t cur = 0;
	size_t len;
	int r;

	if (rn->trial.m)
		return; /* one at a time: the next waits for this one's probation */
	pthread_mutex_lock(&rn->rconf.mu);
	buf = rn->rconf.buf;
	len = rn->rconf.len;
	memcpy(digest, rn->rconf.digest, sizeof(digest));
	rn->rconf.buf = NULL;
	rn->rconf.len = 0;
	pthread_mutex_unlock(&rn->rconf.mu);
	if (!buf && !len)
		return;
	why[0] = 0;
	if (rn->refused_any && !memcmp(digest, rn->refused_digest, sizeof(digest)))
		goto out; /* refused already: said once */
	snprintf(data, sizeof(data), "%s", pl_daemon_data_dir(rn->d));
	snprintf(board_dir, sizeof(board_dir), "%s", prev->path);
	slash = strrchr(board_dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(board_dir, sizeof(board_dir), ".");
	m = malloc(sizeof(*m));
	if (!buf && len > EVD_RCONF_MAX) {
		snprintf(why, sizeof(why), "too large: %zu bytes, at most %u", len, EVD_RCONF_MAX);
		rconf_refused(rn, digest, 0, ACQ_CONFIG_TOO_LARGE, why);
		goto out;
	}
	if (!buf || !m) {
		rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_MEMORY, "out of memory"); /* not remembered: may pass */
		goto out;
	}
	r = pl_evidence_config_pubkey(prev, pk, why, sizeof(why));
	if (r <= 0) {
		rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_KEY, r == 0 ? "the board names no [uplink] config_pubkey" : why);
		goto out;
	}
	if ((r = pl_rconf_version_load(data, &cur)) < 0) {
		snprintf(why, sizeof(why), "%s/config.version: %s", data, strerror(-r));
		rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_KEY, why);
		goto out;
	}
	/* The broker sends the retained message again at every connect,
	   including the one of the daemon it started: the version taken is
	   nothing to say again. */
	if (evd_rconf_parse(buf, len, m, why, sizeof(why)) == 0 && m->version == cur)
		goto out;
	r = evd_rconf_verify(buf, len, pk, prev->vehicle, cur, m, why, sizeof(why));
	if (r < 0) {
		rconf_refused(rn, digest, r == -EBADMSG || r == -EMSGSIZE ? 0 : m->version, rconf_verify_why(r), why);
		goto out;
	}
	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(m->files[i].name, m->files[k].name))
				r = -EINVAL, snprintf(why, sizeof(why), "file %s sent twice", m->files[i].name);
	if (r < 0) {
		/* its install would take the first copy's .prev for the second */
		rconf_refused(rn, digest, m->version, ACQ_CONFIG_MALFORMED, why);
		goto out;
	}
	snprintf(scratch, sizeof(scratch), "%s/rconf.XXXXXX", data);
	if (!mkdtemp(scratch)) {
		snprintf(why, sizeof(why), "%s: %s", scratch, strerror(errno));
		rconf_said(rn, m->version, "refused", ACQ_CONFIG_NOT_INSTALLED, why); /* may pass later */
		goto out;
	}
	r = rconf_scratch(scratch, board_dir, m, why, sizeof(why));
	snprintf(path, sizeof(path), "%s/%s", scratch, m->files[0].name);
	if (r == 0)
		r = rconf_check(rn, path, rn->opts.data_dir, why, sizeof(why));
	rconf_scratch_remove(scratch, m);
	if (r < 0) {
		rconf_refused(rn, digest, m->version, ACQ_CONFIG_FAILS_CHECK, why);
		goto out;
	}
	if (pl_rconf_install(prev->path, m, why, sizeof(why)) < 0) {
		rconf_said(rn, m->version, "refused", ACQ_CONFIG_NOT_INSTALLED, why); /* may pass later */
		goto out;
	}
	/* Taken, whatever comes of starting it: a retained message that rolls
	   back is not tried again at every reconnect. */
	if ((r = pl_rconf_version_store(data, m->version)) < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.version: %s\n", rn->cmd, data, strerror(-r));
	/* on probation from here: a run killed while it starts or runs goes
	   back at its next start (rconf_trial_left) */
	if ((r = pl_rconf_trial_store(data, buf, len)) < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.trial: %s\n", rn->cmd, data, strerror(-r));
	if (conf_load(prev->path, &next, why, sizeof(why)) < 0) {
		pl_rconf_rollback(prev->path, m);
		rconf_trial_clear(rn, data);
		rconf_said(rn, m->version, "rolled back", ACQ_CONFIG_UNREADABLE, why);
		goto out;
	}
	pl_notify("RELOADING=1");
	runner_stop(rn);
	rn->cfg = next;
	rn->strict = true;
	r = runner_start(rn, next->hash);
	rn->strict = false;
	if (r == 0) {
		/* started: on probation (runner_trial) with what going back needs */
		rn->trial = (struct rconf_trial){ .m = m, .buf = buf, .prev = prev,
		                                  .until = basic_mono_ns() + rn->probation_ns };
		snprintf(rn->trial.data, sizeof(rn->trial.data), "%s", data);
		return;
	}
	snprintf(why, sizeof(why), "the new board did not start: %s", rn->start_err);
	rconf_roll_back(rn, data, prev, m, ACQ_CONFIG_DID_NOT_START, why);
	pl_notify("READY=1");
out:
	free(m);
	free(buf);
}

/* A pushed board still on probation when run was killed (config.trial
   left): back to the previous files before the first start; *ret the
   message (said once the daemon runs), NULL if none. */
static void rconf_trial_left(struct runner *rn, struct evd_rconf **ret, uint8_t **ret_buf)
{
	const char *data = pl_data_dir(rn->cfg, rn->opts.data_dir);
	struct conf_board *prev;
	struct evd_rconf *m = malloc(sizeof(*m));
	char why[CONF_ERR_MAX];
	uint8_t *buf = NULL;
	size_t len = 0;
	int r = m ? pl_rconf_trial_load(data, &buf, &len) : -ENOMEM;

	*ret = NULL;
	*ret_buf = NULL;
	if (r <= 0 || evd_rconf_parse(buf, len, m, why, sizeof(why)) < 0) {
		if (r < 0 || buf)
			fprintf(stderr, "railmon %s: warning: %s/config.trial: %s; the board file is kept as it is\n",
			        rn->cmd, data, r < 0 ? strerror(-r) : why);
		if (buf)
			rconf_trial_clear(rn, data); /* not said again at every start */
		free(m);
		free(buf);
		return;
	}
	if ((r = pl_rconf_rollback(rn->cfg->path, m)) < 0)
		fprintf(stderr, "railmon %s: warning: putting the files before remote configuration version %" PRIu64
		        " back: %s\n", rn->cmd, m->version, strerror(-r));
	else if (conf_load(rn->cfg->path, &prev, why, sizeof(why)) < 0)
		fprintf(stderr, "railmon %s: warning: the board file before remote configuration version %" PRIu64
		        ": %s\n", rn->cmd, m->version, why);
	else
		rn->cfg = prev; /* freed at the end (not the caller's) */
	rconf_trial_clear(rn, data);
	*ret = m;
	*ret_buf = buf;
}

/* RCONF_PROBATION_ENV in ms, else RCONF_PROBATION_NS */
static int64_t rconf_probation(void)
{
	const char *env = getenv(RCONF_PROBATION_ENV);
	char *end;
	long long ms;

	if (!env || !*env)
		return RCONF_PROBATION_NS;
	errno = 0;
	ms = strtoll(env, &end, 10);
	if (errno || *end || ms < 0 || ms > 3600 * 1000)
		return RCONF_PROBATION_NS;
	return ms * BASIC_NS_PER_MS;
}

/* SIGHUP: swap in the new board file only if it is valid and starts. */
static void runner_reload(struct runner *rn)
{
	struct conf_board *next, *prev = rn->cfg;
	char err[CONF_ERR_MAX];

	cli_reload_requested = 0;
	if (conf_load(prev->path, &next, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: reload refused, keeping the running configuration: %s\n", rn->cmd, err);
		return;
	}
	pl_notify("RELOADING=1");
	runner_stop(rn);
	rn->cfg = next;
	if (runner_start(rn, next->hash) < 0) {
		/* The new file parsed but does not start (a device missing):
		   go back to what worked rather than stop recording. */
		fprintf(stderr, "railmon %s: reload failed, restarting with the previous configuration\n", rn->cmd);
		rn->cfg = prev;
		conf_free(next);
		if (runner_start(rn, 0) < 0)
			return;
	} else {
		if (prev != rn->orig)
			conf_free(prev);
		fprintf(stderr, "railmon %s: reloaded %s\n", rn->cmd, next->path);
	}
	pl_notify("READY=1");
}

static void runner_watchdog_setup(struct runner *rn)
{
	int r = pl_watchdogs_open(&rn->dogs, rn->cfg->hw_watchdog, (int)rn->cfg->hw_watchdog_timeout_s,
	                          basic_mono_ns());

	if (r < 0)
		fprintf(stderr, "railmon %s: warning: hardware watchdog %s: %s\n", rn->cmd, rn->cfg->hw_watchdog,
		        strerror(-r));
}

/* Until the next round or a signal.  The signals are blocked in this
   thread before the daemon's threads start (they inherit the mask), so
   they stay pending for this wait and never interrupt a realtime thread's
   sleep. */
static void await_round(const sigset_t *sigs, int64_t ns)
{
	struct timespec ts = basic_ns_to_ts(ns > 0 ? ns : 0);
	int sig = sigtimedwait(sigs, NULL, &ts);

	if (sig == SIGHUP)
		cli_reload_requested = 1;
	else if (sig > 0)
		cli_stop_requested = 1;
}

/* How long the main thread may sleep: a round, less where the duration
   ends or the service manager's watchdog wants its kick sooner. */
static int64_t round_ns(const struct runner *rn, int64_t now, int64_t end)
{
	int64_t ns = rn->no_service ? ROUND_REPLAY_NS : ROUND_NS;

	if (rn->dogs.period && rn->dogs.period / 4 < ns)
		ns = rn->dogs.period / 4;
	if (end && end - now < ns)
		ns = end - now;
	return ns;
}

/* The progress line of a replay: the frames its buses read, or the
   records stored, from the daemon's counters. */
static void run_progress(const struct runner *rn, struct cli_progress *pg, uint64_t total)
{
	struct pl_daemon_stats ds;
	uint64_t done = 0;

	if (!pg || !rn->d || pl_daemon_stats(rn->d, &ds) < 0)
		return;
	if (pg->unit == CLI_PROGRESS_FRAMES)
		for (size_t b = 0; b < rn->cfg->nbuses; b++)
			done += ds.bus_rx[b];
	else
		done = ds.records;
	cli_progress_show(pg, total && done > total ? total : done, total);
}

int cli_run_daemon(const char *cmd, struct conf_board *cfg, const struct pl_daemon_opts *opts,
                     double duration_s, bool until_sources_done)
{
	return cli_run_daemon_progress(cmd, cfg, opts, duration_s, until_sources_done, NULL, 0);
}

int cli_run_daemon_progress(const char *cmd, struct conf_board *cfg, const struct pl_daemon_opts *opts,
                            double duration_s, bool until_sources_done, struct cli_progress *pg, uint64_t total)
{
	struct runner rn = { .cmd = cmd, .cfg = cfg, .orig = cfg, .opts = *opts, .dogs = { .hwdog = -1 },
	                     .no_service = until_sources_done,
	                     .rconf = { .mu = PTHREAD_MUTEX_INITIALIZER } };
	int rc = 0;
	int64_t t0, end, next_status;
	sigset_t sigs, old;
	struct evd_rconf *left = NULL;
	uint8_t *left_buf = NULL;

	if (!until_sources_done) { /* a replay takes no configuration */
		rn.probation_ns = rconf_probation();
		rn.opts.on_config = rconf_arrived;
		rn.opts.config_ctx = &rn.rconf;
	}
	cli_install_signals();
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	if (!until_sources_done)
		rconf_trial_left(&rn, &left, &left_buf);
	if (runner_start(&rn, 0) < 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rn.cfg != rn.orig)
			conf_free(rn.cfg);
		free(left);
		free(left_buf);
		return 1;
	}
	if (left)
		rconf_said(&rn, left->version, "rolled back", ACQ_CONFIG_STOPPED_ON_PROBATION,
		           "railmon stopped before the new board's probation ended (killed or crashed)");
	free(left);
	free(left_buf);
	if (!rn.no_service)
		runner_watchdog_setup(&rn);
	pl_notify("READY=1");
	t0 = basic_mono_ns();
	end = duration_s > 0 ? t0 + (int64_t)(duration_s * 1e9) : 0;
	next_status = t0 + STATUS_PERIOD_NS;
	while (!cli_stop_requested) {
		if (!rn.d) {
			rc = 1; /* a reload and the fallback both failed */
			break;
		}
		int64_t now = basic_mono_ns();
		run_progress(&rn, pg, total); /* first: a replay done at once still shows where it got */
		if (end && now >= end)
			break;
		if (until_sources_done && pl_daemon_sources_done(rn.d))
			break;
		/* a reload waits for a pushed board's probation to end */
		if (cli_reload_requested && !until_sources_done && !rn.trial.m)
			runner_reload(&rn);
		if (rn.d && !until_sources_done) {
			runner_trial(&rn, now, false);
			runner_rconf(&rn);
		}
		if (rn.d)
			pl_watchdogs_kick(&rn.dogs, now, pl_daemon_heartbeat(rn.d));
		uplink_watch(&rn, now);
		for (size_t b = 0; rn.d && b < rn.cfg->nbuses; b++)
			report_link(&rn, b, now);
		runner_log_watch(&rn, now);
		runner_faults(&rn, now, false);
		if (!until_sources_done && now >= next_status) {
			print_status(&rn);
			next_status = now + STATUS_PERIOD_NS;
		}
		await_round(&sigs, round_ns(&rn, basic_mono_ns(), end));
	}
	pl_notify("STOPPING=1");
	cli_progress_clear(pg);
	runner_trial(&rn, basic_mono_ns(), true);
	runner_stop(&rn);
	pl_watchdogs_close(&rn.dogs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fprintf(stderr, "railmon %s: stopped after %.2f s\n", cmd, (double)(basic_mono_ns() - t0) / 1e9);
	if (rn.cfg != rn.orig)
		conf_free(rn.cfg);
	/* stopped on probation after a failed rollback start */
	if (rn.trial.m && rn.trial.prev != rn.orig && rn.trial.prev != rn.cfg)
		conf_free(rn.trial.prev);
	rconf_trial_end(&rn.trial);
	free(rn.rconf.buf);
	return cli_run_verdict(stderr, cmd, &rn.totals, rc);
}

/* ------------------------------------------------------- the options */

static const char run_usage[] =
	"Usage: railmon run --board FILE [OPTIONS]\n"
	"Acquire every bus of the board file, log to flash, until SIGTERM or SIGINT.\n\n"
	"  -b, --board FILE   board file (required)\n"
	"  -d, --data DIR     log directory (overrides [storage] dir)\n"
	"  -t, --duration S   stop after S seconds\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon run --board /etc/railmon/board.ini\n"
	"  railmon run --board board.ini --data /tmp/try --duration 60\n";

int cli_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL;
	struct conf_board *cfg;
	double duration = 0;
	int c, r;

	/* At once, not when the daemon starts: a SIGTERM while the board and
	   its DBCs load is then a clean stop right after the start. */
	cli_install_signals();
	while ((c = getopt_long(argc, argv, "b:d:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 't':
			if (!cli_parse_seconds(optarg, &duration))
				return cli_fail("run", "--duration: expected seconds, not '%s'", optarg);
			break;
		case 'h': fputs(run_usage, stdout); return 0;
		default: return cli_see_help("run");
		}
	}
	if (optind < argc)
		return cli_fail("run", "unexpected argument '%s'", argv[optind]);
	if ((r = cli_load_board("run", board, &cfg)) != 0)
		return r;
	r = cli_run_daemon("run", cfg, &(struct pl_daemon_opts){ .data_dir = data, .lock_memory = true },
	                     duration, false);
	conf_free(cfg);
	return r;
}
