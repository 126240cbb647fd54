/* SPDX-License-Identifier: MIT */
/*
 * can-trace.h - the trace driver (bus_can_trace_ops, BUS_CAN_TRACE): a
 * trace file of any format trace/ reads, replayed as a CAN bus.  What it
 * says about the file it read, for `replay` and its tests.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

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

/* The driver's read buffer: a line this long (newline not counted) or
   longer is one malformed line, its rest dropped (a survey that reads the
   file another way counts it the same: trace_candump_tally) */
#define BUS_CAN_TRACE_LINE_MAX (64 * 1024)

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
