/* SPDX-License-Identifier: MIT */
/*
 * trdp-capture.c - `receive = capture`: a live TRDP bus that receives its
 * UDP telegrams through the interface's packet ring, as tcpdump does,
 * instead of its UDP sockets.  libpcap live (trace/pcap.h
 * trace_pcap_open_live: on Linux an AF_PACKET TPACKET_V3 ring) with a BPF
 * filter of the bus's ports and addresses run in the kernel; each packet
 * then goes through trace/pcap.c's decoding (Ethernet, VLAN, IPv4
 * fragments reassembled, UDP) and bus_trdp_udp_event(), the code a
 * replayed capture of the same traffic goes through (trdp-trace.c): one
 * path, so a live capture bus and a replay of a capture give the same
 * records.  A telegram's time is the ring's kernel receive time.
 *
 * Why: a UDP socket reader pays per datagram a syscall's share, the copy
 * to user space and three control messages; the ring's copy is done in
 * the receiving softirq and the reader takes a block of packets at a
 * wakeup with no syscall per packet (docs/figures.md, "TRDP: where the
 * CPU goes").  The trade: the kernel hands a block over when it is full
 * or capture_block_ms (the board key) after it was opened, so at low
 * rates a telegram waits up to that long before the bus thread sees it
 * (its time is still the kernel's receive time), and the thread wakes
 * about once a capture_block_ms while traffic flows.
 *
 * What stays on sockets (trdp.c): the UDP sockets are opened as in socket
 * mode, bound to the ports and joining the groups (IGMP: the switch sends
 * the group's traffic only to members), with a drop-all socket filter so
 * the kernel neither queues nor copies a datagram to them, and unicast
 * gets no ICMP port unreachable.  MD over TCP stays on its listener: a
 * stream read from the ring would still need a socket that accepts and
 * reads it (or the peer sees resets or a closed window), so the filter
 * takes no TCP.  Drops: the ring's (pcap_stats' ps_drop) are the bus's
 * rx_dropped, as a socket's overflow is in socket mode.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/clock.h"
#include "trdp-private.h"

/* The block timeout when the board gave none (a device opened without
   the schema: tests): the key's default (conf/config-schema.c). */
#define CAPTURE_BLOCK_MS_DEF 10
/* The ring's size, KiB, when the board gave none: the key's default
   (capture_buffer_kib).  64 blocks of 256 KiB: at low rates the kernel
   retires a block at each timeout however few packets it holds, so the
   ring covers a stall of the bus thread (a busy collector, a slow disk,
   a stopped process) of 64 block timeouts, 640 ms at 10 ms; tcpdump's
   2 MiB would be 8 (80 ms). */
#define CAPTURE_BUFFER_KIB_DEF 16384
#define CAPTURE_BUFFER_KIB_MAX (1u << 20)
#define FILTER_MAX 1024
/* A link header: Ethernet and two VLAN tags, or Linux cooked SLL2. */
#define LINK_MAX 64
/* Reads (a ring's block, or what the caller's items held of it) between
   two reads of the ring's drop counter. */
#define DROPS_EVERY 16u
/* The interface gone: the kernel hands over the block it had open at the
   second timer tick after the block opened, at most two block timeouts
   (af_packet.c prb_retire_rx_blk_timer_expired), each rounded up to a
   jiffy; this much more for a timer late on a loaded machine. */
#define LAST_SLACK_MS 50

/* a.b.c.d of a host-order address, appended to f */
static void add_ip(char *f, size_t len, const char *before, uint32_t ip)
{
	size_t at = strlen(f);

	snprintf(f + at, len - at, "%s%u.%u.%u.%u", before, ip >> 24, ip >> 16 & 255, ip >> 8 & 255, ip & 255);
}

/*
 * What the sockets of socket mode would receive: UDP to the bus's ports
 * (the destination port: a source port is ephemeral), sent to the bound
 * address if there is one, else to any address but multicast groups other
 * than the bus's; and every IPv4 fragment after a datagram's first (it
 * has no UDP header to match: pcap.c reassembles, then filters by port).
 */
