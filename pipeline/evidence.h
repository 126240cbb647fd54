/* SPDX-License-Identifier: MIT */
/*
 * evidence.h - the board's side of the evidence chain: its key, as `run`
 * and `check` read it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/config.h"
#include "evidence/evd.h"

/*
 * The board's secret key ([board] key).  1 and *ret_secret when it has
 * one, 0 when it has none (seals unsigned), -errno with err set
 * ("FILE:LINE: key PATH: why") when it names a key that cannot be used.
 */
int pl_evidence_key(const struct conf_board *cfg, uint8_t ret_secret[EVD_SECRET_LEN], char *err, size_t errlen);

/*
 * The ground's public key remote configuration is checked with ([uplink]
 * config_pubkey, issue 32).  1 and *ret_public when the board names one,
 * 0 when it names none (no remote configuration taken), -errno with err
 * set ("FILE:LINE: config_pubkey PATH: why") when it cannot be used,
 * including a secret key file (-EEXIST: that stays on the ground).
 */
int pl_evidence_config_pubkey(const struct conf_board *cfg, uint8_t ret_public[EVD_PUBLIC_LEN], char *err,
                              size_t errlen);
