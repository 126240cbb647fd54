/* SPDX-License-Identifier: MIT */
/* term.c - a terminal's width for the tables (cli.h cli_term_width); apart
   from cli.c, whose signal handlers need main.c, so the say files' tests
   link it alone. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"

int cli_term_width(FILE *f)
{
	struct winsize ws;
	const char *env;
	long n;

	if (!f || !isatty(fileno(f)))
		return 0;
	if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		return ws.ws_col;
	env = getenv("COLUMNS");
	n = env ? strtol(env, NULL, 10) : 0;
	return n > 0 && n < 10000 ? (int)n : 80;
}
