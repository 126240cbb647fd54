/* SPDX-License-Identifier: MIT */
/*
 * keygen-say.h - `railmon keygen`: the vehicle's Ed25519 key pair made
 * (evidence/evd.h) and what to do with each half said.
 */
#pragma once

#include <stdio.h>

/* The secret key into the file secret (0600), the public key into pub,
   neither overwritten; where each goes (the board file, the ground) on
   out, why not on err.  The exit code: 0, or 1. */
int cli_keygen(FILE *out, FILE *err, const char *secret, const char *pub);
