/* SPDX-License-Identifier: MIT */
/*
 * channels-cmd.c - `railmon channels --board FILE | --data DIR`: every
 * channel with its id, name, unit, bus, source, declared range and value
 * table (like `cantools dump`), from a board file (what `run` would
 * record) or from the dictionary a log carries (what was recorded).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/channels.h"
#include "cli.h"
#include "conf/config.h"
#include "record/channels.h"
#include "record/format.h"
#include "storage/stor.h"
#include "basic/escape.h"

static const char channels_usage[] =
	"Usage: railmon channels --board FILE | --data DIR [--json]\n"
	"List every channel: id, bus, name, unit, range, source and value table.\n\n"
	"  -b, --board FILE   the channels a board file defines (its DBC files too)\n"
	"  -d, --data DIR     the channels a log's dictionary names\n"
	"      --json         one JSON object per channel instead of the table\n"
	"  -h, --help         this text\n";

static void print_range(const struct rec_channel *c, char *buf, size_t len)
{
	char lo[REC_DOUBLE_MAX], hi[REC_DOUBLE_MAX];

	if (!c->has_range || rec_format_double(c->min, lo, sizeof(lo)) < 0 ||
	    rec_format_double(c->max, hi, sizeof(hi)) < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%s..%s", lo, hi);
}

static void print_json(const struct rec_channel *c)
{
	char lo[REC_DOUBLE_MAX], hi[REC_DOUBLE_MAX];

	printf("{\"id\":%" PRIu32 ",\"bus\":%" PRIu32 ",\"bus_name\":", c->id, c->bus);
	basic_json_string(stdout, c->bus_name);
	fputs(",\"name\":", stdout);
	basic_json_string(stdout, c->name);
	fputs(",\"unit\":", stdout);
	basic_json_string(stdout, c->unit);
	fputs(",\"source\":", stdout);
	basic_json_string(stdout, c->source);
	if (c->has_range && rec_format_double(c->min, lo, sizeof(lo)) > 0 && rec_format_double(c->max, hi, sizeof(hi)) > 0)
		printf(",\"min\":%s,\"max\":%s", lo, hi);
	else
		fputs(",\"min\":null,\"max\":null", stdout);
	fputs(",\"value_table\":{", stdout);
	for (size_t i = 0; i < c->nvalue_table; i++) {
		const char *e = c->value_table[i], *blank = strchr(e, ' ');
		char key[REC_DOUBLE_MAX + 1];

		snprintf(key, sizeof(key), "%.*s", (int)(blank ? blank - e : (long)strlen(e)), e);
		printf("%s", i ? "," : "");
		basic_json_string(stdout, key);
		fputc(':', stdout);
		basic_json_string(stdout, blank ? blank + 1 : "");
	}
	fputs("}}\n", stdout);
}

static void print_all(const struct rec_channel *const *list, size_t n, bool json)
{
	char range[2 * REC_DOUBLE_MAX + 4];

	if (!json)
		printf("%-8s %-12s %-28s %-8s %-16s %-32s %s\n", "id", "bus", "name", "unit", "range", "source",
		       "value table");
	for (size_t i = 0; i < n; i++) {
		const struct rec_channel *c = list[i];

		if (json) {
			print_json(c);
			continue;
		}
		print_range(c, range, sizeof(range));
		printf("%-8" PRIu32 " %-12s %-28s %-8s %-16s %-32s ", c->id, c->bus_name && *c->bus_name ? c->bus_name : "-",
		       c->name, c->unit && *c->unit ? c->unit : "-", range, c->source && *c->source ? c->source : "-");
		for (size_t k = 0; k < c->nvalue_table; k++)
			printf("%s%s", k ? ", " : "", c->value_table[k]);
		fputc('\n', stdout);
	}
}

/* The log's dictionaries (every Batch that carries one, latest wins). */
static int learn_log(const char *dir, rec_channels_t *map)
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

static int from_board(const char *path, bool json)
{
	struct conf_board *cfg;
	pl_channels_t *ch;
	const struct rec_channel **list;
	const struct rec_channel *dict;
	char err[CONF_ERR_MAX];
	size_t n;
	int r = cli_load_board("channels", path, &cfg);

	if (r)
		return r;
	if (pl_channels_new(cfg, &ch, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon channels: %s\n", err);
		conf_free(cfg);
		return 1;
	}
	n = pl_channels_list(ch, NULL);
	dict = pl_channels_dictionary(ch);
	list = calloc(n ? n : 1, sizeof(*list));
	if (list) {
		for (size_t i = 0; i < n; i++)
			list[i] = &dict[i];
		print_all(list, n, json);
		fprintf(stderr, "railmon channels: %zu channels in %s\n", n, path);
	}
	free(list);
	pl_channels_free(ch);
	conf_free(cfg);
	return list ? 0 : cli_fail("channels", "out of memory");
}

static int from_log(const char *dir, bool json)
{
	rec_channels_t *map;
	const struct rec_channel **list;
	int n, r;

	if (rec_channels_new(&map) < 0)
		return cli_fail("channels", "out of memory");
	r = learn_log(dir, map);
	if (r < 0) {
		rec_channels_free(map);
		fprintf(stderr, "railmon channels: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	n = rec_channels_sorted(map, &list);
	if (n >= 0)
		print_all(list, (size_t)n, json);
	if (n == 0)
		fprintf(stderr, "railmon channels: %s: no channel dictionary in the log\n", dir);
	else if (n > 0)
		fprintf(stderr, "railmon channels: %d channels in the dictionary of %s\n", n, dir);
	free(list);
	rec_channels_free(map);
	return n > 0 ? 0 : 1;
}

int board_cmd_channels(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 1 }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 1: json = true; break;
		case 'h': fputs(channels_usage, stdout); return 0;
		default: fputs(channels_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("channels", "unexpected argument '%s'", argv[optind]);
	if (!board == !data)
		return cli_fail("channels", "give --board FILE or --data DIR (one of them)");
	return board ? from_board(board, json) : from_log(data, json);
}
