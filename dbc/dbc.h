/* SPDX-License-Identifier: MIT */
/*
 * dbc.h - CAN database (Vector DBC) parsing and signal decoding.
 *
 * dbc_load() parses a file once, at configuration time (it allocates).
 * dbc_decode() is table-driven, allocation-free and thread-safe on a
 * loaded database; the collector calls it, not the realtime RX thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "acquisition/acq-item.h"

typedef struct dbc dbc_t;

/* One signal as the database declares it (for channel tables and check). */
struct dbc_signal_info {
	const char *message;   /* message name */
	uint32_t msg_id;       /* without flag bits */
	int ext;               /* 29-bit id */
	const char *name;
	const char *unit;
	double min, max;
	double scale, offset;
	bool is_float;         /* SIG_VALTYPE_ float or double: the raw value is no integer */
	unsigned index;        /* 0..dbc_signal_count()-1, file order */
	unsigned line;         /* where the file declares it, for messages */
};

/*
 * Load flags.  Without DBC_STRICT a load accepts what production files
 * contain and the standard Python tools load, with a warning each
 * (dbc_warning()): CM_/VAL_/BA_/SIG_VALTYPE_/SG_MUL_VAL_ naming a
 * message or signal that does not exist (line skipped), a bare 'm'
 * indicator (plain signal), 'mN' in a message without 'M' or with several
 * and no SG_MUL_VAL_ for it (plain signal), SG_MUL_VAL_ naming a
 * multiplexor not marked M (signal skipped), a multiplexor cycle (signals
 * skipped), a signal that does not fit its message (signal skipped, and
 * the signals it multiplexes), CM_ SG_ without a signal name, a message id
 * above 0x7ff without bit 31 (29-bit id) or above 29 bits (message
 * skipped), no message at all, a file that is not UTF-8 (read as CP1252).
 * Multiplexing is resolved as cantools does (bus/CAN.md).  DBC_STRICT
 * refuses each of these as an error.
 * Both accept // comments, a BU_ list over several lines, the
 * VECTOR__INDEPENDENT_SIG_MSG id written 0x40000000 or 0xC0000000 and the
 * long names of BA_ "SystemSignalLongSymbol"/"SystemMessageLongSymbol".
 */
#define DBC_STRICT 1u

/*
 * Parse path.  On a syntax error returns -EBADMSG (or -EINVAL, -ENOENT...)
 * and, if errbuf is not NULL, writes "file:line: what is wrong" into it.
 */
int dbc_load(const char *path, dbc_t **ret_dbc, char *errbuf, size_t errlen);
/*
 * The same from text in memory (len bytes, need not be NUL-terminated);
 * name is used in error messages only.
 */
int dbc_load_buffer(const char *name, const char *text, size_t len, dbc_t **ret_dbc,
                        char *errbuf, size_t errlen);
/* The same two with flags (DBC_*); the two above are lenient (flags 0). */
int dbc_load_flags(const char *path, unsigned flags, dbc_t **ret_dbc, char *errbuf, size_t errlen);
int dbc_load_buffer_flags(const char *name, const char *text, size_t len, unsigned flags,
                              dbc_t **ret_dbc, char *errbuf, size_t errlen);

/* Warnings of a lenient load, in file order ("file:line: what; what was
   done"); the string lives as long as dbc.  NULL when i is out of range. */
unsigned dbc_warning_count(const dbc_t *dbc);
const char *dbc_warning(const dbc_t *dbc, unsigned i);
dbc_t *dbc_free(dbc_t *dbc);

unsigned dbc_signal_count(const dbc_t *dbc);

/* The most samples one frame can decode into (the signal count of the
   largest message): the size of dbc_decode()'s out[].  0 for NULL. */
unsigned dbc_decode_max(const dbc_t *dbc);

/* One message as the database declares it. */
struct dbc_message_info {
	const char *name;
	uint32_t id;           /* without flag bits */
	int ext;
	unsigned dlc;          /* bytes */
	unsigned cycle_ms;     /* BA_ "GenMsgCycleTime", 0 = not given */
	unsigned nsignals;
};

unsigned dbc_message_count(const dbc_t *dbc);
/* Message index (file order); 0 or -EINVAL. */
int dbc_message_info(const dbc_t *dbc, unsigned index, struct dbc_message_info *ret_info);
int dbc_signal_info(const dbc_t *dbc, unsigned index, struct dbc_signal_info *ret_info);

/*
 * Decode one frame into samples: for every signal of the matching message
 * (respecting multiplexing) writes {channel = channel_base + signal index,
 * value, quality} into out[] (t_ns and bus copied from the frame item).
 * Returns the number of samples written (0 for an unknown id), -EINVAL, or
 * -ENOBUFS when the frame decodes into more than max samples (out[] then
 * holds the first max, but a caller that sizes out[] with
 * dbc_decode_max() never sees this).
 */
int dbc_decode(const dbc_t *dbc, const struct acq_item *frame, uint32_t channel_base,
                   struct acq_item *out, size_t max);

/*
 * J1939: decode the payload of PGN pgn (a frame's data, or a message the
 * transport protocol reassembled, up to 1785 bytes) with the DBC's
 * extended message of that PGN, whatever source address and priority its
 * id gives (the first message of a PGN in the file).  A DBC message has
 * at most 64 bytes, so its signals lie there.  Samples as dbc_decode()
 * writes them, stamped t_ns on bus.  Returns their number, 0 for a PGN
 * the DBC does not have, -EINVAL, -ENOBUFS.
 */
int dbc_decode_pgn(const dbc_t *dbc, uint32_t pgn, const uint8_t *data, size_t len, int64_t t_ns,
                       uint16_t bus, uint32_t channel_base, struct acq_item *out, size_t max);

/*
 * Label of a value table (VAL_) entry: value is the physical value a
 * sample carries; it is turned back into the raw integer with the signal's
 * scale and offset.  Returns 0 with *ret_label pointing into dbc (valid
 * until dbc_free), -ENOENT if the signal has no label for it, -EINVAL
 * on bad arguments.
 */
int dbc_value_label(const dbc_t *dbc, unsigned index, double value, const char **ret_label);

/*
 * Entry i of signal index's value table (VAL_), in ascending raw value:
 * the physical value it stands for (raw * scale + offset) and its label
 * (valid until dbc_free).  0, -ENOENT past the last entry, -EINVAL.
 * For `railmon channels` and the channel dictionary.
 */
int dbc_value_entry(const dbc_t *dbc, unsigned index, unsigned i, double *ret_value,
                        const char **ret_label);

/* Index of signal `name` of message msg_id (ext: 29-bit id); 0 or -ENOENT / -EINVAL. */
int dbc_signal_find(const dbc_t *dbc, uint32_t msg_id, int ext, const char *name,
                        unsigned *ret_index);
