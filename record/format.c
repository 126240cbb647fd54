/* SPDX-License-Identifier: MIT */
/* format.c - records as CSV, JSON lines, influx or candump lines (format.h).
 *
 * One job, every byte of a record's text, and kept in one file (over the
 * house's ~600 lines) on purpose: export's speed (issue 29) comes from the
 * writer's hot path - the fields, the escapes, the integer, value and time
 * digits and the 256 KiB block they go into - being static functions the
 * compiler inlines into each format's row.  In order: values at their
 * resolution (rec_format_value), the writer's buffer and fields (w_*), the
 * schema's rows (row_*), influx, candump, and the public entries. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "format.h"
#include "trace/candump.h"
#include "names.h"
#include "basic/escape.h"
#include "basic/hex.h"
#include "basic/shortest.h"
#include "basic/utc.h"

_Static_assert(REC_LOG_ID_MAX == REC_LOG_ID_LEN, "a log id fits struct rec_origin");
_Static_assert(REC_DOUBLE_MAX >= BASIC_SHORTEST_MAX, "basic_shortest_g() writes into a value's room");

/* The one schema: CSV's header and JSON's keys, in this order. */
static const char *const rec_columns[] = {
	"vehicle", "log_id", "seq", "time", "time_ns", "kind", "bus", "bus_name", "channel", "name", "unit",
	"value", "quality", "label", "can_id", "flags", "data", "event", "arg", "detail",
};
#define REC_NCOLUMNS (sizeof(rec_columns) / sizeof(rec_columns[0]))

int rec_format_double(double v, char *buf, size_t len)
{
	int n = -EINVAL;

	if (!buf || len < REC_DOUBLE_MAX || !isfinite(v))
		return -EINVAL;
	/* the same text in integers, without printf and strtod, for what it
	   covers (|v| within ~1e+-22, normal) */
	n = basic_shortest_g(v, buf);
	if (n >= 0)
		return n;
	/* Any 15-digit decimal names one double (DBL_DIG): when 15 digits read
	   back to v, %.15g (trailing zeros dropped) is the shortest form; else
	   16, and 17 always do.  A subnormal has fewer digits: try them all. */
	for (int prec = v != 0 && fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
		n = snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return n;
}

int rec_format_decimals(double scale, double offset)
{
	int ds = -1, doff = -1;
	char b[64];

	if (!isfinite(scale) || !isfinite(offset) || scale == 0)
		return -1;
	/* The fewest decimals that write each exactly (as read from the DBC
	   or board file text): raw * scale + offset has no more than the
	   larger of the two, and past 15 no decimal text names the double. */
	for (int d = 0; d <= 15 && (ds < 0 || doff < 0); d++) {
		if (ds < 0 && snprintf(b, sizeof(b), "%.*f", d, scale) > 0 && strtod(b, NULL) == scale)
			ds = d;
		if (doff < 0 && snprintf(b, sizeof(b), "%.*f", d, offset) > 0 && strtod(b, NULL) == offset)
			doff = d;
	}
	if (ds < 0 || doff < 0)
		return -1;
	return ds > doff ? ds : doff;
}

static const double ten_to[16] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };

