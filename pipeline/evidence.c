/* SPDX-License-Identifier: MIT */
/* evidence.c - the board's key (evidence.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "evidence.h"

int pl_evidence_key(const struct conf_board *cfg, uint8_t ret[EVD_SECRET_LEN], char *err, size_t errlen)
{
	int r;

	if (!cfg || !ret || !err)
		return -EINVAL;
	if (!cfg->key[0])
		return 0;
	r = evd_key_load_secret(cfg->key, ret);
	if (r == 0)
		return 1;
	snprintf(err, errlen, "%s:%d: key %s: %s", cfg->path, cfg->key_line, cfg->key,
	         r == -EPERM ? "readable or writable by others than its owner (chmod 600): not the vehicle's alone" :
	         r == -EBADMSG ? "not a railmon secret key (railmon keygen makes one)" : strerror(-r));
	return r;
}

int pl_evidence_config_pubkey(const struct conf_board *cfg, uint8_t ret[EVD_PUBLIC_LEN], char *err, size_t errlen)
{
	const struct conf_uplink *u;
	int r;

	if (!cfg || !ret || !err)
		return -EINVAL;
	u = &cfg->uplink;
	if (!u->config_pubkey[0])
		return 0;
	/* The ground's secret key on a vehicle would let whoever reads the
	   vehicle's disk sign boards for the whole fleet: refused, not used. */
	r = evd_key_is_secret(u->config_pubkey);
	if (r > 0)
		r = -EEXIST;
	else if (r == 0)
		r = evd_key_load_public(u->config_pubkey, ret);
	if (r == 0)
		return 1;
	snprintf(err, errlen, "%s:%d: config_pubkey %s: %s", cfg->path, u->config_pubkey_line, u->config_pubkey,
	         r == -EEXIST ? "a secret key: the vehicle needs only the ground's public key (ground.pub), "
	                        "the secret one stays on the ground" :
	         r == -EBADMSG ? "not a railmon public key (railmon keygen makes one)" : strerror(-r));
	return r;
}
