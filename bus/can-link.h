/* SPDX-License-Identifier: MIT */
/*
 * can-link.h - the SocketCAN driver's link policy and rtnetlink parsing
 * (can-socket.c), pure functions exposed so the read-only rules and the
 * parser can be tested and fuzzed without a physical controller.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* What the driver learnt about an interface at open. */
struct bus_can_link {
	bool physical;      /* a controller on a real bus, not vcan/vxcan */
	bool have_ctrlmode; /* its control mode could be read */
	bool listen_only;   /* currently in listen-only mode (if have_ctrlmode) */
	uint32_t bitrate;   /* current bitrate, 0 = unknown */
	bool up;            /* administratively up (IFF_UP) */
};

/* What open must change on the link (link down, set, link up). */
struct bus_can_plan {
	bool set_ctrlmode;  /* write CAN_CTRLMODE_LISTENONLY = listen_only */
	bool listen_only;
	bool set_bitrate;
	uint32_t bitrate;
};

/*
 * Decide how to open cfg on link.  Virtual links need nothing.  Physical
 * ones: listen-only wanted -> set it unless known to be set; normal mode
 * -> -EPERM unless cfg->allow_normal_mode; bitrate set when asked and
 * different; dbitrate -> -EOPNOTSUPP (libsocketcan cannot set it).
 * Returns 0 and *ret_plan, -EINVAL on NULL arguments.  Pure function.
 */
int bus_can_socket_plan(const struct bus_can_cfg *cfg, const struct bus_can_link *link,
                        struct bus_can_plan *ret_plan);

/* True for rtnetlink link kinds that are not a real bus (vcan, vxcan). */
bool bus_can_kind_is_virtual(const char *kind);

/* An interface as rtnetlink describes it. */
struct bus_can_linkinfo {
	unsigned type;       /* ARPHRD_*; ARPHRD_CAN for every CAN interface */
	char kind[16];       /* rtnl link kind: "can", "vcan", "vxcan"; "" = none */
	uint32_t can_attrs;  /* kind "can": bit n set if IFLA_CAN attribute n
	                        (linux/can/netlink.h) is present; else 0 */
	unsigned flags;      /* ifi_flags: IFF_UP, IFF_RUNNING... */
	/* The values the driver reads, from the same reply (one round-trip,
	   with a timeout: never libsocketcan, whose reads wait for ever for
	   a reply that is not coming when the interface goes away
	   meanwhile).  can_vals: bit n set if attribute n was long enough to
	   read its value below. */
	uint32_t can_vals;
	uint32_t state;      /* IFLA_CAN_STATE: CAN_STATE_* */
	uint32_t ctrlmode;   /* IFLA_CAN_CTRLMODE: its flags (CAN_CTRLMODE_*) */
	uint32_t bitrate;    /* IFLA_CAN_BITTIMING: its bitrate */
	uint16_t txerr, rxerr; /* IFLA_CAN_BERR_COUNTER */
	bool have_stats;     /* IFLA_STATS64 present, and long enough */
	uint64_t rx_lost;    /* its rx_dropped + rx_over_errors + rx_fifo_errors:
	                        frames lost before any socket */
};

/*
 * Parse the RTM_NEWLINK reply of len bytes to an RTM_GETLINK request.
 * Returns 0 and *ret_info, the kernel's -errno for an NLMSG_ERROR reply,
 * -EBADMSG for a malformed or unexpected message, -ENAMETOOLONG for a
 * kind longer than 15 bytes, -EINVAL on bad arguments.  Reads nothing
 * past len; no allocation.
 */
int bus_can_link_parse(const void *buf, size_t len, struct bus_can_linkinfo *ret_info);

/*
 * can-link.c: one RTM_GETLINK for the interface, parsed; its reply waited
 * for at most 500 ms (-ETIMEDOUT), an error reply (the interface went
 * away meanwhile) an error.  0 or -errno.
 */
int bus_can_link_query(int ifindex, struct bus_can_linkinfo *ret_info);
/* can-link.c: CAP_NET_ADMIN in the effective set: may we change the link? */
bool bus_can_may_admin(void);
/* can-link.c: the interface's counters that mean "frame lost before any
   socket" (rx_dropped, over, fifo).  0, -EIO without stats, or -errno. */
int bus_can_netdev_drops(int ifindex, uint64_t *ret_drops);
