/* SPDX-License-Identifier: MIT */
/*
 * sparkplug.h - the Sparkplug B edge node of a running railmon ([sparkplug]
 * of the board, issue 33): uplink/'s publisher (spb-pub.h) over the log
 * through a reader of its own, its devices the board's buses (all, or
 * `devices =`), its metrics the buses' channels.  Its bdSeq and cursor
 * files are in the data directory.  Beside the forwarder, never in the
 * acquisition's way: its own thread, reader and connection.
 */
#pragma once

#include "conf/config.h"
#include "pipeline/channels.h"
#include "storage/stor.h"
#include "uplink/spb-pub.h"

struct pl_sparkplug {
	upl_spb_t *pub;                /* NULL without [sparkplug] */
	stor_reader_t *reader;
	struct spb_channel *chans;
	char *labels;                  /* the channels' value tables, one block */
	size_t nchans;
	struct upl_spb_device devs[CONF_BUSES_MAX];
	size_t ndevs;
	/* the publisher's counters when it stopped, for the run's summary */
	struct upl_spb_stats last;
	bool stopped;
};

/* Sets up s for cfg's [sparkplug] (nothing without one) over the log in
   dir, with ch's channels (which must outlive s).  Not started.  0, or
   -errno with the message in err; close s either way. */
int pl_sparkplug_open(struct pl_sparkplug *s, const struct conf_board *cfg, const char *dir,
                      const pl_channels_t *ch, char *err, size_t errlen);

/* Stops the publisher (its NDEATH said, its cursor stored) and frees it
   and its reader, keeping its final counters in s->last; s may be
   zeroed.  Safe to call twice. */
void pl_sparkplug_close(struct pl_sparkplug *s);
