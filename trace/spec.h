/* SPDX-License-Identifier: MIT */
/*
 * spec.h - private to trace/: the numbers the formats define, written once
 * for each format's reader and writer: candump's id flags and CAN FD flags
 * nibble (linux/can.h's values, as can-utils writes them: candump.c,
 * candump-screen.c, candump-write.c), Vector BLF's object types and frame
 * flags (blf.c, trace-write.c), and the CAN FD lengths every format
 * checks.  Header only, nothing to link.
 */
#pragma once

#include <stdbool.h>

/* ---- candump (linux/can.h) ---- */

#define TRACE_CD_EFF_FLAG 0x80000000u
#define TRACE_CD_RTR_FLAG 0x40000000u
#define TRACE_CD_ERR_FLAG 0x20000000u
#define TRACE_CD_SFF_MASK 0x000007ffu
#define TRACE_CD_EFF_MASK 0x1fffffffu

/* CAN FD flags nibble, as struct canfd_frame.flags */
#define TRACE_CD_FD_BRS 0x01
#define TRACE_CD_FD_ESI 0x02
#define TRACE_CD_FD_FDF 0x04

/* ---- Vector BLF ---- */

/* object types */
enum {
	TRACE_BLF_CAN_MESSAGE = 1,
	TRACE_BLF_CAN_ERROR = 2,
	TRACE_BLF_LOG_CONTAINER = 10,
	TRACE_BLF_CAN_ERROR_EXT = 73,
	TRACE_BLF_CAN_MESSAGE2 = 86,
	TRACE_BLF_CAN_FD_MESSAGE = 100,
	TRACE_BLF_CAN_FD_MESSAGE_64 = 101,
	TRACE_BLF_CAN_FD_ERROR_64 = 104,
};

#define TRACE_BLF_TIME_TEN_MICS 1 /* object flags: stamps in 10 us, else in ns */

/* a frame's id and flags */
#define TRACE_BLF_ID_EXT 0x80000000u
#define TRACE_BLF_MSG_TX 0x01
#define TRACE_BLF_MSG_RTR 0x80
#define TRACE_BLF_FD_EDL 0x01
#define TRACE_BLF_FD_BRS 0x02
#define TRACE_BLF_FD_ESI 0x04
#define TRACE_BLF_FD64_RTR 0x0010u
#define TRACE_BLF_FD64_EDL 0x1000u
#define TRACE_BLF_FD64_BRS 0x2000u
#define TRACE_BLF_FD64_ESI 0x4000u

/* ---- CAN FD ---- */

/* DLC 0..15 of CAN FD to its length */
static inline unsigned trace_dlc_len(unsigned dlc)
{
	static const unsigned char len[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64 };

	return dlc < 16 ? len[dlc] : 64;
}

/* a length a CAN FD frame can have: 0..8, 12, 16, 20, 24, 32, 48, 64 */
static inline bool trace_fd_len_ok(unsigned len)
{
	return len <= 8 || len == 12 || len == 16 || len == 20 || len == 24 || len == 32 || len == 48 || len == 64;
}

/* ---- packet captures (pcap.c; told apart in trace-text.c) ---- */

/* classic pcap's magic, as written by a host of either byte order:
   microsecond and nanosecond timestamps (tcpdump --nano) */
#define TRACE_PCAP_MAGIC_US 0xa1b2c3d4u
#define TRACE_PCAP_MAGIC_NS 0xa1b23c4du
/* pcapng: the Section Header Block's type (a palindrome: the same in
   either byte order) and its byte-order magic after the block's length */
#define TRACE_PCAPNG_SHB 0x0a0d0d0au
#define TRACE_PCAPNG_BOM 0x1a2b3c4du
