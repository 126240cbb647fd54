/* SPDX-License-Identifier: MIT */
/*
 * peer.h - start and stop the real Modbus peers the tests talk to
 * (mb-fault-server, pymodbus-server.py) on tests/lib/tlib.h's peers,
 * without sleeps: a peer is ready when it has printed its READY line, and
 * stops when its stdin is closed, reporting the function codes it saw on
 * the way out; every wait is bounded.  Test helper, header-only; may print.
 */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tlib.h"

#define PEER_WAIT_MS 15000

struct peer {
	struct tlib_peer t;
	int port;           /* from "READY <port>" */
};

/* Start a Modbus peer and wait for its READY line; aborts if it never comes. */
static inline void peer_start(struct peer *p, char *const argv[])
{
	char line[256];

	CHECK(tlib_peer_start(&p->t, argv, TLIB_PEER_STDIN | TLIB_PEER_STDOUT) == 0);
	if (tlib_peer_readline(&p->t, line, sizeof(line), PEER_WAIT_MS) < 0 || strncmp(line, "READY", 5)) {
		fprintf(stderr, "peer %s did not get ready\n", argv[0]);
		kill(p->t.pid, SIGKILL);
		abort();
	}
	p->port = atoi(line + 5);
}

/*
 * Stop a peer: close its stdin, collect "FC <code> <count>" lines into
 * fc_count (may be NULL) until EOF, reap it.  Returns its exit status.
 */
static inline int peer_stop(struct peer *p, uint64_t fc_count[256])
{
	char line[256];
	int status;

	close(p->t.in_fd);
	p->t.in_fd = -1;
	while (tlib_peer_readline(&p->t, line, sizeof(line), PEER_WAIT_MS) == 0) {
		unsigned fc;
		unsigned long long n;

		if (fc_count && sscanf(line, "FC %u %llu", &fc, &n) == 2 && fc < 256)
			fc_count[fc] += n;
	}
	status = tlib_peer_finish(&p->t, PEER_WAIT_MS);
	if (status == -ETIMEDOUT) {
		fprintf(stderr, "peer %d did not stop\n", (int)p->t.pid);
		abort();
	}
	return status;
}
