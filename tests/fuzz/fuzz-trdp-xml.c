/* SPDX-License-Identifier: MIT */
/*
 * fuzz-trdp-xml: the TRDP device XML reader (trdp/xml.c) and the plan
 * compiler (trdp/dataset.c) on arbitrary text; whatever loads must list
 * its channels and decode payloads (the input's own bytes) into arrays of
 * the size the plan asks for, never past them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/utf8.h"
#include "trdp/dataset.h"
#include "trdp/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const struct trdp_plan *plan, const uint8_t *p, size_t len)
{
	size_t nv = trdp_plan_values_max(plan, len), nt = trdp_plan_text_max(len);
	struct trdp_value *v = calloc(nv ? nv : 1, sizeof(*v));
	char *text = malloc(nt ? nt : 1), msg[256];
	struct trdp_decode_result res;
	int r;

	if (!v || !text)
		abort();
	r = trdp_plan_decode(plan, p, len, v, nv, text, nt, &res);
	/* arrays of the size asked for are never too small */
	if (r == -ENOBUFS || r == -EINVAL || res.count > nv || res.used > len || res.text_used > nt)
		__builtin_trap();
	if (basic_utf8_valid(text, res.text_used) != res.text_used)
		__builtin_trap();
	for (size_t i = 0; i < res.count; i++) {
		char name[64];

		if (v[i].offset > len || v[i].text_off + (size_t)v[i].text_len > res.text_used ||
		    trdp_plan_value_name(plan, v[i].leaf, v[i].index, name, sizeof(name)) < 0)
			__builtin_trap();
	}
	trdp_decode_strerror(plan, r, &res, msg, sizeof(msg));
	free(v);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trdp_config *cfg;
	char err[256];

	if (trdp_config_parse("fuzz.xml", (const char *)data, size, &cfg, err, sizeof(err)) < 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			__builtin_trap(); /* a refusal always says why */
		return 0;
	}
	for (size_t i = 0; i < cfg->n_telegrams; i++) {
		const struct trdp_telegram *t = &cfg->telegrams[i];

		if (trdp_config_find(cfg, t->comid) != t)
			__builtin_trap();
		if (!t->plan)
			continue;
		for (size_t j = 0; j < trdp_plan_leaves(t->plan); j++) {
			struct trdp_leaf_info li;

			if (trdp_plan_leaf(t->plan, j, &li) < 0 || !li.prefix || !li.unit)
				__builtin_trap();
		}
		decode(t->plan, data, size);
		decode(t->plan, data + size / 2, size - size / 2);
	}
	trdp_config_free(cfg);
	return 0;
}
