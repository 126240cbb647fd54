/* SPDX-License-Identifier: MIT */
/*
 * trdp-trace.c - a packet capture (pcap, pcapng: trace/pcap.h) as a TRDP
 * bus (cfg->trdp.capture): `railmon replay CAPTURE`.  Each UDP datagram to
 * the PD or MD port (and from the MD port: a reply to the requester's
 * ephemeral port), and each MD message framed out of a TCP stream on the
 * MD port (trdp_md_frame_len), becomes the raw telegram record the live
 * driver (trdp.c) writes for it, through the same bookkeeping
 * (bus_trdp_telegram: header check, counters, sequence, topology, events),
 * so a capture of the traffic a live bus logged gives the same records.
 * The kernel's receive time is replaced by the capture time of the packet
 * (that completed the datagram or the message).
 *
 * trace_speed > 0 paces the telegrams by their capture times
 * (acquisition/acq-pace.h, as bus/can-trace.c) and stamps them with
 * CLOCK_REALTIME at delivery, as a live bus would; 0 delivers as fast as
 * the caller drains and keeps the capture times, so a replay is
 * deterministic.  recv() returns -ENODATA at the end of the capture.
 *
 * A TCP stream that cannot be framed any more (a bad header: its 116
 * bytes, as live; a gap of bytes never captured) is recorded up to there
 * as one refused telegram
 * and the rest of that direction is passed over until the connection
 * ends; what is left at its end, short of a whole message, is recorded
 * refused too, as the live listener's cut (short of the header, else
 * truncated: also a whole data set whose padding is missing), and counted
 * as it counts (tcp_cut, tcp_messages, tcp_bad_header).  Each connection
 * is counted as the listener counts the ones it takes: tcp_accepted when
 * it is first seen, tcp_closed at its end (FIN, RST, or let go by the
 * reader), not when the capture ends with it open (live, it would still
 * be).  A bus without message data (md_port 0) reads no TCP at all, as
 * live it opens no listener.  Everything is allocated at open.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acquisition/acq-pace.h"
#include "basic/clock.h"
#include "trace/pcap.h"
#include "trdp-private.h"

#define STREAMS (2 * TRACE_PCAP_CONNS) /* both directions of each connection pcap.c follows */
#define STREAM_BUF MD_SLOT             /* an MD message is at most 65504 bytes */

/* One direction of one TCP connection: its bytes not yet framed. */
struct stream {
	bool used, broken; /* broken: cannot be framed any more, passed over */
	uint32_t conn, src, dst;
	uint16_t sport, dport;
	uint64_t time_ns; /* capture time of the last bytes */
	size_t fill;
	uint8_t *buf;
};

struct capture {
	trace_pcap_t *pc;
	struct acq_pace pace;
	bool pacing;
	struct trace_pcap_event ev;
	bool have_ev;  /* ev read, not yet delivered */
	bool ended;
	struct stream *draining; /* whose framed messages did not all fit the last recv() */
	bool drain_close;        /* and it is to be closed after */
	struct stream st[STREAMS];
	uint8_t *bufs;
};

static struct trdp_priv *priv(const bus_dev_t *dev)
{
	return dev->priv;
}

static struct capture *cap(const bus_dev_t *dev)
{
	return priv(dev)->trace;
}

static void cap_free(struct capture *c)
{
	if (!c)
		return;
	trace_pcap_free(c->pc);
	free(c->bufs);
	free(c);
}

static void tt_close(bus_dev_t *dev);

