/* SPDX-License-Identifier: MIT */
/*
 * remote-config.h - the signed configuration message (issue 32): a board
 * file and the DBC/XML files it names, for one vehicle, with a version
 * number, signed by the ground's Ed25519 key (`railmon keygen`).  `railmon
 * config push` encodes it; the vehicle verifies it before anything of it
 * is used.  The byte format is docs/remote-config.md.
 *
 * Why here: it is a signature over bytes with the keys of evd.h, and the
 * parser must be one copy that the fuzz target reaches.  Nothing here reads
 * files, logs or touches the network; the reasons a message is refused are
 * plain words in a buffer the caller says.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "evd.h"

#define EVD_RCONF_MAGIC "RMCONF01"      /* 8 bytes, no NUL in the message */
#define EVD_RCONF_MAGIC_LEN 8
#define EVD_RCONF_SIG_LEN 64
#define EVD_RCONF_MAX (4u << 20)        /* a whole message at most (4 MiB) */
#define EVD_RCONF_FILES_MAX 16          /* the board file and 15 more */
#define EVD_RCONF_NAME_MAX 255
#define EVD_RCONF_VEHICLE_MAX 63        /* as a Seal's vehicle */
#define EVD_RCONF_WHY_MAX 160

enum evd_rconf_kind {
	EVD_RCONF_CONTENT = 0,  /* the file's bytes follow */
	EVD_RCONF_HASH = 1,     /* a file already on board: its BLAKE2b-256 */
	EVD_RCONF_KIND_MAX
};

struct evd_rconf_file {
	enum evd_rconf_kind kind;
	const char *name;       /* relative to the board file's directory; no
	                           "..", no leading '/', NUL-terminated copy in
	                           the message struct (name_buf) after parse */
	const uint8_t *data;    /* CONTENT: len bytes (after parse: inside the
	                           buffer parsed, which must outlive this) */
	size_t len;
	uint8_t hash[EVD_HASH_LEN]; /* HASH: of the file's bytes */
};

struct evd_rconf {
	uint64_t version;       /* must be above the vehicle's current one */
	char vehicle[EVD_RCONF_VEHICLE_MAX + 1];
	size_t nfiles;          /* 1..EVD_RCONF_FILES_MAX; files[0] is the board file (CONTENT) */
	struct evd_rconf_file files[EVD_RCONF_FILES_MAX];
	char name_buf[EVD_RCONF_FILES_MAX][EVD_RCONF_NAME_MAX + 1]; /* parse: the names */
};

/* BLAKE2b-256 of a file's bytes: what a HASH entry holds. */
void evd_rconf_hash(const void *data, size_t len, uint8_t ret_hash[EVD_HASH_LEN]);

/*
 * Encode and sign m with the ground's secret key into a new buffer
 * (*ret_buf, free() it; *ret_len its bytes).  0; -EINVAL (a field out of
 * range: no files, the first not CONTENT, a bad name or vehicle, version
 * 0); -EMSGSIZE (the message would be over EVD_RCONF_MAX); -ENOMEM.
 */
int evd_rconf_encode(const struct evd_rconf *m, const uint8_t secret[EVD_SECRET_LEN], uint8_t **ret_buf,
                     size_t *ret_len);

/*
 * Read the message's fields into *ret (its CONTENT data point into buf)
 * without checking the signature: what the fuzz target and a person's
 * question "what is in it" need.  0; -EMSGSIZE (over EVD_RCONF_MAX);
 * -EBADMSG (not this format, truncated, a field out of range, bytes after
 * the signature), with the reason in why.
 */
int evd_rconf_parse(const void *buf, size_t len, struct evd_rconf *ret, char *why, size_t whylen);

/*
 * Everything the vehicle checks before it uses a message: evd_rconf_parse,
 * then the signature by public_key over all bytes before it, then that it
 * is for vehicle, then that its version is above current.  0 and *ret;
 * else, with the reason in why: -EMSGSIZE, -EBADMSG (as parse),
 * -EKEYREJECTED (not signed by the key: another key, or any byte changed),
 * -EXDEV (another vehicle's), -ESTALE (version not above current: an old
 * or replayed message), -EINVAL (NULL argument).
 */
int evd_rconf_verify(const void *buf, size_t len, const uint8_t public_key[EVD_PUBLIC_LEN], const char *vehicle,
                     uint64_t current, struct evd_rconf *ret, char *why, size_t whylen);
