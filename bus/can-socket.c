/* SPDX-License-Identifier: MIT */
/*
 * can-socket.c - SocketCAN driver (CAN_RAW, CAN FD, kernel timestamps).
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

#include "bus.h"
#include "bus-private.h"
#include "can-link.h"
#include "basic/clock.h"

/* Frames per recvmmsg(); bounds the per-open buffers (~10 KiB of frames). */
#define CS_BATCH 64
/*
 * One received frame expands to at most this many items: the frame, an
 * overflow event before it, and after an error frame up to four decoded
 * events (bus-off, state, controller overflow, restarted).
 */
#define CS_ITEMS_PER_FRAME 6
#define CS_PENDING (CS_BATCH * CS_ITEMS_PER_FRAME)
/* SCM_TIMESTAMPING (3 timespecs) + SO_RXQ_OVFL (u32), with room to spare. */
#define CS_CMSG_SIZE 256
/* The longest wait for the kernel's answer about a link. */
#define CS_NETLINK_TIMEOUT_MS 500

/* ACQ_EV_CAN_RX_OVERFLOW detail: who lost the frames. */
enum {
	CS_OVFL_SOCKET = 0,     /* our socket queue (SO_RXQ_OVFL); arg = frames */
	CS_OVFL_CONTROLLER = 1, /* controller FIFO error frame; arg = 0 (unknown) */
	CS_OVFL_NETDEV = 2,     /* interface rx_dropped/over/fifo counters; arg = frames */
};

struct cs_priv {
	int fd;
	int ifindex;              /* of the interface attached (a re-created one
	                             has a new index) */
	struct bus_can_link link;
	bool link_data;           /* the controller reports its state */
	bool have_berr;           /* ... and the error counters */
	/* check() runs on the monitor's thread while recv() runs on the RX
	   thread (bus.h): what both touch is atomic. */
	_Atomic int state;        /* last CAN_STATE_* reported; -1 = none yet */
	_Atomic uint32_t sock_drops; /* socket drop count already accounted */
	uint64_t netdev_drops;    /* interface drop counters already accounted
	                             (check() only, and attach) */
	int rcvtimeo_ms;          /* the socket's SO_RCVTIMEO now (-1: none,
	                             a new socket's): set again only when recv's
	                             timeout changes, so not per call */
	/* Items an expanded frame did not fit into the caller's array. */
	unsigned pend_head, pend_len;
	struct acq_item pend[CS_PENDING];
	struct mmsghdr msgs[CS_BATCH];
	struct iovec iov[CS_BATCH];
	struct canfd_frame frames[CS_BATCH];
	union {
		char buf[CS_CMSG_SIZE];
		struct cmsghdr align;
	} cmsg[CS_BATCH];
};

/* Where recv/check put items: the caller's array first, then (recv only)
   pend[]. */
struct cs_out {
	struct cs_priv *p;
	struct acq_item *items;
	size_t max, n;
	bool check;               /* check(): never pend[], which is recv's */
};

static struct acq_item *cs_emit(struct cs_out *o)
{
	struct cs_priv *p = o->p;
	struct acq_item *it;

	if (o->n < o->max)
		it = &o->items[o->n++];
	else if (o->check)
		return NULL; /* check() never queues: what does not fit is found again */
	else if (p->pend_len < CS_PENDING)
		it = &p->pend[(p->pend_head + p->pend_len++) % CS_PENDING];
	else
		return NULL; /* unreachable: recv reads only what pend[] can hold */
	memset(it, 0, sizeof(*it));
	return it;
}

static void cs_event(struct cs_out *o, uint16_t bus, int64_t t_ns,
                     uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item *it = cs_emit(o);

	if (!it)
		return;
	it->t_ns = t_ns;
	it->kind = ACQ_ITEM_EVENT;
	it->bus = bus;
	it->event.code = code;
	it->event.arg = arg;
	it->event.detail = detail;
}


/* ------------------------------------------------------------------ link */

static int cs_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return setsockopt(fd, level, name, val, len) < 0 ? -errno : 0;
}

