/* SPDX-License-Identifier: MIT */
/*
 * sources.h - the acquisition side of a running railmon: each bus's device
 * opened as an acq_source (acquisition/source.h: an RX or poll thread into
 * a ring of its own), the monitor that runs their link checks; or, for a
 * log replay, one source (logsource.h) for every bus, into ring 0.  It
 * answers for each bus: items, errors, drops, presence, health.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/source.h"
#include "config.h"
#include "health.h"

struct board_sources_opts {
	const char *replay_log;   /* != NULL: no device is opened; this log is
	                             the source of every bus (outlives them) */
	double replay_speed;      /* a log replay: 0 = as fast as possible */
	bool absent_ok;           /* a CAN device not there starts gone (a
	                             restart during an outage) */
	uint64_t seed;            /* this board's (random): the reopen jitter */
};

typedef struct board_sources board_sources_t;

/* Open every bus of cfg (cfg outlives them); nothing runs yet.  0, or
   -errno with the message naming the bus in err. */
int board_sources_new(const struct board_cfg *cfg, const struct board_sources_opts *opts,
                      board_sources_t **ret_sources, char *err, size_t errlen);

/* Stop if running, close, free; accepts NULL; returns NULL. */
board_sources_t *board_sources_free(board_sources_t *s);

/* Bus b's ring, for the collector to drain, and the source that fills it
   (its link checks are merged by time; NULL in a log replay). */
struct acq_ring *board_sources_ring(board_sources_t *s, size_t b);
acq_source_t *board_sources_source(board_sources_t *s, size_t b);

/* Start the threads: SCHED_FIFO at cfg's rt_priority for live buses (a
   refusal is said in warn, and they run at normal priority).  0 or -errno. */
int board_sources_start(board_sources_t *s, char *warn, size_t warnlen);

/* Stop every source at once (each drains what its device holds), then
   the monitor.  Idempotent. */
void board_sources_stop(board_sources_t *s);

/* True once every source ended by itself (trace files, the log at their end). */
bool board_sources_done(const board_sources_t *s);

struct board_bus_counts {
	uint64_t items;   /* produced (a log replay: by the bus's index) */
	uint64_t errors;  /* failed reads + the driver's errors (failed
	                     transactions, error frames): what the run summary
	                     and the health records both say */
	uint64_t drops;   /* refused by its ring, and its link checks' ring */
};

/* Any thread. */
void board_sources_counts(const board_sources_t *s, size_t b, struct board_bus_counts *ret_counts);
int board_sources_link(const board_sources_t *s, size_t b, struct acq_link_state *ret_link);
void board_sources_health(const board_sources_t *s, size_t b, struct board_health_bus *ret_health);

/* A log replay: unreadable parts skipped; the -errno that ended it early
   (0 if none, or while it runs). */
uint64_t board_sources_replay_skipped(const board_sources_t *s);
int board_sources_replay_error(const board_sources_t *s);
