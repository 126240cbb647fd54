/* SPDX-License-Identifier: MIT */
/*
 * candump.c - one candump log line -> one struct acq_item (the trace
 * driver's input).  Writing a line is candump-write.c's, beside it, on the
 * same constants (spec.h); the round-trip tests hold the two to one grammar.
 *
 * The grammar is the one can-utils' lib.c writes and reads:
 *   "(" sec "." usec ")" SP iface SP id "#" data            classic
 *   id "#R" [len]                                            remote
 *   id "##" flags-nibble data                                CAN FD
 *   8-digit id with CAN_ERR_FLAG (0x20000000) set            error frame
 * followed by an optional " T"/" R" direction mark (candump -x).  Data
 * bytes may be separated by '.'.  Classic 8-byte frames may carry a raw
 * DLC 9..F as "_X"; we accept and ignore it since acq_can has no field
 * for it.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "basic/hex.h"
#include "candump.h"
#include "spec.h"



/*
 * The parsers below keep the read position in a local pointer and store
 * the payload into a local array: the project builds with
 * -fno-strict-aliasing, so a byte stored through a struct's pointer could
 * alias a cursor kept in memory, and every step reloaded it (a replay
 * parses each line once per bus and once in the survey: this is the
 * replay's hottest loop).
 */
struct cursor {
	const char *p;
	const char *end;
};

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline bool is_digit(char c)
{
	return (unsigned char)(c - '0') < 10;
}

/* What one line holds, parsed; copied into the caller's item on success. */
struct parsed {
	int64_t t_ns;
	uint32_t id;
	uint8_t flags;
	uint8_t len;
	const char *ifname;    /* in the line, ifname_len bytes */
	size_t ifname_len;
	uint8_t data[ACQ_CAN_DATA_MAX];
};

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR_ONES 0x0101010101010101ull

static inline uint64_t load8(const char *p)
{
	uint64_t x;

	memcpy(&x, p, sizeof(x)); /* any alignment: one load where it is allowed */
	return x;
}

/* All 8 bytes of x (first character in the low byte) are '0'..'9'. */
static inline bool swar_digits(uint64_t x)
{
	return ((x & (0xf0 * SWAR_ONES)) | (((x + 0x06 * SWAR_ONES) & (0xf0 * SWAR_ONES)) >> 4)) == 0x33 * SWAR_ONES;
}

/* The number 8 checked digits spell, the first one the most significant. */
static inline uint32_t swar_value(uint64_t x)
{
	x = (x & (0x0f * SWAR_ONES)) * 2561 >> 8;
	x = (x & 0x00ff00ff00ff00ffull) * 6553601 >> 16;
	return (uint32_t)((x & 0x0000ffff0000ffffull) * 42949672960001ull >> 32);
}

/*
 * The stamp candump writes, "(" 10 digits "." 6 digits ")", read with
 * three 8-byte loads; anything else (fewer digits, a line too short for
 * the loads) is left to the byte loop below, which reads the same stamp
 * to the same value.  Returns true and advances c when it read one.
 */
static bool stamp_fast(struct cursor *c, int64_t *ret_ns)
{
	const char *p = c->p;
	uint64_t hi, lo, fr;
	int64_t sec;

	if (c->end - p < 19 || p[0] != '(')
		return false;
	hi = load8(p + 1);  /* digits 1..8 */
	lo = load8(p + 3);  /* digits 3..10: they overlap, no load past p + 18 */
	fr = load8(p + 11); /* "." 6 digits ")" */
	if ((fr & 0xff) != '.' || fr >> 56 != ')' || !swar_digits(hi) || !swar_digits(lo))
		return false;
	fr = (fr & 0x00ffffffffffff00ull) << 8 | 0x3030; /* "00" and the 6 digits */
	if (!swar_digits(fr))
		return false;
	sec = (int64_t)swar_value(hi) * 100 + (lo >> 48 & 0xf) * 10 + (lo >> 56 & 0xf);
	if (sec > INT64_MAX / 1000000000 - 1)
		return false; /* the byte loop refuses it */
	*ret_ns = sec * 1000000000 + (int64_t)swar_value(fr) * 1000;
	c->p = p + 19;
	return true;
}
#else
static bool stamp_fast(struct cursor *c, int64_t *ret_ns)
{
	return false;
}
#endif

