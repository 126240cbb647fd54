/* SPDX-License-Identifier: MIT */
/*
 * space.c - a log's sizes against its filesystem, so a daemon refuses a
 * segment or retention size that can never work instead of running for
 * hours storing nothing (a 16 MiB segment cannot be preallocated on an
 * 8 MiB partition).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "stor-private.h"

/* statvfs of path or of its nearest existing parent (path is cut down). */
static int statvfs_existing(char *path, struct statvfs *ret)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		path[--n] = 0;
	while (statvfs(path, ret) < 0) {
		char *slash = strrchr(path, '/');

		if (errno != ENOENT)
			return -errno;
		if (!slash) {
			if (!strcmp(path, "."))
				return -ENOENT;
			strcpy(path, ".");
		} else {
			slash[slash == path] = 0; /* "/x" -> "/" */
		}
	}
	return 0;
}

/* Blocks allocated to one regular file of the log, 0 if none. */
static uint64_t file_bytes(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

static uint64_t log_bytes(const char *dir)
{
	char name[STOR_SEG_NAME_LEN];
	uint64_t *seqs, sum;
	size_t n;
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return 0;
	sum = file_bytes(dirfd, STOR_SPARE_NAME);
	if (stor_seg_list(dirfd, &seqs, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			stor_seg_name(name, seqs[i]);
			sum += file_bytes(dirfd, name);
		}
		free(seqs);
	}
	close(dirfd);
	return sum;
}

int stor_space_query(const char *dir, struct stor_space *ret_space)
{
	char path[PATH_MAX];
	struct statvfs vfs;
	int r;

	if (!dir || !*dir || !ret_space)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = statvfs_existing(path, &vfs);
	if (r < 0)
		return r;
	*ret_space = (struct stor_space){
		.fs_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize,
		.free_bytes = (uint64_t)vfs.f_bavail * vfs.f_frsize,
		.log_bytes = log_bytes(dir),
	};
	return 0;
}

int stor_space_check(const struct stor_space *space, uint64_t segment_bytes,
		     uint64_t retention_bytes)
{
	uint64_t seg = segment_bytes ? segment_bytes : STOR_DEFAULT_SEGMENT, avail;
	int warn = 0;

	if (!space)
		return -EINVAL;
	/* The segment being written is preallocated whole, and space comes
	   back only by deleting a closed one: two must fit. */
	if (seg > space->fs_bytes / 2)
		return -EFBIG;
	if (retention_bytes > space->fs_bytes)
		return -E2BIG;
	avail = space->free_bytes + space->log_bytes;
	if (avail < seg)
		warn |= STOR_SPACE_LOW_SEGMENT;
	if (retention_bytes && avail < retention_bytes)
		warn |= STOR_SPACE_LOW_RETENTION;
	return warn;
}
