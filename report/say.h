/* SPDX-License-Identifier: MIT */
/*
 * say.h - report/'s one way of saying what went wrong: on the stream its
 * caller gives (cli/ gives stderr), as the command line tools say it.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "railmon CMD: message\n" on out.  Returns 2, the exit code of a usage
   error, as cli/'s cli_fail does. */
int rpt_fail(FILE *out, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The same with a va_list (cli/'s cli_fail says it on stderr). */
int rpt_vfail(FILE *out, const char *cmd, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* The mark of a cut text in every table (channels, summary, the live
   table of watch and demo): one meaning, "there is more". */
#define RPT_CUT_MARK '>'

/* One table line (no newline in it) and a newline on out; with width > 0
   (a terminal's columns) a longer line is cut to width - 1 columns and
   RPT_CUT_MARK.  Columns are UTF-8 characters: a cut never splits one. */
void rpt_line_fit(FILE *out, const char *line, int width);
