/* SPDX-License-Identifier: MIT */
/*
 * can-socket-check.c - the SocketCAN driver's link check (can-socket.c
 * says the whole driver): on acquisition's monitor thread at normal
 * priority, never the RX thread, one RTM_GETLINK (can-link.c) for the
 * controller's state, error counters and the interface's drop counters,
 * and the socket's own drop count, shared atomically with recv.
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

#include "can-socket-private.h"
#include "basic/clock.h"

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
		bus_can_socket_state_event(dev, o, t, state, code, -1, -1);
	else
		bus_can_socket_state_event(dev, o, t, state, code, info->rxerr, info->txerr);
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
	if (bus_can_link_query(p->ifindex, &info) < 0)
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
	bus_can_socket_drops(dev, o, mem[SK_MEMINFO_DROPS], t);
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
int bus_can_socket_check(bus_dev_t *dev, struct acq_item *events, size_t max)
{
	struct cs_out o = { .p = dev->priv, .items = events, .max = max, .check = true };
	int64_t t = basic_realtime_ns();

	if (o.p->fd < 0)
		return 0; /* released: nothing to ask until reopened */
	cs_check_sock(dev, &o, t);
	cs_check_link(dev, &o, t);
	return (int)o.n;
}
