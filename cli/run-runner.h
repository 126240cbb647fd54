/* SPDX-License-Identifier: MIT */
/*
 * run-runner.h - what the files of `railmon run` share (private to cli/):
 * struct runner, the state of run's main thread across the daemons it
 * starts, and the functions each file gives the others.  The files, from
 * the bottom up (each uses only those before it):
 *   run-watch.c   what a running daemon is watched for and says: status,
 *                 a bus's device, the uplink, the log's refusals, faults
 *   run-runner.c  a daemon's start and stop, SIGHUP reload, the watchdogs
 *   run-rconf.c   a signed board file pushed by the ground, its probation
 *   run-cmd.c     the main loop (also replay's) and run's options
 * All of them run on the main thread only, except cli_rconf_arrived.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/bus.h"
#include "conf/config.h"
#include "dbc/dbc.h"
#include "evidence/evd.h"
#include "evidence/remote-config.h"
#include "pipeline/daemon.h"
#include "pipeline/faults.h"
#include "pipeline/runner.h"
#include "pipeline/statserver.h"

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

/* run-watch.c: each says on stderr (the journal) and in the service
   status; rn->d must be a running daemon unless said otherwise. */

/* At a start: what is wrong with the uplink's cursor or Sparkplug's. */
void cli_run_uplink_start_warnings(struct runner *rn);
/* Each round: the uplink's connection trouble (rn->d may be NULL). */
void cli_run_uplink_watch(struct runner *rn, int64_t now);
/* Every minute and at a stop: the periodic status. */
void cli_run_print_status(struct runner *rn);
/* Each round: bus b's device going, failing and coming back. */
void cli_run_report_link(struct runner *rn, size_t b, int64_t now);
/* At a start: bus b's DBC warnings, the first ones whole. */
void cli_run_dbc_warnings(const struct runner *rn, size_t b, const dbc_t *dbc);
/* At a start: buses too busy, Modicon addresses, DBC warnings. */
void cli_run_load_warnings(struct runner *rn);
/* Each round: the log refusing records and taking them again (rn->d may be NULL). */
void cli_runner_log_watch(struct runner *rn, int64_t now);
/* Each round and at a stop (final): the faults the sink noted (rn->d may be NULL). */
void cli_runner_faults(struct runner *rn, int64_t now, bool final);
/* At a stop: a holds file that could not be read, into rn->totals. */
void cli_runner_holds_verdict(struct runner *rn);

/* run-runner.c */

/* Create and start a daemon for rn->cfg (reloaded_hash: the board's
   hash when this start is a reload, else 0); 0 or -errno, with why in
   rn->start_err and said. */
int cli_runner_start(struct runner *rn, uint64_t reloaded_hash);
/* Stop and free rn->d (NULL: only the stat server), its last words said. */
void cli_runner_stop(struct runner *rn);
/* SIGHUP: the new board file only if it is valid and starts. */
void cli_runner_reload(struct runner *rn);
/* The hardware watchdog of rn->cfg opened (a failure is said). */
void cli_runner_watchdog_setup(struct runner *rn);

/* run-rconf.c */

/* pl_daemon_opts.on_config, on the forwarder's thread: ctx is rn->rconf. */
void cli_rconf_arrived(void *ctx, const void *payload, size_t len);
/* An outcome of version said on stderr, to the ground and in the log. */
void cli_rconf_said(struct runner *rn, uint64_t version, const char *outcome, uint32_t code, const char *why);
/* Frees what the trial holds and empties it. */
void cli_rconf_trial_end(struct rconf_trial *t);
/* Each round and at the stop (final): the board on probation, if any. */
void cli_runner_trial(struct runner *rn, int64_t now, bool final);
/* Each round: a board file the ground pushed, if one waits. */
void cli_runner_rconf(struct runner *rn);
/* Before the first start: a board left on probation rolled back; *ret
   and *ret_buf the caller frees (NULL: none). */
void cli_rconf_trial_left(struct runner *rn, struct evd_rconf **ret, uint8_t **ret_buf);
/* The probation's length in ns (RAILMON_CONFIG_PROBATION_MS, else 30 s). */
int64_t cli_rconf_probation(void);
