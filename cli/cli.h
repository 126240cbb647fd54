/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the subcommands; each parses its own options and returns the
 * process exit code (0 ok, 1 failure, 2 usage).
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct conf_board;

int cli_cmd_demo(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_replay(int argc, char **argv);
int cli_cmd_stat(int argc, char **argv);
int cli_cmd_recv(int argc, char **argv);
int cli_cmd_db(int argc, char **argv);
int cli_cmd_serve(int argc, char **argv);
int cli_cmd_watch(int argc, char **argv);
int cli_cmd_monitor(int argc, char **argv);
int cli_cmd_decode(int argc, char **argv);
int cli_cmd_channels(int argc, char **argv);
int cli_cmd_summary(int argc, char **argv);
int cli_cmd_plot(int argc, char **argv);
int cli_cmd_keygen(int argc, char **argv);
int cli_cmd_verify(int argc, char **argv);
int cli_cmd_hold(int argc, char **argv);
int cli_cmd_request(int argc, char **argv);
int cli_cmd_config(int argc, char **argv);

/*
 * Run a daemon for cfg until SIGTERM/SIGINT, duration_s (> 0) or, with
 * until_sources_done, until every source ended; SIGHUP reloads cfg->path
 * if it validates (cfg is then replaced: the caller frees *cfg_p).  Talks
 * to systemd (READY, WATCHDOG, RELOADING, STOPPING) and kicks the hardware
 * watchdog while the pipeline is alive.  Returns the exit code.
 */
struct pl_daemon_opts;
int cli_run_daemon(const char *cmd, struct conf_board *cfg, const struct pl_daemon_opts *opts,
                     double duration_s, bool until_sources_done);

/* As cli_run_daemon(), drawing pg (cli/progress.h; NULL: none) as it goes:
   with CLI_PROGRESS_FRAMES the frames the buses read of total, else the
   records stored (a rate line).  Cleared before the closing words. */
struct cli_progress;
int cli_run_daemon_progress(const char *cmd, struct conf_board *cfg, const struct pl_daemon_opts *opts,
                            double duration_s, bool until_sources_done, struct cli_progress *pg, uint64_t total);

/* The helpers every command shares (cli.c). */

/* Print "railmon CMD: message" to stderr; returns 2 (usage error). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* After a usage error's sentence (getopt's, or cli_fail's): print
   "see 'railmon CMD --help'" to stderr; returns 2. */
int cli_see_help(const char *cmd);

/* An MQTT password: the first line of the file at path, without its line
   end, into *ret (free it): 0, -errno, -ENODATA (empty), -E2BIG (over
   CLI_PASSWORD_MAX bytes).  recv's, request's and config push's --password-file. */
#define CLI_PASSWORD_MAX 1024
int cli_read_password(const char *path, char **ret);

/* A number of seconds >= 0 ("2", "0.5"): true and *ret, or false. */
bool cli_parse_seconds(const char *s, double *ret);

/* Load and validate the board file path for command cmd: 0 and *ret_cfg
   (free with conf_free), or the exit code with the message printed
   (2: no --board, 1: the file is wrong). */
int cli_load_board(const char *cmd, const char *path, struct conf_board **ret_cfg);

/* The width a table printed on f may take: a terminal's (TIOCGWINSZ, else
   $COLUMNS, else 80); 0 when f is no terminal (a file, a pipe: never cut,
   the same bytes whatever the terminal the command ran in). */
int cli_term_width(FILE *f);

/* Set by SIGINT/SIGTERM and SIGHUP (main.c owns them: the only globals),
   once cli_install_signals() (cli.c) has put the handlers in place;
   it also ignores SIGPIPE. */
extern volatile sig_atomic_t cli_stop_requested;
extern volatile sig_atomic_t cli_reload_requested;
void cli_install_signals(void);
