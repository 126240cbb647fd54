/* SPDX-License-Identifier: MIT */
/*
 * asc.c - Vector ASC lines to frames (trace-fmt.h).
 *
 * Header lines: "date <weekday> <month> <day> <h:m:s[.ms]> [am|pm] <year>",
 * "base hex|dec  timestamps absolute|relative", "[no] internal events
 * logged", "// comment", "Begin Triggerblock <date>", "End TriggerBlock".
 * The frame lines read (time in seconds since the trigger block's date;
 * "relative" stamps count from the line before):
 *   t ch id[x] Rx|Tx d dlc b0 b1 ...          classic (dlc 9..15: 8 bytes)
 *   t ch id[x] Rx|Tx r [dlc]                  remote
 *   t ch ErrorFrame ...                       error frame
 *   t CANFD ch Rx|Tx id[x] [name] brs esi dlc len b0 ... [dur len flags ...]
 *   t CANFD ch Rx|Tx ErrorFrame ...
 * A CANFD line whose flags (the third field after the data) lack EDL
 * (0x1000) is a classic frame in the FD layout (RTR 0x10), if it has at
 * most 8 bytes.  Any other line
 * with a time (statistics, chip status, system variables, markers) is an
 * event we do not read: skipped.  A line with neither a time nor a header
 * keyword is no ASC: -EBADMSG.
 * Dates are local time, as CANoe and python-can write them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace-fmt.h"

#define ASC_TOKS_MAX 96 /* CANFD: 10 fields + 64 bytes + 8 trailing */
#define ASC_FD_EDL 0x1000u
#define ASC_FD_RTR 0x0010u

void trace_asc_init(struct trace_asc *st)
{
	*st = (struct trace_asc){ 0 };
}

/* English month names, and the German ones CANoe writes in that locale */
static int month_of(struct trace_tok t)
{
	static const char *const names[] = { "jan", "feb", "mar", "apr", "may", "jun",
	                                     "jul", "aug", "sep", "oct", "nov", "dec" };
	static const char *const de[] = { "mai", "okt", "dez" };
	static const int de_mon[] = { 5, 10, 12 };

	if (t.n < 3)
		return 0;
	for (int i = 0; i < 12; i++)
		if (trace_tok_is((struct trace_tok){ t.p, 3 }, names[i]))
			return i + 1;
	for (int i = 0; i < 3; i++)
		if (trace_tok_is((struct trace_tok){ t.p, 3 }, de[i]))
			return de_mon[i];
	if (t.n >= 2 && (t.p[0] == 'M' || t.p[0] == 'm') && (unsigned char)t.p[1] >= 0x80)
		return 3; /* "Mär" in any encoding */
	return 0;
}

/* "h:m:s[.ms]" */
static bool parse_clock(struct trace_tok t, int *h, int *m, int *s, int *ms)
{
	char buf[24];
	int n = 0, frac = 0, nf = 0;

	if (t.n >= sizeof(buf))
		return false;
	memcpy(buf, t.p, t.n);
	buf[t.n] = 0;
	*ms = 0;
	if (sscanf(buf, "%2d:%2d:%2d%n", h, m, s, &n) != 3)
		return false;
	if (buf[n] == '.') {
		for (n++; buf[n] >= '0' && buf[n] <= '9'; n++, nf++)
			if (nf < 3)
				frac = frac * 10 + (buf[n] - '0');
		for (; nf < 3; nf++)
			frac *= 10;
		*ms = frac;
	}
	return buf[n] == 0 && *h < 24 && *m < 60 && *s < 61;
}

/* tokens after "date" or "Begin Triggerblock": [weekday] month day clock [am|pm] year */
static bool parse_date(const struct trace_tok *t, size_t n, int64_t *ret_ns)
{
	int mon, h, m, s, ms;
	uint32_t day, year;
	size_t i = 0;

	if (n > 1 && month_of(t[0]) == 0)
		i = 1; /* weekday */
	if (i + 4 > n || !(mon = month_of(t[i])) || !trace_tok_uint(t[i + 1], 10, 31, &day) ||
	    !parse_clock(t[i + 2], &h, &m, &s, &ms))
		return false;
	i += 3;
	if (trace_tok_is(t[i], "am") || trace_tok_is(t[i], "pm")) {
		if (h > 12)
			return false;
		h = h % 12 + (trace_tok_is(t[i], "pm") ? 12 : 0);
		i++;
	}
	if (i >= n || !trace_tok_uint(t[i], 10, 9999, &year) || year < 1970)
		return false;
	*ret_ns = trace_local_ns((int)year, mon, (int)day, h, m, s, ms);
	return true;
}

