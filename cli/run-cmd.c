/* SPDX-License-Identifier: MIT */
/*
 * run-cmd.c - `railmon run`: its options, and the main loop of a daemon's
 * life (also replay's, through cli_run_daemon): start, the rounds, stop.
 *
 * The main thread only supervises: the pipeline runs on the daemon's own
 * threads.  Each round it takes a SIGHUP reload (run-runner.c), a board
 * file the ground pushed and the one on probation (run-rconf.c), kicks
 * the watchdogs and watches what the daemon must say (run-watch.c); it
 * sleeps between rounds in sigtimedwait, so a signal ends the wait at
 * once.  struct runner and the files' order: run-runner.h.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq.h"
#include "basic/clock.h"
#include "cli.h"
#include "cli/progress.h"
#include "cli/run-runner.h"
#include "cli/run-say.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "pipeline/notify.h"
#include "pipeline/runner.h"

#define STATUS_PERIOD_NS (60 * 1000000000ll)
/* The main loop's round: the watchdogs, the status, the faults and the
   log's refusals all work on second scales, and a signal ends the wait at
   once, so 4 wakeups/s instead of 50 on an idle board (issue 12).  A
   replay polls for its sources' end every 5 ms, or a short replay would
   end up to a round late (at 20 ms, 10 ms of a 0.2 s replay on average;
   a replay is no idle board). */
#define ROUND_NS (250 * BASIC_NS_PER_MS)
#define ROUND_REPLAY_NS (5 * BASIC_NS_PER_MS)

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
		rn.probation_ns = cli_rconf_probation();
		rn.opts.on_config = cli_rconf_arrived;
		rn.opts.config_ctx = &rn.rconf;
	}
	cli_install_signals();
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	if (!until_sources_done)
		cli_rconf_trial_left(&rn, &left, &left_buf);
	if (cli_runner_start(&rn, 0) < 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rn.cfg != rn.orig)
			conf_free(rn.cfg);
		free(left);
		free(left_buf);
		return 1;
	}
	if (left)
		cli_rconf_said(&rn, left->version, "rolled back", ACQ_CONFIG_STOPPED_ON_PROBATION,
		           "railmon stopped before the new board's probation ended (killed or crashed)");
	free(left);
	free(left_buf);
	if (!rn.no_service)
		cli_runner_watchdog_setup(&rn);
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
			cli_runner_reload(&rn);
		if (rn.d && !until_sources_done) {
			cli_runner_trial(&rn, now, false);
			cli_runner_rconf(&rn);
		}
		if (rn.d)
			pl_watchdogs_kick(&rn.dogs, now, pl_daemon_heartbeat(rn.d));
		cli_run_uplink_watch(&rn, now);
		for (size_t b = 0; rn.d && b < rn.cfg->nbuses; b++)
			cli_run_report_link(&rn, b, now);
		cli_runner_log_watch(&rn, now);
		cli_runner_faults(&rn, now, false);
		if (!until_sources_done && now >= next_status) {
			cli_run_print_status(&rn);
			next_status = now + STATUS_PERIOD_NS;
		}
		await_round(&sigs, round_ns(&rn, basic_mono_ns(), end));
	}
	pl_notify("STOPPING=1");
	cli_progress_clear(pg);
	cli_runner_trial(&rn, basic_mono_ns(), true);
	cli_runner_stop(&rn);
	pl_watchdogs_close(&rn.dogs);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fprintf(stderr, "railmon %s: stopped after %.2f s\n", cmd, (double)(basic_mono_ns() - t0) / 1e9);
	if (rn.cfg != rn.orig)
		conf_free(rn.cfg);
	/* stopped on probation after a failed rollback start */
	if (rn.trial.m && rn.trial.prev != rn.orig && rn.trial.prev != rn.cfg)
		conf_free(rn.trial.prev);
	cli_rconf_trial_end(&rn.trial);
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
