/* SPDX-License-Identifier: MIT */
/* format.c - records as CSV, JSON lines or candump lines (format.h). */
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
#include "basic/utc.h"

_Static_assert(REC_LOG_ID_MAX == REC_LOG_ID_LEN, "a log id fits struct rec_origin");

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

/* u in decimal at the end of a room of 20: its first digit */
static char *u64_digits(uint64_t u, char end[20])
{
	char *p = end + 20;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
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

/* ---- one row, written as CSV fields or JSON keys in rec_columns' order ---- */

struct row {
	FILE *out;
	bool json;
	unsigned col;
};

static void row_key(struct row *w)
{
	if (w->json)
		fprintf(w->out, "%s\"%s\":", w->col ? "," : "{", rec_columns[w->col]);
	else if (w->col)
		fputc(',', w->out);
	w->col++;
}

/* A text field; NULL: not applicable (empty in CSV, null in JSON). */
static void row_str(struct row *w, const char *s)
{
	row_key(w);
	if (!s)
		fputs(w->json ? "null" : "", w->out);
	else if (w->json)
		basic_json_string(w->out, s);
	else
		basic_csv_field(w->out, s);
}

/* A number, already written as text (no escaping needed); NULL as above. */
static void row_num(struct row *w, const char *num)
{
	row_key(w);
	fputs(num ? num : (w->json ? "null" : ""), w->out);
}

static void row_u64(struct row *w, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRIu64, v);
	row_num(w, b);
}

static void row_i64(struct row *w, int64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%" PRId64, v);
	row_num(w, b);
}

/* n columns that do not apply to this kind of record */
static void row_none(struct row *w, unsigned n)
{
	while (n--)
		row_num(w, NULL);
}

