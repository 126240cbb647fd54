/* SPDX-License-Identifier: MIT */
/*
 * test-parse.c - basic/parse.h: every suffix, every base, bad arguments,
 * overflow at the edge of uint64, and the formatters read back.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "basic/parse.h"
#include "basic/timeparse.h"
#include <stdlib.h>

static void test_u64(void)
{
	uint64_t u = 7;

	assert(basic_parse_u64("0", 0, 10, &u) == 0 && u == 0);
	assert(basic_parse_u64("0x1f", 0, 100, &u) == 0 && u == 31);
	assert(basic_parse_u64("010", 0, 100, &u) == 0 && u == 8); /* C's octal, as board files always took it */
	assert(basic_parse_u64("+5", 0, 10, &u) == 0 && u == 5);
	assert(basic_parse_u64("18446744073709551615", 0, UINT64_MAX, &u) == 0 && u == UINT64_MAX);
	u = 7;
	assert(basic_parse_u64("18446744073709551616", 0, UINT64_MAX, &u) == -ERANGE && u == 7);
	assert(basic_parse_u64("11", 0, 10, &u) == -ERANGE && u == 7);
	assert(basic_parse_u64("4", 5, 10, &u) == -ERANGE);
	/* strtoull would take these: "-1" as 2^64-1, a blank before the digits */
	assert(basic_parse_u64("-1", 0, UINT64_MAX, &u) == -EINVAL);
	assert(basic_parse_u64(" 1", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("1 ", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("08", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("0x", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("1k", 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64(NULL, 0, 10, &u) == -EINVAL);
	assert(basic_parse_u64("1", 0, 10, NULL) == -EINVAL);
	assert(u == 7);
}

static void test_i64(void)
{
	int64_t i = 7;

	assert(basic_parse_i64("-1", -1, 1023, &i) == 0 && i == -1);
	assert(basic_parse_i64("0x10", -1, 1023, &i) == 0 && i == 16);
	assert(basic_parse_i64("-9223372036854775808", INT64_MIN, INT64_MAX, &i) == 0 && i == INT64_MIN);
	i = 7;
	assert(basic_parse_i64("9223372036854775808", INT64_MIN, INT64_MAX, &i) == -ERANGE);
	assert(basic_parse_i64("-2", -1, 1023, &i) == -ERANGE);
	assert(basic_parse_i64("1024", -1, 1023, &i) == -ERANGE);
	assert(basic_parse_i64("", -1, 1, &i) == -EINVAL);
	assert(basic_parse_i64("\t1", -1, 1, &i) == -EINVAL);
	assert(basic_parse_i64("1.0", -1, 1, &i) == -EINVAL);
	assert(basic_parse_i64(NULL, -1, 1, &i) == -EINVAL);
	assert(i == 7);
}

static void test_double_bool(void)
{
	double d = 7;
	bool b = false;

	assert(basic_parse_double("0.1", &d) == 0 && d == 0.1);
	assert(basic_parse_double("-3e2", &d) == 0 && d == -300);
	d = 7;
	assert(basic_parse_double("nan", &d) == -ERANGE && basic_parse_double("inf", &d) == -ERANGE);
	assert(basic_parse_double("1e309", &d) == -ERANGE);
	assert(basic_parse_double("", &d) == -EINVAL && basic_parse_double("1x", &d) == -EINVAL);
	assert(basic_parse_double(" 1", &d) == -EINVAL && basic_parse_double(NULL, &d) == -EINVAL);
	assert(d == 7);
	for (const char *const *y = (const char *const[]){ "true", "YES", "On", "1", NULL }; *y; y++)
		assert(basic_parse_bool(*y, &b) == 0 && b);
	for (const char *const *n = (const char *const[]){ "false", "No", "OFF", "0", NULL }; *n; n++)
		assert(basic_parse_bool(*n, &b) == 0 && !b);
	b = true;
	assert(basic_parse_bool("2", &b) == -EINVAL && basic_parse_bool("", &b) == -EINVAL);
	assert(basic_parse_bool("truex", &b) == -EINVAL && basic_parse_bool(NULL, &b) == -EINVAL);
	assert(basic_parse_bool("true", NULL) == -EINVAL && b);
}

static void test_size(void)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "65536", 65536 }, { "64K", 64ull << 10 }, { "64k", 64ull << 10 }, { "16M", 16ull << 20 },
		{ "16m", 16ull << 20 }, { "2G", 2ull << 30 }, { "1T", 1ull << 40 }, { "2t", 2ull << 40 },
		{ "64KiB", 64ull << 10 }, { "64kb", 64ull << 10 }, { "1Mi", 1ull << 20 }, { "1GB", 1ull << 30 },
		{ "16777215T", 16777215ull << 40 }, { "18446744073709551615", UINT64_MAX },
	};
	static const struct { const char *s; int r; } bad[] = {
		{ "", -EINVAL }, { "K", -EINVAL }, { "-1", -EINVAL }, { " 1", -EINVAL }, { "1.5M", -EINVAL },
		{ "1P", -EINVAL }, { "1KK", -EINVAL }, { "1Ki B", -EINVAL }, { "1 K", -EINVAL }, { "12Q", -EINVAL },
		{ "1B", -EINVAL }, { "0x10", -EINVAL }, { "1iB", -EINVAL },
		{ "16777216T", -ERANGE }, { "18446744073709551616", -ERANGE }, { "99999999999999999999K", -ERANGE },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 1;
		if (basic_parse_size(ok[i].s, &v) != 0 || v != ok[i].v) {
			fprintf(stderr, "size '%s': %llu\n", ok[i].s, (unsigned long long)v);
			assert(0);
		}
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 1;
		if (basic_parse_size(bad[i].s, &v) != bad[i].r || v != 1) {
			fprintf(stderr, "size '%s' taken, or not as %d\n", bad[i].s, bad[i].r);
			assert(0);
		}
	}
	assert(basic_parse_size(NULL, &v) == -EINVAL && basic_parse_size("1", NULL) == -EINVAL);
}

static void test_duration(void)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "30", 30 }, { "30s", 30 }, { "15m", 900 }, { "12h", 43200 }, { "30d", 2592000 },
		{ "18446744073709551615", UINT64_MAX }, { "18446744073709551615s", UINT64_MAX },
		{ "213503982334601d", 213503982334601ull * 86400 },
	};
	static const struct { const char *s; int r; } bad[] = {
		{ "", -EINVAL }, { "s", -EINVAL }, { "-1", -EINVAL }, { "1S", -EINVAL }, { "1D", -EINVAL },
		{ "1w", -EINVAL }, { "1.5h", -EINVAL }, { "1hh", -EINVAL }, { "1 h", -EINVAL }, { " 1", -EINVAL },
		{ "213503982334602d", -ERANGE }, { "18446744073709551616", -ERANGE },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert(basic_parse_duration(ok[i].s, &v) == 0 && v == ok[i].v);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 1;
		if (basic_parse_duration(bad[i].s, &v) != bad[i].r || v != 1) {
			fprintf(stderr, "duration '%s' taken, or not as %d\n", bad[i].s, bad[i].r);
			assert(0);
		}
	}
	assert(basic_parse_duration(NULL, &v) == -EINVAL && basic_parse_duration("1", NULL) == -EINVAL);
}

