/* SPDX-License-Identifier: MIT */
/* check.h - what `check` knows that `run` says too. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "bus/dbc.h"
#include "conf/config.h"

/*
 * Whether bus b of cfg is over BUS_LOAD_WARN (bus/load.h) by its DBC's
 * cycle times (CAN; dbc is the bus's, NULL: none) or its poll plan (Modbus
 * RTU: the serial line); then true, with the warning `check` gives in buf
 * ("[can vehicle]: about 85% of the bus at 500 kbit/s (above 70%: frames
 * will queue)").  A Modbus TCP bus is never over.
 */
bool board_bus_load_warning(const struct conf_board *cfg, size_t b, const bus_dbc_t *dbc, char *buf, size_t len);

/*
 * Whether Modbus channel c's address looks like Modicon notation (30001 and
 * above: 3xxxx input registers, 4xxxx holding registers, numbered from 1)
 * rather than the 0-based protocol address railmon takes; then true, with
 * the warning and the address it probably means in buf.
 */
bool board_mb_modicon_warning(const struct bus_mb_channel *c, char *buf, size_t len);
