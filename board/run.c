/* SPDX-License-Identifier: MIT */
/*
 * run.c - the daemon's life: start, status, SIGHUP reload, watchdogs, stop.
 *
 * The main thread only supervises: the pipeline runs on the daemon's own
 * threads.  A reload validates the new board file completely first; only
 * then is the running daemon stopped (its rings drained, its last Batch
 * closed and synced) and a new one started on the same log, so sequence
 * numbers continue and nothing confirmed is lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "notify.h"
#include "stat.h"

#define STATUS_PERIOD_NS (60 * 1000000000ll)
#define ALIVE_NS (2 * 1000000000ll) /* collector ticks every 20 ms */

struct runner {
	const char *cmd;
	struct board_cfg *cfg;
	struct board_cfg *orig;    /* the caller's; never freed here */
	struct board_daemon_opts opts;
	bool no_service;
	struct board_daemon *d;
	struct board_stat_server *stat;
	int hwdog;
	int64_t dog_next, dog_period;
	uint64_t replay_skipped;   /* over every daemon of this run (reloads) */
	int replay_error;
	/* The log refusing records is said loudly, not only counted. */
	uint64_t refused_before;   /* by the daemons before a reload */
	uint64_t unreported;       /* refused, and in no event on disk */
	uint64_t seen_refused;     /* the current daemon's count at the last look */
	int log_error;
	bool refusing;
	int64_t refuse_said_ns, refuse_last_ns;
};

#define REFUSE_REPEAT_NS (10 * 1000000000ll) /* while refusing, say so this often */
#define REFUSE_QUIET_NS (2 * 1000000000ll)   /* no refusal for this long: recovered? */

static void print_status(struct runner *rn)
{
	struct board_daemon_stats st;
	char status[256];

	board_daemon_stats(rn->d, &st);
	fprintf(stderr, "railmon: %" PRIu64 " records stored (seq %" PRIu64 "..%" PRIu64 "), %" PRIu64
	        " ring drops, %" PRIu64 " refused by the log;", st.records, st.first_seq,
	        st.next_seq ? st.next_seq - 1 : 0, st.ring_drops, st.log_dropped);
	for (size_t b = 0; b < rn->cfg->nbuses; b++)
		fprintf(stderr, " %s: %" PRIu64 " in, %" PRIu64 " errors;", rn->cfg->buses[b].name, st.bus_rx[b],
		        st.bus_errors[b]);
	fputc('\n', stderr);
	snprintf(status, sizeof(status), "STATUS=%" PRIu64 " records stored, %" PRIu64 " ring drops, %" PRIu64
	         " refused by the log", st.records, st.ring_drops, st.log_dropped);
	board_notify(status);
}

/* Create and start a daemon for rn->cfg; with a stat socket beside it. */
static int runner_start(struct runner *rn, uint64_t reloaded_hash)
{
	struct board_daemon_opts o = rn->opts;
	char err[BOARD_ERR_MAX], warn[256], sock[BUS_PATH_MAX + 16];
	int r;

	o.reloaded_hash = reloaded_hash;
	r = board_daemon_new(rn->cfg, &o, &rn->d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon %s: %s\n", rn->cmd, err);
		return r;
	}
	r = board_daemon_start(rn->d, warn, sizeof(warn));
	if (r < 0) {
		fprintf(stderr, "railmon %s: cannot start: %s\n", rn->cmd, strerror(-r));
		rn->d = board_daemon_free(rn->d);
		return r;
	}
	if (warn[0])
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, warn);
	if (board_daemon_log_warning(rn->d)[0])
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, board_daemon_log_warning(rn->d));
	if (rn->cfg->uplink.enabled && rn->cfg->uplink.tls_insecure)
		fprintf(stderr, "railmon %s: WARNING: [uplink] tls_insecure = true: the broker's certificate is NOT verified\n",
		        rn->cmd);
	fprintf(stderr, "railmon %s: vehicle %s, %zu buses, config %016" PRIx64 ", log in %s\n", rn->cmd,
	        rn->cfg->vehicle, rn->cfg->nbuses, rn->cfg->hash, board_daemon_data_dir(rn->d));
	if (rn->no_service)
		return 0; /* a replay is a command: no stat socket, no watchdogs */
	if (rn->cfg->stat_socket[0])
		snprintf(sock, sizeof(sock), "%s", rn->cfg->stat_socket);
	else
		snprintf(sock, sizeof(sock), "%s/railmon.sock", board_daemon_data_dir(rn->d));
	r = board_stat_server_start(rn->d, sock, &rn->stat);
	if (r < 0)
		fprintf(stderr, "railmon %s: warning: no stat socket %s: %s\n", rn->cmd, sock, strerror(-r));
	return 0;
}