static int tt_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_trdp_cfg *t = &cfg->trdp;
	/* no MD port: no TCP (trace/pcap.c's tcp_port 0 would be 17225) */
	struct trace_pcap_cfg pcfg = { .tcp_port = t->md_port, .no_tcp = !t->md_port, .udp_src_port = t->md_port };
	struct capture *c;
	int r;

	if (!memchr(t->capture, '\0', sizeof(t->capture)) || !t->capture[0] || !isfinite(t->trace_speed) ||
	    t->trace_speed < 0)
		return -EINVAL;
	if ((r = bus_trdp_priv_new(dev, cfg)) < 0) {
		bus_trdp_priv_free(dev);
		return r;
	}
	if (!(c = calloc(1, sizeof(*c))) || !(c->bufs = malloc((size_t)STREAMS * STREAM_BUF))) {
		cap_free(c);
		bus_trdp_priv_free(dev);
		return -ENOMEM;
	}
	priv(dev)->trace = c;
	for (size_t i = 0; i < STREAMS; i++)
		c->st[i].buf = c->bufs + i * STREAM_BUF;
	if (t->pd_port)
		pcfg.udp_ports[pcfg.n_udp_ports++] = t->pd_port;
	if (t->md_port)
		pcfg.udp_ports[pcfg.n_udp_ports++] = t->md_port;
	if (t->trace_speed > 0) {
		acq_pace_init(&c->pace, t->trace_speed);
		c->pacing = true;
	}
	r = trace_pcap_open(t->capture, &pcfg, &c->pc, NULL, 0);
	if (r < 0)
		tt_close(dev); /* bus_dev_new() frees only the device */
	return r;
}

static void tt_close(bus_dev_t *dev)
{
	if (!dev->priv)
		return;
	cap_free(cap(dev));
	bus_trdp_priv_free(dev);
}

/* A telegram of the capture at its capture time, or now when paced. */
static int emit(bus_dev_t *dev, enum trdp_kind kind, bool tcp, int cut, const uint8_t *data, size_t len,
                uint64_t time_ns, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, struct acq_item *out,
                size_t *n)
{
	return bus_trdp_emit(dev, kind, tcp, cut, data, len, cap(dev)->pacing ? basic_realtime_ns() : (int64_t)time_ns,
	                     src, sport, dst, dport, out, n);
}

int bus_trdp_capture_owner(const struct bus_cfg *buses, size_t n, bool tcp, uint32_t src, uint16_t sport,
                           uint32_t dst, uint16_t dport, int *ret_first)
{
	int best = -1, best_score = 0, first = -1;

	for (size_t i = 0; i < n; i++) {
		const struct bus_trdp_cfg *t = &buses[i].trdp;
		bool md = t->md_port && (dport == t->md_port || sport == t->md_port);
		if (buses[i].kind != BUS_KIND_TRDP || !(md || (!tcp && t->pd_port && dport == t->pd_port)))
			continue;
		if (first < 0)
			first = (int)i;
		/* the address it was sent to: TCP's server is the MD port's end */
		uint32_t to = tcp && dport != t->md_port ? src : dst;
		bool group = (to >> 28) == 0xe;
		int score = 0;
		if (t->bind_ip)
			score = t->bind_ip == to ? 3 : 0;
		else if (group)
			for (unsigned g = 0; g < t->ngroups && !score; g++)
				score = t->groups[g] == to ? 2 : 0;
		else
			score = 1;
		if (score > best_score) {
			best = (int)i;
			best_score = score;
		}
	}
	if (ret_first)
		*ret_first = first;
	return best;
}

/* Whether the capture's datagram or connection e is this bus's: always
   when the capture is replayed into this bus alone; else by
   bus_trdp_capture_owner(), counting here what no bus takes (on the first
   bus whose ports it is on, so once). */
static bool ours(bus_dev_t *dev, const struct trace_pcap_event *e, bool count)
{
	const struct bus_trdp_cfg *t = &dev->cfg.trdp;
	int first, owner;

	if (!t->capture_buses)
		return true;
	owner = bus_trdp_capture_owner(t->capture_buses, t->capture_nbuses, e->proto == 6, e->src, e->sport, e->dst,
	                               e->dport, &first);
	if (owner < 0 && count && first == (int)dev->cfg.index)
		basic_counter_add(&priv(dev)->st_capture_unmatched, 1);
	return owner == (int)dev->cfg.index;
}

static struct stream *stream_of(struct capture *c, const struct trace_pcap_event *e, bool make)
{
	struct stream *free_one = NULL;

	for (size_t i = 0; i < STREAMS; i++) {
		struct stream *s = &c->st[i];
		if (s->used && s->conn == e->conn && s->src == e->src && s->sport == e->sport)
			return s;
		if (!s->used && !free_one)
			free_one = s;
	}
	if (!make || !free_one)
		return NULL;
	*free_one = (struct stream){ .used = true, .conn = e->conn, .src = e->src, .dst = e->dst, .sport = e->sport,
		                     .dport = e->dport, .buf = free_one->buf };
	return free_one;
}