static void row_end(struct row *w)
{
	fputs(w->json ? "}\n" : "\n", w->out);
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

static void row_can(struct row *w, const struct acq_item *it)
{
	char id[12], flags[REC_CAN_FLAGS_MAX], data[2 * ACQ_CAN_DATA_MAX + 1];

	rec_format_can_id(it, id, sizeof(id));
	rec_format_can_flags(it->can.flags, flags, sizeof(flags));
	basic_hex_encode(it->can.data, it->can.len, true, data);
	row_none(w, 6); /* channel .. label */
	row_str(w, id);
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

static void row_sample(struct row *w, const struct acq_item *it, const struct rec_names *nm)
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
static void row_text(struct row *w, const struct acq_item *it, const struct rec_names *nm)
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

static void row_event(struct row *w, const struct acq_item *it)
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

static void row_item(struct row *w, const struct acq_item *it, const struct rec_names *nm,
                     const struct rec_origin *o)
{
	char id[2 * REC_LOG_ID_MAX + 1], t[BASIC_UTC_MAX];

	basic_hex_encode(o->log_id, o->log_id_len, false, id);
	row_str(w, o->vehicle ? o->vehicle : "");
	row_str(w, id);
	row_u64(w, it->seq);
	/* RFC 3339 UTC with nanoseconds ("2026-12-03T07:00:00.123456789Z") */
	row_str(w, basic_utc_text(it->t_ns, 9, 0, t, sizeof(t)));
	row_i64(w, it->t_ns);
	row_str(w, rec_kind_name(it->kind));
	row_u64(w, it->bus);
	row_str(w, nm->bus_name);
	if (it->kind == ACQ_ITEM_CAN)
		row_can(w, it);
	else if (it->kind == ACQ_ITEM_SAMPLE)
		row_sample(w, it, nm);
	else if (it->kind == ACQ_ITEM_TEXT)
		row_text(w, it, nm);
	else
		row_event(w, it);
	row_end(w);
}

/* ---- InfluxDB line protocol ---- */

/* A measurement, tag key or tag value: ',', '=' and ' ' escaped; a field
   string (quoted): '"' and '\\' escaped.  Line breaks as \n either way. */
static void influx_text(FILE *out, const char *s, bool field)
{
	for (; s && *s; s++) {
		if (*s == '\n' || *s == '\r')
			fputs(*s == '\n' ? "\\n" : "\\r", out);
		else if (field ? (*s == '"' || *s == '\\') : (*s == ',' || *s == '=' || *s == ' ' || *s == '\\'))
			fprintf(out, "\\%c", *s);
		else
			fputc(*s, out);
	}
}

/* ",key=value" unless value is empty (InfluxDB refuses empty tags) */
static void influx_tag(FILE *out, const char *key, const char *value)
{
	if (!value || !*value)
		return;
	fprintf(out, ",%s=", key);
	influx_text(out, value, false);
}

static void influx_str(FILE *out, const char *sep, const char *key, const char *value)
{
	fprintf(out, "%s%s=\"", sep, key);
	influx_text(out, value ? value : "", true);
	fputc('"', out);
}

static void influx_item(FILE *out, const struct acq_item *it, const struct rec_names *nm,
                        const struct rec_origin *o)
{
	static const char *const measurement[] = { "railmon_can", "railmon", "railmon_event", "railmon" };
	char num[REC_DOUBLE_MAX], bus[12];
	const char *event = NULL;

	_Static_assert(ACQ_ITEM_CAN == 0 && ACQ_ITEM_SAMPLE == 1 && ACQ_ITEM_EVENT == 2 && ACQ_ITEM_TEXT == 3,
	               "measurement names");
	snprintf(bus, sizeof(bus), "%u", it->bus);
	fputs(measurement[it->kind], out);
	influx_tag(out, "vehicle", o->vehicle);
	influx_tag(out, "bus", nm->bus_name && *nm->bus_name ? nm->bus_name : bus);
	if (it->kind == ACQ_ITEM_SAMPLE) {
		snprintf(num, sizeof(num), "%u", it->sample.channel);
		influx_tag(out, "channel", nm->channel && *nm->channel ? nm->channel : num);
		influx_tag(out, "unit", nm->unit);
		fputc(' ', out);
		if (rec_format_value(it->sample.value, nm->has_decimals ? (int)nm->decimals : -1, num, sizeof(num)) > 0)
			fprintf(out, "value=%s,", num);
		fprintf(out, "quality=\"%s\"", quality_name(it->sample.quality));
		if (nm->label)
			influx_str(out, ",", "label", nm->label);
	} else if (it->kind == ACQ_ITEM_TEXT) {
		char text[ACQ_TEXT_MAX + 1];

		/* a text channel's series: the text as the string field label,
		   as in CSV and JSON lines */
		text_copy(it, text);
		snprintf(num, sizeof(num), "%u", it->text.channel);
		influx_tag(out, "channel", nm->channel && *nm->channel ? nm->channel : num);
		influx_tag(out, "unit", nm->unit);
		fprintf(out, " quality=\"%s\"", quality_name(it->text.quality));
		influx_str(out, ",", "label", text);
	} else if (it->kind == ACQ_ITEM_CAN) {
		char data[2 * ACQ_CAN_DATA_MAX + 1], flags[REC_CAN_FLAGS_MAX];

		rec_format_can_id(it, num, sizeof(num));
		influx_tag(out, "can_id", num);
		rec_format_can_flags(it->can.flags, flags, sizeof(flags));
		basic_hex_encode(it->can.data, it->can.len, true, data);
		fprintf(out, " data=\"%s\",flags=\"%s\"", data, flags);
	} else {
		event = rec_event_name(it->event.code);
		snprintf(num, sizeof(num), "%u", it->event.code);
		influx_tag(out, "event", event ? event : num);
		fprintf(out, " arg=%" PRId64 "i,detail=%" PRIu32 "i", it->event.arg, it->event.detail);
	}
	fprintf(out, ",seq=%" PRIu64 "i %" PRId64 "\n", it->seq, it->t_ns);
}

/* candump on interface "can<bus>", as the trace driver reads it back. */
static int candump_item(FILE *out, const struct acq_item *it)
{
	char line[TRACE_CANDUMP_LINE_MAX], ifname[16];

	snprintf(ifname, sizeof(ifname), "can%u", it->bus);
	if (trace_candump_format(it, ifname, line, sizeof(line)) < 0)
		return -EINVAL;
	return fputs(line, out) < 0 ? -EIO : 0;
}

int rec_format_item(FILE *out, enum rec_format fmt, const struct acq_item *it,
                    const struct rec_names *names, const struct rec_origin *origin)
{
	static const struct rec_names none;
	static const struct rec_origin nowhere;
	struct row w = { out, fmt == REC_FORMAT_JSONL, 0 };

	if (!out || !it || fmt >= REC_FORMAT_MAX || it->kind >= ACQ_ITEM_KIND_MAX ||
	    (it->kind == ACQ_ITEM_CAN && it->can.len > ACQ_CAN_DATA_MAX) ||
	    (origin && (origin->log_id_len > REC_LOG_ID_MAX || (origin->log_id_len && !origin->log_id))))
		return -EINVAL;
	if (fmt == REC_FORMAT_CANDUMP)
		return candump_item(out, it);
	if (fmt == REC_FORMAT_INFLUX)
		influx_item(out, it, names ? names : &none, origin ? origin : &nowhere);
	else
		row_item(&w, it, names ? names : &none, origin ? origin : &nowhere);
	return ferror(out) ? -EIO : 0;
}
