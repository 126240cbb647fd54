/* SPDX-License-Identifier: MIT */
/* format.c - records as CSV, JSON lines or candump lines (format.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "batch.h"
#include "format.h"
#include "names.h"
#include "basic/escape.h"

_Static_assert(REC_LOG_ID_MAX == REC_LOG_ID_LEN, "a log id fits struct rec_origin");

/* ISO 8601 UTC with nanoseconds ("2026-12-03T07:00:00.123456789Z") into
   buf (at least 32 bytes); the number of ns where the year does not fit. */
static char *format_time(int64_t t_ns, char *buf, size_t len)
{
	int64_t sec = t_ns / 1000000000, ns = t_ns % 1000000000;
	time_t tt;
	struct tm tm;
	size_t n;

	if (ns < 0) {
		ns += 1000000000;
		sec--;
	}
	tt = (time_t)sec;
	if (!gmtime_r(&tt, &tm) || !(n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, len, "%" PRId64, t_ns);
		return buf;
	}
	snprintf(buf + n, len - n, ".%09" PRId64 "Z", ns);
	return buf;
}

/* CAN payloads in upper case (as candump), log ids in lower case (as
   the ground log's directory names). */
static void hex(const uint8_t *d, size_t n, bool upper, char *out)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = 0;
}

/* 15 significant digits: every digit a double holds for certain, so a
   scaled register value 14993 * 0.1 prints as 1499.3 rather than showing
   the binary rounding of the multiplication (1499.3000000000002). */
static void put_double(FILE *out, const char *prefix, double v)
{
	fprintf(out, "%s%.15g", prefix, v);
}

/* A quality a newer sender may use: a word all the same. */
static const char *quality_name(uint32_t q)
{
	const char *name = rec_quality_name(q);

	return name ? name : "unknown";
}

int rec_format_parse(const char *name, enum rec_format *ret_fmt)
{
	static const char *const names[] = { "csv", "jsonl", "candump" };

	if (!name || !ret_fmt)
		return -EINVAL;
	for (unsigned i = 0; i < REC_FORMAT_MAX; i++)
		if (!strcmp(name, names[i]) || (i == REC_FORMAT_JSONL && !strcmp(name, "json"))) {
			*ret_fmt = (enum rec_format)i;
			return 0;
		}
	return -EINVAL;
}

int rec_format_header(FILE *out, enum rec_format fmt, bool origin)
{
	if (!out || fmt >= REC_FORMAT_MAX)
		return -EINVAL;
	if (fmt == REC_FORMAT_CSV)
		fprintf(out, "seq,time,time_ns,kind,bus,channel,name,value,unit,quality,label,can_id,can_flags,can_data,"
		        "event,arg,detail%s\n", origin ? ",vehicle,log_id,historical" : "");
	return ferror(out) ? -EIO : 0;
}

/* ---- CSV: every row has every column ---- */

static void csv_can(FILE *out, const struct acq_item *it)
{
	char data[2 * ACQ_CAN_DATA_MAX + 1];

	hex(it->can.data, it->can.len, true, data);
	/* ids written as candump does: 3 hex digits, 8 for extended */
	fprintf(out, ",,,,,,%0*X,%u,%s,,,", (it->can.flags & ACQ_CAN_EXT) ? 8 : 3, it->can.id, it->can.flags,
	        data);
}

static void csv_sample(FILE *out, const struct acq_item *it, const struct rec_names *nm)
{
	fprintf(out, "%u,", it->sample.channel);
	basic_csv_field(out, nm->channel);
	if (isfinite(it->sample.value))
		put_double(out, ",", it->sample.value);
	else
		fputc(',', out);
	fputc(',', out);
	basic_csv_field(out, nm->unit);
	fprintf(out, ",%s,", quality_name(it->sample.quality));
	basic_csv_field(out, nm->label);
	fputs(",,,,,,", out);
}

static void csv_event(FILE *out, const struct acq_item *it)
{
	const char *event = rec_event_name(it->event.code);

	fputs(",,,,,,,,,", out);
	if (event)
		basic_csv_field(out, event);
	else
		fprintf(out, "%u", it->event.code);
	fprintf(out, ",%" PRId64 ",%u", it->event.arg, it->event.detail);
}

static void csv_item(FILE *out, const struct acq_item *it, const struct rec_names *nm, const char *t)
{
	fprintf(out, "%" PRIu64 ",%s,%" PRId64 ",%s,%u,", it->seq, t, it->t_ns, rec_kind_name(it->kind), it->bus);
	if (it->kind == ACQ_ITEM_CAN)
		csv_can(out, it);
	else if (it->kind == ACQ_ITEM_SAMPLE)
		csv_sample(out, it, nm);
	else
		csv_event(out, it);
}

