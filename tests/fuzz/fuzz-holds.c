/* SPDX-License-Identifier: MIT */
/*
 * fuzz-holds.c - libFuzzer target for the holds file (storage/hold.c): the
 * input is the file's bytes, read with stor_holds_read().  An input that
 * starts with '#' gets a correct crc line appended to the rest (any crc
 * line of its own cut first), so the fuzzer also reaches the hold lines
 * behind the CRC.  What reads back must be sane (names, windows, count),
 * and survive a rewrite (stor_holds_expire) unchanged in number.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "stor.h"

static char dir[64];

/* libFuzzer ends with exit(): leave nothing in /dev/shm. */
static void cleanup(void)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%s", dir, STOR_HOLDS_NAME);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, STOR_HOLDS_NAME);
	unlink(path);
	rmdir(dir);
}

static void put(const uint8_t *data, size_t size)
{
	char path[96], crc[24];
	const uint8_t *end;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, STOR_HOLDS_NAME);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if (size && data[0] == '#') {
		data++, size--;
		end = memmem(data, size, "crc ", 4);
		if (end && (end == data || end[-1] == '\n'))
			size = (size_t)(end - data);
		snprintf(crc, sizeof(crc), "crc %08" PRIx32 "\n", stor_crc32c(0, data, size));
		if (write(fd, data, size) != (ssize_t)size || write(fd, crc, strlen(crc)) != (ssize_t)strlen(crc))
			abort();
	} else if (write(fd, data, size) != (ssize_t)size) {
		abort();
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct stor_holds h, again;
	unsigned line = 0;
	size_t expired = 0, keep = 0;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/dev/shm/fuzz-holds-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	put(data, size);
	if (stor_holds_read(dir, &h, &line) < 0)
		return 0;
	if (h.n > STOR_HOLDS_MAX || !h.next_id)
		abort();
	for (size_t i = 0; i < h.n; i++) {
		if (!stor_hold_name_ok(h.h[i].trigger) || h.h[i].from_ns > h.h[i].to_ns || !h.h[i].id)
			abort();
		keep += !h.h[i].expiry_ns || h.h[i].expiry_ns > 0;
	}
	/* rewrite it (holds expiring at or before 0 go): it must read back */
	if (stor_holds_expire(dir, 0, &expired, &line) < 0 || stor_holds_read(dir, &again, &line) < 0)
		abort();
	if (again.n != keep || again.n + expired != h.n || again.next_id != h.next_id)
		abort();
	return 0;
}
