/* SPDX-License-Identifier: MIT */
/*
 * fwd-types.h - the forwarder's data types: a stored record and its
 * source, the configuration, the events and the stats.  forward.h (the
 * API) includes it; the forwarder's own files include it alone, so the
 * file that drives them (forward.c) is the only one that needs them all.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt.h"
#include "reduce.h"

/* One stored record as the source hands it over. */
struct upl_rec {
	uint64_t first_seq;  /* seq of the first record in the payload */
	uint32_t count;      /* payload covers [first_seq, first_seq + count) */
	int64_t t_last_ns;   /* newest record time: decides live vs backlog */
	const void *payload; /* encoded Batch; valid until the next call */
	uint32_t len;
	int64_t t_first_ns;  /* oldest record time, 0 = not known (a held
	                        window then takes the Batch reaching past it) */
};

/*
 * Where records come from.  Both callbacks run on the forwarder thread.
 * seek: position at the first record containing seq or after it; 0 or -errno.
 * next: 1 and *ret_rec filled, 0 when nothing more is stored yet (the
 *       forwarder asks again later), or -errno (a damaged record is skipped
 *       by the source itself; -EBADMSG is counted and reading continues).
 */
struct upl_source {
	int (*seek)(void *ctx, uint64_t seq);
	int (*next)(void *ctx, struct upl_rec *ret_rec);
	/* Position at the first record whose t_last_ns >= t_ns; only needed for
	   cfg.live_source.  0 or -errno. */
	int (*seek_time)(void *ctx, int64_t t_ns);
	/* Optional: the last record (seq order) whose t_first_ns is before
	   t_ns, its first seq and count; 1, 0 (none) or -errno.  Ends a full-
	   rate request's range (record times need not rise); without it, the
	   first record reaching t_ns does. */
	int (*last_before)(void *ctx, int64_t t_ns, uint64_t *ret_first_seq, uint32_t *ret_count);
	void *ctx;
};

/* What the forwarder tells its owner as it happens (for the board's log). */
enum upl_fwd_event {
	UPL_FWD_CONNECTED,      /* CONNACK accepted; err = 0 */
	UPL_FWD_CONNECT_FAILED, /* attempt failed or timed out; err = -errno */
	UPL_FWD_DISCONNECTED,   /* an established connection was lost; err */
	UPL_FWD_ACK_TIMEOUT,    /* PUBACK watchdog dropped the connection */
	UPL_FWD_CURSOR_RESET,   /* at start: the cursor file was damaged, the
	                           whole log is sent again; err = why (see
	                           upl_forward_stats.cursor_damage) */
	UPL_FWD_EVENT_MAX
};

/* Called on the forwarder thread; must not call back into the forwarder
   except upl_forwarder_stats(). */
typedef void (*upl_fwd_event_fn)(void *ctx, enum upl_fwd_event ev, int err);

struct upl_forward_cfg {
	const char *host;           /* broker; required */
	int port;                   /* 1..65535 */
	const char *client_id;      /* required: the persistent session's name */
	const char *vehicle;        /* required: topic railmon/<vehicle>/... */
	const char *cursor_path;    /* required: file holding the next seq */
	uint64_t log_next_seq;      /* optional: the log's next seq at start; a
	                               cursor beyond it is damaged (0 = unknown) */
	struct upl_source source;   /* required: seek and next */
	struct upl_source live_source; /* optional: a second reader on the same
	                               log (next and seek_time).  While a backlog
	                               drains, records newer than live_window_ns
	                               are read here and sent ahead of it; the
	                               backlog skips them once acknowledged */
	bool use_tls;               /* when false, tls is ignored */
	struct upl_tls_cfg tls;
	const char *username;       /* optional */
	const char *password;       /* optional, only with username */
	unsigned inflight;          /* messages in flight, >= 1; 0 = 32 */
	unsigned keepalive_s;       /* MQTT keepalive, >= 5; 0 = 20 */
	unsigned ack_timeout_ms;    /* a message unacked this long drops the
	                               connection (stopped broker, half-open TCP);
	                               0 = 30000 */
	unsigned connect_timeout_ms; /* CONNACK must come within; 0 = 15000 */
	uint64_t rate_bytes_s;      /* cap for backlog bytes/s; 0 = no cap */
	int64_t live_window_ns;     /* records newer than now - this are live and
	                               not rate capped; 0 = 60 s */
	unsigned backoff_min_ms;    /* first reconnect delay; 0 = 500 */
	unsigned backoff_max_ms;    /* cap of the doubling; 0 = 60000 */
	unsigned cursor_interval_ms; /* write the cursor file this often with
	                               fsyncs (and at stop): a power cut takes
	                               back at most this much acked data; in
	                               between without them once 2048 acked
	                               records are not in it: a kill -9 re-sends
	                               fewer; 0 = every ack, fsynced */
	bool publish_events;        /* also publish the events of each Batch,
	                               re-encoded as an event-only Batch, to
	                               railmon/<vehicle>/events (QoS 1, once,
	                               not covered by the cursor) */
	upl_fwd_event_fn on_event;  /* optional */
	void *event_ctx;
	unsigned idle_poll_ms;      /* how often to look for new records when
	                               the log is drained; 0 = 200 */
	struct upl_source resend_source; /* optional: a third reader on the same log
	                               (seek and next).  With it the forwarder
	                               subscribes to railmon/<vehicle>/resend and
	                               serves the ground's gap repair from it:
	                               the stored Batches of each requested range,
	                               flagged historical, to .../data, and
	                               "gone" (.../gone) for seqs the log no
	                               longer holds.  Request and answer formats:
	                               docs/ground-schema.md, "Gap repair". */
	unsigned resend_per_s;      /* Batches re-sent per second at most; 0 = 20 */
	const char *requests_path;  /* optional, with resend_source (and its
	                               seek_time): the file of the ground's
	                               full-rate requests (request.h; issue 32).
	                               The forwarder subscribes to
	                               railmon/<vehicle>/request, keeps each new
	                               id there and serves it through gap
	                               repair's path: the time range's stored
	                               Batches whole and historical, "gone" for
	                               what retention deleted */
	void (*on_config)(void *ctx, const void *payload, size_t len);
	                            /* optional: the ground's signed board files
	                               (issue 32, docs/remote-config.md).  With it
	                               the forwarder subscribes to
	                               railmon/<vehicle>/config (QoS 1) and hands
	                               each message's bytes here, on its thread,
	                               valid during the call only.  The broker
	                               sends the retained one at every
	                               subscription, so again after each
	                               reconnect: the caller's version check
	                               makes a repeat nothing.  Nothing is
	                               checked here: the caller verifies. */
	void *config_ctx;
	struct upl_source hold_source; /* optional: a fourth reader on the same log
	                               (seek, seek_time and next) for
	                               upl_forwarder_hold(): held windows' stored
	                               Batches go out after live records and
	                               before the backlog */
	const void *channels_msg;   /* optional: an encoded Batch holding the
	                               channel dictionary (and config_hash), no
	                               records; published retained (QoS 1) to
	                               railmon/<vehicle>/channels at every
	                               connect, so a consumer starting mid-stream
	                               names channels at once.  Copied. */
	size_t channels_len;
	const struct upl_reduce_cfg *reduce; /* optional: the reduced stream
	                               (reduce.h, README "Reduction"): when it
	                               reduces anything, the Batches of the
	                               backlog and live paths are sent reduced;
	                               held windows and gap repair send the
	                               stored Batches whole.  NULL or all-pass:
	                               the stored Batches as they are.  Copied. */
};

