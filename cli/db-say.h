/* SPDX-License-Identifier: MIT */
/*
 * db.h - `railmon db`'s answers (report/db.c): the ground database's
 * schema applied, its version said, its old day partitions dropped
 * (ground/db.h does the work), on the streams the caller gives (cli/
 * gives stdout and stderr).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

enum rpt_db_cmd {
	RPT_DB_INIT,              /* create the schema in an empty database */
	RPT_DB_MIGRATE,           /* apply the migrations it lacks */
	RPT_DB_STATUS,            /* its version against this railmon's */
	RPT_DB_PRUNE,             /* drop the day partitions older than older_s */
	RPT_DB_CMD_MAX
};

/* Connect to url and run cmd, what it did on out and what failed on err.
   The exit code: 0, or 1 (failed, or a schema that is not current). */
int rpt_db_run(const char *url, enum rpt_db_cmd cmd, uint64_t older_s, FILE *out, FILE *err);
