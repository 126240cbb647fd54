/* SPDX-License-Identifier: MIT */
/*
 * config.h - the board file: one INI file describing a vehicle computer.
 *
 * Parsed with libinih and validated completely before anything starts;
 * every error names "file:line: what is wrong".  The keys are the tables
 * of config-schema.c (docs/board-keys.md, `railmon check --keys`); the
 * examples are under cli/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "basic/parse.h"
#include "config-types.h"

/*
 * Parse and validate path into *ret_cfg.  On error returns -EINVAL (or
 * -errno of the open) and writes "file:line: message" into err.
 * Relative file names inside (dbc, trace, data dir) are resolved against
 * the board file's directory.  Free with conf_free().  Its hash covers the
 * board file's bytes and then the bytes of each bus's DBC or TRDP XML, in
 * board order (conf_hash_files()): they decide the channels and their ids.
 */
int conf_load(const char *path, struct conf_board **ret_cfg, char *err, size_t errlen);

/* Parse from memory (name is used in messages and for relative paths).
   Its hash is of text alone: no file is read (conf_hash_files() adds them). */
int conf_parse(const char *name, const char *text, struct conf_board **ret_cfg, char *err,
                    size_t errlen);

/*
 * cfg->hash (the board text's) with the contents of the files it refers
 * to hashed in: for each bus in board order its DBC, its TRDP XML, as a tag,
 * the bytes and their count; a file that cannot be read as its errno (run
 * and check refuse it in their own words; the hash stays defined).  So a
 * changed DBC or XML under the same board file is a new config hash, and
 * the same files the same one.  What conf_load() does after parsing.
 */
void conf_hash_files(struct conf_board *cfg);

struct conf_board *conf_free(struct conf_board *cfg);

/* Find a bus by section name, NULL if none. */
struct bus_cfg *conf_bus(struct conf_board *cfg, const char *name);

/* A byte count the way board files write sizes: "16M", "2G", "7.9G" (not a
   whole number of units), "512 bytes".  Returns buf.  The one copy is
   basic_format_size(); this name stays for the commands that use it. */
static inline char *conf_size_text(uint64_t bytes, char *buf, size_t len)
{
	return basic_format_size(bytes, buf, len);
}
