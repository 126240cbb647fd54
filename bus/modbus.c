/* SPDX-License-Identifier: MIT */
/*
 * modbus.c - Modbus TCP / RTU poll driver over libmodbus (bus_modbus_ops).
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
 *   - it runs that one group's merged requests and returns its samples
 *     (t_ns = CLOCK_REALTIME just before the request went out) and fault
 *     events.  Items that do not fit into max wait in a buffer allocated at
 *     open and are returned by the next calls before anything else runs.
 *
 * Only function codes 1-4 are ever built (bus_mb_request_build refuses
 * others); nothing else is sent.
 *
 * Transactions: libmodbus connects, sets up the serial line / RS-485,
 * enforces the response and byte timeouts, frames replies and checks the
 * RTU CRC (modbus_receive_confirmation).  Requests are framed here because
 * libmodbus 3.1.6 hides the TCP transaction id of its typed reads and sends
 * raw requests with id 0, and the id is what lets us resync after a late
 * reply (libmodbus issue 255): a reply carrying another transaction's id is
 * dropped and the next one read, so a late reply costs its own transaction
 * (a timeout) and never the next one.  Every reply is checked completely
 * (bus_mb_reply_check) before a single value is decoded.  Before each
 * request the link is flushed (non-blocking) so bytes that arrived
 * unasked - the tail of a reply cut by the byte timeout, an RTU late reply,
 * which has no id to tell it apart - never start the next reply.
 *
 * Faults, each one event, never a value from the reply concerned
 * (arg = first register of the request, detail = unit << 8 | x):
 *   ETIMEDOUT (response or byte timeout)   ACQ_EV_MB_TIMEOUT,   x = function
 *   EMBBADCRC                              ACQ_EV_MB_CRC,       x = function
 *   exception response                     ACQ_EV_MB_EXCEPTION, x = exception code
 *   wrong unit, function, length, protocol,
 *   too many stale replies, EMBBAD*        ACQ_EV_MB_BAD_REPLY, x = function,
 *                                          bits 16..23 = enum bus_mb_verdict
 *   anything else (ECONNRESET, EPIPE, ...) ACQ_EV_MB_DISCONNECT, arg = -errno
 * After every fault the link is flushed.  A unit that timed out is not
 * asked again at the same deadline (its other requests and same-instant
 * groups are skipped): a silent unit costs one response timeout per period
 * and the other units' groups keep their schedule.
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
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "acquisition/acq-latency.h"
#include "bus-private.h"
#include "regmap.h"

#define MB_NS_PER_MS 1000000LL
#define MB_BACKOFF_MIN_NS (50 * MB_NS_PER_MS)
#define MB_BACKOFF_MAX_NS (2000 * MB_NS_PER_MS)
#define MB_STALE_MAX 16  /* stale replies skipped per transaction: one per
                            earlier timeout still in flight, bounded */
#define MB_ITEMS_EXTRA 4 /* overrun, connect, disconnect per group run */

struct mb_priv {
	modbus_t *ctx;
	struct bus_mb_regmap *map;
	int64_t *next_ns;          /* per group: next deadline, CLOCK_MONOTONIC */
	int64_t dead_at[256];      /* per unit: deadline at which it timed out */
	struct acq_item *pending;  /* items of the last group run not yet returned */
	size_t npending, pending_pos, pending_cap;
	struct acq_latency lat;
	bool tcp;
	bool connected;
	bool down_reported;        /* DISCONNECT already emitted for this outage */
	bool rs485;
	unsigned attempts;         /* connect attempts in this outage */
	int64_t retry_at_ns;
	int64_t backoff_ns;
	uint64_t rng;              /* xorshift64 state for the backoff jitter */
	uint16_t tid;
	uint16_t bus;
	uint8_t adu[MODBUS_TCP_MAX_ADU_LENGTH];
};

enum mb_outcome { MB_OK, MB_TIMEOUT, MB_CRC, MB_EXCEPTION, MB_BAD, MB_DOWN };

