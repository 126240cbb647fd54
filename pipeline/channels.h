/* SPDX-License-Identifier: MIT */
/*
 * channels.h - the channels of a board: every Modbus register and every
 * signal of a CAN bus's DBC, with its id (bus << 16 | n, stable for a given
 * board file), name, unit and source; the DBC of each CAN bus, to decode
 * frames into samples; and each channel's latest value, for display.
 *
 * Built once at start (it allocates); then the collector thread decodes
 * and writes the latest values, any thread reads them (relaxed atomics, a
 * value with its time).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "acquisition/acq-item.h"
#include "dbc/dbc.h"
#include "conf/config.h"

/* A channel as the daemon knows it: Modbus register or DBC signal.  A
   signal's name is qualified, "Message.Signal" (two messages may both
   carry an AliveCounter); pl_channels_find() takes a bare one. */
struct pl_channel {
	uint32_t id;              /* bus << 16 | index */
	char name[128];
	const char *unit;         /* whole, never NULL ("" for none): a DBC's
	                             (real files have units of up to 49
	                             characters) or the board file's; lives as
	                             long as the channels and their cfg */
	uint16_t bus;
	char source[96];          /* "modbus traction u1 input 3" / "can vehicle SPEED" */
	int8_t decimals;          /* the values' resolution (rec_format_decimals()), -1: none */
};

struct pl_live {
	double value;
	int64_t t_ns;             /* 0 = never received */
	uint32_t quality;
	bool is_text;             /* a text channel (Modbus type = string): text, not value */
	char text[ACQ_TEXT_MAX + 1];
};

typedef struct pl_channels pl_channels_t;
struct rec_channel;

/*
 * Load the DBC of every CAN bus of cfg (pl_dbc_load) and list every
 * channel.  cfg must outlive the result.  0, or -errno with the message
 * (naming the board file and line) in err.
 */
int pl_channels_new(const struct conf_board *cfg, pl_channels_t **ret_channels, char *err, size_t errlen);
pl_channels_t *pl_channels_free(pl_channels_t *ch);

/* The channels, in id order per bus; returns how many. */
size_t pl_channels_list(const pl_channels_t *ch, const struct pl_channel **ret_list);

/* The same channels as the Batch dictionary wants them (record/batch.h);
   as many as pl_channels_list() returns. */
const struct rec_channel *pl_channels_dictionary(const pl_channels_t *ch);

/*
 * Decode a CAN frame with its bus's DBC into samples (out, up to max).
 * Returns their number: 0 for a bus without DBC, an error frame, a frame
 * the DBC does not describe.  pl_channels_decode_max() samples always
 * fit (the largest message of any DBC, and on a J1939 bus the events one
 * frame can give).  On a bus with j1939 = true (the collector thread only:
 * it keeps the transport sessions): 29-bit frames match the DBC by PGN,
 * TP.CM/TP.DT are reassembled and the whole message decoded, and out also
 * gets events: ACQ_EV_J1939_TP_FAULT for a session that ended without its
 * message, ACQ_EV_J1939_DTC_ACTIVE/CLEARED for a DM1's trouble codes.
 */
int pl_channels_decode(pl_channels_t *ch, const struct acq_item *frame, struct acq_item *out, size_t max);
size_t pl_channels_decode_max(const pl_channels_t *ch);

/* What the decoding of a TRDP bus's telegrams did (the collector counts). */
struct pl_trdp_counts {
	uint64_t decoded;        /* telegrams decoded into samples */
	uint64_t unknown;        /* valid telegrams of a ComId the XML does not have */
	uint64_t bad;            /* data sets shorter than the plan (or a variable
	                            array over its maximum): not decoded */
	uint64_t past_channels;  /* variable-array items past the channels they have */
	uint64_t timeouts;       /* TRDP_TIMEOUT events given */
	uint64_t backs;          /* TRDP_BACK events given */
};
/*
 * PD supervision on the collector: TRDP_TIMEOUT events (into out, up to
 * max; returns how many) for each telegram of a TRDP bus's XML with a PD
 * timeout (the XML's, else 3 cycles) that was received and is silent for
 * more than its timeout + grace at now.  pl_channels_decode() does the same
 * by each telegram's receive time (grace 0) and gives TRDP_BACK on a
 * telegram's return, so a replay, which does not tick, gives the same
 * events between telegrams; a tick only adds those of a silence at the end.
 */
size_t pl_channels_tick(pl_channels_t *ch, int64_t now_ns, int64_t grace_ns, struct acq_item *out, size_t max);

/* The counts of TRDP bus b: 0, or -EINVAL (no XML on it). */
int pl_channels_trdp_counts(const pl_channels_t *ch, size_t b, struct pl_trdp_counts *ret_counts);

/* The DBC of bus b, NULL if none. */
const dbc_t *pl_channels_dbc(const pl_channels_t *ch, size_t b);

/* Note a sample as its channel's latest value (the collector thread);
   samples of channels not on this board are ignored. */
void pl_channels_set_live(pl_channels_t *ch, const struct acq_item *sample);

/* Latest value of channel i (index into the list); any thread. */
int pl_channels_live(const pl_channels_t *ch, size_t i, struct pl_live *ret_live);

/*
 * The channel a user names (watch, triggers): its name, or a bare signal
 * name where only one message has it (rec_name_resolve(), the resolution
 * every command shares).  0 and the index into the list; -ENOENT;
 * -ENOTUNIQ with the candidates in why; -EINVAL.
 */
int pl_channels_find(const pl_channels_t *ch, const char *name, size_t *ret_index, char *why, size_t whylen);

/* The index of channel id in the list, -1 if not on this board.  O(1),
   RT-safe. */
ssize_t pl_channels_index(const pl_channels_t *ch, uint32_t id);

/* The value a label of channel i's DBC value table stands for: 0 and
   *ret_value, -ENOENT (no such label, no table), -EINVAL. */
int pl_channels_label_value(const pl_channels_t *ch, size_t i, const char *label, double *ret_value);

/* Label for a value of channel i (DBC value table), NULL if none. */
const char *pl_channels_value_label(const pl_channels_t *ch, size_t i, double value);

/*
 * Load the DBC of CAN bus b of cfg as `run` and `check` do.  Errors name the
 * board file and the line of the bus's 'dbc =' (a DBC's own syntax errors
 * keep its file:line first).  Refuses, besides what dbc_load() refuses,
 * a DBC that defines no message (it would decode nothing), one with more
 * signals than a bus has channel ids (CONF_BUS_CHANNELS_MAX), and a
 * qualified name "Message.Signal" longer than struct pl_channel holds
 * (cut, two names could become one); units are kept whole.  A DBC that
 * defines no message loads with a warning (dbc_warning()): the bus
 * logs raw frames only.  The bus's dbc_strict chooses
 * a strict load; a lenient one's warnings are dbc_warning()'s.  0 and the database in *ret_dbc (free with
 * dbc_free), or -errno.
 */
int pl_dbc_load(const struct conf_board *cfg, size_t b, dbc_t **ret_dbc, char *err, size_t errlen);

/*
 * Load the XML of TRDP bus b of cfg as `run` and `check` do
 * (trdp_config_load).  Errors in the XML keep its file:line:column first,
 * then name the board file's line of 'xml ='; others name that line
 * first.  0 and the configuration in *ret_cfg (free with
 * trdp_config_free), or -errno.
 */
struct trdp_config;
int pl_trdp_load(const struct conf_board *cfg, size_t b, struct trdp_config **ret_cfg, char *err, size_t errlen);
