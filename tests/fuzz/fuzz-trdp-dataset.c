/* SPDX-License-Identifier: MIT */
/*
 * fuzz-trdp-dataset: payloads decoded (trdp/dataset.c) with a plan of
 * every element type and array form: scalars, fixed and variable arrays,
 * text, nested sets, a variable array of sets with text inside.  The
 * input's first byte picks the telegram and how many values fit (the
 * -ENOBUFS path too); every value must lie inside the payload, the text
 * be UTF-8 inside the text buffer, and a decode with room never fail for
 * room.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/utf8.h"
#include "trdp/dataset.h"
#include "trdp/xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char xml[] =
	"<device><bus-interface-list><bus-interface name='e'>"
	"<telegram name='A' com-id='1' data-set-id='1001'/>"
	"<telegram name='V' com-id='2' data-set-id='1002'/>"
	"<telegram name='N' com-id='3' data-set-id='1003'/>"
	"</bus-interface></bus-interface-list><data-set-list>"
	"<data-set id='1001'>"
	"<element name='b' type='BOOL8'/><element name='c' type='CHAR8' array-size='5'/>"
	"<element name='w' type='UTF16' array-size='3'/><element name='i8' type='INT8'/>"
	"<element name='i16' type='INT16'/><element name='i32' type='INT32' scale='0.1' offset='-3'/>"
	"<element name='i64' type='INT64'/><element name='u8' type='UINT8' array-size='2'/>"
	"<element name='u16' type='UINT16'/><element name='u32' type='UINT32'/><element name='u64' type='UINT64'/>"
	"<element name='r32' type='REAL32'/><element name='r64' type='REAL64' array-size='2'/>"
	"<element name='t32' type='TIMEDATE32'/><element name='t48' type='TIMEDATE48'/>"
	"<element name='t64' type='TIMEDATE64'/></data-set>"
	"<data-set id='1002'>"
	"<element name='n' type='UINT8'/><element name='a' type='INT16' array-size='0'/>"
	"<element name='m' type='UINT16'/><element name='s' type='CHAR8' array-size='0'/>"
	"<element name='k' type='UINT32'/><element name='u' type='UTF16' array-size='0'/>"
	"<element name='j' type='INT8'/><element name='t' type='TIMEDATE48' array-size='0'/></data-set>"
	"<data-set id='1003'>"
	"<element name='n' type='UINT16'/><element name='d' type='1004' array-size='0'/>"
	"<element name='f' type='1004' array-size='2'/></data-set>"
	"<data-set id='1004'>"
	"<element name='x' type='REAL64'/><element name='l' type='UINT8'/>"
	"<element name='s' type='CHAR8' array-size='0'/><element name='g' type='INT32' array-size='2'/></data-set>"
	"</data-set-list></device>";

static void check(const struct trdp_plan *plan, const uint8_t *p, size_t len, size_t nv)
{
	size_t nt = trdp_plan_text_max(len);
	struct trdp_value *v = calloc(nv ? nv : 1, sizeof(*v));
	char *text = malloc(nt ? nt : 1);
	struct trdp_decode_result res;
	int r;

	if (!v || !text)
		abort();
	r = trdp_plan_decode(plan, p, len, v, nv, text, nt, &res);
	if (r != 0 && r != -EBADMSG && r != -ERANGE && r != -ENOBUFS)
		__builtin_trap();
	if (r == -ENOBUFS && nv >= trdp_plan_values_max(plan, len))
		__builtin_trap();
	if (res.count > nv || res.used > len || res.text_used > nt)
		__builtin_trap();
	if (basic_utf8_valid(text, res.text_used) != res.text_used)
		__builtin_trap();
	for (size_t i = 0; i < res.count; i++) {
		bool text_value = v[i].type == TRDP_TYPE_CHAR8 || v[i].type == TRDP_TYPE_UTF16;

		/* a number's bytes lie inside the payload; a text's start does */
		if (v[i].offset + (text_value ? 0 : trdp_type_size(v[i].type)) > len ||
		    v[i].leaf >= trdp_plan_leaves(plan) || v[i].text_off + (size_t)v[i].text_len > res.text_used)
			__builtin_trap();
	}
	free(v);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* loaded once: the fuzzer calls this millions of times */
	static struct trdp_config *cfg;
	const struct trdp_telegram *t;
	size_t nv;

	if (!cfg && trdp_config_parse("fuzz.xml", xml, sizeof(xml) - 1, &cfg, NULL, 0) < 0)
		abort();
	if (size < 1)
		return 0;
	t = &cfg->telegrams[data[0] % cfg->n_telegrams];
	nv = trdp_plan_values_max(t->plan, size - 1);
	check(t->plan, data + 1, size - 1, nv);
	check(t->plan, data + 1, size - 1, data[0] % 17);
	return 0;
}
