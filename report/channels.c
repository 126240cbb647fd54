/* SPDX-License-Identifier: MIT */
/*
 * channels.c - `railmon channels`' listing (channels.h): every channel
 * with its id, name, unit, bus, source, declared range and value table,
 * as a table or JSON lines, and the dictionaries a log carries.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/escape.h"
#include "record/batch.h"
#include "record/format.h"
#include "report/channels.h"
#include "storage/stor.h"

static void print_range(const struct rec_channel *c, char *buf, size_t len)
{
	char lo[REC_DOUBLE_MAX], hi[REC_DOUBLE_MAX];

	if (!c->has_range || rec_format_double(c->min, lo, sizeof(lo)) < 0 ||
	    rec_format_double(c->max, hi, sizeof(hi)) < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s..%s", lo, hi);
}

static void print_json(FILE *out, const struct rec_channel *c)
{
	char lo[REC_DOUBLE_MAX], hi[REC_DOUBLE_MAX];

	fprintf(out, "{\"id\":%" PRIu32 ",\"bus\":%" PRIu32 ",\"bus_name\":", c->id, c->bus);
	basic_json_string(out, c->bus_name);
	fputs(",\"name\":", out);
	basic_json_string(out, c->name);
	fputs(",\"unit\":", out);
	basic_json_string(out, c->unit);
	fputs(",\"source\":", out);
	basic_json_string(out, c->source);
	if (c->has_range && rec_format_double(c->min, lo, sizeof(lo)) > 0 && rec_format_double(c->max, hi, sizeof(hi)) > 0)
		fprintf(out, ",\"min\":%s,\"max\":%s", lo, hi);
	else
		fputs(",\"min\":null,\"max\":null", out);
	fputs(",\"value_table\":{", out);
	for (size_t i = 0; i < c->nvalue_table; i++) {
		const char *e = c->value_table[i], *blank = strchr(e, ' ');
		char key[REC_DOUBLE_MAX + 1];

		snprintf(key, sizeof(key), "%.*s", (int)(blank ? blank - e : (long)strlen(e)), e);
		fprintf(out, "%s", i ? "," : "");
		basic_json_string(out, key);
		fputc(':', out);
		basic_json_string(out, blank ? blank + 1 : "");
	}
	fputs("}}\n", out);
}

void rpt_channels_print(FILE *out, const struct rec_channel *const *list, size_t n, bool json)
{
	char range[2 * REC_DOUBLE_MAX + 4];

	if (!json)
		fprintf(out, "%-8s %-12s %-28s %-8s %-16s %-32s %s\n", "id", "bus", "name", "unit", "range", "source",
		            "value table");
	for (size_t i = 0; i < n; i++) {
		const struct rec_channel *c = list[i];

		if (json) {
			print_json(out, c);
			continue;
		}
		print_range(c, range, sizeof(range));
		fprintf(out, "%-8" PRIu32 " %-12s %-28s %-8s %-16s %-32s ", c->id, c->bus_name && *c->bus_name ? c->bus_name : "-",
		            c->name, c->unit && *c->unit ? c->unit : "-", range, c->source && *c->source ? c->source : "-");
		for (size_t k = 0; k < c->nvalue_table; k++)
			fprintf(out, "%s%s", k ? ", " : "", c->value_table[k]);
		fputc('\n', out);
	}
}

int rpt_channels_learn_log(const char *dir, rec_channels_t *map)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	int r, k;

	r = stor_reader_open(dir, &rd);
	if (r < 0)
		return r;
	while ((k = stor_reader_next(rd, &rec)) != 0) {
		rec_batch_t *b;

		if (k < 0 || rec_batch_decode(rec.payload, rec.len, &b) < 0)
			continue; /* damage is export's and stat's to say */
		rec_channels_learn(map, b);
		rec_batch_free(b);
	}
	stor_reader_free(rd);
	return 0;
}
