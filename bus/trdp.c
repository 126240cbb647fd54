/* SPDX-License-Identifier: MIT */
/*
 * trdp.c - the TRDP bus driver (IEC 61375-2-3 over UDP): process data on
 * 17224 and message data on 17225, unicast and the multicast groups of the
 * board file, received in recvmmsg bursts with the kernel's receive time
 * (SO_TIMESTAMPNS), its drop counter (SO_RXQ_OVFL) and the destination
 * address (IP_PKTINFO).  Each datagram becomes one raw telegram item
 * (ACQ_ITEM_TRDP) whose bytes are in a byte ring beside the item ring
 * (acquisition/acq-bytes.h: the telegram does not fit an item); the
 * header is validated (trdp/header.h) and a refused one is still recorded
 * raw, with its reason in the record's flags, so the log shows what came
 * - it is never decoded.  Sequence counters are followed per sender and
 * ComId (gaps, repeats, restarts counted), a change of a topology counter
 * is an event.  No allocation after open.
 *
 * Gone and back: a UDP socket does not fail when its interface goes down,
 * the traffic just stops; so when a wait ends with nothing, the interface's
 * flags are read (one ioctl per timeout, not per telegram) and a down or
 * deleted interface is gone (-ENETDOWN, -ENODEV).  reopen() opens the
 * sockets and joins the groups again once it is up.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/sock_diag.h>

#include "acquisition/acq-bytes.h"
#include "basic/clock.h"
#include "bus-private.h"
#include "trdp-private.h"
#include "trdp/header.h"

static struct trdp_priv *priv(const bus_dev_t *dev)
{
	return dev->priv;
}

static void close_socks(struct trdp_priv *p)
{
	for (int i = 0; i < SOCK_N; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
	}
}

/* One UDP socket on port with every option the receive path reads, the
   groups joined on the interface. */
static int open_sock(const struct bus_trdp_cfg *c, int ifindex, uint16_t port, int *ret_fd)
{
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
		                  .sin_addr.s_addr = htonl(c->bind_ip) };
	int r = 0;

	if (fd < 0)
		return -errno;
	/* REUSEADDR: a TRDP stack on the same host (the vehicle's own) may
	   listen too, and both get the multicast telegrams. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = -errno;
	for (unsigned g = 0; r == 0 && g < c->ngroups; g++) {
		struct ip_mreqn m = { .imr_multiaddr.s_addr = htonl(c->groups[g]), .imr_ifindex = ifindex };
		if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m)) < 0)
			r = -errno;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

static int open_socks(bus_dev_t *dev)
{
	const struct bus_trdp_cfg *c = &dev->cfg.trdp;
	struct trdp_priv *p = priv(dev);
	int r = 0;

	p->ifindex = 0;
	if (c->ifname[0] && !(p->ifindex = (int)if_nametoindex(c->ifname)))
		return -ENODEV;
	if (c->pd_port)
		r = open_sock(c, p->ifindex, c->pd_port, &p->fd[SOCK_PD]);
	if (r == 0 && c->md_port)
		r = open_sock(c, p->ifindex, c->md_port, &p->fd[SOCK_MD]);
	if (r < 0)
		close_socks(p);
	/* joining a group on an interface that is down: ENODEV, gone */
	return r;
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
	p->fd[SOCK_PD] = p->fd[SOCK_MD] = -1;
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
	free(p->own_buf);
	free(p);
	dev->priv = NULL;
}

static int trdp_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	int r = bus_trdp_priv_new(dev, cfg);

	return r < 0 ? r : bus_open_absent(dev, open_socks(dev));
}

static void trdp_close(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	if (!p)
		return;
	close_socks(p);
	bus_trdp_priv_free(dev);
}

static void trdp_release(bus_dev_t *dev)
{
	close_socks(priv(dev));
}

static int link_state(bus_dev_t *dev);

static int trdp_reopen(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);
	int r = open_socks(dev);

	/* A group can be joined on an interface that is down: back only
	   once it is up, or it would be gone again at the first wait. */
	if (r == 0 && (r = link_state(dev)) < 0)
		close_socks(p);

	if (r == 0) {
		memset(p->ovfl_last, 0, sizeof(p->ovfl_last));
		dev->gone_cause = 0;
	}
	return r;
}

/* The interface is still there and up?  0, -ENODEV (deleted), -ENETDOWN. */
static int link_state(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);
	struct ifreq ifr = { 0 };
	int fd = p->fd[SOCK_PD] >= 0 ? p->fd[SOCK_PD] : p->fd[SOCK_MD];

	if (!dev->cfg.trdp.ifname[0])
		return 0;
	memcpy(ifr.ifr_name, dev->cfg.trdp.ifname, strnlen(dev->cfg.trdp.ifname, IFNAMSIZ - 1));
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return errno == ENODEV || errno == ENXIO ? -ENODEV : 0;
	return (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING) ? 0 : -ENETDOWN;
}

