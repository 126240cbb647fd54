/* SPDX-License-Identifier: MIT */
/*
 * run-runner.c - a daemon of `railmon run` started and stopped, SIGHUP's
 * reload, and the hardware watchdog opened.
 *
 * A reload validates the new board file completely first; only then is
 * the running daemon stopped (its rings drained, its last Batch closed
 * and synced) and a new one started on the same log, so sequence numbers
 * continue and nothing confirmed is lost.  A pushed board file
 * (run-rconf.c) is started the same way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "basic/clock.h"
#include "cli.h"
#include "cli/run-runner.h"
#include "cli/run-say.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "pipeline/notify.h"
#include "pipeline/runner.h"
#include "pipeline/statserver.h"

/* Create and start a daemon for rn->cfg; with a stat socket beside it. */
int cli_runner_start(struct runner *rn, uint64_t reloaded_hash)
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
	cli_run_uplink_start_warnings(rn);
	if (rn->no_service) {
		/* a replay is a command: no stat socket, no watchdogs, no bus
		   load; what its DBC's load accepted is still said */
		for (size_t b = 0; b < rn->cfg->nbuses; b++)
			cli_run_dbc_warnings(rn, b, pl_daemon_dbc(rn->d, b));
		return 0;
	}
	cli_run_load_warnings(rn);
	if (rn->cfg->stat_socket[0])
		snprintf(sock, sizeof(sock), "%s", rn->cfg->stat_socket);
	else
		snprintf(sock, sizeof(sock), "%s/railmon.sock", pl_daemon_data_dir(rn->d));
	r = pl_stat_server_start(rn->d, sock, &rn->stat);
	if (r < 0)
		fprintf(stderr, "railmon %s: warning: no stat socket %s: %s\n", rn->cmd, sock, strerror(-r));
	return 0;
}

void cli_runner_stop(struct runner *rn)
{
	struct pl_daemon_stats st;

	rn->stat = pl_stat_server_free(rn->stat);
	if (!rn->d)
		return;
	pl_daemon_stop(rn->d);
	cli_runner_faults(rn, basic_mono_ns(), true); /* what the last minute held */
	cli_run_print_status(rn);
	pl_daemon_stats(rn->d, &st);
	pl_run_totals_add(&rn->totals, st.replay_skipped, st.replay_error, st.log_dropped, st.log_unreported,
	                  st.log_error);
	cli_runner_holds_verdict(rn);
	rn->refuse.seen = 0;
	rn->d = pl_daemon_free(rn->d);
}

/* SIGHUP: swap in the new board file only if it is valid and starts. */
void cli_runner_reload(struct runner *rn)
{
	struct conf_board *next, *prev = rn->cfg;
	char err[CONF_ERR_MAX];

	cli_reload_requested = 0;
	if (conf_load(prev->path, &next, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: reload refused, keeping the running configuration: %s\n", rn->cmd, err);
		return;
	}
	pl_notify("RELOADING=1");
	cli_runner_stop(rn);
	rn->cfg = next;
	if (cli_runner_start(rn, next->hash) < 0) {
		/* The new file parsed but does not start (a device missing):
		   go back to what worked rather than stop recording. */
		fprintf(stderr, "railmon %s: reload failed, restarting with the previous configuration\n", rn->cmd);
		rn->cfg = prev;
		conf_free(next);
		if (cli_runner_start(rn, 0) < 0)
			return;
	} else {
		if (prev != rn->orig)
			conf_free(prev);
		fprintf(stderr, "railmon %s: reloaded %s\n", rn->cmd, next->path);
	}
	pl_notify("READY=1");
}

void cli_runner_watchdog_setup(struct runner *rn)
{
	int r = pl_watchdogs_open(&rn->dogs, rn->cfg->hw_watchdog, (int)rn->cfg->hw_watchdog_timeout_s,
	                          basic_mono_ns());

	if (r < 0)
		fprintf(stderr, "railmon %s: warning: hardware watchdog %s: %s\n", rn->cmd, rn->cfg->hw_watchdog,
		        strerror(-r));
}
