/* SPDX-License-Identifier: MIT */
/*
 * config-types.h - what a parsed board file is: plain types and limits,
 * no functions.  The tables of config-schema.c are built on these, and
 * config.c fills them; both include this header, so neither depends on
 * the other's header for the types.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus/bus.h"

#define CONF_BUSES_MAX 16
/* Channel ids are bus index << 16 | n: a bus has ids for this many. */
#define CONF_BUS_CHANNELS_MAX 65536
#define CONF_ERR_MAX 512
/* rx_coalesce_us at most: acquisition/source.h's ACQ_SOURCE_COALESCE_MAX_NS
   (a longer wait would hold a stop back), in microseconds; conf/ does not
   see acquisition/, pipeline/sources.c asserts the two agree. */
#define CONF_RX_COALESCE_US_MAX 100000

struct conf_storage {
	char dir[BUS_PATH_MAX];
	uint64_t segment_bytes;
	uint32_t sync_window_ms;
	uint64_t retention_bytes;
	uint64_t retention_age_s;
	uint64_t retention_min_age_s; /* retention never deletes younger data */
	int segment_line, retention_line; /* where they were set, 0 = default */
	int min_age_line;
};

/* [trigger NAME]: a condition that holds the log around the moment it
   becomes true (pipeline/watch.h). */
#define CONF_TRIGGERS_MAX 64
enum conf_trigger_op {
	CONF_OP_EQ, CONF_OP_NE, CONF_OP_GT, CONF_OP_GE, CONF_OP_LT, CONF_OP_LE,
	CONF_OP_EVENT, /* the event named in value happened */
	CONF_OP_MAX
};

struct conf_trigger {
	char name[64];
	char when[192];            /* as written */
	char channel[128];         /* the channel compared ("" for an event) */
	enum conf_trigger_op op;
	char value[64];            /* a number, a value-table label or an event name */
	uint64_t pre_s, post_s;    /* the held window: [t - pre, t + post] */
	uint64_t hold_s;           /* the hold ends by itself after this; 0 = at release */
	int line, when_line;       /* the [section] header, 'when =' */
};

/* A channel that must be updated at least every within_ms (STALE /
   FRESH events): required_within_ms of a [channel NAME] or a
   [signal NAME] (a DBC signal). */
#define CONF_REQUIRED_MAX 512
struct conf_required {
	char channel[128];
	uint32_t within_ms;
	int line;
};

/*
 * What the uplink sends of a channel's samples (`uplink =` of a
 * [channel], a [signal] or a bus, uplink/README.md "Reduction"); the log
 * keeps every record whatever it says; the Sparkplug B edge node's DDATA
 * follows it too (sparkplug/README.md).  CONF_UPLINK_ALL (0) is today's
 * stream: the stored Batches as they are.  CHANGE, DEADBAND and EVERY
 * combine: a sample goes when any of them says so.
 */
enum {
	CONF_UPLINK_ALL = 0,
	CONF_UPLINK_NONE = 1 << 0,
	CONF_UPLINK_CHANGE = 1 << 1,   /* the value (or its quality) differs from the last sent */
	CONF_UPLINK_DEADBAND = 1 << 2, /* |value - last sent| >= deadband */
	CONF_UPLINK_EVERY = 1 << 3,    /* every_ms passed since the last sent sample */
};

struct conf_uplink_policy {
	unsigned flags;      /* CONF_UPLINK_*; 0 = all */
	double deadband;
	uint64_t every_ms;
};

/* A channel's own policy: a [channel] or a [signal] with `uplink =`. */
#define CONF_POLICIES_MAX 1024
struct conf_channel_policy {
	char channel[128];
	struct conf_uplink_policy pol;
	int line;
};

/* A bus's raw frames on the uplink (`uplink_frames =` of a [can] bus). */
#define CONF_FRAME_RANGES_MAX 32
struct conf_uplink_frames {
	bool none;           /* none; else all, or only ids in the ranges */
	size_t nranges;      /* 0 and !none: all */
	struct { uint32_t lo, hi; } ranges[CONF_FRAME_RANGES_MAX]; /* identifiers, inclusive */
};

