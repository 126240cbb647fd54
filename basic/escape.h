/* SPDX-License-Identifier: MIT */
/*
 * escape.h - strings written into JSON and CSV text, one copy for the tree.
 *
 * Everything railmon writes as JSON or CSV (export, recv, stat --json,
 * the dashboard's answers) puts its strings through these, so a name from
 * a board file or from a Batch received off the network cannot break a
 * line or a document.  None allocates; the stream forms write bytes >=
 * 0x20 other than the ones they escape as they are (UTF-8 passes through;
 * invalid UTF-8 is not repaired), the buffer form writes bytes that are
 * not UTF-8 as \ufffd.
 *
 * The rules are written once, in the two escapers below (basic_json_escape,
 * basic_csv_quoted/basic_csv_escape); the stream and buffer forms and the
 * export writer's block (record/format.c) are all built on them.  They are
 * static inline, not in escape.c, because export writes two or three
 * names per record straight into its 256 KiB block, and its speed (issue
 * 29) comes from that hot path being inlined (record/format.c's header).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

/* basic_json_escape's flag: a byte that does not start a well-formed UTF-8
   sequence is written as \ufffd (without it, bytes >= 0x80 pass as they are) */
#define BASIC_JSON_UTF8 1u

/*
 * The one JSON string escaper: the bytes of *s (no quotes added) into dst,
 * as many whole escapes as fit in room bytes - '"' and '\' escaped with a
 * backslash, bytes below 0x20 as \u00xx (lower-case hex), the rest as they
 * are, or with BASIC_JSON_UTF8 in flags, bytes that are not UTF-8 as
 * \ufffd.  Moves *s past what it wrote, so a caller whose buffer filled
 * empties it and calls again with the rest (*s at its NUL: all written);
 * with room >= 6 it always takes one step.  Writes no NUL; returns the
 * bytes written.  RT-safe: no allocation, no stream.
 */
static inline size_t basic_json_escape(const char **s, char *dst, size_t room, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const char *p = *s;
	size_t o = 0;

	while (*p) {
		unsigned char c = (unsigned char)*p;
		size_t n = 1;

		/* the plain bytes first: names are mostly plain, and a lower-case
		   letter or '_' is above '\\' (one comparison) */
		if ((c > '\\' || (c >= 0x20 && c != '"' && c != '\\')) && (c < 0x80 || !(flags & BASIC_JSON_UTF8))) {
			if (o == room)
				break;
			dst[o++] = (char)c;
			p++;
			continue;
		}
		if (c == '"' || c == '\\') {
			if (room - o < 2)
				break;
			dst[o] = '\\';
			dst[o + 1] = (char)c;
			o += 2;
		} else if (c < 0x20) {
			if (room - o < 6)
				break;
			memcpy(dst + o, "\\u00", 4);
			dst[o + 4] = hex[c >> 4];
			dst[o + 5] = hex[c & 15];
			o += 6;
		} else if ((n = basic_utf8_seq(p, strnlen(p, 4)))) {
			if (room - o < n)
				break;
			memcpy(dst + o, p, n);
			o += n;
		} else { /* not UTF-8 (a client's raw bytes): a JSON text must be */
			n = 1;
			if (room - o < 6)
				break;
			memcpy(dst + o, "\\ufffd", 6);
			o += 6;
		}
		p += n;
	}
	*s = p;
	return o;
}

/* A byte for which a CSV field (RFC 4180) goes in double quotes: a comma,
   a quote, CR or LF - the one place that says which.  All four are below
   '-', so a letter or digit is told plain by one comparison. */
static inline bool basic_csv_special(char c)
{
	return (unsigned char)c <= ',' && (c == ',' || c == '"' || c == '\r' || c == '\n');
}

/* Whether s as a CSV field goes in double quotes. */
static inline bool basic_csv_quoted(const char *s)
{
	for (; *s; s++)
		if (basic_csv_special(*s))
			return true;
	return false;
}

/*
 * The one CSV field escaper: the bytes of *s into dst, as many as fit in
 * room bytes, with each '"' doubled when quoted (basic_csv_quoted(s) of
 * the whole field; the quotes around it are the caller's) and as they are
 * when not.  Moves *s past what it wrote, as basic_json_escape does (room
 * >= 2 always takes a step); writes no NUL; returns the bytes written.
 */
static inline size_t basic_csv_escape(const char **s, char *dst, size_t room, bool quoted)
{
	const char *p = *s;
	size_t o = 0;

	while (*p) {
		if (quoted && *p == '"') {
			if (room - o < 2)
				break;
			dst[o++] = '"';
		} else if (o == room) {
			break;
		}
		dst[o++] = *p++;
	}
	*s = p;
	return o;
}

/*
 * s as a whole CSV field into dst, in double quotes when basic_csv_quoted(s)
 * (escaped by basic_csv_escape): its length, or 0 when it does not fit in
 * room bytes (write it in steps then; an empty s is 0 too, and nothing to
 * write).  One pass for a field with no special byte, the usual name:
 * copied while it is looked at, and written again quoted only if a special
 * byte turns up.
 */
static inline size_t basic_csv_field_into(const char *s, char *dst, size_t room)
{
	size_t o = 0, n;
	const char *p = s;

	for (; *s; s++) {
		if (basic_csv_special(*s))
			break;
		if (o == room)
			return 0;
		dst[o++] = *s;
	}
	if (!*s)
		return o;
	if (room < 2)
		return 0;
	dst[0] = '"';
	n = basic_csv_escape(&p, dst + 1, room - 2, true);
	if (*p)
		return 0;
	dst[n + 1] = '"';
	return n + 2;
}

/*
 * Write s as a JSON string, quotes included: '"' and '\' escaped with a
 * backslash, bytes below 0x20 as \u00xx.  NULL is written as "" (an
 * unknown name is an empty string, not a missing key).  Returns 0, -EINVAL
 * for a NULL stream, -EIO if the stream has an error.
 */
int basic_json_string(FILE *out, const char *s);

/*
 * s as a JSON string, quotes included, into buf (len bytes, NUL-terminated),
 * escaped as basic_json_string() does, except that a byte that does not
 * start a well-formed UTF-8 sequence (basic/utf8.h) is written as \ufffd:
 * for bytes from a client (the dashboard's errors and stream), where a
 * JSON text must be UTF-8.  NULL is "".  Returns the length written (NUL
 * not counted), -EINVAL (NULL buf), -ENOSPC (len too small; buf then
 * holds a cut string, not to be used).
 */
int basic_json_string_buf(const char *s, char *buf, size_t len);

/*
 * Write s as one CSV field (RFC 4180): as it is, or in double quotes with
 * inner quotes doubled when it holds a comma, a quote, CR or LF.  NULL
 * writes nothing (an empty field).  Returns 0, -EINVAL for a NULL stream,
 * -EIO if the stream has an error.
 */
int basic_csv_field(FILE *out, const char *s);
