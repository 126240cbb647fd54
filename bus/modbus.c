/* SPDX-License-Identifier: MIT */
/*
 * modbus.c - Modbus TCP / RTU poll driver over libmodbus (bus_modbus_ops):
 * its pacing, the poll groups, open and close.  One transaction is
 * modbus-tcp.c's or modbus-rtu.c's, the link modbus-link.c's.
 *
 * Threading: one device = one link = one poll thread, the caller's.  The
 * caller (the acquisition runtime, or a test) makes that thread SCHED_FIFO
 * and calls bus_dev_recv() in a loop; recv paces itself:
 *
 *   - every poll group (regmap.h: one unit, table and period) has an
 *     absolute CLOCK_MONOTONIC deadline;
 *   - recv sleeps with clock_nanosleep(TIMER_ABSTIME) until the earliest
 *     deadline (at most timeout_ms), records actual wake - deadline into
 *     the device's struct acq_latency (only when it really slept: a group
 *     that was already due measures transaction time, not wakeup latency);
 *   - a group found more than one period late skips the missed periods
 *     (never bursts to catch up), counts them as overruns and emits
 *     ACQ_EV_MB_OVERRUN;
 *   - each transaction that got a reply records request -> reply into a
 *     second histogram (bus_dev_transaction), so a slow device and a late
 *     thread tell apart;
 *   - it runs that one group's merged requests and returns its samples
 *     (t_ns = CLOCK_REALTIME just before the request went out) and fault
 *     events.  Items that do not fit into max wait in a buffer allocated at
 *     open and are returned by the next calls before anything else runs.
 *
 * Only function codes 1-4 are ever built (bus_mb_request_build refuses
 * others); nothing else is sent.
 *
 * Transactions: libmodbus connects, sets up the serial line / RS-485 and
 * sends.  Requests are framed here because libmodbus 3.1.6 hides the TCP
 * transaction id of its typed reads and sends raw requests with id 0.
 * Every reply is checked completely (bus_mb_reply_check) before a single
 * value is decoded; a value is only ever taken from the reply that can be
 * nothing but the answer to the request in flight.  How a TCP reply is
 * told from a late one by its transaction id is modbus-tcp.c's; how an RTU
 * line, which has no id, is read with what each unit still owes in mind
 * (late replies, drains, probes) is modbus-rtu.c's.
 *
 * Faults, each one event, never a value from the reply concerned
 * (arg = first register of the request, detail = unit << 8 | x; an RTU
 * probe's fault is reported for the request it went ahead of):
 *   no reply, or a reply cut by the byte
 *   timeout                                ACQ_EV_MB_TIMEOUT,   x = function
 *   bad RTU CRC                            ACQ_EV_MB_CRC,       x = function
 *   exception response                     ACQ_EV_MB_EXCEPTION, x = exception code
 *   wrong unit, function, length, protocol,
 *   RTU bytes that cannot be framed, too
 *   many stale replies, EMBBAD*            ACQ_EV_MB_BAD_REPLY, x = function,
 *                                          bits 16..23 = enum bus_mb_verdict
 *   anything else (ECONNRESET, EPIPE, ...) ACQ_EV_MB_DISCONNECT, arg = -errno
 * Besides (RTU), not faults of the request: ACQ_EV_MB_LATE_REPLY for each
 * late reply recognised (arg = ms after its request, or until it was read
 * if it waited unread; detail = bytes << 16 | unit << 8 | its function),
 * ACQ_EV_MB_DISCARDED (arg = bytes, detail = complete frames) once per
 * transaction that threw bytes away, the faulty reply's own included.
 * A unit that timed out is not asked again at the same deadline (its other
 * requests and same-instant groups are skipped): a silent unit costs one
 * response timeout (RTU: and its drain) per period and the other units'
 * groups keep their schedule.
 *
 * Reconnect: a link that fails is closed and retried from recv, forever,
 * with exponential backoff (MB_BACKOFF_MIN_NS doubling to MB_BACKOFF_MAX_NS)
 * and jitter (a uniform draw from the upper half of the step), one attempt
 * per due group at most; TCP connects are non-blocking and bounded by the
 * response timeout inside libmodbus, so a dead peer never stalls the
 * thread longer than one attempt.  DISCONNECT is emitted when the link goes
 * down (or first fails), CONNECT (arg = attempts) when it comes back.
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

static void transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
{
	if (((struct mb_priv *)dev->priv)->tcp)
		bus_mb_tcp_transact(dev, req, res);
	else
		bus_mb_rtu_transact(dev, req, res);
}

/* ---- one group ---- */

