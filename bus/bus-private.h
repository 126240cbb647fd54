/* SPDX-License-Identifier: MIT */
/* bus-private.h - shared between bus/ backends only. */
#pragma once

#include "bus.h"

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

/*
 * Parse an RTM_NEWLINK reply of len bytes: the ARPHRD type into *ret_type
 * and IFLA_INFO_KIND into ret_kind ("" when absent).  Returns 0, the
 * kernel's -errno for an NLMSG_ERROR reply, -EBADMSG for a malformed or
 * unexpected message, -ENAMETOOLONG if the kind does not fit kind_size,
 * -EINVAL on bad arguments.  Safe on any input; no allocation.
 */
int bus_can_link_parse(const void *buf, size_t len, unsigned *ret_type,
                       char *ret_kind, size_t kind_size);
