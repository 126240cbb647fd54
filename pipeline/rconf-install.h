/* SPDX-License-Identifier: MIT */
/*
 * rconf-install.h - the vehicle's side of a signed configuration message
 * (evidence/remote-config.h, issue 32) once it verified: put its files in
 * place next to the board file so that a power cut at any moment leaves
 * either the old file or the new one whole, keep the previous ones as
 * <name>.prev to go back to, and the version the vehicle runs.
 *
 * The validation `check` does and the restart SIGHUP does are the
 * caller's (cli/); nothing here logs: errors are -errno with the reason in
 * words in the caller's buffer.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "evidence/remote-config.h"

/* The version the vehicle runs, from DIR/config.version (one line,
   "railmon-config-version N"): 0 and *ret (0 when the file does not
   exist: no message taken yet); -EBADMSG (not such a line); -errno. */
int pl_rconf_version_load(const char *dir, uint64_t *ret);

/* Store it: written to a temporary file, fsynced, renamed over, the
   directory fsynced.  0 or -errno. */
int pl_rconf_version_store(const char *dir, uint64_t version);

/* A pushed board on probation (issue 32): the message whose files run,
   kept as DIR/config.trial until its probation ends, so that a `run`
   killed meanwhile goes back to the previous files at its next start.
   store: written, fsynced, renamed, 0 or -errno; load: 1 and a malloc'd
   copy, 0 when there is none, -errno (-EFBIG over EVD_RCONF_MAX); clear:
   removed (none: 0), 0 or -errno. */
int pl_rconf_trial_store(const char *dir, const void *msg, size_t len);
int pl_rconf_trial_load(const char *dir, uint8_t **ret, size_t *ret_len);
int pl_rconf_trial_clear(const char *dir);

/*
 * Put m's files in place: files[0] at board_path itself, the others at
 * their names under board_path's directory (subdirectories made).  First,
 * with nothing changed yet: each HASH file must be on board with that
 * content (else -ENOENT, "not on board with the content hash sent"), each
 * CONTENT file is written to <name>.new and fsynced.  Then each CONTENT
 * file's previous version becomes <name>.prev (a hard link: the name
 * always holds a whole file) and <name>.new is renamed over <name>; the
 * directories are fsynced.  0; -errno with why, and then nothing changed
 * unless the error came in the renames (said so).
 */
int pl_rconf_install(const char *board_path, const struct evd_rconf *m, char *why, size_t whylen);

/*
 * Go back to what was there before pl_rconf_install(board_path, m): each
 * CONTENT file's <name>.prev renamed over <name>, or <name> removed if
 * there was none.  0 or the first -errno (it goes on with the others).
 */
int pl_rconf_rollback(const char *board_path, const struct evd_rconf *m);
