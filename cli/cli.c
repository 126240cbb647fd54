/* SPDX-License-Identifier: MIT */
/*
 * cli.c - what every command shares: the usage-error message, option
 * values, loading the board file, the signals.  Commands call in here;
 * nothing here calls a command, so there is no circle between them.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/parse.h"
#include "cli.h"
#include "conf/config.h"
#include "report/say.h"

int cli_fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = rpt_vfail(stderr, cmd, fmt, ap);
	va_end(ap);
	return r;
}

bool cli_parse_seconds(const char *s, double *ret)
{
	return basic_parse_seconds(s, ret) == 0;
}

int cli_load_board(const char *cmd, const char *path, struct conf_board **ret_cfg)
{
	char err[CONF_ERR_MAX];

	if (!path)
		return cli_fail(cmd, "--board FILE is required");
	if (conf_load(path, ret_cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: %s\n", cmd, err);
		return 1;
	}
	return 0;
}

/* The first line of a file, without its line end. */
int cli_read_password(const char *path, char **ret)
{
	char buf[CLI_PASSWORD_MAX + 2];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	n = strcspn(buf, "\r\n");
	if (n > CLI_PASSWORD_MAX)
		return -E2BIG;
	buf[n] = 0;
	if (!n)
		return -ENODATA;
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

/* The flags are main.c's (the only globals of the program). */
static void on_signal(int sig)
{
	if (sig == SIGHUP)
		cli_reload_requested = 1;
	else
		cli_stop_requested = 1;
}

void cli_install_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int cli_see_help(const char *cmd)
{
	/* the sentence before this one said what is wrong: the 30 lines of
	   usage would bury it, so only where the options are described */
	fprintf(stderr, "see 'railmon %s --help'\n", cmd);
	return 2;
}
