/* SPDX-License-Identifier: MIT */
/*
 * utf8.h - well-formed UTF-8 (RFC 3629), one check for the tree: what
 * PostgreSQL takes as text (the ground's door), what the dashboard puts
 * into JSON, what a DBC file's strings must be before they are taken as
 * they are.  No overlong form, no surrogate (U+D800..U+DFFF), nothing past
 * U+10FFFF, no sequence cut short.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Length (1 to 4) of the well-formed sequence at the start of s, of which
 * at most left bytes may be read; 0 when there is none (left 0, a byte
 * that cannot start one, a cut or wrong continuation).  A NUL byte is a
 * sequence of 1.
 */
size_t basic_utf8_seq(const char *s, size_t left);

/* How many of the len bytes at s are well-formed UTF-8 from the start:
   len when all of them, else the offset of the first bad sequence. */
size_t basic_utf8_valid(const char *s, size_t len);

/* The NUL-terminated s is well-formed UTF-8 (NULL counts as ""). */
bool basic_utf8_ok(const char *s);
