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
 * nothing but the answer to the request in flight.
 *
 * TCP: libmodbus frames the replies (modbus_receive_confirmation).  A
 * reply carrying another transaction's id is a late reply (libmodbus issue
 * 255): dropped and the next one read, within the one response timeout of
 * the request, so a late reply costs its own transaction (a timeout) and
 * never the next one.  Before each request the socket is flushed
 * (non-blocking).
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

#include "acquisition/acq-latency.h"
#include "bus-private.h"
#include "regmap.h"
#include "basic/clock.h"

#define MB_NS_PER_MS 1000000LL
#define MB_BACKOFF_MIN_NS (50 * MB_NS_PER_MS)
#define MB_BACKOFF_MAX_NS (2000 * MB_NS_PER_MS)
#define MB_STALE_MAX 16  /* stale replies skipped per transaction: one per
                            earlier timeout still in flight, bounded */
#define MB_ITEMS_EXTRA 4 /* overrun, connect, disconnect per group run */
#define MB_OWED_MAX 8    /* RTU: unanswered requests remembered per unit */
#define MB_LATE_EVENTS 4 /* RTU: LATE_REPLY events per transaction; more are
                            only counted into its DISCARDED event */
#define MB_EVENTS_PER_REQ (2 + MB_LATE_EVENTS) /* + its fault and DISCARDED */
#define MB_HORIZON_MAX 4 /* RTU: a drain waits at most this many response
                            timeouts after the request */
#define MB_OWED_LIFE 8   /* RTU: horizons (and at least MB_OWED_LIFE_MIN_NS)
                            after which an owed reply is taken as never
                            coming */
#define MB_OWED_LIFE_MIN_NS (1000 * MB_NS_PER_MS)

/* RTU: a request whose reply has not been accounted for. */
struct mb_owed {
	int64_t sent_ns;           /* CLOCK_MONOTONIC, when it went out */
	uint8_t fc;
	uint8_t bytes;             /* the byte count its reply carries */
};

/* RTU: what the driver knows about one unit on the line. */
struct mb_unit {
	struct mb_owed owed[MB_OWED_MAX]; /* oldest first */
	uint8_t nowed;
	int64_t late_ns;           /* the latest reply seen, from its request */
};

/* RTU: the serial line, read by the driver itself. */
struct mb_rtu {
	struct mb_unit unit[256];
	int64_t gap_ns;            /* byte timeout, at least 3.5 characters */
	uint64_t disc_bytes;       /* thrown away in this transaction ... */
	uint64_t disc_frames;      /* ... of which complete frames */
	unsigned late_events;      /* LATE_REPLY events in this transaction */
	uint8_t frame[BUS_MB_RTU_FRAME_MAX];
};

/* How a frame read off the serial line ended. */
enum rtu_rx { RX_NONE, RX_FRAME, RX_BADCRC, RX_CUT, RX_NOISE };

struct rtu_frame {
	size_t len;                /* bytes in mb_rtu.frame */
	int64_t first_ns;          /* CLOCK_MONOTONIC, its first byte */
	bool waiting;              /* that byte came while nobody listened:
	                              first_ns is only an upper bound */
};

/* A string channel's last text stored (per slot): a text is stored when it
   changes, and again every MB_TEXT_REFRESH_NS so a reader starting later
   (a consumer of the uplink, a log cut by retention) has it, as the
   channel dictionary is repeated. */
struct mb_text {
	int64_t sent_ns;           /* CLOCK_REALTIME of the last one stored; 0: none yet */
	uint8_t len, quality;
	char text[ACQ_TEXT_MAX];
};

#define MB_TEXT_REFRESH_NS (60 * INT64_C(1000000000)) /* text_refresh_ms = 0 */

struct mb_priv {
	modbus_t *ctx;
	struct bus_mb_regmap *map;
	struct mb_text *texts;     /* per slot; NULL when the map has no string channel */
	int64_t text_refresh_ns;
	int64_t *next_ns;          /* per group: next deadline, CLOCK_MONOTONIC */
	int64_t dead_at[256];      /* per unit: deadline at which it timed out */
	struct acq_item *pending;  /* items of the last group run not yet returned */
	size_t npending, pending_pos, pending_cap;
	struct acq_latency lat;    /* wakeups: deadline -> running */
	struct acq_latency txn;    /* transactions: request -> reply */
	bool tcp;
	bool connected;
	bool down_reported;        /* DISCONNECT already emitted for this outage */
	bool rs485;
	unsigned attempts;         /* connect attempts in this outage */
	int64_t retry_at_ns;
	int64_t backoff_ns;
	uint64_t rng;              /* xorshift64 state for the backoff jitter */
	int64_t resp_ns;           /* response timeout */
	struct mb_rtu *rtu;        /* RTU only */
	uint16_t tid;
	uint16_t bus;
	uint8_t adu[MODBUS_TCP_MAX_ADU_LENGTH];
};

enum mb_outcome { MB_OK, MB_TIMEOUT, MB_CRC, MB_EXCEPTION, MB_BAD, MB_DOWN };

struct mb_result {
	int64_t t_ns;              /* CLOCK_REALTIME just before the request went out */
	enum mb_outcome outcome;
	int err;                   /* MB_DOWN: positive errno */
	uint8_t detail;            /* MB_EXCEPTION: code, MB_BAD: verdict */
	struct bus_mb_reply reply;
};



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
	/* Jitter over the upper half of the step spreads the reconnects of many
	   boards after a switch reboot. */
	jitter = (int64_t)(rng_next(p) % (uint64_t)(p->backoff_ns / 2 + 1));
	p->retry_at_ns = now + p->backoff_ns / 2 + jitter;
	p->backoff_ns = p->backoff_ns * 2 > MB_BACKOFF_MAX_NS ? MB_BACKOFF_MAX_NS : p->backoff_ns * 2;
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
static bool link_ensure(bus_dev_t *dev)
{
	struct mb_priv *p = dev->priv;
	int r;

	if (p->connected)
		return true;
	if (basic_now_ns(CLOCK_MONOTONIC) < p->retry_at_ns)
		return false;
	p->attempts++;
	r = link_open(p);
	if (r < 0) {
		link_down(dev, -r);
		return false;
	}
	p->connected = true;
	event_push(p, basic_now_ns(CLOCK_REALTIME), ACQ_EV_MB_CONNECT, p->attempts, 0);
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

/* The outcome a checked reply gives its request. */
static void verdict_outcome(struct mb_result *res)
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
			res->outcome = classify_errno(errno, res);
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
		verdict_outcome(res);
		return;
	}
	res->outcome = MB_BAD;
	res->detail = BUS_MB_REPLY_STALE;
}

static void tcp_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
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
	r = request_send(p, &exp, req->addr);
	bus_stat_add(&dev->stats.tx_frames, 1);
	if (r < 0) {
		res->outcome = MB_DOWN;
		res->err = -r;
		return;
	}
	tcp_receive(p, dev, &exp, res);
}

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
	uint16_t crc = bus_mb_crc16(b, len - 2);

	return b[len - 2] == (uint8_t)crc && b[len - 1] == (uint8_t)(crc >> 8);
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
	           (uint32_t)f->len << 16 | (uint32_t)b[0] << 8 | b[1]);
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
	verdict_outcome(res);
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
	int kind = request_send(p, exp, addr);
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

static void rtu_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
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

static void transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res)
{
	if (((struct mb_priv *)dev->priv)->tcp)
		tcp_transact(dev, req, res);
	else
		rtu_transact(dev, req, res);
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

	if (p->dead_at[g->unit_id] == deadline || !link_ensure(dev))
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
			link_down(dev, res.err);
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
