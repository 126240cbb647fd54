/* SPDX-License-Identifier: MIT */
/*
 * cursor.c - the forwarder's persistent position in the log.
 *
 * The file is replaced, never rewritten in place: a power cut during the
 * update must leave either the old cursor (records re-sent: duplicates the
 * consumer detects) or the new one, never a torn value that could skip
 * records.  The writes between the timed ones skip the fsyncs
 * (upl_cursor_store_nosync, replace.h says when a power cut can undo
 * them): what the file can then hold after a power cut is the old value,
 * the new one, or nothing readable, and load takes an empty, short or
 * zeroed file as damage (the caller then starts at the log's oldest
 * record: duplicates, never a gap).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/replace.h"
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
	ssize_t n;

	if (!path || !ret_seq)
		return -EINVAL;
	n = basic_file_read_state(path, buf, sizeof(buf));
	if (n == -ENOENT) {
		*ret_seq = 1;
		return 0;
	}
	if (n < 0)
		return (int)n;
	if (n == 0)
		return -ENODATA;
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

static int store(const char *path, uint64_t seq, bool sync)
{
	char line[64];
	int len;

	if (!path || !*path || seq == 0)
		return -EINVAL;
	len = snprintf(line, sizeof(line), CURSOR_MAGIC "%" PRIu64 "\n", seq);
	return sync ? basic_file_replace(path, line, (size_t)len) : basic_file_replace_nosync(path, line, (size_t)len);
}

int upl_cursor_store(const char *path, uint64_t seq)
{
	return store(path, seq, true);
}

int upl_cursor_store_nosync(const char *path, uint64_t seq)
{
	return store(path, seq, false);
}
