/* SPDX-License-Identifier: MIT */
/*
 * stor-faultdev.h - a stor_dev_ops double for tests: real files in a real
 * directory, plus faults at the N-th mutating operation (EIO, ENOSPC,
 * short write, power cut) and a model of what a power cut keeps of the
 * unsynced data, at 512-byte block granularity.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "storage/stor.h"

enum fdev_mode {
	FDEV_NONE,
	FDEV_EIO,
	FDEV_ENOSPC, /* like a full fs: only writes past EOF, allocate and create fail */
	FDEV_SHORT,  /* the write transfers half of what was asked */
	FDEV_CRASH,  /* power cut: this and every later op fails with EIO */
	FDEV_MODE_MAX,
};

/* Operation kinds, a bit each, to choose which ops count towards fail_at. */
enum {
	FDEV_OP_CREATE = 1 << 0,
	FDEV_OP_WRITE = 1 << 1,
	FDEV_OP_SYNC = 1 << 2,
	FDEV_OP_DIRSYNC = 1 << 3,
	FDEV_OP_TRUNC = 1 << 4,
	FDEV_OP_ALLOC = 1 << 5,
	FDEV_OP_UNLINK = 1 << 6,
	FDEV_OP_RENAME = 1 << 7,
	FDEV_OP_ALL = 0xff,
};

#define FDEV_PATTERNS 10
#define FDEV_MAX_FILES 256

struct fdev_blk {
	uint64_t idx;
	uint64_t order;     /* first-touch order since the last sync */
	bool was_zero;      /* old content never written (zeros or past EOF) */
	uint8_t old[512];
};

struct fdev_file {
	char name[64];
	bool used;
	bool entry_durable; /* its directory entry survived a dirsync */
	char old_name[64];  /* renamed from, until the next dirsync */
	uint64_t durable_size;
	struct fdev_blk *blks;
	size_t nblk, cap;
};

struct fdev {
	struct stor_dev_ops ops;  /* ops.ctx points back here */
	int dirfd;                /* the directory the log lives in */
	long ops_seen;            /* counted ops so far */
	long fail_at;             /* 1-based index of the faulty op, 0 = none */
	unsigned which;           /* FDEV_OP_* bits that count */
	enum fdev_mode mode;
	bool persistent;          /* keep failing every counted op after fail_at */
	bool dead;                /* after a power cut */
	bool track;               /* keep undo data for fdev_power_cut() */
	bool no_alloc;            /* allocate says EOPNOTSUPP (a fs without fallocate) */
	uint64_t order;
	long renames;             /* successful renames (segment recycling) */
	struct fdev_file files[FDEV_MAX_FILES];
	int fd_file[1024];        /* fd -> files[] index + 1 */
};

/* dir must exist.  Returns 0 or -errno. */
int fdev_init(struct fdev *d, const char *dir);
void fdev_done(struct fdev *d);
/* Apply what a power cut leaves of the unsynced writes: pattern
   0..FDEV_PATTERNS-1, seed for the random ones.  Returns 0 or -errno. */
int fdev_power_cut(struct fdev *d, int pattern, uint32_t seed);
const char *fdev_pattern_name(int pattern);
