/* SPDX-License-Identifier: MIT */
/*
 * test-ground-config-status.c - the ground's reader of a vehicle's
 * railmon/<vehicle>/config/status payload (ground/config-status.c,
 * grd_config_status_parse()): what the vehicle writes (cli/run-cmd.c
 * rconf_said's format, its why escaped by basic_json_string) read back
 * exactly, and a hostile vehicle's payloads refused: over 4096 bytes, not
 * UTF-8, NUL, lone surrogates, numbers that are not whole or over bigint,
 * unknown, missing or repeated members, trailing bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ground/ground.h"
#include "basic/escape.h"
#include "tlib.h"

static int parse(const char *s, struct grd_config_status_msg *m)
{
	return grd_config_status_parse(s, strlen(s), m);
}

/* The vehicle's own writing (rconf_said), then read back. */
static void check_roundtrip(uint64_t version, const char *outcome, const char *why)
{
	struct grd_config_status_msg m;
	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);

	CHECK(f);
	fprintf(f, "{\"version\":%llu,\"outcome\":\"%s\",\"why\":", (unsigned long long)version, outcome);
	CHECK(basic_json_string(f, why) == 0);
	fputs("}", f);
	CHECK(fclose(f) == 0);
	CHECK(grd_config_status_parse(json, len, &m) == 0, "%s", json);
	CHECK(m.version == version);
	CHECK_STR(m.outcome, outcome);
	CHECK_STR(m.why, why);
	free(json);
}

static void test_vehicle_format(void)
{
	check_roundtrip(7, "rolled back", "the new board did not start: /etc/railmon/board.ini: bus 'extra': No such device");
	check_roundtrip(5, "applied", "");
	check_roundtrip(0, "refused", "too large: 4194305 bytes, at most 4194304");
	/* quotes, backslash, control bytes (\u00xx), tab, newline, UTF-8 of 2 to 4 bytes */
	check_roundtrip(9, "refused", "fails check: \"a\\b\" \x01\x1f\t\nline 2: caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	check_roundtrip(INT64_MAX, "applied", "</span><img src=x onerror=alert(1)>");
	printf("the vehicle's own payloads (rconf_said's format) read back exactly\n");
}

static void test_json_forms(void)
{
	struct grd_config_status_msg m;

	/* members in any order, JSON whitespace anywhere */
	CHECK(parse(" {\n\t\"why\" : \"x\" ,\"outcome\":\"refused\", \"version\" :12 }\r\n", &m) == 0);
	CHECK(m.version == 12);
	CHECK_STR(m.outcome, "refused");
	CHECK_STR(m.why, "x");
	/* every escape; a surrogate pair is one code point */
	CHECK(parse("{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC\\ud83d\\ude00\"}",
	            &m) == 0);
	CHECK_STR(m.why, "\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	printf("members in any order, whitespace, every escape and a surrogate pair\n");
}

static void test_refused(void)
{
	static const struct {
		const char *json;
		int err;
	} bad[] = {
		{ "", -EBADMSG },
		{ "[]", -EBADMSG },
		{ "{}", -EBADMSG },
		{ "{\"version\":1,\"outcome\":\"applied\"}", -EBADMSG },                  /* no why */
		{ "{\"version\":1,\"why\":\"\"}", -EBADMSG },                             /* no outcome */
		{ "{\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },                   /* no version */
		{ "{\"version\":1,\"outcome\":\"deleted\",\"why\":\"\"}", -EBADMSG },      /* not an outcome */
		{ "{\"version\":1,\"outcome\":\"Applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\",\"vehicle\":\"B\"}", -EBADMSG }, /* unknown member */
		{ "{\"version\":1,\"version\":2,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },     /* repeated */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\",}", -EBADMSG },    /* trailing comma */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\"}x", -EBADMSG },    /* trailing bytes */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\"}{}", -EBADMSG },
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"", -EBADMSG },        /* cut */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"a\\", -EBADMSG },
		{ "{\"version\":-1,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },    /* not whole, not >= 0 */
		{ "{\"version\":1.5,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":1e3,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":01,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":\"7\",\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":null,\"outcome\":\"applied\",\"why\":\"\"}", -EBADMSG },
		{ "{\"version\":9223372036854775808,\"outcome\":\"applied\",\"why\":\"\"}", -ERANGE }, /* bigint + 1 */
		{ "{\"version\":99999999999999999999999,\"outcome\":\"applied\",\"why\":\"\"}", -ERANGE },
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":7}", -EBADMSG },
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"a\\u0000b\"}", -EBADMSG }, /* NUL: not text */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\ud83d\"}", -EBADMSG },   /* lone high */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\ud83dx\\ude00\"}", -EBADMSG },
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\ude00\"}", -EBADMSG },   /* lone low */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\u12g4\"}", -EBADMSG },   /* not hex */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\\x41\"}", -EBADMSG },     /* no such escape */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"a\nb\"}", -EBADMSG },      /* raw control byte */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\xff\"}", -EILSEQ },       /* not UTF-8 */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\xc0\xaf\"}", -EILSEQ },   /* overlong */
		{ "{\"version\":1,\"outcome\":\"applied\",\"why\":\"\xed\xa0\x80\"}", -EILSEQ }, /* a surrogate in UTF-8 */
	};
	struct grd_config_status_msg m;
	static const char nul[] = "{\"version\":1,\"outcome\":\"applied\",\"why\":\"a\0b\"}";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r;

		memset(&m, 0x5a, sizeof(m));
		r = parse(bad[i].json, &m);
		CHECK(r == bad[i].err, "'%s': %d, want %d", bad[i].json, r, bad[i].err);
		CHECK(m.version == 0x5a5a5a5a5a5a5a5aull, "ret written on failure: '%s'", bad[i].json);
	}
	/* a raw NUL byte inside (len past it) */
	CHECK(grd_config_status_parse(nul, sizeof(nul) - 1, &m) == -EBADMSG);
	CHECK(grd_config_status_parse(NULL, 1, &m) == -EINVAL);
	CHECK(grd_config_status_parse("{}", 2, NULL) == -EINVAL);
	printf("%zu hostile payloads refused (form, members, numbers, escapes, NUL, UTF-8); ret untouched\n",
	       sizeof(bad) / sizeof(bad[0]) + 1);
}

/* The length limit: 4096 bytes taken, 4097 not, whatever the why's escapes. */
static void test_length(void)
{
	static const char head[] = "{\"version\":3,\"outcome\":\"refused\",\"why\":\"", tail[] = "\"}";
	char buf[GRD_CONFIG_STATUS_MAX + 2];
	struct grd_config_status_msg m;
	size_t hl = strlen(head), tl = strlen(tail);

	for (size_t total = GRD_CONFIG_STATUS_MAX; total <= GRD_CONFIG_STATUS_MAX + 1; total++) {
		size_t n = total - hl - tl;

		memcpy(buf, head, hl);
		memset(buf + hl, 'w', n);
		memcpy(buf + hl + n, tail, tl);
		int r = grd_config_status_parse(buf, total, &m);

		if (total == GRD_CONFIG_STATUS_MAX) {
			CHECK(r == 0, "%zu bytes: %d", total, r);
			CHECK(strlen(m.why) == n && m.why[0] == 'w' && m.why[n - 1] == 'w');
		} else {
			CHECK(r == -EMSGSIZE, "%zu bytes: %d", total, r);
		}
	}
	printf("4096 bytes taken (a why of %zu bytes), 4097 refused\n", GRD_CONFIG_STATUS_MAX - hl - tl);
}

int main(void)
{
	test_vehicle_format();
	test_json_forms();
	test_refused();
	test_length();
	return 0;
}
