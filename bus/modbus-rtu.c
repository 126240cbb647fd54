/* SPDX-License-Identifier: MIT */
/*
 * modbus-rtu.c - one Modbus RTU transaction of the driver (modbus.c says
 * the whole driver): the serial line read here, with what each unit
 * still owes in mind.
 *
 * Transactions: libmodbus connects, sets up the serial line / RS-485 and
 * sends.  Requests are framed here because libmodbus 3.1.6 hides the TCP
 * transaction id of its typed reads and sends raw requests with id 0.
 * Every reply is checked completely (bus_mb_reply_check) before a single
 * value is decoded; a value is only ever taken from the reply that can be
 * nothing but the answer to the request in flight.
 *
 * RTU has no transaction id, and a late reply from the same unit with the
 * same function and byte count (another start address) looks exactly like
 * the answer to the next request.  So the serial line is read here, not by
 * libmodbus, with what each unit still owes in mind:
 *   - replies are framed by function code and byte count, the CRC checked
 *     (bus_mb_rtu_frame_len, bus_mb_crc16); the reply window is the response
 *     timeout from the request, the byte timeout between bytes;
 *   - a request that got no answer it can be sure of (timeout, cut reply,
 *     bad CRC, another unit's frame, a reply that fits nothing while older
 *     ones are owed) is remembered as owed by its unit: function, byte
 *     count, when it was sent (MB_OWED_MAX per unit, the oldest forgotten);
 *   - a frame that fits something its unit owes is that late reply, since
 *     a slave answers in order: it settles that request and every older one,
 *     is thrown away (ACQ_EV_MB_LATE_REPLY), and the wait goes on for the
 *     real answer; its lateness teaches how long that unit can take;
 *   - after any such fault the thread drains the line: it reads and throws
 *     away everything until the line has been quiet for the byte timeout
 *     (at least the 3.5 characters of the spec) and the unit's horizon has
 *     passed: twice the response timeout, or 1.5 times the latest reply
 *     seen from that unit, at most MB_HORIZON_MAX response timeouts, so one
 *     deaf unit costs the line a bounded time per period.  Bytes found
 *     waiting before a request are read the same way first, so a request
 *     never goes out while a slave is talking;
 *   - a request whose reply would have the same shape as one its unit still
 *     owes is never sent as it is: a probe goes first, a one-item read of
 *     another table at the same address (of a function the unit owes
 *     nothing of, so any answer, even an exception, is the probe's own;
 *     failing that, a read of another size), and only its answer (it shows
 *     the unit has caught up) lets the request go out; if the probe fails,
 *     its fault is reported for the request, which waits for the next
 *     period.  What a unit owes is forgotten after MB_OWED_LIFE horizons
 *     (at least a second), so a unit that never answers a probe is read
 *     again then;
 *   - bytes that answer nothing (noise, cut replies, unasked frames) are
 *     counted into one ACQ_EV_MB_DISCARDED per transaction.
 * What remains is a slave that answers out of order and later than the
 * horizon, or in order but later than MB_OWED_LIFE horizons: no RTU master
 * can tell those apart, the time bounds are the defence.
 *
 */
#include <arpa/inet.h>
#include <errno.h>
#include <modbus.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>


#include "modbus-private.h"
#include "basic/clock.h"
#include "basic/byteorder.h"

/* ---- RTU: the serial line ---- */

/*
 * Wait until the line has a byte or until_ns passes: 1, 0, or -errno.
 * *ret_ready (may be NULL): the byte was there before the wait (it came
 * while nobody listened, so when it came is not known).
 */
static int line_wait(int fd, int64_t until_ns, bool *ret_ready)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r = ret_ready ? poll(&pfd, 1, 0) : 0;

	if (ret_ready)
		*ret_ready = r > 0;
	while (r == 0 || (r < 0 && errno == EINTR)) {
		int64_t left = until_ns - basic_now_ns(CLOCK_MONOTONIC);
		struct timespec ts = { .tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL };

		if (left <= 0)
			return 0;
		r = ppoll(&pfd, 1, &ts, NULL);
	}
	return r < 0 ? -errno : 1;
}

/* Bytes read (> 0), 0 for none after all, or -errno.  libmodbus opens the
   tty non-blocking with VMIN = VTIME = 0: after poll() said readable, 0
   bytes means it hung up (a pty whose other side closed, an unplugged USB
   adapter), as libmodbus itself treats it. */
static int line_read(int fd, uint8_t *buf, size_t n)
{
	ssize_t r = read(fd, buf, n);

	if (r > 0)
		return (int)r;
	if (r == 0)
		return -ECONNRESET;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}

/* The frame's CRC (its last two bytes, low byte first) is right. */
static bool frame_crc_ok(const uint8_t *b, size_t len)
{
	return basic_get_le16(b + len - 2) == bus_mb_crc16(b, len - 2);
}

