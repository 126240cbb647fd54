/* SPDX-License-Identifier: MIT */
/* test-basic-escape.c - JSON strings and CSV fields (basic/escape.h), byte
   for byte: what export, recv and stat --json write for a name. */
#include <assert.h>
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

int main(void)
{
	test_json();
	test_csv();
	test_errors();
	return 0;
}