/*
 * "(sec.frac)": up to 10 digits of seconds so sec * 1e9 fits int64, and
 * 1 to 6 fraction digits: the format has microsecond resolution, and
 * accepting finer stamps would make read-write-read lossy.
 */
static int parse_stamp(struct cursor *c, int64_t *ret_ns)
{
	const char *p = c->p, *end = c->end, *lim;
	int64_t sec = 0, frac = 0;
	int nfrac;

	if (stamp_fast(c, ret_ns))
		return 0;
	if (p >= end || *p++ != '(')
		return -EBADMSG;
	lim = end - p > 10 ? p + 10 : end;
	for (; p < lim && is_digit(*p); p++)
		sec = sec * 10 + (*p - '0');
	if (p == c->p + 1 || p >= end || *p++ != '.')
		return -EBADMSG;
	lim = end - p > 6 ? p + 6 : end;
	for (nfrac = 0; p < lim && is_digit(*p); p++, nfrac++)
		frac = frac * 10 + (*p - '0');
	if (nfrac == 0 || p >= end || *p++ != ')')
		return -EBADMSG;
	for (int i = nfrac; i < 9; i++)
		frac *= 10;
	if (sec > INT64_MAX / 1000000000 - 1)
		return -EBADMSG;
	*ret_ns = sec * 1000000000 + frac;
	c->p = p;
	return 0;
}

static int parse_iface(struct cursor *c, struct parsed *f, size_t ifname_len)
{
	const char *p = c->p, *end = c->end, *s;
	size_t n;

	if (p >= end || *p++ != ' ')
		return -EBADMSG;
	s = p;
	while (p < end && *p > ' ' && *p != 0x7f)
		p++;
	n = (size_t)(p - s);
	if (n == 0 || p >= end || *p++ != ' ' || n >= ifname_len)
		return -EBADMSG;
	f->ifname = s;
	f->ifname_len = n;
	c->p = p;
	return 0;
}

/* 3 hex digits: standard id; 8: extended, or an error frame if CAN_ERR_FLAG. */
static int parse_id(struct cursor *c, struct parsed *f)
{
	const char *p = c->p, *end = c->end, *s = p;
	uint32_t id = 0;
	int v;

	while (p < end && p - s < 9 && (v = basic_hex_digit(*p)) >= 0) {
		id = id << 4 | (uint32_t)v;
		p++;
	}
	if (p >= end || *p != '#')
		return -EBADMSG;
	if (p - s == 3) {
		if (id > TRACE_CD_SFF_MASK)
			return -EBADMSG;
		f->id = id;
	} else if (p - s == 8) {
		if (id & (TRACE_CD_EFF_FLAG | TRACE_CD_RTR_FLAG))
			return -EBADMSG;
		f->id = id & TRACE_CD_EFF_MASK;
		f->flags |= (id & TRACE_CD_ERR_FLAG) ? ACQ_CAN_ERR : ACQ_CAN_EXT;
	} else {
		return -EBADMSG;
	}
	c->p = p + 1;
	return 0;
}

