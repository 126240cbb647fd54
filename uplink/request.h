/* SPDX-License-Identifier: MIT */
/*
 * request.h - full-rate windows on demand (issue 32): the ground's request
 * line on railmon/<vehicle>/request, "<id> <from ns> <to ns>", its one
 * parser and formatter, and the vehicle's file of pending requests.
 *
 * A request may name channels (`railmon request --channel`): then only
 * their samples and texts, and the events, go for the range, as reduced
 * Batches over each stored Batch's range (README "Full-rate requests").
 *
 * A request survives a restart of the vehicle (it is in the file before it
 * is acknowledged as taken) and is idempotent by its id: an id pending or
 * served before is taken once (the ground may publish it again, QoS 1 may
 * deliver it twice).  What serves it is gap repair's path (fwd-resend.c):
 * the time range maps to a seq range of the log, whose stored Batches go
 * out whole and historical, or "gone" for what retention deleted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt.h"

/* An id: 1-32 characters of A-Z a-z 0-9 . _ - (the ground makes one per
   request; a name, not a number, so an operator may choose it). */
#define UPL_REQUEST_ID_MAX 32
/* Channels a request may name, and a name's length: the names of the
   vehicle's channel dictionary (printable ASCII without blanks). */
#define UPL_REQUEST_CHANNELS_MAX 8
#define UPL_REQUEST_CHANNEL_NAME_MAX 63
/* The longest line upl_request_format() writes: the id, two 19-digit
   times, the channels, their blanks, '\n' and the NUL. */
#define UPL_REQUEST_LINE_MAX (UPL_REQUEST_ID_MAX + 1 + 19 + 1 + 19 + \
                              UPL_REQUEST_CHANNELS_MAX * (1 + UPL_REQUEST_CHANNEL_NAME_MAX) + 1 + 1)
/* Pending requests the file holds at most (a further one is refused and
   counted: the ground's requests are an operator's, not a flood), and
   the served ids it remembers (the oldest forgotten first). */
#define UPL_REQUESTS_PENDING_MAX 64
#define UPL_REQUESTS_DONE_MAX 256

/* [from_ns, to_ns) of record time (ns since the epoch, UTC); nchannels
   0: every record, else only those channels (and the events). */
struct upl_request {
	char id[UPL_REQUEST_ID_MAX + 1];
	int64_t from_ns, to_ns;
	unsigned nchannels;
	char channels[UPL_REQUEST_CHANNELS_MAX][UPL_REQUEST_CHANNEL_NAME_MAX + 1];
};

/*
 * One line (the n bytes at line, without its '\n') into *ret: the id, one
 * blank, from, one blank, to, both in decimal digits only (no sign), from
 * before to; then up to UPL_REQUEST_CHANNELS_MAX channel names, each after
 * one blank (1..UPL_REQUEST_CHANNEL_NAME_MAX of '!'..'~', not twice);
 * nothing before or after.  0, or -EINVAL (*ret unwritten).
 */
int upl_request_parse(const char *line, size_t n, struct upl_request *ret);

/* Whether the n bytes at s are a channel name a request line may carry
   (1..UPL_REQUEST_CHANNEL_NAME_MAX of '!'..'~'). */
bool upl_request_channel_ok(const char *s, size_t n);

/* r as one line ending in '\n' into buf, NUL-terminated: its length
   (without the NUL), -EINVAL (a request the parser would refuse) or
   -ENOSPC (UPL_REQUEST_LINE_MAX always is enough). */
int upl_request_format(const struct upl_request *r, char *buf, size_t len);

/* The pending requests, oldest first, and the ids served, in the file at
   path (replaced whole on every change: write-temp, fsync, rename). */
typedef struct upl_requests upl_requests_t;

/*
 * Load path (no file: none pending).  0, -ENOMEM, -errno of reading it, or
 * -EBADMSG for a damaged file, with *ret_bad_line its first bad line (1 =
 * the header) so the board can name it; nothing is then taken from it.
 */
int upl_requests_open(const char *path, upl_requests_t **ret, unsigned *ret_bad_line);
void upl_requests_free(upl_requests_t *q);

/*
 * Take r: 1 when it is new (pending, and in the file), 0 when its id is
 * pending or was served (nothing changes), -ENOSPC when
 * UPL_REQUESTS_PENDING_MAX are pending, -errno when the file cannot be
 * written (then it is not pending either: the ground asks again).
 */
int upl_requests_add(upl_requests_t *q, const struct upl_request *r);

/* How many are pending; the oldest into *ret (0, or -ENOENT: none). */
size_t upl_requests_pending(const upl_requests_t *q);
int upl_requests_oldest(const upl_requests_t *q, struct upl_request *ret);

/* The oldest pending request is served: its id moves to the served ones,
   in the file.  0, -ENOENT (none pending) or -errno (the file: it stays
   pending, and is served again after a restart: whole Batches twice,
   which the ground's ledger counts as duplicates). */
int upl_requests_done(upl_requests_t *q);

/* Where and as whom the ground publishes a request (`railmon request`). */
struct upl_request_pub {
	const char *host;       /* required */
	int port;               /* 1..65535 */
	bool use_tls;           /* then tls.ca_file is required */
	struct upl_tls_cfg tls;
	const char *username;   /* optional; the broker's ACL lets only the ground publish */
	const char *password;   /* optional, with username */
	const char *vehicle;    /* railmon/<vehicle>/request */
	unsigned timeout_ms;    /* for the connection and the broker's PUBACK; 0 = 10000 */
};

/*
 * Publish r's line on railmon/<vehicle>/request (QoS 1, not retained: the
 * vehicle's persistent session holds it while it is offline) and wait for
 * the broker's PUBACK.  0, or -errno with the reason in words in why
 * (the broker refused the login, cannot connect, no PUBACK in time).  A
 * broker whose ACL drops the message still acknowledges it (MQTT 3.1.1).
 */
int upl_request_publish(const struct upl_request_pub *c, const struct upl_request *r, char *why, size_t whylen);
