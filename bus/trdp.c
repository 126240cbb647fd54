/* SPDX-License-Identifier: MIT */
/*
 * trdp.c - the TRDP bus driver (IEC 61375-2-3 over UDP).  One job over
 * ~600 lines, TRDP's bus_ops, so one file: the sockets, the groups, the
 * MD TCP connections and the sequence counters share one struct and one
 * receive path (trdp_recv), as can-socket.c is CAN's.  Process data on
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
 * receive = capture (trdp-capture.c): UDP is read from the interface's
 * packet ring instead, in the PD socket's place in the poll; the sockets
 * are still opened (the ports, the groups' IGMP joins), after the ring,
 * with a drop-all filter, and MD over TCP stays on the listener below.
 * The ring is made again at each reopen (libpcap allocates it: once per
 * return of the interface, never per telegram).
 *
 * Gone and back: a UDP socket does not fail when its interface goes down,
 * the traffic just stops; so when a wait ends with nothing, the interface's
 * flags are read (one ioctl per timeout, not per telegram; a second, the
 * driver's carrier, when the flags lag it: link_state) and a down, carrier
 * less or deleted interface is gone (-ENETDOWN, -ENODEV).  reopen() opens
 * the sockets and joins the groups again once it is up, at once when an
 * rtnetlink link event says the interface is (trdp_await).
 *
 * MD over TCP: a listening socket on md_port beside the UDP one; each
 * accepted connection (at most TCP_CONN_MAX at once, the others accepted
 * and closed at once, counted) is framed on its own (trdp_md_frame_len():
 * the 116-byte header, then datasetLength padded to 4) in a buffer of the
 * largest message allocated at open.  Reads stop at the end of the message
 * being framed, so each read's kernel receive time (SO_TIMESTAMPNS, which
 * TCP reports per recvmsg: the newest segment the read consumed) is that
 * of the segment that carried the message's last byte.  A complete message
 * is copied into the byte ring and becomes the same raw record as one over
 * UDP, flagged ACQ_TRDP_TCP.  A header that fails validation is recorded
 * raw (its 116 bytes, with the reason) and the connection closed: without
 * framing there is no way to find the next message in the stream.  A
 * connection that ends mid-message gives its bytes as a refused record
 * (short, or truncated) and is counted.  Read-only towards the train: we
 * never send anything on a connection, no MD reply, no confirmation.
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

#include <linux/ethtool.h>
#include <linux/filter.h>
#include <linux/sockios.h>
#include <linux/sock_diag.h>

#include "acquisition/acq-bytes.h"
#include "basic/clock.h"
#include "bus-private.h"
#include "trdp-private.h"
#include "trdp/header.h"

/* Messages read from one connection at one wakeup: the others' turn. */
#define TCP_MSGS_PER_WAKE 8
/* capture: reads of a ring's block that had more without a poll before
   one is made anyway (the TCP listener and connections are polled with
   it): the MD over TCP waits at most these x 21 telegrams' work. */
#define LIVE_SKIPS_MAX 16

static struct trdp_priv *priv(const bus_dev_t *dev)
{
	return dev->priv;
}

static void conn_close(struct trdp_priv *p, struct tcp_conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->have = c->need = 0;
	basic_counter_add(&p->st_tcp_closed, 1);
}

static void close_socks(struct trdp_priv *p)
{
	bus_trdp_live_close(p);
	for (int i = 0; i < SOCK_N; i++) {
		if (p->fd[i] >= 0)
			close(p->fd[i]);
		p->fd[i] = -1;
	}
	/* gone: what a connection held of a message is lost with it, and
	   counted as cut (the peer's stack sends it again on a new one) */
	for (unsigned i = 0; i < TCP_CONN_MAX; i++) {
		if (p->conn[i].fd < 0)
			continue;
		if (p->conn[i].have)
			basic_counter_add(&p->st_tcp_cut, 1);
		conn_close(p, &p->conn[i]);
	}
	if (p->lfd >= 0)
		close(p->lfd);
	p->lfd = -1;
}