#define UPL_RESEND_MAX 64           /* requested ranges queued; more are refused */
#define UPL_HOLD_MAX 16             /* held windows queued; more are refused */

struct upl_forward_stats {
	uint64_t cursor;        /* next seq to forward (persisted) */
	uint64_t published;     /* messages handed to the socket (incl. resends) */
	uint64_t acked;         /* PUBACKs received */
	uint64_t acked_bytes;
	uint64_t resent;        /* messages published again after a reconnect */
	uint64_t events_published; /* event-only Batches sent to .../events */
	uint64_t live_ahead;    /* live messages sent ahead of the backlog */
	uint64_t skipped;       /* backlog records not sent again: already sent
	                           live (acknowledged, or still in flight: the
	                           backlog then waits for that PUBACK) */
	uint64_t connects;      /* successful CONNACKs */
	uint64_t connect_fails; /* attempts that failed or timed out */
	uint64_t ack_timeouts;  /* connections dropped by the PUBACK watchdog */
	uint64_t source_errors; /* -errno from the source (incl. -EBADMSG) */
	uint64_t cursor_errors; /* failed cursor writes (retried at the next
	                           ack, at most once a second) */
	unsigned inflight;      /* messages in flight now */
	bool connected;
	bool insecure;          /* TLS verification relaxed: board must log it */
	uint64_t resend_requests; /* ranges the ground asked for (resend_source) */
	uint64_t resend_batches;  /* stored Batches re-sent for them */
	uint64_t resend_gone;     /* "gone" answers: ranges the log no longer holds */
	uint64_t resend_refused;  /* request lines malformed, or past UPL_RESEND_MAX */
	uint64_t resend_merged;   /* ranges already queued (in one not yet served,
	                             or in what is left of the one being served):
	                             not queued again (also in resend_requests) */
	uint64_t requests_taken;  /* full-rate requests kept (requests_path) */
	uint64_t requests_again;  /* ids taken before (pending or served): ignored */
	uint64_t requests_refused; /* lines malformed, 64 pending, or not written */
	uint64_t requests_served; /* their ranges sent, the last message
	                             acknowledged by the broker */
	uint64_t requests_restarted; /* a connection lost before that: the
	                                request served again from its start */
	uint64_t hold_requests;   /* held windows taken by upl_forwarder_hold() */
	uint64_t hold_batches;    /* stored Batches sent for them ahead of the backlog */
	uint64_t hold_refused;    /* windows refused: past UPL_HOLD_MAX, or no hold_source */
	uint64_t config_messages; /* messages handed to on_config */
	/* the reduced stream (cfg.reduce): stored Batches reduced, their
	   records and bytes in and out, Batches sent whole instead (Seals,
	   failures) */
	uint64_t reduce_batches, reduce_records_in, reduce_records_out;
	uint64_t reduce_bytes_in, reduce_bytes_out, reduce_whole;
	int last_error;         /* -errno of the last failure, 0 if none */
	char last_error_text[192]; /* the same in plain words: the system's or
	                           libmosquitto's text ("Connection refused",
	                           the CONNACK reason, OpenSSL's reason) */
	/*
	 * Why the cursor file was not used at start, 0 if it was.  The forwarder
	 * then starts from seq 1 (the oldest record the log still holds) and
	 * replaces the file at the first acknowledgement: duplicates, never a
	 * loss.  -ENODATA empty, -EBADMSG not a cursor line (garbage, torn),
	 * -ERANGE a seq that is 0, negative or too large, -EOVERFLOW beyond
	 * cfg.log_next_seq (then cursor_damaged_seq holds it), -EISDIR a
	 * directory, -ESPIPE another kind of non-regular file, or the -errno of
	 * opening or reading it.
	 */
	int cursor_damage;
	uint64_t cursor_damaged_seq;
};

typedef struct upl_forwarder upl_forwarder_t;
