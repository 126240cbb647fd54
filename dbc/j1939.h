/* SPDX-License-Identifier: MIT */
/*
 * j1939.h - SAE J1939-21 transport protocol reassembly, passive (a logger
 * that listens to both sides), from raw 29-bit frames.
 *
 * TP.CM (PGN 0xEC00) announces a message: BAM (to every node, DA 0xFF)
 * or RTS/CTS (to one node); TP.DT (PGN 0xEB00) carries it 7 bytes a packet
 * with sequence numbers 1..n.  Sessions are kept per (source, destination)
 * address pair, so two sources (or one source to two nodes) interleave
 * freely.  A session ends:
 * - complete: every packet in order (a CTS may ask for packets again: the
 *   next number goes back to what it asks for);
 * - aborted: TP.CM_Abort from either side;
 * - out of sequence: a packet that is not the next one (a lost packet
 *   shows as the one after it);
 * - timed out (dbc_j1939_expire): T1 750 ms between packets, T2/T3
 *   1250 ms around a CTS or before the first packet, as J1939-21 gives them;
 * - replaced: a new BAM or RTS of the same pair before the end;
 * - no room: DBC_J1939_SESSIONS are open already (the new one is refused).
 *
 * Everything is allocated by dbc_j1939_new(); feed and expire do not
 * allocate and are meant for the collector, one thread per reassembler.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

#define DBC_J1939_TP_MAX 1785     /* 255 packets of 7 bytes */
#define DBC_J1939_SESSIONS 32     /* open at once, per bus */
#define DBC_J1939_PGN_TP_CM 0xEC00u
#define DBC_J1939_PGN_TP_DT 0xEB00u
#define DBC_J1939_T1_NS 750000000LL  /* between two TP.DT */
#define DBC_J1939_T2_NS 1250000000LL /* after a CTS, or RTS/BAM, to the next TP.DT */

/* The parts of a 29-bit J1939 id. */
struct dbc_j1939_id {
	uint32_t pgn;     /* PDU1 (PF < 240): PS is the destination, not part of the PGN */
	uint8_t priority;
	uint8_t sa, da;   /* da = 0xFF for PDU2 (broadcast) */
};

/* Split a frame id (without flags); any 29-bit value is one. */
struct dbc_j1939_id dbc_j1939_id_parse(uint32_t id);

/* A reassembled message; data valid until the next feed or expire. */
struct dbc_j1939_msg {
	struct dbc_j1939_id id;   /* priority of the TP.CM that announced it */
	uint16_t len;
	const uint8_t *data;
	bool bam;
	int64_t t_ns;             /* the last packet's */
};

enum dbc_j1939_fault_kind {
	DBC_J1939_ABORT = 1,      /* reason: the abort's reason byte */
	DBC_J1939_TIMEOUT = 2,
	DBC_J1939_SEQUENCE = 3,   /* reason: the sequence number seen (expected in .expected) */
	DBC_J1939_REPLACED = 4,
	DBC_J1939_NO_ROOM = 5,
	DBC_J1939_MALFORMED = 6,  /* a TP.CM or TP.DT that makes no sense (length, size/packets, control byte, address) */
	DBC_J1939_FAULT_MAX
};

/* A session that ended without its message, or a refused announcement. */
struct dbc_j1939_fault {
	uint8_t kind;             /* enum dbc_j1939_fault_kind */
	uint8_t sa, da;
	uint8_t reason;
	uint8_t expected;         /* DBC_J1939_SEQUENCE: the sequence number wanted */
	uint32_t pgn;             /* of the announced message (0 if unknown) */
	uint16_t got, total;      /* packets received, announced */
};

struct dbc_j1939_stats {
	uint64_t messages;        /* reassembled */
	uint64_t faults[DBC_J1939_FAULT_MAX];
	uint64_t stray_dt;        /* TP.DT outside any session (counted, not faults) */
	uint64_t ctl;             /* CTS and EndOfMsgAck seen */
	uint64_t dtc_lost;        /* DTC changes not reported, or not tracked for lack of room */
};

typedef struct bus_j1939 dbc_j1939_t;

/* 0, -EINVAL, -ENOMEM. */
int dbc_j1939_new(dbc_j1939_t **ret_j);
dbc_j1939_t *dbc_j1939_free(dbc_j1939_t *j);

/*
 * One frame (a CAN item; anything that is not an extended TP.CM or TP.DT
 * is ignored and returns 0).  Returns 1 with *ret_msg when the frame
 * completes a message, 2 with *ret_fault when it ends a session without
 * one (abort, sequence, replaced, malformed TP.DT) or is refused (no room, malformed TP.CM), 0
 * otherwise, -EINVAL on bad arguments.  Call dbc_j1939_expire() with the
 * frame's time first, so a late packet finds its session already timed out.
 */
int dbc_j1939_feed(dbc_j1939_t *j, const struct acq_item *frame, struct dbc_j1939_msg *ret_msg,
                   struct dbc_j1939_fault *ret_fault);

/* Time out one session silent too long at now_ns: 1 with *ret_fault
   (call again until 0), 0 when none is, -EINVAL. */
int dbc_j1939_expire(dbc_j1939_t *j, int64_t now_ns, struct dbc_j1939_fault *ret_fault);

/*
 * DM1 (active diagnostic trouble codes, PGN 0xFECA): each DTC is tracked
 * per source address, so a DM1 that no longer lists one clears it.
 * DBC_J1939_DTC_MAX codes of all sources at once; more are counted
 * (dtc_lost) and not tracked.
 */
#define DBC_J1939_PGN_DM1 0xFECAu
#define DBC_J1939_DTC_MAX 256
#define DBC_J1939_DTC_EVENTS 64   /* changes one DM1 reports at most */

struct dbc_j1939_dtc {
	uint32_t spn;             /* 19 bits */
	uint8_t fmi;              /* 5 bits */
	uint8_t oc;               /* occurrence count, 7 bits */
	uint8_t sa;
	bool active;              /* true: appeared, false: cleared */
	uint16_t lamps;           /* DM1 bytes 0 (MIL, RSL, AWL, PL) and 1 (their flash) */
};

/*
 * A DM1 from sa (len bytes): writes the DTCs that appeared and those that
 * cleared since its last DM1 into out (at most max; the changes past max
 * are applied and counted in dtc_lost, not reported).  Returns how many.
 * "No DTC" (SPN 0 / all ones) entries are not DTCs.  -EINVAL.
 */
int dbc_j1939_dm1(dbc_j1939_t *j, uint8_t sa, const uint8_t *data, size_t len, struct dbc_j1939_dtc *out,
                  size_t max);

/* Counters since dbc_j1939_new(). */
void dbc_j1939_stats(const dbc_j1939_t *j, struct dbc_j1939_stats *ret_stats);
