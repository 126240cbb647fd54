/* SPDX-License-Identifier: MIT */
/*
 * spb.h - Sparkplug B payloads (Eclipse Sparkplug 3.0, issue #33): the
 * BIRTH and DATA payloads of railmon's channels, encoded with protoc-c
 * from sparkplug_b.proto.
 *
 * The payload codec; the topics, the session's numbers and the commands
 * are spb-session.h, the publisher is still to come (README.md).
 *
 * A payload is built into a spb_payload_t whose room is fixed when it is
 * created: adding a metric never allocates, so a publisher sizes it once
 * from its channel count and an oversized board is an error it can name
 * (-ENOSPC), never a growing heap.  Strings (names, units, texts) are
 * borrowed: they must live until spb_payload_encode() returns.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The specification's DataType numbers (Metric.datatype,
   PropertyValue.type); sparkplug_b.proto lists them too. */
enum spb_datatype {
	SPB_DT_UNKNOWN = 0,
	SPB_DT_INT8 = 1,
	SPB_DT_INT16 = 2,
	SPB_DT_INT32 = 3,
	SPB_DT_INT64 = 4,
	SPB_DT_UINT8 = 5,
	SPB_DT_UINT16 = 6,
	SPB_DT_UINT32 = 7,
	SPB_DT_UINT64 = 8,
	SPB_DT_FLOAT = 9,
	SPB_DT_DOUBLE = 10,
	SPB_DT_BOOLEAN = 11,
	SPB_DT_STRING = 12,
	SPB_DT_DATETIME = 13,
	SPB_DT_TEXT = 14,
	SPB_DT_UUID = 15,
	SPB_DT_DATASET = 16,
	SPB_DT_BYTES = 17,
	SPB_DT_FILE = 18,
	SPB_DT_TEMPLATE = 19,
	SPB_DT_PROPERTYSET = 20,
	SPB_DT_PROPERTYSETLIST = 21,
	SPB_DT_MAX
};

/* The metric property that carries a channel's unit: the key Ignition and
   Tahu hosts show as the tag's engineering unit. */
#define SPB_PROP_UNIT "engUnit"
/* A channel's value table (a DBC's VAL_, a board's labels) as a BIRTH
   metric's String property: railmon's "VALUE LABEL" entries, one a line
   ("0 closed\n1 open"), as railmon.proto's Channel.value_table holds
   them.  Sparkplug has no standard key for labels; a host shows it as a
   tag property. */
#define SPB_PROP_VALUE_TABLE "railmonValueTable"
/* A DATA metric's value that is not good: the properties Quality (Int32,
   the Sparkplug/Ignition code 0 = Bad; good values carry none) and
   railmonQuality (String, railmon's word: out_of_range, invalid). */
#define SPB_PROP_QUALITY "Quality"
#define SPB_PROP_RAILMON_QUALITY "railmonQuality"
#define SPB_QUALITY_BAD 0
/* railmonQuality of a good sample whose value its channel's datatype
   cannot hold (a fraction or 2^40 in an Int32): sent is_null, not cast. */
#define SPB_QUALITY_OUT_OF_TYPE "out_of_type"

/* A railmon channel's Sparkplug datatype from what the channel dictionary
   says of its values (record/railmon.proto's Channel): a text channel
   (Modbus type = string) is a String; with decimals 0 (every value an
   integer: the DBC factor and offset, the Modbus scale and offset are
   integral) a Boolean when range is [0, 1] (a 1-bit flag), an Int32 when
   the range fits one, else an Int64 (no range, or a wider one); anything
   else (decimals < 0: unknown, or > 0) a Double, the physical value after
   scale and offset as acq_sample.value holds it.  Signed, not UInt: a
   value outside its declared range (quality out_of_range) may be below
   0, Int32 holds every UInt16 too, and UInt32 is refused (below).
   range: NULL when none is declared, else [min, max]. */
enum spb_datatype spb_datatype_of_channel(bool is_text, int decimals, const double *range);

/* Whether a sample's value v fits datatype: an integer type an integral
   value in its range, a Boolean 0 or 1; a Float or Double anything (NaN
   included, as an invalid sample has); the other types none. */
