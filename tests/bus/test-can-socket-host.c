/* SPDX-License-Identifier: MIT */
/*
 * test-can-socket-host.c - the SocketCAN driver's host-side contract.
 *
 * Runs on a kernel without CAN: bad arguments, a clean -EAFNOSUPPORT from
 * open, the read-only-towards-the-train policy (bus_can_socket_plan) for
 * physical links that tests cannot have, and the rtnetlink reply parser
 * on well-formed, malformed and random messages.  The data path is tested
 * in the VM (test-can-socket.c).
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <linux/can/netlink.h>
#include <linux/if_arp.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "bus/bus.h"
#include "bus/can-link.h"

static struct bus_cfg can_cfg(const char *ifname)
{
	struct bus_cfg c = { .kind = BUS_KIND_CAN };

	snprintf(c.can.ifname, sizeof(c.can.ifname), "%s", ifname);
	c.can.driver = BUS_CAN_SOCKETCAN;
	c.can.listen_only = true;
	return c;
}

static void test_open(void)
{
	struct bus_cfg c = can_cfg("vcan0");
	bus_dev_t *d = NULL;

	assert(bus_dev_new(NULL, &d) == -EINVAL);
	assert(bus_dev_new(&c, NULL) == -EINVAL);
	c = can_cfg("");
	assert(bus_dev_new(&c, &d) == -EINVAL && !d);
	c = can_cfg("can_name_too_long"); /* 17 chars: over IFNAMSIZ - 1 */
	assert(bus_dev_new(&c, &d) == -EINVAL && !d);
	c = can_cfg("vcan0");
	c.can.nfilters = BUS_CAN_FILTERS_MAX + 1;
	assert(bus_dev_new(&c, &d) == -EINVAL && !d);
	/* This host's kernel has no CAN: a clean error, nothing leaked (ASan). */
	c = can_cfg("vcan0");
	assert(bus_dev_new(&c, &d) == -EAFNOSUPPORT && !d);
	assert(bus_dev_free(NULL) == NULL);
}

static void test_plan(void)
{
	struct bus_can_link virt = { 0 }, phys = { .physical = true };
	struct bus_cfg c = can_cfg("can0");
	struct bus_can_plan p, untouched = { .set_bitrate = true, .bitrate = 42 };

	assert(bus_can_socket_plan(NULL, &phys, &p) == -EINVAL);
	assert(bus_can_socket_plan(&c.can, NULL, &p) == -EINVAL);
	assert(bus_can_socket_plan(&c.can, &phys, NULL) == -EINVAL);

	/* Virtual: nothing to configure, normal mode and bitrate irrelevant. */
	c.can.listen_only = false;
	c.can.bitrate = 500000;
	c.can.dbitrate = 2000000;
	assert(bus_can_socket_plan(&c.can, &virt, &p) == 0);
	assert(!p.set_ctrlmode && !p.set_bitrate);

	/* Physical, normal mode without the opt-in: refused, *ret untouched. */
	c = can_cfg("can0");
	c.can.listen_only = false;
	p = untouched;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == -EPERM);
	assert(p.set_bitrate && p.bitrate == 42 && !p.set_ctrlmode);
	/* ... with it: listen-only is cleared if it was set. */
	c.can.allow_normal_mode = true;
	phys.have_ctrlmode = true;
	phys.listen_only = true;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0);
	assert(p.set_ctrlmode && !p.listen_only && !p.set_bitrate);

	/* Physical, listen-only wanted: set unless known to be set. */
	c = can_cfg("can0");
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0);
	assert(!p.set_ctrlmode && p.listen_only);
	phys.listen_only = false;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0 && p.set_ctrlmode && p.listen_only);
	phys.have_ctrlmode = false; /* unknown mode: set it to be sure */
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0 && p.set_ctrlmode && p.listen_only);

	/* Bitrate: set only when asked and different. */
	phys.bitrate = 250000;
	c.can.bitrate = 250000;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0 && !p.set_bitrate);
	c.can.bitrate = 500000;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == 0 && p.set_bitrate && p.bitrate == 500000);
	c.can.dbitrate = 2000000;
	assert(bus_can_socket_plan(&c.can, &phys, &p) == -EOPNOTSUPP);

	assert(bus_can_kind_is_virtual("vcan") && bus_can_kind_is_virtual("vxcan"));
	assert(!bus_can_kind_is_virtual("can") && !bus_can_kind_is_virtual(""));
	assert(!bus_can_kind_is_virtual(NULL));
}

