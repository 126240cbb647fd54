/* SPDX-License-Identifier: MIT */
/*
 * pcap.c - a packet capture read into UDP datagrams and TCP stream bytes
 * (pcap.h).  libpcap reads the file (pcap and pcapng, both timestamp
 * resolutions, pcapng's interfaces); this file decodes the link layer,
 * reassembles IPv4 fragments and puts TCP segments in order.  One job
 * over ~1000 lines, a capture's packets (of a file, or live from an
 * interface's packet ring) into datagrams and stream bytes, so one file:
 * the layers hand on through one event queue that must be empty before
 * the next packet is read (below).
 *
 * One packet may make several events (a connection's OPEN, a GAP, DATA
 * from the packet and DATA from bytes that waited for it), so a packet's
 * events go into a small queue first and trace_pcap_next() hands them out
 * one by one.  The queue is emptied before the next packet is read, so
 * DATA may point into libpcap's buffer (the packet's own bytes) or into
 * the arena (bytes copied out of a connection's window), both valid until
 * that next read.
 */

/* libpcap hands each packet's header as a struct pcap_pkthdr holding a
   struct timeval, so this file must see the time_t the library was built
   with.  railmon builds with _TIME_BITS=64 (meson.build), but Debian 12's
   32-bit libpcap (armhf) has a 32-bit time_t: with a 64-bit one here the
   header's caplen and len would be read from the wrong place.  Where
   time_t is 64 bits anyway (amd64, arm64) this changes nothing.  The
   times go out of here as uint64_t ns, never as a time_t. */
#undef _TIME_BITS

#include "trace/pcap.h"
#include "trace/spec.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/byteorder.h"

#define FRAG_RUNS 16          /* received pieces kept apart per datagram: more is "too scattered" */
#define FRAG_BUF 65536        /* an IPv4 datagram's payload is at most 65515 bytes */
#define OOO_MAX 8             /* out-of-order intervals held per direction */
#define QUEUE_MAX 96          /* an eviction (2 x (2 x OOO_MAX + 1) + 1) and a packet's own (<= 2 x OOO_MAX + 4) */
#define WINDOW_MAX (1024 * 1024)

struct frag {
	bool used;
	uint32_t src, dst;
	uint16_t id;
	uint8_t proto;
	int vlan;
	uint64_t t0;          /* capture time of its first fragment: the timeout runs from there */
	uint64_t first_packet;
	uint32_t total;       /* payload length, known once the last fragment (MF clear) came; 0 before */
	unsigned nruns;
	struct { uint32_t off, end; } runs[FRAG_RUNS];
	uint8_t *buf;         /* FRAG_BUF, allocated at open */
};

struct ooo {
	uint32_t seq, len;
};

struct half {
	bool started, fin, closed;
	uint32_t next;        /* the next stream byte's sequence number */
	uint32_t fin_seq;
	unsigned nooo;
	struct ooo ooo[OOO_MAX]; /* sorted, apart, all within [next, next + window) */
	uint8_t *ring;        /* window bytes, byte seq at seq & mask */
};

struct conn {
	bool used;
	uint32_t id;
	uint32_t ip[2];
	uint16_t port[2];     /* [0] is the end that sent the first packet seen */
	int vlan;
	uint64_t last;        /* packet number last seen: the oldest is evicted */
	struct half h[2];     /* h[d]: bytes sent by end d */
};

struct trace_pcap {
	pcap_t *pc;
	char *name;
	bool live;            /* an interface's packet ring, not a file */
	bool ng;              /* pcapng (offsets are only where a block ends) */
	int dlt;
	struct trace_pcap_cfg cfg;
	uint32_t mask;        /* window - 1 */
	struct trace_pcap_stats st;
	uint64_t off;         /* classic pcap: where the next record starts */
	bool ended, failed;
	uint32_t next_conn_id;
	struct frag *frags;
	unsigned frags_used;  /* how many in reassembly: none, and no packet looks at the pool */
	struct conn *conns;
	struct trace_pcap_event q[QUEUE_MAX];
	unsigned qhead, qlen;
	uint8_t *arena;       /* 2 x window */
	size_t arena_fill;
	/* the packet being decoded */
	uint64_t t, pkt, pkt_off;
	int vlan;
	char err[256];
	char note[256];
};

/* ---- helpers ---- */

static int32_t seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/* The first damage's words, kept (later ones are counted only): the file,
   the packet's number and where it is. */
static void note(trace_pcap_t *p, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	if (p->note[0])
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (p->ng) {
		/* rare (the first damage only): the file's position is where this block ended */
		p->pkt_off = (uint64_t)ftell(pcap_file(p->pc));
		snprintf(p->note, sizeof(p->note), "%s: packet %" PRIu64 " (block ending at byte %" PRIu64 "): %s",
		         p->name, p->pkt, p->pkt_off, what);
	} else
		snprintf(p->note, sizeof(p->note), "%s: packet %" PRIu64 " at byte %" PRIu64 ": %s", p->name, p->pkt,
		         p->pkt_off, what);
}

