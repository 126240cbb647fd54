/* SPDX-License-Identifier: MIT */
/* acq-private.h - between acquisition/'s own files only (source, collector). */
#pragma once

#include "source.h"

/* The source's link-check events (the monitor produces, the collector
   consumes); NULL when its ops have no check. */
struct acq_ring *acq_source_check_ring(acq_source_t *s);

/*
 * CLOCK_REALTIME time before which the source has pushed every item it
 * read (acquire: load it before draining the source's ring, and the ring
 * then holds all of them).  INT64_MAX once the loop has ended.
 */
int64_t acq_source_watermark(const acq_source_t *s);

/*
 * The monitor's call (monitor.c): the source's check() into events (up to
 * max), only while the source is up and never while its loop releases or
 * reopens the device (a hand-shake, see source.c); the events go into its
 * check ring.  Returns how many.
 */
int acq_source_check(acq_source_t *s, struct acq_item *events, size_t max);
