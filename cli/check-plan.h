/* SPDX-License-Identifier: MIT */
/*
 * check-plan.h - what `railmon check` says about a board file: the acquisition
 * plan (the log and its filesystem, the evidence key, the recorder, the
 * uplink, each bus with its DBC or its Modbus request plan and what they
 * cost on the wire), and the load and Modicon warnings `run` says too.
 * cli/check-cmd.c parses the options and reads the key; this writes to the
 * streams it gives.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dbc/dbc.h"
#include "conf/config.h"
#include "evidence/evd.h"

/* The board's evidence key as cli/ read it: the plan says which. */
struct cli_check_key {
	int r;                                /* >0 a key, 0 none (unsigned), <0 it cannot be used */
	const char *err;                      /* r < 0: "FILE:LINE: key PATH: why" */
	uint8_t public_key[EVD_PUBLIC_LEN];   /* r > 0: the key's public half */
};

/*
 * The plan of cfg with the log in data (NULL: [storage] dir) on out, what
 * is wrong on err ("railmon check: why"), "ok" last when nothing is.
 * Returns 0, or 1 when anything was wrong (the exit status).
 */
int cli_check_board(FILE *out, FILE *err, const struct conf_board *cfg, const char *data,
                    const struct cli_check_key *key);

/*
 * Whether bus b of cfg is over BUS_LOAD_WARN (bus/load.h) by its DBC's
 * cycle times (CAN; dbc is the bus's, NULL: none) or its poll plan (Modbus
 * RTU: the serial line); then true, with the warning `check` gives in buf
 * ("[can vehicle]: about 85% of the bus at 500 kbit/s (above 70%: frames
 * will queue)").  A Modbus TCP bus is never over.
 */
bool cli_bus_load_warning(const struct conf_board *cfg, size_t b, const dbc_t *dbc, char *buf, size_t len);

/*
 * Whether Modbus channel c's address looks like Modicon notation (30001 and
 * above: 3xxxx input registers, 4xxxx holding registers, numbered from 1)
 * rather than the 0-based protocol address railmon takes; then true, with
 * the warning and the address it probably means in buf.
 */
bool cli_mb_modicon_warning(const struct bus_mb_channel *c, char *buf, size_t len);