static struct trace_pcap_event *push(trace_pcap_t *p, enum trace_pcap_kind kind)
{
	struct trace_pcap_event *e;

	/* QUEUE_MAX is above what one packet can make (see its definition):
	   reaching it is a bug, and the event is lost counted, not written past */
	if (p->qlen == QUEUE_MAX) {
		p->st.lost_events++;
		return NULL;
	}
	e = &p->q[p->qlen++];
	*e = (struct trace_pcap_event){ .kind = kind, .time_ns = p->t, .packet = p->pkt, .vlan = p->vlan };
	return e;
}

/* ---- TCP ---- */

static struct trace_pcap_event *conn_event(trace_pcap_t *p, const struct conn *c, int d,
                                           enum trace_pcap_kind kind)
{
	struct trace_pcap_event *e = push(p, kind);

	if (e) {
		e->proto = 6;
		e->src = c->ip[d];
		e->dst = c->ip[!d];
		e->sport = c->port[d];
		e->dport = c->port[!d];
		e->conn = c->id;
		e->vlan = c->vlan;
	}
	return e;
}

static void gap(trace_pcap_t *p, struct conn *c, int d, uint32_t n)
{
	struct trace_pcap_event *e = conn_event(p, c, d, TRACE_PCAP_TCP_GAP);

	p->st.tcp_gaps++;
	p->st.tcp_gap_bytes += n;
	note(p, "%" PRIu32 " bytes of TCP connection %" PRIu32 " never seen", n, c->id);
	c->h[d].next += n;
	if (e)
		e->len = n;
}

static void data(trace_pcap_t *p, struct conn *c, int d, const uint8_t *b, size_t n)
{
	struct trace_pcap_event *e = conn_event(p, c, d, TRACE_PCAP_TCP_DATA);

	p->st.tcp_bytes += n;
	c->h[d].next += (uint32_t)n;
	if (e) {
		e->data = b;
		e->len = n;
	}
}

/* Bytes [seq, seq + n) of the window copied to the arena and delivered. */
static void data_from_ring(trace_pcap_t *p, struct conn *c, int d, uint32_t seq, uint32_t n)
{
	struct half *h = &c->h[d];
	uint8_t *out = p->arena + p->arena_fill;
	uint32_t at = seq & p->mask, first = n < p->mask + 1 - at ? n : p->mask + 1 - at;

	memcpy(out, h->ring + at, first);
	memcpy(out + first, h->ring, n - first);
	p->arena_fill += n;
	data(p, c, d, out, n);
}

/* Hand on the intervals that now start at or before next. */
static void drain(trace_pcap_t *p, struct conn *c, int d)
{
	struct half *h = &c->h[d];
	unsigned i = 0;

	for (; i < h->nooo && seq_diff(h->ooo[i].seq, h->next) <= 0; i++) {
		int32_t skip = seq_diff(h->next, h->ooo[i].seq);

		if ((uint32_t)skip >= h->ooo[i].len) {
			p->st.tcp_retrans += h->ooo[i].len;
			continue;
		}
		p->st.tcp_retrans += (uint32_t)skip;
		data_from_ring(p, c, d, h->next, h->ooo[i].len - (uint32_t)skip);
	}
	memmove(h->ooo, h->ooo + i, (h->nooo - i) * sizeof(h->ooo[0]));
	h->nooo -= i;
}

/* Give up waiting: everything held is handed on, the holes before it as gaps. */
static void flush(trace_pcap_t *p, struct conn *c, int d)
{
	struct half *h = &c->h[d];

	while (h->nooo) {
		if (seq_diff(h->ooo[0].seq, h->next) > 0)
			gap(p, c, d, (uint32_t)seq_diff(h->ooo[0].seq, h->next));
		drain(p, c, d);
	}
}

/* [a, a + n) (window-relative start a > 0) into the sorted interval list,
   merged with what it touches; false if the list has no room. */
static bool ooo_insert(trace_pcap_t *p, struct half *h, uint32_t seq, uint32_t n)
{
	struct ooo tmp[OOO_MAX + 1];
	unsigned k = 0, i = 0;
	int32_t a = seq_diff(seq, h->next), b = a + (int32_t)n;

	for (; i < h->nooo && seq_diff(h->ooo[i].seq, h->next) + (int32_t)h->ooo[i].len < a; i++)
		tmp[k++] = h->ooo[i];
	for (; i < h->nooo && seq_diff(h->ooo[i].seq, h->next) <= b; i++) {
		int32_t x = seq_diff(h->ooo[i].seq, h->next), y = x + (int32_t)h->ooo[i].len;
		int32_t lo = x > a ? x : a, hi = y < b ? y : b;

		if (hi > lo)
			p->st.tcp_retrans += (uint32_t)(hi - lo);
		a = x < a ? x : a;
		b = y > b ? y : b;
	}
	tmp[k++] = (struct ooo){ h->next + (uint32_t)a, (uint32_t)(b - a) };
	for (; i < h->nooo; i++)
		tmp[k++] = h->ooo[i];
	if (k > OOO_MAX)
		return false;
	memcpy(h->ooo, tmp, k * sizeof(tmp[0]));
	h->nooo = k;
	return true;
}

