/* SPDX-License-Identifier: MIT */
/*
 * logfault.h - what the offline tools (export, stat, replay) say about the
 * parts of a log they could not read: one line per fault, naming the file
 * and the records it cost.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "storage/stor.h"

/*
 * After stor_reader_next() returned -EBADMSG: print "railmon CMD: DIR/NAME:
 * what was found: records A..B skipped" on out (the
 * caller's stream: cli/ gives stderr).  Returns true when records
 * were (or may have been) skipped, false when nothing was lost (a damaged
 * header copy read through the other one, an unproven end with nothing
 * missing after it): the caller's exit status depends on it.
 */
bool rpt_log_fault_print(FILE *out, const char *cmd, const char *dir, const stor_reader_t *r);

/* A Batch the log holds intact but that does not decode: said the same way
   (segment file, offset, records).  Always a loss. */
void rpt_log_undecodable_print(FILE *out, const char *cmd, const char *dir, const struct stor_rec *rec, int err);

/*
 * After stor_reader_next() returned 0 (the end): whether the newest
 * segment, left open (a live log, or one a power cut stopped), holds bytes
 * other than zeros after its last good frame.  Those can be damage in the
 * middle of the segment or a write a power cut tore: the reader cannot
 * tell, and cannot read past them, so what follows is not read.  Said on out
 * with the file and the offsets, and true returned (a possible loss);
 * false when the end is clean or the newest segment was sealed.
 */
bool rpt_log_tail_print(FILE *out, const char *cmd, const char *dir, stor_reader_t *r);
