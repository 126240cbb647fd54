/* SPDX-License-Identifier: MIT */
/*
 * spb-session.h - a Sparkplug B edge node's session without its MQTT
 * client (issue #33): the topics, bdSeq kept across restarts and power
 * loss, seq on every message, the NBIRTH and NDEATH payloads, and the
 * parser of the commands a host sends (NCMD, DCMD).
 *
 * The session rules (Eclipse Sparkplug 3.0, chapter 5): at every connect
 * bdSeq is the last one + 1 (0 to 255, wrapping), written to disk before
 * the connect so a kill -9 or a power cut cannot reuse it; the NDEATH will
 * registered with the connect carries it, as does the NBIRTH that follows.
 * NBIRTH has seq 0, every later message (DBIRTH, NDATA, DDATA, DDEATH)
 * the previous + 1, 255 wrapping to 0; NDEATH has none.
 *
 * Aliases: bdSeq, Node Control/Rebirth and Events have their own, a channel's is
 * SPB_ALIAS_CHANNELS + its channel id, so they are unique across the node
 * and all its devices as the specification requires.
 *
 * Nothing here is RT-safe or allocates but spb_cmd_parse() (protoc-c's
 * unpack).  No state is shared: one struct spb_session per connection
 * owner.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sparkplug/spb.h"

/* The message types, the third level of a topic. */
enum spb_msg {
	SPB_NBIRTH, SPB_NDEATH, SPB_NDATA, SPB_NCMD,
	SPB_DBIRTH, SPB_DDEATH, SPB_DDATA, SPB_DCMD,
	SPB_MSG_MAX
};

#define SPB_NAMESPACE "spBv1.0"
#define SPB_METRIC_BDSEQ "bdSeq"
#define SPB_METRIC_REBIRTH "Node Control/Rebirth"
#define SPB_ALIAS_BDSEQ 0u
#define SPB_ALIAS_REBIRTH 1u
#define SPB_ALIAS_CHANNELS 2u
/* railmon's events (bus gone and back, bus-off, clock steps, ...) as a
   node-level String metric: in NBIRTH with no value, in NDATA one metric
   per event record (spb_ndata_add_events()).  Its alias is above every
   channel's (channel ids are 32 bits). */
#define SPB_METRIC_EVENTS "Events"
#define SPB_ALIAS_EVENTS (SPB_ALIAS_CHANNELS + 0x100000000ull)

/* The message type as in topics ("NBIRTH"); NULL past SPB_MSG_MAX. */
const char *spb_msg_name(enum spb_msg type);

/*
 * "spBv1.0/<group>/<TYPE>/<node>" (N types, device NULL) or
 * ".../<TYPE>/<node>/<device>" (D types, device required) into buf.
 * Returns the length, -EINVAL (NULL or empty id, an id with '/', '+' or
 * '#', a device with an N type or none with a D type) or -ENAMETOOLONG
 * (len too small; buf untouched).
 */
int spb_topic(char *buf, size_t len, const char *group, enum spb_msg type, const char *node, const char *device);

/* The bdSeq file in the state directory: one line "railmon-spb-bdseq 1 <n>\n". */
#define SPB_BDSEQ_FILE "sparkplug-bdseq"

/*
 * The bdSeq of the next connect: the stored one + 1 (255 wraps to 0; 0
 * when the file does not exist), stored (basic/replace.h: tmp, fsync,
 * rename) before it is returned, so a connect never reuses one even after
 * a kill -9 between this call and the NBIRTH.  A damaged file is no
 * error: 0 is used and *ret_damage says why (-EBADMSG not such a line,
 * -ERANGE a number above 255, -EISDIR / -ESPIPE not a regular file, or
 * the read's -errno); else *ret_damage is 0.  Returns 0 and
 * *ret_bdseq, or the store's -errno (then nothing is returned: no
 * connect may go ahead without its bdSeq on disk).
 */
int spb_bdseq_next(const char *dir, uint8_t *ret_bdseq, int *ret_damage);

struct spb_session {
	uint8_t bdseq;  /* this connection's */
	uint8_t seq;    /* the next message's */
	bool born;      /* an NBIRTH went out on this connection */
};

/* A new connection with its bdSeq (from spb_bdseq_next()): not born. */
void spb_session_start(struct spb_session *s, uint8_t bdseq);

/* NDEATH (the will): bdSeq only, no seq.  pl needs room for 1 metric.
   Returns 0 or spb_payload_add_birth()'s error. */
int spb_session_ndeath(const struct spb_session *s, spb_payload_t *pl, uint64_t t_ms);

/* NBIRTH: seq 0, the metrics bdSeq and Node Control/Rebirth (false); the
   caller adds the node's own after them.  Also after a Rebirth request:
   the seq starts again at 0.  Returns 0 or spb_payload_add_birth()'s
   error. */
int spb_session_nbirth(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms);

/* Starts any later message (DBIRTH, NDATA, DDATA, DDEATH) with the next
   seq.  -EPROTO before the connection's NBIRTH (nothing may precede it). */
int spb_session_next(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms);

/* The same in two steps, for a message that may turn out empty (a
   device with nothing in a Batch): begin starts pl with the next seq
   without taking it, commit takes it once the message went. */
int spb_session_begin(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms);
void spb_session_commit(struct spb_session *s);

/* What a command asked for.  A node accepts one thing, Node Control/
   Rebirth = true (by name or by its alias); every other metric of an
   NCMD, and every metric of a DCMD (the buses are listened to, never
   written), is refused and counted. */
struct spb_cmd {
	bool rebirth;       /* a fresh NBIRTH and DBIRTHs are due */
	uint32_t metrics;   /* metrics in the payload */
	uint32_t refused;   /* of them, not done */
};

/* Payloads longer than this are refused unread (-EMSGSIZE): a command is
   a few metrics. */
#define SPB_CMD_MAX_BYTES 65536u

/*
 * Parses an NCMD (device false) or DCMD (true) payload into *ret.
 * Returns 0 (ret->refused may be > 0), -EINVAL (NULL), -EMSGSIZE (len >
 * SPB_CMD_MAX_BYTES) or -EBADMSG (not a Sparkplug B payload; *ret
 * untouched).  Any bytes, never a crash (fuzz-spb-cmd).
 */
int spb_cmd_parse(const uint8_t *buf, size_t len, bool device, struct spb_cmd *ret);
