/* SPDX-License-Identifier: MIT */
/*
 * mqtt-private.h - libmosquitto glue used by forward.c and recv.c only.
 * MOSQ_ERR_* codes stop here: everything above sees -errno.
 */
#pragma once

#include <mosquitto.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqtt.h"

/* mosquitto_lib_init() once per process, thread-safe. */
void upl_mqtt_lib_init(void);

/* MOSQ_ERR_* (with errno for MOSQ_ERR_ERRNO) -> -errno. */
int upl_mqtt_errno(int mosq_rc);

/*
 * Plain words for a failed libmosquitto call, into buf: mosq_rc with the
 * errno it left behind (the system error for MOSQ_ERR_ERRNO, getaddrinfo's
 * code for MOSQ_ERR_EAI) and the last error libmosquitto logged (OpenSSL's
 * reason for MOSQ_ERR_TLS; NULL or "" if none).
 */
void upl_mqtt_describe(int mosq_rc, int sys_errno, const char *logged, char *buf, size_t len);

/* Whether mosq's TCP connection is established (its socket has a peer):
   a timeout before the CONNACK said as "nothing accepted the connection"
   or "accepted and did not answer". */
bool upl_mqtt_tcp_connected(struct mosquitto *mosq);

/* A CONNACK refusal (rc > 0) as -errno: -EACCES for bad credentials or not
   authorised, -ECONNREFUSED for the rest. */
int upl_mqtt_connack_errno(int connack_rc);

/* Check a TLS configuration without touching files: 0 or -EINVAL. */
int upl_mqtt_tls_check(const struct upl_tls_cfg *tls);

/* Apply TLS (verify peer, TLS >= 1.2) to a fresh client.  0 or -errno. */
int upl_mqtt_tls_apply(struct mosquitto *mosq, const struct upl_tls_cfg *tls);

/* strdup(s), NULL for NULL; clears *ok when out of memory (so a run of
   copies is checked once). */
char *upl_strdup_opt(const char *s, bool *ok);

/* Whether the vehicle level of railmon/<vehicle>/<kind> names vehicle
   (topic NULL: not checked). */
bool upl_topic_vehicle_matches(const char *topic, const char *vehicle);
