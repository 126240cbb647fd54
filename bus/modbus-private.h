/* SPDX-License-Identifier: MIT */
/*
 * modbus-private.h - private to the Modbus driver's files: its state
 * (struct mb_priv), a transaction's result, and the calls between
 * modbus.c (pacing, groups, open and close), modbus-link.c (the link and
 * what every transaction shares), modbus-tcp.c and modbus-rtu.c (one
 * transaction each way).  The driver's whole story is at the top of
 * modbus.c.
 */
#pragma once

#include <modbus.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "acquisition/acq-latency.h"
#include "bus-private.h"
#include "regmap.h"

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
	struct bus_path_watch *watch; /* RTU: its tty's path, while it is away */
	bool absent;               /* the last connect found no device */
	int64_t sign_ns;           /* CLOCK_MONOTONIC the watch saw the absent
	                              tty return (0: not seen): CONNECT's blind
	                              time starts there */
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

/* The items of a group run, kept for recv (pending, allocated at open). */
static inline struct acq_item *item_push(struct mb_priv *p, int64_t t_ns, enum acq_item_kind kind)
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

static inline void event_push(struct mb_priv *p, int64_t t_ns, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item *it = item_push(p, t_ns, ACQ_ITEM_EVENT);

	if (!it)
		return;
	it->event.code = code;
	it->event.arg = arg;
	it->event.detail = detail;
}

/* modbus-link.c: the link goes down (DISCONNECT once per outage, the next
   attempt after a backoff with jitter); up again, true when it is. */
void bus_mb_link_down(bus_dev_t *dev, int err);
bool bus_mb_link_ensure(bus_dev_t *dev);
/* modbus-link.c: what every transaction shares: an errno as an outcome,
   the request framed and sent (its expected reply in *exp), the reply's
   verdict as an outcome. */
enum mb_outcome bus_mb_classify_errno(int err, struct mb_result *res);
int bus_mb_request_send(struct mb_priv *p, const struct bus_mb_expect *exp, uint16_t addr);
void bus_mb_verdict_outcome(struct mb_result *res);
/* One request, its reply checked into *res: modbus-tcp.c, modbus-rtu.c. */
void bus_mb_tcp_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res);
void bus_mb_rtu_transact(bus_dev_t *dev, const struct bus_mb_request *req, struct mb_result *res);
