/* SPDX-License-Identifier: MIT */
/* keygen-say.c - the vehicle's key pair made and said (keygen-say.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "evidence/evd.h"
#include "cli/keygen-say.h"

int cli_keygen(FILE *out, FILE *err, const char *secret, const char *pub)
{
	char id[17];
	uint8_t pk[EVD_PUBLIC_LEN];
	int r = evd_key_generate(secret, pub);

	if (r < 0) {
		fprintf(err, "railmon keygen: %s: %s\n", r == -EEXIST ? "a key file exists (never overwritten)" : secret,
		        r == -EEXIST ? "remove it first, or choose another name" : strerror(-r));
		return 1;
	}
	r = evd_key_load_public(pub, pk);
	if (r < 0) {
		fprintf(err, "railmon keygen: %s: %s\n", pub, strerror(-r));
		return 1;
	}
	fprintf(out, "secret key %s (0600): name it in the board file, [board] key = %s\n", secret, secret);
	fprintf(out, "public key %s, key id %s: give it to the ground and to investigators\n", pub,
	        evd_key_id(pk, id));
	return 0;
}
