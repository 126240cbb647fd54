/* SPDX-License-Identifier: MIT */
/*
 * can-socket-rx.c - the SocketCAN driver's data path (can-socket.c says
 * the whole driver): recv on the RX thread, RT-safe, one recvmmsg per
 * wakeup into buffers allocated at open; each frame's stamp and the
 * socket's drop counter; error frames decoded into state events.
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

/* ------------------------------------------------------------------ recv */

/*
 * Account an SO_RXQ_OVFL (recv) or SK_MEMINFO_DROPS (check) reading: the
 * same kernel counter, read by two threads.  Whoever moves sock_drops
 * forward reports that distance, so each drop is counted once; a
 * compare-and-swap, never a lock, and contended at most once a second.
 * Each thread adds to its own counter (single writer): recv to
 * rx_dropped, check to check_dropped.
 */
void bus_can_socket_drops(bus_dev_t *dev, struct cs_out *o, uint32_t now, int64_t t_ns)
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

void bus_can_socket_state_event(bus_dev_t *dev, struct cs_out *o, int64_t t_ns,
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
		bus_can_socket_state_event(dev, o, t, CAN_STATE_BUS_OFF, ACQ_EV_CAN_BUS_OFF, rx, tx);
	if (cls & CAN_ERR_CRTL) {
		if (ctrl & (CAN_ERR_CRTL_RX_PASSIVE | CAN_ERR_CRTL_TX_PASSIVE))
			bus_can_socket_state_event(dev, o, t, CAN_STATE_ERROR_PASSIVE,
			               ACQ_EV_CAN_ERROR_PASSIVE, rx, tx);
		else if (ctrl & (CAN_ERR_CRTL_RX_WARNING | CAN_ERR_CRTL_TX_WARNING))
			bus_can_socket_state_event(dev, o, t, CAN_STATE_ERROR_WARNING,
			               ACQ_EV_CAN_ERROR_WARNING, rx, tx);
		else if (ctrl & CAN_ERR_CRTL_ACTIVE)
			bus_can_socket_state_event(dev, o, t, CAN_STATE_ERROR_ACTIVE,
			               ACQ_EV_CAN_ERROR_ACTIVE, rx, tx);
		if (ctrl & (CAN_ERR_CRTL_RX_OVERFLOW | CAN_ERR_CRTL_TX_OVERFLOW))
			cs_event(o, dev->cfg.index, t, ACQ_EV_CAN_RX_OVERFLOW, 0, CS_OVFL_CONTROLLER);
	}
	if (cls & CAN_ERR_RESTARTED)
		bus_can_socket_state_event(dev, o, t, CAN_STATE_ERROR_ACTIVE, ACQ_EV_CAN_RESTARTED, rx, tx);
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
		bus_can_socket_drops(dev, o, ovfl, frame.t_ns);
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

int bus_can_socket_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
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