/* Command-line seconds: fractions, and nothing that cannot become int64
   nanoseconds ((int64_t)(s * 1e9) of 1e12 or nan is undefined). */
static void test_seconds(void)
{
	double s = 7;

	assert(basic_parse_seconds("2", &s) == 0 && s == 2);
	assert(basic_parse_seconds("0.5", &s) == 0 && s == 0.5);
	assert(basic_parse_seconds("0", &s) == 0 && s == 0);
	assert(basic_parse_seconds("1e9", &s) == 0 && s == 1e9);
	assert((int64_t)(s * 1e9) > 0);
	s = 7;
	assert(basic_parse_seconds("1.000001e9", &s) == -ERANGE);
	assert(basic_parse_seconds("-1", &s) == -ERANGE && basic_parse_seconds("-0", &s) == -ERANGE);
	assert(basic_parse_seconds("nan", &s) == -ERANGE && basic_parse_seconds("inf", &s) == -ERANGE);
	assert(basic_parse_seconds("", &s) == -EINVAL && basic_parse_seconds("2s", &s) == -EINVAL);
	assert(basic_parse_seconds(NULL, &s) == -EINVAL && basic_parse_seconds("1", NULL) == -EINVAL);
	assert(s == 7);
}

static void test_format(void)
{
	static const uint64_t sizes[] = { 0, 1, 1023, 1024, 65536, 16ull << 20, 1536ull << 10, 3ull << 39,
	                                  (1ull << 40) + 1, 5ull << 50, UINT64_MAX };
	char buf[BASIC_SIZE_TEXT_MAX], small[4];
	uint64_t v;

	assert(!strcmp(basic_format_size(1023, buf, sizeof(buf)), "1023 bytes"));
	assert(!strcmp(basic_format_size(1024, buf, sizeof(buf)), "1K"));
	assert(!strcmp(basic_format_size(16u << 20, buf, sizeof(buf)), "16M"));
	assert(!strcmp(basic_format_size(1536u << 10, buf, sizeof(buf)), "1.5M"));
	assert(!strcmp(basic_format_size(3ull << 39, buf, sizeof(buf)), "1.5T"));
	assert(!strcmp(basic_format_size(5ull << 50, buf, sizeof(buf)), "5120T"));
	/* a whole number of units reads back as the same size */
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		basic_format_size(sizes[i], buf, sizeof(buf));
		if (!strchr(buf, '.') && !strstr(buf, "bytes"))
			assert(basic_parse_size(buf, &v) == 0 && v == sizes[i]);
	}
	assert(!strcmp(basic_format_size(UINT64_MAX, buf, sizeof(buf)), "16777216.0T"));
	assert(basic_format_size(1u << 20, small, sizeof(small)) == small && !strcmp(small, "1M"));
	assert(basic_format_size(1, NULL, 0) == NULL);
	assert(!strcmp(basic_format_duration(0, buf, sizeof(buf)), "0"));
	assert(!strcmp(basic_format_duration(90, buf, sizeof(buf)), "90s"));
	assert(!strcmp(basic_format_duration(900, buf, sizeof(buf)), "15m"));
	assert(!strcmp(basic_format_duration(43200, buf, sizeof(buf)), "12h"));
	assert(!strcmp(basic_format_duration(30 * 86400, buf, sizeof(buf)), "30d"));
	assert(!strcmp(basic_format_duration(UINT64_MAX, buf, sizeof(buf)), "18446744073709551615s"));
	for (uint64_t s = 0; s < 200000; s += 7)
		assert(basic_parse_duration(basic_format_duration(s, buf, sizeof(buf)), &v) == 0 && v == s);
	assert(basic_format_duration(1, NULL, 0) == NULL);
}

