/* SPDX-License-Identifier: MIT */
/*
 * regmap.h - Modbus register-map planning, reply checking and value
 * decoding.  Pure functions: no I/O, no clocks, no logging, so every rule
 * here is unit-tested without a server (tests/bus/test-modbus-regmap.c), and the
 * reply checker / decoder and the planner are fuzzed (tests/fuzz/).
 *
 * Planning (bus_mb_regmap_new, once at open):
 *   1. channels are grouped by (unit id, table, period): one poll group is
 *      the unit of pacing in bus/modbus.c;
 *   2. inside a group they are sorted by address and merged greedily into
 *      requests of at most BUS_MB_REGS_MAX registers (BUS_MB_BITS_MAX bits
 *      for coils and discrete inputs), a new request being started when
 *      the next channel would leave a hole of more than max_gap
 *      registers/bits or overflow the limit.  Overlapping channels (bit
 *      fields of one register, a u32 read as two u16) share the request;
 *   3. every channel gets a slot: its offset (registers or bits) in its
 *      request's reply, so the poll thread decodes without searching.
 *
 * Greedy by address: each request is closed as late as the cap and the gap
 * limit allow.  That gives the fewest requests for channels sorted by
 * address (the usual exchange argument); requests may overlap by a few
 * registers when a wide value does not fit at the end of the previous one.
 *
 * Byte order (enum bus_mb_order) names the wire order of the value's bytes,
 * A = most significant.  It is applied as two independent swaps over the
 * 16-bit registers as they arrive: DCBA and BADC swap the bytes within each
 * register, DCBA and CDAB reverse the order of the registers.  For 16-bit
 * values only the byte swap can apply.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

#define BUS_MB_REGS_MAX 125   /* FC 3/4: 250 data bytes in a 253-byte PDU */
#define BUS_MB_BITS_MAX 2000  /* FC 1/2 */
#define BUS_MB_TCP_HEADER 7   /* MBAP: tid, protocol, length, unit */
#define BUS_MB_RTU_HEADER 1   /* unit */
#define BUS_MB_ADU_MAX 260    /* largest Modbus TCP ADU */
#define BUS_MB_RTU_FRAME_MAX 260 /* unit, function, byte count 255, data, CRC */

/* One channel's place in a request's reply. */
struct bus_mb_slot {
	const struct bus_mb_channel *ch; /* points into the board's table */
	uint16_t offset;                 /* registers (or bits) from the request start */
};

/* One read transaction: function code = table. */
struct bus_mb_request {
	uint8_t unit_id;
	uint8_t table;       /* enum bus_mb_table, also the function code */
	uint16_t addr;       /* first register / bit */
	uint16_t count;      /* registers / bits, 1..125 / 1..2000 */
	uint32_t first_slot; /* slots[first_slot .. first_slot + nslots) */
	uint32_t nslots;
};

/* Channels of one (unit, table, period), polled together. */
struct bus_mb_group {
	uint8_t unit_id;
	uint8_t table;
	uint32_t period_ms;
	uint32_t first_req;  /* reqs[first_req .. first_req + nreqs) */
	uint32_t nreqs;
	uint32_t nslots;     /* channels in the group = most samples one poll emits */
};

struct bus_mb_regmap {
	struct bus_mb_group *groups;
	size_t ngroups;
	struct bus_mb_request *reqs;
	size_t nreqs;
	struct bus_mb_slot *slots;
	size_t nslots;
};

/*
 * Check one channel of the board file: table, type, order, bit number,
 * address range, period, finite scale/offset, bit types only on bit tables.
 * Returns 0 or -EINVAL.  cli/ calls it to report file:line.
 */
int bus_mb_channel_check(const struct bus_mb_channel *ch);

/* Registers a value of this type spans (bits on coils/discrete: 1); 0 for
   an invalid type and for BUS_MB_STRING (its count says). */
unsigned bus_mb_type_regs(enum bus_mb_type type);
/* Registers the channel spans: its type's, or a string's count. */
unsigned bus_mb_channel_regs(const struct bus_mb_channel *ch);

/*
 * Plan the requests for channels[0..n).  channels must outlive the map.
 * Returns 0 and a new map in *ret_map, -EINVAL for a NULL argument, n == 0
 * or a channel bus_mb_channel_check() rejects, -ENOMEM.
 */
int bus_mb_regmap_new(const struct bus_mb_channel *channels, size_t n,
                      uint16_t max_gap, struct bus_mb_regmap **ret_map);
/* Accepts NULL; returns NULL. */
struct bus_mb_regmap *bus_mb_regmap_free(struct bus_mb_regmap *map);