static void ring_write(trace_pcap_t *p, struct half *h, uint32_t seq, const uint8_t *b, uint32_t n)
{
	uint32_t at = seq & p->mask, first = n < p->mask + 1 - at ? n : p->mask + 1 - at;

	memcpy(h->ring + at, b, first);
	memcpy(h->ring, b + first, n - first);
}

/* The first old bytes of a segment's n at *b are the stream's already (a
   retransmission): counted and cut off.  False if that is all of it. */
static bool skip_old(trace_pcap_t *p, uint32_t old, const uint8_t **b, uint32_t *n)
{
	if (old >= *n) {
		p->st.tcp_retrans += *n;
		return false;
	}
	p->st.tcp_retrans += old;
	*b += old;
	*n -= old;
	return true;
}

/* One segment's payload of direction d. */
static void segment(trace_pcap_t *p, struct conn *c, int d, uint32_t seq, const uint8_t *b, uint32_t n)
{
	struct half *h = &c->h[d];
	int32_t off = seq_diff(seq, h->next);

	if (off < 0) {
		if (!skip_old(p, (uint32_t)-off, &b, &n))
			return;
		seq = h->next;
		off = 0;
	}
	if (n == 0)
		return;
	if ((uint64_t)off + n > p->mask + 1 || (off > 0 && !ooo_insert(p, h, seq, n))) {
		/* beyond the window, or too scattered: what is held goes on, the
		   rest of the hole is a gap, and this segment is the stream's next */
		flush(p, c, d);
		off = seq_diff(seq, h->next);
		if (off > 0)
			gap(p, c, d, (uint32_t)off);
		else if (off < 0 && !skip_old(p, (uint32_t)-off, &b, &n)) /* flushed bytes reach into it */
			return;
		off = 0;
	}
	if (off > 0) {
		ring_write(p, h, seq, b, n);
		return;
	}
	data(p, c, d, b, n);
	drain(p, c, d);
}

static void conn_close(trace_pcap_t *p, struct conn *c, enum trace_pcap_end why)
{
	struct trace_pcap_event *e;

	flush(p, c, 0);
	flush(p, c, 1);
	e = conn_event(p, c, 0, TRACE_PCAP_TCP_CLOSE);
	if (e)
		e->end = why;
	c->used = false;
}

static struct conn *conn_find(trace_pcap_t *p, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                              int *ret_d)
{
	for (unsigned i = 0; i < p->cfg.conns; i++) {
		struct conn *c = &p->conns[i];

		if (!c->used)
			continue;
		for (int d = 0; d < 2; d++)
			if (c->ip[d] == src && c->ip[!d] == dst && c->port[d] == sport && c->port[!d] == dport) {
				*ret_d = d;
				return c;
			}
	}
	return NULL;
}

static struct conn *conn_new(trace_pcap_t *p, uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport,
                             bool syn)
{
	struct conn *c = NULL;
	struct trace_pcap_event *e;

	for (unsigned i = 0; i < p->cfg.conns; i++) {
		struct conn *x = &p->conns[i];

		if (!x->used) {
			c = x;
			break;
		}
		if (!c || x->last < c->last)
			c = x;
	}
	if (c->used) {
		p->st.tcp_evicted++;
		note(p, "more than %u TCP connections at once: connection %" PRIu32 " let go", p->cfg.conns, c->id);
		conn_close(p, c, TRACE_PCAP_END_EVICTED);
	}
	for (int d = 0; d < 2; d++)
		c->h[d] = (struct half){ .ring = c->h[d].ring };
	c->used = true;
	c->id = ++p->next_conn_id;
	c->ip[0] = src;
	c->ip[1] = dst;
	c->port[0] = sport;
	c->port[1] = dport;
	c->vlan = p->vlan;
	e = conn_event(p, c, 0, TRACE_PCAP_TCP_OPEN);
	if (e)
		e->syn = syn;
	return c;
}