bool spb_value_fits(uint32_t datatype, double v);

/* One metric's value.  num holds the numeric and Boolean types (an
   integer type must hold an integral value in its range, a Boolean 0 or
   1, else -ERANGE: spb_value_fits()),
   text the String, Text and UUID types (valid UTF-8, NUL-terminated). */
struct spb_value {
	uint32_t datatype; /* enum spb_datatype */
	bool is_null;      /* no value (a channel never received): is_null */
	double num;
	const char *text;
};

/* A metric as NBIRTH/DBIRTH declares it. */
struct spb_birth_metric {
	const char *name;  /* qualified channel name, not NULL or "" */
	uint64_t alias;    /* the alias DATA uses */
	uint64_t t_ms;     /* ms since the epoch, UTC */
	const char *unit;  /* NULL or "": no unit property */
	struct spb_value value;
	const char *labels; /* NULL or "": no SPB_PROP_VALUE_TABLE property */
};

/* A metric of NDATA/DDATA: the alias only, as BIRTH declared it. */
struct spb_data_metric {
	uint64_t alias;
	uint64_t t_ms;
	bool is_historical; /* from store-and-forward, not live */
	struct spb_value value;
	const char *quality; /* NULL or "": good; else railmon's word (borrowed) */
};

typedef struct spb_payload spb_payload_t;

/* A payload with room for max_metrics metrics (1..SPB_METRICS_MAX).
   Returns 0 and *ret_pl, -EINVAL or -ENOMEM. */
#define SPB_METRICS_MAX 65536u
int spb_payload_new(size_t max_metrics, spb_payload_t **ret_pl);
/* Frees pl (NULL is fine); returns NULL. */
spb_payload_t *spb_payload_free(spb_payload_t *pl);

/* Starts a payload: no metrics, the payload's timestamp (ms since the
   epoch) and seq (0..255, every Sparkplug message but NDEATH has one). */
void spb_payload_reset(spb_payload_t *pl, uint64_t t_ms, uint8_t seq);

/* Drops the seq of the payload started by the last reset: NDEATH is the
   one message without one (the MQTT will, registered at connect and sent
   by the broker whenever the link dies, so no seq can be right). */
void spb_payload_drop_seq(spb_payload_t *pl);

/* Appends a BIRTH metric: name, alias, datatype, timestamp, the value
   and, with a unit, the property SPB_PROP_UNIT, with labels
   SPB_PROP_VALUE_TABLE.  Returns 0, -EINVAL (no
   name, an unknown or unsupported datatype, text missing), -ERANGE (a
   value outside its integer type) or -ENOSPC (the payload is full). */
int spb_payload_add_birth(spb_payload_t *pl, const struct spb_birth_metric *m);

/* Appends a DATA metric: alias, timestamp, datatype and value.  The
   datatype is sent though the specification says DATA SHOULD NOT carry
   it: Tahu's own decoders read a value by its datatype and return
   nothing without one (2 bytes a metric).  Returns as add_birth. */
int spb_payload_add_data(spb_payload_t *pl, const struct spb_data_metric *m);

/* A String DATA metric as m says (its value aside) whose text is copied
   into the payload (len bytes, not NUL-terminated, at most
   SPB_TEXT_COPY_MAX): a text that does not live until the encode (a
   record read from a Batch).  Returns as add_data, or -E2BIG. */
#define SPB_TEXT_COPY_MAX 64
int spb_payload_add_data_text(spb_payload_t *pl, const struct spb_data_metric *m, const char *text, size_t len);

/* Drops the metrics added after the first n (n >= the count: nothing). */
void spb_payload_truncate(spb_payload_t *pl, size_t n);

/* The metrics added since the last reset. */
size_t spb_payload_count(const spb_payload_t *pl);
/* The encoded size of the payload, in bytes. */
size_t spb_payload_size(const spb_payload_t *pl);
/* Encodes the payload into buf (cap bytes).  Returns the bytes written,
   or -EMSGSIZE if cap < spb_payload_size() (buf untouched). */
int spb_payload_encode(const spb_payload_t *pl, uint8_t *buf, size_t cap);