struct conf_uplink {
	bool enabled;
	char host[128];
	uint16_t port;
	bool tls;
	char ca_file[BUS_PATH_MAX];
	char cert_file[BUS_PATH_MAX];
	char key_file[BUS_PATH_MAX];
	bool tls_insecure;         /* explicit opt-in, warned about at every start */
	char username[64];
	char password[128];
	uint32_t inflight;
	uint32_t keepalive_s;
	uint64_t rate_bytes_s;     /* backlog drain cap, 0 = unlimited */
	bool live_ahead;           /* send live records ahead of a draining backlog */
	char config_pubkey[BUS_PATH_MAX]; /* the ground's public key for remote configuration, "" = none */
	int config_pubkey_line;    /* where config_pubkey was set, 0 = not */
};

/*
 * [sparkplug]: a Sparkplug B edge node beside the uplink (issue 33,
 * sparkplug/README.md).  The connection is an [uplink]'s (the same keys,
 * parsed by the same table entries into .mqtt, which must stay first: the
 * shared keys' offsets are conf_uplink's); its inflight, live_ahead and
 * rate_limit are not used.  The names go into topics: no '/', '+', '#'.
 */
struct conf_sparkplug {
	struct conf_uplink mqtt;   /* enabled: a broker was given */
	char group_id[64];         /* required with the section */
	char edge_node[64];        /* "" in the file: the vehicle */
	char primary_host[64];     /* "" = publish without waiting for a host */
	char devices[CONF_BUSES_MAX][BUS_NAME_MAX]; /* buses published; none listed = all */
	size_t ndevices;
	int line, devices_line;    /* the [sparkplug] header, 'devices =' (0 = not in the file) */
};

struct conf_board {
	char path[BUS_PATH_MAX];   /* the board file itself */
	char vehicle[64];
	int rt_priority;           /* SCHED_FIFO priority of bus threads, 0 = none */
	int collector_cpu;
	int cpu_latency_us;        /* PM QoS held while realtime, -1 = none */
	uint32_t rx_coalesce_us;   /* a live bus's RX coalescing window, 0 = none */
	uint32_t batch_ms;         /* close a Batch at least this often */
	uint32_t batch_max;        /* records per Batch */
	uint32_t ring_slots;       /* per bus, power of two */
	uint32_t meta_interval_s;  /* channel dictionary in a Batch this often */
	uint32_t health_interval_s; /* Health entries in a Batch this often */
	char hw_watchdog[BUS_PATH_MAX]; /* watchdog device to kick, "" = none */
	uint32_t hw_watchdog_timeout_s;
	char stat_socket[108];     /* "" = <data dir>/railmon.sock */
	char key[BUS_PATH_MAX];    /* Ed25519 secret key sealing the log, "" = unsigned */
	int key_line;              /* where key was set, 0 = not */
	uint32_t seal_interval_s;  /* a Seal at least this often */
	uint32_t clock_step_ms;    /* a clock step beyond this is an event */
	struct conf_storage storage;
	struct conf_uplink uplink;
	struct conf_sparkplug sparkplug;
	struct conf_trigger triggers[CONF_TRIGGERS_MAX];
	size_t ntriggers;
	struct conf_required required[CONF_REQUIRED_MAX];
	size_t nrequired;
	struct conf_channel_policy policies[CONF_POLICIES_MAX];
	size_t npolicies;
	struct conf_uplink_policy bus_uplink[CONF_BUSES_MAX];   /* each bus's default */
	struct conf_uplink_frames bus_frames[CONF_BUSES_MAX];
	struct bus_cfg buses[CONF_BUSES_MAX];
	int bus_cpu[CONF_BUSES_MAX];
	int dbc_line[CONF_BUSES_MAX]; /* line of a CAN bus's 'dbc =' or a TRDP bus's 'xml =', for messages */
	size_t nbuses;
	uint64_t hash;             /* FNV-1a of the board file bytes, then its buses'
	                              DBC and TRDP XML files (conf_hash_files) */
};
