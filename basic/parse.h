/* SPDX-License-Identifier: MIT */
/*
 * parse.h - numbers, sizes and durations as people write them, and back:
 * one copy for the board file and the command line.
 *
 * Every parser takes the whole string (no leading blanks, nothing left
 * over), writes *ret only on success and returns 0, -EINVAL (not that
 * kind of value) or -ERANGE (the kind, but too large or outside the
 * bounds asked for).  None allocates; all are thread-safe.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest text the formatters below write, with the NUL. */
#define BASIC_SIZE_TEXT_MAX 32

/*
 * An unsigned integer in [min, max]: decimal, 0x hex or, as C writes them,
 * 0-prefixed octal ("010" is 8).  A sign is refused ("-1" is not 2^64-1).
 */
int basic_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* A signed integer in [min, max], in the same bases. */
int basic_parse_i64(const char *s, int64_t min, int64_t max, int64_t *ret);

/* A finite number ("0.1", "-3", "1e3"); nan and inf are refused. */
int basic_parse_double(const char *s, double *ret);

/* true/yes/on/1 or false/no/off/0, in any case. */
int basic_parse_bool(const char *s, bool *ret);

/*
 * A byte count: decimal digits with an optional unit in powers of 1024,
 * K, M, G or T in any case, optionally followed by i and/or B ("64K",
 * "16M", "2GiB", "512kb").  A bare number is bytes ("65536").
 */
int basic_parse_size(const char *s, uint64_t *ret_bytes);

/* A duration in whole seconds: "30" or "30s", "15m", "12h", "30d". */
int basic_parse_duration(const char *s, uint64_t *ret_seconds);

/* The longest --duration basic_parse_seconds() takes: its nanoseconds fit
   an int64 with room to add it to a monotonic clock reading (~31 years). */
#define BASIC_SECONDS_MAX 1e9

/*
 * A number of seconds >= 0 with an optional fraction ("2", "0.5"), for
 * command-line options.  Values above BASIC_SECONDS_MAX, nan and inf are
 * -ERANGE: callers turn seconds into int64 nanoseconds.
 */
int basic_parse_seconds(const char *s, double *ret_seconds);

/*
 * bytes the way basic_parse_size() reads them: "16M", "2G", "1023 bytes",
 * or one decimal when not a whole number of units ("7.9G").  Writes at
 * most len bytes (BASIC_SIZE_TEXT_MAX is always enough); returns buf.
 */
char *basic_format_size(uint64_t bytes, char *buf, size_t len);

/* seconds the way basic_parse_duration() reads them, in the largest unit
   that divides them: "30d", "12h", "90s", "0".  Returns buf. */
char *basic_format_duration(uint64_t seconds, char *buf, size_t len);

/*
 * An MQTT broker's address, "mqtt://host[:port]" or "mqtts://host[:port]"
 * (no scheme: mqtt://; blanks after the colon are skipped), as the board
 * file's broker and recv --broker take it.  Writes the host (NUL-terminated) and *ret_tls, and *ret_port: the
 * port given, or 0 when none was (the caller's default: 1883, or 8883 with
 * TLS).  0; -EPROTONOSUPPORT: another scheme; -ERANGE: a port that is no
 * number in 1..65535; -EINVAL: no host, or one of host_len bytes or more.
 */
int basic_parse_mqtt_url(const char *url, char *host, size_t host_len, uint16_t *ret_port, bool *ret_tls);
