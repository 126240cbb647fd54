/* SPDX-License-Identifier: MIT */
/* format.c - records as CSV, JSON lines or candump lines (format.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "names.h"
#include "basic/escape.h"

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

static void hex(const uint8_t *d, size_t n, char *out)
{
	static const char digits[] = "0123456789ABCDEF";

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

int rec_format_header(FILE *out, enum rec_format fmt)
{
	if (!out || fmt >= REC_FORMAT_MAX)
		return -EINVAL;
	if (fmt == REC_FORMAT_CSV)
		fputs("seq,time,time_ns,kind,bus,channel,name,value,unit,quality,label,can_id,can_flags,can_data,"
		      "event,arg,detail\n", out);
	return ferror(out) ? -EIO : 0;
}

static void csv_item(FILE *out, const struct acq_item *it, const struct rec_names *nm, const char *t)
{
	char data[2 * ACQ_CAN_DATA_MAX + 1];
	const char *event;

	fprintf(out, "%" PRIu64 ",%s,%" PRId64 ",%s,%u,", it->seq, t, it->t_ns, rec_kind_name(it->kind), it->bus);
	switch (it->kind) {
	case ACQ_ITEM_CAN:
		hex(it->can.data, it->can.len, data);
		/* ids written as candump does: 3 hex digits, 8 for extended */
		fprintf(out, ",,,,,,%0*X,%u,%s,,,\n", (it->can.flags & ACQ_CAN_EXT) ? 8 : 3, it->can.id,
		        it->can.flags, data);
		break;
	case ACQ_ITEM_SAMPLE:
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
		fputs(",,,,,,\n", out);
		break;
	default:
		fputs(",,,,,,,,,", out);
		if ((event = rec_event_name(it->event.code)))
			basic_csv_field(out, event);
		else
			fprintf(out, "%u", it->event.code);
		fprintf(out, ",%" PRId64 ",%u\n", it->event.arg, it->event.detail);
	}
}

static void json_item(FILE *out, const struct acq_item *it, const struct rec_names *nm, const char *t)
{
	char data[2 * ACQ_CAN_DATA_MAX + 1];
	const char *event;

	fprintf(out, "{\"seq\":%" PRIu64 ",\"time\":\"%s\",\"time_ns\":%" PRId64 ",\"kind\":\"%s\",\"bus\":%u", it->seq,
	        t, it->t_ns, rec_kind_name(it->kind), it->bus);
	switch (it->kind) {
	case ACQ_ITEM_CAN:
		hex(it->can.data, it->can.len, data);
		fprintf(out, ",\"id\":%u,\"ext\":%s,\"fd\":%s,\"brs\":%s,\"rtr\":%s,\"err\":%s,\"len\":%u,\"data\":\"%s\"}\n",
		        it->can.id, (it->can.flags & ACQ_CAN_EXT) ? "true" : "false",
		        (it->can.flags & ACQ_CAN_FD) ? "true" : "false", (it->can.flags & ACQ_CAN_BRS) ? "true" : "false",
		        (it->can.flags & ACQ_CAN_RTR) ? "true" : "false", (it->can.flags & ACQ_CAN_ERR) ? "true" : "false",
		        it->can.len, data);
		break;
	case ACQ_ITEM_SAMPLE:
		fprintf(out, ",\"channel\":%u,\"name\":", it->sample.channel);
		basic_json_string(out, nm->channel);
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
		fputs("}\n", out);
		break;
	default:
		fputs(",\"event\":", out);
		if ((event = rec_event_name(it->event.code)))
			basic_json_string(out, event);
		else
			fprintf(out, "%u", it->event.code);
		fprintf(out, ",\"code\":%u,\"arg\":%" PRId64 ",\"detail\":%u}\n", it->event.code, it->event.arg,
		        it->event.detail);
	}
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
                    const struct rec_names *names)
{
	static const struct rec_names none;
	char t[48];

	if (!out || !it || fmt >= REC_FORMAT_MAX || it->kind >= ACQ_ITEM_KIND_MAX ||
	    (it->kind == ACQ_ITEM_CAN && it->can.len > ACQ_CAN_DATA_MAX))
		return -EINVAL;
	if (fmt == REC_FORMAT_CANDUMP)
		return candump_item(out, it);
	format_time(it->t_ns, t, sizeof(t));
	if (fmt == REC_FORMAT_CSV)
		csv_item(out, it, names ? names : &none, t);
	else
		json_item(out, it, names ? names : &none, t);
	return ferror(out) ? -EIO : 0;
}
