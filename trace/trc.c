/* SPDX-License-Identifier: MIT */
/*
 * trc.c - PEAK TRC lines to frames (trace-fmt.h), versions 1.0 to 2.1.
 *
 * ";$FILEVERSION=x.y" says the version (none: 1.0), ";$STARTTIME=days"
 * (2.x: days since 1899-12-30, local time) the start, ";$COLUMNS=..." the
 * columns of 2.x; other ';' lines are comments.  Time offsets are in ms.
 *   1.0   "N)  offset  id  dlc  bytes"
 *   1.1   "N)  offset  type  id  dlc  bytes|RTR"            type Rx|Tx|Warng|Error
 *   1.2   "N)  offset  bus  type  id  dlc  bytes|RTR"
 *   1.3   "N)  offset  bus  type  id  -  dlc  bytes|RTR"
 *   2.x   by $COLUMNS: N number, O offset, T type, B bus, I id, d Rx|Tx,
 *         R reserved, l length, L DLC, D bytes (2.0 default N,O,T,I,d,l,D;
 *         2.1 default N,O,T,B,I,d,R,L,D).  Types: DT classic, FD/FB/FE/BI
 *         FD (FB: BRS, FE: ESI, BI: both), RR remote, ER error frame;
 *         ST, EC and EV are status, not frames: skipped.
 * An id of more than 4 hex digits is a 29-bit one (PEAK writes 4 or 8).
 * No bus column: channel 1.
 */
#include <errno.h>
#include <string.h>

#include "trace-fmt.h"

#define TRC_TOKS_MAX 80
#define OLE_EPOCH_DAYS 25569 /* 1899-12-30 to 1970-01-01 */

void trace_trc_init(struct trace_trc *st)
{
	*st = (struct trace_trc){ 0 };
}