/*
 * Read one frame into rtu->frame: its first byte by first_by, each next one
 * within the inter-byte gap, as long as its function code and byte count
 * say.  Bytes that cannot be framed are read until the line pauses (or the
 * buffer is full).  Returns enum rtu_rx or -errno.
 */
static int rtu_read(struct mb_priv *p, int64_t first_by, struct rtu_frame *f)
{
	struct mb_rtu *l = p->rtu;
	int fd = modbus_get_socket(p->ctx), r;
	size_t want = 2;
	int64_t by = first_by;
	bool noise = false, ready;

	f->len = 0;
	/* only the first byte's wait needs to know whether it was there */
	while ((r = line_wait(fd, by, f->len ? NULL : &ready)) > 0) {
		r = line_read(fd, l->frame + f->len, want - f->len);
		if (r <= 0) {
			if (r < 0)
				return r;
			continue;
		}
		if (!f->len) {
			f->first_ns = basic_now_ns(CLOCK_MONOTONIC);
			f->waiting = ready;
		}
		f->len += (size_t)r;
		if (f->len == want) {
			if (noise)
				break;
			r = bus_mb_rtu_frame_len(l->frame, f->len);
			if (r < 0)
				noise = true, want = sizeof(l->frame);
			else if ((size_t)r == f->len)
				break;
			else
				want = (size_t)r;
		}
		by = basic_now_ns(CLOCK_MONOTONIC) + l->gap_ns;
	}
	if (r < 0)
		return r;
	if (!f->len)
		return RX_NONE;
	if (noise)
		return RX_NOISE;
	if (f->len < want)
		return RX_CUT;
	return frame_crc_ok(l->frame, f->len) ? RX_FRAME : RX_BADCRC;
}

/*
 * The oldest request u owes whose reply has function fc and carries bytes
 * data bytes: a slave answers in order, so a frame of that shape answers
 * that one.  bytes = -1: any request of function fc.  -1: none.
 */
static int owed_find(const struct mb_unit *u, uint8_t fc, int bytes)
{
	for (int i = 0; i < u->nowed; i++)
		if (u->owed[i].fc == fc && (bytes < 0 || u->owed[i].bytes == bytes))
			return i;
	return -1;
}

/* Request i was answered: it and every older one are settled. */
static void owed_settle(struct mb_unit *u, int i)
{
	memmove(u->owed, u->owed + i + 1, (size_t)(u->nowed - i - 1) * sizeof(*u->owed));
	u->nowed = (uint8_t)(u->nowed - i - 1);
}

/* Forget what u owes since before oldest_ns. */
static void owed_expire(struct mb_unit *u, int64_t oldest_ns)
{
	int i = -1;

	while (i + 1 < u->nowed && u->owed[i + 1].sent_ns < oldest_ns)
		i++;
	if (i >= 0)
		owed_settle(u, i);
}

static void owed_add(struct mb_unit *u, uint8_t fc, uint8_t bytes, int64_t sent_ns)
{
	/* Bounded: a reply later than MB_OWED_MAX failed requests to the same
	   unit is taken as never coming. */
	if (u->nowed == MB_OWED_MAX)
		owed_settle(u, 0);
	u->owed[u->nowed++] = (struct mb_owed){ .sent_ns = sent_ns, .fc = fc, .bytes = bytes };
}

static void discard(bus_dev_t *dev, size_t bytes, bool frame)
{
	struct mb_rtu *l = ((struct mb_priv *)dev->priv)->rtu;

	l->disc_bytes += bytes;
	l->disc_frames += frame;
	bus_stat_add(&dev->stats.bad_input, 1);
}

/*
 * A complete frame that is not the answer to the request in flight: if it
 * fits something its unit owes, it is that late reply.  It settles what it
 * answers, teaches how late the unit can be, and is thrown away and
 * reported.  Returns false when it answers nothing owed.  An exception
 * fits any request of its function, so it never settles anything.
 */
static bool late_reply(bus_dev_t *dev, const struct rtu_frame *f)
{
	struct mb_priv *p = dev->priv;
	struct mb_rtu *l = p->rtu;
	const uint8_t *b = l->frame;
	struct mb_unit *u = &l->unit[b[0]];
	int i = b[1] & 0x80 ? -1 : owed_find(u, b[1], b[2]);
	int64_t late;

	if (i < 0)
		return false;
	late = f->first_ns - u->owed[i].sent_ns;
	if (!f->waiting && late > u->late_ns)
		u->late_ns = late;
	owed_settle(u, i);
	if (l->late_events++ >= MB_LATE_EVENTS) {
		discard(dev, f->len, true);
		return true;
	}
	bus_stat_add(&dev->stats.bad_input, 1);
	event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_LATE_REPLY, late / MB_NS_PER_MS,
	           (uint32_t)f->len << 16 | basic_get_be16(b));
	return true;
}

