/* SPDX-License-Identifier: MIT */
/*
 * daemon.h - wiring: buses -> sources (acquisition/source.h) -> rings ->
 * collector -> sink (decode, encode, append: sink.h) -> flash log ->
 * forwarder.
 *
 * One struct pl_daemon holds everything a running railmon owns and is
 * passed down explicitly (no globals outside main.c).  Threads: one RX/poll
 * thread per bus (SCHED_FIFO when the board asks), a monitor thread for the
 * link checks, one collector thread and the forwarder at normal priority.
 * The caller (run, demo, replay) drives start/stop and reads live values
 * and counters for display.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/source.h"
#include "dbc/dbc.h"
#include "pipeline/channels.h"
#include "pipeline/logsource.h"
#include "conf/config.h"

struct pl_daemon;

struct pl_daemon_opts {
	const char *data_dir;     /* overrides [storage] dir when not NULL */
	bool lock_memory;         /* mlockall before starting threads */
	uint64_t reloaded_hash;   /* != 0: record a CONFIG_RELOAD event at start */
	const char *replay_log;   /* != NULL: no buses are opened; the records of
	                             this railmon log are the source instead */
	double replay_speed;      /* 0 = as fast as possible, else x real time */
	struct pl_logsource_faults replay_faults; /* a log replay: what it could not
	                             read, handed to the caller to say (logsource.h) */
	bool absent_ok;           /* a CAN device not there at open starts gone
	                             and is reopened (a restart during an outage),
	                             instead of failing the start */
	void (*on_config)(void *ctx, const void *payload, size_t len);
	                          /* optional: the ground's signed board files from
	                             the forwarder (issue 32), on its thread */
	void *config_ctx;
};

struct pl_daemon_stats {
	uint64_t items;           /* drained from the rings */
	uint64_t records;         /* stored in the log this run */
	uint64_t batches;
	uint64_t ring_drops;
	uint64_t log_dropped;     /* records the log refused, dropped (ENOSPC) or lost
	                             (EIO): exact, from the log's own counts */
	uint64_t log_unreported;  /* of those, not yet in a LOG_DROPPED event on disk */
	int log_error;            /* the log's last error (-errno), 0 if none */
	uint64_t decode_samples;  /* samples decoded from CAN frames */
	uint64_t first_seq, next_seq;
	uint64_t bus_rx[CONF_BUSES_MAX]; /* items produced per bus */
	uint64_t bus_errors[CONF_BUSES_MAX]; /* failed reads + the driver's errors
	                                         (failed transactions, error frames):
	                                         what the health records (stat) say */
	uint64_t replay_skipped;  /* a log replay: unreadable parts skipped (said on stderr) */
	int replay_error;         /* a log replay that ended early: -errno, else 0 */
};

/*
 * Open every bus, load DBC files, open (and recover) the log, allocate
 * rings and the encoder.  Nothing runs yet.  On error returns -errno and
 * writes a message naming the bus or file into err.  cfg must outlive the
 * daemon.
 */
int pl_daemon_new(const struct conf_board *cfg, const struct pl_daemon_opts *opts,
                  struct pl_daemon **ret_daemon, char *err, size_t errlen);

/* Record the start event and start the threads.  *ret_warn gets a warning
   message (realtime not granted) or "" . */
int pl_daemon_start(struct pl_daemon *d, char *warn, size_t warnlen);

/* Stop sources, drain the rings, close the last Batch, sync the log.
   Idempotent. */
int pl_daemon_stop(struct pl_daemon *d);

/* An event of the caller's thread into the log (code, arg, detail as
   acquisition/acq-item.h's); one producer thread only (run's main loop).
   0, -ENOBUFS when 16 wait for the collector (counted as an overrun). */
int pl_daemon_event(struct pl_daemon *d, uint32_t code, int64_t arg, uint32_t detail);

/* The last remote configuration's outcome (JSON) for the forwarder to
   publish retained on railmon/<vehicle>/config/status: 0, -ENOTCONN
   without [uplink], -errno. */
int pl_daemon_config_status(struct pl_daemon *d, const char *json);