/*
 * Decode one numeric channel (not a string) from a reply's data bytes (after the byte count):
 * registers big-endian as on the wire, or packed bits LSB first.  offset is
 * the slot's offset.  Writes value = raw * scale + offset and its quality
 * (ACQ_Q_INVALID for NaN/Inf floats).  Returns 0, -EINVAL for NULL or a bad
 * channel, -ERANGE when the value does not lie within len bytes.
 */
int bus_mb_decode(const struct bus_mb_channel *ch, const uint8_t *data, size_t len,
                  uint16_t offset, double *ret_value, uint32_t *ret_quality);

/*
 * Decode a string channel (BUS_MB_STRING): its count registers of ASCII
 * from a reply's data bytes at the slot's offset, each register's two
 * bytes high first (swapped for the orders BADC and DCBA), up to the first
 * NUL, trailing spaces trimmed.  A byte that is not printable ASCII is
 * written '?' and makes the quality ACQ_Q_INVALID.  Writes *ret_len bytes
 * of ret_text (not NUL-terminated).  Returns 0, -EINVAL for NULL, a bad
 * channel or one that is not a string, -ERANGE when the registers do not
 * lie within len bytes.
 */
int bus_mb_decode_text(const struct bus_mb_channel *ch, const uint8_t *data, size_t len, uint16_t offset,
                       char ret_text[BUS_MB_STRING_REGS_MAX * 2], uint8_t *ret_len, uint8_t *ret_quality);

/* What a reply turned out to be. */
enum bus_mb_verdict {
	BUS_MB_REPLY_OK = 0,
	BUS_MB_REPLY_STALE,      /* TCP: another transaction's reply (late reply) */
	BUS_MB_REPLY_EXCEPTION,  /* exception response; see exception */
	BUS_MB_REPLY_BAD_UNIT,   /* answered by another unit id */
	BUS_MB_REPLY_BAD_FUNCTION,
	BUS_MB_REPLY_BAD_LENGTH, /* byte count, MBAP length or ADU size wrong */
	BUS_MB_REPLY_BAD_PROTOCOL, /* MBAP protocol id not 0 */
	BUS_MB_REPLY_VERDICT_MAX
};

/* The transaction a reply is checked against. */
struct bus_mb_expect {
	uint8_t tcp;        /* 1: MBAP header, 0: RTU (CRC already checked by the caller) */
	uint16_t tid;       /* TCP transaction id sent */
	uint8_t unit_id;
	uint8_t function;   /* 1..4 */
	uint16_t count;     /* registers / bits asked for */
};

struct bus_mb_reply {
	enum bus_mb_verdict verdict;
	uint8_t exception;  /* exception code when verdict is EXCEPTION */
	uint16_t data_off;  /* OK: data bytes start here in the ADU ... */
	uint16_t data_len;  /* ... and are this long */
};

/*
 * Check the ADU adu[0..len) (as libmodbus's modbus_receive_confirmation
 * returns it: header, PDU and, for RTU, the 2 CRC bytes) against the request.
 * Returns 0 and the verdict in *ret_reply, or -EINVAL for NULL arguments or
 * an impossible expectation.  Never reads outside adu[0..len).
 */
int bus_mb_reply_check(const struct bus_mb_expect *exp, const uint8_t *adu, size_t len,
                       struct bus_mb_reply *ret_reply);

/* Data bytes a reply to exp carries (its byte count); 0 for an invalid exp. */
size_t bus_mb_reply_bytes(const struct bus_mb_expect *exp);

/* Modbus RTU CRC-16 of buf[0..len) (polynomial 0xa001, initial 0xffff); it
   goes on the wire low byte first. */
uint16_t bus_mb_crc16(const uint8_t *buf, size_t len);

/*
 * RTU replies carry no length: it follows from the function code and the
 * byte count.  Given the first have bytes of a reply frame in buf, returns
 * the length of the whole frame (unit, function, data, CRC), which is more
 * than have while it is incomplete (at most BUS_MB_RTU_FRAME_MAX); or
 * -EBADMSG when the function code is neither a read (1-4) nor an exception
 * (bit 7 set), so the bytes cannot be framed; -EINVAL for NULL buf.
 */
int bus_mb_rtu_frame_len(const uint8_t *buf, size_t have);

/*
 * Build a read request PDU + header into buf (at least BUS_MB_ADU_MAX
 * bytes): with the MBAP header for TCP (exp->tcp), or just unit, function,
 * address and count for RTU (libmodbus adds the CRC).  Returns the length
 * or -EINVAL (function not 1..4, count out of range).
 */
int bus_mb_request_build(const struct bus_mb_expect *exp, uint16_t addr,
                         uint8_t *buf, size_t size);