/*
 * Read and throw away everything until the line has been quiet for the
 * inter-frame gap and until_ns has passed; a line that never falls quiet
 * is given up after MB_HORIZON_MAX response timeouts (every reply is still
 * checked against what is owed).  0 or -errno.
 */
static int rtu_drain(bus_dev_t *dev, int64_t until_ns)
{
	struct mb_priv *p = dev->priv;
	struct mb_rtu *l = p->rtu;
	int64_t now = basic_now_ns(CLOCK_MONOTONIC), stop = now + MB_HORIZON_MAX * p->resp_ns;
	struct rtu_frame f;

	while (now < stop) {
		int64_t by = now + l->gap_ns > until_ns ? now + l->gap_ns : until_ns;
		int kind = rtu_read(p, by < stop ? by : stop, &f);

		if (kind < 0)
			return kind;
		if (kind == RX_NONE)
			return 0;
		if (kind != RX_FRAME || !late_reply(dev, &f))
			discard(dev, f.len, kind == RX_FRAME);
		now = basic_now_ns(CLOCK_MONOTONIC);
	}
	return 0;
}

/* How long after a request to u its reply may still come: twice the
   response timeout, or 1.5 times the latest reply seen from u, at most
   MB_HORIZON_MAX response timeouts. */
static int64_t unit_horizon(const struct mb_priv *p, const struct mb_unit *u)
{
	int64_t h = 2 * p->resp_ns, late = u->late_ns + u->late_ns / 2;

	if (late > h)
		h = late;
	return h < MB_HORIZON_MAX * p->resp_ns ? h : MB_HORIZON_MAX * p->resp_ns;
}

/* How long what u owes is remembered. */
static int64_t owed_life(const struct mb_priv *p, const struct mb_unit *u)
{
	int64_t life = MB_OWED_LIFE * unit_horizon(p, u);

	return life > MB_OWED_LIFE_MIN_NS ? life : MB_OWED_LIFE_MIN_NS;
}

/*
 * The first frame of the reply window that is no late reply, judged
 * against the request exp (res gets the outcome).  Returns true when it
 * settles the request: no other answer to it can come any more.
 */
static bool rtu_judge(struct mb_priv *p, const struct bus_mb_expect *exp, int kind,
                      const struct rtu_frame *f, struct mb_result *res)
{
	struct mb_unit *u = &p->rtu->unit[exp->unit_id];

	if (kind != RX_FRAME) {
		res->outcome = kind == RX_BADCRC ? MB_CRC : kind == RX_NOISE ? MB_BAD : MB_TIMEOUT;
		res->detail = BUS_MB_REPLY_BAD_LENGTH;
		return false;
	}
	if (bus_mb_reply_check(exp, p->rtu->frame, f->len, &res->reply) < 0) {
		res->outcome = MB_BAD; /* cannot happen: exp was built from the plan */
		return false;
	}
	bus_mb_verdict_outcome(res);
	/* An exception of our function is ours unless the unit owes an older
	   request of that function, which it could be answering (it is
	   reported for ours all the same: it carries no value). */
	if (res->outcome == MB_OK ||
	    (res->outcome == MB_EXCEPTION && owed_find(u, exp->function, -1) < 0)) {
		/* Its answer, which the unit only gives once it is past every
		   older request. */
		memcpy(p->adu, p->rtu->frame, f->len);
		u->nowed = 0;
		return true;
	}
	if (res->outcome == MB_EXCEPTION)
		return false;
	/* Another unit's frame leaves ours to come; one of ours that fits
	   nothing is our answer gone wrong, unless older ones are owed. */
	return res->reply.verdict != BUS_MB_REPLY_BAD_UNIT && !u->nowed;
}

/* One request and its reply window; after a fault the line is drained.
   Returns true when the unit answered it (see rtu_judge). */
static bool rtu_exchange(bus_dev_t *dev, const struct bus_mb_expect *exp, uint16_t addr,
                         struct mb_result *res)
{
	struct mb_priv *p = dev->priv;
	struct mb_unit *u = &p->rtu->unit[exp->unit_id];
	struct rtu_frame f;
	int64_t sent, t_ns = basic_now_ns(CLOCK_REALTIME);
	int kind = bus_mb_request_send(p, exp, addr);
	bool settled;

