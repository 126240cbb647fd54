/* SPDX-License-Identifier: MIT */
/*
 * candump.h - candump log lines: "(sec.usec) iface ID#data", FD "ID##Fdata",
 * remote "ID#R[len]", error frames (CAN_ERR_FLAG in the id).
 */
#pragma once

#include <stddef.h>

#include "acquisition/acq-item.h"

#define BUS_CANDUMP_LINE_MAX 256 /* longest valid line incl. NUL (FD, 64 B) */

/*
 * Parse one line (with or without the trailing newline) into *ret_item
 * (kind CAN, t_ns, bus = 0) and copy the interface name into ifname.
 * Returns 0, or -EBADMSG for a malformed line (nothing written).  No
 * allocation; safe on any input.
 */
int bus_candump_parse(const char *line, size_t len, struct acq_item *ret_item,
                      char *ifname, size_t ifname_len);

/* Format an item as a candump line with '\n' and NUL; returns its length
   (excluding NUL) or -EINVAL / -ENOBUFS. */
int bus_candump_format(const struct acq_item *item, const char *ifname, char *buf, size_t len);
