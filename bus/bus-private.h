/* SPDX-License-Identifier: MIT */
/* bus-private.h - shared between bus/ backends only. */
#pragma once

#include <errno.h>

#include "bus.h"

/*
 * Add n to a counter of struct bus_counters and return the new value.
 * Only the counter's one writer thread calls this (see bus.h), so a
 * relaxed load and store is the increment: cheaper than a locked
 * read-modify-write on every frame, and readers still never see a torn
 * value.
 */
static inline uint64_t bus_stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	uint64_t v = atomic_load_explicit(counter, memory_order_relaxed) + n;

	atomic_store_explicit(counter, v, memory_order_relaxed);
	return v;
}

/* recv()'s way to say the device is gone (bus.h): keep why, -ENODEV. */
static inline int bus_gone(bus_dev_t *dev, int cause)
{
	dev->gone_cause = cause;
	return -ENODEV;
}

/*
 * open()'s way to end when attaching the device failed with r: 0 with the
 * device released and gone (bus.h) when the caller accepts an absent
 * device and r says absent, else r (the caller frees what open allocated).
 */
static inline int bus_open_absent(bus_dev_t *dev, int r)
{
	if (r >= 0 || !dev->absent_ok)
		return r;
	switch (-r) {
	case ENOENT: case ENODEV: case ENXIO: case EIO: case ETIMEDOUT: case ENETDOWN:
		dev->gone_cause = r;
		return 0;
	default:
		return r;
	}
}

/* One ops table per backend; bus.c picks one from the cfg. */
extern const struct bus_ops bus_can_socket_ops;
extern const struct bus_ops bus_can_slcan_ops;
extern const struct bus_ops bus_can_trace_ops;
extern const struct bus_ops bus_modbus_ops;

/*
 * SocketCAN link policy (can-socket.c), exposed so the read-only rules can
 * be tested without a physical controller.
 */
#include <stdbool.h>

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
};

/*
 * Parse the RTM_NEWLINK reply of len bytes to an RTM_GETLINK request.
 * Returns 0 and *ret_info, the kernel's -errno for an NLMSG_ERROR reply,
 * -EBADMSG for a malformed or unexpected message, -ENAMETOOLONG for a
 * kind longer than 15 bytes, -EINVAL on bad arguments.  Reads nothing
 * past len; no allocation.
 */
int bus_can_link_parse(const void *buf, size_t len, struct bus_can_linkinfo *ret_info);
