/* SPDX-License-Identifier: MIT */
/* test-basic-escape.c - JSON strings and CSV fields (basic/escape.h), byte
   for byte: what export, recv and stat --json write for a name. */
#include <assert.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"

/* What fn writes for s, NUL-terminated; caller frees. */
static char *written(int (*fn)(FILE *, const char *), const char *s, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert(f);
	*ret = fn(f, s);
	assert(fclose(f) == 0);
	return buf;
}

static void expect(int (*fn)(FILE *, const char *), const char *s, const char *want)
{
	int r;
	char *got = written(fn, s, &r);

	if (r != 0 || strcmp(got, want) != 0) {
		fprintf(stderr, "for '%s': got '%s' (%d), want '%s'\n", s ? s : "(null)", got, r, want);
		abort();
	}
	free(got);
}

static void test_json(void)
{
	char all[32], want[32 * 6 + 3], *p = want;

	expect(basic_json_string, NULL, "\"\"");
	expect(basic_json_string, "", "\"\"");
	expect(basic_json_string, "line_voltage", "\"line_voltage\"");
	expect(basic_json_string, "a\"b\\c", "\"a\\\"b\\\\c\"");
	expect(basic_json_string, "tab\there\nCR\r", "\"tab\\u0009here\\u000aCR\\u000d\"");
	/* UTF-8 and DEL go through as they are: JSON allows both. */
	expect(basic_json_string, "U_\xc3\xa4\x7f", "\"U_\xc3\xa4\x7f\"");
	/* every control character */
	for (int c = 1; c < 32; c++)
		all[c - 1] = (char)c;
	all[31] = 0;
	*p++ = '"';
	for (int c = 1; c < 32; c++)
		p += sprintf(p, "\\u%04x", c);
	strcpy(p, "\"");
	expect(basic_json_string, all, want);
	printf("json strings: ok\n");
}

static void test_csv(void)
{
	expect(basic_csv_field, NULL, "");
	expect(basic_csv_field, "", "");
	expect(basic_csv_field, "km/h", "km/h");
	expect(basic_csv_field, "a,b", "\"a,b\"");
	expect(basic_csv_field, "say \"hi\"", "\"say \"\"hi\"\"\"");
	expect(basic_csv_field, "two\nlines", "\"two\nlines\"");
	expect(basic_csv_field, "cr\r", "\"cr\r\"");
	expect(basic_csv_field, "tab\tis plain", "tab\tis plain");
	printf("csv fields: ok\n");
}

/* Bad arguments, and a stream that fails (unbuffered /dev/full: the first
   byte fails, so the error is there when the function returns). */
static void test_errors(void)
{
	FILE *full = fopen("/dev/full", "w");

	assert(basic_json_string(NULL, "x") == -EINVAL);
	assert(basic_csv_field(NULL, "x") == -EINVAL);
	assert(full);
	setvbuf(full, NULL, _IONBF, 0);
	assert(basic_json_string(full, "x") == -EIO);
	clearerr(full);
	assert(basic_csv_field(full, "x") == -EIO);
	clearerr(full);
	assert(basic_csv_field(full, "a,b") == -EIO);
	fclose(full);
	printf("bad arguments, failing stream: ok\n");
}

/* basic_json_escape's whole text of s, written in steps of at most room
   bytes each (as export's block fills and is emptied), into out. */
static size_t json_in_steps(const char *s, size_t room, unsigned flags, char *out, size_t cap)
{
	size_t o = 0, steps = 0;

	while (*s) {
		char step[16];
		size_t n;

		assert(room <= sizeof(step));
		n = basic_json_escape(&s, step, room, flags);
		assert(n <= room && o + n < cap);
		memcpy(out + o, step, n);
		o += n;
		assert(++steps < 1000); /* each call with room >= 6 moves on */
	}
	out[o] = '\0';
	return o;
}

static void expect_json_escape(const char *s, unsigned flags, const char *want)
{
	/* every room from the largest escape (6) up: a step never splits an
	   escape or a UTF-8 sequence, and the pieces make the same text */
	for (size_t room = 6; room <= 16; room++) {
		char got[256];

		json_in_steps(s, room, flags, got, sizeof(got));
		if (strcmp(got, want) != 0) {
			fprintf(stderr, "escape of '%s' (flags %u, room %zu): got '%s', want '%s'\n", s, flags, room,
			        got, want);
			abort();
		}
	}
}

/* The one escaper under both forms: quotes, control characters,
   non-ASCII, and invalid UTF-8 passed as it is (the stream form, export)
   or as \ufffd (BASIC_JSON_UTF8, the buffer form of the dashboard). */