static void tcp(trace_pcap_t *p, uint32_t src, uint32_t dst, const uint8_t *b, size_t len)
{
	uint16_t sport, dport;
	size_t hl;
	uint8_t fl;
	uint32_t seq, n;
	struct conn *c;
	struct half *h;
	int d = 0;

	if (len < 20 || (hl = (size_t)(b[12] >> 4) * 4) < 20 || hl > len) {
		p->st.bad_ip++;
		note(p, "TCP header cut or wrong");
		return;
	}
	sport = basic_get_be16(b);
	dport = basic_get_be16(b + 2);
	if (p->cfg.no_tcp || (sport != p->cfg.tcp_port && dport != p->cfg.tcp_port)) {
		p->st.other_proto++;
		return;
	}
	seq = basic_get_be32(b + 4);
	fl = b[13];
	n = (uint32_t)(len - hl);
	c = conn_find(p, src, dst, sport, dport, &d);
	if (!c) {
		/* the last ACK after both FINs, a RST answering nothing: no
		   connection to begin, only a SYN or bytes begin one */
		if (!(fl & 0x02) && n == 0)
			return;
		c = conn_new(p, src, dst, sport, dport, (fl & 0x12) == 0x02);
		d = 0;
	}
	c->last = p->pkt;
	h = &c->h[d];
	if (fl & 0x02) { /* SYN: the stream starts at the byte after it */
		seq++;
		if (!h->started) {
			h->started = true;
			h->next = seq;
		}
	} else if (!h->started) { /* begun before the capture: from here */
		h->started = true;
		h->next = seq;
	}
	segment(p, c, d, seq, b + hl, n);
	if (fl & 0x04) { /* RST */
		conn_close(p, c, TRACE_PCAP_END_RST);
		return;
	}
	if (fl & 0x01) {
		h->fin = true;
		h->fin_seq = seq + n;
	}
	for (int k = 0; k < 2; k++)
		if (c->h[k].fin && c->h[k].next == c->h[k].fin_seq)
			c->h[k].closed = true;
	if (c->h[0].closed && c->h[1].closed)
		conn_close(p, c, TRACE_PCAP_END_FIN);
}

/* ---- UDP ---- */

static void udp(trace_pcap_t *p, uint32_t src, uint32_t dst, const uint8_t *b, size_t len)
{
	struct trace_pcap_event *e;
	uint16_t dport, ulen;
	bool want = false;

	if (len < 8 || (ulen = basic_get_be16(b + 4)) < 8 || ulen > len) {
		p->st.bad_ip++;
		note(p, "UDP length wrong");
		return;
	}
	dport = basic_get_be16(b + 2);
	for (size_t i = 0; i < p->cfg.n_udp_ports; i++)
		want |= p->cfg.udp_ports[i] == dport;
	want |= p->cfg.udp_src_port && basic_get_be16(b) == p->cfg.udp_src_port;
	if (!want) {
		p->st.other_proto++;
		return;
	}
	p->st.udp_datagrams++;
	e = push(p, TRACE_PCAP_UDP);
	if (!e)
		return;
	e->proto = 17;
	e->src = src;
	e->dst = dst;
	e->sport = basic_get_be16(b);
	e->dport = dport;
	e->data = b + 8;
	e->len = ulen - 8u;
}

static void l4(trace_pcap_t *p, uint8_t proto, uint32_t src, uint32_t dst, const uint8_t *b, size_t len)
{
	if (proto == 17)
		udp(p, src, dst, b, len);
	else if (proto == 6)
		tcp(p, src, dst, b, len);
	else
		p->st.other_proto++;
}

/* ---- IPv4 fragments ---- */

static void frag_drop(trace_pcap_t *p, struct frag *f, uint64_t *counter, const char *why)
{
	(*counter)++;
	note(p, "IPv4 datagram id %u (first fragment in packet %" PRIu64 ") %s", f->id, f->first_packet, why);
	f->used = false;
	p->frags_used--;
}

/* Datagrams whose time ran out by now (capture time): incomplete. */
static void frag_expire(trace_pcap_t *p, bool all)
{
	for (unsigned i = 0; p->frags_used && i < p->cfg.frags; i++) {
		struct frag *f = &p->frags[i];

		if (f->used && (all || p->t - f->t0 > p->cfg.frag_timeout_ns))
			frag_drop(p, f, &p->st.frag_incomplete, all ? "incomplete at the end of the capture" :
			          "incomplete: its time ran out");
	}
}

static struct frag *frag_slot(trace_pcap_t *p, uint32_t src, uint32_t dst, uint16_t id, uint8_t proto)
{
	struct frag *f = NULL, *oldest = NULL;

	for (unsigned i = 0; i < p->cfg.frags; i++) {
		struct frag *x = &p->frags[i];

		if (x->used && x->src == src && x->dst == dst && x->id == id && x->proto == proto && x->vlan == p->vlan)
			return x;
		if (!x->used && !f)
			f = x;
		if (x->used && (!oldest || x->t0 < oldest->t0))
			oldest = x;
	}
	if (!f) {
		f = oldest;
		frag_drop(p, f, &p->st.frag_incomplete, "incomplete: more datagrams in reassembly than room for");
	}
	p->frags_used++;
	*f = (struct frag){ .used = true, .src = src, .dst = dst, .id = id, .proto = proto, .vlan = p->vlan,
	                    .t0 = p->t, .first_packet = p->pkt, .buf = f->buf };
	return f;
}

/* A fragment [off, off + n); true once the datagram is whole.  An exact
   repeat (the same bytes again: a capture on two interfaces) is let be;
   any other overlap drops the datagram, as Linux does (RFC 5722's rule). */
