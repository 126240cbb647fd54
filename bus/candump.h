/* SPDX-License-Identifier: MIT */
/*
 * candump.h - candump log lines: "(sec.usec) iface ID#data", FD "ID##Fdata",
 * remote "ID#R[len]", error frames (CAN_ERR_FLAG in the id), and the trace
 * driver that reads them as a CAN source (bus_can_trace_ops).  Writing
 * such lines is record/'s (record/format.h: rec_candump_format), with the
 * other text formats of records.
 *
 * Timestamps have microsecond resolution (1 to 6 fraction digits are read,
 * 6 are written), so read-write-read is exact.  A trailing " T" marks a
 * frame we sent (ACQ_CAN_TX), " R" one received (python-can writes both).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "acquisition/acq-item.h"
#include "bus.h"

#define BUS_CANDUMP_LINE_MAX 256 /* longest valid line incl. NUL (FD, 64 B) */

/*
 * Parse one line (with or without the trailing newline; len bounds the
 * read, a NUL before len ends it) into *ret_item (kind CAN, t_ns, bus = 0) and copy the interface
 * name into ifname (may be NULL: not copied).  Returns 0; -EBADMSG for a
 * malformed line or an interface name that does not fit ifname_len
 * (nothing written); -EINVAL for NULL line/ret_item or ifname_len 0.
 * No allocation; safe on any input; RT-safe.
 */
int bus_candump_parse(const char *line, size_t len, struct acq_item *ret_item,
                      char *ifname, size_t ifname_len);

/*
 * One line of what candump prints on the terminal (not -l/-L): the
 * default "  can0  123   [8]  11 22 ...", with -ta/-td/-tz/-tA stamps,
 * -x's "TX B E" columns, FD "[64]", "remote request", -a, -i, -S, -8
 * and an error frame's "ERRORFRAME" (candump-screen.c says each shape).
 * Same contract as bus_candump_parse.  -td/-tz stamps are taken as they
 * are printed (seconds), -tA as local time.
 */
int bus_candump_parse_screen(const char *line, size_t len, struct acq_item *ret_item, char *ifname,
                             size_t ifname_len);
/* A line that continues the one before: -e's description of an error
   frame, indented by a tab. */
bool bus_candump_screen_cont(const char *line, size_t len);

/*
 * Trace driver (bus_can_trace_ops, BUS_CAN_TRACE; see bus/CAN.md): after
 * recv() counted a malformed line (stats.bad_input, ACQ_EV_CAN_BAD_LINE
 * event with detail = line number), writes "file:line: malformed candump
 * line" of the FIRST such line into buf (for cli/ to print).  Returns 0,
 * -ENOENT if no bad line was seen yet, -EINVAL if dev is not a trace
 * device or buf is NULL/empty.  Not synchronised with the RX thread: call
 * it from the thread that runs recv() or after that thread stopped.
 */
int bus_can_trace_first_bad(const bus_dev_t *dev, char *buf, size_t len);

/* Channels of an ASC, BLF or TRC file are 1..BUS_TRACE_CHANNELS-1 */
#define BUS_TRACE_CHANNELS 256

/*
 * Trace driver: the frames read so far on each channel, before the
 * device's channel and filters chose (counts[c], channel c, for c below
 * n; a candump log's frames all count as channel 0).  For what `replay`
 * says a trace holds.  Returns 0; -EINVAL as bus_can_trace_first_bad.
 * Same threading rule as bus_can_trace_first_bad.
 */
int bus_can_trace_channels(const bus_dev_t *dev, uint64_t *counts, size_t n);

/*
 * Trace driver, BLF: the objects of the file's first pass that are no CAN
 * frame and were skipped (not damage), counted by type, as "2 of type 96
 * (global marker), 1 of type 160" into buf (a looping trace: of the pass
 * read last, or being read).  Returns 0, -ENOENT if none was
 * skipped (or the trace is no BLF file), -EINVAL as bus_can_trace_first_bad;
 * the same threading rule.
 */
int bus_can_trace_skipped(const bus_dev_t *dev, char *buf, size_t len);
