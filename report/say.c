/* SPDX-License-Identifier: MIT */
/* say.c - "railmon CMD: message" on the caller's stream (say.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "report/say.h"

int rpt_vfail(FILE *out, const char *cmd, const char *fmt, va_list ap)
{
	fprintf(out, "railmon %s: ", cmd);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	return 2;
}

int rpt_fail(FILE *out, const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = rpt_vfail(out, cmd, fmt, ap);
	va_end(ap);
	return r;
}
