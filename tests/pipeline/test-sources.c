/* SPDX-License-Identifier: MIT */
/*
 * test-sources.c - pipeline/sources.c builds each bus's source from the
 * board: the [board] key rx_coalesce_us is the coalescing window of a live
 * bus's RX thread (an slcan bus, absent and opened as gone: socketcan
 * takes the same path but needs AF_CAN, and a TRDP bus on loopback), while a paced trace keeps its own
 * 1 ms and a Modbus bus (polled) never waits.  Read from the sources the
 * pipeline opened (acq_source_coalesce_ns), not from the clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "pipeline/sources.h"
#include "tlib.h"

#define MS_NS (1000 * 1000)

enum { SLCAN, TRDP, PACED, MODBUS, NBUSES };

/* A UDP port free on loopback now, for the TRDP bus's PD socket (0
   there means no PD socket). */
static unsigned free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && close(fd) == 0);
	return ntohs(sa.sin_port);
}

/* The board, with "rx_coalesce_us = <key>" unless key is NULL; the
   coalescing window of each of its buses' sources. */
static void windows(const char *trace, const char *key, int64_t ret[NBUSES])
{
	char text[1024], err[CONF_ERR_MAX] = "", line[64] = "";
	struct pl_sources_opts opts = { .absent_ok = true, .seed = 1 };
	struct conf_board *cfg;
	pl_sources_t *s;

	if (key)
		snprintf(line, sizeof(line), "rx_coalesce_us = %s\n", key);
	snprintf(text, sizeof(text),
	         "[board]\nvehicle = a\n%s"
	         "[can sl]\ndriver = slcan\ndevice = /nonexistent/railmon-test-tty\n"
	         "[trdp ecn]\nbind = 127.0.0.1\npd_port = %u\nmd_port = 0\n"
	         "[can paced]\ndriver = trace\ndevice = %s\nspeed = 1\n"
	         "[modbus m]\nhost = 127.0.0.1\nport = 1\n[channel c]\nbus = m\naddress = 1\n",
	         line, free_port(), trace);
	CHECK(conf_parse("t.ini", text, &cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(cfg->nbuses == NBUSES);
	CHECK(pl_sources_new(cfg, &opts, &s, err, sizeof(err)) == 0, "%s", err);
	for (size_t b = 0; b < NBUSES; b++) {
		CHECK(pl_sources_source(s, b) != NULL);
		ret[b] = acq_source_coalesce_ns(pl_sources_source(s, b));
	}
	pl_sources_free(s);
	conf_free(cfg);
}

int main(void)
{
	char trace[] = "/tmp/railmon-test-sources-XXXXXX";
	int fd = mkstemp(trace);
	int64_t w[NBUSES];
	static const char frames[] = "(1700000000.000000) can0 123#11\n(1700000000.001000) can0 123#22\n";

	CHECK(fd >= 0 && write(fd, frames, sizeof(frames) - 1) == (ssize_t)(sizeof(frames) - 1) && close(fd) == 0);

	/* No key: the 1 ms live buses always waited. */
	windows(trace, NULL, w);
	CHECK(w[SLCAN] == MS_NS && w[TRDP] == MS_NS, "%lld %lld", (long long)w[SLCAN], (long long)w[TRDP]);
	CHECK(w[PACED] == MS_NS && w[MODBUS] == 0);
	printf("default: live buses 1 ms, paced trace 1 ms, Modbus none\n");

	/* 0: every live bus reads at once after each wakeup; the paced
	   trace keeps its 1 ms, Modbus still never waits. */
	windows(trace, "0", w);
	CHECK(w[SLCAN] == 0 && w[TRDP] == 0, "%lld %lld", (long long)w[SLCAN], (long long)w[TRDP]);
	CHECK(w[PACED] == MS_NS && w[MODBUS] == 0, "%lld %lld", (long long)w[PACED], (long long)w[MODBUS]);
	printf("rx_coalesce_us = 0: live buses none, paced trace 1 ms, Modbus none\n");

	/* 2000 us: 2,000,000 ns on the live buses only. */
	windows(trace, "2000", w);
	CHECK(w[SLCAN] == 2 * MS_NS && w[TRDP] == 2 * MS_NS, "%lld %lld", (long long)w[SLCAN],
	      (long long)w[TRDP]);
	CHECK(w[PACED] == MS_NS && w[MODBUS] == 0, "%lld %lld", (long long)w[PACED], (long long)w[MODBUS]);
	printf("rx_coalesce_us = 2000: live buses 2 ms, paced trace 1 ms, Modbus none\n");

	/* The bound: the source itself takes 100 ms (its stop poll). */
	windows(trace, "100000", w);
	CHECK(w[SLCAN] == 100 * MS_NS && w[TRDP] == 100 * MS_NS);
	printf("rx_coalesce_us = 100000: the source takes its longest window\n");

	unlink(trace);
	printf("test-sources: ok\n");
	return 0;
}