bool bus_can_kind_is_virtual(const char *kind)
{
	return kind && (!strcmp(kind, "vcan") || !strcmp(kind, "vxcan"));
}

/* The value of one IFLA_CAN_* attribute, when its payload holds it
   (a short one is present but not read: can_vals says which were). */
static void cs_parse_can_value(const struct rtattr *a, unsigned t, struct bus_can_linkinfo *info)
{
	size_t n = RTA_PAYLOAD(a);
	uint32_t u[2];

	memset(u, 0, sizeof(u));
	memcpy(u, RTA_DATA(a), n < sizeof(u) ? n : sizeof(u));
	if (t == IFLA_CAN_STATE && n >= 4)
		info->state = u[0];
	else if (t == IFLA_CAN_CTRLMODE && n >= 8) /* struct can_ctrlmode { mask, flags } */
		info->ctrlmode = u[1];
	else if (t == IFLA_CAN_BITTIMING && n >= 4) /* struct can_bittiming: bitrate first */
		info->bitrate = u[0];
	else if (t == IFLA_CAN_BERR_COUNTER && n >= 4) { /* struct can_berr_counter { txerr, rxerr } */
		info->txerr = (uint16_t)(u[0] & 0xffff);
		info->rxerr = (uint16_t)(u[0] >> 16);
	} else
		return;
	info->can_vals |= 1u << t;
}

/* Note which IFLA_CAN_* attributes an IFLA_INFO_DATA carries, and read
   the values the driver uses. */
static void cs_parse_can_data(const struct rtattr *d, struct bus_can_linkinfo *info)
{
	const struct rtattr *a = RTA_DATA(d);
	int len = RTA_PAYLOAD(d);

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		unsigned t = a->rta_type & NLA_TYPE_MASK;

		if (t < 32) {
			info->can_attrs |= 1u << t;
			cs_parse_can_value(a, t, info);
		}
	}
}

/* IFLA_STATS64: the interface's drop counters (an older kernel's shorter
   struct still has them: only the fields up to rx_fifo_errors are read). */
static void cs_parse_stats(const struct rtattr *a, struct bus_can_linkinfo *info)
{
	struct rtnl_link_stats64 st;
	size_t n = RTA_PAYLOAD(a), need = offsetof(struct rtnl_link_stats64, rx_fifo_errors) + sizeof(st.rx_fifo_errors);

	if (n < need)
		return;
	memset(&st, 0, sizeof(st));
	memcpy(&st, RTA_DATA(a), n < sizeof(st) ? n : sizeof(st));
	info->have_stats = true;
	info->rx_lost = st.rx_dropped + st.rx_over_errors + st.rx_fifo_errors;
}

/* IFLA_LINKINFO: the link kind and, for CAN controllers, their data. */
static int cs_parse_linkinfo(const struct rtattr *li, struct bus_can_linkinfo *info)
{
	const struct rtattr *a = RTA_DATA(li);
	int len = RTA_PAYLOAD(li);

	for (; RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		unsigned t = a->rta_type & NLA_TYPE_MASK;

		if (t == IFLA_INFO_KIND) {
			/* The kernel does not always NUL-terminate it. */
			size_t n = strnlen(RTA_DATA(a), RTA_PAYLOAD(a));

			if (n >= sizeof(info->kind))
				return -ENAMETOOLONG;
			memcpy(info->kind, RTA_DATA(a), n);
			info->kind[n] = '\0';
		} else if (t == IFLA_INFO_DATA) {
			cs_parse_can_data(a, info);
		}
	}
	return 0;
}