static bool frag_add(trace_pcap_t *p, struct frag *f, uint32_t off, const uint8_t *b, uint32_t n, bool more)
{
	uint32_t end = off + n, have = 0;
	unsigned i;

	if (end > FRAG_BUF - 20 || (more && n % 8) || (!more && f->total && f->total != end) ||
	    (f->total && end > f->total)) {
		frag_drop(p, f, &p->st.frag_bad, "has a fragment past its end or of a wrong length");
		return false;
	}
	for (i = 0; i < f->nruns; i++) {
		if (f->runs[i].off == off && f->runs[i].end == end && memcmp(f->buf + off, b, n) == 0)
			return false;
		if (off < f->runs[i].end && f->runs[i].off < end) {
			frag_drop(p, f, &p->st.frag_overlap, "has overlapping fragments: dropped");
			return false;
		}
	}
	if (f->nruns == FRAG_RUNS) {
		frag_drop(p, f, &p->st.frag_bad, "came in too many fragments");
		return false;
	}
	if (!more) {
		for (i = 0; i < f->nruns; i++)
			if (f->runs[i].end > end) {
				frag_drop(p, f, &p->st.frag_bad, "has a fragment past its last one's end");
				return false;
			}
		f->total = end;
	}
	f->runs[f->nruns].off = off;
	f->runs[f->nruns++].end = end;
	memcpy(f->buf + off, b, n);
	for (i = 0; i < f->nruns; i++)
		have += f->runs[i].end - f->runs[i].off;
	return f->total && have == f->total;
}

/* ---- IPv4 and the links ---- */

static void ipv4(trace_pcap_t *p, const uint8_t *b, size_t caplen, bool cut)
{
	size_t hl, tot;
	uint16_t fo;
	uint32_t src, dst;

	if (caplen < 20 || (b[0] >> 4) != 4 || (hl = (size_t)(b[0] & 15) * 4) < 20 || (tot = basic_get_be16(b + 2)) < hl ||
	    tot > caplen) {
		if (cut && caplen >= 20 && (b[0] >> 4) == 4 && basic_get_be16(b + 2) > caplen) {
			p->st.cut++;
			note(p, "captured %zu bytes of a %u-byte IPv4 datagram (snap length)", caplen, basic_get_be16(b + 2));
		} else {
			p->st.bad_ip++;
			note(p, "IPv4 header wrong");
		}
		return;
	}
	src = basic_get_be32(b + 12);
	dst = basic_get_be32(b + 16);
	fo = basic_get_be16(b + 6);
	if (fo & 0x3fff) { /* MF or an offset: a fragment */
		struct frag *f = frag_slot(p, src, dst, basic_get_be16(b + 4), b[9]);

		if (frag_add(p, f, (uint32_t)(fo & 0x1fff) * 8, b + hl, (uint32_t)(tot - hl), fo & 0x2000)) {
			f->used = false;
			p->frags_used--;
			l4(p, b[9], src, dst, f->buf, f->total);
		}
		return;
	}
	l4(p, b[9], src, dst, b + hl, tot - hl);
}

/* An Ethernet type and what follows it, VLAN tags looked through. */
static void ethertype(trace_pcap_t *p, uint16_t type, const uint8_t *b, size_t len, bool cut)
{
	while (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
		if (len < 4) {
			p->st.other_link++;
			return;
		}
		p->vlan = basic_get_be16(b) & 0xfff;
		type = basic_get_be16(b + 2);
		b += 4;
		len -= 4;
	}
	if (type == 0x0800)
		ipv4(p, b, len, cut);
	else
		p->st.other_link++;
}

static void link_layer(trace_pcap_t *p, const uint8_t *b, size_t len, bool cut)
{
	switch (p->dlt) {
	case DLT_EN10MB:
		if (len >= 14)
			ethertype(p, basic_get_be16(b + 12), b + 14, len - 14, cut);
		else
			p->st.other_link++;
		break;
	case DLT_LINUX_SLL: /* 16 bytes, the protocol last */
		if (len >= 16)
			ethertype(p, basic_get_be16(b + 14), b + 16, len - 16, cut);
		else
			p->st.other_link++;
		break;
	case DLT_LINUX_SLL2: /* 20 bytes, the protocol first */
		if (len >= 20)
			ethertype(p, basic_get_be16(b), b + 20, len - 20, cut);
		else
			p->st.other_link++;
		break;
	default: /* DLT_RAW, DLT_IPV4 */
		if (len >= 1 && (b[0] >> 4) == 4)
			ipv4(p, b, len, cut);
		else
			p->st.other_link++;
	}
}

/* ---- the reader ---- */

static void on_packet(trace_pcap_t *p, const struct pcap_pkthdr *hdr, const uint8_t *b)
{
	p->st.packets++;
	p->pkt = p->st.packets;
	/* opened in nanosecond precision: tv_usec holds nanoseconds */
	p->t = (uint64_t)hdr->ts.tv_sec * 1000000000ULL + (uint64_t)hdr->ts.tv_usec;
	p->vlan = -1;
	p->arena_fill = 0;
	/* classic pcap: records one after the other, so each start is known
	   without asking the file; pcapng's blocks vary (note() asks then) */
	p->pkt_off = p->off;
	p->off += 16 + (uint64_t)hdr->caplen;
	frag_expire(p, false);
	link_layer(p, b, hdr->caplen, hdr->caplen < hdr->len);
}