static int header_line(struct trace_asc *st, const struct trace_tok *t, size_t n)
{
	int64_t ns;

	if (t[0].n >= 2 && t[0].p[0] == '/' && t[0].p[1] == '/')
		return TRACE_SKIP;
	if (trace_tok_is(t[0], "date")) {
		/* the trigger block's date is the one stamps count from */
		if (!st->have_block && parse_date(t + 1, n - 1, &ns))
			st->start_ns = ns;
		return TRACE_SKIP;
	}
	if (trace_tok_is(t[0], "base") && n >= 2) {
		st->dec = trace_tok_is(t[1], "dec");
		if (n >= 4 && trace_tok_is(t[2], "timestamps"))
			st->relative = trace_tok_is(t[3], "relative");
		return TRACE_SKIP;
	}
	if (trace_tok_is(t[0], "internal") || (trace_tok_is(t[0], "no") && n > 1 && trace_tok_is(t[1], "internal")))
		return TRACE_SKIP;
	if (n >= 2 && trace_tok_is(t[0], "begin") && trace_tok_is(t[1], "triggerblock")) {
		st->have_block = true;
		st->last_ns = 0;
		if (parse_date(t + 2, n - 2, &ns))
			st->start_ns = ns;
		return TRACE_SKIP;
	}
	if (n >= 2 && trace_tok_is(t[0], "end") && trace_tok_is(t[1], "triggerblock"))
		return TRACE_SKIP;
	return -EBADMSG;
}

/* "123", "1ABx": the id, 'x' marks a 29-bit one */
static bool parse_id(const struct trace_asc *st, struct trace_tok t, struct acq_can *can)
{
	bool ext = t.n > 1 && (t.p[t.n - 1] == 'x' || t.p[t.n - 1] == 'X');
	uint32_t id;

	if (ext)
		t.n--;
	if (!trace_tok_uint(t, st->dec ? 10 : 16, ext ? 0x1fffffff : 0x7ff, &id))
		return false;
	can->id = id;
	can->flags |= ext ? ACQ_CAN_EXT : 0;
	return true;
}

static bool parse_bytes(const struct trace_asc *st, const struct trace_tok *t, size_t n, unsigned len,
                        struct acq_can *can)
{
	uint32_t v;

	if (n < len)
		return false;
	for (unsigned i = 0; i < len; i++) {
		if (!trace_tok_uint(t[i], st->dec ? 10 : 16, 255, &v))
			return false;
		can->data[i] = (uint8_t)v;
	}
	can->len = (uint8_t)len;
	return true;
}

static bool is_dir(struct trace_tok t)
{
	return trace_tok_is(t, "Rx") || trace_tok_is(t, "Tx");
}

static void error_frame(struct acq_can *can)
{
	*can = (struct acq_can){ .id = TRACE_ERR_ID, .flags = ACQ_CAN_ERR };
}

/* How many of t[0..n) in a row are bytes (at most max): the data, before
   the trailing "Length = ..." columns. */
static size_t count_bytes(const struct trace_asc *st, const struct trace_tok *t, size_t n, size_t max)
{
	size_t k = 0;
	uint32_t v;

	while (k < n && k < max && trace_tok_uint(t[k], st->dec ? 10 : 16, 255, &v))
		k++;
	return k;
}

/* "r [dlc]": the DLC is optional, and what follows it may be CANoe's
   "Length = ..." columns instead (python-can reads a missing DLC as 0). */
