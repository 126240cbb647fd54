/* SPDX-License-Identifier: MIT */
/*
 * trace-write.h - CAN frames written as Vector ASC or Vector BLF, so a
 * recording opens in the tools rail engineers have (CANoe/CANalyzer,
 * python-can, asammdf).  Unlike the line formats of format.h a trace has
 * a header that needs the first frame's time and, for BLF, compressed
 * containers and a header rewritten at the end: a writer object.
 *
 * Channels are bus index + 1 (Vector numbers from 1).  Times: the ASC
 * "Begin Triggerblock" date and the BLF start SYSTEMTIME are the first
 * frame's time cut to the millisecond, in local time as both formats keep
 * it; each frame is stored relative to that (ASC to the microsecond, BLF
 * to the nanosecond), so the bus trace readers and python-can read the
 * times back exactly.  A frame earlier than the first one (a log is in
 * time order, but clocks can step) is written at the start.
 * BLF: containers of up to 128 KiB, zlib; the file header's sizes, object
 * count and stop time are filled in at close when the output can seek
 * (a pipe keeps zeros there, which readers ignore).
 */
#pragma once

#include <stdio.h>

#include "acquisition/acq-item.h"

enum trace_write_format {
	TRACE_WRITE_ASC = 0,
	TRACE_WRITE_BLF,
};

typedef struct trace_writer trace_writer_t;

/* "asc", "blf" -> *ret_fmt: 0 or -EINVAL. */
int trace_write_format_parse(const char *name, enum trace_write_format *ret_fmt);

/* A writer onto out (not closed by the writer).  0, -EINVAL, -ENOMEM. */
int trace_writer_new(FILE *out, enum trace_write_format fmt, trace_writer_t **ret_w);

/* One CAN frame.  0; -EINVAL for a record that is no CAN frame or a frame
   out of range (id, length); -EIO if the stream has an error. */
int trace_writer_frame(trace_writer_t *w, const struct acq_item *it);

/* Finish the file (ASC: "End TriggerBlock"; BLF: the last container and
   the header) and free w.  0 or -EIO.  NULL: nothing. */
int trace_writer_close(trace_writer_t *w);