static void build_filter(const struct bus_trdp_cfg *c, char *f, size_t len)
{
	size_t at;

	snprintf(f, len, "ip and (");
	if (c->bind_ip)
		add_ip(f, len, "dst host ", c->bind_ip);
	else {
		snprintf(f + strlen(f), len - strlen(f), "not dst net 224.0.0.0/4");
		for (unsigned g = 0; g < c->ngroups; g++)
			add_ip(f, len, " or dst host ", c->groups[g]);
	}
	at = strlen(f);
	snprintf(f + at, len - at, ") and ((udp and (");
	if (c->pd_port) {
		at = strlen(f);
		snprintf(f + at, len - at, "dst port %u%s", c->pd_port, c->md_port ? " or " : "");
	}
	if (c->md_port) {
		at = strlen(f);
		snprintf(f + at, len - at, "dst port %u", c->md_port);
	}
	at = strlen(f);
	snprintf(f + at, len - at, ")) or (ip[6:2] & 0x1fff != 0))");
}

int bus_trdp_live_open(bus_dev_t *dev)
{
	const struct bus_trdp_cfg *c = &dev->cfg.trdp;
	struct trdp_priv *p = dev->priv;
	/* UDP only (MD over TCP is the listener's), the destination ports
	   only (what the sockets would get); small pools, as no TCP is
	   followed: conns and window at their least */
	struct trace_pcap_cfg pc = { .no_tcp = true, .frags = 16, .conns = 1, .window = 4096 };
	char filter[FILTER_MAX], err[256];
	struct ifreq ifr = { 0 };
	int snaplen = 65535 + LINK_MAX;
	int fd;
	int block_ms = c->capture_block_ms ? (int)c->capture_block_ms : CAPTURE_BLOCK_MS_DEF;
	uint32_t kib = c->capture_buffer_kib ? c->capture_buffer_kib : CAPTURE_BUFFER_KIB_DEF;
	int ring_bytes = (int)(kib * 1024u);

	/* the schema bounds the key to 1 GiB; a device opened without it
	   (tests) too, so the size fits libpcap's int */
	if (!c->ifname[0] || kib > CAPTURE_BUFFER_KIB_MAX)
		return -EINVAL;
	/* the ring is opened before the bus's sockets (trdp.c open_socks):
	   a socket of its own for the MTU */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* A frame is at most the MTU and its link header (fragments each
	   within it; UDP is not coalesced by GRO for a socket that did not
	   ask).  It does not size the ring's blocks: libpcap 1.10 makes
	   TPACKET_V3 blocks of 256 KiB whatever the snap length (64 in 16 MiB;
	   trace_pcap_open_live) */
	memcpy(ifr.ifr_name, c->ifname, strnlen(c->ifname, IFNAMSIZ - 1));
	if (fd >= 0 && ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 && ifr.ifr_mtu < 65535)
		snaplen = ifr.ifr_mtu + LINK_MAX;
	if (fd >= 0)
		close(fd);
	if (c->pd_port)
		pc.udp_ports[pc.n_udp_ports++] = c->pd_port;
	if (c->md_port)
		pc.udp_ports[pc.n_udp_ports++] = c->md_port;
	build_filter(c, filter, sizeof(filter));
	p->live_drops_last = 0;
	p->live_more = false;
	p->live_last_ns = 0;
	return trace_pcap_open_live(c->ifname, filter, snaplen, ring_bytes, block_ms, &pc, &p->live, err,
	                            sizeof(err));
}

void bus_trdp_live_close(struct trdp_priv *p)
{
	p->live = trace_pcap_free(p->live);
}

void bus_trdp_live_drops(bus_dev_t *dev)
{
	struct trdp_priv *p = dev->priv;
	uint32_t n;

	if (!p->live || trace_pcap_drops(p->live, &n) < 0)
		return;
	if (n != p->live_drops_last)
		bus_stat_add(&dev->stats.rx_dropped, (uint32_t)(n - p->live_drops_last));
	p->live_drops_last = n;
}

