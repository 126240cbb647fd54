/* SPDX-License-Identifier: MIT */
/*
 * timeparse.h - the option values the reading commands share (export,
 * summary): points in time and durations in ns.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * A point in time -> ns since the epoch:
 *   2026-12-03T07:00:00Z, 2026-12-03T08:00:00+01:00 (any offset, also
 *   +0100), 2026-12-03 07:00:00 or 2026-12-03T07:00:00 (no zone: local
 *   time, as TZ says), each with an optional fraction (.123456789), or
 *   Unix seconds (1764748800.5).
 * 0 or -EINVAL.
 */
int basic_parse_time(const char *s, int64_t *ret_ns);

/* A duration > 0 with a unit: 100ms, 2s, 1.5s, 250us, 1min -> ns.  0 or
   -EINVAL. */
int basic_parse_duration_ns(const char *s, int64_t *ret_ns);