/* Stops if running, then frees; accepts NULL; returns NULL. */
struct pl_daemon *pl_daemon_free(struct pl_daemon *d);

/* True once every source has ended by itself (trace files at EOF). */
bool pl_daemon_sources_done(const struct pl_daemon *d);

size_t pl_daemon_channels(const struct pl_daemon *d, const struct pl_channel **ret_channels);

/* Latest value of channel i (index into the channels array). */
int pl_daemon_live(const struct pl_daemon *d, size_t i, struct pl_live *ret_live);

/* Counters; safe to call while running (each counter read atomically). */
int pl_daemon_stats(const struct pl_daemon *d, struct pl_daemon_stats *ret_stats);

/* What the board asked of realtime (rt_priority, cpu_latency_us) and
   whether the PM QoS request is held now: for `stat` to say what the
   tail depends on.  Any thread (set at start, cleared at stop). */
void pl_daemon_rt(const struct pl_daemon *d, int *ret_rt_priority, int *ret_cpu_latency_us, bool *ret_qos_held);

struct rec_health;
/* The latest health entries (one per bus, "collector", "log"), copied into
   ret; returns how many.  Empty until the first health_interval_s. */
size_t pl_daemon_health(struct pl_daemon *d, struct rec_health *ret, size_t max);

/* The uplink forwarder's state: next seq to forward (everything below it
   acknowledged by the broker), connected, TLS verification relaxed.
   -ENOENT when the board has no [uplink]. */
int pl_daemon_uplink(struct pl_daemon *d, uint64_t *ret_cursor, bool *ret_connected, bool *ret_insecure);

struct upl_forward_stats;
/* The forwarder's counters (uplink/forward.h): connection failures and
   their reason, cursor damage found at start.  -ENOENT without [uplink]. */
int pl_daemon_uplink_stats(struct pl_daemon *d, struct upl_forward_stats *ret_stats);

struct upl_spb_stats;
/* The Sparkplug B publisher's counters (uplink/spb-pub.h).  -ENOENT
   without [sparkplug]. */
int pl_daemon_sparkplug_stats(struct pl_daemon *d, struct upl_spb_stats *ret_stats);

/* How many of the board's channels the retained channels message names
   (*ret_sent) of how many it has (*ret_channels): fewer when the
   dictionary is over 1 MiB, which cli/ says (cli_uplink_dictionary).
   -ENOENT without [uplink] or without channels. */
int pl_daemon_uplink_dictionary(const struct pl_daemon *d, size_t *ret_sent, size_t *ret_channels);
/*
 * The presence of bus b's device; any thread.  CAN devices that go away are
 * closed and reopened by their source's thread with backoff; Modbus links
 * reconnect inside the driver and are followed through its DISCONNECT /
 * CONNECT events.  The counters are read first: the details that follow
 * belong to that count or a newer one (acq_source_link).  A log replay's
 * buses are always up.  -EINVAL for a bad d or b.
 */
int pl_daemon_bus_link(const struct pl_daemon *d, size_t b, struct acq_link_state *ret_link);

/* The DBC of bus b as the daemon loaded it, NULL if none. */
const dbc_t *pl_daemon_dbc(const struct pl_daemon *d, size_t b);

/* Monotonic ns of the collector's last tick: the pipeline is alive while
   this keeps moving (what the watchdogs are kicked on). */
int64_t pl_daemon_heartbeat(const struct pl_daemon *d);

struct pl_faults;
/* The faults the sink noted (faults.h: CAN bus-off, Modbus timeouts and
   exceptions, log I/O faults, retention of unsent records); any thread;
   lives as long as the daemon.  NULL for a NULL d. */
const struct pl_faults *pl_daemon_faults(const struct pl_daemon *d);

/* The log directory in use. */
const char *pl_daemon_data_dir(const struct pl_daemon *d);

/* A warning about the log found at start (space short, damage set aside at
   recovery), "" if none. */
const char *pl_daemon_log_warning(const struct pl_daemon *d);

/* Label for a value of a channel (DBC value table), NULL if none. */
const char *pl_daemon_value_label(const struct pl_daemon *d, size_t i, double value);
