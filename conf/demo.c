/* SPDX-License-Identifier: MIT */
/*
 * demo.c - the demo board's place and its simulated devices (demo.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo.h"
#include "railmon-config.h"

/* Whether this binary is one of the build tree it was built in (the Quick
   start's build-demo/, the tests'): then its data is that source tree's. */
static bool demo_in_build_tree(void)
{
	char exe[PATH_MAX], build[PATH_MAX];
	size_t n;

	if (!realpath("/proc/self/exe", exe) || !realpath(RAILMON_BUILD_DIR, build))
		return false;
	n = strlen(build);
	return !strncmp(exe, build, n) && exe[n] == '/';
}

int conf_demo_board_path(char *buf, size_t len, const char **ret_why)
{
	const char *env = getenv("RAILMON_PKGDATADIR"), *why;
	int n;

	/* An installed binary never looks for a source tree (the machine that
	   built the package may still have one, at a path that means nothing
	   here); a build tree's binary never for installed data (an older
	   install would hide the board being worked on). */
	if (env && env[0]) {
		n = snprintf(buf, len, "%s/demo.ini", env);
		why = "RAILMON_PKGDATADIR";
	} else if (demo_in_build_tree()) {
		n = snprintf(buf, len, "%s/cli/demo.ini", RAILMON_SOURCE_DIR);
		why = "the source tree of this build";
	} else {
		n = snprintf(buf, len, "%s/demo.ini", RAILMON_PKGDATADIR);
		why = "the installed data";
	}
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	*ret_why = why;
	return 0;
}

/* The demo board the options name, else the one conf_demo_board_path()
   finds; one that is not there is said with where it was looked for. */
int conf_demo_board(const char *given, char *buf, size_t len, char *err, size_t errlen)
{
	const char *why;
	int r;

	if (given) {
		snprintf(buf, len, "%s", given);
		return 0;
	}
	r = conf_demo_board_path(buf, len, &why);
	if (r < 0) {
		snprintf(err, errlen, "the demo board's path is too long (RAILMON_PKGDATADIR)");
		return r;
	}
	if (access(buf, R_OK) < 0) {
		r = -errno;
		snprintf(err, errlen, "no demo board %s (%s): %s; give one with --board FILE", buf, why, strerror(-r));
		return r;
	}
	return 0;
}

int conf_demo_load(const char *path, uint16_t port, struct conf_board **ret_cfg, char *err, size_t errlen)
{
	struct conf_board *cfg;
	int r;

	r = conf_load(path, &cfg, err, errlen);
	if (r < 0)
		return r;
	/* The simulated devices live on the port we just got. */
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->buses[b].kind == BUS_KIND_MODBUS && !cfg->buses[b].mb.rtu &&
		    !strcmp(cfg->buses[b].mb.host, "127.0.0.1"))
			cfg->buses[b].mb.port = port;
	*ret_cfg = cfg;
	return 0;
}