static int remote_dlc(const struct trace_asc *st, const struct trace_tok *t, size_t n, struct acq_can *can)
{
	uint32_t dlc = 0;

	can->flags |= ACQ_CAN_RTR;
	if (n > 0 && !trace_tok_uint(t[0], st->dec ? 10 : 16, 15, &dlc))
		dlc = 0; /* "Length": no DLC written */
	can->len = (uint8_t)(dlc > 8 ? 8 : dlc);
	return TRACE_FRAME;
}

/*
 * "d dlc bytes" of a classic-format line.  DLC 0..8 is the length; 9..15
 * a classic frame's raw DLC with 8 bytes, unless the FD length of that
 * code follows (an FD frame written in the classic layout); a larger
 * number is an FD length ("d 40" in hex and 64 bytes).  Nothing is cut:
 * every byte the line has is kept.
 */
static int data_frame(const struct trace_asc *st, const struct trace_tok *t, size_t n, struct acq_can *can)
{
	uint32_t dlc;
	unsigned len;
	size_t have;

	if (n < 1 || !trace_tok_uint(t[0], st->dec ? 10 : 16, 64, &dlc))
		return -EBADMSG;
	len = dlc;
	if (dlc > 8) {
		have = count_bytes(st, t + 1, n - 1, 64);
		len = dlc <= 15 ? trace_dlc_len(dlc) : dlc;
		if (dlc > 15 && !trace_fd_len_ok(len))
			return -EBADMSG;
		if (have >= len)
			can->flags |= ACQ_CAN_FD;
		else if (dlc <= 15)
			len = 8;
		else
			return -EBADMSG;
	}
	return parse_bytes(st, t + 1, n - 1, len, can) ? TRACE_FRAME : -EBADMSG;
}

/* t[0] = channel: "ch id Rx d dlc bytes" / "ch id Rx r [dlc]" / "ch ErrorFrame" */
static int classic_line(const struct trace_asc *st, const struct trace_tok *t, size_t n, struct acq_can *can)
{
	if (n >= 2 && trace_tok_is(t[1], "ErrorFrame")) {
		error_frame(can);
		return TRACE_FRAME;
	}
	if (n < 4 || !is_dir(t[2]))
		return TRACE_SKIP; /* "1 Statistic: ...", "1 Status: ..." */
	if (!parse_id(st, t[1], can))
		return -EBADMSG;
	can->flags |= trace_tok_is(t[2], "Tx") ? ACQ_CAN_TX : 0;
	if (trace_tok_is(t[3], "r"))
		return remote_dlc(st, t + 4, n - 4, can);
	if (!trace_tok_is(t[3], "d"))
		return -EBADMSG;
	return data_frame(st, t + 4, n - 4, can);
}

/*
 * "CANFD ch id dir brs esi d dlc len bytes" / "... r dlc": the other CANFD
 * layout CANoe logs write (id before the direction, a d/r column, then
 * "Length = ..."): an FD frame, or a remote frame (which FD has not:
 * classic).  t[0] = "CANFD".
 */
static int fd_line_dr(const struct trace_asc *st, const struct trace_tok *t, size_t n, struct acq_can *can)
{
	uint32_t brs, esi, dlc, len;

	if (n < 7 || !parse_id(st, t[2], can) || !trace_tok_uint(t[4], 10, 1, &brs) ||
	    !trace_tok_uint(t[5], 10, 1, &esi))
		return -EBADMSG;
	can->flags |= trace_tok_is(t[3], "Tx") ? ACQ_CAN_TX : 0;
	if (trace_tok_is(t[6], "r"))
		return remote_dlc(st, t + 7, n - 7, can);
	if (!trace_tok_is(t[6], "d") || n < 9 || !trace_tok_uint(t[7], st->dec ? 10 : 16, 15, &dlc) ||
	    !trace_tok_uint(t[8], 10, 64, &len) || trace_dlc_len(dlc) != len)
		return -EBADMSG;
	if (!parse_bytes(st, t + 9, n - 9, len, can))
		return -EBADMSG;
	can->flags |= ACQ_CAN_FD | (brs ? ACQ_CAN_BRS : 0) | (esi ? ACQ_CAN_ESI : 0);
	return TRACE_FRAME;
}

