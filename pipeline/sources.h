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
#include "conf/config.h"
#include "health.h"
#include "logsource.h"

struct pl_sources_opts {
	const char *replay_log;   /* != NULL: no device is opened; this log is
	                             the source of every bus (outlives them) */
	double replay_speed;      /* a log replay: 0 = as fast as possible */
	struct pl_logsource_faults replay_faults; /* a log replay: what it could not read */
	bool absent_ok;           /* a CAN device not there starts gone (a
	                             restart during an outage) */
	uint64_t seed;            /* this board's (random): the reopen jitter */
};

typedef struct pl_sources pl_sources_t;

/* Open every bus of cfg (cfg outlives them); nothing runs yet.  0, or
   -errno with the message naming the bus in err. */
int pl_sources_new(const struct conf_board *cfg, const struct pl_sources_opts *opts,
                      pl_sources_t **ret_sources, char *err, size_t errlen);

/* Stop if running, close, free; accepts NULL; returns NULL. */
pl_sources_t *pl_sources_free(pl_sources_t *s);

/* Bus b's ring, for the collector to drain, and the source that fills it
   (its link checks are merged by time; NULL in a log replay). */
struct acq_ring *pl_sources_ring(pl_sources_t *s, size_t b);
acq_source_t *pl_sources_source(pl_sources_t *s, size_t b);
/* Where bus b's TRDP telegrams' bytes are (acquisition/acq-bytes.h), for
   the sink to release once it encoded them; a log replay's one ring for
   every bus; NULL for a bus without.  Lives as long as s. */
struct acq_bytes *pl_sources_bytes(pl_sources_t *s, size_t b);

/* Start the threads: SCHED_FIFO at cfg's rt_priority for live buses (a
   refusal is said in warn, and they run at normal priority).  0 or -errno. */
int pl_sources_start(pl_sources_t *s, char *warn, size_t warnlen);

/* Stop every source at once (each drains what its device holds), then
   the monitor.  Idempotent. */
void pl_sources_stop(pl_sources_t *s);

/* True once every source ended by itself (trace files, the log at their end). */
bool pl_sources_done(const pl_sources_t *s);

struct pl_bus_counts {
	uint64_t items;   /* produced (a log replay: by the bus's index) */
	uint64_t errors;  /* failed reads + the driver's errors (failed
	                     transactions, error frames): what the run summary
	                     and the health records both say */
	uint64_t drops;   /* refused by its ring, and its link checks' ring */
};

/* Any thread. */
void pl_sources_counts(const pl_sources_t *s, size_t b, struct pl_bus_counts *ret_counts);
int pl_sources_link(const pl_sources_t *s, size_t b, struct acq_link_state *ret_link);
void pl_sources_health(const pl_sources_t *s, size_t b, struct pl_health_bus *ret_health);

/* A source waits for room in its ring instead of dropping (a trace read
   as fast as possible, a log replay): the collector must not sleep long
   (pipeline/daemon.c). */
bool pl_sources_wait_for_room(const pl_sources_t *s);

/* A log replay: unreadable parts skipped; the -errno that ended it early
   (0 if none, or while it runs). */
uint64_t pl_sources_replay_skipped(const pl_sources_t *s);
int pl_sources_replay_error(const pl_sources_t *s);
