/* SPDX-License-Identifier: MIT */
/*
 * candump.h - candump log lines: "(sec.usec) iface ID#data", FD "ID##Fdata",
 * remote "ID#R[len]", error frames (CAN_ERR_FLAG in the id): read
 * (candump.c; bus/'s trace driver replays them as a CAN source) and
 * written (candump-write.c: what record/'s text writer prints for
 * `export --format candump`), and candump's screen output read
 * (candump-screen.c).
 *
 * Timestamps have microsecond resolution (1 to 6 fraction digits are read,
 * 6 are written), so read-write-read is exact.  A trailing " T" marks a
 * frame we sent (ACQ_CAN_TX), " R" one received (python-can writes both).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

/* The longest valid line, NUL included (FD, 64 bytes, an interface name
   of up to 15 characters): what trace_candump_parse reads and
   trace_candump_format writes. */
#define TRACE_CANDUMP_LINE_MAX 256

/*
 * Parse one line (with or without the trailing newline; len bounds the
 * read, a NUL before len ends it) into *ret_item (kind CAN, t_ns, bus = 0) and copy the interface
 * name into ifname (may be NULL: not copied).  Returns 0; -EBADMSG for a
 * malformed line or an interface name that does not fit ifname_len
 * (nothing written); -EINVAL for NULL line/ret_item or ifname_len 0.
 * No allocation; safe on any input; RT-safe.
 */
int trace_candump_parse(const char *line, size_t len, struct acq_item *ret_item,
                      char *ifname, size_t ifname_len);

/*
 * The same for exactly len bytes of a file (the trace driver): a NUL
 * among them makes the line malformed rather than ending it, so the
 * caller need not look for one first.  Same returns.
 */
int trace_candump_parse_bytes(const char *line, size_t len, struct acq_item *ret_item, char *ifname,
                              size_t ifname_len);

/*
 * One line of what candump prints on the terminal (not -l/-L): the
 * default "  can0  123   [8]  11 22 ...", with -ta/-td/-tz/-tA stamps,
 * -x's "TX B E" columns, FD "[64]", "remote request", -a, -i, -S, -8
 * and an error frame's "ERRORFRAME" (candump-screen.c says each shape).
 * Same contract as trace_candump_parse.  -td/-tz stamps are taken as they
 * are printed (seconds), -tA as local time.
 */
int trace_candump_parse_screen(const char *line, size_t len, struct acq_item *ret_item, char *ifname,
                             size_t ifname_len);
/* A line that continues the one before: -e's description of an error
   frame, indented by a tab. */
bool trace_candump_screen_cont(const char *line, size_t len);

/*
 * Format a CAN item as one candump line ending in '\n', NUL-terminated, in
 * buf (TRACE_CANDUMP_LINE_MAX with an interface name of up to 15 characters
 * is always enough).  Returns the length without the NUL, -ENOBUFS if buf
 * is too small (nothing useful written), -EINVAL for NULL arguments, an
 * empty or blank-containing ifname, a non-CAN item, a negative t_ns, or a
 * frame the format cannot express (id/length out of range, FD with
 * RTR/ERR).  trace_candump_parse() reads the line back to the same item.
 */
int trace_candump_format(const struct acq_item *item, const char *ifname, char *buf, size_t len);

/*
 * Does the line name an interface other than ifname, in the place and
 * form the parser takes it ("(stamp) NAME ")?  Nothing else of the line
 * is looked at: a reader that keeps one interface passes the other
 * buses' lines over without parsing them (each bus of a replay reads the
 * whole file; the parse of lines it then dropped was a third of its
 * time).  Such a line's damage, if any, is the reader of that interface's
 * to report, and the survey's.  False when the name cannot be found
 * where the parser looks: the line is then parsed, and judged.
 */
bool trace_candump_other_iface(const char *line, size_t len, const char *ifname);

/* A line of nothing but ' ', '\t', '\r' (or none): no frame and no
   damage, skipped by the trace driver and the survey's tally.  NULL:
   false. */
bool trace_candump_blank(const char *line, size_t len);

/*
 * What a survey of a candump log counts (trace_candump_tally): lines as
 * bus/'s trace driver numbers them, frames, malformed lines (a line of
 * max_line bytes or more is one malformed line, as the driver's buffer
 * sees it) and the first malformed line's number, 1-based within the
 * bytes tallied (0 = none).  skipping is the tally's own: the rest of an
 * overlong line is still to come.  Zero it before the first call.
 */
struct trace_candump_tally {
	uint64_t lines, frames, bad, first_bad;
	bool skipping;
};

/*
 * Tally the whole lines of buf[0..len) (buf starts where a line starts or
 * where the last call stopped); with at_eof also a last line without a
 * newline.  Blank lines are no frame and no damage.  Returns the bytes
 * consumed: the caller keeps the rest (a line cut by the end of buf) for
 * the next call, with more bytes after it; a cut line already max_line
 * long is counted at once and its rest skipped.  The same verdict per
 * line as the driver's (trace_candump_parse_bytes), so splitting a file
 * at line starts and adding the parts' tallies gives the file's.  No
 * allocation; -EINVAL for NULL arguments, max_line 0 or len over LONG_MAX.
 */
long trace_candump_tally(const char *buf, size_t len, bool at_eof, size_t max_line,
                         struct trace_candump_tally *t);
