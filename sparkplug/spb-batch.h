/* SPDX-License-Identifier: MIT */
/*
 * spb-batch.h - a bus device's DBIRTH from the channel list, and its
 * DDATA from one stored Batch (issue #33): what the publisher will send
 * per device, without MQTT.
 *
 * A device is one bus (its index in the board file, acq_item.bus).  A
 * channel's metric name is its qualified name, its alias
 * SPB_ALIAS_CHANNELS + its channel id (spb-session.h), its datatype the
 * channel's (spb_datatype_of_channel()).  DDATA carries each sample and text of the
 * device's bus in the Batch, in the Batch's order, with its own
 * timestamp; other records (CAN and TRDP frames, events) are not metrics
 * (counted by the caller from the return).  Not RT-safe; no allocation
 * (the payload's room is fixed).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"
#include "sparkplug/spb.h"

/* A channel as a device declares it. */
struct spb_channel {
	uint32_t id;       /* board-wide channel id (bus << 16 | n) */
	uint16_t bus;      /* its device */
	const char *name;  /* qualified name, borrowed */
	const char *unit;  /* NULL or "": none */
	bool is_text;
	const char *labels; /* NULL or "": none; else its value table, one "VALUE LABEL" a line */
	uint32_t datatype;  /* spb_datatype_of_channel(); SPB_DT_UNKNOWN: a String for a text, else a Double */
};

/* The alias of a channel id (unique across the node and its devices). */
uint64_t spb_channel_alias(uint32_t channel_id);

/*
 * Appends the DBIRTH metrics of bus's channels (the others in the list
 * are skipped) to pl, which the caller started (spb_session_next()): each
 * with no value yet (is_null: the log's next sample gives one) at t_ms.
 * Returns the metrics added, -EINVAL or spb_payload_add_birth()'s error
 * (-ENOSPC: pl too small for the bus).
 */
int spb_dbirth_add_channels(spb_payload_t *pl, const struct spb_channel *ch, size_t n, uint16_t bus,
                            uint64_t t_ms);

/* What a record says of its bus as a device: -1 gone (CAN_GONE,
   MB_DISCONNECT: DDEATH due), +1 back (CAN_BACK, MB_CONNECT: DBIRTH
   due), 0 nothing. */
int spb_device_change(const struct acq_item *it);

/* A channel's datatype as its DBIRTH declares it (ch[].datatype; a
   channel not in ch: a Double). */
uint32_t spb_channel_datatype(const struct spb_channel *ch, size_t n, uint32_t channel_id, bool is_text);

/*
 * Appends the DDATA metrics of bus's samples and texts in b to pl (started
 * by the caller), flagged is_historical when historical (records sent
 * after an outage), each sample with its channel's datatype (ch, n as
 * spb_dbirth_add_channels() had them).  A sample whose value does not fit
 * it (spb_value_fits(): NaN, a fraction or a value outside an integer
 * type, neither 0 nor 1 for a Boolean) goes is_null with the quality
 * properties (its own quality word, "out_of_type" for a good one) and
 * counts in *nulled (NULL: not counted; only when the Batch goes whole).
 * Returns the metrics added, -EINVAL, -EBADMSG (a record the Batch cannot
 * give) or -ENOSPC (pl is full: nothing of b's is kept half: pl holds
 * what it held before).
 */
int spb_ddata_add_batch(spb_payload_t *pl, const rec_batch_t *b, const struct spb_channel *ch, size_t n,
                        uint16_t bus, bool historical, uint64_t *nulled);

/*
 * Appends the node's NDATA metrics for b's events to pl (started by the
 * caller): one `Events` String metric (SPB_ALIAS_EVENTS) per event
 * record, in the Batch's order, at its own time, its value
 * "<EVENT> <bus> detail <n> arg <n>" (the event's name as `railmon
 * export` says it, its number for one the schema does not name; the bus
 * by bus_names[bus], "bus <n>" past nbus), cut at SPB_TEXT_COPY_MAX
 * bytes.  Returns the metrics added, or as spb_ddata_add_batch().
 */
int spb_ndata_add_events(spb_payload_t *pl, const rec_batch_t *b, const char *const *bus_names, size_t nbus,
                         bool historical);
