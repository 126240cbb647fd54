/* SPDX-License-Identifier: MIT */
/*
 * can-socket.c - SocketCAN driver (CAN_RAW, CAN FD, kernel timestamps):
 * open, close, send and the link's set-up; recv is can-socket-rx.c's,
 * check can-socket-check.c's, the netlink round-trip can-link.c's.
 *
 * Data path (recv, RT-safe): one blocking recvmmsg(MSG_WAITFORONE) for up
 * to CS_BATCH frames into buffers allocated at open: it waits for the
 * first frame (SO_RCVTIMEO bounds the wait) and takes what else is queued,
 * so a wakeup costs one syscall, not a poll() and a recvmmsg().  Each
 * frame carries its SO_TIMESTAMPING stamp (hardware when the controller
 * provides one, else the kernel's software RX stamp) and the socket's
 * SO_RXQ_OVFL drop counter; a counter increase becomes an
 * ACQ_EV_CAN_RX_OVERFLOW event.
 * Error frames are subscribed (CAN_ERR_MASK): each one is returned as a
 * raw item flagged ACQ_CAN_ERR, followed by decoded state events.
 *
 * Link control (open, check): what the link is and reports (its kind,
 * up or down, controller state, error counters, control mode, bitrate,
 * drop counters) comes from one RTM_GETLINK of our own, answered within
 * 500 ms or given up (cs_link_query).  libsocketcan only changes the link
 * (bitrate, listen-only, down and up): its reads wait for ever for a
 * reply when the interface disappears between their name lookup and the
 * kernel's answer (an error, not the reply they loop for), and print to
 * stderr on a link without CAN data (every vcan).  check() still waits for
 * the kernel (its rtnl lock), so it runs on acquisition's monitor thread
 * at normal priority, never on the RX thread (bus.h); what it shares with
 * recv() is atomic (the state last reported, the socket drop count).  A
 * controller without state is remembered as such, so check() stops
 * asking.  Return values only: errno after a libsocketcan call is never
 * trusted.
 *
 * Items produced (bus = cfg->index, t_ns = the frame's kernel stamp, or
 * the time of check() for what check() finds):
 *   ACQ_ITEM_CAN             every data frame, in arrival order; error
 *                            frames too, flagged ACQ_CAN_ERR, id = class bits
 *   ACQ_EV_CAN_BUS_OFF, _ERROR_PASSIVE, _ERROR_WARNING, _ERROR_ACTIVE,
 *   ACQ_EV_CAN_RESTARTED     right after the error frame that says so, or
 *                            from check() when the controller state changed;
 *                            arg = RX error counter, detail = TX counter
 *                            (-1 / UINT32_MAX when unknown)
 *   ACQ_EV_CAN_RX_OVERFLOW   arg = frames lost; detail 0 = our socket queue
 *                            (SO_RXQ_OVFL, before the first frame after the
 *                            loss, or check()), 1 = controller FIFO error
 *                            frame (arg 0: count unknown), 2 = interface
 *                            drop counters (check()).  Details 0 and 2 add
 *                            up in stats.rx_dropped.
 *
 * Gone (bus.h): the socket's error says the interface was deleted
 * (ENODEV) or went down (ENETDOWN); recv() returns -ENODEV with that
 * cause.  reopen() looks the name up again (a re-created interface has a
 * new index), applies the same link policy as open (a replugged adapter
 * comes back in normal mode: listen-only is set again), requires the link
 * up (-ENETDOWN until then), and binds a new socket.
 *
 * Read-only towards the train: a physical interface is put in listen-only
 * mode when the board file asks (the default) and the open fails with
 * -EPERM when that cannot be done (no CAP_NET_ADMIN, controller refuses);
 * normal mode is refused with -EPERM unless cfg->can.allow_normal_mode,
 * and send() only writes to a physical bus in that opted-in normal mode.
 * The decision is the pure function bus_can_socket_plan() so it can be
 * tested without hardware; the VM test drives it on an slcan interface.
 */
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/can.h>
#include <linux/can/error.h>
#include <linux/can/netlink.h>
#include <linux/can/raw.h>
#include <linux/capability.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/net_tstamp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <libsocketcan.h>

#include "can-socket-private.h"
#include "basic/clock.h"

/*
 * Learn what kind of link this is and what its controller reports, from
 * one RTM_GETLINK: a controller without state is remembered as such, so
 * check() does not ask for it.  Returns 0, -ENODEV for a non-CAN
 * interface, or the query's -errno.
 */
