/* SPDX-License-Identifier: MIT */
/*
 * can-socket-private.h - private to the SocketCAN driver's files: its
 * state (struct cs_priv), where recv and check put items, and the calls
 * between can-socket.c (open, close, send, the link's set-up),
 * can-socket-rx.c (recv) and can-socket-check.c (check, on the monitor's
 * thread).  The driver's whole story is at the top of can-socket.c.
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/can.h>

#include "bus-private.h"
#include "can-link.h"

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
	struct bus_link_watch watch; /* the interface, while it is away */
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

static inline struct acq_item *cs_emit(struct cs_out *o)
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

static inline void cs_event(struct cs_out *o, uint16_t bus, int64_t t_ns,
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

static inline int cs_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return setsockopt(fd, level, name, val, len) < 0 ? -errno : 0;
}

#define CS_HAS(info, attr) ((info).can_attrs & (1u << (attr)))
#define CS_VAL(info, attr) ((info).can_vals & (1u << (attr)))

/* can-socket-rx.c: recv (bus_ops.recv); a socket drop count read (recv's
   SO_RXQ_OVFL or check's SK_MEMINFO_DROPS) accounted once; a controller
   state change as its event. */
int bus_can_socket_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms);
void bus_can_socket_drops(bus_dev_t *dev, struct cs_out *o, uint32_t now, int64_t t_ns);
void bus_can_socket_state_event(bus_dev_t *dev, struct cs_out *o, int64_t t_ns, int state, uint32_t code, int rx,
                                int tx);
/* can-socket-check.c: check (bus_ops.check), on the monitor's thread. */
int bus_can_socket_check(bus_dev_t *dev, struct acq_item *events, size_t max);