/* At the end: the open connections closed one per call (a connection's
   held bytes need the arena to themselves). */
static bool close_one(trace_pcap_t *p)
{
	for (unsigned i = 0; i < p->cfg.conns; i++)
		if (p->conns[i].used) {
			p->arena_fill = 0;
			conn_close(p, &p->conns[i], TRACE_PCAP_END_CAPTURE);
			return true;
		}
	return false;
}

int trace_pcap_unread(trace_pcap_t *p, uint32_t *ret)
{
	struct pcap_stat st;

	if (!p || !p->live || !ret)
		return -EINVAL;
	if (pcap_stats(p->pc, &st) < 0)
		return -EIO;
	/* ps_recv counts each packet that passed the filter, those the full
	   ring dropped included; 32 bits that wrap, as the difference */
	*ret = st.ps_recv - st.ps_drop - (uint32_t)p->st.packets;
	return 0;
}

int trace_pcap_next(trace_pcap_t *p, struct trace_pcap_event *ret_ev)
{
	struct pcap_pkthdr *hdr;
	const u_char *b;

	if (!p || !ret_ev)
		return -EINVAL;
	for (;;) {
		int r;

		if (p->qhead < p->qlen) {
			*ret_ev = p->q[p->qhead++];
			return 1;
		}
		p->qhead = p->qlen = 0;
		if (p->ended) {
			if (close_one(p))
				continue;
			return 0;
		}
		r = pcap_next_ex(p->pc, &hdr, &b);
		if (r == 1) {
			on_packet(p, hdr, b);
			continue;
		}
		if (p->live) {
			/* non-blocking: 0 is an empty ring, not an end */
			if (r == 0)
				return -EAGAIN;
			snprintf(p->err, sizeof(p->err), "%s: %s", p->name, pcap_geterr(p->pc));
			return r == PCAP_ERROR_IFACE_NOT_UP ? -ENETDOWN : -EIO;
		}
		p->ended = true;
		frag_expire(p, true);
		if (r == PCAP_ERROR_BREAK)
			continue;
		p->failed = true;
		snprintf(p->err, sizeof(p->err), "%s: damaged after packet %" PRIu64 " (at byte %ld): %s", p->name,
		         p->st.packets, ftell(pcap_file(p->pc)), pcap_geterr(p->pc));
		return -EBADMSG;
	}
}

static int setup(trace_pcap_t *p, const struct trace_pcap_cfg *cfg)
{
	p->cfg = cfg ? *cfg : (struct trace_pcap_cfg){ 0 };
	if (p->cfg.n_udp_ports > TRACE_PCAP_UDP_PORTS_MAX)
		return -EINVAL;
	if (!p->cfg.n_udp_ports) {
		p->cfg.udp_ports[0] = TRACE_PCAP_PORT_PD;
		p->cfg.udp_ports[1] = TRACE_PCAP_PORT_MD;
		p->cfg.n_udp_ports = 2;
	}
	if (!p->cfg.tcp_port)
		p->cfg.tcp_port = TRACE_PCAP_PORT_MD;
	if (!p->cfg.frags)
		p->cfg.frags = TRACE_PCAP_FRAGS;
	if (!p->cfg.frag_timeout_ns)
		p->cfg.frag_timeout_ns = TRACE_PCAP_FRAG_TIMEOUT_NS;
	if (!p->cfg.conns)
		p->cfg.conns = TRACE_PCAP_CONNS;
	if (!p->cfg.window)
		p->cfg.window = TRACE_PCAP_WINDOW;
	/* a power of two: a byte's place in the window is seq & mask */
	if (p->cfg.window > WINDOW_MAX || (p->cfg.window & (p->cfg.window - 1)) || p->cfg.frags > 4096 ||
	    p->cfg.conns > 4096)
		return -EINVAL;
	p->mask = (uint32_t)p->cfg.window - 1;
	p->frags = calloc(p->cfg.frags, sizeof(*p->frags));
	p->conns = calloc(p->cfg.conns, sizeof(*p->conns));
	p->arena = malloc(2 * p->cfg.window);
	if (!p->frags || !p->conns || !p->arena)
		return -ENOMEM;
	for (unsigned i = 0; i < p->cfg.frags; i++)
		if (!(p->frags[i].buf = malloc(FRAG_BUF)))
			return -ENOMEM;
	for (unsigned i = 0; i < p->cfg.conns; i++)
		for (int d = 0; d < 2; d++)
			if (!(p->conns[i].h[d].ring = malloc(p->cfg.window)))
				return -ENOMEM;
	return 0;
}

/* An open that failed: its words (p->err, else r's) into errbuf, p freed. */
static int open_failed(trace_pcap_t *p, int r, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", p->err[0] ? p->err : strerror(-r));
	trace_pcap_free(p);
	return r;
}

