/* SPDX-License-Identifier: MIT */
/*
 * shortest.h - a double as the fewest digits that read back as it, without
 * printf: export's number path (record/format.c rec_format_double).
 */
#pragma once

/* Room for anything basic_shortest_g() writes, NUL included
   ("-1.2345678901234567e-308"). */
#define BASIC_SHORTEST_MAX 32

/*
 * v exactly as printf("%.*g", p, v) writes it for the least p of 15, 16, 17
 * whose text reads back (strtod) as v: the shortest round trip of a normal
 * double, never fewer than 15 significant digits (DBL_DIG, so it is also
 * %.15g's text whenever that one round-trips), trailing zeros dropped as %g
 * drops them, the exponent form as %g chooses it ("1e+15", "1.5e-05").
 * Exact integer arithmetic on v's binary value (unsigned __int128): no
 * printf, no strtod, no rounding-mode dependence.  Zero is "0" or "-0".
 * Returns the length written into buf (NUL-terminated), or -ERANGE when v
 * is outside what it computes (not finite, subnormal, |v| below ~1e-15 or
 * above ~1e22, no __int128 on this target, e.g. armhf): the caller then
 * takes the printf path, which writes the same text more slowly.
 */
int basic_shortest_g(double v, char buf[BASIC_SHORTEST_MAX]);
