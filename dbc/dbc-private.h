/* SPDX-License-Identifier: MIT */
/* dbc-private.h - the loaded database, shared by dbc-parse.c and dbc.c only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "dbc.h"

#define DBC_MUX_SLOTS 16 /* multiplexor signals per message */
#define DBC_INDEPENDENT_ID 0xc0000000u /* VECTOR__INDEPENDENT_SIG_MSG */
/* The same pseudo-message as some tools write it: bit 30 only, no bit 31. */
#define DBC_INDEPENDENT_ID_ALT 0x40000000u

struct dbc_range {
	uint64_t lo, hi;
};

struct dbc_label {
	int64_t value;
	char *label;
};

enum dbc_valtype {
	DBC_INT = 0,
	DBC_FLOAT = 1,
	DBC_DOUBLE = 2,
};

/* A signal as declared, plus what decode needs, precompiled at load. */
struct dbc_sig {
	char *name;
	char *long_name;       /* BA_ "SystemSignalLongSymbol", replaces name at the end */
	bool skip;             /* dropped with a warning (lenient mode) */
	char *unit;
	unsigned msg;          /* index into bus_dbc.msgs */
	unsigned line;         /* for errors found after parsing */
	unsigned start;        /* DBC start bit (LSB for Intel, MSB for Motorola) */
	unsigned size;
	bool motorola;
	bool is_signed;
	enum dbc_valtype valtype;
	double scale, offset, min, max;
	/* multiplexing as declared */
	bool is_mux;           /* "M" or "mNM" */
	bool muxed;            /* "mN" or "mNM" */
	bool marked;           /* any indicator but a bare "m" (read as plain) */
	uint64_t mux_val;
	char *mux_parent;      /* SG_MUL_VAL_ multiplexor name */
	struct dbc_range *ranges;  /* SG_MUL_VAL_'s, then (resolved) the values that select it */
	unsigned nranges;
	unsigned mul_line;
	int parent;            /* resolved multiplexor (signal index), -1: always decoded */
	struct dbc_label *labels;
	unsigned nlabels;
};

/* One decode step; a message's ops are ordered multiplexors first. */
struct dbc_op {
	uint8_t kind;          /* enum dbc_op_kind */
	uint8_t size;
	uint8_t shift;
	uint8_t first;         /* first byte (slow paths) */
	uint8_t nbytes;        /* bytes spanned (slow paths) */
	uint8_t need_len;      /* frame must be at least this long */
	uint8_t valtype;
	uint8_t slow_value;    /* float, double or unsigned 64-bit */
	uint8_t sext;          /* 64 - size for signed integers, else 0 */
	int8_t mux_slot;       /* >= 0: this signal is a multiplexor */
	int8_t parent_slot;    /* >= 0: decoded only if the multiplexor matches */
	uint8_t nranges;
	uint32_t index;        /* signal index = channel offset */
	uint64_t mask;
	double scale, offset;
	double min, max;       /* -inf/+inf when the DBC declares no range */
	const struct dbc_range *ranges;
};

enum dbc_op_kind {
	DBC_OP_LE = 0,   /* Intel within bytes 0..7 */
	DBC_OP_BE = 1,   /* Motorola within bytes 0..7 */
	DBC_OP_LE_SLOW = 2,
	DBC_OP_BE_SLOW = 3,
};

struct dbc_msg {
	uint32_t id;
	bool ext;
	char *name;
	char *long_name;       /* BA_ "SystemMessageLongSymbol" */
	unsigned dlc;
	unsigned cycle_ms;     /* BA_ "GenMsgCycleTime", 0 = not given */
	unsigned line;
	unsigned first, nsig;  /* signals [first, first + nsig) in file order */
	struct dbc_op *ops;    /* nsig, decode order */
};

struct dbc_warning {
	unsigned line, seq;         /* seq: found in this order (parse, then checks) */
	char *text;                 /* "file:line: text; what was done" */
};

struct dbc_ext_key {
	uint32_t id;
	unsigned msg;
};

struct dbc {
	struct dbc_msg *msgs;
	unsigned nmsgs, capmsgs;
	struct dbc_sig *sigs;
	unsigned nsigs, capsigs;
	uint16_t std_index[2048];   /* message index + 1, 0 = unknown id */
	struct dbc_ext_key *ext_index; /* sorted by id */
	struct dbc_ext_key *pgn_index; /* J1939: extended messages by PGN, sorted, first of a PGN kept */
	unsigned npgn;
	unsigned next;
	unsigned decode_max;        /* signals of the largest message */
	unsigned flags;             /* DBC_* */
	struct dbc_warning *warnings; /* sorted by line once loaded */
	unsigned nwarnings, capwarnings;
};

/* dbc-warn.c: "path:line: " and the text into errbuf; returns -EBADMSG. */
__attribute__((format(printf, 5, 6)))
int dbc_err(char *errbuf, size_t errlen, const char *path, unsigned line, const char *fmt, ...);
/*
 * dbc-warn.c: something a lenient load accepts with a warning and a strict one refuses:
 * strict, writes "path:line: text" into errbuf and returns -EBADMSG;
 * lenient, keeps "path:line: text; action" and returns 0 (or -ENOMEM).
 */
__attribute__((format(printf, 7, 8)))
int dbc_warn(struct dbc *dbc, const char *path, unsigned line, const char *action, char *errbuf,
             size_t errlen, const char *fmt, ...);

/* dbc-parse.c: fill msgs/sigs from the text; errors "path:line: ..." */
int dbc_parse(struct dbc *dbc, const char *path, const char *text, size_t len,
              char *errbuf, size_t errlen);
/* dbc-text.c: offset of the first byte that is not valid UTF-8 (len if
   none); CP1252 to UTF-8 (malloc'd). */
size_t dbc_utf8_invalid_at(const char *text, size_t len);
int dbc_cp1252_to_utf8(const char *text, size_t len, char **ret_text, size_t *ret_len);
