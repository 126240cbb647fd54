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
