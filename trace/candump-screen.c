/* SPDX-License-Identifier: MIT */
/*
 * candump-screen.c - a line of what candump prints on the terminal, not
 * its log format (candump.h: trace_candump_parse_screen).  The shapes are
 * those of can-utils' candump.c and lib.c (snprintf_long_canframe):
 *
 *   [" (" stamp ") "] iface ["  TX|RX B|- E|-"] "  " id "  " len data [tail]
 *
 *   stamp   -ta "1436509052.249713", -td/-tz "000.000123", -N 9 digits,
 *           -tA "2015-07-10 08:17:32.249713" (local time)
 *   id      3 hex digits (11-bit, indented by 5 blanks once a 29-bit id was
 *           seen), 8 hex digits (29-bit; CAN_ERR_FLAG set: an error frame)
 *   len     "[8]" classic, "{F}" classic with -8 (raw DLC 9..F: 8 bytes),
 *           "[64]" / "[08]" CAN FD (always two digits)
 *   data    " AA" per byte, " 10101010" with -i, " AA`BB`CC" reversed
 *           with -S; "remote request" for a classic remote frame
 *   tail    -a "'a.b.'" (or "`..." with -S), "ERRORFRAME" of an error
 *           frame (its -e description follows on lines that start with
 *           a tab: trace_candump_screen_cont)
 *
 * -x's "TX"/"RX" is the direction, its "B"/"E" the FD frame's BRS/ESI.
 * A -td stamp is the gap to the line before, -tz the time since the
 * first: both are taken as they are (seconds), as candump printed them.
 */
#include <errno.h>
#include <string.h>

#include "candump.h"
#include "spec.h"
#include "trace-fmt.h"

#define SCREEN_TOKS_MAX 80 /* stamp 2, iface, TX B E, id, len, 64 bytes, tail */

/* "(123.456789)" or "(2015-07-10" "08:17:32.249713)": tokens used, 0 if none */
static size_t screen_stamp(const struct trace_tok *t, size_t n, int64_t *ret_ns)
{
	struct trace_tok a = t[0];
	uint32_t y, mo, d, h, mi, s, f;
	int64_t frac;

	if (a.n < 3 || a.p[0] != '(')
		return 0;
	if (a.p[a.n - 1] == ')')
		return trace_tok_time_ns((struct trace_tok){ a.p + 1, a.n - 2 }, 9, ret_ns) ? 1 : 0;
	/* -tA: local date and time */
	if (n < 2 || a.n != 11 || a.p[5] != '-' || a.p[8] != '-' || t[1].n < 10 || t[1].p[t[1].n - 1] != ')' ||
	    t[1].p[2] != ':' || t[1].p[5] != ':' || t[1].p[8] != '.')
		return 0;
	if (!trace_tok_uint((struct trace_tok){ a.p + 1, 4 }, 10, 9999, &y) ||
	    !trace_tok_uint((struct trace_tok){ a.p + 6, 2 }, 10, 12, &mo) ||
	    !trace_tok_uint((struct trace_tok){ a.p + 9, 2 }, 10, 31, &d) ||
	    !trace_tok_uint((struct trace_tok){ t[1].p, 2 }, 10, 23, &h) ||
	    !trace_tok_uint((struct trace_tok){ t[1].p + 3, 2 }, 10, 59, &mi) ||
	    !trace_tok_uint((struct trace_tok){ t[1].p + 6, 2 }, 10, 60, &s) ||
	    t[1].n > 19 || !trace_tok_uint((struct trace_tok){ t[1].p + 9, t[1].n - 10 }, 10, 999999999, &f) || mo == 0 ||
	    d == 0)
		return 0;
	frac = f;
	for (size_t k = t[1].n - 10; k < 9; k++)
		frac *= 10; /* 6 digits (-tA) or 9 (-tA -N) */
	*ret_ns = trace_local_ns((int)y, (int)mo, (int)d, (int)h, (int)mi, (int)s, 0) + frac;
	return 2;
}

static bool tok_hex(struct trace_tok t, size_t digits, uint32_t *ret)
{
	return t.n == digits && trace_tok_uint(t, 16, UINT32_MAX, ret);
}

/* "[8]", "{F}", "[64]": the length and whether it is FD */
static bool screen_len(struct trace_tok t, unsigned *ret_len, bool *ret_fd)
{
	uint32_t v;

	if (t.n == 3 && t.p[0] == '[' && t.p[2] == ']' && trace_tok_uint((struct trace_tok){ t.p + 1, 1 }, 10, 8, &v)) {
		*ret_len = v;
		*ret_fd = false;
		return true;
	}
	if (t.n == 3 && t.p[0] == '{' && t.p[2] == '}' && trace_tok_uint((struct trace_tok){ t.p + 1, 1 }, 16, 15, &v)) {
		*ret_len = v > 8 ? 8 : v; /* raw DLC 9..F: 8 bytes */
		*ret_fd = false;
		return true;
	}
	if (t.n == 4 && t.p[0] == '[' && t.p[3] == ']' && trace_tok_uint((struct trace_tok){ t.p + 1, 2 }, 10, 64, &v) &&
	    trace_fd_len_ok(v)) {
		*ret_len = v;
		*ret_fd = true;
		return true;
	}
	return false;
}

