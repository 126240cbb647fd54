/* SPDX-License-Identifier: MIT */
/*
 * trdp-listen - the TRDP bus driver alone, for tests/trdp/test-trdp-bus.py:
 * opens a [trdp] bus from its arguments, prints "ready" once its sockets
 * are open, then every item it receives as export writes it (JSON lines),
 * until COUNT telegrams came or no item came for IDLE_MS, and last its
 * counters as one JSON line ("stats").  Each telegram's bytes are given
 * back to the driver's own byte ring once printed, as the sink does.
 *
 * trdp-listen PD_PORT MD_PORT COUNT IDLE_MS [IFNAME [GROUP...]]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bus/bus.h"
#include "record/format.h"
#include "tlib.h"

int main(int argc, char **argv)
{
	CHECK(argc >= 5, "usage: trdp-listen PD_PORT MD_PORT COUNT IDLE_MS [IFNAME [GROUP...]]");
	struct bus_cfg cfg = { .kind = BUS_KIND_TRDP, .index = 2 };
	strcpy(cfg.name, "ecn");
	cfg.trdp.pd_port = (uint16_t)atoi(argv[1]);
	cfg.trdp.md_port = (uint16_t)atoi(argv[2]);
	long want = atol(argv[3]);
	int idle_ms = atoi(argv[4]);
	if (argc > 5)
		snprintf(cfg.trdp.ifname, sizeof(cfg.trdp.ifname), "%s", argv[5]);
	for (int i = 6; i < argc; i++) {
		struct in_addr a;
		CHECK(inet_pton(AF_INET, argv[i], &a) == 1 && cfg.trdp.ngroups < BUS_TRDP_GROUPS_MAX);
		cfg.trdp.groups[cfg.trdp.ngroups++] = ntohl(a.s_addr);
	}
	/* a small ring, so the bursts wrap around it many times */
	cfg.trdp.bytes_size = 256 * 1024;
	bus_dev_t *dev = NULL;
	int r = bus_dev_new(&cfg, &dev);
	CHECK(r == 0, "bus_dev_new: %s", strerror(-r));
	printf("ready\n");
	fflush(stdout);
	rec_writer_t *w = NULL;
	CHECK(rec_writer_new(stdout, REC_FORMAT_JSONL, &w) == 0);
	struct acq_item items[96];
	long got = 0;
	int64_t last_ms = 0; /* when an item came last */
	while (got < want) {
		int n = bus_dev_recv(dev, items, 96, idle_ms);
		if (n == -ENODEV) {
			printf("{\"gone\":%d}\n", bus_dev_gone_cause(dev));
			break;
		}
		CHECK(n >= 0, "recv: %s", strerror(-n));
		/* 0 items is not idle by itself: a wakeup may only accept a
		   TCP connection or read part of a message */
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		if (n > 0 || !last_ms)
			last_ms = now_ms;
		if (n == 0 && now_ms - last_ms >= idle_ms)
			break;
		for (int i = 0; i < n; i++) {
			CHECK(rec_writer_item(w, &items[i], NULL, NULL) == 0);
			if (items[i].kind == ACQ_ITEM_TRDP) {
				got++;
				CHECK(bus_dev_trdp_release(dev, &items[i]) == 0);
			}
		}
		CHECK(rec_writer_flush(w) == 0);
		fflush(stdout);
	}
	rec_writer_free(w);
	struct bus_trdp_stats st;
	struct bus_stats bs;
	CHECK(bus_dev_trdp_stats(dev, &st) == 0 && bus_dev_stats(dev, &bs) == 0);
	printf("{\"stats\":{\"telegrams\":%" PRIu64 ",\"ok\":%" PRIu64 ",\"bad_fcs\":%" PRIu64
	       ",\"gaps\":%" PRIu64 ",\"repeats\":%" PRIu64 ",\"back\":%" PRIu64 ",\"topology\":%" PRIu64
	       ",\"bytes_drops\":%" PRIu64 ",\"rx_dropped\":%" PRIu64 ",\"bad_input\":%" PRIu64
	       ",\"tcp_accepted\":%" PRIu64 ",\"tcp_refused\":%" PRIu64 ",\"tcp_closed\":%" PRIu64
	       ",\"tcp_bad_header\":%" PRIu64 ",\"tcp_cut\":%" PRIu64 ",\"tcp_messages\":%" PRIu64
	       ",\"rx_errors\":%" PRIu64 ",\"tcp_listen_error\":%d}}\n",
	       st.telegrams, st.refused[0], st.refused[2], st.seq_gaps, st.seq_repeats, st.seq_back,
	       st.topology_changes, st.bytes_drops, bs.rx_dropped, bs.bad_input, st.tcp_accepted, st.tcp_refused,
	       st.tcp_closed, st.tcp_bad_header, st.tcp_cut, st.tcp_messages, bs.rx_errors, st.tcp_listen_error);
	/* bad arguments */
	CHECK(bus_dev_trdp_stats(NULL, &st) == -EINVAL);
	CHECK(bus_dev_trdp_release(dev, NULL) == -EINVAL);
	bus_dev_free(dev);
	return 0;
}
