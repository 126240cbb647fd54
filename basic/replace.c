/* SPDX-License-Identifier: MIT */
/*
 * replace.c - a state file replaced whole (replace.h): written beside it,
 * synced, renamed over it, the directory synced (or, for a crash of the
 * process only, written and renamed); and read back.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "replace.h"

static int write_all(int fd, const char *buf, size_t len, bool sync)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return sync && fsync(fd) < 0 ? -errno : 0;
}

int basic_dir_sync(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, r = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

static int replace(const char *path, const void *data, size_t len, bool sync)
{
	char tmp[PATH_MAX];
	int fd, r;

	if (!path || !*path || (!data && len))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len, sync);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	return sync ? basic_dir_sync(path) : 0;
}

int basic_file_replace(const char *path, const void *data, size_t len)
{
	return replace(path, data, len, true);
}

int basic_file_replace_nosync(const char *path, const void *data, size_t len)
{
	return replace(path, data, len, false);
}

ssize_t basic_file_read_state(const char *path, char *buf, size_t len)
{
	struct stat st;
	ssize_t n = 0;
	int fd, r;

	if (!path || !buf || !len)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	else
		r = (n = read(fd, buf, len - 1)) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	buf[n] = '\0';
	return n;
}
