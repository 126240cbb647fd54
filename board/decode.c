/* SPDX-License-Identifier: MIT */
/*
 * decode.c - `railmon decode --dbc FILE < candump.log`: every frame of a
 * candump log decoded with a DBC, no board file, like `cantools decode`:
 * the frame, then its message and signals (value, unit, value-table
 * label) on one line; or, with --format csv/jsonl, the frame and its
 * samples as rows of export's schema.  Lines that are not candump lines
 * are said with their line number and counted; the exit status is 1 if
 * any was.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bus/candump.h"
#include "bus/dbc.h"
#include "record/format.h"

#define DECODE_BAD_SAID 10 /* bad lines said one by one, then only counted */

static const char decode_usage[] =
	"Usage: railmon decode --dbc FILE [OPTIONS] < candump.log\n"
	"Decode a candump log (candump -l / -L lines) with a DBC, no board file.\n\n"
	"  -D, --dbc FILE        the CAN database (required)\n"
	"  -f, --format FMT      text (default: frame, then Message(Signal: value unit, ...)),\n"
	"                        csv or jsonl (export's schema: each frame, then its samples)\n"
	"  -i, --input FILE      read FILE instead of stdin\n"
	"      --decoded-only    leave out frames the DBC has no message for (text)\n"
	"  -h, --help            this text\n";

struct decode_ctx {
	bus_dbc_t *dbc;
	struct acq_item *samples;
	unsigned max;
	bool text, decoded_only;
	enum rec_format fmt;
	uint64_t frames, decoded, bad;
	uint64_t seq;          /* records numbered as a log would: frame, then its samples */
};

/* "Traction(Speed: 12.5 km/h, Direction: 1 'Forward')" after the line */
static void print_text(struct decode_ctx *d, const char *line, size_t len, const struct acq_item *s, int n)
{
	struct bus_dbc_signal_info si;
	char v[REC_DOUBLE_MAX];

	fwrite(line, 1, len, stdout);
	for (int i = 0; i < n; i++) {
		const char *label = NULL;

		bus_dbc_signal_info(d->dbc, s[i].sample.channel, &si);
		if (!i)
			printf(" :: %s(", si.message);
		printf("%s%s: %s", i ? ", " : "", si.name,
		       rec_format_double(s[i].sample.value, v, sizeof(v)) > 0 ? v : "invalid");
		if (si.unit && *si.unit)
			printf(" %s", si.unit);
		if (bus_dbc_value_label(d->dbc, s[i].sample.channel, s[i].sample.value, &label) == 0)
			printf(" '%s'", label);
		if (s[i].sample.quality == ACQ_Q_OUT_OF_RANGE)
			fputs(" (out of range)", stdout);
	}
	/* a frame the DBC does not describe: the line as it is (cantools too) */
	fputs(n > 0 ? ")\n" : "\n", stdout);
}

/* The frame and its samples as export's rows: channel = signal index,
   name the qualified Message.Signal, as run and replay name it. */
static void print_rows(struct decode_ctx *d, const struct acq_item *frame, const struct acq_item *s, int n)
{
	struct bus_dbc_signal_info si;
	char name[256];

	rec_format_item(stdout, d->fmt, frame, NULL, NULL);
	for (int i = 0; i < n; i++) {
		struct rec_names nm = { 0 };
		const char *label = NULL;

		if (bus_dbc_signal_info(d->dbc, s[i].sample.channel, &si) == 0) {
			snprintf(name, sizeof(name), "%s.%s", si.message, si.name);
			nm.channel = name;
			nm.unit = si.unit;
		}
		if (bus_dbc_value_label(d->dbc, s[i].sample.channel, s[i].sample.value, &label) == 0)
			nm.label = label;
		rec_format_item(stdout, d->fmt, &s[i], &nm, NULL);
	}
}

