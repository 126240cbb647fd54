/* SPDX-License-Identifier: MIT */
/* to-can.c - a trace sent onto a CAN interface (to-can.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "to-can.h"

int bus_can_iface_virtual(const char *ifname)
{
	char path[128], real[PATH_MAX];
	int type = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/type", ifname);
	f = fopen(path, "re");
	if (!f)
		return -ENODEV;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	if (type != 280) /* ARPHRD_CAN */
		return -ENOTTY;
	snprintf(path, sizeof(path), "/sys/class/net/%s", ifname);
	if (!realpath(path, real))
		return -errno;
	return strstr(real, "/devices/virtual/") != NULL;
}

void bus_to_can_cfgs(const char *trace, const char *ifname, double speed, struct bus_cfg *ret_in,
                     struct bus_cfg *ret_out)
{
	*ret_in = (struct bus_cfg){ .kind = BUS_KIND_CAN };
	*ret_out = (struct bus_cfg){ .kind = BUS_KIND_CAN };
	ret_in->can.driver = BUS_CAN_TRACE;
	snprintf(ret_in->can.device, sizeof(ret_in->can.device), "%s", trace);
	ret_in->can.trace_speed = speed;
	ret_out->can.driver = BUS_CAN_SOCKETCAN;
	snprintf(ret_out->can.ifname, sizeof(ret_out->can.ifname), "%s", ifname);
	ret_out->can.fd = true;
	ret_out->can.listen_only = false;
	ret_out->can.allow_normal_mode = true; /* the caller checked: virtual, or forced */
}

int bus_can_forward(bus_dev_t *src, bus_dev_t *dst, const volatile sig_atomic_t *stop, uint64_t *sent)
{
	struct acq_item items[64];
	int r;

	for (;;) {
		int n = bus_dev_recv(src, items, 64, 100);
		if (n == -ENODATA || *stop)
			return 0;
		r = n < 0 ? n : 0;
		for (int i = 0; i < n && r >= 0; i++) {
			if (items[i].kind != ACQ_ITEM_CAN)
				continue;
			/* a full TX queue is back-pressure, not an error */
			while ((r = bus_dev_send(dst, &items[i])) == -ENOBUFS && !*stop)
				usleep(200);
			if (r >= 0)
				(*sent)++;
		}
		if (r < 0)
			return r;
	}
}
