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

const char *rpt_say_time_ms(int64_t t_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(t_ns / 1000000000 - (t_ns % 1000000000 < 0));
	int64_t ms = ((t_ns % 1000000000 + 1000000000) % 1000000000) / 1000000;
	struct tm tm;
	size_t n;

	if (!gmtime_r(&sec, &tm) || !(n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)))
		snprintf(buf, len, "%" PRId64, t_ns);
	else
		snprintf(buf + n, len - n, ".%03" PRId64 "Z", ms);
	return buf;
}
