/* SPDX-License-Identifier: MIT */
/*
 * config.h - the board file: one INI file describing a vehicle computer.
 *
 * Parsed with libinih and validated completely before anything starts;
 * every error names "file:line: what is wrong".  The keys are the tables
 * of config-schema.c (docs/board-keys.md, `railmon check --keys`); the
 * examples are under board/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/parse.h"
#include "bus/bus.h"

#define BOARD_BUSES_MAX 16
/* Channel ids are bus index << 16 | n: a bus has ids for this many. */
#define BOARD_BUS_CHANNELS_MAX 65536
#define BOARD_ERR_MAX 512

struct board_storage {
	char dir[BUS_PATH_MAX];
	uint64_t segment_bytes;
	uint32_t sync_window_ms;
	uint64_t retention_bytes;
	uint64_t retention_age_s;
	int segment_line, retention_line; /* where they were set, 0 = default */
};

struct board_uplink {
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
};

struct board_cfg {
	char path[BUS_PATH_MAX];   /* the board file itself */
	char vehicle[64];
	int rt_priority;           /* SCHED_FIFO priority of bus threads, 0 = none */
	int collector_cpu;
	uint32_t batch_ms;         /* close a Batch at least this often */
	uint32_t batch_max;        /* records per Batch */
	uint32_t ring_slots;       /* per bus, power of two */
	uint32_t meta_interval_s;  /* channel dictionary in a Batch this often */
	uint32_t health_interval_s; /* Health entries in a Batch this often */
	char hw_watchdog[BUS_PATH_MAX]; /* watchdog device to kick, "" = none */
	uint32_t hw_watchdog_timeout_s;
	char stat_socket[108];     /* "" = <data dir>/railmon.sock */
	struct board_storage storage;
	struct board_uplink uplink;
	struct bus_cfg buses[BOARD_BUSES_MAX];
	int bus_cpu[BOARD_BUSES_MAX];
	int dbc_line[BOARD_BUSES_MAX]; /* line of a CAN bus's 'dbc =', for messages */
	size_t nbuses;
	uint64_t hash;             /* FNV-1a of the board file bytes (and DBCs) */
};

/*
 * Parse and validate path into *ret_cfg.  On error returns -EINVAL (or
 * -errno of the open) and writes "file:line: message" into err.
 * Relative file names inside (dbc, trace, data dir) are resolved against
 * the board file's directory.  Free with board_cfg_free().
 */
int board_cfg_load(const char *path, struct board_cfg **ret_cfg, char *err, size_t errlen);

/* Parse from memory (name is used in messages and for relative paths). */
int board_cfg_parse(const char *name, const char *text, struct board_cfg **ret_cfg, char *err,
                    size_t errlen);

struct board_cfg *board_cfg_free(struct board_cfg *cfg);

/* The board-file spelling of Modbus tables, types and byte orders ("?" when
   out of range), for messages and plans. */
const char *board_mb_table_name(enum bus_mb_table t);
const char *board_mb_type_name(enum bus_mb_type t);
const char *board_mb_order_name(enum bus_mb_order o);

/* Find a bus by section name, NULL if none. */
struct bus_cfg *board_cfg_bus(struct board_cfg *cfg, const char *name);

/* A byte count the way board files write sizes: "16M", "2G", "7.9G" (not a
   whole number of units), "512 bytes".  Returns buf.  The one copy is
   basic_format_size(); this name stays for the commands that use it. */
static inline char *board_size_text(uint64_t bytes, char *buf, size_t len)
{
	return basic_format_size(bytes, buf, len);
}

/*
 * The key reference, from the tables that parse board files: every
 * section and key with its type, range, default and help, as plain text
 * or as Markdown (docs/board-keys.md is this output).  Returns 0, or -EIO
 * if f could not be written.
 */
int board_cfg_print_keys(FILE *f, bool markdown);
