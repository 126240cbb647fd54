/* SPDX-License-Identifier: MIT */
/*
 * dbc-warn.c - what a DBC gets wrong, said as "file:line: ...": an error
 * (dbc_err), or a warning kept on the loaded DBC when the load is lenient
 * and an error when it is strict (dbc_warn).  The parser (dbc-parse.c) and
 * the checks after it (dbc-load.c) both say so through here.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "dbc-private.h"

__attribute__((format(printf, 5, 6)))
int dbc_err(char *errbuf, size_t errlen, const char *path, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (errbuf && errlen) {
		n = snprintf(errbuf, errlen, "%s:%u: ", path, line);
		if (n >= 0 && (size_t)n < errlen) {
			va_start(ap, fmt);
			vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EBADMSG;
}

int dbc_warn(struct dbc *dbc, const char *path, unsigned line, const char *action, char *errbuf,
             size_t errlen, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (dbc->flags & DBC_STRICT)
		return dbc_err(errbuf, errlen, path, line, "%s", text);
	if (dbc->nwarnings == dbc->capwarnings) {
		unsigned ncap = dbc->capwarnings ? dbc->capwarnings * 2 : 16;
		struct dbc_warning *w = realloc(dbc->warnings, ncap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		dbc->warnings = w;
		dbc->capwarnings = ncap;
	}
	n = asprintf(&dbc->warnings[dbc->nwarnings].text, "%s:%u: %s; %s", path, line, text, action);
	if (n < 0)
		return -ENOMEM;
	dbc->warnings[dbc->nwarnings].line = line;
	dbc->warnings[dbc->nwarnings].seq = dbc->nwarnings;
	dbc->nwarnings++;
	return 0;
}

unsigned dbc_warning_count(const dbc_t *dbc)
{
	return dbc ? dbc->nwarnings : 0;
}

const char *dbc_warning(const dbc_t *dbc, unsigned i)
{
	return dbc && i < dbc->nwarnings ? dbc->warnings[i].text : NULL;
}