int bus_can_link_parse(const void *buf, size_t len, struct bus_can_linkinfo *ret_info)
{
	struct bus_can_linkinfo info = { 0 };
	const struct nlmsghdr *h = buf;
	const struct ifinfomsg *ifi;
	const struct rtattr *a;
	int alen, r;

	if (!buf || !ret_info || len > INT32_MAX)
		return -EINVAL;
	if (!NLMSG_OK(h, (unsigned)len))
		return -EBADMSG;
	if (h->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(h);

		if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
			return -EBADMSG;
		return e->error < 0 && e->error > -4096 ? e->error : -EBADMSG;
	}
	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return -EBADMSG;
	ifi = NLMSG_DATA(h);
	info.type = ifi->ifi_type;
	info.flags = ifi->ifi_flags;
	a = IFLA_RTA(ifi);
	alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi)));
	for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		if ((a->rta_type & NLA_TYPE_MASK) == IFLA_STATS64)
			cs_parse_stats(a, &info);
		if ((a->rta_type & NLA_TYPE_MASK) != IFLA_LINKINFO)
			continue;
		r = cs_parse_linkinfo(a, &info);
		if (r < 0)
			return r;
	}
	/* Controller data only means something for CAN controllers. */
	if (strcmp(info.kind, "can"))
		info.can_attrs = info.can_vals = 0;
	*ret_info = info;
	return 0;
}

/*
 * RTM_GETLINK for one interface, parsed: one round-trip, and a bounded
 * one.  The reply is waited for at most CS_NETLINK_TIMEOUT_MS (the kernel
 * may hold its rtnl lock for a while: an `ip link` elsewhere); an error
 * reply (the interface went away meanwhile) is an error, not a wait for a
 * reply that never comes, as in libsocketcan's reads.
 */
static int cs_link_query(int ifindex, struct bus_can_linkinfo *ret_info)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg i;
	} req = {
		.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
		.h.nlmsg_type = RTM_GETLINK,
		.h.nlmsg_flags = NLM_F_REQUEST,
		.i.ifi_family = AF_UNSPEC,
		.i.ifi_index = ifindex,
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	union {
		char b[16384];
		struct nlmsghdr align;
	} buf;
	struct timeval tv = { .tv_usec = CS_NETLINK_TIMEOUT_MS * 1000 };
	ssize_t n;
	int fd, r;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	r = cs_setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!r && sendto(fd, &req, req.h.nlmsg_len, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		r = -errno;
	if (r < 0)
		goto out;
	n = recv(fd, buf.b, sizeof(buf.b), 0);
	if (n < 0) {
		r = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		goto out;
	}
	r = bus_can_link_parse(buf.b, (size_t)n, ret_info);
out:
	close(fd);
	return r;
}

#define CS_HAS(info, attr) ((info).can_attrs & (1u << (attr)))
#define CS_VAL(info, attr) ((info).can_vals & (1u << (attr)))

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

	r = cs_link_query(ifindex, &info);
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

/* CAP_NET_ADMIN in the effective set: may we reconfigure the link? */
static bool cs_may_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_TO_INDEX(CAP_NET_ADMIN)].effective & CAP_TO_MASK(CAP_NET_ADMIN);
}

int bus_can_socket_plan(const struct bus_can_cfg *cfg, const struct bus_can_link *link,
                        struct bus_can_plan *ret_plan)
{
	struct bus_can_plan plan = { 0 };

