/* SPDX-License-Identifier: MIT */
/*
 * hash.h - FNV-1a, 64 bits, one copy for the tree: the receiver's table
 * of vehicles, the board file's names, the ground ledger's digest of a
 * Batch's records (that one is stored: its values must never change).
 * Not a defence against a chosen input; a cheap, well-spread hash.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a 64-bit offset basis: the h of nothing hashed yet. */
#define BASIC_FNV1A_SEED UINT64_C(0xcbf29ce484222325)

/* h with the n bytes at p hashed in (p may be NULL when n is 0):
   basic_fnv1a(BASIC_FNV1A_SEED, "a", 1) == 0xaf63dc4c8601ec8c. */
uint64_t basic_fnv1a(uint64_t h, const void *p, size_t n);

/* The NUL-terminated s from the seed (its bytes, not the NUL). */
uint64_t basic_fnv1a_str(const char *s);
