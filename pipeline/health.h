/* SPDX-License-Identifier: MIT */
/*
 * health.h - the health of a running railmon: one entry per bus (items,
 * rate, drops, errors, ring fill, latency percentiles, device presence),
 * one for the collector, the log, the uplink and the clock (steps seen,
 * the kernel's sync state: docs/time.md).  Made every
 * health_interval_s on the collector thread, they ride in the next Batch
 * (so `railmon stat` reads them from a log) and are kept for the stat
 * socket (any thread, under a lock the collector holds for one copy).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/source.h"
#include "bus/bus.h"
#include "conf/config.h"
#include "pipeline/channels.h"
#include "sink.h"

struct upl_forwarder;
struct rec_health;

/* What the daemon knows about one bus, gathered for a health entry. */
struct pl_health_bus {
	const char *name;
	bool modbus;                     /* else CAN, or TRDP: */
	bool trdp;
	struct bus_trdp_stats trdp_rx;   /* TRDP: the driver's counters */
	struct pl_trdp_counts trdp_decode; /* TRDP with an XML: the collector's
	                                    decode counts (0 without XML) */
	uint64_t items;                  /* produced by its source */
	uint64_t drops;                  /* refused by its ring */
	uint64_t errors;                 /* failed reads + the driver's errors */
	uint64_t rx_dropped, bad_input;  /* the driver's counters */
	uint32_t ring_fill_pct;
	enum acq_link state;
	uint64_t reopens;
	uint32_t blind_ms;               /* acq_link_state.blind_ms */
	const struct acq_latency *latency; /* NULL: none */
	const struct acq_latency *transaction; /* Modbus request -> reply; NULL: none */
};

struct pl_health_input {
	const struct pl_health_bus *buses;
	size_t nbuses;
	uint64_t collector_items;
	stor_log_t *log;
	struct upl_forwarder *fwd;       /* NULL without [uplink]; else retention
	                                    learns from it what is off-board */
	pl_sink_t *sink;              /* the entries go into its next Batch */
	uint64_t clock_steps;         /* CLOCK_STEP events this run (pl_sink_stats) */
};

/* Entries at most: the buses, collector, log, uplink, clock. */
#define PL_HEALTH_MAX (CONF_BUSES_MAX + 4)

typedef struct pl_health pl_health_t;

int pl_health_new(pl_health_t **ret_health);
pl_health_t *pl_health_free(pl_health_t *h);

/* Make the entries at now (CLOCK_MONOTONIC; rates are over the time since
   the last tick).  The collector thread. */
void pl_health_tick(pl_health_t *h, const struct pl_health_input *in, int64_t now);

/* The latest entries, copied into ret; returns how many.  Empty until the
   first tick.  Any thread. */
size_t pl_health_get(pl_health_t *h, struct rec_health *ret, size_t max);