struct mb_result {
	enum mb_outcome outcome;
	int err;                   /* MB_DOWN: positive errno */
	uint8_t detail;            /* MB_EXCEPTION: code, MB_BAD: verdict */
	struct bus_mb_reply reply;
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t t_ns)
{
	struct timespec ts = { .tv_sec = t_ns / 1000000000LL, .tv_nsec = t_ns % 1000000000LL };

	/* EINTR: go back to sleep, the deadline is absolute. */
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t rng_next(struct mb_priv *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

static struct acq_item *item_push(struct mb_priv *p, int64_t t_ns, enum acq_item_kind kind)
{
	struct acq_item *it;

	/* Cannot happen: pending_cap covers the largest group; guard anyway. */
	if (p->npending >= p->pending_cap)
		return NULL;
	it = &p->pending[p->npending++];
	memset(it, 0, sizeof(*it));
	it->t_ns = t_ns;
	it->kind = kind;
	it->bus = p->bus;
	return it;
}

static void event_push(struct mb_priv *p, int64_t t_ns, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item *it = item_push(p, t_ns, ACQ_ITEM_EVENT);

	if (!it)
		return;
	it->event.code = code;
	it->event.arg = arg;
	it->event.detail = detail;
}

/* ---- link state ---- */

static void link_down(bus_dev_t *dev, int err)
{
	struct mb_priv *p = dev->priv;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	int64_t jitter;

	if (p->connected)
		modbus_close(p->ctx);
	p->connected = false;
	if (!p->down_reported) {
		event_push(p, clock_ns(CLOCK_REALTIME), ACQ_EV_MB_DISCONNECT, -(int64_t)err, 0);
		p->down_reported = true;
		p->backoff_ns = MB_BACKOFF_MIN_NS;
	}
	/* Jitter over the upper half of the step spreads the reconnects of many
	   boards after a switch reboot. */
	jitter = (int64_t)(rng_next(p) % (uint64_t)(p->backoff_ns / 2 + 1));
	p->retry_at_ns = now + p->backoff_ns / 2 + jitter;
	p->backoff_ns = p->backoff_ns * 2 > MB_BACKOFF_MAX_NS ? MB_BACKOFF_MAX_NS : p->backoff_ns * 2;
}

static int link_open(struct mb_priv *p)
{
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
static bool link_ensure(bus_dev_t *dev)
{
	struct mb_priv *p = dev->priv;
	int r;

	if (p->connected)
		return true;
	if (clock_ns(CLOCK_MONOTONIC) < p->retry_at_ns)
		return false;
	p->attempts++;
	r = link_open(p);
	if (r < 0) {
		link_down(dev, -r);
		return false;
	}
	p->connected = true;
	event_push(p, clock_ns(CLOCK_REALTIME), ACQ_EV_MB_CONNECT, p->attempts, 0);
	p->down_reported = false;
	p->attempts = 0;
	p->backoff_ns = MB_BACKOFF_MIN_NS;
	return true;
}

/* ---- one transaction ---- */

static enum mb_outcome classify_errno(int err, struct mb_result *res)
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

static int request_send(struct mb_priv *p, const struct bus_mb_expect *exp, uint16_t addr)
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

/* Read replies until the one for exp turns up, a fault, or too many stale. */
static void reply_receive(struct mb_priv *p, bus_dev_t *dev, const struct bus_mb_expect *exp,
                          struct mb_result *res)
{
	for (int i = 0; i < MB_STALE_MAX; i++) {
		int n = modbus_receive_confirmation(p->ctx, p->adu);

		if (n < 0) {
			res->outcome = classify_errno(errno, res);
			return;
		}
		/* RTU: libmodbus filters other units' frames to length 0. */
		if (n == 0) {
			res->outcome = MB_BAD;
			res->detail = BUS_MB_REPLY_BAD_UNIT;
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
		if (res->reply.verdict == BUS_MB_REPLY_OK) {
			res->outcome = MB_OK;
		} else if (res->reply.verdict == BUS_MB_REPLY_EXCEPTION) {
			res->outcome = MB_EXCEPTION;
			res->detail = res->reply.exception;
		} else {
			res->outcome = MB_BAD;
			res->detail = (uint8_t)res->reply.verdict;
		}
		return;
	}
	res->outcome = MB_BAD;
	res->detail = BUS_MB_REPLY_STALE;
}

static void transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
{
	struct mb_priv *p = dev->priv;
	struct bus_mb_expect exp = { .tcp = p->tcp, .unit_id = req->unit_id,
	                             .function = req->table, .count = req->count };
	int r;

	memset(res, 0, sizeof(*res));
	/* Whatever is waiting now is unsolicited: the tail of a reply that
	   hit the byte timeout, or (RTU, which has no transaction id) a late
	   reply.  One non-blocking recv / tcflush. */
	modbus_flush(p->ctx);
	if (p->tcp)
		exp.tid = ++p->tid;
	r = request_send(p, &exp, req->addr);
	bus_stat_add(&dev->stats.tx_frames, 1);
	if (r < 0) {
		res->outcome = MB_DOWN;
		res->err = -r;
		return;
	}
	reply_receive(p, dev, &exp, res);
}

/* ---- one group ---- */

static void emit_samples(struct mb_priv *p, const struct bus_mb_regmap *map,
                         const struct bus_mb_request *req, const struct mb_result *res, int64_t t_ns)
{
	const uint8_t *data = p->adu + res->reply.data_off;

	for (uint32_t i = 0; i < req->nslots; i++) {
		const struct bus_mb_slot *s = &map->slots[req->first_slot + i];
		struct acq_item *it;
		double v;
		uint32_t q;

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

	if (p->dead_at[g->unit_id] == deadline || !link_ensure(dev))
		return;
	for (uint32_t i = 0; i < g->nreqs; i++) {
		const struct bus_mb_request *req = &p->map->reqs[g->first_req + i];
		int64_t t_ns = clock_ns(CLOCK_REALTIME);

		transact(dev, req, &res);
		if (res.outcome == MB_OK) {
			bus_stat_add(&dev->stats.rx_frames, 1);
			emit_samples(p, p->map, req, &res, t_ns);
			continue;
		}
		bus_stat_add(&dev->stats.rx_errors, 1);
		if (res.outcome == MB_DOWN) {
			link_down(dev, res.err);
			return;
		}
		if (res.outcome == MB_BAD)
			bus_stat_add(&dev->stats.bad_input, 1);
		emit_fault(p, req, &res, t_ns);
		/* A late reply must never answer the next request. */
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
	now = clock_ns(CLOCK_MONOTONIC);
	gi = group_earliest(p);
	deadline = p->next_ns[gi];
	if (timeout_ms >= 0 && deadline > now + timeout_ms * MB_NS_PER_MS) {
		sleep_until(now + timeout_ms * MB_NS_PER_MS);
		return 0;
	}
	if (deadline > now) {
		sleep_until(deadline);
		now = clock_ns(CLOCK_MONOTONIC);
		acq_latency_add(&p->lat, now - deadline);
	}
	missed = group_advance(p, gi, now);
	if (missed) {
		acq_latency_overrun(&p->lat, (uint64_t)missed);
		event_push(p, clock_ns(CLOCK_REALTIME), ACQ_EV_MB_OVERRUN, missed,
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
	return 0;
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
		size_t n = (size_t)map->groups[i].nslots + map->groups[i].nreqs;

		if (n > worst)
			worst = n;
	}
	return worst + MB_ITEMS_EXTRA;
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
	free(p->next_ns);
	free(p->pending);
	free(p);
	dev->priv = NULL;
}

static int mb_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_mb_cfg *c = &cfg->mb;
	struct mb_priv *p;
	int64_t now = clock_ns(CLOCK_MONOTONIC);
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
	if (!p->pending || !p->next_ns) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < p->map->ngroups; i++)
		p->next_ns[i] = now;
	for (size_t i = 0; i < 256; i++)
		p->dead_at[i] = -1;
	p->tcp = !c->rtu;
	p->rs485 = c->rtu && c->rs485;
	p->bus = cfg->index;
	p->rng = (uint64_t)clock_ns(CLOCK_REALTIME) | 1;
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

const struct bus_ops bus_modbus_ops = {
	.name = "modbus",
	.open = mb_open,
	.recv = mb_recv,
	.close = mb_close,
	.latency = mb_latency,
};