static void test_json_escape(void)
{
	const char *s;
	char b[8];

	expect_json_escape("line_voltage", 0, "line_voltage");
	expect_json_escape("a\"b\\c", 0, "a\\\"b\\\\c");
	expect_json_escape("\x01\x1f\t\n\r ", 0, "\\u0001\\u001f\\u0009\\u000a\\u000d ");
	expect_json_escape("U_\xc3\xa4 \xf0\x9f\x9a\x86\x7f", 0, "U_\xc3\xa4 \xf0\x9f\x9a\x86\x7f");
	expect_json_escape("U_\xc3\xa4 \xf0\x9f\x9a\x86\x7f", BASIC_JSON_UTF8, "U_\xc3\xa4 \xf0\x9f\x9a\x86\x7f");
	expect_json_escape("x\xff\xc0\xafy\xe2\x82", 0, "x\xff\xc0\xafy\xe2\x82");
	expect_json_escape("x\xff\xc0\xafy\xe2\x82", BASIC_JSON_UTF8,
	                   "x\\ufffd\\ufffd\\ufffdy\\ufffd\\ufffd");
	expect_json_escape("\xed\xa0\x80\"", BASIC_JSON_UTF8, "\\ufffd\\ufffd\\ufffd\\\"");

	/* too little room for the next escape: nothing written, *s kept */
	s = "\n";
	assert(basic_json_escape(&s, b, 5, 0) == 0 && *s == '\n');
	s = "ab\"";
	assert(basic_json_escape(&s, b, 3, 0) == 2 && !memcmp(b, "ab", 2) && *s == '"');
	s = "\xc3\xa4";
	assert(basic_json_escape(&s, b, 1, BASIC_JSON_UTF8) == 0 && *s == '\xc3');
	assert(basic_json_escape(&s, b, 2, BASIC_JSON_UTF8) == 2 && !*s);
	s = "ab";
	assert(basic_json_escape(&s, b, 0, 0) == 0 && *s == 'a');
	printf("json escaper in steps: ok\n");
}

static void expect_csv_escape(const char *s, bool quoted, const char *want)
{
	assert(basic_csv_quoted(s) == quoted);
	for (size_t room = 2; room <= 8; room++) {
		char got[128], step[8];
		const char *p = s;
		size_t o = 0;

		while (*p) {
			size_t n = basic_csv_escape(&p, step, room, quoted);

			assert(n > 0 && n <= room && o + n < sizeof(got));
			memcpy(got + o, step, n);
			o += n;
		}
		got[o] = '\0';
		if (strcmp(got, want) != 0) {
			fprintf(stderr, "csv escape of '%s' (room %zu): got '%s', want '%s'\n", s, room, got, want);
			abort();
		}
	}
}

static void test_csv_escape(void)
{
	const char *s = "\"";
	char b[4];

	expect_csv_escape("km/h", false, "km/h");
	expect_csv_escape("tab\tand \xc3\xa4\xff", false, "tab\tand \xc3\xa4\xff");
	expect_csv_escape("a,b", true, "a,b");
	expect_csv_escape("say \"hi\"", true, "say \"\"hi\"\"");
	expect_csv_escape("\"\"\"", true, "\"\"\"\"\"\"");
	expect_csv_escape("cr\r", true, "cr\r");
	expect_csv_escape("two\nlines", true, "two\nlines");
	/* a doubled quote is never split across two steps */
	assert(basic_csv_escape(&s, b, 1, true) == 0 && *s == '"');
	assert(basic_csv_escape(&s, b, 2, true) == 2 && !*s && !memcmp(b, "\"\"", 2));
	/* the whole field in one piece, or 0 when it does not fit */
	{
		char f[16];

		assert(basic_csv_field_into("km/h", f, 4) == 4 && !memcmp(f, "km/h", 4));
		assert(basic_csv_field_into("km/h", f, 3) == 0 && basic_csv_field_into("", f, 0) == 0);
		assert(basic_csv_field_into("a\"b", f, 6) == 6 && !memcmp(f, "\"a\"\"b\"", 6));
		assert(basic_csv_field_into("a\"b", f, 5) == 0 && basic_csv_field_into("a,", f, 3) == 0);
		assert(basic_csv_field_into("x\n", f, 4) == 4 && !memcmp(f, "\"x\n\"", 4));
		assert(basic_csv_field_into("\xc3\xa4\t;", f, 16) == 4 && !memcmp(f, "\xc3\xa4\t;", 4));
	}
	printf("csv escaper in steps: ok\n");
}

/* Strings longer than the stream forms' block on the stack (256 bytes),
   with escapes across its edge: the same text as escaped in one piece. */
static void test_long(void)
{
	char s[1200], want[1200 * 6 + 3];
	const char *p = s;
	size_t n;
	int r;
	char *got;

	for (size_t i = 0; i < sizeof(s) - 1; i++)
		s[i] = "ab\"\n,\\\xc3\xa4"[i % 8];
	s[sizeof(s) - 1] = '\0';
	want[0] = '"';
	n = basic_json_escape(&p, want + 1, sizeof(want) - 3, 0);
	assert(!*p);
	memcpy(want + 1 + n, "\"", 2);
	got = written(basic_json_string, s, &r);
	assert(r == 0 && !strcmp(got, want));
	free(got);
	/* CSV: quoted (it holds commas), every '"' doubled */
	p = s;
	want[0] = '"';
	n = basic_csv_escape(&p, want + 1, sizeof(want) - 3, true);
	assert(!*p && n == strlen(s) + sizeof(s) / 8);
	memcpy(want + 1 + n, "\"", 2);
	got = written(basic_csv_field, s, &r);
	assert(r == 0 && !strcmp(got, want));
	free(got);
	printf("longer than a block: ok\n");
}

int main(void)
{
	test_json();
	test_csv();
	test_errors();
	test_json_escape();
	test_csv_escape();
	test_long();
	return 0;
}
