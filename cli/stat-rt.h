/* SPDX-License-Identifier: MIT */
/*
 * stat-rt.h - `railmon stat`'s realtime lines (issue 30): what the tail of
 * a running daemon depends on, read back from the daemon itself and from
 * the machine it runs on.
 */
#pragma once

#include <stdio.h>
#include <sys/types.h>

#include "cli/stat-table.h"

/*
 * On out: the machine's side as `check` says it (pipeline/rtenv.h, read
 * from root: "/" on a board), then the scheduling policy and priority in
 * force for each of daemon pid's bus threads (rx-*, read back with
 * sched_getscheduler/sched_getparam from proc_root's task list), and
 * whether it holds the PM QoS request it was asked for; "WARNING: ..." for
 * each the board asked for and runs without.  Returns the warnings, or
 * -errno when the daemon's threads cannot be read (said).
 */
int cli_stat_realtime(FILE *out, pid_t pid, const struct cli_stat_daemon *d, const char *root, const char *proc_root);
