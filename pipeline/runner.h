/* SPDX-License-Identifier: MIT */
/*
 * runner.h - the watches `run`'s main loop keeps over a running daemon,
 * deciding what is news, printing nothing: the uplink's connection, a
 * bus's device going and coming back, the log refusing records, the totals
 * that make the exit status, and the two watchdogs.
 *
 * Each watch is a small struct the caller zeroes (or sets up) and steps
 * with the daemon's counters and the monotonic time; what it returns says
 * what to tell the operator, in cli/run-say.h's words.  They take plain
 * counters, not the daemon, so any caller (and the tests) can step them.
 * Main thread only; no allocation.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "acquisition/source.h"
#include "bus/bus.h"
#include "uplink/forward.h"

#define PL_UPLINK_REPEAT_NS (60 * 1000000000ll) /* "still cannot connect" at most this often */
#define PL_REFUSE_REPEAT_NS (10 * 1000000000ll) /* while refusing, say so this often */
#define PL_REFUSE_QUIET_NS (2 * 1000000000ll)   /* no refusal for this long: recovered? */
#define PL_LINK_REPEAT_NS 1000000000ll          /* at most one line per bus per second */
#define PL_ALIVE_NS (2 * 1000000000ll)          /* collector ticks every 20 ms */

/* What the operator was told about the uplink, so each change is said
   once and a broker that stays away is repeated only once a minute.
   Zero it for a new forwarder (its counters start again). */
struct pl_uplink_watch {
	uint64_t fails_seen;      /* connect_fails already accounted for */
	uint64_t connects_seen;
	bool connected;
	uint64_t outage_fails;    /* failed attempts since the last connection */
	int64_t outage_ns;        /* when the outage began, 0 = none */
	int64_t said_ns;          /* when it was last reported */
};

enum pl_uplink_conn {
	PL_UPLINK_CONN_NONE,
	PL_UPLINK_CONN_BACK,        /* connected after an outage: back_fails in back_s */
	PL_UPLINK_CONN_CONNECTED,   /* the first connection, no outage said */
	PL_UPLINK_CONN_RECONNECTED, /* a later one, no outage said */
	PL_UPLINK_CONN_LOST,        /* the connection dropped */
	PL_UPLINK_CONN_MAX
};

enum pl_uplink_fail {
	PL_UPLINK_FAIL_NONE,
	PL_UPLINK_FAIL_CANNOT,      /* the first failed attempt of an outage */
	PL_UPLINK_FAIL_STILL,       /* a minute on: fails attempts in fail_s */
	PL_UPLINK_FAIL_MAX
};

/* What one step found, said in this order: the connection, then the
   failed attempts. */
struct pl_uplink_news {
	enum pl_uplink_conn conn;
	uint64_t back_fails;
	double back_s;
	enum pl_uplink_fail fail;
	uint64_t fails;
	double fail_s;
};

/* Step w with the forwarder's counters st at monotonic now.  Returns true
   and *ret_news when there is something to say (ret_news is always
   written). */
bool pl_uplink_watch_step(struct pl_uplink_watch *w, const struct upl_forward_stats *st, int64_t now,
                          struct pl_uplink_news *ret_news);

/* What was last said about a bus's device; zero it for a new daemon. */
struct pl_link_seen {
	uint64_t losses, reopens;
	int reopen_err;
	int64_t said_ns;
};

/* Whether bus link l is news at now: gone, back, or its reopen failing in
   a new way, at most once per PL_LINK_REPEAT_NS.  Then true, *ret_lost
   the losses since the last message, and seen updated (the caller says
   it); else false and nothing written. */
bool pl_link_watch_step(struct pl_link_seen *seen, const struct acq_link_state *l, int64_t now,
                        uint64_t *ret_lost);

/* The log refusing records: the first refusal at once, again every
   PL_REFUSE_REPEAT_NS while it goes on, and the recovery once nothing was
   refused for PL_REFUSE_QUIET_NS and every refusal is in an event on disk.
   Zero it for a new daemon. */
struct pl_refuse_watch {
	uint64_t seen;            /* the daemon's count at the last look */
	bool refusing;
	int64_t said_ns, last_ns;
};

enum pl_refuse_news {
	PL_REFUSE_QUIET,          /* nothing to say */
	PL_REFUSE_REFUSING,       /* say that it refuses */
	PL_REFUSE_RECOVERED,      /* say that it takes records again */
	PL_REFUSE_MAX
};

/* Step w with the current daemon's log_dropped and log_unreported. */
enum pl_refuse_news pl_refuse_watch_step(struct pl_refuse_watch *w, uint64_t log_dropped,
                                         uint64_t log_unreported, int64_t now);

/* Over every daemon of one run (a reload starts a new one): what decides
   whether the run kept everything. */
struct pl_run_totals {
	uint64_t replay_skipped;  /* unreadable parts of a replay's source log */
	int replay_error;         /* a replay that ended early, -errno */
	uint64_t refused;         /* refused by the log */
	uint64_t unreported;      /* refused, and in no event on disk */
	int log_error;            /* the log's last error, -errno */
	int hold_error;           /* the holds file could not be read during the run:
	                             -errno (retention deleted nothing meanwhile), 0 */
	unsigned hold_error_line; /* its bad line for -EBADMSG */
	int hold_error_now;       /* reading it at the stop: 0 or -errno */
	char holds_dir[BUS_PATH_MAX];
};

/* Add a stopped daemon's counters. */
void pl_run_totals_add(struct pl_run_totals *t, uint64_t replay_skipped, int replay_error, uint64_t log_dropped,
                       uint64_t log_unreported, int log_error);

/* The service manager's watchdog (sd_notify) and the hardware one. */
struct pl_watchdogs {
	int hwdog;                /* -1: none */
	int64_t next, period;     /* period 0: no watchdog to kick */
};

/* Set w up at monotonic now: the service manager's period (half its
   WATCHDOG_USEC) and, with hw_path[0], the hardware watchdog kicked at
   least once a second.  Returns 0, or the -errno of a hardware watchdog
   that did not open (w is then set up without it). */
int pl_watchdogs_open(struct pl_watchdogs *w, const char *hw_path, int hw_timeout_s, int64_t now);

/* Kick both when due, but only while the pipeline is alive (heartbeat, the
   collector's last tick, within PL_ALIVE_NS of now). */
void pl_watchdogs_kick(struct pl_watchdogs *w, int64_t now, int64_t heartbeat);

/* Close the hardware watchdog, disarmed (a clean stop); w->hwdog = -1. */
void pl_watchdogs_close(struct pl_watchdogs *w);
