/* SPDX-License-Identifier: MIT */
/*
 * test-basic-text.c - the byte-level helpers each written once in basic/:
 * UTF-8 well-formedness (utf8.h), the JSON string into a buffer
 * (escape.h), FNV-1a 64 (hash.h), hex digits to bytes and back (hex.h).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/hash.h"
#include "basic/hex.h"
#include "basic/utf8.h"
#include "tlib.h"

static void test_utf8(void)
{
	/* well-formed: ASCII, 2, 3 and 4 bytes, the edges of each range */
	static const char *const good[] = {
		"", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x9a\x86",
		"\xc2\x80",         /* U+0080, the first 2-byte one */
		"\xdf\xbf",         /* U+07FF */
		"\xe0\xa0\x80",     /* U+0800, the first 3-byte one */
		"\xed\x9f\xbf",     /* U+D7FF, just below the surrogates */
		"\xee\x80\x80",     /* U+E000, just above them */
		"\xef\xbf\xbf",     /* U+FFFF */
		"\xf0\x90\x80\x80", /* U+10000, the first 4-byte one */
		"\xf4\x8f\xbf\xbf", /* U+10FFFF, the last */
	};
	static const struct {
		const char *s, *why;
	} bad[] = {
		{ "\x80", "a lone continuation byte" },
		{ "\xc0\xaf", "overlong '/' (2 bytes)" },
		{ "\xc1\xbf", "overlong U+007F" },
		{ "\xe0\x80\xaf", "overlong '/' (3 bytes)" },
		{ "\xe0\x9f\xbf", "overlong U+07FF" },
		{ "\xf0\x80\x80\xaf", "overlong '/' (4 bytes)" },
		{ "\xf0\x8f\xbf\xbf", "overlong U+FFFF" },
		{ "\xed\xa0\x80", "surrogate U+D800" },
		{ "\xed\xbf\xbf", "surrogate U+DFFF" },
		{ "\xf4\x90\x80\x80", "U+110000, past U+10FFFF" },
		{ "\xf5\x80\x80\x80", "0xf5 lead" },
		{ "\xff", "0xff" },
		{ "\xfe", "0xfe" },
		{ "\xc3", "2-byte sequence cut at the end" },
		{ "\xe2\x82", "3-byte sequence cut at the end" },
		{ "\xf0\x9f\x9a", "4-byte sequence cut at the end" },
		{ "\xe2\x82x", "a 3-byte sequence with an ASCII third byte" },
		{ "\xf0\x9f\x9a\xc3\xa9", "4-byte sequence cut by another" },
		{ "ok\xc3(", "a bad continuation after good bytes" },
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK(basic_utf8_ok(good[i]), "good[%zu]", i);
		CHECK(basic_utf8_valid(good[i], strlen(good[i])) == strlen(good[i]), "good[%zu]", i);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!basic_utf8_ok(bad[i].s), "%s passed", bad[i].why);
	CHECK(basic_utf8_ok(NULL), "NULL is \"\"");
	/* where it stops: the offset of the first bad sequence */
	CHECK(basic_utf8_valid("ok\xc3(", 4) == 2);
	CHECK(basic_utf8_valid("caf\xc3\xa9\xed\xa0\x80", 8) == 5);
	/* the length bound: a sequence that runs past left is cut, even when
	   the bytes after it in memory would complete it */
	CHECK(basic_utf8_seq("\xc3\xa9", 1) == 0 && basic_utf8_seq("\xc3\xa9", 2) == 2);
	CHECK(basic_utf8_seq("\xf0\x9f\x9a\x86", 3) == 0 && basic_utf8_seq("\xf0\x9f\x9a\x86", 4) == 4);
	CHECK(basic_utf8_valid("\xe2\x82\xac", 2) == 0);
	CHECK(basic_utf8_seq("a", 0) == 0 && basic_utf8_seq("", 1) == 1, "NUL is one byte of ASCII");
	/* all 2^16 two-byte inputs against the table's rule */
	for (unsigned a = 0; a < 256; a++)
		for (unsigned b = 0; b < 256; b++) {
			char s[2] = { (char)a, (char)b };
			size_t want = a < 0x80 ? 1 : (a >= 0xc2 && a <= 0xdf && (b & 0xc0) == 0x80) ? 2 : 0;

			CHECK(basic_utf8_seq(s, 2) == want, "%02x %02x", a, b);
		}
}

