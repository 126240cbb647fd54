/* SPDX-License-Identifier: MIT */
/*
 * db-say.h - `railmon db`'s answers (cli/db-say.c): the ground database's
 * schema applied, its version said, its old day partitions dropped
 * (ground/db.h does the work), on the streams the caller gives (cli/
 * gives stdout and stderr).
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

enum cli_db_cmd {
	CLI_DB_INIT,              /* create the schema in an empty database */
	CLI_DB_MIGRATE,           /* apply the migrations it lacks */
	CLI_DB_STATUS,            /* its version against this railmon's */
	CLI_DB_PRUNE,             /* drop the day partitions older than older_s */
	CLI_DB_CMD_MAX
};

/* Connect to url and run cmd, what it did on out and what failed on err.
   The exit code: 0, or 1 (failed, or a schema that is not current). */
int cli_db_run(const char *url, enum cli_db_cmd cmd, uint64_t older_s, FILE *out, FILE *err);
