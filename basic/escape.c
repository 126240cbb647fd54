/* SPDX-License-Identifier: MIT */
/* escape.c - JSON strings and CSV fields: the stream and buffer forms of
   escape.h's two escapers. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "escape.h"

/* The stream forms escape through a block on the stack: one fwrite per
   block, not a stdio call per byte. */
#define ESCAPE_BLOCK 256

int basic_json_string(FILE *out, const char *s)
{
	char b[ESCAPE_BLOCK];

	if (!out)
		return -EINVAL;
	fputc('"', out);
	while (s && *s) {
		size_t n = basic_json_escape(&s, b, sizeof(b), 0);

		fwrite(b, 1, n, out);
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

int basic_json_string_buf(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	if (!buf)
		return -EINVAL;
	if (len < 3)
		return -ENOSPC;
	buf[0] = '"';
	/* room for the text between the quotes: len less both quotes and the NUL */
	if (s)
		n = basic_json_escape(&s, buf + 1, len - 3, BASIC_JSON_UTF8);
	if (s && *s) {
		buf[1 + n] = '\0'; /* a cut string, not to be used */
		return -ENOSPC;
	}
	buf[1 + n] = '"';
	buf[2 + n] = '\0';
	return (int)(n + 2);
}

int basic_csv_field(FILE *out, const char *s)
{
	char b[ESCAPE_BLOCK];
	bool quoted;

	if (!out)
		return -EINVAL;
	if (!s)
		return 0;
	quoted = basic_csv_quoted(s);
	if (quoted)
		fputc('"', out);
	while (*s) {
		size_t n = basic_csv_escape(&s, b, sizeof(b), quoted);

		fwrite(b, 1, n, out);
	}
	if (quoted)
		fputc('"', out);
	return ferror(out) ? -EIO : 0;
}
