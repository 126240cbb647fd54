/* SPDX-License-Identifier: MIT */
/*
 * count-decodes.c - an LD_PRELOAD library for bench-ground-decodes.py:
 * counts the railmon.v1.Batch messages a process decodes (libprotobuf-c's
 * protobuf_c_message_unpack() for that descriptor; a railmon of any
 * version decodes a Batch through it) and appends "PID COUNT" to the file
 * DECODE_COUNT_FILE names when the process exits.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <protobuf-c/protobuf-c.h>

static atomic_ulong n;
ProtobufCMessage *protobuf_c_message_unpack(const ProtobufCMessageDescriptor *d, ProtobufCAllocator *a,
                                            size_t len, const uint8_t *data)
{
	static ProtobufCMessage *(*real)(const ProtobufCMessageDescriptor *, ProtobufCAllocator *, size_t,
	                                 const uint8_t *);
	if (!real)
		real = dlsym(RTLD_NEXT, "protobuf_c_message_unpack");
	if (d && d->name && !strcmp(d->name, "railmon.v1.Batch"))
		atomic_fetch_add(&n, 1);
	return real(d, a, len, data);
}

__attribute__((destructor)) static void report(void)
{
	const char *f = getenv("DECODE_COUNT_FILE");
	FILE *o;
	if (!f || !n || !(o = fopen(f, "a")))
		return;
	fprintf(o, "%d %lu\n", (int)getpid(), (unsigned long)n);
	fclose(o);
}
