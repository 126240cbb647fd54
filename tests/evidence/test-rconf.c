/* SPDX-License-Identifier: MIT */
/*
 * test-rconf.c - the signed configuration message (evidence/remote-config.h,
 * docs/remote-config.md): a good message verifies and reads back as sent;
 * a bad signature, any byte flipped, an old or equal version, another
 * vehicle's id, a message too large, truncated at every length, and bad
 * fields are each refused with their reason; bad arguments; a message
 * python3 wrote from the spec alone (the fuzz seed) verifies.
 */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "tlib.h"
#include "evidence/evd.h"
#include "evidence/remote-config.h"

static uint8_t secret[EVD_SECRET_LEN], pub[EVD_PUBLIC_LEN];
static uint8_t other_secret[EVD_SECRET_LEN], other_pub[EVD_PUBLIC_LEN];

static const char board[] = "[board]\nvehicle = train-7\n\n[can vehicle]\ndbc = vehicle.dbc\n";
static const char dbc[] = "VERSION \"\"\nBU_: ECU\n";

/* train-7, version 5: the board file, a DBC sent whole, an XML by hash. */
static void sample(struct evd_rconf *m)
{
	memset(m, 0, sizeof(*m));
	m->version = 5;
	strcpy(m->vehicle, "train-7");
	m->nfiles = 3;
	m->files[0] = (struct evd_rconf_file){ .kind = EVD_RCONF_CONTENT, .name = "board.ini",
		                               .data = (const uint8_t *)board, .len = sizeof(board) - 1 };
	m->files[1] = (struct evd_rconf_file){ .kind = EVD_RCONF_CONTENT, .name = "dbc/vehicle.dbc",
		                               .data = (const uint8_t *)dbc, .len = sizeof(dbc) - 1 };
	m->files[2] = (struct evd_rconf_file){ .kind = EVD_RCONF_HASH, .name = "doors.xml" };
	evd_rconf_hash("<device/>", 9, m->files[2].hash);
}

static uint8_t *encode(const struct evd_rconf *m, const uint8_t *sk, size_t *len)
{
	uint8_t *buf = NULL;

	CHECK(evd_rconf_encode(m, sk, &buf, len) == 0);
	return buf;
}

static void test_good(void)
{
	struct evd_rconf m, got;
	char why[EVD_RCONF_WHY_MAX];
	uint8_t h[EVD_HASH_LEN];
	size_t len;
	uint8_t *buf;

	sample(&m);
	buf = encode(&m, secret, &len);
	CHECK(evd_rconf_verify(buf, len, pub, "train-7", 4, &got, why, sizeof(why)) == 0, "%s", why);
	CHECK(got.version == 5 && !strcmp(got.vehicle, "train-7") && got.nfiles == 3);
	CHECK_STR(got.files[0].name, "board.ini");
	CHECK(got.files[0].kind == EVD_RCONF_CONTENT && got.files[0].len == sizeof(board) - 1 &&
	      !memcmp(got.files[0].data, board, got.files[0].len));
	CHECK_STR(got.files[1].name, "dbc/vehicle.dbc");
	CHECK(got.files[1].len == sizeof(dbc) - 1 && !memcmp(got.files[1].data, dbc, got.files[1].len));
	CHECK_STR(got.files[2].name, "doors.xml");
	evd_rconf_hash("<device/>", 9, h);
	CHECK(got.files[2].kind == EVD_RCONF_HASH && !memcmp(got.files[2].hash, h, EVD_HASH_LEN));
	/* the names are the copy's own, not the local one's in verify */
	CHECK(got.files[1].name == got.name_buf[1]);
	/* from version 0 (a vehicle that never took one) too */
	CHECK(evd_rconf_verify(buf, len, pub, "train-7", 0, &got, why, sizeof(why)) == 0);
	/* parse alone reads the same, signature unchecked */
	CHECK(evd_rconf_parse(buf, len, &got, why, sizeof(why)) == 0 && got.nfiles == 3);
	/* the message is the format of docs/remote-config.md: magic, LE version */
	CHECK(!memcmp(buf, "RMCONF01", 8) && buf[8] == 5 && buf[16] == 7 && !memcmp(buf + 17, "train-7", 7));
	free(buf);
}

static void expect(const uint8_t *buf, size_t len, const uint8_t *pk, const char *vehicle, uint64_t cur,
                   int want, const char *words)
{
	struct evd_rconf got;
	char why[EVD_RCONF_WHY_MAX] = "";

	got.version = 12345;
	CHECK(evd_rconf_verify(buf, len, pk, vehicle, cur, &got, why, sizeof(why)) == want, "want %d: %s", want, why);
	CHECK(strstr(why, words), "'%s' does not say '%s'", why, words);
	CHECK(want == 0 ? got.version == 5 : got.version == 12345, "*ret written on a refusal, or not on success");
}