/* Append an attribute at the end of message h; returns it. */
static struct rtattr *put_attr(struct nlmsghdr *h, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

/* Close a nest opened by put_attr(h, type, NULL, 0). */
static void end_nest(struct nlmsghdr *h, struct rtattr *nest)
{
	nest->rta_len = (unsigned short)((char *)h + h->nlmsg_len - (char *)nest);
}

/*
 * An RTM_NEWLINK reply as the kernel sends it: ifinfomsg, IFLA_IFNAME,
 * IFLA_LINKINFO { IFLA_INFO_KIND (not NUL-terminated), IFLA_INFO_DATA
 * { the IFLA_CAN_* types in can[] } }.
 */
static size_t link_msg(void *buf, size_t size, unsigned type, const char *kind,
                       const unsigned short *can, size_t ncan)
{
	struct nlmsghdr *h = buf;
	struct ifinfomsg *ifi;
	struct rtattr *li, *data;
	uint32_t v = 0;

	memset(buf, 0, size);
	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*ifi));
	ifi = NLMSG_DATA(h);
	ifi->ifi_type = (unsigned short)type;
	put_attr(h, IFLA_IFNAME, "can0", 5);
	if (!kind)
		return h->nlmsg_len;
	li = put_attr(h, IFLA_LINKINFO, NULL, 0);
	put_attr(h, IFLA_INFO_KIND, kind, strlen(kind));
	if (ncan) {
		data = put_attr(h, IFLA_INFO_DATA, NULL, 0);
		for (size_t i = 0; i < ncan; i++)
			put_attr(h, can[i], &v, sizeof(v));
		end_nest(h, data);
	}
	end_nest(h, li);
	return h->nlmsg_len;
}

static void test_link_parse(void)
{
	static const unsigned short can_attrs[] = { IFLA_CAN_STATE, IFLA_CAN_CTRLMODE,
	                                            IFLA_CAN_BITTIMING };
	union {
		char b[512];
		struct nlmsghdr align;
	} buf;
	struct bus_can_linkinfo info;
	size_t n;

	n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "vcan", NULL, 0);
	assert(bus_can_link_parse(NULL, n, &info) == -EINVAL);
	assert(bus_can_link_parse(buf.b, n, NULL) == -EINVAL);
	assert(bus_can_link_parse(buf.b, n, &info) == 0);
	assert(info.type == ARPHRD_CAN && !strcmp(info.kind, "vcan") && info.can_attrs == 0);
	/* Truncated anywhere: never read past len. */
	for (size_t cut = 0; cut < n; cut++)
		assert(bus_can_link_parse(buf.b, cut, &info) == -EBADMSG);

	/* A controller: which attributes it has decides what libsocketcan is asked. */
	n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "can", can_attrs, 3);
	assert(bus_can_link_parse(buf.b, n, &info) == 0 && !strcmp(info.kind, "can"));
	assert(info.can_attrs == ((1u << IFLA_CAN_STATE) | (1u << IFLA_CAN_CTRLMODE) |
	                          (1u << IFLA_CAN_BITTIMING)));
	/* INFO_DATA of another kind is not CAN controller data. */
	n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "vxcan", can_attrs, 3);
	assert(bus_can_link_parse(buf.b, n, &info) == 0 && info.can_attrs == 0);
	n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "a_kind_too_long_", NULL, 0);
	assert(bus_can_link_parse(buf.b, n, &info) == -ENAMETOOLONG);
	n = link_msg(buf.b, sizeof(buf), ARPHRD_ETHER, NULL, NULL, 0);
	assert(bus_can_link_parse(buf.b, n, &info) == 0);
	assert(info.type == ARPHRD_ETHER && info.kind[0] == '\0');

	/* Kernel error reply carries -errno; other message types are refused. */
	struct nlmsghdr *h = &buf.align;
	struct nlmsgerr *e = NLMSG_DATA(h);
	memset(buf.b, 0, sizeof(buf));
	h->nlmsg_type = NLMSG_ERROR;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(*e));
	e->error = -ENODEV;
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == -ENODEV);
	e->error = 5; /* nonsense: not an errno */
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == -EBADMSG);
	h->nlmsg_type = RTM_NEWADDR;
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == -EBADMSG);

	/* Random corruption (fixed seed) behind a plausible header: no crash,
	   and on success the kind is always a terminated string. */
	uint32_t x = 12345;
	for (int round = 0; round < 20000; round++) {
		n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "can", can_attrs, 3);
		for (size_t i = sizeof(struct nlmsghdr); i < n; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			if (x % 8 == 0)
				buf.b[i] = (char)(x >> 8);
		}
		if (bus_can_link_parse(buf.b, n, &info) == 0)
			assert(strnlen(info.kind, sizeof(info.kind)) < sizeof(info.kind));
	}
}

