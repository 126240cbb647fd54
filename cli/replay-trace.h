/* SPDX-License-Identifier: MIT */
/*
 * replay-trace.h - what a trace (candump, Vector ASC/BLF, PEAK TRC) holds, said
 * before a replay.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "bus/can-trace.h"
#include "trace/candump.h"
#include "trace/trace.h"

struct conf_board;

/* What a survey found: the format, the frames, and the frames of each
   channel (ASC, BLF, TRC: 1..255; a candump log's all in chan[0]). */
struct cli_trace_info {
	enum trace_format fmt;
	uint64_t frames;
	uint64_t damaged; /* parts the replay skips (the first said by the survey) */
	uint64_t chan[BUS_TRACE_CHANNELS];
};

/*
 * Read the trace once, all channels, as fast as it goes, and say on out
 * "railmon replay: TRACE: FORMAT, N frames; K damaged parts skipped, the
 * first: PLACE" (file:line, or a BLF file offset): what the replay then
 * skips.  0, or -errno if the trace cannot be read.
 */
int cli_trace_survey(FILE *out, const char *trace, enum trace_format fmt);
/* The same, and what it found in *ret_info (NULL: not kept).  The
   frames of each channel are said too, where the format has channels:
   "..., 12 frames: channel 1 8, channel 2 4". */
int cli_trace_survey_info(FILE *out, const char *trace, enum trace_format fmt, struct cli_trace_info *ret_info);

/*
 * A trace replay's source (not a log directory) must be a trace railmon
 * reads; with survey (not onto a CAN interface) what it holds is said
 * first (cli_trace_survey), on err as what is wrong, and a trace with no
 * frame (empty, or nothing but damage) is refused: a replay of it would
 * store a log of events only.  -1 to go on, else the exit code (2; 1 for
 * no frame).
 */
int cli_trace_check(FILE *err, const char *trace, bool survey);
/* The same, with the survey's findings in *ret_info (zeroed if none). */
int cli_trace_check_info(FILE *err, const char *trace, bool survey, struct cli_trace_info *ret_info);

/*
 * The channel of the one CAN bus of a --dbc replay (cfg from
 * conf_replay_dbc after conf_replay_trace): channel (0 = not given) if
 * the trace holds it; else the only channel the trace holds; several and
 * none given: refused, naming them, asking for --channel N.  -1 to go
 * on, else the exit code (2), said on err.
 */
int cli_trace_pick_channel(FILE *err, const struct cli_trace_info *info, struct conf_board *cfg, uint32_t channel);

/*
 * Which bus of cfg (after conf_replay_trace) reads which channel, with
 * the frames each gets, and the channels no bus reads with their frames,
 * on out.  A trace with frames none of which a bus reads is refused (the
 * replay would store nothing): -1 to go on, else the exit code (1).
 */
int cli_trace_plan(FILE *out, const struct cli_trace_info *info, const struct conf_board *cfg);

/*
 * A capture's first look (after cli_trace_check_info() and
 * conf_replay_capture()): its packets and the UDP datagrams and TCP bytes
 * on the ports of cfg's [trdp] buses, said on err; one without any is
 * refused.  -1 to go on, else the exit status.
 */
int cli_capture_survey(FILE *err, const char *trace, struct cli_trace_info *info, const struct conf_board *cfg);

/*
 * A capture replayed into several TRDP buses (cfg after
 * conf_replay_capture): the UDP datagrams and TCP connections each bus
 * takes (by the address they were sent to: bus_trdp_capture_owner(), as
 * the buses' drivers take them) and those on their ports addressed to none
 * (the first such address named), on out.  A capture none of which a bus
 * takes is refused: -1 to go on, else the exit code (1; 2 unreadable).
 */
int cli_capture_split(FILE *out, const char *trace, const struct conf_board *cfg);

/* The frames of the trace cfg's buses read (replay's progress total). */
uint64_t cli_trace_frames_read(const struct cli_trace_info *info, const struct conf_board *cfg);

/* After a replay of a trace that ran (exit code r): damaged parts make it
   1, as export's of a damaged log, said in one sentence on err (the first
   place was said by the survey).  The exit code. */
int cli_trace_verdict(FILE *err, const char *trace, const struct cli_trace_info *info, int r);