/* MD over TCP: the listening socket on the bus's address and md_port. */
static int open_listener(const struct bus_trdp_cfg *c, int *ret_fd)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->md_port),
		                  .sin_addr.s_addr = htonl(c->bind_ip) };

	if (fd < 0)
		return -errno;
	/* REUSEADDR: listen again at once after a restart, while the old
	   connections are in TIME_WAIT.  Accepted sockets inherit the
	   timestamp option. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, (int)TCP_CONN_MAX) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* An option the receive path reads but can do without: the kernel's
   receive time (else the read's time, telegram()) and its drop counter
   (else SO_MEMINFO at the idle waits, poll_drops()).  A kernel has both
   since 2.6.33; qemu-user (7.2), under which the cross and package stages
   run the demo and the tests, knows neither and says ENOPROTOOPT.  Done
   without, it is not silent: flag goes into *refused, which the stats say
   (opts_refused), so a user knows the times are read times. */
static int opt_wanted(int fd, int level, int name, unsigned flag, unsigned *refused)
{
	int one = 1;

	if (setsockopt(fd, level, name, &one, sizeof(one)) == 0)
		return 0;
	if (errno != ENOPROTOOPT)
		return -1;
	*refused |= flag;
	return 0;
}

/* receive = capture: the sockets only hold the port and the groups (the
   packet ring receives, trdp-capture.c); a filter that drops every
   datagram before it is queued or copied.  One instruction: return 0. */