/* f is libpcap's from here on (pcap_close closes it), also on failure. */
static int open_file(FILE *f, const char *name, const struct trace_pcap_cfg *cfg, trace_pcap_t **ret,
                     char *errbuf, size_t errlen)
{
	char perr[PCAP_ERRBUF_SIZE] = "";
	uint8_t m[4] = { 0 };
	trace_pcap_t *p = calloc(1, sizeof(*p));
	int r;

	if (!p || !(p->name = strdup(name))) {
		fclose(f);
		trace_pcap_free(p);
		return -ENOMEM;
	}
	/* the magic says which format, and so what an offset can name */
	if (fread(m, 1, 4, f) == 4)
		p->ng = basic_get_be32(m) == TRACE_PCAPNG_SHB;
	rewind(f);
	r = setup(p, cfg);
	if (r < 0) {
		fclose(f);
		goto fail;
	}
	p->pc = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, perr);
	if (!p->pc) {
		fclose(f);
		snprintf(p->err, sizeof(p->err), "%s: not a capture libpcap reads: %s", name, perr);
		r = -EMEDIUMTYPE;
		goto fail;
	}
	p->off = 24;
	p->dlt = pcap_datalink(p->pc);
	if (p->dlt != DLT_EN10MB && p->dlt != DLT_LINUX_SLL && p->dlt != DLT_LINUX_SLL2 && p->dlt != DLT_RAW &&
	    p->dlt != DLT_IPV4) {
		snprintf(p->err, sizeof(p->err), "%s: link type %s (%d) not read (Ethernet, Linux cooked SLL/SLL2, "
		         "raw IPv4 are)", name, pcap_datalink_val_to_name(p->dlt) ? pcap_datalink_val_to_name(p->dlt) :
		         "?", p->dlt);
		r = -ENOTSUP;
		goto fail;
	}
	*ret = p;
	return 0;
fail:
	return open_failed(p, r, errbuf, errlen);
}

/* libpcap's result of a live open as -errno. */
static int live_errno(int r)
{
	switch (r) {
	case PCAP_ERROR_PERM_DENIED:
		return -EPERM;
	case PCAP_ERROR_NO_SUCH_DEVICE:
		return -ENODEV;
	case PCAP_ERROR_IFACE_NOT_UP:
		return -ENETDOWN;
	default:
		return -EIO;
	}
}

int trace_pcap_open_live(const char *ifname, const char *filter, int snaplen, int buffer_bytes, int timeout_ms,
                         const struct trace_pcap_cfg *cfg, trace_pcap_t **ret, char *errbuf, size_t errlen)
{
	char perr[PCAP_ERRBUF_SIZE] = "";
	struct bpf_program prog;
	trace_pcap_t *p;
	int r;

	if (!ifname || !ifname[0] || !filter || snaplen <= 0 || buffer_bytes <= 0 || timeout_ms <= 0 || !ret)
		return -EINVAL;
	if (!(p = calloc(1, sizeof(*p))) || !(p->name = strdup(ifname))) {
		trace_pcap_free(p);
		return -ENOMEM;
	}
	p->live = true;
	if ((r = setup(p, cfg)) < 0)
		goto fail;
	if (!(p->pc = pcap_create(ifname, perr))) {
		snprintf(p->err, sizeof(p->err), "%s: %s", ifname, perr);
		r = -EIO;
		goto fail;
	}
	/* Not immediate: the kernel fills a block and hands it over whole
	   (or at the timeout), one wakeup for many packets, as tcpdump -w.
	   libpcap (1.10) makes TPACKET_V3 blocks of 256 KiB whatever the
	   snap length (its "frame" is always MAXIMUM_SNAPLEN): buffer_bytes /
	   256 KiB blocks, and at a rate below a block a timeout the ring
	   holds only (blocks x timeout) of traffic while the reader is held
	   up; the caller picks the timeout by that trade. */
	if (pcap_set_snaplen(p->pc, snaplen) < 0 || pcap_set_promisc(p->pc, 0) < 0 ||
	    pcap_set_timeout(p->pc, timeout_ms) < 0 || pcap_set_immediate_mode(p->pc, 0) < 0 ||
	    pcap_set_buffer_size(p->pc, buffer_bytes) < 0 ||
	    pcap_set_tstamp_precision(p->pc, PCAP_TSTAMP_PRECISION_NANO) < 0) {
		snprintf(p->err, sizeof(p->err), "%s: %s", ifname, pcap_geterr(p->pc));
		r = -EIO;
		goto fail;
	}
	if ((r = pcap_activate(p->pc)) < 0) {
		snprintf(p->err, sizeof(p->err), "%s: %s%s%s", ifname, pcap_statustostr(r), pcap_geterr(p->pc)[0] ? ": " : "",
		         pcap_geterr(p->pc));
		r = live_errno(r);
		goto fail;
	}
	p->dlt = pcap_datalink(p->pc);
	if (p->dlt != DLT_EN10MB && p->dlt != DLT_LINUX_SLL && p->dlt != DLT_LINUX_SLL2 && p->dlt != DLT_RAW &&
	    p->dlt != DLT_IPV4) {
		snprintf(p->err, sizeof(p->err), "%s: link type %d not read", ifname, p->dlt);
		r = -ENOTSUP;
		goto fail;
	}
	/* What this host sends is not what it receives.  libpcap (1.10)
	   skips outgoing packets after the kernel copied them into the ring
	   (on lo every packet twice, its ring full twice as fast, its drops
	   counted twice); PACKET_IGNORE_OUTGOING (Linux 4.20) keeps them out
	   of it.  Best effort: an older kernel leaves it to libpcap. */
	(void)setsockopt(pcap_fileno(p->pc), SOL_PACKET, PACKET_IGNORE_OUTGOING, &(int){ 1 }, sizeof(int));
	if (pcap_setdirection(p->pc, PCAP_D_IN) < 0 ||
	    pcap_compile(p->pc, &prog, filter, 1, PCAP_NETMASK_UNKNOWN) < 0) {
		snprintf(p->err, sizeof(p->err), "%s: filter \"%s\": %s", ifname, filter, pcap_geterr(p->pc));
		r = -EINVAL;
		goto fail;
	}
	r = pcap_setfilter(p->pc, &prog);
	pcap_freecode(&prog);
	if (r < 0 || pcap_setnonblock(p->pc, 1, perr) < 0) {
		snprintf(p->err, sizeof(p->err), "%s: %s", ifname, r < 0 ? pcap_geterr(p->pc) : perr);
		r = -EIO;
		goto fail;
	}
	*ret = p;
	return 0;
fail:
	return open_failed(p, r, errbuf, errlen);
}

