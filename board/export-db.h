/* SPDX-License-Identifier: MIT */
/*
 * export-db.h - `railmon export --db URL --vehicle V` (export-db.c).
 */
#pragma once

#include "export-write.h"

/* The vehicle's records from the ground database, named by its
   dictionary there, through export-write.c.  0, the exit code, or -errno. */
int export_db(struct export_ctx *x, const char *url, const char *vehicle);
