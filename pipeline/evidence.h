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
