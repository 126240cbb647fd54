/* SPDX-License-Identifier: MIT */
/*
 * test-basic-utc.c - basic_utc_format (basic/utc.h): the one formatter of
 * ns since the epoch as UTC text.  The expected strings were computed
 * with Python's datetime (floor division of the ns, then
 * datetime(1970, 1, 1, tzinfo=utc) + timedelta(seconds=...)), the
 * independent reference; tests/basic/test-basic-utc.py compares many
 * more times against it at run time.
 *
 * With arguments "print DIGITS FLAGS", it reads one time in ns a line on
 * stdin and writes its text a line (for that script).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/utc.h"
#include "tlib.h"

static void expect(int64_t t, unsigned digits, unsigned flags, const char *want)
{
	char buf[BASIC_UTC_MAX];
	int n = basic_utc_format(t, digits, flags, buf, sizeof(buf));

	CHECK(n == (int)strlen(want) && !strcmp(buf, want), "%" PRId64 " (%u digits, flags %u): '%s', want '%s'", t,
	      digits, flags, n >= 0 ? buf : "(error)", want);
}

/* Each time at the four precisions ('T', "Z") and as a timestamptz. */
static const struct {
	int64_t t;
	const char *s[4], *pg;
} cases[] = {
	{ 0, { "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000000Z",
	       "1970-01-01T00:00:00.000000000Z" }, "1970-01-01 00:00:00.000000+00" },
	/* -1 ns: the instant before the epoch, at every precision (truncation
	   toward zero said 1970-01-01T00:00:00.000Z, or a fraction "-0") */
	{ -1, { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999999Z",
	        "1969-12-31T23:59:59.999999999Z" }, "1969-12-31 23:59:59.999999+00" },
	{ 1, { "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.000000Z",
	       "1970-01-01T00:00:00.000000001Z" }, "1970-01-01 00:00:00.000000+00" },
	/* exact second boundaries, and either side of one */
	{ -1000000000, { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.000Z", "1969-12-31T23:59:59.000000Z",
	                 "1969-12-31T23:59:59.000000000Z" }, "1969-12-31 23:59:59.000000+00" },
	{ -999999999, { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.000Z", "1969-12-31T23:59:59.000000Z",
	                "1969-12-31T23:59:59.000000001Z" }, "1969-12-31 23:59:59.000000+00" },
	{ -1000000001, { "1969-12-31T23:59:58Z", "1969-12-31T23:59:58.999Z", "1969-12-31T23:59:58.999999Z",
	                 "1969-12-31T23:59:58.999999999Z" }, "1969-12-31 23:59:58.999999+00" },
	{ 999999999, { "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.999Z", "1970-01-01T00:00:00.999999Z",
	               "1970-01-01T00:00:00.999999999Z" }, "1970-01-01 00:00:00.999999+00" },
	{ -1500000, { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.998Z", "1969-12-31T23:59:59.998500Z",
	              "1969-12-31T23:59:59.998500000Z" }, "1969-12-31 23:59:59.998500+00" },
	{ -1000000, { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999000Z",
	              "1969-12-31T23:59:59.999000000Z" }, "1969-12-31 23:59:59.999000+00" },
	{ -86400000000000, { "1969-12-31T00:00:00Z", "1969-12-31T00:00:00.000Z", "1969-12-31T00:00:00.000000Z",
	                     "1969-12-31T00:00:00.000000000Z" }, "1969-12-31 00:00:00.000000+00" },
	{ 1796281200123456789, { "2026-12-03T07:00:00Z", "2026-12-03T07:00:00.123Z", "2026-12-03T07:00:00.123456Z",
	                         "2026-12-03T07:00:00.123456789Z" }, "2026-12-03 07:00:00.123456+00" },
	/* the int64 limits: 2262 and 1677 */
	{ INT64_MAX, { "2262-04-11T23:47:16Z", "2262-04-11T23:47:16.854Z", "2262-04-11T23:47:16.854775Z",
	               "2262-04-11T23:47:16.854775807Z" }, "2262-04-11 23:47:16.854775+00" },
	{ INT64_MIN, { "1677-09-21T00:12:43Z", "1677-09-21T00:12:43.145Z", "1677-09-21T00:12:43.145224Z",
	               "1677-09-21T00:12:43.145224192Z" }, "1677-09-21 00:12:43.145224+00" },
};

/* Lines of ns on stdin -> their text on stdout. */
static int print_mode(unsigned digits, unsigned flags)
{
	char line[64], buf[BASIC_UTC_MAX];

	while (fgets(line, sizeof(line), stdin)) {
		int n = basic_utc_format(strtoll(line, NULL, 10), digits, flags, buf, sizeof(buf));

		if (n < 0)
			return 2;
		puts(buf);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char buf[BASIC_UTC_MAX], small[8];
	static const unsigned digits[] = { 0, 3, 6, 9 };

	if (argc == 4 && !strcmp(argv[1], "print"))
		return print_mode((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t d = 0; d < 4; d++)
			expect(cases[i].t, digits[d], 0, cases[i].s[d]);
		expect(cases[i].t, 6, BASIC_UTC_SPACE | BASIC_UTC_PG, cases[i].pg);
	}
	/* the separator and the suffix each on their own */
	expect(1764745754250000000, 3, BASIC_UTC_SPACE, "2025-12-03 07:09:14.250Z");
	expect(-1, 3, BASIC_UTC_SPACE, "1969-12-31 23:59:59.999Z"); /* hold said "1970-01-01 00:00:00.000Z" */
	expect(1764745754250000000, 0, BASIC_UTC_PG, "2025-12-03T07:09:14+00");
	/* the longest text fits BASIC_UTC_MAX; bad arguments, a short buffer */
	CHECK(basic_utc_format(INT64_MIN, 9, BASIC_UTC_SPACE | BASIC_UTC_PG, buf, sizeof(buf)) == 32);
	CHECK(basic_utc_format(0, 9, 0, NULL, 40) == -EINVAL);
	CHECK(basic_utc_format(0, 2, 0, buf, sizeof(buf)) == -EINVAL, "2 digits is no precision it writes");
	CHECK(basic_utc_format(0, 12, 0, buf, sizeof(buf)) == -EINVAL);
	CHECK(basic_utc_format(0, 3, 1u << 5, buf, sizeof(buf)) == -EINVAL, "unknown flag");
	strcpy(small, "keep");
	CHECK(basic_utc_format(0, 3, 0, small, sizeof(small)) == -ENOSPC && !strcmp(small, "keep"),
	      "written only on success");
	CHECK(basic_utc_format(0, 0, 0, buf, 20) == -ENOSPC, "20 chars and the NUL need 21");
	CHECK(basic_utc_format(0, 0, 0, buf, 21) == 20);
	/* every ms of a 2 s span around the epoch: the text's instant is at
	   or before t and less than one unit before it (the floor) */
	for (int64_t t = -1000000000; t <= 1000000000; t += 999983) {
		struct tm tm = { 0 };
		int ms;

		CHECK(basic_utc_format(t, 3, 0, buf, sizeof(buf)) == 24);
		CHECK(sscanf(buf, "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		             &tm.tm_min, &tm.tm_sec, &ms) == 7);
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		int64_t at = (int64_t)timegm(&tm) * 1000000000 + (int64_t)ms * 1000000;
		CHECK(at <= t && t - at < 1000000, "%" PRId64 ": %s", t, buf);
	}
	printf("basic-utc: %zu times at 4 precisions and as timestamptz, limits, bad arguments: ok\n",
	       sizeof(cases) / sizeof(cases[0]));
	return 0;
}
