/* SPDX-License-Identifier: MIT */
/* fuzz-can-link.c - libFuzzer target for the rtnetlink link-reply parser
   the SocketCAN driver uses to tell vcan from a real controller. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus/can-link.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A heap copy of exactly size bytes: ASan flags any read past it. */
	void *buf = malloc(size ? size : 1);
	struct bus_can_linkinfo info;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (bus_can_link_parse(buf, size, &info) == 0 &&
	    strnlen(info.kind, sizeof(info.kind)) == sizeof(info.kind))
		abort(); /* kind must always be NUL-terminated on success */
	free(buf);
	return 0;
}