int trace_pcap_fd(const trace_pcap_t *p)
{
	return p && p->live ? pcap_get_selectable_fd(p->pc) : -1;
}

int trace_pcap_drops(trace_pcap_t *p, uint32_t *ret)
{
	struct pcap_stat st;

	if (!p || !p->live || !ret)
		return -EINVAL;
	if (pcap_stats(p->pc, &st) < 0)
		return -EIO;
	*ret = st.ps_drop;
	return 0;
}

int trace_pcap_open(const char *path, const struct trace_pcap_cfg *cfg, trace_pcap_t **ret, char *errbuf,
                    size_t errlen)
{
	FILE *f;

	if (!path || !ret)
		return -EINVAL;
	f = fopen(path, "rbe");
	if (!f) {
		int r = -errno;

		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s: %s", path, strerror(-r));
		return r;
	}
	return open_file(f, path, cfg, ret, errbuf, errlen);
}

int trace_pcap_open_mem(const void *buf, size_t len, const char *name, const struct trace_pcap_cfg *cfg,
                        trace_pcap_t **ret, char *errbuf, size_t errlen)
{
	FILE *f;

	if (!buf || !len || !name || !ret)
		return -EINVAL;
	f = fmemopen((void *)buf, len, "rb");
	if (!f)
		return -errno;
	return open_file(f, name, cfg, ret, errbuf, errlen);
}

const char *trace_pcap_error(const trace_pcap_t *p)
{
	return p ? p->err : "";
}

const char *trace_pcap_note(const trace_pcap_t *p)
{
	return p ? p->note : "";
}

void trace_pcap_stats(const trace_pcap_t *p, struct trace_pcap_stats *ret)
{
	if (p && ret)
		*ret = p->st;
}

const char *trace_pcap_link_name(const trace_pcap_t *p)
{
	const char *n = p && p->pc ? pcap_datalink_val_to_name(p->dlt) : NULL;

	return n ? n : "unknown";
}

bool trace_pcap_is_ng(const trace_pcap_t *p)
{
	return p && p->ng;
}

trace_pcap_t *trace_pcap_free(trace_pcap_t *p)
{
	if (!p)
		return NULL;
	if (p->pc)
		pcap_close(p->pc);
	for (unsigned i = 0; p->frags && i < p->cfg.frags; i++)
		free(p->frags[i].buf);
	for (unsigned i = 0; p->conns && i < p->cfg.conns; i++)
		for (int d = 0; d < 2; d++)
			free(p->conns[i].h[d].ring);
	free(p->frags);
	free(p->conns);
	free(p->arena);
	free(p->name);
	free(p);
	return NULL;
}

const char *trace_pcap_kind_name(enum trace_pcap_kind k)
{
	static const char *const names[TRACE_PCAP_KIND_MAX] = {
		"udp", "tcp-open", "tcp-data", "tcp-gap", "tcp-close",
	};

	return (unsigned)k < TRACE_PCAP_KIND_MAX ? names[k] : "unknown";
}

const char *trace_pcap_end_name(enum trace_pcap_end e)
{
	static const char *const names[TRACE_PCAP_END_MAX] = { "fin", "rst", "capture-end", "evicted" };

	return (unsigned)e < TRACE_PCAP_END_MAX ? names[e] : "unknown";
}
