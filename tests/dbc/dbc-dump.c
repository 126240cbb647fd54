/* SPDX-License-Identifier: MIT */
/*
 * dbc-dump [-s] DBC LOG - decode every frame of a candump log and print one
 * line per sample: "<line> <message>.<signal> <value %.17g> <quality> <label|->",
 * and each warning of the DBC's load on stderr ("warning: file:line: ...").
 * -s loads strictly (DBC_STRICT).  A test helper: test-dbc-ref.py
 * and test-dbc-corpus.py compare its output with an independent Python
 * decoder.  Exit 1 with "file:line: ..." on a bad DBC or log line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/candump.h"
#include "dbc/dbc.h"

static int dump_frame(const dbc_t *dbc, const struct acq_item *f, unsigned long lineno, struct acq_item *out)
{
	int n = dbc_decode(dbc, f, 0, out, dbc_decode_max(dbc));

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		struct dbc_signal_info info;
		const char *label = "-";

		if (dbc_signal_info(dbc, out[i].sample.channel, &info) < 0)
			return -EIO;
		(void)dbc_value_label(dbc, info.index, out[i].sample.value, &label);
		printf("%lu %s.%s %.17g %u %s\n", lineno, info.message, info.name, out[i].sample.value,
		       out[i].sample.quality, label);
	}
	return 0;
}

int main(int argc, char **argv)
{
	char err[512], line[TRACE_CANDUMP_LINE_MAX + 2];
	struct acq_item *out;
	dbc_t *dbc = NULL;
	unsigned long lineno = 0;
	FILE *f;
	int r;

	unsigned flags = 0;

	if (argc == 4 && strcmp(argv[1], "-s") == 0) {
		flags = DBC_STRICT;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: dbc-dump [-s] DBC LOG\n");
		return 2;
	}
	r = dbc_load_flags(argv[1], flags, &dbc, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	for (unsigned i = 0; i < dbc_warning_count(dbc); i++)
		fprintf(stderr, "warning: %s\n", dbc_warning(dbc, i));
	f = fopen(argv[2], "re");
	if (!f) {
		fprintf(stderr, "%s: %s\n", argv[2], strerror(errno));
		dbc_free(dbc);
		return 1;
	}
	/* room for every sample of the largest message */
	out = calloc(dbc_decode_max(dbc) + 1, sizeof(*out));
	while (out && fgets(line, sizeof(line), f)) {
		struct acq_item it;

		lineno++;
		if (trace_candump_parse(line, strlen(line), &it, NULL, 0) < 0 || dump_frame(dbc, &it, lineno, out) < 0) {
			fprintf(stderr, "%s:%lu: bad frame\n", argv[2], lineno);
			r = -1;
			break;
		}
	}
	fclose(f);
	if (!out) {
		fprintf(stderr, "dbc-dump: out of memory\n");
		r = -1;
	}
	free(out);
	dbc_free(dbc);
	return r < 0 ? 1 : 0;
}