static void test_json_buf(void)
{
	char out[64];

	CHECK(basic_json_string_buf("emu1", out, sizeof(out)) == 6 && !strcmp(out, "\"emu1\""));
	CHECK(basic_json_string_buf("a\"b\\c\n\x01", out, sizeof(out)) == 21 &&
	      !strcmp(out, "\"a\\\"b\\\\c\\u000a\\u0001\""), "%s", out);
	CHECK(basic_json_string_buf("caf\xc3\xa9 \xf0\x9f\x9a\x86", out, sizeof(out)) > 0 &&
	      !strcmp(out, "\"caf\xc3\xa9 \xf0\x9f\x9a\x86\""), "UTF-8 kept");
	CHECK(basic_json_string_buf("x\xff" "y", out, sizeof(out)) > 0 && !strcmp(out, "\"x\\ufffdy\""), "%s", out);
	/* a surrogate is three bad bytes; an overlong two; a cut one at the end */
	CHECK(basic_json_string_buf("\xed\xa0\x80", out, sizeof(out)) > 0 &&
	      !strcmp(out, "\"\\ufffd\\ufffd\\ufffd\""), "%s", out);
	CHECK(basic_json_string_buf("\xc0\xaf", out, sizeof(out)) > 0 && !strcmp(out, "\"\\ufffd\\ufffd\""), "%s", out);
	CHECK(basic_json_string_buf("a\xe2\x82", out, sizeof(out)) > 0 && !strcmp(out, "\"a\\ufffd\\ufffd\""), "%s", out);
	CHECK(basic_json_string_buf(NULL, out, sizeof(out)) == 2 && !strcmp(out, "\"\""));
	/* room: "0123456" needs 9 bytes and the NUL */
	CHECK(basic_json_string_buf("0123456", out, 10) == 9);
	CHECK(basic_json_string_buf("0123456", out, 9) == -ENOSPC);
	CHECK(basic_json_string_buf("\xc3\xa9", out, 4) == -ENOSPC && basic_json_string_buf("\xc3\xa9", out, 5) == 4);
	CHECK(basic_json_string_buf("x", out, 2) == -ENOSPC && basic_json_string_buf("x", NULL, 8) == -EINVAL);
}

static void test_fnv(void)
{
	/* the published FNV-1a 64 test vectors (Fowler, Noll, Vo) */
	CHECK(basic_fnv1a(BASIC_FNV1A_SEED, "", 0) == UINT64_C(0xcbf29ce484222325));
	CHECK(basic_fnv1a(BASIC_FNV1A_SEED, "a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
	CHECK(basic_fnv1a(BASIC_FNV1A_SEED, "foobar", 6) == UINT64_C(0x85944171f73967e8));
	CHECK(basic_fnv1a_str("foobar") == UINT64_C(0x85944171f73967e8) && basic_fnv1a_str(NULL) == BASIC_FNV1A_SEED);
	/* hashing in two parts is hashing the whole (the ledger's digest
	   goes field by field) */
	CHECK(basic_fnv1a(basic_fnv1a(BASIC_FNV1A_SEED, "foo", 3), "bar", 3) == UINT64_C(0x85944171f73967e8));
	/* bytes past 0x7f are taken unsigned */
	CHECK(basic_fnv1a(BASIC_FNV1A_SEED, "\xff", 1) == ((BASIC_FNV1A_SEED ^ 0xff) * UINT64_C(0x100000001b3)));
}

static void test_hex(void)
{
	uint8_t b[16];
	char s[33];

	for (int c = -128; c < 128; c++) {
		int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		           c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;

		CHECK(basic_hex_digit((char)c) == want, "%d", c);
	}
	CHECK(basic_hex_decode("00ff7fA0", 8, b, sizeof(b)) == 4 && b[0] == 0 && b[1] == 0xff && b[2] == 0x7f &&
	      b[3] == 0xa0);
	CHECK(basic_hex_decode("", 0, b, sizeof(b)) == 0);
	CHECK(basic_hex_decode("abc", 3, b, sizeof(b)) == -EINVAL, "odd length");
	CHECK(basic_hex_decode("0g", 2, b, sizeof(b)) == -EINVAL, "not a digit");
	CHECK(basic_hex_decode("+f", 2, b, sizeof(b)) == -EINVAL, "a sign (sscanf %%2x took it)");
	CHECK(basic_hex_decode(" f", 2, b, sizeof(b)) == -EINVAL, "a blank (sscanf %%2x took it)");
	CHECK(basic_hex_decode("0x", 2, b, sizeof(b)) == -EINVAL, "a 0x prefix");
	CHECK(basic_hex_decode("0a0b", 4, b, 1) == -ENOSPC);
	CHECK(basic_hex_decode(NULL, 2, b, 1) == -EINVAL);
	basic_hex_encode((const uint8_t[]){ 0x00, 0xab, 0x7f }, 3, false, s);
	CHECK(!strcmp(s, "00ab7f"), "%s", s);
	basic_hex_encode((const uint8_t[]){ 0x00, 0xab, 0x7f }, 3, true, s);
	CHECK(!strcmp(s, "00AB7F"), "%s", s);
	/* round trip of every byte value */
	for (unsigned v = 0; v < 256; v += 16) {
		uint8_t in[16], back[16];

		for (unsigned i = 0; i < 16; i++)
			in[i] = (uint8_t)(v + i);
		basic_hex_encode(in, 16, v & 16, s);
		CHECK(basic_hex_decode(s, 32, back, sizeof(back)) == 16 && !memcmp(in, back, 16));
	}
}

int main(void)
{
	test_utf8();
	test_json_buf();
	test_fnv();
	test_hex();
	printf("basic-text: UTF-8, JSON into a buffer, FNV-1a, hex: ok\n");
	return 0;
}
