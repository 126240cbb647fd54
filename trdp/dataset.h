/* SPDX-License-Identifier: MIT */
/*
 * dataset.h - a telegram's data set compiled into a flat plan, and a wire
 * payload decoded with it into values.
 *
 * On the wire a data set is big-endian and packed: no padding between
 * elements, nested data sets included (trdp/README.md says where the
 * reference stack shows it).  TIMEDATE48 is seconds u32 + ticks u16
 * (1/65536 s), TIMEDATE64 seconds u32 + microseconds i32.
 *
 * The plan has one leaf per channel: a single value ("Telegram.Element"),
 * each item of a fixed array ("Telegram.Element[3]", from 0), each element
 * of a nested data set ("Telegram.Inner.Element"); a CHAR8 or UTF16 element
 * is one text channel whatever its array size.  A variable array (array-size
 * 0; its length is the value of the element before) is one dynamic leaf
 * whose items carry their index; a variable array of a nested data set makes
 * each leaf inside it dynamic ("Telegram.Inner[2].Element").  One variable
 * array per path: a numeric variable array inside a variable array of data
 * sets is refused when the plan is compiled.
 *
 * trdp_plan_decode() is allocation-free and thread-safe on a compiled plan:
 * it writes into the caller's arrays.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* The most bytes a data set may need without its variable arrays, and the
   most items a variable array may have (a UINT32 length above it is an
   error; an 8-bit length caps it at 255). */
#define TRDP_DATASET_MAX_BYTES 65535u
#define TRDP_VAR_MAX 65535u
/* The most leaves (channels) and steps one plan may have. */
#define TRDP_PLAN_MAX_STEPS 65536u

struct trdp_config;

/* One channel of a plan, as `channels` and `check` show it. */
struct trdp_leaf_info {
	const char *prefix;    /* the whole name, or a dynamic leaf's name before its index */
	const char *suffix;    /* a dynamic leaf's name after "[index]" ("" when the index ends it) */
	bool dynamic;          /* a variable array's item: name = prefix "[index]" suffix */
	uint32_t max_items;    /* dynamic: the most items its length can give */
	uint32_t type;         /* enum trdp_type */
	bool text;             /* CHAR8 or UTF16: a text value */
	const char *unit;      /* "" without one */
	double scale, offset;
};

/* One decoded value. */
struct trdp_value {
	uint32_t leaf;         /* its leaf, 0..trdp_plan_leaves()-1 */
	uint32_t index;        /* its item in a variable array (a dynamic leaf), else 0 */
	uint32_t offset;       /* its first byte in the payload */
	uint32_t type;         /* enum trdp_type */
	union {
		int64_t i;     /* INT8..INT64 */
		uint64_t u;    /* BOOL8 (the byte), UINT8..UINT64, TIMEDATE* (seconds) */
		double f;      /* REAL32, REAL64 */
	} raw;
	int32_t sub;           /* TIMEDATE48 ticks (1/65536 s), TIMEDATE64 microseconds; else 0 */
	double value;          /* raw (times: seconds with their fraction) * scale + offset; 0 for text */
	uint32_t text_off;     /* CHAR8/UTF16: its UTF-8 text at text + text_off (not terminated) */
	uint32_t text_len;
};

/* What one decode did; written whatever it returns. */
struct trdp_decode_result {
	size_t count;          /* values written */
	size_t used;           /* payload bytes read (those after are ignored) */
	size_t text_used;      /* bytes written to text */
	uint32_t offset;       /* on an error: the byte offset of what could not be decoded */
	uint32_t need;         /* -EBADMSG: the bytes it needed there; -ERANGE: the length read */
	uint32_t leaf;         /* on an error: the leaf it was at */
};

/*
 * Compile telegram t's data set (t->dataset) of cfg into *ret_plan; called
 * by trdp_config_load() for each telegram with a data set.  -EINVAL with
 * "file:line:column: what" in err when the plan cannot be made (too many
 * bytes or leaves, a variable array inside a variable array), -ENOMEM.
 */
int trdp_plan_compile(const struct trdp_config *cfg, const struct trdp_telegram *t,
                      struct trdp_plan **ret_plan, char *err, size_t errlen);
struct trdp_plan *trdp_plan_free(struct trdp_plan *plan);

/* The plan's ComId and leaves; info on a leaf lives as long as the plan.
   -EINVAL for a leaf out of range. */
uint32_t trdp_plan_comid(const struct trdp_plan *plan);
size_t trdp_plan_leaves(const struct trdp_plan *plan);
int trdp_plan_leaf(const struct trdp_plan *plan, size_t leaf, struct trdp_leaf_info *ret_info);
/* Bytes the data set needs with each variable array empty. */
size_t trdp_plan_min_bytes(const struct trdp_plan *plan);
/* A value's channel name into buf (cap bytes, terminated, cut if short).
   Returns the name's full length, or -EINVAL. */
int trdp_plan_value_name(const struct trdp_plan *plan, uint32_t leaf, uint32_t index, char *buf, size_t cap);

/*
 * The most values and text bytes a payload of len bytes can decode into:
 * arrays this large never give -ENOBUFS.
 */
size_t trdp_plan_values_max(const struct trdp_plan *plan, size_t len);
size_t trdp_plan_text_max(size_t len);

/*
 * Decode the len bytes of payload (a PD's or MD's data, datasetLength
 * bytes: what follows them is the sender's padding and is not passed) into
 * values (nvalues) and text (textcap bytes).  Bytes after what the plan
 * reads are ignored (res->used says how many it read).  Returns 0, or:
 *   -EBADMSG  the payload ends before the plan does: res->count values were
 *             decoded; res->offset is where the next one starts, res->need
 *             the bytes it needs
 *   -ERANGE   a variable array's length (res->need) is above its maximum
 *   -ENOBUFS  values or text full
 *   -EINVAL   plan or res NULL, or values/text NULL with room claimed
 * RT-safe: no allocation, no lock.
 */
int trdp_plan_decode(const struct trdp_plan *plan, const uint8_t *payload, size_t len,
                     struct trdp_value *values, size_t nvalues, char *text, size_t textcap,
                     struct trdp_decode_result *res);
/* The error of a decode in words, into buf: "ComId 1001: the payload ends
   at byte 8, Tel.x needs 4 bytes there".  Returns snprintf's count. */
int trdp_decode_strerror(const struct trdp_plan *plan, int rc, const struct trdp_decode_result *res,
                         char *buf, size_t cap);
