/* SPDX-License-Identifier: MIT */
/*
 * log-channels.c - `railmon channels`' listing (log-channels.h): every channel
 * with its id, name, unit, bus, source, declared range and value table,
 * as a table or JSON lines, and the dictionaries a log carries.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/nearest.h"
#include "conf/config.h"
#include "pipeline/channels.h"
#include "record/batch.h"
#include "record/format.h"
#include "report/log-channels.h"
#include "report/say.h"
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

static const char *or_dash(const char *s)
{
	return s && *s ? s : "-";
}

/* The columns of the table: at least the widths they always had, wider
   for the longest text present, so no long name shifts the columns. */
struct chan_cols {
	int bus, name, unit, range, source;
};

static void grow(int *w, const char *s)
{
	int n = (int)strlen(s);

	*w = n > *w ? n : *w;
}

static struct chan_cols chan_cols(const struct rec_channel *const *list, size_t n)
{
	struct chan_cols w = { 12, 28, 8, 16, 32 };
	char range[2 * REC_DOUBLE_MAX + 4];

	for (size_t i = 0; i < n; i++) {
		print_range(list[i], range, sizeof(range));
		grow(&w.bus, or_dash(list[i]->bus_name));
		grow(&w.name, list[i]->name);
		grow(&w.unit, or_dash(list[i]->unit));
		grow(&w.range, range);
		grow(&w.source, or_dash(list[i]->source));
	}
	return w;
}

void rpt_channels_print(FILE *out, const struct rec_channel *const *list, size_t n, bool json, int width)
{
	char range[2 * REC_DOUBLE_MAX + 4], *line = NULL;
	struct chan_cols w = chan_cols(list, json ? 0 : n);
	size_t len;
	FILE *m;

	if (!json && (m = open_memstream(&line, &len))) {
		fprintf(m, "%-8s %-*s %-*s %-*s %-*s %-*s %s", "id", w.bus, "bus", w.name, "name", w.unit, "unit",
		        w.range, "range", w.source, "source", "value table");
		fclose(m);
		rpt_line_fit(out, line, width);
		free(line);
		line = NULL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct rec_channel *c = list[i];

		if (json) {
			print_json(out, c);
			continue;
		}
		/* the row into memory, then out whole or cut to the terminal */
		if (!(m = open_memstream(&line, &len)))
			return;
		print_range(c, range, sizeof(range));
		fprintf(m, "%-8" PRIu32 " %-*s %-*s %-*s %-*s %-*s ", c->id, w.bus, or_dash(c->bus_name), w.name, c->name,
		        w.unit, or_dash(c->unit), w.range, range, w.source, or_dash(c->source));
		for (size_t k = 0; k < c->nvalue_table; k++)
			fprintf(m, "%s%s", k ? ", " : "", c->value_table[k]);
		fclose(m);
		rpt_line_fit(out, line, width);
		free(line);
		line = NULL;
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

int rpt_channels_resolve(FILE *err, const char *cmd, const char *dir, const rec_channels_t *map,
                         const char *const *want, size_t n, char **resolved)
{
	const struct rec_channel **list;
	const char **names;
	char near[512], why[1024];
	int nl = rec_channels_sorted(map, &list), bad = 0;

	if (nl < 0)
		return -ENOMEM;
	if (!(names = calloc(nl ? (size_t)nl : 1, sizeof(*names)))) {
		free(list);
		return -ENOMEM;
	}
	for (int i = 0; i < nl; i++)
		names[i] = list[i]->name;
	for (size_t k = 0; k < n && bad >= 0; k++) {
		uint32_t id;
		int r = rec_channels_resolve(map, want[k], &id, why, sizeof(why));

		if (r == 0) {
			free(resolved[k]);
			if (!(resolved[k] = strdup(rec_channels_find(map, id)->name)))
				bad = -ENOMEM;
			continue;
		}
		bad++;
		if (r == -ENOTUNIQ) {
			fprintf(err, "railmon %s: --channel: %s\n", cmd, why);
			continue;
		}
		basic_nearest_names(want[k], names, (size_t)nl, near, sizeof(near));
		fprintf(err, "railmon %s: --channel '%s': %s has no such channel%s%s%s\n", cmd, want[k], dir,
		        nl ? "; nearest: " : " (its dictionary names none)", near,
		        nl && !*near ? "none near (`railmon channels --data DIR` lists them)" : "");
	}
	free(names);
	free(list);
	return bad;
}

int rpt_channels_of_board(FILE *out, FILE *err, const struct conf_board *cfg, const char *path, bool json,
                          int width)
{
	pl_channels_t *ch;
	const struct rec_channel **list;
	const struct rec_channel *dict;
	char msg[CONF_ERR_MAX];
	size_t n;

	if (pl_channels_new(cfg, &ch, msg, sizeof(msg)) < 0) {
		fprintf(err, "railmon channels: %s\n", msg);
		return 1;
	}
	n = pl_channels_list(ch, NULL);
	dict = pl_channels_dictionary(ch);
	list = calloc(n ? n : 1, sizeof(*list));
	if (list) {
		for (size_t i = 0; i < n; i++)
			list[i] = &dict[i];
		rpt_channels_print(out, list, n, json, width);
		fflush(out); /* the count after the table, also when both go to one file */
		fprintf(err, "railmon channels: %zu channels in %s\n", n, path);
	}
	free(list);
	pl_channels_free(ch);
	return list ? 0 : rpt_fail(err, "channels", "out of memory");
}

int rpt_channels_of_log(FILE *out, FILE *err, const char *dir, bool json, int width)
{
	rec_channels_t *map;
	const struct rec_channel **list;
	int n, r;

	if (rec_channels_new(&map) < 0)
		return rpt_fail(err, "channels", "out of memory");
	r = rpt_channels_learn_log(dir, map);
	if (r < 0) {
		rec_channels_free(map);
		fprintf(err, "railmon channels: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	n = rec_channels_sorted(map, &list);
	if (n >= 0)
		rpt_channels_print(out, list, (size_t)n, json, width);
	fflush(out); /* the count after the table, also when both go to one file */
	if (n == 0)
		fprintf(err, "railmon channels: %s: no channel dictionary in the log\n", dir);
	else if (n > 0)
		fprintf(err, "railmon channels: %d channels in the dictionary of %s\n", n, dir);
	free(list);
	rec_channels_free(map);
	return n > 0 ? 0 : 1;
}