/* A string channel's text, if it changed or is due again: no allocation,
   its last text is kept in the slot's mb_text. */
static void emit_text(struct mb_priv *p, const struct bus_mb_slot *s, struct mb_text *last, const uint8_t *data,
                      size_t len, int64_t t_ns)
{
	struct acq_item *it;
	char text[BUS_MB_STRING_REGS_MAX * 2];
	uint8_t n, q;

	_Static_assert(sizeof(text) <= ACQ_TEXT_MAX, "a string channel's text fits an item");
	if (bus_mb_decode_text(s->ch, data, len, s->offset, text, &n, &q) < 0)
		return;
	if (last->sent_ns && n == last->len && q == last->quality && !memcmp(text, last->text, n) &&
	    t_ns - last->sent_ns < p->text_refresh_ns)
		return;
	it = item_push(p, t_ns, ACQ_ITEM_TEXT);
	if (!it)
		return;
	it->text.channel = s->ch->id;
	it->text.quality = q;
	it->text.len = n;
	memcpy(it->text.text, text, n);
	last->sent_ns = t_ns;
	last->len = n;
	last->quality = q;
	memcpy(last->text, text, n);
}

static void emit_samples(struct mb_priv *p, const struct bus_mb_regmap *map,
                         const struct bus_mb_request *req, const struct mb_result *res, int64_t t_ns)
{
	const uint8_t *data = p->adu + res->reply.data_off;

	for (uint32_t i = 0; i < req->nslots; i++) {
		const struct bus_mb_slot *s = &map->slots[req->first_slot + i];
		struct acq_item *it;
		double v;
		uint32_t q;

		if (s->ch->type == BUS_MB_STRING) {
			emit_text(p, s, &p->texts[req->first_slot + i], data, res->reply.data_len, t_ns);
			continue;
		}
		if (bus_mb_decode(s->ch, data, res->reply.data_len, s->offset, &v, &q) < 0)
			continue;
		it = item_push(p, t_ns, ACQ_ITEM_SAMPLE);
		if (!it)
			return;
		it->sample.channel = s->ch->id;
		it->sample.value = v;
		it->sample.quality = q;
	}
}

static void emit_fault(struct mb_priv *p, const struct bus_mb_request *req, const struct mb_result *res,
                       int64_t t_ns)
{
	uint32_t unit = (uint32_t)req->unit_id << 8;

	switch (res->outcome) {
	case MB_TIMEOUT:
		event_push(p, t_ns, ACQ_EV_MB_TIMEOUT, req->addr, unit | req->table);
		break;
	case MB_CRC:
		event_push(p, t_ns, ACQ_EV_MB_CRC, req->addr, unit | req->table);
		break;
	case MB_EXCEPTION:
		event_push(p, t_ns, ACQ_EV_MB_EXCEPTION, req->addr, unit | res->detail);
		break;
	case MB_BAD:
		event_push(p, t_ns, ACQ_EV_MB_BAD_REPLY, req->addr,
		           (uint32_t)res->detail << 16 | unit | req->table);
		break;
	default:
		break;
	}
}

static void group_run(bus_dev_t *dev, uint32_t gi, int64_t deadline)
{
	struct mb_priv *p = dev->priv;
	const struct bus_mb_group *g = &p->map->groups[gi];
	struct mb_result res;

	if (p->dead_at[g->unit_id] == deadline || !bus_mb_link_ensure(dev))
		return;
	for (uint32_t i = 0; i < g->nreqs; i++) {
		const struct bus_mb_request *req = &p->map->reqs[g->first_req + i];
		int64_t t0 = basic_now_ns(CLOCK_MONOTONIC);

		transact(dev, req, &res);
		/* Apart from the wakeups: a period that overran because the
		   device answered slowly shows here, not as a late thread. */
		if (res.outcome != MB_TIMEOUT && res.outcome != MB_DOWN)
			acq_latency_add(&p->txn, basic_now_ns(CLOCK_MONOTONIC) - t0);
		if (res.outcome == MB_OK) {
			bus_stat_add(&dev->stats.rx_frames, 1);
			emit_samples(p, p->map, req, &res, res.t_ns);
			continue;
		}
		bus_stat_add(&dev->stats.rx_errors, 1);
		if (res.outcome == MB_DOWN) {
			bus_mb_link_down(dev, res.err);
			return;
		}
		if (res.outcome == MB_BAD)
			bus_stat_add(&dev->stats.bad_input, 1);
		emit_fault(p, req, &res, res.t_ns);
		/* A late reply must never answer the next request (RTU: the
		   line was drained, every byte accounted for). */
		if (p->tcp)
			modbus_flush(p->ctx);
		if (res.outcome == MB_TIMEOUT) {
			p->dead_at[g->unit_id] = deadline;
			return;
		}
	}
}

