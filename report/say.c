/* SPDX-License-Identifier: MIT */
/* say.c - "railmon CMD: message" on the caller's stream (say.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

void rpt_line_fit(FILE *out, const char *line, int width)
{
	size_t cols = 0, cut = 0, i;

	for (i = 0; width > 0 && line[i]; i++) {
		if (((unsigned char)line[i] & 0xC0) == 0x80)
			continue; /* a UTF-8 continuation byte: no column of its own */
		if (cols == (size_t)width - 1)
			cut = i;
		cols++;
	}
	if (width <= 0 || cols <= (size_t)width) {
		fputs(line, out);
		fputc('\n', out);
		return;
	}
	fwrite(line, 1, cut, out);
	fputc(RPT_CUT_MARK, out);
	fputc('\n', out);
}
