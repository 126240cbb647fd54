/* SPDX-License-Identifier: MIT */
/*
 * fuzz-rconf.c - libFuzzer target: the signed configuration message's
 * parser and verifier (evidence/remote-config.h), on the bytes a vehicle
 * takes from its config topic.  Input: the message.  It is verified with a
 * fixed key for vehicle "train-7" (a mutated message never verifies, so
 * what is reached is the parser, the signature call and the order of the
 * checks); what parses is encoded again and must parse to the same fields.
 * The seed (corpus/rconf) is a message made by tests/evidence/rconf.py seed.
 */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/remote-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t secret[EVD_SECRET_LEN];
	static uint8_t pub[EVD_PUBLIC_LEN];
	static int ready;
	static struct evd_rconf m, again;
	char why[EVD_RCONF_WHY_MAX];
	uint8_t *buf;
	size_t len;

	if (!ready) {
		/* a fixed seed: the key of tests/evidence/rconf.py (32 bytes of 7) */
		uint8_t seed[crypto_sign_SEEDBYTES];

		memset(seed, 7, sizeof(seed));
		if (sodium_init() < 0)
			abort();
		crypto_sign_seed_keypair(pub, secret, seed);
		ready = 1;
	}
	(void)evd_rconf_verify(data, size, pub, "train-7", 1, &m, why, sizeof(why));
	if (evd_rconf_parse(data, size, &m, why, sizeof(why)) < 0)
		return 0;
	if (m.nfiles < 1 || m.nfiles > EVD_RCONF_FILES_MAX || m.files[0].kind != EVD_RCONF_CONTENT)
		abort();
	for (size_t i = 0; i < m.nfiles; i++)
		if (m.files[i].kind == EVD_RCONF_CONTENT &&
		    (m.files[i].data < data || m.files[i].data + m.files[i].len > data + size))
			abort();
	if (evd_rconf_encode(&m, secret, &buf, &len) < 0)
		abort();
	if (len != size || evd_rconf_parse(buf, len, &again, why, sizeof(why)) < 0 || again.version != m.version ||
	    strcmp(again.vehicle, m.vehicle) || again.nfiles != m.nfiles)
		abort();
	/* the bytes before the signature are the input's: one encoding per message */
	if (memcmp(buf, data, size - EVD_RCONF_SIG_LEN))
		abort();
	free(buf);
	return 0;
}
