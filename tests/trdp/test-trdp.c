/* SPDX-License-Identifier: MIT */
/*
 * test-trdp: trdp/'s calls on bad arguments (-EINVAL, never a crash),
 * a file too large (-EFBIG), the ComId lookup over many telegrams, and a
 * decode into arrays too small (-ENOBUFS with what fitted).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlib.h"
#include "trdp/dataset.h"
#include "trdp/xml.h"

static const char small[] =
	"<device><bus-interface-list><bus-interface name='e'>"
	"<telegram name='T' com-id='9' data-set-id='1001'/>"
	"</bus-interface></bus-interface-list><data-set-list>"
	"<data-set id='1001'><element name='a' type='UINT16' array-size='3'/>"
	"<element name='s' type='CHAR8' array-size='4'/></data-set>"
	"</data-set-list></device>";

static void bad_arguments(void)
{
	struct trdp_config *cfg = NULL;
	struct trdp_value v[4];
	struct trdp_decode_result res;
	char err[128], text[16];
	struct trdp_leaf_info li;
	const struct trdp_plan *plan;

	CHECK(trdp_config_parse(NULL, small, sizeof(small) - 1, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_config_parse("x", NULL, 5, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_config_parse("x", small, sizeof(small) - 1, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_config_load(NULL, &cfg, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_config_load("/dev/null", NULL, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_config_load("/", &cfg, err, sizeof(err)) == -EINVAL);
	CHECK_STR(err, "/: not a regular file");
	CHECK(trdp_config_free(NULL) == NULL);
	CHECK(trdp_config_find(NULL, 9) == NULL);
	CHECK(trdp_plan_free(NULL) == NULL);
	CHECK(trdp_plan_leaves(NULL) == 0 && trdp_plan_comid(NULL) == 0 && trdp_plan_min_bytes(NULL) == 0);
	CHECK(trdp_plan_values_max(NULL, 100) == 0);
	CHECK(trdp_type_name(0) == NULL && trdp_type_name(17) == NULL && trdp_type_size(99) == 0);
	CHECK_STR(trdp_type_name(TRDP_TYPE_TIMEDATE48), "TIMEDATE48");
	CHECK(trdp_type_size(TRDP_TYPE_TIMEDATE48) == 6);

	/* a config without errors: err is emptied, nothing kept from before */
	strcpy(err, "stale");
	CHECK(trdp_config_parse("small.xml", small, sizeof(small) - 1, &cfg, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	plan = cfg->telegrams[0].plan;
	CHECK(trdp_plan_leaf(NULL, 0, &li) == -EINVAL);
	CHECK(trdp_plan_leaf(plan, 4, &li) == -EINVAL);
	CHECK(trdp_plan_leaf(plan, 0, NULL) == -EINVAL);
	CHECK(trdp_plan_value_name(plan, 4, 0, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_plan_value_name(plan, 0, 0, NULL, 5) == -EINVAL);
	CHECK(trdp_plan_value_name(plan, 0, 0, err, 4) == 6); /* "T.a[0]" cut to "T.a" */
	CHECK_STR(err, "T.a");
	CHECK(trdp_plan_compile(NULL, &cfg->telegrams[0], NULL, err, sizeof(err)) == -EINVAL);
	CHECK(trdp_plan_decode(plan, (const uint8_t *)"", 0, v, 4, text, sizeof(text), NULL) == -EINVAL);
	CHECK(trdp_plan_decode(NULL, (const uint8_t *)"", 0, v, 4, text, sizeof(text), &res) == -EINVAL);
	CHECK(trdp_plan_decode(plan, NULL, 3, v, 4, text, sizeof(text), &res) == -EINVAL);
	CHECK(trdp_plan_decode(plan, (const uint8_t *)"", 0, NULL, 4, text, sizeof(text), &res) == -EINVAL);
	CHECK(trdp_plan_decode(plan, (const uint8_t *)"", 0, v, 4, NULL, 3, &res) == -EINVAL);

	/* too small: what fitted, then -ENOBUFS naming the place */
	const uint8_t p[10] = { 0, 1, 0, 2, 0, 3, 'a', 'b', 'c', 'd' };
	CHECK(trdp_plan_decode(plan, p, sizeof(p), v, 2, text, sizeof(text), &res) == -ENOBUFS);
	CHECK(res.count == 2 && res.offset == 4 && v[1].raw.u == 2, "count %zu offset %u", res.count, res.offset);
	trdp_decode_strerror(plan, -ENOBUFS, &res, err, sizeof(err));
	CHECK_STR(err, "ComId 9: at byte offset 4, no room for T.a[2]'s value (2 values decoded)");
	CHECK(trdp_plan_decode(plan, p, sizeof(p), v, 4, text, 3, &res) == -ENOBUFS);
	CHECK(res.count == 3 && res.offset == 6 && res.text_used == 0);
	CHECK(trdp_plan_decode(plan, p, sizeof(p), v, 4, text, 4, &res) == 0);
	CHECK(res.count == 4 && v[3].text_len == 4 && !memcmp(text + v[3].text_off, "abcd", 4));
	trdp_config_free(cfg);
}

static void too_large(void)
{
	size_t n = TRDP_XML_MAX_BYTES + 1;
	char *big = malloc(n), err[160], path[] = "/tmp/test-trdp-XXXXXX";
	struct trdp_config *cfg;
	FILE *f;
	int fd;

	CHECK(big);
	memset(big, ' ', n);
	CHECK(trdp_config_parse("big.xml", big, n, &cfg, err, sizeof(err)) == -EFBIG);
	CHECK(strstr(err, "big.xml: 16777217 bytes, more than a TRDP configuration has"), "%s", err);
	fd = mkstemp(path);
	CHECK(fd >= 0 && (f = fdopen(fd, "w")) && fwrite(big, 1, n, f) == n && fclose(f) == 0);
	CHECK(trdp_config_load(path, &cfg, err, sizeof(err)) == -EFBIG);
	CHECK(strstr(err, "16777217 bytes"), "%s", err);
	unlink(path);
	free(big);
}

/* 3000 telegrams in an order that is not ComId order: each one found */
static void many_comids(void)
{
	size_t cap = 1 << 20, n = 0;
	char *x = malloc(cap), err[256];
	struct trdp_config *cfg;

	CHECK(x);
	n += (size_t)snprintf(x + n, cap - n, "<device><bus-interface-list><bus-interface>");
	for (unsigned i = 0; i < 3000; i++)
		n += (size_t)snprintf(x + n, cap - n, "<telegram com-id='%u' data-set-id='1001'/>", (i * 7919u) % 3001u + 5);
	n += (size_t)snprintf(x + n, cap - n, "</bus-interface></bus-interface-list><data-set-list>"
	                      "<data-set id='1001'><element type='UINT8'/></data-set></data-set-list></device>");
	CHECK(trdp_config_parse("many.xml", x, n, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(cfg->n_telegrams == 3000);
	for (unsigned i = 0; i < 3000; i++) {
		unsigned comid = (i * 7919u) % 3001u + 5;
		const struct trdp_telegram *t = trdp_config_find(cfg, comid);

		CHECK(t && t->comid == comid && t == &cfg->telegrams[i], "ComId %u", comid);
	}
	CHECK(trdp_config_find(cfg, 4) == NULL && trdp_config_find(cfg, 3006) == NULL);
	trdp_config_free(cfg);
	free(x);
}

int main(void)
{
	bad_arguments();
	too_large();
	many_comids();
	printf("trdp: bad arguments refused, -EFBIG, 3000 ComIds found, -ENOBUFS with what fitted\n");
	return 0;
}