/* export's and summary's --from/--to and --window/--gap (timeparse.h) */
static void test_time_ns(void)
{
	int64_t t = 7;

	assert(basic_parse_time("2026-12-03T07:00:00Z", &t) == 0 && t == 1796281200LL * 1000000000);
	assert(basic_parse_time("2026-12-03T08:00:00+01:00", &t) == 0 && t == 1796281200LL * 1000000000);
	assert(basic_parse_time("2026-12-03T08:00:00+0100", &t) == 0 && t == 1796281200LL * 1000000000);
	assert(basic_parse_time("2026-12-03T07:00:00.25Z", &t) == 0 && t == 1796281200LL * 1000000000 + 250000000);
	assert(basic_parse_time("1764748800.5", &t) == 0 && t == 1764748800500000000LL);
	setenv("TZ", "UTC", 1);
	assert(basic_parse_time("2026-12-03 07:00:00", &t) == 0 && t == 1796281200LL * 1000000000);
	t = 7;
	assert(basic_parse_time("yesterday", &t) == -EINVAL && t == 7);
	assert(basic_parse_time("2026-13-03T07:00:00Z", &t) == -EINVAL);
	assert(basic_parse_duration_ns("100ms", &t) == 0 && t == 100000000);
	assert(basic_parse_duration_ns("1.5s", &t) == 0 && t == 1500000000);
	assert(basic_parse_duration_ns("1min", &t) == 0 && t == 60000000000LL);
	assert(basic_parse_duration_ns("250us", &t) == 0 && t == 250000);
	assert(basic_parse_duration_ns("0s", &t) == -EINVAL);
	assert(basic_parse_duration_ns("5", &t) == -EINVAL);
	assert(basic_parse_duration_ns("-1s", &t) == -EINVAL);
	assert(basic_parse_duration_ns(NULL, &t) == -EINVAL);
}

/* The broker's address of the board file and recv --broker. */
static void test_mqtt_url(void)
{
	char host[8];
	uint16_t port = 7;
	bool tls = true;

	assert(basic_parse_mqtt_url("mqtt://broker", host, sizeof(host), &port, &tls) == 0);
	assert(!strcmp(host, "broker") && port == 0 && !tls);
	assert(basic_parse_mqtt_url("mqtts://b:8884", host, sizeof(host), &port, &tls) == 0);
	assert(!strcmp(host, "b") && port == 8884 && tls);
	assert(basic_parse_mqtt_url("b: 80", host, sizeof(host), &port, &tls) == 0 && port == 80 && !tls);
	assert(basic_parse_mqtt_url("10.0.0.1:1", host, sizeof(host), &port, &tls) == -EINVAL); /* 8 bytes */
	assert(basic_parse_mqtt_url("10.0.1:1", host, sizeof(host), &port, &tls) == 0 && port == 1 && !tls);
	assert(basic_parse_mqtt_url("http://b", host, sizeof(host), &port, &tls) == -EPROTONOSUPPORT);
	assert(basic_parse_mqtt_url("mqtt://b:0", host, sizeof(host), &port, &tls) == -ERANGE);
	assert(basic_parse_mqtt_url("mqtt://b:65536", host, sizeof(host), &port, &tls) == -ERANGE);
	assert(basic_parse_mqtt_url("mqtt://b:x", host, sizeof(host), &port, &tls) == -ERANGE);
	assert(basic_parse_mqtt_url("mqtt://:1883", host, sizeof(host), &port, &tls) == -EINVAL);
	assert(basic_parse_mqtt_url("mqtt://", host, sizeof(host), &port, &tls) == -EINVAL);
	assert(!strcmp(host, "10.0.1") && port == 1); /* untouched by a refusal */
}

int main(void)
{
	test_mqtt_url();
	test_u64();
	test_i64();
	test_double_bool();
	test_size();
	test_duration();
	test_seconds();
	test_format();
	test_time_ns();
	puts("test-parse: ok");
	return 0;
}
