/* SPDX-License-Identifier: MIT */
/*
 * cursor.c - the forwarder's persistent position in the log.
 *
 * The file is replaced, never rewritten in place: a power cut during the
 * update must leave either the old cursor (records re-sent: duplicates the
 * consumer detects) or the new one, never a torn value that could skip
 * records.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cursor.h"

#define CURSOR_MAGIC "railmon-cursor 1 "

/*
 * Every way the file can be damaged has its own code, so the board can say
 * in plain words what is wrong with it (forward.h).  It is opened
 * non-blocking and must be a regular file: a FIFO in its place would
 * otherwise block the daemon's start for ever.
 */
int upl_cursor_load(const char *path, uint64_t *ret_seq)
{
	char buf[64], *end;
	const char *num;
	unsigned long long v;
	struct stat st;
	ssize_t n = 0;
	int fd, r;

	if (!path || !ret_seq)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT)
			return -errno;
		*ret_seq = 1;
		return 0;
	}
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	else
		r = (n = read(fd, buf, sizeof(buf) - 1)) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	if (n == 0)
		return -ENODATA;
	buf[n] = '\0';
	if (strncmp(buf, CURSOR_MAGIC, strlen(CURSOR_MAGIC)) != 0)
		return -EBADMSG;
	num = buf + strlen(CURSOR_MAGIC);
	/* strtoull would skip blanks and read "-5" as 2^64 - 5: only digits. */
	if (*num == '-' || *num == '+')
		return -ERANGE;
	if (!isdigit((unsigned char)*num))
		return -EBADMSG;
	errno = 0;
	v = strtoull(num, &end, 10);
	/* The trailing newline proves the write was complete. */
	if (*end != '\n')
		return -EBADMSG;
	if (errno == ERANGE || v == 0)
		return -ERANGE;
	*ret_seq = v;
	return 0;
}

static int write_all_sync(int fd, const char *buf, size_t len)
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
	return fsync(fd) < 0 ? -errno : 0;
}

/* fsync the directory holding path, so the rename itself is durable. */
static int sync_parent(const char *path)
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

int upl_file_replace(const char *path, const char *buf, size_t len)
{
	char tmp[PATH_MAX];
	int fd, r;

	if (!path || !*path || (!buf && len))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = write_all_sync(fd, buf, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	return sync_parent(path);
}

int upl_cursor_store(const char *path, uint64_t seq)
{
	char line[64];
	int len;

	if (!path || !*path || seq == 0)
		return -EINVAL;
	len = snprintf(line, sizeof(line), CURSOR_MAGIC "%" PRIu64 "\n", seq);
	return upl_file_replace(path, line, (size_t)len);
}
