/* SPDX-License-Identifier: MIT */
/*
 * modbus-link.c - the Modbus driver's link (modbus.c says the whole
 * driver): down, backoff with jitter and up again, and what a TCP and an
 * RTU transaction share (an errno as an outcome, a request framed and
 * sent, a reply's verdict).
 *
 * Reconnect: a link that fails is closed and retried from recv, forever,
 * with exponential backoff (MB_BACKOFF_MIN_NS doubling to MB_BACKOFF_MAX_NS)
 * and jitter (a uniform draw from the upper half of the step), one attempt
 * per due group at most; TCP connects are non-blocking and bounded by the
 * response timeout inside libmodbus, so a dead peer never stalls the
 * thread longer than one attempt.  DISCONNECT is emitted when the link goes
 * down (or first fails), CONNECT (arg = attempts, detail = the ms from the
 * watch's sign of the tty's return to the connect, ACQ_BLIND_UNKNOWN when
 * no return was seen: the first connect, TCP, a timed retry) when it
 * comes back.
 * An RTU tty that is not there at all is not retried on those steps: its
 * path is watched (dev-watch.c) and the connect follows its return at
 * the next due group; a slow timed retry stays as a safety net.
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

static uint64_t rng_next(struct mb_priv *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

/* ---- link state ---- */

void bus_mb_link_down(bus_dev_t *dev, int err)
{
	struct mb_priv *p = dev->priv;
	int64_t now = basic_now_ns(CLOCK_MONOTONIC);
	int64_t jitter;

	if (p->connected)
		modbus_close(p->ctx);
	p->connected = false;
	if (!p->down_reported) {
		event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_DISCONNECT, -(int64_t)err, 0);
		p->down_reported = true;
		p->backoff_ns = MB_BACKOFF_MIN_NS;
	}
	if (p->watch && p->watch->fd >= 0 && (err == ENOENT || err == ENODEV || err == ENXIO)) {
		/* No tty at the path: its return is watched (a sign is looked
		   for at each due group, bus_mb_link_ensure); the timed retry
		   is only a safety net, at the longest step, and the backoff
		   does not grow for a device that is not there. */
		p->absent = true;
		p->sign_ns = 0; /* not there: the blind time starts at the next sign */
		jitter = (int64_t)(rng_next(p) % (uint64_t)(MB_BACKOFF_MAX_NS / 2 + 1));
		p->retry_at_ns = now + MB_BACKOFF_MAX_NS / 2 + jitter;
		return;
	}
	if (p->absent) /* there again but failing: its own steps, from the start */
		p->backoff_ns = MB_BACKOFF_MIN_NS;
	p->absent = false;
	/* Jitter over the upper half of the step spreads the reconnects of many
	   boards after a switch reboot. */
	jitter = (int64_t)(rng_next(p) % (uint64_t)(p->backoff_ns / 2 + 1));
	p->retry_at_ns = now + p->backoff_ns / 2 + jitter;
	p->backoff_ns = p->backoff_ns * 2 > MB_BACKOFF_MAX_NS ? MB_BACKOFF_MAX_NS : p->backoff_ns * 2;
}

/* Whether a reconnect is due: the tty of an absent RTU device was seen
   coming back (looked at without waiting: the poll groups' schedule paces
   the thread), or the time has come.  The watch first: a return seen in
   the same group as a timed retry is still the start of the blind time. */
static bool link_due(struct mb_priv *p)
{
	if (p->absent && p->watch && bus_path_watch_wait(p->watch, 0) > 0) {
		if (!p->sign_ns)
			p->sign_ns = basic_now_ns(CLOCK_MONOTONIC);
		return true;
	}
	return basic_now_ns(CLOCK_MONOTONIC) >= p->retry_at_ns;
}

