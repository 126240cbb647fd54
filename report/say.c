/* SPDX-License-Identifier: MIT */
/* say.c - "railmon CMD: message" on the caller's stream (say.h). */
#include <stdarg.h>
#include <stdio.h>

#include "report/say.h"

int rpt_fail(FILE *out, const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(out, "railmon %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(out, fmt, ap);
	va_end(ap);
	fputc('\n', out);
	return 2;
}