/* ---- pacing ---- */

static uint32_t group_earliest(const struct mb_priv *p)
{
	uint32_t best = 0;

	for (uint32_t i = 1; i < p->map->ngroups; i++)
		if (p->next_ns[i] < p->next_ns[best])
			best = i;
	return best;
}

/* Move group gi's deadline past now; returns the periods it missed. */
static int64_t group_advance(struct mb_priv *p, uint32_t gi, int64_t now)
{
	int64_t period = (int64_t)p->map->groups[gi].period_ms * MB_NS_PER_MS;
	int64_t deadline = p->next_ns[gi];
	int64_t missed = 0;

	if (now - deadline >= period)
		missed = (now - deadline) / period;
	p->next_ns[gi] = deadline + (missed + 1) * period;
	return missed;
}

static size_t pending_drain(struct mb_priv *p, struct acq_item *items, size_t max)
{
	size_t n = p->npending - p->pending_pos;

	if (n > max)
		n = max;
	memcpy(items, p->pending + p->pending_pos, n * sizeof(*items));
	p->pending_pos += n;
	if (p->pending_pos == p->npending)
		p->npending = p->pending_pos = 0;
	return n;
}

static int mb_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct mb_priv *p = dev->priv;
	int64_t now, deadline, missed;
	uint32_t gi;

	if (p->npending)
		return (int)pending_drain(p, items, max);
	now = basic_now_ns(CLOCK_MONOTONIC);
	gi = group_earliest(p);
	deadline = p->next_ns[gi];
	if (timeout_ms >= 0 && deadline > now + timeout_ms * MB_NS_PER_MS) {
		basic_sleep_until(CLOCK_MONOTONIC, now + timeout_ms * MB_NS_PER_MS);
		return 0;
	}
	if (deadline > now) {
		basic_sleep_until(CLOCK_MONOTONIC, deadline);
		now = basic_now_ns(CLOCK_MONOTONIC);
		acq_latency_add(&p->lat, now - deadline);
	}
	missed = group_advance(p, gi, now);
	if (missed) {
		acq_latency_overrun(&p->lat, (uint64_t)missed);
		event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_OVERRUN, missed,
		           (uint32_t)p->map->groups[gi].unit_id << 8 | p->map->groups[gi].table);
	}
	group_run(dev, gi, deadline);
	return (int)pending_drain(p, items, max);
}

/* ---- open / close ---- */

static int cfg_check(const struct bus_mb_cfg *c)
{
	struct in_addr a;

	if (!c->channels || !c->nchannels || c->response_timeout_ms == 0)
		return -EINVAL;
	if (!c->rtu)
		return inet_pton(AF_INET, c->host, &a) == 1 && c->port ? 0 : -EINVAL;
	if (!c->device[0] || !c->baud || (c->parity != 'N' && c->parity != 'E' && c->parity != 'O'))
		return -EINVAL;
	if (c->data_bits < 5 || c->data_bits > 8 || c->stop_bits < 1 || c->stop_bits > 2)
		return -EINVAL;
	/* Unit 0 is the broadcast address: no slave ever answers it. */
	for (size_t i = 0; i < c->nchannels; i++)
		if (!c->channels[i].unit_id)
			return -EINVAL;
	return 0;
}

/* Inter-frame gap of the line: the byte timeout, at least the 3.5
   characters (of 11 bits) of the spec, which fixes 1.75 ms above 19200
   baud. */
static int64_t rtu_gap_ns(const struct bus_mb_cfg *c)
{
	int64_t t35 = c->baud > 19200 ? 1750000 : 38500000000LL / c->baud;
	int64_t byte_ns = (int64_t)c->byte_timeout_ms * MB_NS_PER_MS;

	return byte_ns > t35 ? byte_ns : t35;
}

