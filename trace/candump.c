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
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "candump.h"
#include "spec.h"



struct cursor {
	const char *p;
	const char *end;
};

/* hex digit value + 1, 0 for anything else: one load per digit */
static const uint8_t hex_tab[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
	['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static inline int hexval(char c)
{
	return (int)hex_tab[(unsigned char)c] - 1;
}

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * "(sec.frac)": up to 10 digits of seconds so sec * 1e9 fits int64, and
 * 1 to 6 fraction digits: the format has microsecond resolution, and
 * accepting finer stamps would make read-write-read lossy.
 */
static int parse_stamp(struct cursor *c, int64_t *ret_ns)
{
	int64_t sec = 0, frac = 0;
	int nsec = 0, nfrac = 0;

	if (c->p >= c->end || *c->p++ != '(')
		return -EBADMSG;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && nsec < 10) {
		sec = sec * 10 + (*c->p++ - '0');
		nsec++;
	}
	if (nsec == 0 || c->p >= c->end || *c->p++ != '.')
		return -EBADMSG;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9' && nfrac < 6) {
		frac = frac * 10 + (*c->p++ - '0');
		nfrac++;
	}
	if (nfrac == 0 || c->p >= c->end || *c->p++ != ')')
		return -EBADMSG;
	for (int i = nfrac; i < 9; i++)
		frac *= 10;
	if (sec > INT64_MAX / 1000000000 - 1)
		return -EBADMSG;
	*ret_ns = sec * 1000000000 + frac;
	return 0;
}

static int parse_iface(struct cursor *c, char *ifname, size_t ifname_len)
{
	const char *s;
	size_t n;

	if (c->p >= c->end || *c->p++ != ' ')
		return -EBADMSG;
	s = c->p;
	while (c->p < c->end && *c->p > ' ' && *c->p != 0x7f)
		c->p++;
	n = (size_t)(c->p - s);
	if (n == 0 || c->p >= c->end || *c->p++ != ' ')
		return -EBADMSG;
	if (ifname) {
		if (n >= ifname_len)
			return -EBADMSG;
		memcpy(ifname, s, n);
		ifname[n] = '\0';
	}
	return 0;
}

/* 3 hex digits: standard id; 8: extended, or an error frame if CAN_ERR_FLAG. */
static int parse_id(struct cursor *c, struct acq_can *can)
{
	uint32_t id = 0;
	int n = 0, v;

	while (c->p < c->end && (v = hexval(*c->p)) >= 0 && n < 9) {
		id = id << 4 | (uint32_t)v;
		c->p++;
		n++;
	}
	if (c->p >= c->end || *c->p != '#')
		return -EBADMSG;
	c->p++;
	if (n == 3) {
		if (id > TRACE_CD_SFF_MASK)
			return -EBADMSG;
		can->id = id;
	} else if (n == 8) {
		if (id & (TRACE_CD_EFF_FLAG | TRACE_CD_RTR_FLAG))
			return -EBADMSG;
		can->id = id & TRACE_CD_EFF_MASK;
		can->flags |= (id & TRACE_CD_ERR_FLAG) ? ACQ_CAN_ERR : ACQ_CAN_EXT;
	} else {
		return -EBADMSG;
	}
	return 0;
}

static int parse_bytes(struct cursor *c, struct acq_can *can, unsigned max)
{
	unsigned n = 0;
	int hi, lo;

	while (c->p < c->end && *c->p != '_' && !is_blank(*c->p)) {
		if (*c->p == '.') {
			c->p++;
			continue;
		}
		if (n >= max || c->end - c->p < 2)
			return -EBADMSG;
		hi = hexval(c->p[0]);
		lo = hexval(c->p[1]);
		if (hi < 0 || lo < 0)
			return -EBADMSG;
		can->data[n++] = (uint8_t)(hi << 4 | lo);
		c->p += 2;
	}
	can->len = (uint8_t)n;
	return 0;
}

static int parse_payload(struct cursor *c, struct acq_can *can)
{
	int v;

	if (c->p < c->end && (*c->p == 'R' || *c->p == 'r')) {
		if (can->flags & ACQ_CAN_ERR)
			return -EBADMSG;
		can->flags |= ACQ_CAN_RTR;
		c->p++;
		can->len = 0;
		if (c->p < c->end && (v = hexval(*c->p)) >= 0) {
			if (v > 8)
				return -EBADMSG;
			can->len = (uint8_t)v;
			c->p++;
		}
		return 0;
	}
	if (c->p < c->end && *c->p == '#') {
		if (can->flags & ACQ_CAN_ERR)
			return -EBADMSG;
		if (c->end - c->p < 2 || (v = hexval(c->p[1])) < 0)
			return -EBADMSG;
		can->flags |= ACQ_CAN_FD;
		can->flags |= (v & TRACE_CD_FD_BRS) ? ACQ_CAN_BRS : 0;
		can->flags |= (v & TRACE_CD_FD_ESI) ? ACQ_CAN_ESI : 0;
		c->p += 2;
		if (parse_bytes(c, can, ACQ_CAN_DATA_MAX) < 0 || !trace_fd_len_ok(can->len))
			return -EBADMSG;
		return 0;
	}
	if (parse_bytes(c, can, 8) < 0)
		return -EBADMSG;
	/* raw DLC 9..F of an 8-byte classic frame: accepted, not kept */
	if (c->p < c->end && *c->p == '_') {
		if (can->len != 8 || c->end - c->p < 2 || (v = hexval(c->p[1])) < 9)
			return -EBADMSG;
		c->p += 2;
	}
	return 0;
}

/* Optional " T" (sent by us) or " R" (received), then nothing but blanks. */
static int parse_tail(struct cursor *c, struct acq_can *can)
{
	if (c->end - c->p >= 2 && c->p[0] == ' ' && (c->p[1] == 'T' || c->p[1] == 'R')) {
		if (c->p[1] == 'T')
			can->flags |= ACQ_CAN_TX;
		c->p += 2;
	}
	while (c->p < c->end && is_blank(*c->p))
		c->p++;
	return c->p == c->end ? 0 : -EBADMSG;
}

int trace_candump_parse(const char *line, size_t len, struct acq_item *ret_item,
                      char *ifname, size_t ifname_len)
{
	char name[TRACE_CANDUMP_LINE_MAX];
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	struct cursor c;
	int64_t t_ns;

	if (!line || !ret_item || (ifname && ifname_len == 0))
		return -EINVAL;
	c = (struct cursor){ line, line + strnlen(line, len) };
	if (parse_stamp(&c, &t_ns) < 0 ||
	    parse_iface(&c, name, ifname ? ifname_len : sizeof(name)) < 0 ||
	    parse_id(&c, &it.can) < 0 || parse_payload(&c, &it.can) < 0 ||
	    parse_tail(&c, &it.can) < 0)
		return -EBADMSG;
	it.t_ns = t_ns;
	if (ifname)
		memcpy(ifname, name, strlen(name) + 1);
	*ret_item = it;
	return 0;
}