/*
 * Watch the log's refusals (every loop, 20 ms): the first one is said at
 * once on stderr (the journal, under systemd) and in the service status,
 * again every 10 s while it goes on, and the recovery once the log has
 * written the events for them.  A daemon must never store nothing for
 * minutes without saying so.
 */
static void runner_log_watch(struct runner *rn, int64_t now)
{
	struct board_daemon_stats st;
	char status[256];

	if (!rn->d || board_daemon_stats(rn->d, &st) < 0)
		return;
	if (st.log_error)
		rn->log_error = st.log_error;
	if (st.log_dropped > rn->seen_refused) {
		rn->seen_refused = st.log_dropped;
		rn->refuse_last_ns = now;
		if (rn->refusing && now < rn->refuse_said_ns + REFUSE_REPEAT_NS)
			return;
		rn->refusing = true;
		rn->refuse_said_ns = now;
		fprintf(stderr, "railmon %s: THE LOG IS REFUSING RECORDS (%s): %" PRIu64 " refused so far; they are counted "
		        "and written as one event once the log accepts records again\n", rn->cmd,
		        st.log_error ? strerror(-st.log_error) : "error", rn->refused_before + st.log_dropped);
		snprintf(status, sizeof(status), "STATUS=the log is refusing records (%s): %" PRIu64 " refused",
		         st.log_error ? strerror(-st.log_error) : "error", rn->refused_before + st.log_dropped);
		board_notify(status);
	} else if (rn->refusing && now - rn->refuse_last_ns >= REFUSE_QUIET_NS && !st.log_unreported) {
		rn->refusing = false;
		fprintf(stderr, "railmon %s: the log takes records again; %" PRIu64 " were refused, counted in its "
		        "LOG_DROPPED events\n", rn->cmd, rn->refused_before + st.log_dropped);
		board_notify("STATUS=the log takes records again");
	}
}

static void runner_stop(struct runner *rn)
{
	struct board_daemon_stats st;

	rn->stat = board_stat_server_free(rn->stat);
	if (!rn->d)
		return;
	board_daemon_stop(rn->d);
	print_status(rn);
	board_daemon_stats(rn->d, &st);
	rn->replay_skipped += st.replay_skipped;
	if (st.replay_error)
		rn->replay_error = st.replay_error;
	rn->refused_before += st.log_dropped;
	rn->unreported += st.log_unreported;
	rn->seen_refused = 0;
	if (st.log_error)
		rn->log_error = st.log_error;
	rn->d = board_daemon_free(rn->d);
}

/* The exit status says whether the run kept everything: a replay that
   skipped parts of its source log, or stopped early, is not a success. */
static int runner_verdict(const struct runner *rn, int rc)
{
	if (rn->refused_before) {
		/* A recorder that lost records did not succeed. */
		fprintf(stderr, "railmon %s: %" PRIu64 " records were refused by the log (%s)\n", rn->cmd,
		        rn->refused_before, rn->log_error ? strerror(-rn->log_error) : "see above");
		if (rn->unreported)
			fprintf(stderr, "railmon %s: %" PRIu64 " of them are in no LOG_DROPPED event: the log still refused "
			        "records at the stop, so only this message says so\n", rn->cmd, rn->unreported);
		rc = 1;
	}
	if (rn->replay_error) {
		fprintf(stderr, "railmon %s: the source log could not be read to its end: %s\n", rn->cmd,
		        strerror(-rn->replay_error));
		rc = 1;
	}
	if (rn->replay_skipped) {
		fprintf(stderr, "railmon %s: %" PRIu64 " unreadable part%s of the source log skipped (see above)\n",
		        rn->cmd, rn->replay_skipped, rn->replay_skipped == 1 ? "" : "s");
		rc = 1;
	}
	return rc;
}

