/* SPDX-License-Identifier: MIT */
/*
 * name.h - the one rule for a vehicle's name, wherever one is read: the
 * board file (conf/), the MQTT topics and Batches the ground receives
 * (uplink/recv-session.c, ground/: data, channels, status, gone), gap repair's
 * resend topic and the ground log directories.
 *
 * A vehicle name is 1 to BASIC_VEHICLE_NAME_MAX bytes of ASCII letters,
 * digits, '-', '_' and '.', and not "." or "..": it is one level of an
 * MQTT topic (railmon/<vehicle>/data, so no '/', '+' or '#'), a directory
 * name on the ground (recv --log DIR/<vehicle>/) and it is stored in every
 * log segment's header, which holds 59 bytes (storage/DESIGN.md).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define BASIC_VEHICLE_NAME_MAX 59 /* bytes, without the NUL: a segment header's room */

/* Does s (NUL-terminated; NULL is not) follow the rule? */
bool basic_vehicle_name_ok(const char *s);

/* The same for the n bytes at s (a topic level, not NUL-terminated). */
bool basic_vehicle_name_ok_n(const char *s, size_t n);

/*
 * The vehicle level of an MQTT topic "<prefix>/<vehicle>/<rest>" (the
 * second level) copied into out (size at least BASIC_VEHICLE_NAME_MAX + 1)
 * if it follows the rule: true, else false and out is "".
 */
bool basic_topic_vehicle(const char *topic, char *out, size_t size);
