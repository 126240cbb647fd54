/* SPDX-License-Identifier: MIT */
/*
 * candump-rt IN OUT - read a candump log with trace_candump_parse, write it
 * back with trace_candump_format (what `railmon export --format candump`
 * does), and print every frame as "t_ns iface id flags len hex" on stdout.
 * A test helper for test-candump-interop.py.  Exit 1 naming file:line on
 * the first malformed line.
 */
#include <stdio.h>
#include <string.h>

#include "trace/candump.h"
#include "record/format.h"

static void dump(const struct acq_item *it, const char *ifname)
{
	printf("%lld %s %x %x %u ", (long long)it->t_ns, ifname, it->can.id, it->can.flags, it->can.len);
	for (unsigned i = 0; !(it->can.flags & ACQ_CAN_RTR) && i < it->can.len; i++)
		printf("%02x", it->can.data[i]);
	printf("\n");
}

int main(int argc, char **argv)
{
	char line[TRACE_CANDUMP_LINE_MAX + 2], out[TRACE_CANDUMP_LINE_MAX + 16], ifname[32];
	unsigned long lineno = 0;
	FILE *in, *o;
	int r = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: candump-rt IN OUT\n");
		return 2;
	}
	in = fopen(argv[1], "re");
	o = fopen(argv[2], "we");
	if (!in || !o) {
		perror("candump-rt");
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		struct acq_item it;
		int n;

		lineno++;
		if (trace_candump_parse(line, strlen(line), &it, ifname, sizeof(ifname)) < 0) {
			fprintf(stderr, "%s:%lu: malformed candump line\n", argv[1], lineno);
			r = 1;
			break;
		}
		dump(&it, ifname);
		n = trace_candump_format(&it, ifname, out, sizeof(out));
		if (n < 0 || fputs(out, o) < 0) {
			fprintf(stderr, "%s:%lu: cannot format\n", argv[1], lineno);
			r = 1;
			break;
		}
	}
	fclose(in);
	if (fclose(o) != 0)
		r = 1;
	return r;
}