/* What the ring holds now into items; *ret_r: libpcap's last answer. */
static size_t live_take(bus_dev_t *dev, struct acq_item *items, size_t max, int *ret_r)
{
	struct trdp_priv *p = dev->priv;
	struct trace_pcap_event e;
	size_t n = 0;
	int r = 0;

	while (n + 3 <= max && (r = trace_pcap_next(p->live, &e)) == 1) {
		if (e.kind != TRACE_PCAP_UDP)
			continue;
		if (bus_trdp_udp_event(dev, &e, (int64_t)e.time_ns, items, &n) < 0) {
			/* no room in the byte ring: dropped and counted, as a
			   socket's datagram is (trdp.c drop_burst) */
			acq_bytes_drop(p->bytes, 1);
			basic_counter_add(&p->st_bytes_drops, 1);
			bus_stat_add(&dev->stats.rx_dropped, 1);
		}
	}
	/* one getsockopt every DROPS_EVERY reads (up to a block each, ~10
	   a block of 10 ms at 20,000/s), not per packet; and at each idle
	   wait (trdp.c poll_drops), so none is left unsaid */
	if (++p->live_wakes % DROPS_EVERY == 0)
		bus_trdp_live_drops(dev);
	p->live_more = r == 1;
	*ret_r = r;
	return n;
}

/*
 * Why: the kernel fills one block of the ring at a time and hands it over
 * only when it is full or at its timeout; when the interface goes (down,
 * or removed: libpcap then fails at once) the telegrams that came just
 * before are still in that block.  They were received - the kernel
 * stamped them - and a socket would have queued them, so they are waited
 * for (the kernel's block timer runs on until the ring is closed) and
 * read before the bus is gone and the ring closed with them.  Known by
 * count (trace_pcap_unread), so nothing is waited for when the ring
 * holds nothing; bounded, as that count may include packets libpcap
 * skips itself.
 */
int bus_trdp_live_last(bus_dev_t *dev, struct acq_item *items, size_t max)
{
	struct trdp_priv *p = dev->priv;
	const struct bus_trdp_cfg *c = &dev->cfg.trdp;
	int block_ms = c->capture_block_ms ? (int)c->capture_block_ms : CAPTURE_BLOCK_MS_DEF;
	size_t n = 0;
	uint32_t unread;
	int r;

	if (!p->live)
		return 0;
	if (!p->live_last_ns)
		p->live_last_ns = basic_mono_ns() + (int64_t)(2 * block_ms + LAST_SLACK_MS) * BASIC_NS_PER_MS;
	while (n + 3 <= max && trace_pcap_unread(p->live, &unread) == 0 && unread && unread < 1u << 31) {
		int64_t left = p->live_last_ns - basic_mono_ns();
		struct pollfd pfd = { .fd = trace_pcap_fd(p->live), .events = POLLIN };
		if (left <= 0)
			break;
		/* POLLERR too (the error said again): the take below clears it */
		if (poll(&pfd, 1, (int)(left / BASIC_NS_PER_MS) + 1) < 0 && errno != EINTR)
			break;
		n += live_take(dev, items + n, max - n, &r);
	}
	return (int)n;
}

int bus_trdp_live_read(bus_dev_t *dev, struct acq_item *items, size_t max)
{
	struct trdp_priv *p = dev->priv;
	int r, k;
	size_t n = live_take(dev, items, max, &r);

	if (r < 0 && r != -EAGAIN && !n) {
		/* failed: what the ring took before, then the failure */
		k = bus_trdp_live_last(dev, items, max);
		return k > 0 ? k : r;
	}
	/* it works again (the interface back before the ring failed): a
	   later failure waits afresh */
	if (n)
		p->live_last_ns = 0;
	return (int)n;
}
