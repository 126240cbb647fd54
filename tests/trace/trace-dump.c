/* SPDX-License-Identifier: MIT */
/*
 * trace-dump FILE [CHANNEL] - read a trace file through the trace driver
 * (bus_can_trace_ops, any format it knows) as fast as it goes and print
 * every item on stdout: "F t_ns id flags len hex" for a frame, "E code
 * detail arg" for an event, then "format NAME" and, if there was a bad
 * line, "bad TEXT" (bus_can_trace_first_bad), and for a BLF file with objects
 * that are no frame "skipped TEXT" (bus_can_trace_skipped).  CHANNEL: only that channel
 * (cfg.can.trace_channel).  A test helper for test-trace-interop.py and
 * the bad-input tests; exit 3 with the error on stderr if the driver
 * refuses the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus.h"
#include "bus/can-trace.h"
#include "trace/candump.h"
#include "trace/trace.h"

int main(int argc, char **argv)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	struct acq_item it[256];
	enum trace_format fmt = TRACE_UNKNOWN;
	bus_dev_t *dev = NULL;
	char bad[512];
	int n, r;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: trace-dump FILE [CHANNEL]\n");
		return 2;
	}
	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", argv[1]);
	cfg.can.trace_channel = argc == 3 ? (uint32_t)strtoul(argv[2], NULL, 10) : 0;
	r = bus_dev_new(&cfg, &dev);
	if (r < 0) {
		fprintf(stderr, "trace-dump: %s: %s%s%s\n", argv[1], strerror(-r),
		        r == -EMEDIUMTYPE ? "; tried " : "", r == -EMEDIUMTYPE ? TRACE_FORMATS : "");
		return 3;
	}
	while ((n = bus_dev_recv(dev, it, 256, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			if (it[i].kind == ACQ_ITEM_EVENT) {
				printf("E %u %u %lld\n", it[i].event.code, it[i].event.detail, (long long)it[i].event.arg);
				continue;
			}
			printf("F %lld %x %x %u ", (long long)it[i].t_ns, it[i].can.id, it[i].can.flags, it[i].can.len);
			for (unsigned k = 0; !(it[i].can.flags & ACQ_CAN_RTR) && k < it[i].can.len; k++)
				printf("%02x", it[i].can.data[k]);
			printf("\n");
		}
	}
	if (trace_format_detect_file(argv[1], &fmt) == 0)
		printf("format %s\n", trace_format_name(fmt));
	if (bus_can_trace_first_bad(dev, bad, sizeof(bad)) == 0)
		printf("bad %s\n", bad);
	if (bus_can_trace_skipped(dev, bad, sizeof(bad)) == 0)
		printf("skipped %s\n", bad);
	bus_dev_free(dev);
	if (n != -ENODATA) {
		fprintf(stderr, "trace-dump: %s: %s\n", argv[1], strerror(-n));
		return 1;
	}
	return 0;
}
