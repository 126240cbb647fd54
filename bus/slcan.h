/* SPDX-License-Identifier: MIT */
/*
 * slcan.h - Lawicel/slcan ASCII frames (USB-CAN adapters such as CANable,
 * USBtin) and the driver that reads them from a serial tty
 * (bus_can_slcan_ops, BUS_CAN_SLCAN).
 *
 * Frame lines, terminated by CR:
 *   t iii L dd..      standard data       T iiiiiiii L dd..   extended data
 *   r iii L           standard remote     R iiiiiiii L        extended remote
 *   d iii L dd..      FD, standard        D iiiiiiii L dd..   FD, extended
 *   b iii L dd..      FD + BRS, standard  B iiiiiiii L dd..   FD + BRS, extended
 * L is the DLC digit (0-8 classic; 0-F for FD: 9..F = 12,16,20,24,32,48,64
 * bytes), optionally followed by the adapter's 4-hex-digit millisecond
 * timestamp (Z1 mode).
 */
#pragma once

#include <stddef.h>

#include "acquisition/acq-item.h"

/* 'D' + 8 id digits + DLC + 128 data digits + 4 timestamp digits */
#define BUS_SLCAN_LINE_MAX 142

/*
 * Parse one frame line (without its CR; len bounds the read, a NUL before
 * len ends it) into *ret_item (kind CAN, t_ns 0:
 * the caller stamps it, bus 0).  The adapter timestamp, if present, is
 * checked and dropped (see slcan.c for why).  Returns 0, -EBADMSG for
 * anything else (nothing written), -EINVAL for NULL arguments.  No
 * allocation; safe on any input.
 */
int bus_slcan_parse(const char *line, size_t len, struct acq_item *ret_item);