static void set_cols(struct trace_trc *st, const char *s, size_t len)
{
	st->ncols = 0;
	for (size_t i = 0; i < len && st->ncols < TRACE_TRC_COLS_MAX; i++)
		if ((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z'))
			st->cols[st->ncols++] = s[i];
}

/* "days.fraction" since 1899-12-30 00:00 local time */
static void set_start(struct trace_trc *st, struct trace_tok t)
{
	const char *dot = memchr(t.p, '.', t.n);
	int64_t ns;

	/* a day as fixed point with 9 digits (about 86 us: past them is noise) */
	if (dot && (size_t)(dot - t.p) + 10 < t.n)
		t.n = (size_t)(dot - t.p) + 10;
	if (!trace_tok_time_ns(t, 9, &ns) || ns < (int64_t)OLE_EPOCH_DAYS * 1000000000)
		return;
	ns -= (int64_t)OLE_EPOCH_DAYS * 1000000000;
	if (ns / 1000000000 > 60000)
		return; /* after 2134: no trace's start (and not an int of days) */
	{
		int64_t days = ns / 1000000000, frac_ns = (ns % 1000000000) * 86400;
		int64_t sec = frac_ns / 1000000000;
		int64_t midnight = trace_local_ns(1970, 1, 1 + (int)days, 0, 0, 0, 0);

		st->start_ns = midnight + sec * 1000000000 + frac_ns % 1000000000;
	}
}

static int comment_line(struct trace_trc *st, const char *s, size_t len)
{
	static const char ver[] = ";$FILEVERSION=", start[] = ";$STARTTIME=", cols[] = ";$COLUMNS=";
	struct trace_tok t;

	if (len > sizeof(ver) - 1 && memcmp(s, ver, sizeof(ver) - 1) == 0) {
		const char *v = s + sizeof(ver) - 1;

		if (len - (sizeof(ver) - 1) < 3 || v[1] != '.' || v[0] < '1' || v[0] > '2' || v[2] < '0' || v[2] > '9')
			return -EBADMSG;
		st->version = (unsigned)(v[0] - '0') * 10 + (unsigned)(v[2] - '0');
		if (st->version > 21 || (st->version < 20 && st->version > 13))
			return -EBADMSG;
		if (st->version >= 20 && st->ncols == 0)
			set_cols(st, st->version == 20 ? "NOTIdlD" : "NOTBIdRLD", st->version == 20 ? 7 : 9);
		return TRACE_SKIP;
	}
	if (len > sizeof(start) - 1 && memcmp(s, start, sizeof(start) - 1) == 0) {
		if (trace_tok_split(s + sizeof(start) - 1, len - (sizeof(start) - 1), &t, 1) == 1)
			set_start(st, t);
		return TRACE_SKIP;
	}
	if (len > sizeof(cols) - 1 && memcmp(s, cols, sizeof(cols) - 1) == 0)
		set_cols(st, s + sizeof(cols) - 1, len - (sizeof(cols) - 1));
	return TRACE_SKIP;
}

static bool parse_id(struct trace_tok t, struct acq_can *can)
{
	bool ext = t.n > 4;
	uint32_t id;

	if (!trace_tok_uint(t, 16, ext ? 0x1fffffff : 0x7ff, &id))
		return false;
	can->id = id;
	can->flags |= ext ? ACQ_CAN_EXT : 0;
	return true;
}

static bool parse_bytes(const struct trace_tok *t, size_t n, unsigned len, struct acq_can *can)
{
	uint32_t v;

	if (n < len)
		return false;
	for (unsigned i = 0; i < len; i++) {
		if (!trace_tok_uint(t[i], 16, 255, &v))
			return false;
		can->data[i] = (uint8_t)v;
	}
	can->len = (uint8_t)len;
	return true;
}

/* 1.x after "N)" and the offset */
static int line_v1(const struct trace_trc *st, const struct trace_tok *t, size_t n, struct acq_can *can,
                   unsigned *ret_chan)
{
	uint32_t bus = 1, dlc;
	size_t i = 0;

	if (st->version >= 12) {
		if (i >= n || !trace_tok_uint(t[i++], 10, 255, &bus))
			return -EBADMSG;
	}
	*ret_chan = bus;
	if (st->version >= 11) {
		if (i >= n)
			return -EBADMSG;
		if (trace_tok_is(t[i], "Error")) {
			*can = (struct acq_can){ .id = TRACE_ERR_ID, .flags = ACQ_CAN_ERR };
			return TRACE_FRAME;
		}
		if (!trace_tok_is(t[i], "Rx") && !trace_tok_is(t[i], "Tx"))
			return TRACE_SKIP; /* Warng: a bus status */
		can->flags |= trace_tok_is(t[i], "Tx") ? ACQ_CAN_TX : 0;
		i++;
	}
	if (i >= n)
		return -EBADMSG;
	if (st->version == 10 && trace_tok_is(t[i], "FFFFFFFF"))
		return TRACE_SKIP; /* 1.0's bus status line */
	if (!parse_id(t[i++], can))
		return -EBADMSG;
	if (st->version >= 13 && i < n && t[i].n == 1 && t[i].p[0] == '-')
		i++;
	if (i >= n || !trace_tok_uint(t[i++], 10, 8, &dlc))
		return -EBADMSG;
	if (i < n && trace_tok_is(t[i], "RTR")) {
		can->flags |= ACQ_CAN_RTR;
		can->len = (uint8_t)dlc;
		return TRACE_FRAME;
	}
	return parse_bytes(t + i, n - i, dlc, can) ? TRACE_FRAME : -EBADMSG;
}

/* the type column of 2.x: its flags, 0 for a type that is no frame */
static int type_v2(struct trace_tok t, uint8_t *ret_flags)
{
	static const struct { const char *name; uint8_t flags; } types[] = {
		{ "DT", 0 }, { "FD", ACQ_CAN_FD }, { "FB", ACQ_CAN_FD | ACQ_CAN_BRS },
		{ "FE", ACQ_CAN_FD | ACQ_CAN_ESI }, { "BI", ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_ESI },
		{ "RR", ACQ_CAN_RTR }, { "ER", ACQ_CAN_ERR },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (trace_tok_is(t, types[i].name)) {
			*ret_flags = types[i].flags;
			return 1;
		}
	if (trace_tok_is(t, "ST") || trace_tok_is(t, "EC") || trace_tok_is(t, "EV"))
		return 0;
	return -EBADMSG;
}

/* One column of a 2.x frame line (not O, T, D); len < 0: not said yet. */
static int column_v2(char col, struct trace_tok t, struct acq_can *can, int *len, unsigned *ret_chan)
{
	uint32_t v;

	switch (col) {
	case 'B':
		if (!trace_tok_uint(t, 10, 255, &v))
			return -EBADMSG;
		*ret_chan = v;
		return 0;
	case 'I':
		return parse_id(t, can) ? 0 : -EBADMSG;
	case 'd':
		if (!trace_tok_is(t, "Rx") && !trace_tok_is(t, "Tx"))
			return -EBADMSG;
		can->flags |= trace_tok_is(t, "Tx") ? ACQ_CAN_TX : 0;
		return 0;
	case 'l':
		if (!trace_tok_uint(t, 10, 64, &v))
			return -EBADMSG;
		*len = (int)v;
		return 0;
	case 'L':
		if (!trace_tok_uint(t, t.n == 1 ? 16 : 10, 15, &v))
			return -EBADMSG;
		*len = (int)((can->flags & ACQ_CAN_FD) ? trace_dlc_len(v) : (v > 8 ? 8 : v));
		return 0;
	default:
		return 0; /* N, R and letters we do not know */
	}
}

/* 2.x: t[0..n) are the columns of st->cols from the one after O */
static int line_v2(const struct trace_trc *st, const struct trace_tok *t, size_t n, size_t first,
                   struct acq_can *can, unsigned *ret_chan)
{
	int len = -1, r;
	size_t i = 0;

	*ret_chan = 1;
	for (size_t c = first; c < st->ncols; c++) {
		char col = st->cols[c];

		if (col == 'D')
			break;
		if (i >= n)
			return (can->flags & ACQ_CAN_ERR) ? TRACE_FRAME : -EBADMSG;
		if (col == 'T') {
			if ((r = type_v2(t[i], &can->flags)) <= 0)
				return r;
			if (can->flags & ACQ_CAN_ERR) {
				can->id = TRACE_ERR_ID;
				return TRACE_FRAME; /* the rest says the error, not a frame */
			}
		} else if ((r = column_v2(col, t[i], can, &len, ret_chan)) < 0) {
			return r;
		}
		i++;
	}
	if (len < 0 || ((can->flags & ACQ_CAN_FD) == 0 && len > 8))
		return -EBADMSG;
	if (can->flags & ACQ_CAN_RTR) {
		can->len = (uint8_t)len;
		return TRACE_FRAME;
	}
	if ((can->flags & ACQ_CAN_FD) && !trace_fd_len_ok((unsigned)len))
		return -EBADMSG;
	return parse_bytes(t + i, n - i, (unsigned)len, can) ? TRACE_FRAME : -EBADMSG;
}

int trace_trc_line(struct trace_trc *st, const char *line, size_t len, struct acq_item *ret_item,
                 unsigned *ret_chan)
{
	struct trace_tok t[TRC_TOKS_MAX];
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	size_t n, o = 0;
	int64_t off;
	int r;

	while (len && (*line == ' ' || *line == '\t'))
		line++, len--;
	if (len && line[0] == ';')
		return comment_line(st, line, len);
	n = trace_tok_split(line, len, t, TRC_TOKS_MAX);
	if (n == 0)
		return TRACE_SKIP;
	if (n > TRC_TOKS_MAX)
		return -EBADMSG;
	if (st->version == 0)
		st->version = 10;
	if (st->version < 20) {
		if (n < 3 || t[0].n < 2 || t[0].p[t[0].n - 1] != ')' || !trace_tok_time_ns(t[1], 6, &off))
			return -EBADMSG;
		r = line_v1(st, t + 2, n - 2, &it.can, ret_chan);
	} else {
		while (o < st->ncols && st->cols[o] != 'O')
			o++;
		if (o >= st->ncols || o >= n || !trace_tok_time_ns(t[o], 6, &off))
			return -EBADMSG;
		/* columns before O are the message number only: N */
		r = line_v2(st, t + o + 1, n - o - 1, o + 1, &it.can, ret_chan);
	}
	if (r != TRACE_FRAME)
		return r;
	it.t_ns = st->start_ns + off;
	*ret_item = it;
	return TRACE_FRAME;
}