static void test_refused(void)
{
	struct evd_rconf m;
	size_t len;
	uint8_t *buf;

	sample(&m);
	buf = encode(&m, secret, &len);
	/* another key signed it */
	expect(buf, len, other_pub, "train-7", 4, -EKEYREJECTED, "bad signature");
	/* old and equal versions: a replay */
	expect(buf, len, pub, "train-7", 5, -ESTALE, "version 5 is not above the vehicle's current version 5");
	expect(buf, len, pub, "train-7", 9, -ESTALE, "not above");
	/* signed for another vehicle */
	expect(buf, len, pub, "train-8", 4, -EXDEV, "for vehicle train-7, not this one (train-8)");
	/* every length short of the whole: truncated (or no magic) */
	for (size_t n = 0; n < len; n++) {
		struct evd_rconf got;
		char why[EVD_RCONF_WHY_MAX] = "";
		int r = evd_rconf_verify(buf, n, pub, "train-7", 0, &got, why, sizeof(why));

		CHECK(r == -EBADMSG || r == -EKEYREJECTED, "length %zu: %d", n, r);
		CHECK(why[0], "length %zu: no reason", n);
		if (n >= 8 && n < 8 + 8 + 1 + 7 + 1 + EVD_RCONF_SIG_LEN)
			CHECK(strstr(why, "truncated"), "length %zu: %s", n, why);
	}
	/* a byte more at the end: the signature is no longer the last 64 */
	{
		uint8_t *longer = malloc(len + 1);

		CHECK(longer);
		memcpy(longer, buf, len);
		longer[len] = 0;
		expect(longer, len + 1, pub, "train-7", 0, -EBADMSG, "between the last file and the signature");
		free(longer);
	}
	/* a flipped bit in every byte: never accepted */
	for (size_t i = 0; i < len; i++) {
		struct evd_rconf got;
		char why[EVD_RCONF_WHY_MAX] = "";
		int r;

		for (unsigned bit = 0; bit < 8; bit += 7) {
			buf[i] ^= (uint8_t)(1u << bit);
			r = evd_rconf_verify(buf, len, pub, "train-7", 0, &got, why, sizeof(why));
			buf[i] ^= (uint8_t)(1u << bit);
			CHECK(r == -EKEYREJECTED || r == -EBADMSG, "byte %zu bit %u: %d", i, bit, r);
			CHECK(why[0], "byte %zu: no reason", i);
		}
	}
	/* and the bytes after the magic that stay well-formed: the signature says so */
	buf[8] ^= 1; /* version 5 -> 4 */
	expect(buf, len, pub, "train-7", 0, -EKEYREJECTED, "bad signature");
	buf[8] ^= 1;
	buf[len - 1] ^= 0x80; /* the signature itself */
	expect(buf, len, pub, "train-7", 0, -EKEYREJECTED, "bad signature");
	buf[len - 1] ^= 0x80;
	expect(buf, len, pub, "train-7", 0, 0, "");
	buf[0] = 'X';
	expect(buf, len, pub, "train-7", 0, -EBADMSG, "not a railmon configuration message");
	free(buf);
}

static void test_too_large(void)
{
	struct evd_rconf m, got;
	char why[EVD_RCONF_WHY_MAX] = "";
	size_t big = EVD_RCONF_MAX - 200, len;
	uint8_t *data = calloc(1, EVD_RCONF_MAX + 1), *buf;

	CHECK(data);
	sample(&m);
	m.files[1].data = data;
	m.files[1].len = big; /* with the board file and the rest: over */
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EMSGSIZE);
	/* just under: it goes */
	m.files[1].len = big - 400;
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == 0 && len <= EVD_RCONF_MAX);
	CHECK(evd_rconf_verify(buf, len, pub, "train-7", 0, &got, why, sizeof(why)) == 0, "%s", why);
	free(buf);
	/* the receiver refuses by length before reading anything */
	memcpy(data, "RMCONF01", 8);
	CHECK(evd_rconf_verify(data, EVD_RCONF_MAX + 1, pub, "train-7", 0, &got, why, sizeof(why)) == -EMSGSIZE);
	CHECK(strstr(why, "too large"), "%s", why);
	free(data);
}

/* Fields the encoder refuses, and messages with them made by hand
   (signed, so only the parser's checks stand between them and use). */