/* t[0] = "CANFD" */
static int fd_line(const struct trace_asc *st, const struct trace_tok *t, size_t n, struct acq_can *can,
                   unsigned *ret_chan)
{
	uint32_t ch, brs, esi, dlc, len, flags = ASC_FD_EDL;
	size_t i = 4;

	if (n < 4 || !trace_tok_uint(t[1], 10, 255, &ch))
		return -EBADMSG;
	*ret_chan = ch;
	if (!is_dir(t[2]) && is_dir(t[3]))
		return fd_line_dr(st, t, n, can);
	if (!is_dir(t[2]))
		return -EBADMSG;
	if (trace_tok_is(t[3], "ErrorFrame")) {
		error_frame(can);
		return TRACE_FRAME;
	}
	if (!parse_id(st, t[3], can))
		return -EBADMSG;
	if (i < n && !(t[i].n == 1 && (t[i].p[0] == '0' || t[i].p[0] == '1')))
		i++; /* symbolic name */
	if (i + 4 > n || !trace_tok_uint(t[i], 10, 1, &brs) || !trace_tok_uint(t[i + 1], 10, 1, &esi) ||
	    !trace_tok_uint(t[i + 2], st->dec ? 10 : 16, 15, &dlc) || !trace_tok_uint(t[i + 3], 10, 64, &len) ||
	    (len != 0 && trace_dlc_len(dlc) != len))
		return -EBADMSG; /* length 0 with a DLC: a remote frame, told by the flags */
	i += 4;
	if (!parse_bytes(st, t + i, n - i, len, can))
		return -EBADMSG;
	i += len;
	if (i + 2 < n && !trace_tok_uint(t[i + 2], 16, UINT32_MAX, &flags))
		return -EBADMSG;
	can->flags |= trace_tok_is(t[2], "Tx") ? ACQ_CAN_TX : 0;
	/* no EDL: a classic frame, unless it carries more than 8 bytes, which
	   only FD can (python-can's writer puts flags 0 on FD frames) */
	if (!(flags & ASC_FD_EDL) && len <= 8) {
		if (flags & ASC_FD_RTR) {
			can->flags |= ACQ_CAN_RTR;
			can->len = (uint8_t)(dlc > 8 ? 8 : dlc);
		}
		return TRACE_FRAME;
	}
	if (trace_dlc_len(dlc) != len)
		return -EBADMSG;
	can->flags |= ACQ_CAN_FD | (brs ? ACQ_CAN_BRS : 0) | (esi ? ACQ_CAN_ESI : 0);
	return TRACE_FRAME;
}

int trace_asc_line(struct trace_asc *st, const char *line, size_t len, struct acq_item *ret_item,
                 unsigned *ret_chan)
{
	struct trace_tok t[ASC_TOKS_MAX];
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	size_t n = trace_tok_split(line, len, t, ASC_TOKS_MAX);
	uint32_t ch = 0;
	int64_t rel;
	int r;

	if (n == 0)
		return TRACE_SKIP;
	if (n > ASC_TOKS_MAX)
		n = ASC_TOKS_MAX; /* only trailing fields past what we read */
	if (!trace_tok_time_ns(t[0], 9, &rel))
		return header_line(st, t, n);
	if (n < 2)
		return -EBADMSG;
	if (trace_tok_is(t[1], "CANFD")) {
		unsigned c = 0;

		r = fd_line(st, t + 1, n - 1, &it.can, &c);
		ch = c;
	} else if (trace_tok_uint(t[1], 10, 255, &ch)) {
		r = classic_line(st, t + 1, n - 1, &it.can);
	} else {
		r = TRACE_SKIP; /* "Start of measurement", "SV: ...", "CAN 1 Status: ..." */
	}
	if (st->relative) {
		if (rel > INT64_MAX / 4 - st->last_ns)
			return -EBADMSG; /* 73 years of relative stamps: no trace */
		st->last_ns += rel; /* every event moves the clock, frame or not */
	}
	if (r != TRACE_FRAME)
		return r;
	it.t_ns = st->start_ns + (st->relative ? st->last_ns : rel);
	*ret_item = it;
	*ret_chan = ch;
	return TRACE_FRAME;
}
