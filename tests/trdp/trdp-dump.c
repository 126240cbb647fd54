/* SPDX-License-Identifier: MIT */
/*
 * trdp-dump - trdp/ as the Python tests see it (test-trdp-dataset.py,
 * test-trdp-xml.py): a device XML loaded, its telegrams and channels
 * listed, and payloads decoded, one line each.  Test code: it prints.
 *
 *   trdp-dump XML            the telegrams and leaves, or "error: ..." (exit 1)
 *   trdp-dump XML --decode   then stdin lines "COMID HEX [LEN]": decode the
 *                            first LEN bytes (all without), print the values
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hex.h"
#include "trdp/dataset.h"
#include "trdp/xml.h"

static void list(const struct trdp_config *cfg)
{
	printf("config telegrams %zu datasets %zu merged %zu renamed %zu\n", cfg->n_telegrams, cfg->n_datasets, cfg->merged, cfg->renamed);
	for (size_t i = 0; i < cfg->n_telegrams; i++) {
		const struct trdp_telegram *t = &cfg->telegrams[i];

		printf("telegram %" PRIu32 " %s dataset %" PRIu32 " pd %d cycle %" PRIu32 " timeout %" PRIu32
		       " md %d reply %" PRIu32 " confirm %" PRIu32 " tcp %d min-bytes %zu leaves %zu\n",
		       t->comid, t->name, t->dataset_id, t->pd, t->cycle_us, t->timeout_us, t->md,
		       t->reply_timeout_us, t->confirm_timeout_us, t->md_tcp, trdp_plan_min_bytes(t->plan),
		       trdp_plan_leaves(t->plan));
		for (size_t j = 0; j < trdp_plan_leaves(t->plan); j++) {
			struct trdp_leaf_info li;

			if (trdp_plan_leaf(t->plan, j, &li) < 0)
				abort();
			printf("leaf %" PRIu32 " %s%s%s %s unit=%s scale=%.17g offset=%.17g max=%" PRIu32 "\n", t->comid,
			       li.prefix, li.dynamic ? "[]" : "", li.suffix, trdp_type_name(li.type), li.unit,
			       li.scale, li.offset, li.max_items);
		}
	}
}

static void print_value(const struct trdp_plan *plan, const struct trdp_value *v, const char *text)
{
	char name[512];

	trdp_plan_value_name(plan, v->leaf, v->index, name, sizeof(name));
	printf("value %s %s %" PRIu32 " ", name, trdp_type_name(v->type), v->offset);
	switch (v->type) {
	case TRDP_TYPE_INT8: case TRDP_TYPE_INT16: case TRDP_TYPE_INT32: case TRDP_TYPE_INT64:
		printf("%" PRId64, v->raw.i);
		break;
	case TRDP_TYPE_REAL32: case TRDP_TYPE_REAL64:
		printf("%.17g", v->raw.f);
		break;
	default:
		printf("%" PRIu64, v->raw.u);
		break;
	}
	printf(" %" PRId32 " %.17g ", v->sub, v->value);
	if (v->type == TRDP_TYPE_CHAR8 || v->type == TRDP_TYPE_UTF16) {
		for (uint32_t i = 0; i < v->text_len; i++)
			printf("%02x", (unsigned char)text[v->text_off + i]);
		if (!v->text_len)
			printf("-");
	} else {
		printf("-");
	}
	printf("\n");
}

static int decode_line(const struct trdp_config *cfg, char *line)
{
	char *hex = NULL, *lenword;
	unsigned long comid = strtoul(strtok(line, " \n"), NULL, 10);
	const struct trdp_telegram *t = trdp_config_find(cfg, (uint32_t)comid);
	uint8_t *buf;
	size_t n, len;
	struct trdp_value *values;
	char *text, msg[512];
	struct trdp_decode_result res;
	int r;

	hex = strtok(NULL, " \n");
	lenword = strtok(NULL, " \n");
	if (!t || !t->plan || !hex) {
		printf("no-telegram %lu\n", comid);
		return 0;
	}
	if (!strcmp(hex, "-"))
		hex = (char *)"";
	n = strlen(hex) / 2;
	buf = malloc(n + 1);
	if (!buf || basic_hex_decode(hex, strlen(hex), buf, n) != (ssize_t)n) {
		printf("bad hex\n");
		return -1;
	}
	len = lenword ? strtoul(lenword, NULL, 10) : n;
	if (len > n)
		len = n;
	size_t nv = trdp_plan_values_max(t->plan, len), nt = trdp_plan_text_max(len);
	values = calloc(nv ? nv : 1, sizeof(*values));
	text = malloc(nt ? nt : 1);
	r = trdp_plan_decode(t->plan, buf, len, values, nv, text, nt, &res);
	trdp_decode_strerror(t->plan, r, &res, msg, sizeof(msg));
	printf("result %lu %d %zu %zu %" PRIu32 " %" PRIu32 " %s\n", comid, r, res.count, res.used, res.offset,
	       res.need, msg);
	for (size_t i = 0; i < res.count; i++)
		print_value(t->plan, &values[i], text);
	printf("end\n");
	free(values);
	free(text);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	struct trdp_config *cfg;
	char err[1024], *line = NULL;
	size_t cap = 0;
	int r;

	if (argc < 2)
		return 2;
	r = trdp_config_load(argv[1], &cfg, err, sizeof(err));
	if (r < 0) {
		printf("error %d: %s\n", r, err);
		return 1;
	}
	if (argc > 2 && !strcmp(argv[2], "--decode")) {
		while (getline(&line, &cap, stdin) > 0)
			if (decode_line(cfg, line) < 0)
				return 1;
		free(line);
		fflush(stdout);
	} else {
		list(cfg);
	}
	trdp_config_free(cfg);
	return 0;
}