	if (!cfg || !link || !ret_plan)
		return -EINVAL;
	/* vcan/vxcan have no bit timing and no bus to disturb. */
	if (!link->physical) {
		*ret_plan = plan;
		return 0;
	}
	if (!cfg->listen_only && !cfg->allow_normal_mode)
		return -EPERM;
	/* libsocketcan 0.0.12 has no call for the data-phase bit timing. */
	if (cfg->dbitrate)
		return -EOPNOTSUPP;
	if (cfg->listen_only)
		plan.set_ctrlmode = !link->have_ctrlmode || !link->listen_only;
	else
		plan.set_ctrlmode = !link->have_ctrlmode || link->listen_only;
	plan.listen_only = cfg->listen_only;
	plan.set_bitrate = cfg->bitrate && cfg->bitrate != link->bitrate;
	plan.bitrate = cfg->bitrate;
	*ret_plan = plan;
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
	if (!cs_may_admin() || can_do_stop(ifname) < 0)
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

/* The interface's counters that mean "frame lost before any socket". */
static int cs_netdev_drops(int ifindex, uint64_t *ret_drops)
{
	struct bus_can_linkinfo info;
	int r = cs_link_query(ifindex, &info);

	if (r < 0)
		return r;
	if (!info.have_stats)
		return -EIO;
	*ret_drops = info.rx_lost;
	return 0;
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

	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static void cs_close(bus_dev_t *dev)
{
	struct cs_priv *p = dev->priv;

	if (!p)
		return;
	cs_release(dev);
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
	if (cs_netdev_drops(ifindex, &p->netdev_drops) < 0)
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
	cs_buffers_init(p);
	/* A link that is down at start is accepted as before: the socket
	   receives once it comes up. */
	r = bus_open_absent(dev, cs_attach(dev, false));
	if (r < 0)
		cs_close(dev);
	return r;
}

/* ------------------------------------------------------------------ recv */

/*
 * Account an SO_RXQ_OVFL (recv) or SK_MEMINFO_DROPS (check) reading: the
 * same kernel counter, read by two threads.  Whoever moves sock_drops
 * forward reports that distance, so each drop is counted once; a
 * compare-and-swap, never a lock, and contended at most once a second.
 * Each thread adds to its own counter (single writer): recv to
 * rx_dropped, check to check_dropped.
 */
static void cs_sock_drops(bus_dev_t *dev, struct cs_out *o, uint32_t now, int64_t t_ns)
{
	struct cs_priv *p = dev->priv;
	uint32_t seen = atomic_load_explicit(&p->sock_drops, memory_order_relaxed);
	int32_t delta;

	do {
		/* Wrapping u32: a frame queued before the last reading can
		   carry an older, smaller value; only a positive distance is new. */
		delta = (int32_t)(now - seen);
		if (delta <= 0)
			return;
	} while (!atomic_compare_exchange_weak_explicit(&p->sock_drops, &seen, now, memory_order_relaxed,
	                                                memory_order_relaxed));
	bus_stat_add(o->check ? &dev->stats.check_dropped : &dev->stats.rx_dropped, (uint32_t)delta);
	cs_event(o, dev->cfg.index, t_ns, ACQ_EV_CAN_RX_OVERFLOW, delta, CS_OVFL_SOCKET);
}

static void cs_state_event(bus_dev_t *dev, struct cs_out *o, int64_t t_ns,
                           int state, uint32_t code, int rx, int tx)
{
	struct cs_priv *p = dev->priv;

	atomic_store_explicit(&p->state, state, memory_order_relaxed);
	cs_event(o, dev->cfg.index, t_ns, code, rx, (uint32_t)tx);
}

/*
 * Decode an error frame's class bits into events (linux/can/error.h).
 * State events carry arg = RX error counter, detail = TX error counter,
 * or -1 / UINT32_MAX when the frame has no counters.
 */
static void cs_err_events(bus_dev_t *dev, struct cs_out *o, const struct canfd_frame *f, int64_t t)
{
	canid_t cls = f->can_id & CAN_ERR_MASK;
	uint8_t ctrl = f->data[1];
	int tx = -1, rx = -1;

	/* Counters are valid with CAN_ERR_CNT; kernels before it existed
	   (and drivers not updated) fill them on controller-state frames. */
	if (cls & (CAN_ERR_CNT | CAN_ERR_CRTL)) {
		tx = f->data[6];
		rx = f->data[7];
	}
	if (cls & CAN_ERR_BUSOFF)
		cs_state_event(dev, o, t, CAN_STATE_BUS_OFF, ACQ_EV_CAN_BUS_OFF, rx, tx);
	if (cls & CAN_ERR_CRTL) {
		if (ctrl & (CAN_ERR_CRTL_RX_PASSIVE | CAN_ERR_CRTL_TX_PASSIVE))
			cs_state_event(dev, o, t, CAN_STATE_ERROR_PASSIVE,
			               ACQ_EV_CAN_ERROR_PASSIVE, rx, tx);
		else if (ctrl & (CAN_ERR_CRTL_RX_WARNING | CAN_ERR_CRTL_TX_WARNING))
			cs_state_event(dev, o, t, CAN_STATE_ERROR_WARNING,
			               ACQ_EV_CAN_ERROR_WARNING, rx, tx);
		else if (ctrl & CAN_ERR_CRTL_ACTIVE)
			cs_state_event(dev, o, t, CAN_STATE_ERROR_ACTIVE,
			               ACQ_EV_CAN_ERROR_ACTIVE, rx, tx);
		if (ctrl & (CAN_ERR_CRTL_RX_OVERFLOW | CAN_ERR_CRTL_TX_OVERFLOW))
			cs_event(o, dev->cfg.index, t, ACQ_EV_CAN_RX_OVERFLOW, 0, CS_OVFL_CONTROLLER);
	}
	if (cls & CAN_ERR_RESTARTED)
		cs_state_event(dev, o, t, CAN_STATE_ERROR_ACTIVE, ACQ_EV_CAN_RESTARTED, rx, tx);
}

/* Copy a frame whose size recvmmsg reported as n bytes; false if malformed. */
static bool cs_frame_item(const struct canfd_frame *f, size_t n, struct acq_item *it)
{
	canid_t id = f->can_id;

	if (n == CANFD_MTU) {
		if (f->len > CANFD_MAX_DLEN)
			return false;
		it->can.flags = ACQ_CAN_FD | (f->flags & CANFD_BRS ? ACQ_CAN_BRS : 0) |
		                (f->flags & CANFD_ESI ? ACQ_CAN_ESI : 0);
	} else if (n == CAN_MTU) {
		if (f->len > CAN_MAX_DLEN)
			return false;
	} else {
		return false;
	}
	if (id & CAN_ERR_FLAG) {
		it->can.flags |= ACQ_CAN_ERR;
		it->can.id = id & CAN_ERR_MASK;
	} else if (id & CAN_EFF_FLAG) {
		it->can.flags |= ACQ_CAN_EXT;
		it->can.id = id & CAN_EFF_MASK;
	} else {
		it->can.id = id & CAN_SFF_MASK;
	}
	if (id & CAN_RTR_FLAG && n == CAN_MTU)
		it->can.flags |= ACQ_CAN_RTR;
	it->can.len = f->len;
	/* A remote request's length is the requested DLC: no data to copy. */
	if (!(it->can.flags & ACQ_CAN_RTR))
		memcpy(it->can.data, f->data, f->len);
	return true;
}

/* The frame's stamp: hardware when the controller gave one, else software. */
static int64_t cs_msg_stamp(struct msghdr *m, bool *ret_have_ovfl, uint32_t *ret_ovfl)
{
	int64_t t = 0;

	*ret_have_ovfl = false;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SO_TIMESTAMPING &&
		    c->cmsg_len >= CMSG_LEN(3 * sizeof(struct timespec))) {
			struct timespec ts[3];

			memcpy(ts, CMSG_DATA(c), sizeof(ts));
			if (ts[2].tv_sec || ts[2].tv_nsec)
				ts[0] = ts[2];
			t = (int64_t)ts[0].tv_sec * 1000000000 + ts[0].tv_nsec;
		} else if (c->cmsg_type == SO_RXQ_OVFL && c->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
			memcpy(ret_ovfl, CMSG_DATA(c), sizeof(*ret_ovfl));
			*ret_have_ovfl = true;
		}
	}
	return t ? t : basic_realtime_ns();
}