/* CONNECT's detail: ms from the sign of the tty's return to now. */
static uint32_t link_blind_ms(const struct mb_priv *p)
{
	int64_t ms;

	if (!p->sign_ns)
		return ACQ_BLIND_UNKNOWN;
	ms = (basic_now_ns(CLOCK_MONOTONIC) - p->sign_ns) / MB_NS_PER_MS;
	return ms < ACQ_BLIND_UNKNOWN ? (uint32_t)ms : ACQ_BLIND_UNKNOWN - 1;
}

static int link_open(struct mb_priv *p)
{
	/* tcp_receive shortens it per read; a connect gets the whole one */
	if (p->tcp && modbus_set_response_timeout(p->ctx, (uint32_t)(p->resp_ns / 1000000000LL),
	                                          (uint32_t)(p->resp_ns % 1000000000LL / 1000)) < 0)
		return -errno;
	if (modbus_connect(p->ctx) < 0)
		return errno ? -errno : -ECONNREFUSED;
	if (p->rs485 && modbus_rtu_set_serial_mode(p->ctx, MODBUS_RTU_RS485) < 0) {
		int r = errno ? -errno : -ENOTTY;

		modbus_close(p->ctx);
		return r;
	}
	return 0;
}

/* Returns true when the link is up (possibly just reconnected). */
bool bus_mb_link_ensure(bus_dev_t *dev)
{
	struct mb_priv *p = dev->priv;
	int r;

	if (p->connected)
		return true;
	if (!link_due(p))
		return false;
	p->attempts++;
	r = link_open(p);
	if (r < 0) {
		bus_mb_link_down(dev, -r);
		return false;
	}
	p->connected = true;
	p->absent = false;
	/* Names made while it is there are no sign of a return. */
	if (p->watch)
		bus_path_watch_flush(p->watch);
	event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_CONNECT, p->attempts, link_blind_ms(p));
	p->sign_ns = 0;
	p->down_reported = false;
	p->attempts = 0;
	p->backoff_ns = MB_BACKOFF_MIN_NS;
	return true;
}

/* ---- one transaction ---- */

enum mb_outcome bus_mb_classify_errno(int err, struct mb_result *res)
{
	if (err == ETIMEDOUT)
		return MB_TIMEOUT;
	if (err == EMBBADCRC)
		return MB_CRC;
	if (err >= EMBXILFUN && err <= EMBXGTAR) {
		res->detail = (uint8_t)(err - MODBUS_ENOBASE);
		return MB_EXCEPTION;
	}
	if (err == EMBBADDATA || err == EMBBADSLAVE || err == EMBBADEXC || err == EMBMDATA) {
		res->detail = BUS_MB_REPLY_BAD_LENGTH;
		return MB_BAD;
	}
	res->err = err ? err : EIO;
	return MB_DOWN;
}

int bus_mb_request_send(struct mb_priv *p, const struct bus_mb_expect *exp, uint16_t addr)
{
	uint8_t buf[BUS_MB_ADU_MAX];
	int n = bus_mb_request_build(exp, addr, buf, sizeof(buf));

	if (n < 0)
		return n;
	if (p->tcp) {
		ssize_t w = send(modbus_get_socket(p->ctx), buf, (size_t)n, MSG_NOSIGNAL);

		if (w == n)
			return 0;
		return w < 0 ? -errno : -EIO;
	}
	if (modbus_set_slave(p->ctx, exp->unit_id) < 0 || modbus_send_raw_request(p->ctx, buf, n) < 0)
		return -errno;
	return 0;
}

/* The outcome a checked reply gives its request. */
void bus_mb_verdict_outcome(struct mb_result *res)
{
	if (res->reply.verdict == BUS_MB_REPLY_OK) {
		res->outcome = MB_OK;
	} else if (res->reply.verdict == BUS_MB_REPLY_EXCEPTION) {
		res->outcome = MB_EXCEPTION;
		res->detail = res->reply.exception;
	} else {
		res->outcome = MB_BAD;
		res->detail = (uint8_t)res->reply.verdict;
	}
}

/* libmodbus waits a whole response timeout per call: give it what is left
   of the request's.  false: nothing is left. */
