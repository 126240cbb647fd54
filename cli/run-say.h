/* SPDX-License-Identifier: MIT */
/*
 * run-say.h - what `run` (and `replay`, `demo`) tell the operator about a
 * running daemon, in the words the journal has always had: the uplink's
 * cursor and connection, the periodic status, a bus's device going and
 * coming back, the log refusing records, the exit verdict.  Written to
 * the stream the caller gives (cli/ gives stderr); pipeline/runner.h
 * decides when.
 * Counters come in as plain values, so nothing here needs the daemon.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "conf/config-types.h"
#include "pipeline/runner.h"

/* The daemon's counters the words need (a copy of its stats'). */
struct cli_run_counts {
	uint64_t records, batches, first_seq, next_seq, ring_drops, log_dropped;
	const uint64_t *bus_rx, *bus_errors;  /* per bus of the board; NULL: not said */
};

/* What a daemon that started says: the start's warning (warn, "" none),
   the log's (log_warning, "" none), an uplink that does not verify its
   broker, and the vehicle, its buses, the board's hash and data_dir. */
void cli_run_started(FILE *out, const char *cmd, const struct conf_board *cfg, const char *data_dir,
                     const char *warn, const char *log_warning);

/* A retained channels message cut to sent of the board's channels names
   (over 1 MiB: pl_daemon_uplink_dictionary); nothing when all are in it. */
void cli_uplink_dictionary(FILE *out, size_t sent, size_t channels);

/* The broker as messages name it: "mqtt[s]://host:port". */
void cli_broker_url(const struct conf_uplink *up, char *buf, size_t len);

/* The cursor damage codes of uplink/forward.h (err, <0) in plain words,
   into buf: damaged_seq and log_next name the seq of a cursor past the
   log's end. */
void cli_cursor_damage_words(int err, uint64_t damaged_seq, uint64_t log_next, char *buf, size_t len);

/* Acquisition never waits for the cursor: say what is wrong with it (st's
   cursor_damage, 0: nothing is said), for the log in data_dir whose oldest
   record is log_first. */
void cli_uplink_cursor_warning(FILE *out, const char *cmd, const char *data_dir,
                               const struct upl_forward_stats *st, uint64_t log_first);

/* One uplink watch step's news (pipeline/runner.h) about the broker
   ("mqtts://host:port"), with the forwarder's last error text. */
void cli_uplink_news(FILE *out, const char *cmd, const char *broker, const struct pl_uplink_news *n,
                     const char *error_text);

/* The uplink's part of the summary: what is still to be sent (below
   next_seq, the log's), and why. */
void cli_uplink_status(FILE *out, const char *broker, const struct upl_forward_stats *st, uint64_t next_seq);

struct upl_spb_stats;
/* The Sparkplug B publisher at the start: a cursor file that was damaged
   (st's cursor_damage, 0: nothing is said) in data_dir. */
void cli_spb_start_warning(FILE *out, const char *cmd, const char *data_dir, const struct upl_spb_stats *st);

/* The Sparkplug B publisher's part of the summary: connected, what went,
   what the broker has not confirmed (below next_seq, the log's), what was
   refused (too big, a dead device's) and what was damaged. */
void cli_spb_status(FILE *out, const char *broker, const struct upl_spb_stats *st, uint64_t next_seq);

/* The status line: stored, dropped, refused, then each of cfg's buses
   with its device's losses (links[b], one per bus). */
void cli_run_status(FILE *out, const struct conf_board *cfg, const struct cli_run_counts *c,
                    const struct acq_link_state *links);

/* The same, short, for the service manager: "STATUS=..." into buf. */
void cli_run_status_text(const struct cli_run_counts *c, char *buf, size_t len);

/* What bus bc's link l is now, into buf ("bus 'x' (where) is gone: ..."):
   lost = losses since the last message (pl_link_watch_step). */
void cli_link_words(const struct bus_cfg *bc, const struct acq_link_state *l, uint64_t lost, char *buf,
                    size_t len);

/* The log refusing records (err: its -errno, 0 unknown; total: refused
   over the run so far): the line on out, and "STATUS=..." into status. */
void cli_log_refusing(FILE *out, const char *cmd, int err, uint64_t total, char *status, size_t statuslen);

/* The log takes records again after total were refused. */
void cli_log_recovered(FILE *out, const char *cmd, uint64_t total);

/* The exit status says whether the run kept everything: a replay that
   skipped parts of its source log, or stopped early, is not a success.
   Says why on out; returns 1 then, else rc. */
int cli_run_verdict(FILE *out, const char *cmd, const struct pl_run_totals *t, int rc);
