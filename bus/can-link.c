/* SPDX-License-Identifier: MIT */
/*
 * can-link.c - what the kernel says of a CAN interface, asked over
 * netlink by the SocketCAN driver (can-socket.c) with one RTM_GETLINK of
 * its own, bounded in time, and parsed here (bus_can_link_parse, tested on
 * the host); whether the process may change the link; and the pure
 * decision of what to change (bus_can_socket_plan).  No driver state:
 * every call takes what it needs.
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

#include "can-link.h"


/* The longest wait for the kernel's answer about a link. */
#define CS_NETLINK_TIMEOUT_MS 500

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
int bus_can_link_query(int ifindex, struct bus_can_linkinfo *ret_info)
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

/* CAP_NET_ADMIN in the effective set: may we reconfigure the link? */
bool bus_can_may_admin(void)
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

/* The interface's counters that mean "frame lost before any socket". */
int bus_can_netdev_drops(int ifindex, uint64_t *ret_drops)
{
	struct bus_can_linkinfo info;
	int r = bus_can_link_query(ifindex, &info);

	if (r < 0)
		return r;
	if (!info.have_stats)
		return -EIO;
	*ret_drops = info.rx_lost;
	return 0;
}
