/* SPDX-License-Identifier: MIT */
/*
 * publish.h - one message to the broker and back: connect, publish at QoS 1,
 * wait for the broker's PUBACK, disconnect.  For the ground's commands that
 * send a vehicle something (`railmon config push`'s signed board file,
 * retained).  Blocking; nothing here logs: a failure is -errno with plain
 * words in the caller's buffer.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mqtt.h"

struct upl_pub_cfg {
	const char *host;         /* required */
	int port;                 /* 1..65535 */
	const char *client_id;    /* NULL: the library makes one (clean session) */
	bool use_tls;
	struct upl_tls_cfg tls;
	const char *username;     /* optional */
	const char *password;
	unsigned timeout_ms;      /* for the whole exchange; 0 = 15000 */
};

/*
 * Publish len bytes at topic, QoS 1, retained or not, and return once the
 * broker acknowledged it.  0; -EINVAL (cfg, topic); -ETIMEDOUT (no TCP
 * connection, no CONNACK or no PUBACK within the timeout: the connect is
 * asynchronous, so a SYN nobody answers does not hold it longer); -EACCES (the broker refused the login);
 * -ECONNREFUSED; -EMSGSIZE (the broker's or MQTT's size limit); other
 * -errno from the connection.  why (may be NULL) says it in words.
 */
int upl_publish_once(const struct upl_pub_cfg *cfg, const char *topic, const void *payload, size_t len,
                     bool retain, char *why, size_t whylen);
