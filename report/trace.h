/* SPDX-License-Identifier: MIT */
/*
 * trace.h - what a trace (candump, Vector ASC/BLF, PEAK TRC) holds, said
 * before a replay.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "bus/trace.h"

/*
 * Read the trace once, all channels, as fast as it goes, and say on out
 * "railmon replay: TRACE: FORMAT, N frames; K damaged parts skipped, the
 * first: PLACE" (file:line, or a BLF file offset): what the replay then
 * skips.  0, or -errno if the trace cannot be read.
 */
int rpt_trace_survey(FILE *out, const char *trace, enum bus_trace_format fmt);

/*
 * A trace replay's source (not a log directory) must be a trace railmon
 * reads; with survey (not onto a CAN interface) what it holds is said
 * first (rpt_trace_survey), on err as what is wrong.  -1 to go on, else
 * the exit code (2).
 */
int rpt_trace_check(FILE *err, const char *trace, bool survey);