static int cs_link_read(int ifindex, struct cs_priv *p)
{
	struct bus_can_linkinfo info;
	int r;

	r = bus_can_link_query(ifindex, &info);
	if (r < 0)
		return r;
	if (info.type != ARPHRD_CAN)
		return -ENODEV;
	p->link = (struct bus_can_link){ .physical = !bus_can_kind_is_virtual(info.kind),
	                                 .up = info.flags & IFF_UP };
	p->link_data = CS_VAL(info, IFLA_CAN_STATE);
	p->have_berr = p->link_data && CS_HAS(info, IFLA_CAN_BERR_COUNTER);
	if (CS_VAL(info, IFLA_CAN_CTRLMODE)) {
		p->link.have_ctrlmode = true;
		p->link.listen_only = info.ctrlmode & CAN_CTRLMODE_LISTENONLY;
	}
	if (CS_VAL(info, IFLA_CAN_BITTIMING))
		p->link.bitrate = info.bitrate;
	return 0;
}

/*
 * Change bitrate / listen-only; both need the link down.  Failing to get
 * listen-only is -EPERM: acquiring without it would ACK on the train.
 * Asking first whether we may avoids half-done changes (and libsocketcan
 * printing "Operation not permitted").
 */
static int cs_link_apply(const char *ifname, int ifindex, const struct bus_can_plan *plan,
                         struct cs_priv *p)
{
	struct can_ctrlmode cm = {
		.mask = CAN_CTRLMODE_LISTENONLY,
		.flags = plan->listen_only ? CAN_CTRLMODE_LISTENONLY : 0,
	};
	int r = 0;

	if (!plan->set_ctrlmode && !plan->set_bitrate)
		return 0;
	if (!bus_can_may_admin() || can_do_stop(ifname) < 0)
		return -EPERM;
	if (plan->set_bitrate && can_set_bitrate(ifname, plan->bitrate) < 0)
		r = -EPERM;
	if (!r && plan->set_ctrlmode && can_set_ctrlmode(ifname, &cm) < 0)
		r = -EPERM;
	/* Restart even after a failure: leave the link running as found. */
	if (can_do_start(ifname) < 0 && !r)
		r = -EIO;
	if (!r)
		r = cs_link_read(ifindex, p);
	if (!r && plan->listen_only && !(p->link.have_ctrlmode && p->link.listen_only))
		r = -EPERM;
	return r;
}

static int cs_link_setup(const struct bus_can_cfg *cfg, int ifindex, struct cs_priv *p)
{
	struct bus_can_plan plan;
	int r;

	r = cs_link_read(ifindex, p);
	if (!r)
		r = bus_can_socket_plan(cfg, &p->link, &plan);
	if (!r)
		r = cs_link_apply(cfg->ifname, ifindex, &plan, p);
	return r;
}

/* ---------------------------------------------------------------- socket */

static int cs_socket_setup(int fd, const struct bus_can_cfg *cfg, int ifindex)
{
	struct can_filter flt[BUS_CAN_FILTERS_MAX];
	struct sockaddr_can addr = { .can_family = AF_CAN, .can_ifindex = ifindex };
	can_err_mask_t errmask = CAN_ERR_MASK;
	int one = 1, fd_frames = cfg->fd;
	int ts = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |
	         SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
	int r;

	r = cs_setsockopt(fd, SOL_CAN_RAW, CAN_RAW_FD_FRAMES, &fd_frames, sizeof(fd_frames));
	if (!r)
		r = cs_setsockopt(fd, SOL_CAN_RAW, CAN_RAW_ERR_FILTER, &errmask, sizeof(errmask));
	if (!r && cfg->nfilters) {
		for (unsigned i = 0; i < cfg->nfilters; i++) {
			flt[i].can_id = cfg->filters[i].id;
			flt[i].can_mask = cfg->filters[i].mask;
		}
		r = cs_setsockopt(fd, SOL_CAN_RAW, CAN_RAW_FILTER, flt,
		                  cfg->nfilters * sizeof(flt[0]));
	}
	if (!r)
		r = cs_setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	if (!r)
		r = cs_setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &ts, sizeof(ts));
	if (!r && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		r = -errno;
	return r;
}

static void cs_buffers_init(struct cs_priv *p)
{
	for (unsigned i = 0; i < CS_BATCH; i++) {
		p->iov[i].iov_base = &p->frames[i];
		p->iov[i].iov_len = sizeof(p->frames[i]);
		p->msgs[i].msg_hdr.msg_iov = &p->iov[i];
		p->msgs[i].msg_hdr.msg_iovlen = 1;
		p->msgs[i].msg_hdr.msg_control = p->cmsg[i].buf;
	}
}

static bool cs_cfg_valid(const struct bus_can_cfg *c)
{
	size_t n = strnlen(c->ifname, sizeof(c->ifname));

	return n > 0 && n < IFNAMSIZ && c->nfilters <= BUS_CAN_FILTERS_MAX;
}

/* Close the socket, keep the buffers (reopen uses them again). */
static void cs_release(bus_dev_t *dev)
{
	struct cs_priv *p = dev->priv;

	if (p->fd >= 0) {
		close(p->fd);
		/* Link events while it was there say nothing of a return. */
		bus_link_watch_flush(&p->watch);
	}
	p->fd = -1;
}

