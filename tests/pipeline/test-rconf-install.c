/* SPDX-License-Identifier: MIT */
/*
 * test-rconf-install.c - a verified configuration's files into place and
 * back (pipeline/rconf-install.h): install over a board file and a DBC
 * keeps the previous ones as .prev and writes a new file in a new
 * subdirectory; a file named by content hash must be on board with that
 * content, else nothing changes; rollback restores every previous byte and
 * removes what was new; the version persists, and a damaged version file
 * is refused; bad arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlib.h"
#include "pipeline/rconf-install.h"

static char dir[] = "/tmp/railmon-test-rconf-install.XXXXXX";

static void put(const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", p);
}

/* The file's bytes ("" when there is none: then *exists false). */
static const char *get(const char *name, bool *exists)
{
	static char buf[4096];
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "r");
	*exists = f != NULL;
	buf[0] = 0;
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		fclose(f);
	}
	return buf;
}

static void expect_file(const char *name, const char *want)
{
	bool ex;
	const char *got = get(name, &ex);

	if (!want)
		CHECK(!ex, "%s exists: '%s'", name, got);
	else
		CHECK(ex && !strcmp(got, want), "%s: '%s', not '%s'", name, ex ? got : "(none)", want);
}

static struct evd_rconf msg(const char *board, const char *dbc)
{
	struct evd_rconf m = { .version = 3, .vehicle = "EV-7", .nfiles = 3 };

	m.files[0] = (struct evd_rconf_file){ .kind = EVD_RCONF_CONTENT, .name = "pushed.ini",
		                              .data = (const uint8_t *)board, .len = strlen(board) };
	m.files[1] = (struct evd_rconf_file){ .kind = EVD_RCONF_CONTENT, .name = "vehicle.dbc",
		                              .data = (const uint8_t *)dbc, .len = strlen(dbc) };
	m.files[2] = (struct evd_rconf_file){ .kind = EVD_RCONF_CONTENT, .name = "sub/dir/doors.dbc",
		                              .data = (const uint8_t *)"doors", .len = 5 };
	return m;
}

static void test_install_rollback(const char *board)
{
	struct evd_rconf m = msg("new board\n", "new dbc\n");
	char why[256] = "";

	put("board.ini", "old board\n");
	put("vehicle.dbc", "old dbc\n");
	put("board.ini.prev", "stale\n");
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == 0, "%s", why);
	/* files[0] goes to the board file's own name, not the ground's name */
	expect_file("board.ini", "new board\n");
	expect_file("pushed.ini", NULL);
	expect_file("board.ini.prev", "old board\n");
	expect_file("vehicle.dbc", "new dbc\n");
	expect_file("vehicle.dbc.prev", "old dbc\n");
	expect_file("sub/dir/doors.dbc", "doors");
	expect_file("sub/dir/doors.dbc.prev", NULL);
	expect_file("board.ini.new", NULL);
	CHECK(pl_rconf_rollback(board, &m) == 0);
	expect_file("board.ini", "old board\n");
	expect_file("vehicle.dbc", "old dbc\n");
	expect_file("sub/dir/doors.dbc", NULL); /* it was not there before */
	expect_file("board.ini.prev", NULL);
	/* twice in a row: the .prev is the one just before */
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == 0, "%s", why);
	m = msg("newer board\n", "newer dbc\n");
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == 0, "%s", why);
	expect_file("board.ini", "newer board\n");
	expect_file("board.ini.prev", "new board\n");
	CHECK(pl_rconf_rollback(board, &m) == 0);
	expect_file("board.ini", "new board\n");
	expect_file("vehicle.dbc", "new dbc\n");
}

static void test_hash(const char *board)
{
	struct evd_rconf m = msg("hash board\n", "unused\n");
	char why[256] = "";

	put("board.ini", "before\n");
	put("vehicle.dbc", "on board\n");
	put("vehicle.dbc.prev", "earlier\n");
	m.files[1].kind = EVD_RCONF_HASH;
	m.files[1].data = NULL;
	m.files[1].len = 0;
	evd_rconf_hash("on board\n", 9, m.files[1].hash);
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == 0, "%s", why);
	expect_file("board.ini", "hash board\n");
	expect_file("vehicle.dbc", "on board\n");
	expect_file("vehicle.dbc.prev", "earlier\n"); /* a HASH file is not written: its .prev untouched */
	/* another content on board: refused, nothing changed, no .new left */
	put("board.ini", "before\n");
	evd_rconf_hash("other\n", 6, m.files[1].hash);
	why[0] = 0;
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == -ENOENT);
	CHECK(strstr(why, "vehicle.dbc: not on board with the content hash sent"), "%s", why);
	expect_file("board.ini", "before\n");
	expect_file("board.ini.new", NULL);
	/* missing */
	m.files[1].name = "missing.dbc";
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == -ENOENT);
	expect_file("board.ini", "before\n");
}

