/* SPDX-License-Identifier: MIT */
/*
 * config-file.c - a board file from disk (conf_load): read whole, refused
 * when it is not a regular file, is over 16 MiB or holds a NUL byte,
 * parsed (config.c), and the board's hash extended with the bytes of every
 * DBC and TRDP XML it names (conf_hash_files), so a change to any of them
 * is a new hash.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/hash.h"
#include "config.h"

/* What a path is when it is not a regular file, for messages. */
static const char *not_regular(mode_t m)
{
	return S_ISDIR(m) ? "is a directory" : S_ISFIFO(m) ? "is a FIFO, not a regular file"
	     : S_ISCHR(m) ? "is a character device, not a regular file" : "is not a regular file";
}

/*
 * The whole board file, NUL-terminated.  Opened with O_NONBLOCK and checked
 * to be a regular file first: a FIFO would block `run` until a writer came,
 * and a directory read as an empty file ("missing [board] vehicle").
 */
static int read_board_file(const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	char *text = NULL;
	size_t cap = 0, n = 0;
	struct stat st;
	ssize_t k = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "%s: %s", path, not_regular(st.st_mode));
	}
	while (r == 0) {
		if (n + 4096 + 1 > cap) {
			size_t ncap = cap * 2 + 8192;
			char *t = ncap <= (16u << 20) ? realloc(text, ncap) : NULL;
			if (!t) {
				r = ncap <= (16u << 20) ? -ENOMEM : -EFBIG;
				snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "too large for a board file" : strerror(-r));
				break;
			}
			text = t;
			cap = ncap;
		}
		k = read(fd, text + n, 4096);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		} else if (k == 0) {
			break;
		}
		n += k > 0 ? (size_t)k : 0;
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		free(text);
		return r;
	}
	text[n] = 0;
	*ret_text = text;
	*ret_len = n;
	return 0;
}

int conf_load(const char *path, struct conf_board **ret_cfg, char *err, size_t errlen)
{
	char *text = NULL, dummy[1];
	size_t n = 0;
	int r;

	if (!path || !ret_cfg)
		return -EINVAL;
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	r = read_board_file(path, &text, &n, err, errlen);
	if (r < 0)
		return r;
	if (strlen(text) != n) {
		free(text);
		snprintf(err, errlen, "%s: contains a NUL byte (not a text file)", path);
		return -EINVAL;
	}
	r = conf_parse(path, text, ret_cfg, err, errlen);
	free(text);
	if (r == 0)
		conf_hash_files(*ret_cfg);
	return r;
}

/* h with the file at path hashed in: tag, its bytes, their count (LE); or
   'E' and the errno when it cannot be read (read as the board file is:
   a FIFO or a directory is not read, and refused by its loader). */
static uint64_t hash_file(uint64_t h, char tag, const char *path)
{
	char *text = NULL, why[CONF_ERR_MAX];
	size_t n = 0;
	unsigned char le[8];
	int r = read_board_file(path, &text, &n, why, sizeof(why));

	h = basic_fnv1a(h, &tag, 1);
	if (r < 0) {
		h = basic_fnv1a(h, "E", 1);
		n = (size_t)-r;
	} else {
		h = basic_fnv1a(h, text, n);
	}
	free(text);
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)((uint64_t)n >> (8 * i));
	return basic_fnv1a(h, le, sizeof(le));
}

void conf_hash_files(struct conf_board *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->nbuses; i++) {
		const struct bus_cfg *b = &cfg->buses[i];
		if (b->kind == BUS_KIND_CAN && b->can.dbc[0])
			cfg->hash = hash_file(cfg->hash, 'D', b->can.dbc);
		else if (b->kind == BUS_KIND_TRDP && b->trdp.xml[0])
			cfg->hash = hash_file(cfg->hash, 'X', b->trdp.xml);
	}
}
