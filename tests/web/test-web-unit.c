/* SPDX-License-Identifier: MIT */
/*
 * test-web-unit.c - web/'s functions without a server or a database:
 * bad arguments, which --listen addresses count as loopback, the time
 * parameter's forms and bounds, the JSON string escaping, the vehicle-name
 * rule and the UTF-8 check, and that the
 * dashboard's files are compiled in with their types.
 */
#include <errno.h>
#include <string.h>

#include "tlib.h"
#include "basic/escape.h"
#include "basic/utf8.h"
#include "web/web-private.h"

static void test_bad_args(void)
{
	struct web_cfg cfg = { 0 };
	web_server_t *srv = NULL;
	char err[256];

	CHECK(web_server_new(NULL, err, sizeof(err), &srv) == -EINVAL && !srv);
	CHECK(web_server_new(&cfg, err, sizeof(err), &srv) == -EINVAL && !srv, "no database URL");
	cfg.db_url = "postgresql:///x?host=/nonexistent";
	CHECK(web_server_new(&cfg, err, sizeof(err), NULL) == -EINVAL);
	cfg.listen = "10.1.2.3:8080";
	CHECK(web_server_new(&cfg, err, sizeof(err), &srv) == -EPERM && strstr(err, "a token is required"), "%s", err);
	cfg.listen = "no-port";
	CHECK(web_server_new(&cfg, err, sizeof(err), &srv) == -EINVAL && strstr(err, "HOST:PORT"), "%s", err);
	cfg.listen = "127.0.0.1:0";
	CHECK(web_server_new(&cfg, err, sizeof(err), &srv) == -ECONNREFUSED && err[0], "no database: %s", err);
	CHECK(web_server_free(NULL) == NULL);
}

static void test_loopback(void)
{
	CHECK(web_listen_is_loopback("127.0.0.1:8080") == 1);
	CHECK(web_listen_is_loopback("127.8.9.10:0") == 1);
	CHECK(web_listen_is_loopback("[::1]:8080") == 1);
	CHECK(web_listen_is_loopback("localhost:8080") == 1);
	CHECK(web_listen_is_loopback("0.0.0.0:8080") == 0);
	CHECK(web_listen_is_loopback(":8080") == 0, "an empty host is every address");
	CHECK(web_listen_is_loopback("192.168.1.20:8080") == 0);
	CHECK(web_listen_is_loopback("[::]:8080") == 0);
	CHECK(web_listen_is_loopback("127.0.0.1") == -EINVAL);
	CHECK(web_listen_is_loopback("127.0.0.1:99999") == -EINVAL);
	CHECK(web_listen_is_loopback("127.0.0.1:8o") == -EINVAL);
	CHECK(web_listen_is_loopback("[::1:80") == -EINVAL);
	CHECK(web_listen_is_loopback(NULL) == -EINVAL);
}

static void test_time(void)
{
	double t = 0;

	CHECK(web_parse_time("1764788000.5", &t) == 0 && t == 1764788000.5);
	CHECK(web_parse_time("2026-12-03T19:00:00Z", &t) == 0 && t == 1796324400.0, "%f", t);
	CHECK(web_parse_time("2026-12-03T19:00:00.25", &t) == 0 && t == 1796324400.25, "%f", t);
	t = 7;
	CHECK(web_parse_time("1000", &t) == -EINVAL && t == 7, "before 2000: refused, nothing written");
	CHECK(web_parse_time("5000000000", &t) == -EINVAL, "after 2100");
	CHECK(web_parse_time("-1764788000", &t) == -EINVAL);
	CHECK(web_parse_time("1e9", &t) == -EINVAL, "only plain decimals");
	CHECK(web_parse_time("nan", &t) == -EINVAL && web_parse_time("inf", &t) == -EINVAL);
	CHECK(web_parse_time("2026-12-03T19:00:00+01:00", &t) == -EINVAL, "UTC only");
	CHECK(web_parse_time("2026-12-03", &t) == -EINVAL && web_parse_time("", &t) == -EINVAL);
	CHECK(web_parse_time(NULL, &t) == -EINVAL);
}

static void test_json(void)
{
	char out[64];

	CHECK(basic_json_string_buf("emu1", out, sizeof(out)) == 6 && !strcmp(out, "\"emu1\""));
	CHECK(basic_json_string_buf("a\"b\\c\n", out, sizeof(out)) > 0 && !strcmp(out, "\"a\\\"b\\\\c\\u000a\""), "%s", out);
	CHECK(basic_json_string_buf("caf\xc3\xa9", out, sizeof(out)) > 0 && !strcmp(out, "\"caf\xc3\xa9\""), "UTF-8 kept");
	CHECK(basic_json_string_buf("x\xff" "y", out, sizeof(out)) > 0 && !strcmp(out, "\"x\\ufffdy\""), "%s", out);
	CHECK(basic_json_string_buf("\xed\xa0\x80", out, sizeof(out)) > 0 && !strcmp(out, "\"\\ufffd\\ufffd\\ufffd\""),
	      "a surrogate is not UTF-8: %s", out);
	CHECK(basic_json_string_buf("0123456789", out, 8) == -ENOSPC);
}

/* The vehicle-name rule at its limits, and the UTF-8 check behind the
   400 for a parameter PostgreSQL would refuse. */
static void test_names(void)
{
	CHECK(basic_utf8_ok("") && basic_utf8_ok("caf\xc3\xa9") && basic_utf8_ok("\xf0\x9f\x9a\x86"));
	CHECK(!basic_utf8_ok("\xff") && !basic_utf8_ok("\xc3") && !basic_utf8_ok("\xc0\xaf"), "a lone byte, a cut or overlong form");
	CHECK(!basic_utf8_ok("\xed\xa0\x80") && !basic_utf8_ok("\xf4\x90\x80\x80"), "a surrogate, past U+10FFFF");
}

static void test_assets(void)
{
	const char *want[] = { "/index.html", "/app.js", "/style.css", "/uPlot.iife.min.js", "/uPlot.min.css" };

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		bool found = false;

		for (unsigned k = 0; k < web_assets_n; k++)
			if (!strcmp(web_assets[k].path, want[i]) && web_assets[k].len > 100)
				found = true;
		CHECK(found, "%s compiled in", want[i]);
	}
	CHECK(!strcmp(web_assets[0].type, "text/html; charset=utf-8") || web_assets_n > 1);
}

int main(void)
{
	test_bad_args();
	test_loopback();
	test_time();
	test_json();
	test_names();
	test_assets();
	return 0;
}
