/* SPDX-License-Identifier: MIT */
/*
 * trace-fmt.h - the readers of the trace formats
 * other than candump (asc.c, trc.c, blf.c) and the text helpers they share
 * (trace-text.c).  Each reader gives frames as struct acq_item (kind CAN,
 * t_ns, bus = 0) and the channel the file names (1-based as Vector and
 * PEAK number them; 1 where the format has no channel).
 *
 * None allocates while reading (the BLF reader allocates its buffers and
 * its inflate state in trace_blf_new), so they run on the RX thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "acquisition/acq-item.h"
#include "spec.h"

/* An error frame of a trace: the formats say there was one, not its class;
   an error frame on the wire is a bus error (SocketCAN's CAN_ERR_BUSERROR,
   what candump logs and python-can reads as an error frame). */
#define TRACE_ERR_ID 0x80u

/* what a line reader made of a line */
enum {
	TRACE_SKIP = 0,  /* header, comment or an event that is no frame */
	TRACE_FRAME = 1, /* *ret_item and *ret_chan set */
};

/* ---- text helpers (trace-text.c) ---- */

struct trace_tok {
	const char *p;
	size_t n;
};

/* Split on blanks (space, tab, CR, NUL) into at most max tokens; returns
   the count, max + 1 if more were there (the rest not split). */
size_t trace_tok_split(const char *line, size_t len, struct trace_tok *toks, size_t max);
bool trace_tok_is(struct trace_tok t, const char *s); /* ASCII case-insensitive */
/* whole token as an unsigned number in base 10 or 16, at most max */
bool trace_tok_uint(struct trace_tok t, unsigned base, uint32_t max, uint32_t *ret);
/* "123.456789" (at most 9 fraction digits, no sign) times 10^scale_exp
   nanoseconds: scale_exp 9 for seconds, 6 for milliseconds; at most
   INT64_MAX / 4 ns */
bool trace_tok_time_ns(struct trace_tok t, int scale_exp, int64_t *ret_ns);
/* local time (as the tools that write traces keep it) to Unix ns; 0 for
   a date before 1970 or after 2116 (what no trace is from) */
int64_t trace_local_ns(int year, int mon, int day, int hour, int min, int sec, int msec);
/* ---- Vector ASC (asc.c) ---- */

struct trace_asc {
	bool dec;          /* "base dec": ids, DLCs and bytes in decimal */
	bool relative;     /* "timestamps relative": each one from the one before */
	bool have_block;   /* a "Begin Triggerblock" set start_ns */
	int64_t start_ns;  /* the measurement's start (from the date), Unix ns */
	int64_t last_ns;   /* relative: sum so far */
};

void trace_asc_init(struct trace_asc *st);
/* TRACE_FRAME, TRACE_SKIP, or -EBADMSG for a line that is no ASC */
int trace_asc_line(struct trace_asc *st, const char *line, size_t len, struct acq_item *ret_item,
                 unsigned *ret_chan);

/* ---- PEAK TRC (trc.c) ---- */

#define TRACE_TRC_COLS_MAX 16

struct trace_trc {
	unsigned version;  /* 10 = 1.0 ... 21 = 2.1; 0 = not said (1.0) */
	char cols[TRACE_TRC_COLS_MAX]; /* 2.x: the $COLUMNS letters */
	size_t ncols;
	int64_t start_ns;  /* $STARTTIME, Unix ns; 0 if none */
};

void trace_trc_init(struct trace_trc *st);
int trace_trc_line(struct trace_trc *st, const char *line, size_t len, struct acq_item *ret_item,
                 unsigned *ret_chan);

/* ---- Vector BLF (blf.c) ---- */

/* the largest container (uncompressed) read; Vector's tools and python-can
   write 128 KiB */
#define TRACE_BLF_CONTAINER_MAX (1024 * 1024)

struct trace_blf;

/* Where the reader's bytes come from: like read(2), 0 at the end. */
typedef ssize_t (*trace_blf_read_fn)(void *ctx, void *buf, size_t len);

int trace_blf_new(struct trace_blf **ret_blf);
void trace_blf_free(struct trace_blf *blf);
/* Back to the start of a file (a loop's next pass). */
void trace_blf_reset(struct trace_blf *blf);
/*
 * The next frame: TRACE_FRAME, 0 at the end of the file, -EBADMSG for
 * damaged input (trace_blf_why says what and where; reading goes on after
 * it, at the next object or container, or ends at the next call if
 * nothing can follow), or a -errno of fn.
 */
int trace_blf_next(struct trace_blf *blf, trace_blf_read_fn fn, void *ctx, struct acq_item *ret_item,
                 unsigned *ret_chan);
/* The last -EBADMSG: its reason and the file offset it was found at. */
const char *trace_blf_why(const struct trace_blf *blf, uint64_t *ret_off);

/* Objects that are no CAN frame (markers, statistics, other buses, object
   types this reader does not know) are skipped, not damage, and counted by
   type in the pass over the file read since trace_blf_new or trace_blf_reset:
   the first TRACE_BLF_SKIP_TYPES types seen, the rest together (other; any
   u32 is a type a file can hold, so no type value can say it). */
#define TRACE_BLF_SKIP_TYPES 16

struct trace_blf_skip {
	uint32_t type;  /* unless other */
	bool other;     /* the objects of types beyond the first 16 */
	uint64_t count;
};

/* The i-th type counted (0-based, in the order first seen): 0, or -ENOENT
   past the last; -EINVAL for NULL. */
int trace_blf_skipped(const struct trace_blf *blf, size_t i, struct trace_blf_skip *ret_skip);
/* A short name of a common object type ("global marker"), NULL if none. */
const char *trace_blf_type_name(uint32_t type);