static bool byte_of(struct trace_tok t, uint8_t *ret)
{
	uint32_t v = 0;

	if (t.n == 2)
		return trace_tok_uint(t, 16, 255, &v) && (*ret = (uint8_t)v, true);
	if (t.n != 8)
		return false;
	for (size_t i = 0; i < 8; i++) {
		if (t.p[i] != '0' && t.p[i] != '1')
			return false;
		v = v << 1 | (uint32_t)(t.p[i] - '0');
	}
	*ret = (uint8_t)v;
	return true;
}

/* The data: len tokens, or one "AA`BB`CC" token of -S (last byte first,
   the bytes 2 hex or 8 binary digits each).  Tokens used, or 0 if bad. */
static size_t screen_data(const struct trace_tok *t, size_t n, unsigned len, uint8_t *data)
{
	if (len == 0)
		return 0;
	if (n >= 1 && memchr(t[0].p, '`', t[0].n)) {
		const char *p = t[0].p, *end = t[0].p + t[0].n;

		for (unsigned k = len; k-- > 0;) {
			const char *q = memchr(p, '`', (size_t)(end - p));
			struct trace_tok b = { p, (size_t)((q ? q : end) - p) };

			if (!byte_of(b, &data[k]) || (k > 0) != (q != NULL))
				return 0;
			p = q ? q + 1 : end;
		}
		return 1;
	}
	if (n < len)
		return 0;
	for (unsigned k = 0; k < len; k++)
		if (!byte_of(t[k], &data[k]))
			return 0;
	return len;
}

/* What may follow the data: -a's ASCII, an error frame's ERRORFRAME */
static bool screen_tail(const struct trace_tok *t, size_t n, const struct acq_can *can)
{
	if (n == 0)
		return true;
	if (t[0].p[0] == '\'' || t[0].p[0] == '`')
		return true; /* the ASCII may hold blanks and quotes: the rest */
	return n == 1 && (can->flags & ACQ_CAN_ERR) && trace_tok_is(t[0], "ERRORFRAME");
}

/* id token: 3 hex digits, or 8 (29-bit, or an error frame's class) */
static bool screen_id(struct trace_tok t, struct acq_can *can)
{
	uint32_t id;

	if (tok_hex(t, 3, &id) && id <= 0x7ff) {
		can->id = id;
		return true;
	}
	if (!tok_hex(t, 8, &id) || (id & 0xc0000000u))
		return false;
	can->id = id & 0x1fffffffu;
	can->flags |= (id & TRACE_CD_ERR_FLAG) ? ACQ_CAN_ERR : ACQ_CAN_EXT;
	return true;
}

int trace_candump_parse_screen(const char *line, size_t len, struct acq_item *ret_item, char *ifname,
                             size_t ifname_len)
{
	struct trace_tok t[SCREEN_TOKS_MAX];
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	size_t n, i = 0, k;
	unsigned dlen;
	bool fd, brs = false, esi = false;

	if (!line || !ret_item || (ifname && ifname_len == 0))
		return -EINVAL;
	n = trace_tok_split(line, strnlen(line, len), t, SCREEN_TOKS_MAX);
	if (n < 3 || n > SCREEN_TOKS_MAX)
		return -EBADMSG;
	i = screen_stamp(t, n, &it.t_ns);
	if (i == 0 && t[0].p[0] == '(')
		return -EBADMSG;
	if (i + 3 > n)
		return -EBADMSG;
	k = i++; /* the interface */
	if (i + 3 < n && (trace_tok_is(t[i], "TX") || trace_tok_is(t[i], "RX")) && t[i + 1].n == 1 && t[i + 2].n == 1 &&
	    strchr("B-", t[i + 1].p[0]) && strchr("E-", t[i + 2].p[0])) {
		it.can.flags |= trace_tok_is(t[i], "TX") ? ACQ_CAN_TX : 0;
		brs = t[i + 1].p[0] == 'B';
		esi = t[i + 2].p[0] == 'E';
		i += 3;
	}
	if (i + 2 > n || !screen_id(t[i], &it.can) || !screen_len(t[i + 1], &dlen, &fd))
		return -EBADMSG;
	i += 2;
	if (!fd && !(it.can.flags & ACQ_CAN_ERR) && i + 2 == n && trace_tok_is(t[i], "remote") &&
	    trace_tok_is(t[i + 1], "request")) {
		it.can.flags |= ACQ_CAN_RTR;
		it.can.len = (uint8_t)dlen;
		i = n;
	} else {
		size_t used = screen_data(t + i, n - i, dlen, it.can.data);

		if (dlen && !used)
			return -EBADMSG;
		if ((fd && (it.can.flags & ACQ_CAN_ERR)) || !screen_tail(t + i + used, n - i - used, &it.can))
			return -EBADMSG;
		it.can.len = (uint8_t)dlen;
	}
	if (fd)
		it.can.flags |= ACQ_CAN_FD | (brs ? ACQ_CAN_BRS : 0) | (esi ? ACQ_CAN_ESI : 0);
	if (ifname) {
		if (t[k].n >= ifname_len)
			return -EBADMSG;
		memcpy(ifname, t[k].p, t[k].n);
		ifname[t[k].n] = '\0';
	}
	*ret_item = it;
	return 0;
}

bool trace_candump_screen_cont(const char *line, size_t len)
{
	return len > 0 && line[0] == '\t';
}
