/* SPDX-License-Identifier: MIT */
/*
 * trdp-telegram.c - what every way a TRDP bus receives shares: the device
 * state (bus_trdp_priv_new), the bookkeeping of one telegram (header
 * check, counters, sequence, topology, their events: bus_trdp_telegram),
 * and a captured UDP datagram as a telegram (bus_trdp_udp_event), which
 * a replayed capture (trdp-trace.c) and a live bus reading its packet
 * ring (trdp-capture.c) both go through.  The sockets' own receive path
 * is trdp.c's.  A file of its own so that the three drivers depend on
 * it and not on each other.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq-bytes.h"
#include "trdp-private.h"
#include "trdp/header.h"

static struct trdp_priv *priv(const bus_dev_t *dev)
{
	return dev->priv;
}

int bus_trdp_priv_new(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_trdp_cfg *c = &cfg->trdp;
	struct trdp_priv *p;

	if (cfg->kind != BUS_KIND_TRDP || (!c->pd_port && !c->md_port) || c->ngroups > BUS_TRDP_GROUPS_MAX ||
	    (c->bytes && c->bytes->size < 2 * MD_SLOT))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	dev->priv = p;
	/* no socket, no connection: tcp_buf is the live driver's (trdp_open) */
	p->fd[SOCK_PD] = p->fd[SOCK_MD] = p->lfd = p->watch.fd = -1;
	for (unsigned i = 0; i < TCP_CONN_MAX; i++)
		p->conn[i].fd = -1;
	p->bytes = c->bytes;
	if (!p->bytes) {
		size_t size = c->bytes_size ? c->bytes_size : OWN_BYTES_DEFAULT;
		if (size < 2 * MD_SLOT || !(p->own_buf = malloc(size)))
			return size < 2 * MD_SLOT ? -EINVAL : -ENOMEM;
		acq_bytes_init(&p->own, p->own_buf, size);
		p->bytes = &p->own;
	}
	return 0;
}

void bus_trdp_priv_free(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	if (!p)
		return;
	free(p->tcp_buf);
	free(p->own_buf);
	free(p);
	dev->priv = NULL;
}

/* Sequence counter of one sender's ComId: gaps, repeats, restarts. */
static void follow_seq(struct trdp_priv *p, const struct acq_trdp *t, unsigned kind)
{
	uint32_t h = (t->src_ip * 0x9e3779b1u) ^ (t->com_id * 0x85ebca6bu) ^ kind;

	for (unsigned k = 0; k < TRACK_PROBE; k++) {
		struct track *e = &p->track[(h + k) & (TRACK_MAX - 1)];
		if (!e->used) {
			*e = (struct track){ t->src_ip, t->com_id, t->seq, 1, (uint8_t)kind };
			return;
		}
		if (e->src != t->src_ip || e->com_id != t->com_id || e->kind != kind)
			continue;
		uint32_t skip = t->seq - (e->last_seq + 1u);
		if (skip == UINT32_MAX)
			basic_counter_add(&p->st_repeats, 1);
		else if (skip != 0 && skip < 0x80000000u)
			basic_counter_add(&p->st_gaps, skip);
		else if (skip != 0)
			basic_counter_add(&p->st_back, 1);
		e->last_seq = t->seq;
		return;
	}
	basic_counter_add(&p->st_untracked, 1);
}

static struct acq_item event_item(int64_t t_ns, uint16_t bus, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item ev = { .t_ns = t_ns, .kind = ACQ_ITEM_EVENT, .bus = bus };
	ev.event.code = code;
	ev.event.arg = arg;
	ev.event.detail = detail;
	return ev;
}

size_t bus_trdp_telegram(bus_dev_t *dev, enum trdp_kind kind, const uint8_t *data, size_t len, int cut,
                         uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
                         struct acq_item *out)
{
	struct trdp_priv *p = priv(dev);
	struct acq_item *it = out;
	size_t n = 1;