static void test_version(void)
{
	uint64_t v = 99;

	CHECK(pl_rconf_version_load(dir, &v) == 0 && v == 0, "no file: %" PRIu64, v);
	CHECK(pl_rconf_version_store(dir, 41) == 0);
	CHECK(pl_rconf_version_load(dir, &v) == 0 && v == 41);
	CHECK(pl_rconf_version_store(dir, UINT64_MAX) == 0);
	CHECK(pl_rconf_version_load(dir, &v) == 0 && v == UINT64_MAX);
	expect_file("config.version.tmp", NULL);
	put("config.version", "railmon-config-version 12x\n");
	v = 7;
	CHECK(pl_rconf_version_load(dir, &v) == -EBADMSG && v == 7);
	put("config.version", "something else\n");
	CHECK(pl_rconf_version_load(dir, &v) == -EBADMSG);
	CHECK(pl_rconf_version_load(NULL, &v) == -EINVAL);
	CHECK(pl_rconf_version_load(dir, NULL) == -EINVAL);
	CHECK(pl_rconf_version_store(NULL, 1) == -EINVAL);
}

static void test_args(const char *board)
{
	struct evd_rconf m = msg("x", "y");
	char why[64];

	CHECK(pl_rconf_install(NULL, &m, why, sizeof(why)) == -EINVAL);
	CHECK(pl_rconf_install(board, NULL, why, sizeof(why)) == -EINVAL);
	m.files[0].kind = EVD_RCONF_HASH;
	CHECK(pl_rconf_install(board, &m, NULL, 0) == -EINVAL);
	m.nfiles = 0;
	CHECK(pl_rconf_install(board, &m, why, sizeof(why)) == -EINVAL);
	CHECK(pl_rconf_rollback(NULL, &m) == -EINVAL);
	/* a directory that cannot be written: said, nothing changed */
	m = msg("x", "y");
	CHECK(pl_rconf_install("/proc/railmon-nowhere/board.ini", &m, why, sizeof(why)) < 0);
	CHECK(strstr(why, "cannot write"), "%s", why);
}

/* config.trial: the message back byte for byte (a NUL inside too), gone
   after clear, none is 0 (not an error), and a file over 4 MiB refused. */
static void test_trial(void)
{
	static const uint8_t msg[] = { 'R', 'M', 0, 0xff, '\n', 7 };
	uint8_t *buf = (uint8_t *)"x";
	size_t len = 99;
	char p[600];
	FILE *f;

	CHECK(pl_rconf_trial_load(dir, &buf, &len) == 0 && !buf && len == 0, "none");
	CHECK(pl_rconf_trial_clear(dir) == 0, "clear with none");
	CHECK(pl_rconf_trial_store(dir, msg, sizeof(msg)) == 0);
	expect_file("config.trial.tmp", NULL);
	CHECK(pl_rconf_trial_load(dir, &buf, &len) == 1 && len == sizeof(msg) && !memcmp(buf, msg, len), "back");
	free(buf);
	CHECK(pl_rconf_trial_clear(dir) == 0);
	expect_file("config.trial", NULL);
	snprintf(p, sizeof(p), "%s/config.trial", dir);
	CHECK((f = fopen(p, "wb")) && fseek(f, EVD_RCONF_MAX, SEEK_SET) == 0 && fputc(1, f) == 1 && fclose(f) == 0);
	CHECK(pl_rconf_trial_load(dir, &buf, &len) == -EFBIG && !buf, "over 4 MiB");
	CHECK(pl_rconf_trial_clear(dir) == 0);
	CHECK(pl_rconf_trial_store(NULL, msg, 1) == -EINVAL && pl_rconf_trial_load(NULL, &buf, &len) == -EINVAL);
}

int main(void)
{
	char board[512];

	CHECK(mkdtemp(dir));
	snprintf(board, sizeof(board), "%s/board.ini", dir);
	test_install_rollback(board);
	test_hash(board);
	test_version();
	test_trial();
	test_args(board);
	if (!tlib_failures()) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
	return tlib_failures() ? 1 : 0;
}