static void csv_origin(FILE *out, const struct rec_origin *o)
{
	char id[2 * REC_LOG_ID_MAX + 1];

	hex(o->log_id, o->log_id_len, false, id);
	fputc(',', out);
	basic_csv_field(out, o->vehicle);
	fprintf(out, ",%s,%d", id, o->historical);
}

/* ---- JSON lines: the keys of the record's kind ---- */

static const char *json_bool(bool b)
{
	return b ? "true" : "false";
}

static void json_can(FILE *out, const struct acq_item *it)
{
	char data[2 * ACQ_CAN_DATA_MAX + 1];
	unsigned f = it->can.flags;

	hex(it->can.data, it->can.len, true, data);
	fprintf(out, ",\"id\":%u,\"ext\":%s,\"fd\":%s,\"brs\":%s,\"rtr\":%s,\"err\":%s,\"len\":%u,\"data\":\"%s\"",
	        it->can.id, json_bool(f & ACQ_CAN_EXT), json_bool(f & ACQ_CAN_FD), json_bool(f & ACQ_CAN_BRS),
	        json_bool(f & ACQ_CAN_RTR), json_bool(f & ACQ_CAN_ERR), it->can.len, data);
}

static void json_sample(FILE *out, const struct acq_item *it, const struct rec_names *nm)
{
	fprintf(out, ",\"channel\":%u,\"name\":", it->sample.channel);
	basic_json_string(out, nm->channel);
	/* JSON has no NaN or infinity */
	if (isfinite(it->sample.value))
		put_double(out, ",\"value\":", it->sample.value);
	else
		fputs(",\"value\":null", out);
	fputs(",\"unit\":", out);
	basic_json_string(out, nm->unit);
	fprintf(out, ",\"quality\":\"%s\"", quality_name(it->sample.quality));
	if (nm->label) {
		fputs(",\"label\":", out);
		basic_json_string(out, nm->label);
	}
}

static void json_event(FILE *out, const struct acq_item *it)
{
	const char *event = rec_event_name(it->event.code);

	fputs(",\"event\":", out);
	if (event)
		basic_json_string(out, event);
	else
		fprintf(out, "%u", it->event.code);
	fprintf(out, ",\"code\":%u,\"arg\":%" PRId64 ",\"detail\":%u", it->event.code, it->event.arg,
	        it->event.detail);
}

static void json_item(FILE *out, const struct acq_item *it, const struct rec_names *nm, const char *t)
{
	fprintf(out, "{\"seq\":%" PRIu64 ",\"time\":\"%s\",\"time_ns\":%" PRId64 ",\"kind\":\"%s\",\"bus\":%u", it->seq,
	        t, it->t_ns, rec_kind_name(it->kind), it->bus);
	if (it->kind == ACQ_ITEM_CAN)
		json_can(out, it);
	else if (it->kind == ACQ_ITEM_SAMPLE)
		json_sample(out, it, nm);
	else
		json_event(out, it);
}

static void json_origin(FILE *out, const struct rec_origin *o)
{
	char id[2 * REC_LOG_ID_MAX + 1];

	hex(o->log_id, o->log_id_len, false, id);
	fputs(",\"vehicle\":", out);
	basic_json_string(out, o->vehicle);
	fprintf(out, ",\"log_id\":\"%s\",\"historical\":%s", id, json_bool(o->historical));
}

/* candump on interface "can<bus>", as the trace driver reads it back. */
static int candump_item(FILE *out, const struct acq_item *it)
{
	char line[REC_CANDUMP_LINE_MAX], ifname[16];

	snprintf(ifname, sizeof(ifname), "can%u", it->bus);
	if (rec_candump_format(it, ifname, line, sizeof(line)) < 0)
		return -EINVAL;
	return fputs(line, out) < 0 ? -EIO : 0;
}

int rec_format_item(FILE *out, enum rec_format fmt, const struct acq_item *it,
                    const struct rec_names *names, const struct rec_origin *origin)
{
	static const struct rec_names none;
	char t[48];

	if (!out || !it || fmt >= REC_FORMAT_MAX || it->kind >= ACQ_ITEM_KIND_MAX ||
	    (it->kind == ACQ_ITEM_CAN && it->can.len > ACQ_CAN_DATA_MAX) ||
	    (origin && (origin->log_id_len > REC_LOG_ID_MAX || (origin->log_id_len && !origin->log_id))))
		return -EINVAL;
	if (fmt == REC_FORMAT_CANDUMP)
		return candump_item(out, it);
	format_time(it->t_ns, t, sizeof(t));
	if (fmt == REC_FORMAT_CSV) {
		csv_item(out, it, names ? names : &none, t);
		if (origin)
			csv_origin(out, origin);
		fputc('\n', out);
	} else {
		json_item(out, it, names ? names : &none, t);
		if (origin)
			json_origin(out, origin);
		fputs("}\n", out);
	}
	return ferror(out) ? -EIO : 0;
}
