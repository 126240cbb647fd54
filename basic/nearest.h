/* SPDX-License-Identifier: MIT */
/*
 * nearest.h - the nearest names to a name that is not there, for "unknown
 * channel X; nearest: ..." (export, summary).
 */
#pragma once

#include <stddef.h>

/* Up to 5 of names[0..n) closest to want (edit distance, case folded,
   at most half want's length away from the whole name, its message part
   or its signal part (the parts around the last '.'), a swap of two
   neighbours one step; or containing it), nearest first, comma separated
   in buf ("" if none). */
void basic_nearest_names(const char *want, const char *const *names, size_t n, char *buf, size_t len);