static void cs_msg(bus_dev_t *dev, struct cs_out *o, struct mmsghdr *mm)
{
	const struct canfd_frame *f = mm->msg_hdr.msg_iov->iov_base;
	struct acq_item frame = { .kind = ACQ_ITEM_CAN, .bus = dev->cfg.index };
	struct acq_item *it;
	bool have_ovfl;
	uint32_t ovfl;

	frame.t_ns = cs_msg_stamp(&mm->msg_hdr, &have_ovfl, &ovfl);
	if (have_ovfl)
		cs_sock_drops(dev, o, ovfl, frame.t_ns);
	if (!cs_frame_item(f, mm->msg_len, &frame)) {
		bus_stat_add(&dev->stats.bad_input, 1);
		return;
	}
	it = cs_emit(o);
	if (!it)
		return;
	*it = frame;
	if (frame.can.flags & ACQ_CAN_ERR) {
		bus_stat_add(&dev->stats.rx_errors, 1);
		cs_err_events(dev, o, f, frame.t_ns);
	} else {
		bus_stat_add(&dev->stats.rx_frames, 1);
	}
}

static void cs_drain_pending(struct cs_out *o)
{
	struct cs_priv *p = o->p;

	while (p->pend_len && o->n < o->max) {
		o->items[o->n++] = p->pend[p->pend_head];
		p->pend_head = (p->pend_head + 1) % CS_PENDING;
		p->pend_len--;
	}
}

