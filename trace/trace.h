/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the trace file formats trace/ reads (and bus/'s trace driver,
 * bus_can_trace_ops, replays), told apart by content, never by file name: a candump
 * log, Vector ASC, Vector BLF (zlib-compressed containers) and PEAK TRC
 * 1.0 to 2.1 (a text one may be gzip-compressed: trace_format_detect_file
 * and the driver inflate it).  A file that is none of them is refused at open with
 * -EMEDIUMTYPE; callers name TRACE_FORMATS in their message.  Packet captures
 * (pcap, pcapng) are told too, by their magic numbers, so a capture is
 * named as one rather than as garbage; they hold no CAN frames and are read
 * by trace/pcap.h, not by the trace driver.
 */
#pragma once

#include <stddef.h>

enum trace_format {
	TRACE_UNKNOWN = 0,
	TRACE_EMPTY,   /* nothing but blanks: no frame, nothing wrong */
	TRACE_CANDUMP,
	TRACE_ASC,
	TRACE_BLF,
	TRACE_TRC,
	TRACE_PCAP,    /* a packet capture (classic pcap): not CAN, read by trace/pcap.h */
	TRACE_PCAPNG,  /* a packet capture (pcapng) */
};

/* what a refusal names as tried */
#define TRACE_FORMATS "candump log, Vector ASC, Vector BLF, PEAK TRC 1.0-2.1"

/* How many leading bytes trace_format_detect() looks at (at most). */
#define TRACE_DETECT_LEN (64 * 1024)

/*
 * The format of a file that starts with head[0..len): BLF by its "LOGG"
 * signature, pcap and pcapng by their magic numbers (either byte order); a text format by its first line that only that format has
 * (a TRC ";$FILEVERSION" or "N)" line, an ASC "date"/"base"/"Begin
 * Triggerblock" line or event line, a valid candump line).  Comment lines
 * of either kind and garbage lines are looked past.  Pure; any input.
 */
enum trace_format trace_format_detect(const void *head, size_t len);

/* trace_format_detect() on the first TRACE_DETECT_LEN bytes of a file:
   0 and *ret_fmt, -EMEDIUMTYPE if no format fits, -errno from open/read. */
int trace_format_detect_file(const char *path, enum trace_format *ret_fmt);

/* "candump", "Vector ASC", ...; "unknown" for anything else. */
const char *trace_format_name(enum trace_format fmt);