/* The socket's drop counter read now (SO_MEMINFO: the same sk_drops that
   SO_RXQ_OVFL reports beside each datagram): drops after the last
   datagram received would otherwise be said only with the next one,
   and never if none comes.  At each idle wait, not per telegram. */
static void poll_drops(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	for (int i = 0; i < SOCK_N; i++) {
		uint32_t mem[SK_MEMINFO_VARS];
		socklen_t len = sizeof(mem);
		if (p->fd[i] < 0 || getsockopt(p->fd[i], SOL_SOCKET, SO_MEMINFO, mem, &len) < 0 ||
		    len < (socklen_t)((SK_MEMINFO_DROPS + 1) * sizeof(uint32_t)))
			continue;
		if (mem[SK_MEMINFO_DROPS] != p->ovfl_last[i])
			bus_stat_add(&dev->stats.rx_dropped, (uint32_t)(mem[SK_MEMINFO_DROPS] - p->ovfl_last[i]));
		p->ovfl_last[i] = mem[SK_MEMINFO_DROPS];
	}
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

/* What the kernel said beside datagram j: receive time, drops, address. */
static void read_cmsgs(bus_dev_t *dev, int sock, struct msghdr *mh, struct acq_item *it)
{
	struct trdp_priv *p = priv(dev);

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			it->t_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
			uint32_t n;
			memcpy(&n, CMSG_DATA(c), sizeof(n));
			/* the socket's total since it was opened */
			if (n != p->ovfl_last[sock])
				bus_stat_add(&dev->stats.rx_dropped, (uint32_t)(n - p->ovfl_last[sock]));
			p->ovfl_last[sock] = n;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			it->trdp.dst_ip = ntohl(pi.ipi_addr.s_addr);
		}
	}
}

size_t bus_trdp_telegram(bus_dev_t *dev, enum trdp_kind kind, const uint8_t *data, size_t len, bool cut,
                         uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
                         struct acq_item *out)
{
	struct trdp_priv *p = priv(dev);
	struct acq_item *it = out;
	size_t n = 1;

	int r = trdp_telegram_fill(kind, data, len, &it->trdp);
	/* cut by our slot: longer than any telegram of its kind may be */
	if (cut) {
		r = TRDP_HDR_TOO_LONG;
		it->trdp.flags = (uint16_t)((it->trdp.flags & 0xffu) | (unsigned)r << ACQ_TRDP_RESULT_SHIFT);
	}
	it->trdp.src_ip = src_ip;
	it->trdp.src_port = src_port;
	it->trdp.dst_ip = dst_ip;
	it->trdp.dst_port = dst_port;
	basic_counter_add(&p->st_telegrams, 1);
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

/* One received datagram as an item (and the events it causes) at out;
   returns the items written (1 to 3). */
static size_t telegram(bus_dev_t *dev, int sock, size_t j, uint8_t *data, struct acq_item *out)
{
	struct trdp_priv *p = priv(dev);
	struct msghdr *mh = &p->msg[j].msg_hdr;
	struct acq_item *it = out;

	memset(it, 0, sizeof(*it));
	it->kind = ACQ_ITEM_TRDP;
	it->bus = dev->cfg.index;
	it->t_ns = basic_realtime_ns(); /* unless the kernel says */
	read_cmsgs(dev, sock, mh, it);
	return bus_trdp_telegram(dev, sock == SOCK_MD ? TRDP_KIND_MD : TRDP_KIND_PD, data, p->msg[j].msg_len,
	                         (mh->msg_flags & MSG_TRUNC) != 0, ntohl(p->from[j].sin_addr.s_addr),
	                         ntohs(p->from[j].sin_port), it->trdp.dst_ip,
	                         sock == SOCK_MD ? dev->cfg.trdp.md_port : dev->cfg.trdp.pd_port, out);
}

/* Read what a socket has for lack of room, and count it dropped. */
static int drop_burst(bus_dev_t *dev, int sock)
{
	struct trdp_priv *p = priv(dev);
	int k = 0;

	while (k < TRDP_BURST && recv(p->fd[sock], p->scratch, sizeof(p->scratch), MSG_DONTWAIT) >= 0)
		k++;
	acq_bytes_drop(p->bytes, (uint64_t)k);
	basic_counter_add(&p->st_bytes_drops, (uint64_t)k);
	bus_stat_add(&dev->stats.rx_dropped, (uint64_t)k);
	return 0;
}

/* One burst from one socket into items[0..max): each datagram into its
   own reservation of the byte ring, then packed to its length. */
static int read_burst(bus_dev_t *dev, int sock, struct acq_item *items, size_t max)
{
	struct trdp_priv *p = priv(dev);
	size_t slot = sock == SOCK_MD ? MD_SLOT : PD_SLOT;
	/* up to 3 items a telegram; MD slots are large: a few at a time */
	size_t want = max / 3 < TRDP_BURST ? max / 3 : TRDP_BURST, k = 0, n = 0;
	uint64_t pos = acq_bytes_pos(p->bytes);
	uint8_t *at[TRDP_BURST];

	if (sock == SOCK_MD && want > 4)
		want = 4;
	for (; k < want; k++) {
		if (!(at[k] = acq_bytes_reserve(p->bytes, slot)))
			break;
		p->iov[k] = (struct iovec){ at[k], slot };
		p->msg[k].msg_hdr = (struct msghdr){ .msg_name = &p->from[k], .msg_namelen = sizeof(p->from[k]),
			                             .msg_iov = &p->iov[k], .msg_iovlen = 1,
			                             .msg_control = p->cmsg[k], .msg_controllen = sizeof(p->cmsg[k]) };
	}
	if (!k) {
		acq_bytes_unreserve(p->bytes, pos);
		return want ? drop_burst(dev, sock) : 0;
	}
	int got = recvmmsg(p->fd[sock], p->msg, (unsigned)k, MSG_DONTWAIT, NULL);
	acq_bytes_unreserve(p->bytes, pos);
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	/* Pack: each datagram moves down to a reservation of its own length
	   (never above where it is: the reservations before it shrank). */
	for (int j = 0; j < got; j++) {
		size_t len = p->msg[j].msg_len ? p->msg[j].msg_len : 1;
		uint8_t *dst = acq_bytes_reserve(p->bytes, len);
		memmove(dst, at[j], p->msg[j].msg_len);
		n += telegram(dev, sock, (size_t)j, dst, items + n);
	}
	acq_bytes_commit(p->bytes);
	return (int)n;
}

static int trdp_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct trdp_priv *p = priv(dev);
	struct pollfd pfd[SOCK_N];
	int n = 0, r;

