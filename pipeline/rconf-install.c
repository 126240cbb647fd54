/* SPDX-License-Identifier: MIT */
/* rconf-install.c - a verified configuration's files into place, and back
   (rconf-install.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/replace.h"
#include "rconf-install.h"

#define VERSION_FILE "config.version"
#define VERSION_TAG "railmon-config-version "

static int write_sync(const char *path, const void *data, size_t len)
{
	const uint8_t *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), r = 0;

	if (fd < 0)
		return -errno;
	while (len && !r) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			p += n, len -= (size_t)n;
	}
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (r)
		unlink(path);
	return r;
}

int pl_rconf_version_load(const char *dir, uint64_t *ret)
{
	char path[PATH_MAX], line[64], *end;
	unsigned long long v;
	FILE *f;

	if (!dir || !ret)
		return -EINVAL;
	snprintf(path, sizeof(path), "%s/" VERSION_FILE, dir);
	f = fopen(path, "re");
	if (!f) {
		if (errno != ENOENT)
			return -errno;
		*ret = 0;
		return 0;
	}
	if (!fgets(line, sizeof(line), f) || strncmp(line, VERSION_TAG, strlen(VERSION_TAG))) {
		fclose(f);
		return -EBADMSG;
	}
	fclose(f);
	errno = 0;
	v = strtoull(line + strlen(VERSION_TAG), &end, 10);
	if (errno || end == line + strlen(VERSION_TAG) || (*end && *end != '\n'))
		return -EBADMSG;
	*ret = v;
	return 0;
}

/* DIR/NAME replaced whole by data (basic_file_replace). */
static int replace_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return basic_file_replace(path, data, len);
}

int pl_rconf_version_store(const char *dir, uint64_t version)
{
	char line[64];
	int n;

	if (!dir)
		return -EINVAL;
	n = snprintf(line, sizeof(line), VERSION_TAG "%" PRIu64 "\n", version);
	return replace_file(dir, VERSION_FILE, line, (size_t)n);
}

#define TRIAL_FILE "config.trial"

int pl_rconf_trial_store(const char *dir, const void *msg, size_t len)
{
	if (!dir || !msg)
		return -EINVAL;
	return replace_file(dir, TRIAL_FILE, msg, len);
}

int pl_rconf_trial_load(const char *dir, uint8_t **ret, size_t *ret_len)
{
	char path[PATH_MAX];
	uint8_t *buf;
	FILE *f;
	size_t n;
	int r = 1;

	if (!dir || !ret || !ret_len)
		return -EINVAL;
	*ret = NULL;
	*ret_len = 0;
	if (snprintf(path, sizeof(path), "%s/" TRIAL_FILE, dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!(f = fopen(path, "rb")))
		return errno == ENOENT ? 0 : -errno;
	buf = malloc(EVD_RCONF_MAX + 1);
	n = buf ? fread(buf, 1, EVD_RCONF_MAX + 1, f) : 0;
	if (!buf)
		r = -ENOMEM;
	else if (ferror(f))
		r = -EIO;
	else if (n > EVD_RCONF_MAX)
		r = -EFBIG;
	fclose(f);
	if (r < 0) {
		free(buf);
		return r;
	}
	*ret = buf;
	*ret_len = n;
	return 1;
}

int pl_rconf_trial_clear(const char *dir)
{
	char path[PATH_MAX];

	if (!dir)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/" TRIAL_FILE, dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (unlink(path) < 0)
		return errno == ENOENT ? 0 : -errno;
	return basic_dir_sync(path);
}

/* Where file i of m goes. */
static int file_path(const char *board_path, const struct evd_rconf *m, size_t i, char *buf, size_t len)
{
	const char *slash = strrchr(board_path, '/');
	int n;

	if (i == 0)
		n = snprintf(buf, len, "%s", board_path);
	else if (slash)
		n = snprintf(buf, len, "%.*s/%s", (int)(slash - board_path), board_path, m->files[i].name);
	else
		n = snprintf(buf, len, "%s", m->files[i].name);
	return n >= 0 && (size_t)n < len - 5 ? 0 : -ENAMETOOLONG; /* room for ".prev" */
}

/* The subdirectories of a file name under the board's directory. */
static int make_dirs(char *path, size_t keep)
{
	for (char *p = path + keep; (p = strchr(p, '/')); p++) {
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST) {
			int r = -errno;

			*p = '/';
			return r;
		}
		*p = '/';
	}
	return 0;
}

