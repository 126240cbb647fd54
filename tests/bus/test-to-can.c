/* SPDX-License-Identifier: MIT */
/*
 * test-to-can.c - `replay --to-can`'s parts on the host (bus/to-can.h):
 * which interfaces count as virtual, the two devices' configurations, and
 * the copy loop's stop and error paths from a real trace source.  The
 * frames reaching a vcan interface are tests/vm/test-run-vcan.sh's (the
 * host kernel has no CAN).
 *
 * Usage: test-to-can SOURCE_ROOT (for cli/demo/train.log).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bus/to-can.h"
#include "tlib.h"

static void test_iface(void)
{
	CHECK(bus_can_iface_virtual("nosuch-can9") == -ENODEV);
	/* an interface that is there but no CAN (loopback: ARPHRD_LOOPBACK) */
	CHECK(bus_can_iface_virtual("lo") == -ENOTTY);
}

static void test_cfgs(void)
{
	struct bus_cfg in, out;

	memset(&in, 0xa5, sizeof(in));
	memset(&out, 0xa5, sizeof(out));
	bus_to_can_cfgs("t.log", "vcan1", 2.5, &in, &out);
	CHECK(in.kind == BUS_KIND_CAN && in.can.driver == BUS_CAN_TRACE && !strcmp(in.can.device, "t.log"));
	CHECK(in.can.trace_speed == 2.5 && in.can.nfilters == 0 && !in.can.dbc[0]);
	CHECK(out.kind == BUS_KIND_CAN && out.can.driver == BUS_CAN_SOCKETCAN && !strcmp(out.can.ifname, "vcan1"));
	CHECK(out.can.fd && !out.can.listen_only && out.can.allow_normal_mode && out.can.nfilters == 0);
}

/* A trace device cannot send: the loop stops at the first frame with the
   driver's error and nothing counted; a stop already asked for ends it at
   once. */
static void test_forward(const char *src)
{
	struct bus_cfg in, out;
	bus_dev_t *a, *b;
	volatile sig_atomic_t stop = 0;
	uint64_t sent = 7;
	char trace[512];
	int r;

	snprintf(trace, sizeof(trace), "%s/cli/demo/train.log", src);
	bus_to_can_cfgs(trace, "unused", 0, &in, &out);
	CHECK(bus_dev_new(&in, &a) == 0 && bus_dev_new(&in, &b) == 0);
	r = bus_can_forward(a, b, &stop, &sent);
	CHECK(r < 0 && r != -ENODATA && sent == 7, "%d (%s), %llu sent", r, strerror(-r), (unsigned long long)sent);
	stop = 1;
	CHECK(bus_can_forward(a, b, &stop, &sent) == 0 && sent == 7);
	bus_dev_free(a);
	bus_dev_free(b);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2, "usage: test-to-can SOURCE_ROOT");
	test_iface();
	test_cfgs();
	test_forward(argv[1]);
	return 0;
}
