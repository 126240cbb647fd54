/* SPDX-License-Identifier: MIT */
/*
 * logsource.h - a railmon log as a source (`railmon replay LOGDIR`): its
 * records go back through the pipeline from one acq_source thread into
 * one ring, so the collector sees the log's order whatever the timing.
 * Raw CAN frames are decoded again with the board's DBC (which may be
 * newer than the one used on the train); Modbus samples and bus events are
 * kept, by bus index; samples decoded from CAN, the old run's start and
 * stop and the daemon's own events, its seal events among them, are left
 * out (this run makes its own, and seals its own log).  Unreadable parts are
 * handed to the caller's callbacks (cli/ says them on stderr), counted,
 * and skipped.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acquisition/source.h"
#include "conf/config.h"
#include "storage/stor.h"

typedef struct pl_logsource pl_logsource_t;

/* What the replay could not read, on the source's thread.  reader: after
   stor_reader_next() said -EBADMSG; returns true when records were (or may
   have been) skipped.  undecodable: a record the log holds intact that is
   no Batch (always a loss).  Any may be NULL (counted only; tail: not
   looked at). */
struct pl_logsource_faults {
	bool (*reader)(void *ctx, const char *dir, const stor_reader_t *rd);
	void (*undecodable)(void *ctx, const char *dir, const struct stor_rec *rec, int err);
	/* at the end of the log, once: whether damage in the newest, unsealed
	   segment stopped the reader before its end (stor_reader_tail()) */
	bool (*tail)(void *ctx, const char *dir, stor_reader_t *rd);
	void *ctx;
};

/* The source's callbacks (ctx = the log source): recv only. */
extern const struct acq_source_ops pl_logsource_ops;

/* A source over the log in dir for the buses of cfg (both must outlive it).
   Nothing is opened yet: the source's own thread opens the log.  0,
   -EINVAL, -ENOMEM. */
struct acq_bytes;
/* Where the log's TRDP telegrams' bytes are copied for the sink to
   release (the source's Batch is freed while its items wait in the ring);
   set before the source runs, must outlive it. */
void pl_logsource_set_bytes(pl_logsource_t *ls, struct acq_bytes *bytes);

int pl_logsource_new(const struct conf_board *cfg, const char *dir, const struct pl_logsource_faults *faults,
                     pl_logsource_t **ret_source);
pl_logsource_t *pl_logsource_free(pl_logsource_t *ls);

/* Items of bus b that went into the ring; any thread. */
uint64_t pl_logsource_items(const pl_logsource_t *ls, size_t b);

/* Unreadable parts skipped so far (said on stderr); any thread. */
uint64_t pl_logsource_skipped(const pl_logsource_t *ls);

/* The -errno that ended the replay early, 0 if none.  Read it once the
   source is done (acq_source_done: its thread wrote it before). */
int pl_logsource_error(const pl_logsource_t *ls);
