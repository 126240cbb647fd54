/* SPDX-License-Identifier: MIT */
/*
 * modbus-tcp.c - one Modbus TCP transaction of the driver (modbus.c says
 * the whole driver).
 *
 * TCP: libmodbus frames the replies (modbus_receive_confirmation).  A
 * reply carrying another transaction's id is a late reply (libmodbus issue
 * 255): dropped and the next one read, within the one response timeout of
 * the request, so a late reply costs its own transaction (a timeout) and
 * never the next one.  Before each request the socket is flushed
 * (non-blocking).
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

static bool tcp_timeout_left(struct mb_priv *p, int64_t end_ns)
{
	int64_t left = end_ns - basic_now_ns(CLOCK_MONOTONIC);

	if (left < 1000)
		return false;
	return modbus_set_response_timeout(p->ctx, (uint32_t)(left / 1000000000LL),
	                                   (uint32_t)(left % 1000000000LL / 1000)) == 0;
}

/* Read replies until the one for exp turns up, a fault, or too many stale;
   all within one response timeout from now. */
static void tcp_receive(struct mb_priv *p, bus_dev_t *dev, const struct bus_mb_expect *exp,
                        struct mb_result *res)
{
	int64_t end = basic_now_ns(CLOCK_MONOTONIC) + p->resp_ns;

	for (int i = 0; i < MB_STALE_MAX; i++) {
		int n;

		if (!tcp_timeout_left(p, end)) {
			res->outcome = MB_TIMEOUT;
			return;
		}
		n = modbus_receive_confirmation(p->ctx, p->adu);
		if (n < 0) {
			res->outcome = bus_mb_classify_errno(errno, res);
			return;
		}
		if (bus_mb_reply_check(exp, p->adu, (size_t)n, &res->reply) < 0) {
			res->outcome = MB_BAD;
			return;
		}
		if (res->reply.verdict == BUS_MB_REPLY_STALE) {
			bus_stat_add(&dev->stats.bad_input, 1);
			continue;
		}
		bus_mb_verdict_outcome(res);
		return;
	}
	res->outcome = MB_BAD;
	res->detail = BUS_MB_REPLY_STALE;
}

void bus_mb_tcp_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
{
	struct mb_priv *p = dev->priv;
	struct bus_mb_expect exp = { .tcp = 1, .tid = ++p->tid, .unit_id = req->unit_id,
	                             .function = req->table, .count = req->count };
	int r;

	memset(res, 0, sizeof(*res));
	/* Whatever is waiting now is unsolicited (the tail of a reply that
	   hit the byte timeout): one non-blocking recv. */
	modbus_flush(p->ctx);
	res->t_ns = basic_now_ns(CLOCK_REALTIME);
	r = bus_mb_request_send(p, &exp, req->addr);
	bus_stat_add(&dev->stats.tx_frames, 1);
	if (r < 0) {
		res->outcome = MB_DOWN;
		res->err = -r;
		return;
	}
	tcp_receive(p, dev, &exp, res);
}