/* A HASH file: on board with that content? */
static bool hash_matches(const char *path, const uint8_t want[EVD_HASH_LEN])
{
	uint8_t h[EVD_HASH_LEN], *buf;
	struct stat st;
	FILE *f = fopen(path, "re");
	bool ok = false;

	if (!f)
		return false;
	if (fstat(fileno(f), &st) == 0 && st.st_size <= EVD_RCONF_MAX && (buf = malloc((size_t)st.st_size + 1))) {
		if (fread(buf, 1, (size_t)st.st_size, f) == (size_t)st.st_size) {
			evd_rconf_hash(buf, (size_t)st.st_size, h);
			ok = !memcmp(h, want, EVD_HASH_LEN);
		}
		free(buf);
	}
	fclose(f);
	return ok;
}

/* Stage every file (nothing visible changes); on error the .new files go. */
static int stage(const char *board_path, const struct evd_rconf *m, char *why, size_t whylen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	size_t dirlen = strrchr(board_path, '/') ? (size_t)(strrchr(board_path, '/') - board_path) + 1 : 0;
	int r = 0;
	size_t i;

	for (i = 0; i < m->nfiles && !r; i++) {
		const struct evd_rconf_file *f = &m->files[i];

		if ((r = file_path(board_path, m, i, path, sizeof(path))) < 0) {
			snprintf(why, whylen, "file %s: name too long", f->name);
			break;
		}
		if (f->kind == EVD_RCONF_HASH) {
			if (!hash_matches(path, f->hash)) {
				snprintf(why, whylen, "file %s: not on board with the content hash sent (missing, or "
				         "another content)", f->name);
				r = -ENOENT;
			}
			continue;
		}
		snprintf(tmp, sizeof(tmp), "%s.new", path);
		if ((r = make_dirs(tmp, dirlen)) < 0 || (r = write_sync(tmp, f->data, f->len)) < 0)
			snprintf(why, whylen, "file %s: cannot write %s: %s", f->name, tmp, strerror(-r));
	}
	if (r)
		for (size_t j = 0; j < i; j++)
			if (m->files[j].kind == EVD_RCONF_CONTENT && !file_path(board_path, m, j, path, sizeof(path))) {
				snprintf(tmp, sizeof(tmp), "%s.new", path);
				unlink(tmp);
			}
	return r;
}

int pl_rconf_install(const char *board_path, const struct evd_rconf *m, char *why, size_t whylen)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8], prev[PATH_MAX + 8];
	char none[8];
	int r;

	if (!why || !whylen)
		why = none, whylen = sizeof(none);
	if (!board_path || !m || !m->nfiles || m->nfiles > EVD_RCONF_FILES_MAX ||
	    m->files[0].kind != EVD_RCONF_CONTENT) {
		snprintf(why, whylen, "bad arguments");
		return -EINVAL;
	}
	if ((r = stage(board_path, m, why, whylen)) < 0)
		return r;
	for (size_t i = 0; i < m->nfiles; i++) {
		if (m->files[i].kind != EVD_RCONF_CONTENT)
			continue;
		file_path(board_path, m, i, path, sizeof(path));
		snprintf(tmp, sizeof(tmp), "%s.new", path);
		snprintf(prev, sizeof(prev), "%s.prev", path);
		/* the old .prev goes: a .prev is always the version before this one */
		if ((unlink(prev) < 0 && errno != ENOENT) || (link(path, prev) < 0 && errno != ENOENT) ||
		    rename(tmp, path) < 0) {
			r = -errno;
			snprintf(why, whylen, "file %s: cannot put %s in place: %s (files before it are new: "
			         "roll back)", m->files[i].name, path, strerror(-r));
			return r;
		}
		if ((r = basic_dir_sync(path)) < 0) {
			snprintf(why, whylen, "%s: cannot sync its directory: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

int pl_rconf_rollback(const char *board_path, const struct evd_rconf *m)
{
	char path[PATH_MAX], prev[PATH_MAX + 8];
	int first = 0;

	if (!board_path || !m || m->nfiles > EVD_RCONF_FILES_MAX)
		return -EINVAL;
	for (size_t i = 0; i < m->nfiles; i++) {
		int r = 0;

		if (m->files[i].kind != EVD_RCONF_CONTENT || file_path(board_path, m, i, path, sizeof(path)) < 0)
			continue;
		snprintf(prev, sizeof(prev), "%s.prev", path);
		if (rename(prev, path) < 0)
			r = errno == ENOENT ? (unlink(path) < 0 && errno != ENOENT ? -errno : 0) : -errno;
		if (!r)
			r = basic_dir_sync(path);
		if (r && !first)
			first = r;
	}
	return first;
}
