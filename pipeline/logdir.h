/* SPDX-License-Identifier: MIT */
/*
 * logdir.h - the log's directory: which one, whether [storage]'s sizes can
 * ever work on its filesystem (`check` and every start ask), and opening
 * the log there with what retention must know.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "storage/stor.h"

/* The log directory for cfg: override (--data) if not NULL, else [storage]
   dir, else "railmon-data". */
const char *pl_data_dir(const struct conf_board *cfg, const char *override);

/*
 * Compare [storage] segment_size and retention_size with the filesystem
 * holding dir (statvfs): -EFBIG / -E2BIG with "file:line: message" in err
 * when they can never work (two segments must fit, the budget must fit);
 * else 0, with a warning in warn ("" if none) when the space free now is
 * short of a segment or of the budget.  Used by `check` and at every start.
 */
int pl_log_check_space(const struct conf_board *cfg, const char *dir, char *err, size_t errlen, char *warn,
                          size_t warnlen);

/*
 * Open (and recover) the log of cfg in dir, after pl_log_check_space()
 * (its warning into warn).  boot_id: 16 bytes, this run's.  Retention
 * starts from the uplink cursor when the board has an [uplink] and the
 * cursor can be trusted.  0 and the log, or -errno with the message in err.
 */
int pl_log_open(const struct conf_board *cfg, const char *dir, const uint8_t *boot_id, stor_log_t **ret_log,
                   char *warn, size_t warnlen, char *err, size_t errlen);