/*
 * The wait of recv's blocking recvmmsg: SO_RCVTIMEO, set only when the
 * timeout differs from the socket's (the source loop asks the same one
 * every time).  recvmmsg's own timeout argument is no bound: the kernel
 * checks it only after each datagram.  0 on success or -errno.
 */
static int cs_rcvtimeo(struct cs_priv *p, int timeout_ms)
{
	struct timeval tv = { 0 }; /* 0: no limit */
	int r;

	if (timeout_ms < 0)
		timeout_ms = -1;
	if (timeout_ms == p->rcvtimeo_ms)
		return 0;
	if (timeout_ms > 0)
		tv = (struct timeval){ .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	r = cs_setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!r)
		p->rcvtimeo_ms = timeout_ms;
	return r;
}

static int cs_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct cs_priv *p = dev->priv;
	struct cs_out o = { .p = p, .items = items, .max = max };
	unsigned want;
	int r;

	cs_drain_pending(&o);
	if (o.n)
		return (int)o.n;
	if (p->fd < 0)
		return bus_gone(dev, dev->gone_cause); /* released, not reopened */
	/* timeout 0 (the drain at stop): what is queued, no wait at all. */
	if (timeout_ms != 0 && (r = cs_rcvtimeo(p, timeout_ms)) < 0)
		return r;
	want = max < CS_BATCH ? (unsigned)max : CS_BATCH;
	for (unsigned i = 0; i < want; i++) {
		/* The kernel shrinks these to what it wrote: reset each call. */
		p->msgs[i].msg_hdr.msg_controllen = CS_CMSG_SIZE;
		p->msgs[i].msg_hdr.msg_flags = 0;
	}
	/* MSG_WAITFORONE: block for the first frame only, then take what is
	   queued without waiting (the kernel adds MSG_DONTWAIT after one). */
	r = recvmmsg(p->fd, p->msgs, want, timeout_ms == 0 ? MSG_DONTWAIT : MSG_WAITFORONE, NULL);
	/* EAGAIN: SO_RCVTIMEO ran out (or nothing queued at timeout 0). */
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	/* The socket's pending error (sk_err), reported once: ENODEV when the
	   interface was deleted (the socket is unbound from then on and would
	   stay silent for ever), ENETDOWN when it went down. */
	if (r < 0 && (errno == ENODEV || errno == ENXIO || errno == ENETDOWN))
		return bus_gone(dev, -errno);
	if (r < 0)
		return -errno;
	for (int i = 0; i < r; i++)
		cs_msg(dev, &o, &p->msgs[i]);
	return (int)o.n;
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

static uint32_t cs_state_code(int state)
{
	switch (state) {
	case CAN_STATE_ERROR_ACTIVE:
		return ACQ_EV_CAN_ERROR_ACTIVE;
	case CAN_STATE_ERROR_WARNING:
		return ACQ_EV_CAN_ERROR_WARNING;
	case CAN_STATE_ERROR_PASSIVE:
		return ACQ_EV_CAN_ERROR_PASSIVE;
	case CAN_STATE_BUS_OFF:
		return ACQ_EV_CAN_BUS_OFF;
	default:
		return ACQ_EV_NONE; /* stopped, sleeping: nothing to report */
	}
}

