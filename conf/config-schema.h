/* SPDX-License-Identifier: MIT */
/*
 * config-schema.h - the board file's sections and keys as data (one
 * basic/ini-schema.h table per kind of section), shared by config.c (the
 * parse and the checks across keys) and config-schema.c (the tables, the
 * few keys with their own code, the key reference).  Private to cli/.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/ini-schema.h"
#include "config-types.h"

/* Modbus channels per board file. */
#define CONF_CHANNELS_MAX 4096
_Static_assert(CONF_CHANNELS_MAX <= CONF_BUS_CHANNELS_MAX, "Modbus channel ids are bus << 16 | n");

enum conf_section {
	CONF_SEC_BOARD,   /* struct conf_board */
	CONF_SEC_STORAGE, /* struct conf_storage */
	CONF_SEC_UPLINK,  /* struct conf_uplink */
	CONF_SEC_CAN,     /* struct conf_pending_bus */
	CONF_SEC_MODBUS,  /* struct conf_pending_bus */
	CONF_SEC_CHANNEL, /* struct conf_pending_channel */
	CONF_SEC_TRIGGER, /* struct conf_trigger */
	CONF_SEC_SIGNAL,  /* struct conf_required (a DBC signal's) */
	CONF_SEC_TRDP,    /* struct conf_pending_bus */
	CONF_SEC_SPARKPLUG, /* struct conf_sparkplug */
	CONF_SEC_MAX
};

/* A [can NAME] or [modbus NAME] section while the file is read: the bus
   and what struct conf_board keeps beside it. */
struct conf_pending_bus {
	struct bus_cfg bus;
	int cpu;            /* conf_board.bus_cpu */
	int line;           /* of the [section] header */
	int dbc_line;       /* conf_board.dbc_line */
	uint32_t period_ms; /* Modbus: its channels' default period */
	struct conf_uplink_policy uplink;  /* its channels' default */
	struct conf_uplink_frames frames;  /* CAN: its raw frames */
};

/* A [channel NAME] section while the file is read (the lines are 0 for a
   key not given). */
struct conf_pending_channel {
	struct bus_mb_channel ch;
	char bus[BUS_NAME_MAX];
	int line;           /* of the [section] header */
	int unit_line, table_line, address_line;
	uint32_t required_ms; /* required_within_ms, 0 = not required */
	int required_line;
	struct conf_uplink_policy uplink;
	int uplink_line;      /* 0: the bus's default */
};

/* A [signal NAME] section while the file is read. */
struct conf_pending_signal {
	char name[128];
	uint32_t within_ms;   /* required_within_ms, 0 = not required */
	struct conf_uplink_policy uplink;
	int line, uplink_line;
};

/* The policy as `uplink =` says it ("deadband 0.5, every 10s"), for
   `check` and messages. */
const char *conf_uplink_policy_text(const struct conf_uplink_policy *p, char *buf, size_t len);

/* The table of one kind of section; NULL past CONF_SEC_MAX. */
const struct basic_ini_table *conf_schema_table(enum conf_section s);

/* The board-file spelling of Modbus tables, types and byte orders ("?" when
   out of range), for messages and plans. */
const char *conf_mb_table_name(enum bus_mb_table t);
const char *conf_mb_type_name(enum bus_mb_type t);
const char *conf_mb_order_name(enum bus_mb_order o);

/*
 * The key reference, from the tables that parse board files: every
 * section and key with its type, range, default and help, as plain text
 * or as Markdown (docs/board-keys.md is this output).  Returns 0, or -EIO
 * if f could not be written.
 */
int conf_print_keys(FILE *f, bool markdown);