/*
 * The values the driver reads from the same reply (no libsocketcan read):
 * controller state, control mode, bitrate, error counters, and the
 * interface's drop counters; an attribute too short for its value is
 * present but not read.
 */
static void test_link_values(void)
{
	union {
		char b[1024];
		struct nlmsghdr align;
	} buf;
	struct nlmsghdr *h = &buf.align;
	struct bus_can_linkinfo info;
	struct rtnl_link_stats64 st = { .rx_dropped = 1, .rx_over_errors = 2, .rx_fifo_errors = 3, .rx_errors = 99 };
	struct can_ctrlmode cm = { .mask = CAN_CTRLMODE_LISTENONLY, .flags = CAN_CTRLMODE_LISTENONLY };
	struct can_bittiming bt = { .bitrate = 500000 };
	struct can_berr_counter bc = { .txerr = 5, .rxerr = 7 };
	uint32_t state = CAN_STATE_ERROR_PASSIVE;
	struct rtattr *li, *data;

	memset(buf.b, 0, sizeof(buf));
	h->nlmsg_type = RTM_NEWLINK;
	h->nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	((struct ifinfomsg *)NLMSG_DATA(h))->ifi_type = ARPHRD_CAN;
	put_attr(h, IFLA_IFNAME, "can0", 5);
	put_attr(h, IFLA_STATS64, &st, sizeof(st));
	li = put_attr(h, IFLA_LINKINFO, NULL, 0);
	put_attr(h, IFLA_INFO_KIND, "can", 3);
	data = put_attr(h, IFLA_INFO_DATA, NULL, 0);
	put_attr(h, IFLA_CAN_STATE, &state, sizeof(state));
	put_attr(h, IFLA_CAN_CTRLMODE, &cm, sizeof(cm));
	put_attr(h, IFLA_CAN_BITTIMING, &bt, sizeof(bt));
	put_attr(h, IFLA_CAN_BERR_COUNTER, &bc, sizeof(bc));
	end_nest(h, data);
	end_nest(h, li);
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == 0);
	assert(info.can_vals == ((1u << IFLA_CAN_STATE) | (1u << IFLA_CAN_CTRLMODE) | (1u << IFLA_CAN_BITTIMING) |
	                         (1u << IFLA_CAN_BERR_COUNTER)));
	assert(info.state == CAN_STATE_ERROR_PASSIVE && info.ctrlmode == CAN_CTRLMODE_LISTENONLY);
	assert(info.bitrate == 500000 && info.txerr == 5 && info.rxerr == 7);
	assert(info.have_stats && info.rx_lost == 6);

	/* too short to hold their values: present, not read */
	static const unsigned short short_attrs[] = { IFLA_CAN_CTRLMODE, IFLA_CAN_STATE };
	size_t n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "can", short_attrs, 2);
	assert(bus_can_link_parse(buf.b, n, &info) == 0);
	assert(info.can_attrs == ((1u << IFLA_CAN_CTRLMODE) | (1u << IFLA_CAN_STATE)));
	assert(info.can_vals == (1u << IFLA_CAN_STATE) && !info.have_stats);
	/* statistics from an older, shorter struct: read up to rx_fifo_errors;
	   shorter than that: none */
	put_attr(h, IFLA_STATS64, &st, offsetof(struct rtnl_link_stats64, rx_missed_errors));
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == 0 && info.have_stats && info.rx_lost == 6);
	n = link_msg(buf.b, sizeof(buf), ARPHRD_CAN, "vcan", NULL, 0);
	put_attr(h, IFLA_STATS64, &st, offsetof(struct rtnl_link_stats64, rx_fifo_errors));
	assert(bus_can_link_parse(buf.b, h->nlmsg_len, &info) == 0 && !info.have_stats && !info.can_vals);
}

int main(void)
{
	test_open();
	test_plan();
	test_link_parse();
	test_link_values();
	printf("can-socket host checks passed\n");
	return 0;
}
