/* SPDX-License-Identifier: MIT */
/*
 * channels.h - `railmon channels`' listing, from a board file's
 * dictionary (board/ builds it) or from the dictionaries a log carries.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "record/channels.h"

/* A header line and one row per channel (id, bus, name, unit, range,
   source, value table), or one JSON object per channel, on out. */
void rpt_channels_print(FILE *out, const struct rec_channel *const *list, size_t n, bool json);

/* Every dictionary of the log in dir into map (every Batch that carries
   one, latest wins; damage is export's and stat's to say).  0, or -errno
   when the log cannot be opened. */
int rpt_channels_learn_log(const char *dir, rec_channels_t *map);