static void decode_line(struct decode_ctx *d, const char *line, size_t len, uint64_t lineno, const char *src)
{
	struct acq_item frame;
	int n;

	if (len <= 1 && (len == 0 || line[0] == '\n'))
		return;
	if (bus_candump_parse(line, len, &frame, NULL, 0) < 0) {
		if (d->bad++ < DECODE_BAD_SAID)
			fprintf(stderr, "railmon decode: %s:%" PRIu64 ": not a candump line: %.*s\n", src, lineno,
			        (int)(len && line[len - 1] == '\n' ? len - 1 : len), line);
		return;
	}
	d->frames++;
	frame.seq = ++d->seq;
	n = bus_dbc_decode(d->dbc, &frame, 0, d->samples, d->max);
	if (n < 0)
		n = 0;
	for (int i = 0; i < n; i++)
		d->samples[i].seq = ++d->seq;
	d->decoded += n > 0;
	if (d->text && (n > 0 || !d->decoded_only))
		print_text(d, line, len && line[len - 1] == '\n' ? len - 1 : len, d->samples, n);
	else if (!d->text)
		print_rows(d, &frame, d->samples, n);
}

static int decode_stream(struct decode_ctx *d, FILE *in, const char *src)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t lineno = 0;

	while ((len = getline(&line, &cap, in)) >= 0)
		decode_line(d, line, (size_t)len, ++lineno, src);
	free(line);
	return ferror(in) ? -EIO : 0;
}

static int decode_parse(int argc, char **argv, struct decode_ctx *d, const char **ret_dbc, const char **ret_in)
{
	static const struct option opts[] = {
		{ "dbc", required_argument, NULL, 'D' }, { "format", required_argument, NULL, 'f' },
		{ "input", required_argument, NULL, 'i' }, { "decoded-only", no_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	d->text = true;
	while ((c = getopt_long(argc, argv, "D:f:i:h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': *ret_dbc = optarg; break;
		case 'i': *ret_in = optarg; break;
		case 1: d->decoded_only = true; break;
		case 'f':
			d->text = !strcmp(optarg, "text");
			if (!d->text && (rec_format_parse(optarg, &d->fmt) < 0 || d->fmt == REC_FORMAT_CANDUMP))
				return cli_fail("decode", "--format: expected text, csv or jsonl, not '%s'", optarg);
			break;
		case 'h': fputs(decode_usage, stdout); return -1;
		default: fputs(decode_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("decode", "unexpected argument '%s' (the log comes on stdin or --input)", argv[optind]);
	if (!*ret_dbc)
		return cli_fail("decode", "--dbc FILE is required");
	return 0;
}

int board_cmd_decode(int argc, char **argv)
{
	struct decode_ctx d = { 0 };
	const char *dbc = NULL, *input = NULL;
	char err[256];
	FILE *in = stdin;
	int r = decode_parse(argc, argv, &d, &dbc, &input);

	if (r)
		return r < 0 ? 0 : r;
	if ((r = bus_dbc_load(dbc, &d.dbc, err, sizeof(err))) < 0) {
		fprintf(stderr, "railmon decode: %s\n", err[0] ? err : strerror(-r));
		return 1;
	}
	d.max = bus_dbc_decode_max(d.dbc);
	d.samples = calloc(d.max ? d.max : 1, sizeof(*d.samples));
	if (!d.samples || (input && !(in = fopen(input, "re")))) {
		r = d.samples ? cli_fail("decode", "%s: %s", input, strerror(errno)) : cli_fail("decode", "out of memory");
		free(d.samples);
		bus_dbc_free(d.dbc);
		return r;
	}
	if (!d.text)
		rec_format_header(stdout, d.fmt);
	r = decode_stream(&d, in, input ? input : "stdin");
	if (input)
		fclose(in);
	fflush(stdout);
	fprintf(stderr, "railmon decode: %" PRIu64 " frames, %" PRIu64 " decoded with %s", d.frames, d.decoded, dbc);
	if (d.bad)
		fprintf(stderr, "; %" PRIu64 " line%s not candump (%s)", d.bad, d.bad == 1 ? "" : "s",
		        d.bad > DECODE_BAD_SAID ? "the first ones said above" : "said above");
	fputc('\n', stderr);
	if (r < 0)
		fprintf(stderr, "railmon decode: reading %s: %s\n", input ? input : "stdin", strerror(-r));
	free(d.samples);
	bus_dbc_free(d.dbc);
	return r < 0 || d.bad ? 1 : 0;
}