static void test_fields(void)
{
	static const char *bad_names[] = { "", "/etc/passwd", "../board.ini", "a/../../b", "a//b", "./x",
		                           "x/.", "a\\b", "tab\there", "dir/" };
	struct evd_rconf m, got;
	char why[EVD_RCONF_WHY_MAX];
	size_t len;
	uint8_t *buf;

	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		sample(&m);
		m.files[1].name = bad_names[i];
		CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL, "name '%s'", bad_names[i]);
	}
	sample(&m);
	m.files[1].name = "a..b/..c/x.dbc"; /* dots inside a name are fine */
	buf = encode(&m, secret, &len);
	CHECK(evd_rconf_verify(buf, len, pub, "train-7", 0, &got, why, sizeof(why)) == 0, "%s", why);
	CHECK_STR(got.files[1].name, "a..b/..c/x.dbc");
	/* a name made ".." after signing: refused by the parser (bytes "a..b" -> "../b"
	   keeps the length), whatever the signature */
	{
		uint8_t *p = memmem(buf, len, "a..b", 4);

		CHECK(p);
		memcpy(p, "../b", 4);
		CHECK(evd_rconf_parse(buf, len, &got, why, sizeof(why)) == -EBADMSG);
		CHECK(strstr(why, "not a relative path"), "%s", why);
	}
	free(buf);
	sample(&m);
	m.version = 0;
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL);
	sample(&m);
	strcpy(m.vehicle, "a/b");
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL);
	sample(&m);
	m.nfiles = 0;
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL);
	sample(&m);
	m.nfiles = EVD_RCONF_FILES_MAX + 1;
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL);
	sample(&m);
	m.files[0] = m.files[2]; /* the board file by hash: the vehicle could not check it */
	CHECK(evd_rconf_encode(&m, secret, &buf, &len) == -EINVAL);
	/* bad arguments */
	sample(&m);
	CHECK(evd_rconf_encode(NULL, secret, &buf, &len) == -EINVAL);
	CHECK(evd_rconf_encode(&m, NULL, &buf, &len) == -EINVAL);
	CHECK(evd_rconf_encode(&m, secret, NULL, &len) == -EINVAL);
	CHECK(evd_rconf_parse(NULL, 10, &got, why, sizeof(why)) == -EINVAL);
	CHECK(evd_rconf_parse("x", 1, NULL, why, sizeof(why)) == -EINVAL);
	CHECK(evd_rconf_verify(NULL, 10, pub, "v", 0, &got, why, sizeof(why)) == -EINVAL);
	CHECK(evd_rconf_verify("x", 1, NULL, "v", 0, &got, why, sizeof(why)) == -EINVAL);
	CHECK(evd_rconf_verify("x", 1, pub, NULL, 0, &got, why, sizeof(why)) == -EINVAL);
	CHECK(evd_rconf_verify("x", 1, pub, "v", 0, NULL, why, sizeof(why)) == -EINVAL);
	/* no reason buffer: still refused, nothing written */
	CHECK(evd_rconf_verify("x", 1, pub, "v", 0, &got, NULL, 0) == -EBADMSG);
}

/* A message python3-cryptography wrote from docs/remote-config.md alone
   (tests/evidence/rconf.py seed: key seed 32 bytes of 7): the C verifier
   takes it, fields as written there. */
static void test_python(const char *path)
{
	static uint8_t buf[4096];
	uint8_t seed[crypto_sign_SEEDBYTES], pk[EVD_PUBLIC_LEN], sk[EVD_SECRET_LEN], h[EVD_HASH_LEN];
	struct evd_rconf got;
	char why[EVD_RCONF_WHY_MAX] = "";
	FILE *f = fopen(path, "rb");
	size_t len;

	CHECK(f, "%s", path);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	memset(seed, 7, sizeof(seed));
	crypto_sign_seed_keypair(pk, sk, seed);
	CHECK(evd_rconf_verify(buf, len, pk, "train-7", 1, &got, why, sizeof(why)) == 0, "%s", why);
	CHECK(got.version == 2 && got.nfiles == 3);
	CHECK_STR(got.files[0].name, "board.ini");
	CHECK(got.files[0].len > 20 && !memcmp(got.files[0].data, "[board]\nvehicle = train-7\n", 26));
	CHECK_STR(got.files[1].name, "vehicle.dbc");
	CHECK(got.files[1].kind == EVD_RCONF_CONTENT && !memcmp(got.files[1].data, "VERSION", 7));
	evd_rconf_hash("<device/>", 9, h);
	CHECK(got.files[2].kind == EVD_RCONF_HASH && !memcmp(got.files[2].hash, h, EVD_HASH_LEN));
	/* and with our key it is a bad signature */
	CHECK(evd_rconf_verify(buf, len, pub, "train-7", 1, &got, why, sizeof(why)) == -EKEYREJECTED);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: test-rconf PYTHON-MADE-MESSAGE");
	CHECK(evd_init() == 0);
	crypto_sign_keypair(pub, secret);
	crypto_sign_keypair(other_pub, other_secret);
	test_good();
	test_refused();
	test_too_large();
	test_fields();
	test_python(argv[1]);
	return tlib_failures() ? 1 : 0;
}
