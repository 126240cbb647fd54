/* SPDX-License-Identifier: MIT */
/*
 * candump.h - candump log lines: "(sec.usec) iface ID#data", FD "ID##Fdata",
 * remote "ID#R[len]", error frames (CAN_ERR_FLAG in the id).  Timestamps
 * have microsecond resolution (1 to 6 fraction digits are read, 6 are
 * written), so read-write-read is exact.
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

#include "bus.h"

/*
 * Trace driver (bus_can_trace_ops, BUS_CAN_TRACE): after recv() counted a
 * malformed line (stats.bad_input, ACQ_EV_CAN_BAD_LINE event with
 * detail = line number), writes "file:line: malformed candump line" of the
 * FIRST such line into buf (for board/ to print).  Returns 0, -ENOENT if
 * no bad line was seen yet, -EINVAL if dev is not a trace device or buf is
 * NULL/empty.  Not synchronised with the RX thread: call it from the thread
 * that runs recv() or after that thread stopped.
 */
int bus_can_trace_first_bad(const bus_dev_t *dev, char *buf, size_t len);
