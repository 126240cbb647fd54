/* SPDX-License-Identifier: MIT */
/*
 * xml.h - a device's TRDP XML configuration (the format of the TCNopen
 * reference stack, its trdp-config.xsd): the telegrams (ComId, name,
 * data set, PD cycle and timeout, MD parameters) and the data sets
 * (elements with type, array size, unit, scale, offset).
 *
 * trdp_config_load() parses a file once, at configuration time (it
 * allocates), checks it and compiles each telegram's data set into a plan
 * (dataset.h).  The result is plain data, read-only for the caller, and
 * lives until trdp_config_free().  Pure: no sockets, threads or printing.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The files railmon reads are small; a larger one is refused (-EFBIG). */
#define TRDP_XML_MAX_BYTES (16u << 20)

/*
 * Parse path.  Returns 0 and *ret_cfg, or -errno: -ENOENT and the like
 * for the file, -EFBIG, -EINVAL for its content; then, if err is not
 * NULL, err gets "file:line:column: what is wrong" (or "file: what").
 * Checked: well-formed XML; numbers (decimal, within 32 bits); each type
 * (a name, 1-16, a data set's id above 30, or a data set's name); each
 * nested data set defined, none containing itself, at most TRDP_NEST_MAX
 * deep; array-size 0 only after a single integer element (8 to 32 bits:
 * its value is the length, as the reference marshals it); data-set ids and
 * ComIds unique (but see merged); scale and offset finite; each data set
 * has an element.  Telegram and element names are made unique (renamed).
 */
int trdp_config_load(const char *path, struct trdp_config **ret_cfg, char *err, size_t errlen);
/* The same from text in memory (len bytes); name is used in errors only. */
int trdp_config_parse(const char *name, const char *text, size_t len, struct trdp_config **ret_cfg,
                      char *err, size_t errlen);
/* Frees cfg and its plans; NULL is fine.  Returns NULL. */
struct trdp_config *trdp_config_free(struct trdp_config *cfg);

/* The telegram of a ComId, NULL when the XML has none (binary search;
   thread-safe on a loaded config). */
const struct trdp_telegram *trdp_config_find(const struct trdp_config *cfg, uint32_t comid);