static int ctx_new(const struct bus_mb_cfg *c, modbus_t **ret_ctx)
{
	modbus_t *ctx;

	if (c->rtu)
		ctx = modbus_new_rtu(c->device, (int)c->baud, c->parity, c->data_bits, c->stop_bits);
	else
		ctx = modbus_new_tcp(c->host, c->port);
	if (!ctx)
		return errno ? -errno : -ENOMEM;
	if (modbus_set_response_timeout(ctx, c->response_timeout_ms / 1000,
	                                (c->response_timeout_ms % 1000) * 1000) < 0 ||
	    modbus_set_byte_timeout(ctx, c->byte_timeout_ms / 1000, (c->byte_timeout_ms % 1000) * 1000) < 0) {
		modbus_free(ctx);
		return -EINVAL;
	}
	*ret_ctx = ctx;
	return 0;
}

static size_t pending_size(const struct bus_mb_regmap *map)
{
	size_t worst = 0;

	for (size_t i = 0; i < map->ngroups; i++) {
		size_t n = (size_t)map->groups[i].nslots + (size_t)map->groups[i].nreqs * MB_EVENTS_PER_REQ;

		if (n > worst)
			worst = n;
	}
	return worst + MB_ITEMS_EXTRA;
}

static bool has_text(const struct bus_mb_cfg *c)
{
	for (size_t i = 0; i < c->nchannels; i++)
		if (c->channels[i].type == BUS_MB_STRING)
			return true;
	return false;
}

static void mb_close(bus_dev_t *dev)
{
	struct mb_priv *p = dev->priv;

	if (!p)
		return;
	if (p->ctx) {
		if (p->connected)
			modbus_close(p->ctx);
		modbus_free(p->ctx);
	}
	bus_mb_regmap_free(p->map);
	if (p->watch)
		bus_path_watch_done(p->watch);
	free(p->watch);
	free(p->texts);
	free(p->next_ns);
	free(p->pending);
	free(p->rtu);
	free(p);
	dev->priv = NULL;
}

static int mb_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_mb_cfg *c = &cfg->mb;
	struct mb_priv *p;
	int64_t now = basic_now_ns(CLOCK_MONOTONIC);
	int r = cfg_check(c);

	if (r < 0)
		return r;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	dev->priv = p;
	r = bus_mb_regmap_new(c->channels, c->nchannels, c->max_gap, &p->map);
	if (r >= 0)
		r = ctx_new(c, &p->ctx);
	if (r < 0)
		goto fail;
	p->pending_cap = pending_size(p->map);
	p->pending = calloc(p->pending_cap, sizeof(*p->pending));
	p->next_ns = calloc(p->map->ngroups, sizeof(*p->next_ns));
	p->rtu = c->rtu ? calloc(1, sizeof(*p->rtu)) : NULL;
	p->texts = has_text(c) ? calloc(p->map->nslots, sizeof(*p->texts)) : NULL;
	p->text_refresh_ns = c->text_refresh_ms ? (int64_t)c->text_refresh_ms * MB_NS_PER_MS : MB_TEXT_REFRESH_NS;
	if (!p->pending || !p->next_ns || (c->rtu && !p->rtu) || (has_text(c) && !p->texts)) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->map->ngroups; i++)
		p->next_ns[i] = now;
	for (size_t i = 0; i < 256; i++)
		p->dead_at[i] = -1;
	p->tcp = !c->rtu;
	p->rs485 = c->rtu && c->rs485;
	p->resp_ns = (int64_t)c->response_timeout_ms * MB_NS_PER_MS;
	if (p->rtu)
		p->rtu->gap_ns = rtu_gap_ns(c);
	/* RTU: the tty's return is watched, not polled (dev-watch.c); without
	   inotify the timed retries alone reconnect it. */
	if (c->rtu) {
		p->watch = malloc(sizeof(*p->watch));
		if (!p->watch) {
			r = -ENOMEM;
			goto fail;
		}
		if (bus_path_watch_init(p->watch, c->device) < 0)
			p->watch->fd = -1;
	}
	p->bus = cfg->index;
	p->rng = (uint64_t)basic_now_ns(CLOCK_REALTIME) | 1;
	return 0;
fail:
	mb_close(dev);
	return r;
}

static const struct acq_latency *mb_latency(const bus_dev_t *dev)
{
	const struct mb_priv *p = dev->priv;

	return &p->lat;
}

static const struct acq_latency *mb_transaction(const bus_dev_t *dev)
{
	const struct mb_priv *p = dev->priv;

	return &p->txn;
}

const struct bus_ops bus_modbus_ops = {
	.name = "modbus",
	.open = mb_open,
	.recv = mb_recv,
	.close = mb_close,
	.latency = mb_latency,
	.transaction = mb_transaction,
};