/* SIGHUP: swap in the new board file only if it is valid and starts. */
static void runner_reload(struct runner *rn)
{
	struct board_cfg *next, *prev = rn->cfg;
	char err[BOARD_ERR_MAX];

	board_reload_requested = 0;
	if (board_cfg_load(prev->path, &next, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: reload refused, keeping the running configuration: %s\n", rn->cmd, err);
		return;
	}
	board_notify("RELOADING=1");
	runner_stop(rn);
	rn->cfg = next;
	if (runner_start(rn, next->hash) < 0) {
		/* The new file parsed but does not start (a device missing):
		   go back to what worked rather than stop recording. */
		fprintf(stderr, "railmon %s: reload failed, restarting with the previous configuration\n", rn->cmd);
		rn->cfg = prev;
		board_cfg_free(next);
		if (runner_start(rn, 0) < 0)
			return;
	} else {
		if (prev != rn->orig)
			board_cfg_free(prev);
		fprintf(stderr, "railmon %s: reloaded %s\n", rn->cmd, next->path);
	}
	board_notify("READY=1");
}

/* Kick both watchdogs, but only while the collector is ticking: a wedged
   pipeline must let them fire. */
static void runner_watchdogs(struct runner *rn, int64_t now)
{
	if (!rn->dog_period || now < rn->dog_next || !rn->d)
		return;
	rn->dog_next = now + rn->dog_period;
	if (now - board_daemon_heartbeat(rn->d) > ALIVE_NS)
		return;
	if (board_notify_watchdog_usec())
		board_notify("WATCHDOG=1");
	if (rn->hwdog >= 0)
		board_hwdog_kick(rn->hwdog);
}

static void runner_watchdog_setup(struct runner *rn)
{
	uint64_t usec = board_notify_watchdog_usec();
	int64_t period = usec ? (int64_t)usec * 1000 / 2 : 0;
	int r;

	rn->hwdog = -1;
	if (rn->cfg->hw_watchdog[0]) {
		r = board_hwdog_open(rn->cfg->hw_watchdog, (int)rn->cfg->hw_watchdog_timeout_s, &rn->hwdog);
		if (r < 0)
			fprintf(stderr, "railmon %s: warning: hardware watchdog %s: %s\n", rn->cmd, rn->cfg->hw_watchdog,
			        strerror(-r));
		else if (!period || period > 1000000000ll)
			period = 1000000000ll; /* well inside any driver's timeout */
	}
	rn->dog_period = period;
	rn->dog_next = acq_mono_ns();
}

int board_run_daemon(const char *cmd, struct board_cfg *cfg, const struct board_daemon_opts *opts,
                     double duration_s, bool until_sources_done)
{
	struct runner rn = { .cmd = cmd, .cfg = cfg, .orig = cfg, .opts = *opts, .hwdog = -1,
	                     .no_service = until_sources_done };
	int rc = 0;
	int64_t t0, next_status;

	board_install_signals();
	if (runner_start(&rn, 0) < 0)
		return 1;
	if (!rn.no_service)
		runner_watchdog_setup(&rn);
	board_notify("READY=1");
	t0 = acq_mono_ns();
	next_status = t0 + STATUS_PERIOD_NS;
	while (!board_stop_requested) {
		if (!rn.d) {
			rc = 1; /* a reload and the fallback both failed */
			break;
		}
		int64_t now = acq_mono_ns();
		if (duration_s > 0 && now - t0 >= (int64_t)(duration_s * 1e9))
			break;
		if (until_sources_done && board_daemon_sources_done(rn.d))
			break;
		if (board_reload_requested && !until_sources_done)
			runner_reload(&rn);
		runner_watchdogs(&rn, now);
		runner_log_watch(&rn, now);
		if (!until_sources_done && now >= next_status) {
			print_status(&rn);
			next_status = now + STATUS_PERIOD_NS;
		}
		usleep(20000);
	}
	board_notify("STOPPING=1");
	runner_stop(&rn);
	if (rn.hwdog >= 0)
		board_hwdog_close(rn.hwdog, 1);
	fprintf(stderr, "railmon %s: stopped after %.2f s\n", cmd, (double)(acq_mono_ns() - t0) / 1e9);
	if (rn.cfg != rn.orig)
		board_cfg_free(rn.cfg);
	return runner_verdict(&rn, rc);
}