/* The whole messages of s (and at its close, what is left) as telegrams,
   while 3 items fit.  0 when all went, -ENOBUFS when items or bytes ran
   out (c->draining says to come back). */
static int drain(bus_dev_t *dev, struct stream *s, bool closing, struct acq_item *out, size_t max, size_t *n)
{
	struct capture *c = cap(dev);
	size_t at = 0;
	int r = 0;

	while (s->fill - at > 0 && !s->broken) {
		size_t len;
		int res;
		if (*n + 3 > max) {
			r = -ENOBUFS;
			break;
		}
		r = trdp_md_frame_len(s->buf + at, s->fill - at, &len, &res);
		/* the rest of the message is still to come */
		if (!closing && (r == -EAGAIN || (r == 0 && len > s->fill - at))) {
			r = 0;
			break;
		}
		/* a bad header, or the connection's end short of a message:
		   what is there, refused; the stream cannot be framed on.  The
		   end short of a message is the live driver's cut (trdp.c
		   tcp_read): short of the header, or truncated - also when only
		   the padding after a whole data set is missing, since the
		   framing says the message is longer */
		int cut = TRDP_HDR_OK;
		if (r < 0 || len > s->fill - at) {
			if (r >= 0 || r == -EAGAIN)
				cut = s->fill - at < TRDP_MD_HEADER_SIZE ? TRDP_HDR_SHORT : TRDP_HDR_TRUNCATED;
			len = s->fill - at;
			/* a bad header: its 116 bytes, as the live listener reads
			   no further (what follows is not framed, whatever the
			   segments held) */
			if (r < 0 && r != -EAGAIN && len > TRDP_MD_HEADER_SIZE)
				len = TRDP_MD_HEADER_SIZE;
			s->broken = true;
		}
		r = emit(dev, TRDP_KIND_MD, true, cut, s->buf + at, len, s->time_ns, s->src, s->sport, s->dst, s->dport,
		         out, n);
		if (r < 0) {
			s->broken = false;
			break;
		}
		if (s->broken)
			basic_counter_add(cut != TRDP_HDR_OK ? &priv(dev)->st_tcp_cut : &priv(dev)->st_tcp_bad, 1);
		at += len;
	}
	if (at) {
		memmove(s->buf, s->buf + at, s->fill - at);
		s->fill -= at;
	}
	if (s->broken)
		s->fill = 0;
	if (r == -ENOBUFS) {
		c->draining = s;
		c->drain_close = closing;
		return r;
	}
	c->draining = NULL;
	if (closing)
		s->used = false;
	return 0;
}

/* One event of the capture into items.  0 delivered, -ENOBUFS to come
   back to it (or to the stream it filled). */