	memset(res, 0, sizeof(*res));
	res->t_ns = t_ns;
	bus_stat_add(&dev->stats.tx_frames, 1);
	sent = basic_now_ns(CLOCK_MONOTONIC);
	while (kind >= 0) {
		kind = rtu_read(p, sent + p->resp_ns, &f);
		/* An older request's answer: ours may still come. */
		if (kind != RX_FRAME || !late_reply(dev, &f))
			break;
	}
	if (kind < 0) {
		res->outcome = MB_DOWN;
		res->err = -kind;
		return false;
	}
	settled = rtu_judge(p, exp, kind, &f, res);
	if (kind != RX_NONE && res->outcome != MB_OK && res->outcome != MB_EXCEPTION) {
		/* counted once, as the request's fault, not as bad input too */
		p->rtu->disc_bytes += f.len;
		p->rtu->disc_frames += kind == RX_FRAME;
	}
	if (!settled)
		owed_add(u, exp->function, (uint8_t)bus_mb_reply_bytes(exp), sent);
	if (res->outcome == MB_OK || res->outcome == MB_EXCEPTION)
		return settled;
	/* After a timeout the answer (or the rest of it) may still be on its
	   way: listen up to the unit's horizon.  After a frame, until the
	   line pauses; what it owes is remembered either way. */
	kind = rtu_drain(dev, res->outcome == MB_TIMEOUT ? sent + unit_horizon(p, u) : 0);
	if (kind < 0) {
		res->outcome = MB_DOWN;
		res->err = -kind;
	}
	return settled && kind >= 0;
}

/*
 * A read at exp's address whose answer cannot be taken for anything u owes:
 * first another table, of a function u owes nothing of (then any answer,
 * even an exception, is the probe's own), the sibling one first; else
 * another size of the same table, smaller first (registers read anyway).
 * false: none (cannot happen while u owes at most MB_OWED_MAX).
 */
static bool probe_pick(const struct mb_unit *u, const struct bus_mb_expect *exp, uint16_t addr,
                       struct bus_mb_expect *ret_probe)
{
	static const uint8_t order[5][3] = { { 0 }, { 2, 3, 4 }, { 1, 3, 4 }, { 4, 1, 2 }, { 3, 1, 2 } };
	bool bits = exp->function == BUS_MB_COIL || exp->function == BUS_MB_DISCRETE;
	int step = bits ? 8 : 1, max = bits ? BUS_MB_BITS_MAX : BUS_MB_REGS_MAX;
	struct bus_mb_expect probe = *exp;

	for (int i = 0; i < 3; i++) {
		if (owed_find(u, order[exp->function][i], -1) < 0) {
			probe.function = order[exp->function][i];
			probe.count = 1;
			*ret_probe = probe;
			return true;
		}
	}
	for (int d = step; d < max; d += step) {
		for (int c = exp->count - d; c <= exp->count + d; c += 2 * d) {
			if (c < 1 || c > max || addr + c > 65536)
				continue;
			probe.count = (uint16_t)c;
			if (owed_find(u, exp->function, (int)bus_mb_reply_bytes(&probe)) < 0) {
				*ret_probe = probe;
				return true;
			}
		}
	}
	return false;
}

void bus_mb_rtu_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
{
	struct mb_priv *p = dev->priv;
	struct mb_rtu *l = p->rtu;
	struct mb_unit *u = &l->unit[req->unit_id];
	struct bus_mb_expect exp = { .unit_id = req->unit_id, .function = req->table, .count = req->count };
	struct bus_mb_expect probe;
	int r;

	memset(res, 0, sizeof(*res));
	res->t_ns = basic_now_ns(CLOCK_REALTIME);
	l->late_events = 0;
	/* Bytes waiting now came unasked (a late reply that came while the
	   thread slept, noise): read them and let the line fall quiet, so the
	   request never starts while a slave is still talking. */
	r = poll(&(struct pollfd){ .fd = modbus_get_socket(p->ctx), .events = POLLIN }, 1, 0);
	if (r < 0)
		r = errno == EINTR ? 0 : -errno;
	else if (r > 0)
		r = rtu_drain(dev, 0);
	/* A probe that cannot settle it (a unit that refuses reads of another
	   size) must not keep a request from going out for ever. */
	owed_expire(u, basic_now_ns(CLOCK_MONOTONIC) - owed_life(p, u));
	if (r < 0) {
		res->outcome = MB_DOWN;
		res->err = -r;
	} else if (owed_find(u, exp.function, (int)bus_mb_reply_bytes(&exp)) < 0) {
		rtu_exchange(dev, &exp, req->addr, res);
	} else if (!probe_pick(u, &exp, req->addr, &probe)) {
		res->outcome = MB_BAD;
		res->detail = BUS_MB_REPLY_STALE;
	} else if (rtu_exchange(dev, &probe, req->addr, res)) {
		/* u still owed a reply shaped like ours, which could not have
		   been told from ours; the probe's answer shows it has caught
		   up (the slave answers in order), so ours can go out. */
		rtu_exchange(dev, &exp, req->addr, res);
	}
	if (l->disc_bytes)
		event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_DISCARDED, (int64_t)l->disc_bytes,
		           (uint32_t)l->disc_frames);
	l->disc_bytes = l->disc_frames = 0;
}