static int parse_bytes(struct cursor *c, struct parsed *f, unsigned max)
{
	const char *p = c->p, *end = c->end;
	unsigned n = 0;

	/* Pairs of hex digits without separators, the usual payload: a
	   character that is not a hex digit ends this loop and the one
	   below, which reads every shape, takes over where it stopped. */
	while (end - p >= 2 && n < max) {
		int hi = basic_hex_digit(p[0]), lo = basic_hex_digit(p[1]);

		if ((hi | lo) < 0)
			break;
		f->data[n++] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
	while (p < end && *p != '_' && !is_blank(*p)) {
		int hi, lo;

		if (*p == '.') {
			p++;
			continue;
		}
		if (n >= max || end - p < 2)
			return -EBADMSG;
		hi = basic_hex_digit(p[0]);
		lo = basic_hex_digit(p[1]);
		if ((hi | lo) < 0)
			return -EBADMSG;
		f->data[n++] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
	f->len = (uint8_t)n;
	c->p = p;
	return 0;
}

static int parse_payload(struct cursor *c, struct parsed *f)
{
	int v;

	if (c->p < c->end && (*c->p == 'R' || *c->p == 'r')) {
		if (f->flags & ACQ_CAN_ERR)
			return -EBADMSG;
		f->flags |= ACQ_CAN_RTR;
		c->p++;
		f->len = 0;
		if (c->p < c->end && (v = basic_hex_digit(*c->p)) >= 0) {
			if (v > 8)
				return -EBADMSG;
			f->len = (uint8_t)v;
			c->p++;
		}
		return 0;
	}
	if (c->p < c->end && *c->p == '#') {
		if (f->flags & ACQ_CAN_ERR)
			return -EBADMSG;
		if (c->end - c->p < 2 || (v = basic_hex_digit(c->p[1])) < 0)
			return -EBADMSG;
		f->flags |= ACQ_CAN_FD;
		f->flags |= (v & TRACE_CD_FD_BRS) ? ACQ_CAN_BRS : 0;
		f->flags |= (v & TRACE_CD_FD_ESI) ? ACQ_CAN_ESI : 0;
		c->p += 2;
		if (parse_bytes(c, f, ACQ_CAN_DATA_MAX) < 0 || !trace_fd_len_ok(f->len))
			return -EBADMSG;
		return 0;
	}
	if (parse_bytes(c, f, 8) < 0)
		return -EBADMSG;
	/* raw DLC 9..F of an 8-byte classic frame: accepted, not kept */
	if (c->p < c->end && *c->p == '_') {
		if (f->len != 8 || c->end - c->p < 2 || (v = basic_hex_digit(c->p[1])) < 9)
			return -EBADMSG;
		c->p += 2;
	}
	return 0;
}

/* Optional " T" (sent by us) or " R" (received), then nothing but blanks. */
static int parse_tail(struct cursor *c, struct parsed *f)
{
	const char *p = c->p, *end = c->end;

	if (end - p >= 2 && p[0] == ' ' && (p[1] == 'T' || p[1] == 'R')) {
		if (p[1] == 'T')
			f->flags |= ACQ_CAN_TX;
		p += 2;
	}
	while (p < end && is_blank(*p))
		p++;
	return p == end ? 0 : -EBADMSG;
}

/*
 * The item as `(struct acq_item){ .kind = ACQ_ITEM_CAN, ... }` would be,
 * every byte past the payload zero too (f->data was zeroed whole before
 * the parse, and a remote frame writes none of it), without building it
 * on the stack and copying it: only fixed sizes, which the compiler turns
 * into a few vector stores (a variable-length clear became `rep stos`,
 * the slowest instruction of the parse).
 */
static void item_fill(struct acq_item *it, const struct parsed *f)
{
	size_t head = offsetof(struct acq_item, can.data), tail = head + ACQ_CAN_DATA_MAX;

	memset(it, 0, head);
	it->t_ns = f->t_ns;
	it->kind = ACQ_ITEM_CAN;
	it->can.id = f->id;
	it->can.flags = f->flags;
	it->can.len = f->len;
	memcpy(it->can.data, f->data, ACQ_CAN_DATA_MAX);
	memset((char *)it + tail, 0, sizeof(*it) - tail);
}

static int parse_line(const char *line, const char *end, struct acq_item *ret_item, char *ifname,
                      size_t ifname_len)
{
	struct parsed f;
	struct cursor c = { line, end };

	f.id = 0;
	f.flags = 0;
	f.len = 0;
	memset(f.data, 0, sizeof(f.data));
	if (parse_stamp(&c, &f.t_ns) < 0 ||
	    parse_iface(&c, &f, ifname ? ifname_len : TRACE_CANDUMP_LINE_MAX) < 0 ||
	    parse_id(&c, &f) < 0 || parse_payload(&c, &f) < 0 || parse_tail(&c, &f) < 0)
		return -EBADMSG;
	item_fill(ret_item, &f);
	if (ifname) {
		memcpy(ifname, f.ifname, f.ifname_len);
		ifname[f.ifname_len] = '\0';
	}
	return 0;
}

int trace_candump_parse(const char *line, size_t len, struct acq_item *ret_item,
                      char *ifname, size_t ifname_len)
{
	if (!line || !ret_item || (ifname && ifname_len == 0))
		return -EINVAL;
	return parse_line(line, line + strnlen(line, len), ret_item, ifname, ifname_len);
}

int trace_candump_parse_bytes(const char *line, size_t len, struct acq_item *ret_item, char *ifname,
                              size_t ifname_len)
{
	if (!line || !ret_item || (ifname && ifname_len == 0))
		return -EINVAL;
	/* a NUL is a byte like any other here: the grammar has no place for it */
	return parse_line(line, line + len, ret_item, ifname, ifname_len);
}

bool trace_candump_other_iface(const char *line, size_t len, const char *ifname)
{
	/* "(" + 10 digits + "." + 6 digits + ")": the longest stamp the
	   parser takes; not there, not known */
	const char *close = memchr(line, ')', len < 20 ? len : 20), *p, *end = line + len;
	size_t i = 0;

	if (!close || line[0] != '(' || close + 1 >= end || close[1] != ' ')
		return false;
	for (p = close + 2; p < end && *p > ' ' && *p != 0x7f; p++, i++)
		if (*p != ifname[i] || !ifname[i])
			break;
	if (p < end && *p == ' ' && !ifname[i])
		return false; /* the name is ifname */
	/* a difference inside the name: is there a whole name? */
	while (p < end && *p > ' ' && *p != 0x7f)
		p++;
	return p > close + 2 && p < end && *p == ' ';
}

bool trace_candump_blank(const char *s, size_t len)
{
	if (!s)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

static void tally_bad(struct trace_candump_tally *t)
{
	if (!t->bad++)
		t->first_bad = t->lines;
}

/* One line without its newline: numbered, then a frame, damage or blank. */
static void tally_line(const char *s, size_t n, size_t max_line, struct trace_candump_tally *t)
{
	struct acq_item it;

	t->lines++;
	if (n >= max_line)
		tally_bad(t);
	else if (trace_candump_blank(s, n))
		return;
	else if (parse_line(s, s + n, &it, NULL, TRACE_CANDUMP_LINE_MAX) < 0)
		tally_bad(t);
	else
		t->frames++;
}

long trace_candump_tally(const char *buf, size_t len, bool at_eof, size_t max_line,
                         struct trace_candump_tally *t)
{
	const char *p = buf, *end = buf + len;

	if (!buf || !t || max_line == 0 || len > LONG_MAX)
		return -EINVAL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			size_t n = (size_t)(end - p);

			/* the driver's buffer fills without a newline: one
			   malformed line, the rest of it dropped */
			if (!t->skipping && n >= max_line) {
				t->lines++;
				tally_bad(t);
				t->skipping = true;
			}
			if (t->skipping)
				return (long)len;
			if (at_eof)
				tally_line(p, n, max_line, t);
			return at_eof ? (long)len : (long)(p - buf);
		}
		if (t->skipping)
			t->skipping = false; /* the tail of an overlong line, counted */
		else
			tally_line(p, (size_t)(nl - p), max_line, t);
		p = nl + 1;
	}
	return (long)len;
}
