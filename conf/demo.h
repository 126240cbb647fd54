/* SPDX-License-Identifier: MIT */
/*
 * demo.h - the board `railmon demo` runs: where it is found, and its
 * simulated Modbus devices put on the port the simulator got.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"

/* The demo board `railmon demo` runs without --board, into buf: the
   environment's RAILMON_PKGDATADIR/demo.ini; else, for a binary inside the
   build tree it was built in, cli/demo.ini of its source tree; else the
   installed PKGDATADIR/demo.ini.  *ret_why says which (static text).
   Returns 0, or -ENAMETOOLONG. */
int conf_demo_board_path(char *buf, size_t len, const char **ret_why);

/* The board `demo` runs: given (its --board) as it is; else the one
   conf_demo_board_path() finds, which must be readable.  Returns 0 with the
   path in buf; else -ENAMETOOLONG or access()'s -errno, with what went
   wrong in err, naming the place looked at and why it was looked at. */
int conf_demo_board(const char *given, char *buf, size_t len, char *err, size_t errlen);

/* Load the demo board path (conf_load: err says what is wrong) and point
   its Modbus TCP devices on 127.0.0.1 at port, where the simulated train
   listens.  Returns 0 and *ret_cfg (free with conf_free), or -errno. */
int conf_demo_load(const char *path, uint16_t port, struct conf_board **ret_cfg, char *err, size_t errlen);