	if (max < 3)
		return -EINVAL;
	if (p->fd[SOCK_PD] < 0 && p->fd[SOCK_MD] < 0)
		return bus_gone(dev, dev->gone_cause ? dev->gone_cause : -ENODEV);
	for (int i = 0; i < SOCK_N; i++)
		pfd[i] = (struct pollfd){ .fd = p->fd[i], .events = POLLIN };
	r = poll(pfd, SOCK_N, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0) {
		poll_drops(dev);
		r = link_state(dev);
		return r < 0 ? bus_gone(dev, r) : 0;
	}
	for (int k = 0; k < SOCK_N; k++) {
		int i = (p->next_sock + k) % SOCK_N;
		if (!(pfd[i].revents & (POLLIN | POLLERR)))
			continue;
		r = read_burst(dev, i, items + n, max - (size_t)n);
		if (r < 0) {
			bus_stat_add(&dev->stats.rx_errors, 1);
			return n ? n : r;
		}
		n += r;
	}
	p->next_sock = (p->next_sock + 1) % SOCK_N;
	return n;
}

int bus_dev_trdp_stats(const bus_dev_t *dev, struct bus_trdp_stats *ret)
{
	if (!dev || !ret || dev->cfg.kind != BUS_KIND_TRDP || !dev->priv)
		return -EINVAL;
	struct trdp_priv *p = priv(dev);
	*ret = (struct bus_trdp_stats){
		.telegrams = basic_counter_get(&p->st_telegrams),
		.seq_gaps = basic_counter_get(&p->st_gaps),
		.seq_repeats = basic_counter_get(&p->st_repeats),
		.seq_back = basic_counter_get(&p->st_back),
		.topology_changes = basic_counter_get(&p->st_topo),
		.bytes_drops = basic_counter_get(&p->st_bytes_drops),
		.untracked = basic_counter_get(&p->st_untracked),
	};
	for (int i = 0; i < 8; i++)
		ret->refused[i] = basic_counter_get(&p->st_refused[i]);
	return 0;
}

int bus_dev_trdp_release(bus_dev_t *dev, const struct acq_item *it)
{
	if (!dev || !it || dev->cfg.kind != BUS_KIND_TRDP || !dev->priv || dev->cfg.trdp.bytes ||
	    it->kind != ACQ_ITEM_TRDP || !it->trdp.data)
		return -EINVAL;
	struct trdp_priv *p = priv(dev);
	acq_bytes_release(p->bytes, it->trdp.data + (it->trdp.len ? it->trdp.len : 1));
	return 0;
}

const struct bus_ops bus_trdp_ops = {
	.name = "trdp",
	.open = trdp_open,
	.recv = trdp_recv,
	.close = trdp_close,
	.release = trdp_release,
	.reopen = trdp_reopen,
};
