/* SPDX-License-Identifier: MIT */
/*
 * log-channels.h - `railmon channels`' listing, from a board file's
 * dictionary or from the dictionaries a log carries.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "conf/config.h"
#include "record/channels.h"

/* A header line and one row per channel (id, bus, name, unit, range,
   source, value table), or one JSON object per channel, on out.  The
   columns are as wide as their longest text (at least 12, 28, 8, 16 and
   32); width > 0 (a terminal's columns): a longer line is cut there and
   ends in RPT_CUT_MARK (report/say.h); 0: never cut. */
void rpt_channels_print(FILE *out, const struct rec_channel *const *list, size_t n, bool json, int width);

/* Every dictionary of the log in dir into map (every Batch that carries
   one, latest wins; damage is export's and stat's to say).  0, or -errno
   when the log cannot be opened. */
int rpt_channels_learn_log(const char *dir, rec_channels_t *map);

/* The one --channel resolver of every command that takes a channel name
   on a log (export, summary): each want[k] is a qualified name
   "Message.Signal", or a bare signal name only one message of map has
   (rec_channels_resolve); its dictionary name goes into resolved[k] (the
   old one freed, free() the new).  An ambiguous name is refused with its
   candidates, an unknown one with the nearest names, each one sentence
   "railmon CMD: --channel ..." naming dir on err.  How many were refused,
   or -ENOMEM. */
int rpt_channels_resolve(FILE *err, const char *cmd, const char *dir, const rec_channels_t *map,
                         const char *const *want, size_t n, char **resolved);

/* The channels board cfg (read from path, as messages name it) defines,
   its DBC files' too, listed on out (rpt_channels_print's width); the
   count or why not on err.  The
   exit code: 0, 1 (a DBC cannot be used), 2 (no memory). */
int rpt_channels_of_board(FILE *out, FILE *err, const struct conf_board *cfg, const char *path, bool json,
                          int width);

/* The channels the log in dir names in its dictionaries, listed on out;
   the count, none or why not on err.  The exit code: 0, 1 (no log, no
   dictionary in it), 2 (no memory). */
int rpt_channels_of_log(FILE *out, FILE *err, const char *dir, bool json, int width);
