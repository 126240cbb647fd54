/* SPDX-License-Identifier: MIT */
/*
 * mqtt.h - connection settings shared by the forwarder and the receiver.
 */
#pragma once

#include <stdbool.h>

/*
 * TLS.  The broker is always verified against ca_file; insecure only turns
 * off the host name check (for brokers reached by IP in a depot) and must
 * come from an explicit board-file flag: the forwarder reports it in its
 * stats so the board logs it at every start.
 */
struct upl_tls_cfg {
	const char *ca_file;    /* required when TLS is used */
	const char *cert_file;  /* client certificate (device identity), optional */
	const char *key_file;   /* its private key; required with cert_file */
	bool insecure;          /* skip the host name check */
};