static int deliver(bus_dev_t *dev, const struct trace_pcap_event *e, struct acq_item *out, size_t max, size_t *n)
{
	struct capture *c = cap(dev);
	struct stream *s;

	/* another bus's (a capture into several), or no bus's: counted once */
	if (!ours(dev, e, e->kind == TRACE_PCAP_UDP || e->kind == TRACE_PCAP_TCP_OPEN))
		return 0;
	switch (e->kind) {
	case TRACE_PCAP_TCP_OPEN:
		basic_counter_add(&priv(dev)->st_tcp_accepted, 1);
		return 0;
	case TRACE_PCAP_UDP:
		/* one path with a live bus that receives through a packet ring
		   (trdp-capture.c) */
		return bus_trdp_udp_event(dev, e, c->pacing ? basic_realtime_ns() : (int64_t)e->time_ns, out, n);
	case TRACE_PCAP_TCP_DATA:
		if (!(s = stream_of(c, e, true))) {
			bus_stat_add(&dev->stats.rx_dropped, 1); /* cannot be: pcap.c follows as many */
			return 0;
		}
		if (s->broken)
			return 0;
		if (e->len > STREAM_BUF - s->fill) {
			/* more than any message unframed: cannot be TRDP */
			bus_stat_add(&dev->stats.bad_input, 1);
			s->broken = true;
			s->fill = 0;
			return 0;
		}
		memcpy(s->buf + s->fill, e->data, e->len);
		s->fill += e->len;
		s->time_ns = e->time_ns;
		return drain(dev, s, false, out, max, n);
	case TRACE_PCAP_TCP_GAP:
		/* bytes never captured: the framing is lost; what came before
		   them is said as a refused telegram */
		if ((s = stream_of(c, e, true)) && !s->broken) {
			int r = drain(dev, s, true, out, max, n);
			if (r < 0)
				return r;
			*s = (struct stream){ .used = true, .broken = true, .conn = e->conn, .src = e->src,
				              .dst = e->dst, .sport = e->sport, .dport = e->dport, .buf = s->buf };
		}
		bus_stat_add(&dev->stats.rx_dropped, 1);
		return 0;
	case TRACE_PCAP_TCP_CLOSE:
		/* both directions end: the one of this event, and its reverse */
		for (int d = 0; d < 2; d++) {
			struct trace_pcap_event rev = *e;
			if (d) {
				rev.src = e->dst, rev.dst = e->src, rev.sport = e->dport, rev.dport = e->sport;
			}
			if ((s = stream_of(c, &rev, false))) {
				int r = drain(dev, s, true, out, max, n);
				if (r < 0)
					return r;
			}
		}
		/* here once: a close delivered again (redo()) got no further
		   than its drain before */
		if (e->end != TRACE_PCAP_END_CAPTURE)
			basic_counter_add(&priv(dev)->st_tcp_closed, 1);
		return 0;
	default:
		return 0;
	}
}

/* An event whose deliver() stopped draining a stream is delivered again
   after it (doing again what it did is harmless: the drained stream is
   closed, or empty). */
static bool redo(const struct trace_pcap_event *e)
{
	return e->kind == TRACE_PCAP_TCP_CLOSE || e->kind == TRACE_PCAP_TCP_GAP;
}

static int tt_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct capture *c = cap(dev);
	int64_t deadline = timeout_ms < 0 ? -1 : basic_mono_ns() + (int64_t)timeout_ms * 1000000;
	size_t n = 0;
	int r;

	if (max < 3)
		return -EINVAL;
	if (c->draining) {
		struct stream *s = c->draining;
		if (drain(dev, s, c->drain_close, items, max, &n) < 0)
			return (int)n;
		/* a close or gap is delivered again: its other direction, or
		   the stream marked broken after its bytes went */
		if (!c->have_ev || !redo(&c->ev))
			c->have_ev = false;
	}
	while (n + 3 <= max) {
		if (!c->have_ev) {
			if (c->ended)
				break;
			r = trace_pcap_next(c->pc, &c->ev);
			if (r <= 0) {
				/* the end, or damage past which nothing is read:
				   counted, and the capture ends there */
				if (r < 0)
					bus_stat_add(&dev->stats.bad_input, 1);
				c->ended = true;
				break;
			}
			c->have_ev = true;
		}
		/* events with no telegram of their own are not paced */
		if (c->pacing && (c->ev.kind == TRACE_PCAP_UDP || c->ev.kind == TRACE_PCAP_TCP_DATA) &&
		    acq_pace_wait(&c->pace, (int64_t)c->ev.time_ns, n ? 0 : deadline, NULL) == 0)
			break;
		r = deliver(dev, &c->ev, items, max, &n);
		if (r == -ENOBUFS && c->draining) {
			/* the event's bytes are in its stream: done with the event
			   unless it is to be done again when the stream drained */
			if (!redo(&c->ev))
				c->have_ev = false;
			break;
		}
		if (r == -ENOBUFS)
			break; /* no room in the byte ring: this event again next time */
		c->have_ev = false;
	}
	if (n == 0 && c->ended && !c->have_ev && !c->draining)
		return -ENODATA;
	if (n == 0 && !c->ended && !c->pacing) {
		/* the byte ring is full: wait for the collector to release */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return (int)n;
}

const struct bus_ops bus_trdp_trace_ops = {
	.name = "trdp-trace",
	.open = tt_open,
	.recv = tt_recv,
	.close = tt_close,
	/* no release nor reopen: a capture is read once, never away */
};
