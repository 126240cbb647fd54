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
 */
#pragma once

#include <stddef.h>
#include <stdio.h>

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