static int drop_all(int fd)
{
	static const struct sock_filter ret0[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	const struct sock_fprog prog = { .len = 1, .filter = (struct sock_filter *)ret0 };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

/* One UDP socket on port with every option the receive path reads, the
   groups joined on the interface.  capture: the ring receives, the
   socket drops all (before bind: nothing is ever queued). */
static int open_sock(const struct bus_trdp_cfg *c, int ifindex, uint16_t port, int *ret_fd, unsigned *refused)
{
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
		                  .sin_addr.s_addr = htonl(c->bind_ip) };
	int r = 0;

	if (fd < 0)
		return -errno;
	if (c->receive_capture && drop_all(fd) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	/* REUSEADDR: a TRDP stack on the same host (the vehicle's own) may
	   listen too, and both get the multicast telegrams. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    opt_wanted(fd, SOL_SOCKET, SO_TIMESTAMPNS, BUS_TRDP_NO_KERNEL_TIME, refused) < 0 ||
	    opt_wanted(fd, SOL_SOCKET, SO_RXQ_OVFL, BUS_TRDP_NO_RXQ_OVFL, refused) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = -errno;
	/* Room for TRDP_RCVBUF bytes of queue, as tcpdump's default ring:
	   the default 208 KiB holds ~10 ms of 20,000 small telegrams/s (each
	   costs a whole skb's truesize), less than a thread that is not
	   realtime may wait for the CPU on a busy machine.  FORCE passes
	   net.core.rmem_max with CAP_NET_ADMIN; without it the kernel caps
	   SO_RCVBUF there.  Best effort: a smaller buffer only means drops
	   sooner, and those are counted (SO_RXQ_OVFL).
	   A capture socket queues nothing: the default will do. */
	if (r == 0 && !c->receive_capture &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &(int){ TRDP_RCVBUF }, sizeof(int)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &(int){ TRDP_RCVBUF }, sizeof(int));
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
	unsigned refused = 0;
	int r = 0;

	p->ifindex = 0;
	if (c->ifname[0] && !(p->ifindex = (int)if_nametoindex(c->ifname)))
		return -ENODEV;
	/* receive = capture: the packet ring first (-EPERM without
	   CAP_NET_RAW), so that what tells the bus ready - a group joined, a
	   port bound, the TCP listener - means the ring already takes what
	   is sent to it; opened after them, the telegrams sent between were
	   lost (a peer or a test starts sending once it sees the join) */
	if (c->receive_capture)
		r = bus_trdp_live_open(dev);
	if (r == 0 && c->pd_port)
		r = open_sock(c, p->ifindex, c->pd_port, &p->fd[SOCK_PD], &refused);
	if (r == 0 && c->md_port)
		r = open_sock(c, p->ifindex, c->md_port, &p->fd[SOCK_MD], &refused);
	if (r == 0)
		atomic_store_explicit(&p->st_opts_refused, refused, memory_order_relaxed);
	/* A TRDP stack on this host (the device's own) may hold the TCP
	   port: its MD connections are its own, not ours to take.  UDP is
	   shared (REUSEADDR) and goes on; the error is kept for the stats,
	   and the listener tried again at each reopen. */
	if (r == 0 && c->md_port)
		atomic_store_explicit(&p->st_tcp_listen_error, (uint64_t)-open_listener(c, &p->lfd),
		                      memory_order_relaxed);
	if (r < 0)
		close_socks(p);
	/* joining a group on an interface that is down: ENODEV, gone */
	return r;
}

static int trdp_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	int r = bus_trdp_priv_new(dev, cfg);
	struct trdp_priv *p = priv(dev);

	if (r == 0 && cfg->trdp.md_port) {
		/* MD over TCP: every connection's framing buffer now, none per
		   message (a capture, trdp-trace.c, frames its own streams) */
		if (!(p->tcp_buf = malloc((size_t)TCP_CONN_MAX * TCP_MSG_MAX)))
			r = -ENOMEM;
		for (unsigned i = 0; r == 0 && i < TCP_CONN_MAX; i++)
			p->conn[i].buf = p->tcp_buf + (size_t)i * TCP_MSG_MAX;
	}
	/* interface =: its return is watched (without rtnetlink the timed
	   retries alone reopen it) */
	if (r == 0 && cfg->trdp.ifname[0])
		(void)bus_link_watch_init(&p->watch, cfg->trdp.ifname);
	if (r == 0)
		r = bus_open_absent(dev, open_socks(dev));
	if (r < 0) {
		if (dev->priv)
			bus_link_watch_done(&p->watch);
		bus_trdp_priv_free(dev); /* bus_dev_new() frees only the device */
	}
	return r;
}

static void trdp_close(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	if (!p)
		return;
	close_socks(p);
	bus_link_watch_done(&p->watch);
	bus_trdp_priv_free(dev);
}

static void trdp_release(bus_dev_t *dev)
{
	close_socks(priv(dev));
	/* link events while it was there say nothing of its return */
	bus_link_watch_flush(&priv(dev)->watch);
}

/* Gone: wait for an RTM_NEWLINK saying the interface is up (a sign to try
   the reopen), as a SocketCAN bus does.  Without it the source's retry
   after a failed reopen of an absent device is its longest step (5 s,
   acquisition/source.c retry_due: a watched device's safety net). */
static int trdp_await(bus_dev_t *dev, int timeout_ms)
{
	return bus_link_watch_wait(&priv(dev)->watch, timeout_ms);
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

/* The interface's carrier as its driver says it now (ETHTOOL_GLINK, no
   privilege needed); false when the driver cannot say (EOPNOTSUPP, or
   qemu-user not passing the ioctl). */
static bool carrier(int fd, const char *ifname)
{
	struct ethtool_value ev = { .cmd = ETHTOOL_GLINK };
	struct ifreq ifr = { .ifr_data = (void *)&ev };

	memcpy(ifr.ifr_name, ifname, strnlen(ifname, IFNAMSIZ - 1));
	return ioctl(fd, SIOCETHTOOL, &ifr) == 0 && ev.data;
}

/* The interface is still there and up?  0, -ENODEV (deleted), -ENETDOWN.
   Up: IFF_UP and a carrier.  IFF_RUNNING (the operstate) says the
   carrier, but late: the kernel sets it in its linkwatch work, which
   takes a device's events up to a second after they happened (rate
   limited; ~900 ms seen on a new veth pair, up with its carrier), so a
   bus opened on a freshly made interface was gone at its first idle
   wait.  Without IFF_RUNNING the driver's carrier decides.  A dormant
   link (its operstate held at DORMANT, an 802.1X supplicant's) with a
   carrier is up too: what arrives on it is received. */
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
	if (!(ifr.ifr_flags & IFF_UP))
		return -ENETDOWN;
	return (ifr.ifr_flags & IFF_RUNNING) || carrier(fd, dev->cfg.trdp.ifname) ? 0 : -ENETDOWN;
}

/* The socket's drop counter read now (SO_MEMINFO: the same sk_drops that
   SO_RXQ_OVFL reports beside each datagram): drops after the last
   datagram received would otherwise be said only with the next one,
   and never if none comes.  At each idle wait, not per telegram. */
static void poll_drops(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	/* capture: the sockets drop every datagram by their filter, and
	   count it; the ring's drops are the bus's */
	if (p->live) {
		bus_trdp_live_drops(dev);
		return;
	}

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
	read_cmsgs(dev, sock, mh, it);
	if (!it->t_ns) /* the kernel said nothing: no clock read per telegram otherwise */
		it->t_ns = basic_realtime_ns();
	return bus_trdp_telegram(dev, sock == SOCK_MD ? TRDP_KIND_MD : TRDP_KIND_PD, data, p->msg[j].msg_len,
	                         mh->msg_flags & MSG_TRUNC ? TRDP_HDR_TOO_LONG : TRDP_HDR_OK,
	                         ntohl(p->from[j].sin_addr.s_addr), ntohs(p->from[j].sin_port), it->trdp.dst_ip,
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
   own reservation of the byte ring, then packed to its length.  *ret_more:
   the kernel filled every slot asked for, so more may wait. */
static int read_burst(bus_dev_t *dev, int sock, struct acq_item *items, size_t max, bool *ret_more)
{
	struct trdp_priv *p = priv(dev);
	size_t slot = sock == SOCK_MD ? MD_SLOT : PD_SLOT;
	/* up to 3 items a telegram; MD slots are large: a few at a time */
	size_t want = max / 3 < TRDP_BURST ? max / 3 : TRDP_BURST, k = 0, n = 0;
	uint64_t pos = acq_bytes_pos(p->bytes);
	uint8_t *at[TRDP_BURST];

	*ret_more = false;
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
	   (never above where it is: the reservations before it shrank).  The
	   first of a burst is usually where it was received (unless the ring
	   wrapped): not moved then, and at 20,000 telegrams/s most bursts are
	   of one or two datagrams. */
	for (int j = 0; j < got; j++) {
		size_t len = p->msg[j].msg_len ? p->msg[j].msg_len : 1;
		uint8_t *dst = acq_bytes_reserve(p->bytes, len);
		if (dst != at[j])
			memmove(dst, at[j], p->msg[j].msg_len);
		n += telegram(dev, sock, (size_t)j, dst, items + n);
	}
	acq_bytes_commit(p->bytes);
	*ret_more = (size_t)got == k;
	return (int)n;
}

/* ---- MD over TCP ---- */

/* Take the connections waiting; beyond TCP_CONN_MAX accept and close
   them (a connection left in the backlog would look open to the peer). */
static void tcp_accept(bus_dev_t *dev)
{
	struct trdp_priv *p = priv(dev);

	for (;;) {
		struct sockaddr_in peer, self;
		socklen_t plen = sizeof(peer), slen = sizeof(self);
		int fd = accept4(p->lfd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			/* EAGAIN: all taken; ECONNABORTED: gone before we came */
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
				bus_stat_add(&dev->stats.rx_errors, 1);
			if (errno == ECONNABORTED || errno == EINTR)
				continue;
			return;
		}
		struct tcp_conn *c = NULL;
		for (unsigned i = 0; i < TCP_CONN_MAX && !c; i++)
			if (p->conn[i].fd < 0)
				c = &p->conn[i];
		if (!c || getsockname(fd, (struct sockaddr *)&self, &slen) < 0) {
			close(fd);
			basic_counter_add(&p->st_tcp_refused, 1);
			continue;
		}
		basic_counter_add(&p->st_tcp_accepted, 1);
		*c = (struct tcp_conn){ .fd = fd, .src_ip = ntohl(peer.sin_addr.s_addr),
			                .dst_ip = ntohl(self.sin_addr.s_addr), .src_port = ntohs(peer.sin_port),
			                .buf = c->buf };
	}
}

/* The connection's buf[0..len) as a raw record at out (the bytes copied
   into the byte ring), through the bookkeeping every telegram goes through
   (bus_trdp_telegram), refused as `cut` when that is not TRDP_HDR_OK (a
   message cut by the peer); returns the items written, 0 when the ring
   had no room (counted dropped). */
static size_t tcp_record(bus_dev_t *dev, struct tcp_conn *c, size_t len, int cut, struct acq_item *out)
{
	struct trdp_priv *p = priv(dev);
	uint8_t *dst = acq_bytes_reserve(p->bytes, len ? len : 1);

	if (!dst) {
		acq_bytes_drop(p->bytes, 1);
		basic_counter_add(&p->st_bytes_drops, 1);
		bus_stat_add(&dev->stats.rx_dropped, 1);
		return 0;
	}
	memcpy(dst, c->buf, len);
	acq_bytes_commit(p->bytes);
	memset(out, 0, sizeof(*out));
	out->kind = ACQ_ITEM_TRDP;
	out->bus = dev->cfg.index;
	out->t_ns = c->t_ns ? c->t_ns : basic_realtime_ns();
	out->trdp.flags = ACQ_TRDP_TCP;
	size_t n = bus_trdp_telegram(dev, TRDP_KIND_MD, dst, len, cut, c->src_ip, c->src_port, c->dst_ip,
	                             dev->cfg.trdp.md_port, out);
	if ((out->trdp.flags >> ACQ_TRDP_RESULT_SHIFT) == TRDP_HDR_OK)
		basic_counter_add(&p->st_tcp_messages, 1);
	return n;
}

/* The kernel's receive time of what one read consumed, into c->t_ns. */
static void tcp_stamp(struct tcp_conn *c, struct msghdr *mh)
{
	for (struct cmsghdr *m = CMSG_FIRSTHDR(mh); m; m = CMSG_NXTHDR(mh, m)) {
		if (m->cmsg_level == SOL_SOCKET && m->cmsg_type == SCM_TIMESTAMPNS) {
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(m), sizeof(ts));
			c->t_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
}

/* What one connection has, message by message, into out[0..max); returns
   the items written.  Each read asks for no more than the rest of the
   message being framed (its header first), so a message is complete
   exactly when a read ends it, and the read's time is its last byte's. */
static size_t tcp_read(bus_dev_t *dev, struct tcp_conn *c, struct acq_item *out, size_t max)
{
	struct trdp_priv *p = priv(dev);
	size_t n = 0;

	for (int msgs = 0; msgs < TCP_MSGS_PER_WAKE && n + 3 <= max;) {
		size_t want = c->need ? c->need : TRDP_MD_HEADER_SIZE;
		struct iovec iov = { c->buf + c->have, want - c->have };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = p->tcp_cmsg,
			             .msg_controllen = sizeof(p->tcp_cmsg) };
		ssize_t got = recvmsg(c->fd, &mh, MSG_DONTWAIT);
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			break;
		if (got <= 0) {
			/* the peer closed (0) or reset: a message begun is cut */
			if (got < 0 && errno != ECONNRESET)
				bus_stat_add(&dev->stats.rx_errors, 1);
			if (c->have) {
				basic_counter_add(&p->st_tcp_cut, 1);
				n += tcp_record(dev, c, c->have,
				                c->have < TRDP_MD_HEADER_SIZE ? TRDP_HDR_SHORT : TRDP_HDR_TRUNCATED,
				                out + n);
			}
			conn_close(p, c);
			break;
		}
		tcp_stamp(c, &mh);
		c->have += (size_t)got;
		if (c->have < want)
			continue;
		if (!c->need) {
			int why = TRDP_HDR_OK;
			if (trdp_md_frame_len(c->buf, c->have, &c->need, &why) < 0) {
				/* no framing past a bad header: its bytes, and close */
				basic_counter_add(&p->st_tcp_bad, 1);
				n += tcp_record(dev, c, c->have, TRDP_HDR_OK, out + n);
				conn_close(p, c);
				break;
			}
			if (c->have < c->need)
				continue;
		}
		n += tcp_record(dev, c, c->need, TRDP_HDR_OK, out + n);
		c->have = c->need = 0;
		msgs++;
	}
	return n;
}

static int trdp_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct trdp_priv *p = priv(dev);
	/* the UDP sockets, the listening socket, the connections (fd -1:
	   poll skips it) */
	struct pollfd pfd[SOCK_N + 1 + TCP_CONN_MAX];
	const int npfd = (int)(sizeof(pfd) / sizeof(pfd[0]));
	int n = 0, r;

	if (max < 3)
		return -EINVAL;
	if (p->fd[SOCK_PD] < 0 && p->fd[SOCK_MD] < 0)
		return bus_gone(dev, dev->gone_cause ? dev->gone_cause : -ENODEV);
	/* capture: a call takes at most 21 telegrams (the caller's items),
	   a block hundreds: while the last read left packets in the block,
	   read on without a poll (a syscall per call was ~5% of the process
	   at 10 ms blocks, docs/figures.md).  An empty ring goes on to the
	   poll. */
	if (p->live && p->live_more && p->live_skips < LIVE_SKIPS_MAX) {
		p->live_skips++;
		r = bus_trdp_live_read(dev, items, max);
		if (r > 0)
			return r;
		if (r < 0) {
			/* the ring failed: the interface went, mostly (below) */
			int l = link_state(dev);
			bus_stat_add(&dev->stats.rx_errors, 1);
			return bus_gone(dev, l < 0 ? l : r);
		}
	}
	p->live_skips = 0;
	for (int i = 0; i < SOCK_N; i++)
		pfd[i] = (struct pollfd){ .fd = p->live ? -1 : p->fd[i], .events = POLLIN };
	/* capture: the ring in the PD socket's place (it takes MD over UDP
	   too) */
	if (p->live)
		pfd[SOCK_PD].fd = trace_pcap_fd(p->live);
	pfd[SOCK_N] = (struct pollfd){ .fd = p->lfd, .events = POLLIN };
	for (unsigned i = 0; i < TCP_CONN_MAX; i++)
		pfd[SOCK_N + 1 + i] = (struct pollfd){ .fd = p->conn[i].fd, .events = POLLIN };
	r = poll(pfd, (nfds_t)npfd, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0) {
		poll_drops(dev);
		r = link_state(dev);
		/* capture: the telegrams of the ring's open block first, when
		   the interface went (they came before it did), and at a
		   timeout of 0, the source's drain at stop (acquisition/
		   source.c: what the device holds is recorded, and the ring
		   holds them) */
		if ((r < 0 || timeout_ms == 0) && (n = bus_trdp_live_last(dev, items, max)) > 0)
			return n;
		return r < 0 ? bus_gone(dev, r) : 0;
	}
	/* PD, MD over UDP, MD over TCP in turn first: none starves the
	   others of item room */
	for (int k = 0; k <= SOCK_N; k++) {
		int i = (p->next_sock + k) % (SOCK_N + 1);
		if (i == SOCK_N) {
			if (pfd[SOCK_N].revents & POLLIN)
				tcp_accept(dev);
			for (unsigned c = 0; c < TCP_CONN_MAX && (size_t)n + 3 <= max; c++)
				if (p->conn[c].fd >= 0 && pfd[SOCK_N + 1 + c].revents)
					n += (int)tcp_read(dev, &p->conn[c], items + n, max - (size_t)n);
			continue;
		}
		if (!(pfd[i].revents & (POLLIN | POLLERR)))
			continue;
		if (p->live) {
			r = bus_trdp_live_read(dev, items + n, max - (size_t)n);
			if (r < 0) {
				/* the ring failed: the interface went, mostly */
				int l = link_state(dev);
				bus_stat_add(&dev->stats.rx_errors, 1);
				return n ? n : bus_gone(dev, l < 0 ? l : r);
			}
			n += r;
			continue;
		}
		/* Bursts until the socket is empty or the items' room is
		   spent: a burst asks for a third of the room (up to 3 items a
		   telegram), and the caller's loop waits its coalescing window
		   after a call that did not fill the room, so one burst a call
		   would cap the bus at ~20 telegrams a window (20,000/s at 1 ms:
		   the socket overflowed at a steady 20,000/s). */
		for (bool more = true; more && (size_t)n + 3 <= max;) {
			r = read_burst(dev, i, items + n, max - (size_t)n, &more);
			if (r < 0) {
				bus_stat_add(&dev->stats.rx_errors, 1);
				return n ? n : r;
			}
			n += r;
		}
	}
	p->next_sock = (p->next_sock + 1) % (SOCK_N + 1);
	return n;
}

int bus_dev_trdp_stats(const bus_dev_t *dev, struct bus_trdp_stats *ret)
{
	if (!dev || !ret || dev->cfg.kind != BUS_KIND_TRDP || !dev->priv)
		return -EINVAL;
	struct trdp_priv *p = priv(dev);
	*ret = (struct bus_trdp_stats){
		.telegrams = basic_counter_get(&p->st_telegrams),
		.bytes = basic_counter_get(&p->st_bytes),
		.seq_gaps = basic_counter_get(&p->st_gaps),
		.seq_repeats = basic_counter_get(&p->st_repeats),
		.seq_back = basic_counter_get(&p->st_back),
		.topology_changes = basic_counter_get(&p->st_topo),
		.bytes_drops = basic_counter_get(&p->st_bytes_drops),
		.untracked = basic_counter_get(&p->st_untracked),
		.tcp_accepted = basic_counter_get(&p->st_tcp_accepted),
		.tcp_refused = basic_counter_get(&p->st_tcp_refused),
		.tcp_closed = basic_counter_get(&p->st_tcp_closed),
		.tcp_bad_header = basic_counter_get(&p->st_tcp_bad),
		.tcp_cut = basic_counter_get(&p->st_tcp_cut),
		.tcp_messages = basic_counter_get(&p->st_tcp_messages),
		.capture_unmatched = basic_counter_get(&p->st_capture_unmatched),
		.tcp_listen_error = -(int)basic_counter_get(&p->st_tcp_listen_error),
		.opts_refused = (unsigned)basic_counter_get(&p->st_opts_refused),
		/* a capture file (trdp-trace.c) is replayed whatever receive
		   its board says */
		.receive = dev->cfg.trdp.capture[0]     ? BUS_TRDP_RECEIVE_REPLAY :
		           dev->cfg.trdp.receive_capture ? BUS_TRDP_RECEIVE_CAPTURE :
		                                           BUS_TRDP_RECEIVE_SOCKET,
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
	.await_back = trdp_await,
};
