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
