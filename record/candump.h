/* SPDX-License-Identifier: MIT */
/* candump.h - one CAN record as one candump log line (candump.c); format.h
   includes it, for every text output. */
#pragma once

#include <stddef.h>

#include "acquisition/acq-item.h"

/* The longest candump line rec_candump_format() writes, NUL included,
   with an interface name of up to 15 characters. */
#define REC_CANDUMP_LINE_MAX 256

/*
 * Format a CAN item as one candump line ending in '\n', NUL-terminated, in
 * buf (REC_CANDUMP_LINE_MAX with an interface name of up to 15 characters
 * is always enough).  Returns the length without the NUL, -ENOBUFS if buf
 * is too small (nothing useful written), -EINVAL for NULL arguments, an
 * empty or blank-containing ifname, a non-CAN item, a negative t_ns, or a
 * frame the format cannot express (id/length out of range, FD with
 * RTR/ERR).  bus_candump_parse() reads the line back to the same item.
 */
int rec_candump_format(const struct acq_item *item, const char *ifname, char *buf, size_t len);