	int r = trdp_telegram_fill(kind, data, len, &it->trdp);
	/* cut: by our receive slot (longer than any telegram of its kind may
	   be), or by the peer closing a TCP connection mid-message */
	if (cut != TRDP_HDR_OK) {
		r = cut;
		it->trdp.flags = (uint16_t)((it->trdp.flags & 0xffu) | (unsigned)r << ACQ_TRDP_RESULT_SHIFT);
	}
	it->trdp.src_ip = src_ip;
	it->trdp.src_port = src_port;
	it->trdp.dst_ip = dst_ip;
	it->trdp.dst_port = dst_port;
	basic_counter_add(&p->st_telegrams, 1);
	basic_counter_add(&p->st_bytes, len);
	basic_counter_add(&p->st_refused[r & 7], 1);
	if (r != TRDP_HDR_OK) {
		bus_stat_add(&dev->stats.bad_input, 1);
		p->bad_since++;
		p->bad_reason = r;
		if (it->t_ns - p->bad_last_ns >= BAD_EVENT_NS) {
			out[n++] = event_item(it->t_ns, it->bus, ACQ_EV_TRDP_BAD_HEADER, (int64_t)p->bad_since,
			                      (uint32_t)r);
			p->bad_since = 0;
			p->bad_last_ns = it->t_ns;
		}
		return n;
	}
	bus_stat_add(&dev->stats.rx_frames, 1);
	follow_seq(p, &it->trdp, (unsigned)kind);
	if (p->topo_seen && (it->trdp.etb_topo != p->etb || it->trdp.op_trn_topo != p->optrn)) {
		basic_counter_add(&p->st_topo, 1);
		out[n++] = event_item(it->t_ns, it->bus, ACQ_EV_TRDP_TOPOLOGY,
		                      (int64_t)((uint64_t)it->trdp.etb_topo << 32 | it->trdp.op_trn_topo),
		                      it->trdp.com_id);
	}
	p->topo_seen = true;
	p->etb = it->trdp.etb_topo;
	p->optrn = it->trdp.op_trn_topo;
	return n;
}

int bus_trdp_emit(bus_dev_t *dev, enum trdp_kind kind, bool tcp, int cut, const uint8_t *data, size_t len,
                  int64_t t_ns, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, struct acq_item *out,
                  size_t *n)
{
	struct trdp_priv *p = priv(dev);
	/* what the live driver's receive slot would have cut (MSG_TRUNC) */
	size_t slot = kind == TRDP_KIND_MD ? MD_SLOT : PD_SLOT, keep = len < slot ? len : slot;
	uint8_t *at = acq_bytes_reserve(p->bytes, keep ? keep : 1);
	struct acq_item *it = out + *n;

	if (!at)
		return -ENOBUFS;
	memcpy(at, data, keep);
	acq_bytes_commit(p->bytes);
	memset(it, 0, sizeof(*it));
	it->kind = ACQ_ITEM_TRDP;
	it->bus = dev->cfg.index;
	it->t_ns = t_ns;
	it->trdp.flags = tcp ? ACQ_TRDP_TCP : 0;
	*n += bus_trdp_telegram(dev, kind, at, keep, len > slot ? TRDP_HDR_TOO_LONG : cut, src, sport, dst, dport,
	                        it);
	/* MD over TCP counted as the live listener counts it (trdp.c) */
	if (tcp && (it->trdp.flags >> ACQ_TRDP_RESULT_SHIFT) == TRDP_HDR_OK)
		basic_counter_add(&p->st_tcp_messages, 1);
	return 0;
}

int bus_trdp_udp_event(bus_dev_t *dev, const struct trace_pcap_event *e, int64_t t_ns, struct acq_item *out,
                       size_t *n)
{
	const struct bus_trdp_cfg *t = &dev->cfg.trdp;
	/* the port decides the kind, as the socket does live; an MD reply
	   comes from the MD port */
	enum trdp_kind kind = e->dport == t->pd_port && t->pd_port ? TRDP_KIND_PD : TRDP_KIND_MD;

	return bus_trdp_emit(dev, kind, false, TRDP_HDR_OK, e->data, e->len, t_ns, e->src, e->sport, e->dst, e->dport,
	                     out, n);
}


static const char *const receive_names[] = { [BUS_TRDP_RECEIVE_SOCKET] = "socket",
                                             [BUS_TRDP_RECEIVE_CAPTURE] = "capture",
                                             [BUS_TRDP_RECEIVE_REPLAY] = "replay" };

const char *bus_trdp_receive_name(uint32_t receive)
{
	return receive < sizeof(receive_names) / sizeof(receive_names[0]) ? receive_names[receive] : NULL;
}

enum bus_trdp_receive bus_trdp_receive_parse(const char *name)
{
	for (uint32_t k = BUS_TRDP_RECEIVE_SOCKET; k <= BUS_TRDP_RECEIVE_REPLAY; k++)
		if (name && !strcmp(name, receive_names[k]))
			return (enum bus_trdp_receive)k;
	return BUS_TRDP_RECEIVE_UNKNOWN;
}