/* Controller state; only on physical links that report it. */
static void cs_check_state(bus_dev_t *dev, struct cs_out *o, int64_t t, const struct bus_can_linkinfo *info)
{
	struct cs_priv *p = dev->priv;
	uint32_t code;
	int state;

	if (!p->link.physical || !p->link_data)
		return;
	if (!CS_VAL(*info, IFLA_CAN_STATE)) {
		p->link_data = false; /* not a controller that reports: stop asking */
		return;
	}
	state = (int)info->state;
	code = cs_state_code(state);
	if (state == atomic_load_explicit(&p->state, memory_order_relaxed) || code == ACQ_EV_NONE || o->n >= o->max)
		return;
	if (!p->have_berr || !CS_VAL(*info, IFLA_CAN_BERR_COUNTER))
		cs_state_event(dev, o, t, state, code, -1, -1);
	else
		cs_state_event(dev, o, t, state, code, info->rxerr, info->txerr);
}

static void cs_check_netdev(bus_dev_t *dev, struct cs_out *o, int64_t t, const struct bus_can_linkinfo *info)
{
	struct cs_priv *p = dev->priv;

	if (p->netdev_drops == UINT64_MAX || o->n >= o->max || !info->have_stats || info->rx_lost <= p->netdev_drops)
		return;
	bus_stat_add(&dev->stats.check_dropped, info->rx_lost - p->netdev_drops);
	cs_event(o, dev->cfg.index, t, ACQ_EV_CAN_RX_OVERFLOW,
	         (int64_t)(info->rx_lost - p->netdev_drops), CS_OVFL_NETDEV);
	p->netdev_drops = info->rx_lost;
}

/* One RTM_GETLINK answers what check() asks the interface: its drop
   counters and, on a controller, its state and error counters. */
static void cs_check_link(bus_dev_t *dev, struct cs_out *o, int64_t t)
{
	struct cs_priv *p = dev->priv;
	struct bus_can_linkinfo info;

	if (o->n >= o->max || (p->netdev_drops == UINT64_MAX && !(p->link.physical && p->link_data)))
		return;
	if (cs_link_query(p->ifindex, &info) < 0)
		return; /* asked again next time */
	cs_check_netdev(dev, o, t, &info);
	cs_check_state(dev, o, t, &info);
}

/*
 * Socket drops without waiting for the next frame: SO_RXQ_OVFL only rides
 * on frames queued after the loss, SK_MEMINFO_DROPS is the same counter
 * read directly.
 */
static void cs_check_sock(bus_dev_t *dev, struct cs_out *o, int64_t t)
{
	struct cs_priv *p = dev->priv;
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mem);

	if (o->n >= o->max || getsockopt(p->fd, SOL_SOCKET, SO_MEMINFO, mem, &len) < 0 ||
	    len <= SK_MEMINFO_DROPS * sizeof(uint32_t))
		return;
	cs_sock_drops(dev, o, mem[SK_MEMINFO_DROPS], t);
}

/*
 * On the monitor's thread (bus.h), beside recv(): the netlink round-trip
 * would stall the SCHED_FIFO RX thread for as long as the kernel's rtnl
 * lock is held elsewhere.  It reads the socket (SO_MEMINFO: thread-safe in
 * the kernel), the interface by index, and what it alone writes; shared
 * state is atomic.  fd and the link data change only in
 * release/reopen, which never run while check does (acq_source's
 * hand-shake).
 */
static int cs_check(bus_dev_t *dev, struct acq_item *events, size_t max)
{
	struct cs_out o = { .p = dev->priv, .items = events, .max = max, .check = true };
	int64_t t = basic_realtime_ns();

	if (o.p->fd < 0)
		return 0; /* released: nothing to ask until reopened */
	cs_check_sock(dev, &o, t);
	cs_check_link(dev, &o, t);
	return (int)o.n;
}

const struct bus_ops bus_can_socket_ops = {
	.name = "socketcan",
	.open = cs_open,
	.recv = cs_recv,
	.send = cs_send,
	.check = cs_check,
	.close = cs_close,
	.release = cs_release,
	.reopen = cs_reopen,
};