/* "00" to "99": two digits a division */
static const char two_digits[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* u in decimal at the end of a room of 20: its first digit */
static char *u64_digits(uint64_t u, char end[20])
{
	char *p = end + 20;

	while (u >= 100) {
		p -= 2;
		memcpy(p, two_digits + 2 * (u % 100), 2);
		u /= 100;
	}
	if (u >= 10) {
		p -= 2;
		memcpy(p, two_digits + 2 * u, 2);
	} else {
		*--p = (char)('0' + u);
	}
	return p;
}

/*
 * What snprintf("%.*f", d, v) writes, then cut as rec_format_value() cuts
 * it, without printf: v * 10^d rounded to the nearest integer m, ties to
 * even as glibc rounds the exact binary value (10^d is exact up to 10^15,
 * fma gives the product's rounding error exactly, so the fraction's
 * distance to one half has its true sign), then m's digits with the point
 * d from the end.  a = |v|, a * 10^d < 2^50.
 */
static int fixed_text(double v, double a, int d, char *buf)
{
	double p = ten_to[d], r = a * p, err = fma(a, p, -r), fl = floor(r), c = (r - fl - 0.5) + err;
	uint64_t m = (uint64_t)fl;
	char digits[20], *q = buf, *s;
	size_t n;

	if (c > 0 || (c == 0 && (m & 1)))
		m++;
	if (!m) { /* "-0.00" is written "0" */
		buf[0] = '0';
		buf[1] = 0;
		return 1;
	}
	while (d > 0 && m % 10 == 0) { /* "75.90" -> "75.9", "12.00" -> "12" */
		m /= 10;
		d--;
	}
	s = u64_digits(m, digits);
	n = (size_t)(digits + 20 - s);
	if (signbit(v))
		*q++ = '-';
	if (n <= (size_t)d) { /* 0.05: "0." and the zeros before the digits */
		*q++ = '0';
		*q++ = '.';
		memset(q, '0', (size_t)d - n);
		q += (size_t)d - n;
		memcpy(q, s, n);
		q += n;
	} else {
		memcpy(q, s, n - (size_t)d);
		q += n - (size_t)d;
		if (d) {
			*q++ = '.';
			memcpy(q, s + n - (size_t)d, (size_t)d);
			q += d;
		}
	}
	*q = 0;
	return (int)(q - buf);
}

int rec_format_value(double v, int decimals, char *buf, size_t len)
{
	int n, intdigits;
	double a;

	if (decimals < 0)
		return rec_format_double(v, buf, len);
	if (!buf || len < REC_DOUBLE_MAX || !isfinite(v))
		return -EINVAL;
	a = fabs(v);
	if (decimals > 15)
		decimals = 15;
	/* at most 15 significant digits (DBL_DIG): fewer decimals for a
	   large value, the shortest round trip past 1e15 (log10 only then:
	   this runs once per value written) */
	if (a >= 1e15)
		return rec_format_double(v, buf, len);
	if (a >= ten_to[15 - decimals]) {
		intdigits = (int)floor(log10(a)) + 1;
		if (decimals > 15 - intdigits)
			decimals = 15 - intdigits;
	}
	if (a * ten_to[decimals] < 0x1p50)
		return fixed_text(v, a, decimals, buf);
	n = snprintf(buf, len, "%.*f", decimals, v);
	if (decimals > 0) { /* "75.90" -> "75.9", "12.00" -> "12" */
		while (buf[n - 1] == '0')
			n--;
		if (buf[n - 1] == '.')
			n--;
		buf[n] = 0;
	}
	if (n == 2 && buf[0] == '-' && buf[1] == '0') { /* -0.001 at 2 decimals */
		buf[0] = '0';
		buf[n = 1] = 0;
	}
	return n;
}

/* ---- the output buffer: one fwrite per block, not a stdio call per field ---- */

struct rec_writer {
	FILE *out;
	enum rec_format fmt;
	char *buf;
	size_t n, cap;
	bool failed;             /* a block was not written whole */
	unsigned col;            /* the row's next column */
	/* the date and time to the second of the last record written
	   ("2026-12-03T07:00:00"): gmtime once per second, not per record */
	int64_t utc_sec;
	size_t utc_len;          /* 0: none yet */
	char utc[BASIC_UTC_MAX];
	/* JSON lines: each column's ',"name":' made once (rec_writer_new;
	   length 0: not made, written piece by piece) */
	char key[REC_NCOLUMNS][16];
	uint8_t key_len[REC_NCOLUMNS];
	/* the vehicle and log id columns as written for the last origin
	   (rec_writer only; same for every record of a log): pfx_len 0 none */
	uint64_t flushes;        /* blocks written: a prefix cut by one is not kept */
	char pfx_vehicle[128];
	uint8_t pfx_log_id[REC_LOG_ID_MAX];
	size_t pfx_log_id_len, pfx_len;
	bool pfx_cache;
	char pfx[512];
	/* time_ns: the seconds' digits of utc_sec ("1764748800"), pfx_sec_len 0 none */
	size_t sec_len;
	char sec_digits[20];
};

#define REC_WRITER_BLOCK (256 * 1024)

static void w_flush(struct rec_writer *w)
{
	if (w->n && fwrite(w->buf, 1, w->n, w->out) != w->n)
		w->failed = true;
	w->n = 0;
	w->flushes++;
}

/* Room for k more bytes (k at most the smallest buffer, 1024) */
static inline char *w_room(struct rec_writer *w, size_t k)
{
	if (w->cap - w->n < k)
		w_flush(w);
	return w->buf + w->n;
}

static inline void w_mem(struct rec_writer *w, const char *s, size_t k)
{
	if (w->cap - w->n < k) {
		w_flush(w);
		if (k > w->cap) {
			if (fwrite(s, 1, k, w->out) != k)
				w->failed = true;
			return;
		}
	}
	memcpy(w->buf + w->n, s, k);
	w->n += k;
}

static inline void w_c(struct rec_writer *w, char c)
{
	*w_room(w, 1) = c;
	w->n++;
}

static void w_str(struct rec_writer *w, const char *s)
{
	w_mem(w, s, strlen(s));
}

static void w_u64(struct rec_writer *w, uint64_t v)
{
	char d[20], *s = u64_digits(v, d);

	w_mem(w, s, (size_t)(d + 20 - s));
}

static void w_i64(struct rec_writer *w, int64_t v)
{
	if (v < 0)
		w_c(w, '-');
	w_u64(w, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* s as one CSV field (basic/escape.h's escaper, straight into the block) */
static void w_csv(struct rec_writer *w, const char *s)
{
	size_t n = basic_csv_field_into(s, w->buf + w->n, w->cap - w->n);
	bool quoted;

	if (n || !*s) { /* the usual case: all of it in the block's room */
		w->n += n;
		return;
	}
	quoted = basic_csv_quoted(s); /* near the block's end: in steps */

	if (quoted)
		w_c(w, '"');
	while (*s) {
		w->n += basic_csv_escape(&s, w->buf + w->n, w->cap - w->n, quoted);
		if (*s) /* the block is full: write it and go on */
			w_flush(w);
	}
	if (quoted)
		w_c(w, '"');
}

/* s as a JSON string, as basic_json_string() writes it (the same escaper,
   straight into the block): '"' and '\' escaped, bytes below 0x20 as
   \u00xx, the rest as they are */
static void w_json(struct rec_writer *w, const char *s)
{
	w_c(w, '"');
	while (*s) {
		w->n += basic_json_escape(&s, w->buf + w->n, w->cap - w->n, 0);
		if (*s)
			w_flush(w);
	}
	w_c(w, '"');
}

/* RFC 3339 UTC with nanoseconds ("2026-12-03T07:00:00.123456789Z"), as
   basic_utc_text() writes it; the part to the second made once per second */
static void w_time(struct rec_writer *w, int64_t t_ns)
{
	const int64_t ns = 1000000000;
	int64_t sec = t_ns / ns - (t_ns % ns < 0), frac = t_ns % ns;
	char *p;

	if (frac < 0)
		frac += ns;
	if (!w->utc_len || sec != w->utc_sec) {
		char t[BASIC_UTC_MAX];
		int n = basic_utc_format(t_ns, 9, 0, t, sizeof(t));

		if (n < 11) { /* a time the C library cannot break down: its ns */
			w->utc_len = 0;
			w_str(w, basic_utc_text(t_ns, 9, 0, t, sizeof(t)));
			return;
		}
		w->utc_len = (size_t)n - 11; /* without ".123456789Z" */
		memcpy(w->utc, t, w->utc_len);
		w->utc_sec = sec;
		w->sec_len = 0;
	}
	p = w_room(w, w->utc_len + 11);
	memcpy(p, w->utc, w->utc_len);
	p += w->utc_len;
	*p++ = '.';
	for (int i = 9; i > 1; i -= 2, frac /= 100)
		memcpy(p + i - 2, two_digits + 2 * (frac % 100), 2);
	p[0] = (char)('0' + frac);
	p[9] = 'Z';
	w->n += w->utc_len + 11;
}

/* ---- one row, written as CSV fields or JSON keys in rec_columns' order ---- */

static void row_key(struct rec_writer *w)
{
	if (w->fmt == REC_FORMAT_JSONL && w->key_len[w->col]) {
		/* all 16 bytes of the key's room: a copy of fixed size, inlined */
		memcpy(w_room(w, sizeof(w->key[0])), w->key[w->col], sizeof(w->key[0]));
		w->n += w->key_len[w->col];
	} else if (w->fmt == REC_FORMAT_JSONL) {
		const char *k = rec_columns[w->col];

		w_c(w, w->col ? ',' : '{');
		w_c(w, '"');
		w_str(w, k);
		w_c(w, '"');
		w_c(w, ':');
	} else if (w->col) {
		w_c(w, ',');
	}
	w->col++;
}

/* A text field; NULL: not applicable (empty in CSV, null in JSON). */
static void row_str(struct rec_writer *w, const char *s)
{
	row_key(w);
	if (w->fmt == REC_FORMAT_JSONL)
		s ? w_json(w, s) : w_mem(w, "null", 4);
	else if (s)
		w_csv(w, s);
}

/* A number, already written as text (no escaping needed); NULL as above. */
static void row_num(struct rec_writer *w, const char *num)
{
	row_key(w);
	if (num)
		w_str(w, num);
	else if (w->fmt == REC_FORMAT_JSONL)
		w_mem(w, "null", 4);
}

static void row_u64(struct rec_writer *w, uint64_t v)
{
	row_key(w);
	w_u64(w, v);
}

static void row_i64(struct rec_writer *w, int64_t v)
{
	row_key(w);
	w_i64(w, v);
}

/* n columns that do not apply to this kind of record */
static void row_none(struct rec_writer *w, unsigned n)
{
	if (w->fmt != REC_FORMAT_JSONL && w->col) { /* n commas at once */
		memset(w_room(w, n), ',', n);
		w->n += n;
		w->col += n;
		return;
	}
	while (n--)
		row_num(w, NULL);
}

static void row_end(struct rec_writer *w)
{
	if (w->fmt == REC_FORMAT_JSONL)
		w_mem(w, "}\n", 2);
	else
		w_c(w, '\n');
}

/* A quality a newer sender may use: a word all the same. */
static const char *quality_name(uint32_t q)
{
	const char *name = rec_quality_name(q);

	return name ? name : "unknown";
}

int rec_format_parse(const char *name, enum rec_format *ret_fmt)
{
	static const char *const names[] = { "csv", "jsonl", "candump", "influx" };

	if (!name || !ret_fmt)
		return -EINVAL;
	for (unsigned i = 0; i < REC_FORMAT_MAX; i++)
		if (!strcmp(name, names[i]) || (i == REC_FORMAT_JSONL && !strcmp(name, "json"))) {
			*ret_fmt = (enum rec_format)i;
			return 0;
		}
	return -EINVAL;
}

int rec_format_header(FILE *out, enum rec_format fmt)
{
	if (!out || fmt >= REC_FORMAT_MAX)
		return -EINVAL;
	if (fmt == REC_FORMAT_CSV)
		for (unsigned i = 0; i < REC_NCOLUMNS; i++)
			fprintf(out, "%s%s", rec_columns[i], i + 1 < REC_NCOLUMNS ? "," : "\n");
	return ferror(out) ? -EIO : 0;
}

const char *rec_format_column(size_t i)
{
	return i < REC_NCOLUMNS ? rec_columns[i] : NULL;
}

int rec_format_can_id(const struct acq_item *it, char *buf, size_t len)
{
	if (!it || !buf || it->kind != ACQ_ITEM_CAN)
		return -EINVAL;
	/* as candump writes them: 3 hex digits, 8 for a 29-bit id */
	return snprintf(buf, len, "%0*" PRIX32, (it->can.flags & ACQ_CAN_EXT) ? 8 : 3, it->can.id);
}

int rec_format_can_flags(unsigned flags, char *buf, size_t len)
{
	static const char *const names[] = { "EXT", "FD", "BRS", "ESI", "RTR", "ERR", "TX" };
	size_t n = 0;

	if (!buf || len < REC_CAN_FLAGS_MAX)
		return -EINVAL;
	buf[0] = 0;
	for (unsigned b = 0; b < sizeof(names) / sizeof(names[0]); b++)
		if (flags & (1u << b))
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "|" : "", names[b]);
	return (int)n;
}

/* The id's hex digits (as %0*X writes them: at least width) */
static void w_hex_id(struct rec_writer *w, uint32_t id, unsigned width)
{
	static const char hex[] = "0123456789ABCDEF";
	char d[8], *p = d + 8;

	do
		*--p = hex[id & 15];
	while ((id >>= 4) || (unsigned)(d + 8 - p) < width);
	w_mem(w, p, (size_t)(d + 8 - p));
}

static void row_can(struct rec_writer *w, const struct acq_item *it)
{
	char flags[REC_CAN_FLAGS_MAX], data[2 * ACQ_CAN_DATA_MAX + 1];

	rec_format_can_flags(it->can.flags, flags, sizeof(flags));
	basic_hex_encode(it->can.data, it->can.len, true, data);
	row_none(w, 6); /* channel .. label */
	row_key(w);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	/* as candump writes them: 3 hex digits, 8 for a 29-bit id */
	w_hex_id(w, it->can.id, (it->can.flags & ACQ_CAN_EXT) ? 8 : 3);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	row_str(w, flags);
	row_str(w, data);
	row_none(w, 3);
}

/* The item's text NUL-terminated (a decoded item holds at most ACQ_TEXT_MAX). */
static void text_copy(const struct acq_item *it, char out[ACQ_TEXT_MAX + 1])
{
	size_t n = it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

	memcpy(out, it->text.text, n);
	out[n] = 0;
}

static void row_sample(struct rec_writer *w, const struct acq_item *it, const struct rec_names *nm)
{
	char v[REC_DOUBLE_MAX];

	row_u64(w, it->sample.channel);
	row_str(w, nm->channel);
	row_str(w, nm->unit);
	/* JSON has no NaN or infinity: the quality says invalid */
	row_num(w, rec_format_value(it->sample.value, nm->has_decimals ? (int)nm->decimals : -1, v, sizeof(v)) > 0 ? v : NULL);
	row_str(w, quality_name(it->sample.quality));
	row_str(w, nm->label);
	row_none(w, 6);
}

/* A text channel's value: the text in the label column, the value empty.
   The schema stays one for every kind (no column only texts use), and
   label is already the column that holds a value as text (a value-table
   entry's), a string in CSV, JSON and InfluxDB alike. */
static void row_text(struct rec_writer *w, const struct acq_item *it, const struct rec_names *nm)
{
	char text[ACQ_TEXT_MAX + 1];

	text_copy(it, text);
	row_u64(w, it->text.channel);
	row_str(w, nm->channel);
	row_str(w, nm->unit);
	row_none(w, 1);
	row_str(w, quality_name(it->text.quality));
	row_str(w, text);
	row_none(w, 6);
}

static void row_event(struct rec_writer *w, const struct acq_item *it)
{
	const char *event = rec_event_name(it->event.code);
	char code[16];

	/* a code a newer sender uses: its number, still as text */
	snprintf(code, sizeof(code), "%" PRIu32, it->event.code);
	row_none(w, 9);
	row_str(w, event ? event : code);
	row_i64(w, it->event.arg);
	row_u64(w, it->event.detail);
}

/* a string literal, its length counted by the compiler */
#define W_LIT(w, lit) w_mem(w, lit, sizeof(lit) - 1)

/* The telegram's bytes as hex, a piece at a time (up to 65,504 bytes). */
static void w_hex_bytes(struct rec_writer *w, const uint8_t *p, size_t n)
{
	char hex[2 * 256 + 1];

	while (n) {
		size_t k = n < 256 ? n : 256;

		basic_hex_encode(p, k, false, hex);
		w_mem(w, hex, 2 * k);
		p += k;
		n -= k;
	}
}

static void w_ipv4(struct rec_writer *w, uint32_t ip)
{
	for (int shift = 24; shift >= 0; shift -= 8) {
		w_u64(w, (ip >> shift) & 0xffu);
		if (shift)
			w_c(w, '.');
	}
}

/* "Pd", "Mn|TCP", "Pd|bad-fcs": the type's letters, how it came, and why
   its header was refused (the result names of trdp/header.h; record/
   does not include trdp/, so the names are the wire contract's here) */
static void w_trdp_flags(struct rec_writer *w, const struct acq_trdp *t)
{
	static const char *const results[] = { "", "short", "bad-fcs", "bad-version", "bad-type",
		                                "too-long", "truncated" };
	unsigned a = t->msg_type >> 8, b = t->msg_type & 0xffu, r = t->flags >> ACQ_TRDP_RESULT_SHIFT;

	w_c(w, a >= 0x20 && a < 0x7f && a != '"' && a != '\\' && a != ',' ? (char)a : '?');
	w_c(w, b >= 0x20 && b < 0x7f && b != '"' && b != '\\' && b != ',' ? (char)b : '?');
	if (t->flags & ACQ_TRDP_TCP)
		W_LIT(w, "|TCP");
	if (r) {
		w_c(w, '|');
		w_str(w, r < sizeof(results) / sizeof(results[0]) ? results[r] : "invalid");
	}
}

/* A raw TRDP telegram: in the common columns its type and flags and its
   bytes (header, data set, padding: every field is in there), and in JSON
   lines the header's fields as keys after the common ones. */
static void row_trdp(struct rec_writer *w, const struct acq_item *it)
{
	const struct acq_trdp *t = &it->trdp;

	row_none(w, 7); /* channel .. can_id */
	row_key(w);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	w_trdp_flags(w, t);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	row_key(w);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	if (t->data)
		w_hex_bytes(w, t->data, t->len);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	row_none(w, 3);
	if (w->fmt != REC_FORMAT_JSONL)
		return;
	W_LIT(w, ",\"src\":\"");
	w_ipv4(w, t->src_ip);
	W_LIT(w, "\",\"src_port\":");
	w_u64(w, t->src_port);
	W_LIT(w, ",\"dst\":\"");
	w_ipv4(w, t->dst_ip);
	W_LIT(w, "\",\"dst_port\":");
	w_u64(w, t->dst_port);
	W_LIT(w, ",\"com_id\":");
	w_u64(w, t->com_id);
	W_LIT(w, ",\"seq_counter\":");
	w_u64(w, t->seq);
	W_LIT(w, ",\"etb_topo\":");
	w_u64(w, t->etb_topo);
	W_LIT(w, ",\"op_trn_topo\":");
	w_u64(w, t->op_trn_topo);
	W_LIT(w, ",\"result\":");
	w_u64(w, t->flags >> ACQ_TRDP_RESULT_SHIFT);
	if (t->flags & ACQ_TRDP_MD) {
		W_LIT(w, ",\"session_id\":\"");
		w_hex_bytes(w, t->session_id, ACQ_TRDP_SESSION_LEN);
		w_c(w, '"');
	}
}

/* The vehicle and log id columns: the same text for every record of a
   log, kept from the first (rec_writer's) */
static void row_origin(struct rec_writer *w, const struct rec_origin *o)
{
	const char *v = o->vehicle ? o->vehicle : "";
	char id[2 * REC_LOG_ID_MAX + 1];
	size_t start = w->n, vlen;
	uint64_t flushes = w->flushes;

	if (w->pfx_len && o->log_id_len == w->pfx_log_id_len && !strcmp(v, w->pfx_vehicle) &&
	    !memcmp(o->log_id ? (const void *)o->log_id : "", w->pfx_log_id, o->log_id_len)) {
		w_mem(w, w->pfx, w->pfx_len);
		w->col = 2;
		return;
	}
	basic_hex_encode(o->log_id, o->log_id_len, false, id);
	row_str(w, v);
	row_str(w, id);
	vlen = strlen(v);
	if (w->pfx_cache && w->flushes == flushes && w->n - start <= sizeof(w->pfx) && vlen < sizeof(w->pfx_vehicle)) {
		w->pfx_len = w->n - start;
		memcpy(w->pfx, w->buf + start, w->pfx_len);
		memcpy(w->pfx_vehicle, v, vlen + 1);
		w->pfx_log_id_len = o->log_id_len;
		if (o->log_id_len)
			memcpy(w->pfx_log_id, o->log_id, o->log_id_len);
	}
}

/* time_ns: the digits of its second, made once per second as the time's
   text is (w_time() ran for this t_ns), then the nine of its fraction */
static void w_time_ns(struct rec_writer *w, int64_t t_ns)
{
	const int64_t ns = 1000000000;
	int64_t sec = t_ns / ns, frac = t_ns % ns;
	char *p;

	if (t_ns < ns || !w->utc_len || sec != w->utc_sec) { /* (before 1970 + 1 s: as it is) */
		w_i64(w, t_ns);
		return;
	}
	if (!w->sec_len) {
		char d[20], *s = u64_digits((uint64_t)sec, d);

		w->sec_len = (size_t)(d + 20 - s);
		memcpy(w->sec_digits, s, w->sec_len);
	}
	p = w_room(w, w->sec_len + 9);
	memcpy(p, w->sec_digits, w->sec_len);
	p += w->sec_len;
	for (int i = 9; i > 1; i -= 2, frac /= 100)
		memcpy(p + i - 2, two_digits + 2 * (frac % 100), 2);
	p[0] = (char)('0' + frac);
	w->n += w->sec_len + 9;
}

static void row_item(struct rec_writer *w, const struct acq_item *it, const struct rec_names *nm,
                     const struct rec_origin *o)
{
	w->col = 0;
	row_origin(w, o);
	row_u64(w, it->seq);
	row_key(w);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	w_time(w, it->t_ns);
	if (w->fmt == REC_FORMAT_JSONL)
		w_c(w, '"');
	row_key(w);
	w_time_ns(w, it->t_ns);
	row_str(w, rec_kind_name(it->kind));
	row_u64(w, it->bus);
	row_str(w, nm->bus_name);
	if (it->kind == ACQ_ITEM_CAN)
		row_can(w, it);
	else if (it->kind == ACQ_ITEM_SAMPLE)
		row_sample(w, it, nm);
	else if (it->kind == ACQ_ITEM_TEXT)
		row_text(w, it, nm);
	else if (it->kind == ACQ_ITEM_TRDP)
		row_trdp(w, it);
	else
		row_event(w, it);
	row_end(w);
}

/* ---- InfluxDB line protocol ---- */

/* A measurement, tag key or tag value: ',', '=' and ' ' escaped; a field
   string (quoted): '"' and '\\' escaped.  Line breaks as \n either way. */
static void influx_text(struct rec_writer *w, const char *s, bool field)
{
	while (s && *s) {
		size_t k = 0;

		while (s[k] && s[k] != '\n' && s[k] != '\r' && s[k] != '\\' &&
		       (field ? s[k] != '"' : (s[k] != ',' && s[k] != '=' && s[k] != ' ')))
			k++;
		w_mem(w, s, k);
		s += k;
		if (!*s)
			break;
		w_c(w, '\\');
		w_c(w, *s == '\n' ? 'n' : *s == '\r' ? 'r' : *s);
		s++;
	}
}

/* ",key=value" unless value is empty (InfluxDB refuses empty tags) */
static void influx_tag(struct rec_writer *w, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	w_c(w, ',');
	w_str(w, key);
	w_c(w, '=');
	influx_text(w, value, false);
}

static void influx_str(struct rec_writer *w, const char *sep, const char *key, const char *value)
{
	w_str(w, sep);
	w_str(w, key);
	w_mem(w, "=\"", 2);
	influx_text(w, value ? value : "", true);
	w_c(w, '"');
}

/* a tag of a number where there is no name */
static void influx_tag_or_u64(struct rec_writer *w, const char *key, const char *name, unsigned v)
{
	if (name && *name) {
		influx_tag(w, key, name);
		return;
	}
	w_c(w, ',');
	w_str(w, key);
	w_c(w, '=');
	w_u64(w, v);
}

static void influx_item(struct rec_writer *w, const struct acq_item *it, const struct rec_names *nm,
                        const struct rec_origin *o)
{
	static const char *const measurement[] = { "railmon_can", "railmon", "railmon_event", "railmon",
		                                    "railmon_trdp" };
	char num[REC_DOUBLE_MAX];

	_Static_assert(ACQ_ITEM_CAN == 0 && ACQ_ITEM_SAMPLE == 1 && ACQ_ITEM_EVENT == 2 && ACQ_ITEM_TEXT == 3 &&
	               ACQ_ITEM_TRDP == 4 && ACQ_ITEM_KIND_MAX == 5, "measurement names");
	w_str(w, measurement[it->kind]);
	influx_tag(w, "vehicle", o->vehicle);
	influx_tag_or_u64(w, "bus", nm->bus_name, it->bus);
	if (it->kind == ACQ_ITEM_SAMPLE) {
		influx_tag_or_u64(w, "channel", nm->channel, it->sample.channel);
		influx_tag(w, "unit", nm->unit);
		w_c(w, ' ');
		if (rec_format_value(it->sample.value, nm->has_decimals ? (int)nm->decimals : -1, num, sizeof(num)) > 0) {
			w_mem(w, "value=", 6);
			w_str(w, num);
			w_c(w, ',');
		}
		influx_str(w, "", "quality", quality_name(it->sample.quality));
		if (nm->label)
			influx_str(w, ",", "label", nm->label);
	} else if (it->kind == ACQ_ITEM_TEXT) {
		char text[ACQ_TEXT_MAX + 1];

		/* a text channel's series: the text as the string field label,
		   as in CSV and JSON lines */
		text_copy(it, text);
		influx_tag_or_u64(w, "channel", nm->channel, it->text.channel);
		influx_tag(w, "unit", nm->unit);
		influx_str(w, " ", "quality", quality_name(it->text.quality));
		influx_str(w, ",", "label", text);
	} else if (it->kind == ACQ_ITEM_CAN) {
		char data[2 * ACQ_CAN_DATA_MAX + 1], flags[REC_CAN_FLAGS_MAX];

		w_mem(w, ",can_id=", 8);
		w_hex_id(w, it->can.id, (it->can.flags & ACQ_CAN_EXT) ? 8 : 3);
		rec_format_can_flags(it->can.flags, flags, sizeof(flags));
		basic_hex_encode(it->can.data, it->can.len, true, data);
		w_mem(w, " data=\"", 7);
		w_str(w, data);
		w_mem(w, "\",flags=\"", 9);
		w_str(w, flags);
		w_c(w, '"');
	} else if (it->kind == ACQ_ITEM_TRDP) {
		W_LIT(w, ",com_id=");
		w_u64(w, it->trdp.com_id);
		W_LIT(w, " data=\"");
		if (it->trdp.data)
			w_hex_bytes(w, it->trdp.data, it->trdp.len);
		W_LIT(w, "\",flags=\"");
		w_trdp_flags(w, &it->trdp);
		W_LIT(w, "\",seq_counter=");
		w_u64(w, it->trdp.seq);
		w_c(w, 'i');
	} else {
		const char *event = rec_event_name(it->event.code);

		if (event)
			influx_tag(w, "event", event);
		else
			influx_tag_or_u64(w, "event", NULL, it->event.code);
		w_mem(w, " arg=", 5);
		w_i64(w, it->event.arg);
		w_mem(w, "i,detail=", 9);
		w_u64(w, it->event.detail);
		w_c(w, 'i');
	}
	w_mem(w, ",seq=", 5);
	w_u64(w, it->seq);
	w_mem(w, "i ", 2);
	w_i64(w, it->t_ns);
	w_c(w, '\n');
}

/* candump on interface "can<bus>", as the trace driver reads it back. */
static int candump_item(struct rec_writer *w, const struct acq_item *it)
{
	char line[TRACE_CANDUMP_LINE_MAX], ifname[16];

	snprintf(ifname, sizeof(ifname), "can%u", it->bus);
	if (trace_candump_format(it, ifname, line, sizeof(line)) < 0)
		return -EINVAL;
	w_str(w, line);
	return 0;
}

static int writer_item(struct rec_writer *w, const struct acq_item *it, const struct rec_names *names,
                       const struct rec_origin *origin)
{
	static const struct rec_names none;
	static const struct rec_origin nowhere;

	if (!it || it->kind >= ACQ_ITEM_KIND_MAX || (it->kind == ACQ_ITEM_CAN && it->can.len > ACQ_CAN_DATA_MAX) ||
	    (it->kind == ACQ_ITEM_TRDP && (it->trdp.len > ACQ_TRDP_LEN_MAX || (it->trdp.len && !it->trdp.data))) ||
	    (origin && (origin->log_id_len > REC_LOG_ID_MAX || (origin->log_id_len && !origin->log_id))))
		return -EINVAL;
	if (w->fmt == REC_FORMAT_CANDUMP)
		return candump_item(w, it);
	if (w->fmt == REC_FORMAT_INFLUX)
		influx_item(w, it, names ? names : &none, origin ? origin : &nowhere);
	else
		row_item(w, it, names ? names : &none, origin ? origin : &nowhere);
	return 0;
}

int rec_format_item(FILE *out, enum rec_format fmt, const struct acq_item *it,
                    const struct rec_names *names, const struct rec_origin *origin)
{
	char line[1024];
	struct rec_writer w = { .out = out, .fmt = fmt, .buf = line, .cap = sizeof(line) };
	int r;

	if (!out || fmt >= REC_FORMAT_MAX)
		return -EINVAL;
	r = writer_item(&w, it, names, origin);
	if (r < 0)
		return r;
	w_flush(&w);
	return w.failed || ferror(out) ? -EIO : 0;
}

int rec_writer_new(FILE *out, enum rec_format fmt, rec_writer_t **ret_writer)
{
	rec_writer_t *w;

	if (!out || fmt >= REC_FORMAT_MAX || !ret_writer)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->buf = malloc(REC_WRITER_BLOCK))) {
		free(w);
		return -ENOMEM;
	}
	w->out = out;
	w->fmt = fmt;
	w->cap = REC_WRITER_BLOCK;
	w->pfx_cache = true;
	for (size_t i = 0; i < REC_NCOLUMNS; i++) {
		int n = snprintf(w->key[i], sizeof(w->key[i]), "%s\"%s\":", i ? "," : "{", rec_columns[i]);

		w->key_len[i] = (uint8_t)(n > 0 && (size_t)n < sizeof(w->key[i]) ? n : 0);
	}
	*ret_writer = w;
	return 0;
}

int rec_writer_item(rec_writer_t *w, const struct acq_item *it, const struct rec_names *names,
                    const struct rec_origin *origin)
{
	int r;

	if (!w)
		return -EINVAL;
	r = writer_item(w, it, names, origin);
	return r < 0 ? r : w->failed ? -EIO : 0;
}

int rec_writer_flush(rec_writer_t *w)
{
	if (!w)
		return 0;
	w_flush(w);
	return w->failed || ferror(w->out) ? -EIO : 0;
}

rec_writer_t *rec_writer_free(rec_writer_t *w)
{
	if (w) {
		free(w->buf);
		free(w);
	}
	return NULL;
}
