/* SPDX-License-Identifier: MIT */
/* chain.c - the hash chain, Seal signatures and key files (evd.h). */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evd-private.h"
#include "evd.h"
#include "basic/hex.h"

/* Batch.historical = true: field 7, varint 1.  The forwarder appends it to
   a Batch it re-sends from its backlog (uplink/forward.c). */
static const uint8_t historical_true[2] = { 7 << 3 | 0, 1 };

int evd_init(void)
{
	/* 0 first time, 1 when already done, -1 when no randomness source */
	return sodium_init() < 0 ? -EIO : 0;
}

size_t evd_evidence_len(const void *payload, size_t len)
{
	const uint8_t *p = payload;

	/* Every trailing historical field goes: the same Batch, sent live or
	   from the backlog (once or more), gives the same digest.  Only the
	   transport flag is outside the evidence; a payload whose own last
	   bytes happen to read so is cut the same way on both sides. */
	while (len >= sizeof(historical_true) &&
	       !memcmp(p + len - sizeof(historical_true), historical_true, sizeof(historical_true)))
		len -= sizeof(historical_true);
	return len;
}

void evd_digest(const void *payload, size_t len, uint8_t ret[EVD_HASH_LEN])
{
	crypto_generichash(ret, EVD_HASH_LEN, payload, evd_evidence_len(payload, len), NULL, 0);
}

void evd_chain_step(uint8_t head[EVD_HASH_LEN], const uint8_t digest[EVD_HASH_LEN])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, EVD_HASH_LEN);
	crypto_generichash_update(&st, head, EVD_HASH_LEN);
	crypto_generichash_update(&st, digest, EVD_HASH_LEN);
	crypto_generichash_final(&st, head, EVD_HASH_LEN);
}

void evd_chain_genesis(const uint8_t log_id[REC_LOG_ID_LEN], uint64_t first_seq, uint8_t ret[EVD_HASH_LEN])
{
	static const char tag[] = "railmon.chain.v1";
	crypto_generichash_state st;
	uint8_t seq[8];

	for (int i = 0; i < 8; i++)
		seq[i] = (uint8_t)(first_seq >> (8 * i));
	crypto_generichash_init(&st, NULL, 0, EVD_HASH_LEN);
	crypto_generichash_update(&st, (const uint8_t *)tag, sizeof(tag) - 1);
	crypto_generichash_update(&st, log_id, REC_LOG_ID_LEN);
	crypto_generichash_update(&st, seq, sizeof(seq));
	crypto_generichash_final(&st, ret, EVD_HASH_LEN);
}

void evd_seal_hash(const struct rec_seal *seal, uint8_t ret[EVD_HASH_LEN])
{
	static const uint8_t none[REC_SEAL_SIG_LEN];
	uint8_t buf[REC_SEAL_SIGNED_MAX];
	crypto_generichash_state st;
	struct rec_seal link = *seal;
	int n;

	/* The link leaves the Seal Batch's own fields out (as zeros): the
	   signature it hashes covers them already, and a Seal Batch changed
	   outside its Seal message then fails its own signature while the
	   next Seal still links to it, naming the change at that Batch
	   (verify.c: -ESTALE) rather than breaking the next Seal too. */
	memset(&link.batch, 0, sizeof(link.batch));
	n = rec_seal_signed_bytes(&link, buf);

	crypto_generichash_init(&st, NULL, 0, EVD_HASH_LEN);
	crypto_generichash_update(&st, buf, n > 0 ? (size_t)n : 0);
	crypto_generichash_update(&st, seal->is_signed ? seal->signature : none, REC_SEAL_SIG_LEN);
	crypto_generichash_final(&st, ret, EVD_HASH_LEN);
}

int evd_seal_sign(struct rec_seal *seal, const uint8_t secret[EVD_SECRET_LEN])
{
	uint8_t buf[REC_SEAL_SIGNED_MAX];
	int n;

	if (!seal || !secret)
		return -EINVAL;
	n = rec_seal_signed_bytes(seal, buf);
	if (n < 0)
		return n;
	crypto_sign_detached(seal->signature, NULL, buf, (unsigned long long)n, secret);
	seal->is_signed = true;
	return 0;
}

int evd_seal_check(const struct rec_seal *seal, const uint8_t pk[EVD_PUBLIC_LEN])
{
	uint8_t buf[REC_SEAL_SIGNED_MAX];
	int n;

	if (!seal || !pk)
		return -EINVAL;
	if (!seal->is_signed)
		return -ENOKEY;
	n = rec_seal_signed_bytes(seal, buf);
	if (n < 0)
		return n;
	return crypto_sign_verify_detached(seal->signature, buf, (unsigned long long)n, pk) == 0 ?
	       0 : -EKEYREJECTED;
}

/* ---------------------------------------------------------------- keys */

#define KEY_SECRET_TAG "railmon-ed25519-secret "
#define KEY_PUBLIC_TAG "railmon-ed25519-public "
#define KEY_HEX_LEN 64

