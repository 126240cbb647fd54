/* SPDX-License-Identifier: MIT */
/* escape.c - JSON strings and CSV fields. */
#include <errno.h>
#include <string.h>

#include "escape.h"

/* Bytes a JSON string cannot hold as they are: the quote, the backslash
   and the control characters. */
static size_t json_plain_run(const char *s)
{
	size_t n = 0;

	while (s[n] && s[n] != '"' && s[n] != '\\' && (unsigned char)s[n] >= 0x20)
		n++;
	return n;
}

int basic_json_string(FILE *out, const char *s)
{
	if (!out)
		return -EINVAL;
	fputc('"', out);
	/* Whole runs of plain bytes at a time: names are mostly plain, and
	   export writes two of them per sample. */
	while (s && *s) {
		size_t n = json_plain_run(s);
		unsigned char c;

		fwrite(s, 1, n, out);
		s += n;
		c = (unsigned char)*s;
		if (!c)
			break;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else
			fprintf(out, "\\u%04x", c);
		s++;
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

int basic_csv_field(FILE *out, const char *s)
{
	if (!out)
		return -EINVAL;
	if (!s)
		return 0;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return ferror(out) ? -EIO : 0;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}