static void cs_close(bus_dev_t *dev)
{
	struct cs_priv *p = dev->priv;

	if (!p)
		return;
	cs_release(dev);
	bus_link_watch_done(&p->watch);
	free(p);
	dev->priv = NULL;
}

/*
 * Socket, link set-up (listen-only, bitrate) and bind, into the buffers of
 * the first open: no allocation.  need_up: a reopen must find the link up,
 * because a socket bound to a down link reports nothing when it comes up.
 */
static int cs_attach(bus_dev_t *dev, bool need_up)
{
	const struct bus_can_cfg *c = &dev->cfg.can;
	struct cs_priv *p = dev->priv;
	int ifindex, r;

	p->fd = socket(PF_CAN, SOCK_RAW | SOCK_CLOEXEC, CAN_RAW);
	if (p->fd < 0)
		return -errno;
	ifindex = (int)if_nametoindex(c->ifname);
	r = ifindex ? cs_link_setup(c, ifindex, p) : -ENODEV;
	if (!r && need_up && !p->link.up)
		r = -ENETDOWN;
	if (!r)
		r = cs_socket_setup(p->fd, c, ifindex);
	if (r < 0) {
		cs_release(dev);
		return r;
	}
	/* Baseline: only drops after open are ours to report (a new
	   interface starts its counters at 0, a new socket its SO_RXQ_OVFL). */
	p->ifindex = ifindex;
	p->rcvtimeo_ms = -1;
	if (bus_can_netdev_drops(ifindex, &p->netdev_drops) < 0)
		p->netdev_drops = UINT64_MAX; /* counters unreadable: never report */
	atomic_store_explicit(&p->sock_drops, 0, memory_order_relaxed);
	atomic_store_explicit(&p->state, -1, memory_order_relaxed);
	return 0;
}

static int cs_reopen(bus_dev_t *dev)
{
	cs_release(dev);
	return cs_attach(dev, true);
}

static int cs_await(bus_dev_t *dev, int timeout_ms)
{
	struct cs_priv *p = dev->priv;

	return bus_link_watch_wait(&p->watch, timeout_ms);
}

static int cs_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	struct cs_priv *p;
	int r;

	if (cfg->kind != BUS_KIND_CAN || !cs_cfg_valid(&cfg->can))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	dev->priv = p;
	p->fd = -1;
	cs_buffers_init(p);
	/* Without rtnetlink the timed retries alone reopen it. */
	(void)bus_link_watch_init(&p->watch, cfg->can.ifname);
	/* A link that is down at start is accepted as before: the socket
	   receives once it comes up. */
	r = bus_open_absent(dev, cs_attach(dev, false));
	if (r < 0)
		cs_close(dev);
	return r;
}

/* ------------------------------------------------------------ send/check */

static int cs_send(bus_dev_t *dev, const struct acq_item *item)
{
	struct cs_priv *p = dev->priv;
	const struct acq_can *c = &item->can;
	struct canfd_frame f = { 0 };
	size_t n = c->flags & ACQ_CAN_FD ? CANFD_MTU : CAN_MTU;

	if (item->kind != ACQ_ITEM_CAN || c->len > (n == CANFD_MTU ? CANFD_MAX_DLEN : CAN_MAX_DLEN))
		return -EINVAL;
	/* Read-only towards the train: a physical bus is written to only in
	   normal mode the board file opted in to (a listen-only controller
	   would drop the frame silently). */
	if (p->link.physical && (dev->cfg.can.listen_only || !dev->cfg.can.allow_normal_mode))
		return -EPERM;
	if (c->flags & ACQ_CAN_ERR)
		f.can_id = (c->id & CAN_ERR_MASK) | CAN_ERR_FLAG;
	else if (c->flags & ACQ_CAN_EXT)
		f.can_id = (c->id & CAN_EFF_MASK) | CAN_EFF_FLAG;
	else
		f.can_id = c->id & CAN_SFF_MASK;
	if (c->flags & ACQ_CAN_RTR && n == CAN_MTU)
		f.can_id |= CAN_RTR_FLAG;
	f.len = c->len;
	if (n == CANFD_MTU)
		f.flags = (c->flags & ACQ_CAN_BRS ? CANFD_BRS : 0) | (c->flags & ACQ_CAN_ESI ? CANFD_ESI : 0);
	memcpy(f.data, c->data, c->len);
	if (write(p->fd, &f, n) != (ssize_t)n)
		return errno ? -errno : -EIO;
	bus_stat_add(&dev->stats.tx_frames, 1);
	return 0;
}

const struct bus_ops bus_can_socket_ops = {
	.name = "socketcan",
	.open = cs_open,
	.recv = bus_can_socket_recv,
	.send = cs_send,
	.check = bus_can_socket_check,
	.close = cs_close,
	.release = cs_release,
	.reopen = cs_reopen,
	.await_back = cs_await,
};
