/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the subcommands; each parses its own options and returns the
 * process exit code (0 ok, 1 failure, 2 usage).
 */
#pragma once

#include <signal.h>

int board_cmd_demo(int argc, char **argv);
int board_cmd_run(int argc, char **argv);
int board_cmd_check(int argc, char **argv);
int board_cmd_export(int argc, char **argv);
int board_cmd_replay(int argc, char **argv);
int board_cmd_stat(int argc, char **argv);

/* Print "railmon CMD: message" to stderr; returns 2 (usage error). */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Set by SIGINT/SIGTERM (main.c owns it: the only global). */
extern volatile sig_atomic_t board_stop_requested;
void board_install_signals(void);
