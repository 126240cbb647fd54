/* SPDX-License-Identifier: MIT */
/*
 * hold-list.h - what `railmon hold list` shows: the event holds of a log (the
 * windows retention keeps around an incident, storage/hold.c), one line
 * each with what it keeps on disk now, written to the caller's streams.
 */
#pragma once

#include <stdio.h>

/* The holds of the log in dir as the table on out (or "DIR: no holds").
   0; 1 with the reason said on err (a damaged holds file named by its
   line, or -errno of reading it); 2 when out of memory, as a usage error
   says it. */
int cli_hold_list(const char *dir, FILE *out, FILE *err);

/* "railmon hold: DIR/holds:LINE: the holds file is damaged ..." on err;
   returns 1 (the exit code). */
int cli_hold_damaged(FILE *err, const char *dir, unsigned line);