static int key_write(const char *path, mode_t mode, const char *tag, const uint8_t key[32])
{
	char line[sizeof(KEY_SECRET_TAG) + KEY_HEX_LEN + 2];
	size_t len;
	int fd, r = 0;

	snprintf(line, sizeof(line), "%s", tag);
	sodium_bin2hex(line + strlen(tag), KEY_HEX_LEN + 1, key, 32);
	strcat(line, "\n");
	len = strlen(line);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	/* the mode asked for, whatever the umask */
	if (fchmod(fd, mode) < 0 || write(fd, line, len) != (ssize_t)len || fsync(fd) < 0)
		r = errno ? -errno : -EIO;
	sodium_memzero(line, sizeof(line));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0)
		unlink(path);
	return r;
}

int evd_key_generate(const char *secret_path, const char *public_path)
{
	uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	int r;

	if (!secret_path || !public_path || evd_init() < 0)
		return -EINVAL;
	/* Neither may exist: a new pair never replaces a key in use. */
	if (access(secret_path, F_OK) == 0 || access(public_path, F_OK) == 0)
		return -EEXIST;
	crypto_sign_keypair(pk, sk);
	r = key_write(secret_path, 0600, KEY_SECRET_TAG, sk); /* sk starts with the seed */
	if (r == 0) {
		r = key_write(public_path, 0644, KEY_PUBLIC_TAG, pk);
		if (r < 0)
			unlink(secret_path);
	}
	sodium_memzero(sk, sizeof(sk));
	return r;
}

/* Read "TAG HEX64\n" into 32 bytes. */
static int key_read(int fd, const char *tag, uint8_t ret[32])
{
	char buf[128];
	size_t tlen = strlen(tag), got;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int r = -EBADMSG;

	if (n < 0)
		return -errno;
	buf[n] = 0;
	if ((size_t)n >= tlen + KEY_HEX_LEN && !memcmp(buf, tag, tlen) &&
	    (buf[tlen + KEY_HEX_LEN] == '\n' || buf[tlen + KEY_HEX_LEN] == 0) &&
	    (buf[tlen + KEY_HEX_LEN] == 0 || (size_t)n == tlen + KEY_HEX_LEN + 1) &&
	    sodium_hex2bin(ret, 32, buf + tlen, KEY_HEX_LEN, NULL, &got, NULL) == 0 && got == 32)
		r = 0;
	sodium_memzero(buf, sizeof(buf));
	return r;
}

static int key_open(const char *path, bool secret)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		close(fd);
		return r;
	}
	if (secret && (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int evd_key_load_secret(const char *path, uint8_t ret[EVD_SECRET_LEN])
{
	uint8_t seed[32], pk[32];
	int fd, r;

	if (!path || !ret || evd_init() < 0)
		return -EINVAL;
	fd = key_open(path, true);
	if (fd < 0)
		return fd;
	r = key_read(fd, KEY_SECRET_TAG, seed);
	close(fd);
	if (r == 0)
		crypto_sign_seed_keypair(pk, ret, seed);
	sodium_memzero(seed, sizeof(seed));
	return r;
}

int evd_key_is_secret(const char *path)
{
	char buf[sizeof(KEY_SECRET_TAG)];
	ssize_t n;
	int fd;

	if (!path)
		return -EINVAL;
	fd = key_open(path, false);
	if (fd < 0)
		return fd;
	n = read(fd, buf, sizeof(KEY_SECRET_TAG) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(KEY_SECRET_TAG) - 1 && !memcmp(buf, KEY_SECRET_TAG, (size_t)n);
}

const char *evd_key_id(const uint8_t pk[EVD_PUBLIC_LEN], char buf[17])
{
	basic_hex_encode(pk, 8, false, buf);
	return buf;
}

int evd_key_load_public(const char *path, uint8_t ret[EVD_PUBLIC_LEN])
{
	uint8_t sk[EVD_SECRET_LEN];
	int fd, r;

	if (!path || !ret || evd_init() < 0)
		return -EINVAL;
	fd = key_open(path, false);
	if (fd < 0)
		return fd;
	r = key_read(fd, KEY_PUBLIC_TAG, ret);
	if (r == -EBADMSG && lseek(fd, 0, SEEK_SET) == 0 && key_read(fd, KEY_SECRET_TAG, sk) == 0) {
		/* the secret file names its public half too */
		uint8_t seed[32];
		memcpy(seed, sk, 32);
		crypto_sign_seed_keypair(ret, sk, seed);
		sodium_memzero(seed, sizeof(seed));
		r = 0;
	}
	sodium_memzero(sk, sizeof(sk));
	close(fd);
	return r;
}

void evd_key_public_of(const uint8_t secret[EVD_SECRET_LEN], uint8_t ret[EVD_PUBLIC_LEN])
{
	crypto_sign_ed25519_sk_to_pk(ret, secret);
}
