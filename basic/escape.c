/* SPDX-License-Identifier: MIT */
/* escape.c - JSON strings and CSV fields. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "escape.h"
#include "utf8.h"

/* Bytes a JSON string cannot hold as they are: the quote, the backslash
   and the control characters. */
static size_t json_plain_run(const char *s)
{
	size_t n = 0;

	while (s[n] && s[n] != '"' && s[n] != '\\' && (unsigned char)s[n] >= 0x20)
		n++;
	return n;
}

/* The escape of the byte c that json_plain_run stopped at, into esc
   (room for 7): \" \\ or \u00xx.  Its length. */
static size_t json_escape_byte(unsigned char c, char esc[8])
{
	if (c == '"' || c == '\\')
		return (size_t)snprintf(esc, 8, "\\%c", c);
	return (size_t)snprintf(esc, 8, "\\u%04x", c);
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
		char esc[8];

		fwrite(s, 1, n, out);
		s += n;
		c = (unsigned char)*s;
		if (!c)
			break;
		fwrite(esc, 1, json_escape_byte(c, esc), out);
		s++;
	}
	fputc('"', out);
	return ferror(out) ? -EIO : 0;
}

int basic_json_string_buf(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	if (!buf)
		return -EINVAL;
	if (len < 3)
		return -ENOSPC;
	buf[o++] = '"';
	while (s && *s) {
		unsigned char c = (unsigned char)*s;
		char esc[8];
		const char *from = s;
		size_t n, take;

		if (c < 0x80 && (n = json_plain_run(s)) > 0) {
			for (take = 0; take < n && (unsigned char)s[take] < 0x80; take++)
				;
			n = take;
		} else if (c < 0x80) {
			n = json_escape_byte(c, esc), from = esc, take = 1;
		} else if ((take = basic_utf8_seq(s, strnlen(s, 4)))) {
			n = take;
		} else {
			/* not UTF-8 (a client's raw bytes): a JSON text must be */
			n = (size_t)snprintf(esc, sizeof(esc), "\\ufffd"), from = esc, take = 1;
		}
		if (o + n + 2 > len)
			return -ENOSPC;
		memcpy(buf + o, from, n);
		o += n;
		s += take;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return (int)o;
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
