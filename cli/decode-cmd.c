/* SPDX-License-Identifier: MIT */
/*
 * decode-cmd.c - `railmon decode --dbc FILE < candump.log`: every frame of a
 * candump log (or of candump's screen output) decoded with a DBC, no board file, like `cantools decode`:
 * the frame, then its message and signals (value, unit, value-table
 * label) on one line; or, with --format csv/jsonl, the frame and its
 * samples as rows of export's schema.  Lines that are not candump lines
 * are said with their line number and counted; the exit status is 1 if
 * any was.  The options, the DBC and the input here; the decoding and the
 * totals are cli/decode-run.h's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace/candump.h"
#include "dbc/dbc.h"
#include "record/format.h"
#include "cli/decode-run.h"

static const char decode_usage[] =
	"Usage: railmon decode --dbc FILE [OPTIONS] < candump.log\n"
	"Decode what candump writes with a DBC, no board file: its log (-l, -L) or what\n"
	"it prints on the terminal (any -t stamp, -x, FD, -a, -8, -i, -S, -c, -e).\n\n"
	"  -D, --dbc FILE        the CAN database (required)\n"
	"  -f, --format FMT      text (default: frame, then Message(Signal: value unit, ...)),\n"
	"                        csv or jsonl (export's schema: each frame, then its samples)\n"
	"  -i, --input FILE      read FILE instead of stdin\n"
	"      --decoded-only    leave out frames the DBC has no message for (text)\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  railmon decode --dbc train.dbc < candump-2026-12-03.log\n"
	"  candump -L can0 | railmon decode --dbc train.dbc --format csv\n";

static int decode_parse(int argc, char **argv, struct cli_decode *d, const char **ret_dbc, const char **ret_in)
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
		default: return cli_see_help("decode");
		}
	}
	if (optind < argc)
		return cli_fail("decode", "unexpected argument '%s' (the log comes on stdin or --input)", argv[optind]);
	if (!*ret_dbc)
		return cli_fail("decode", "--dbc FILE is required");
	return 0;
}

int cli_cmd_decode(int argc, char **argv)
{
	struct cli_decode d = { .out = stdout, .err = stderr };
	const char *dbc = NULL, *input = NULL;
	char err[256];
	FILE *in = stdin;
	int r = decode_parse(argc, argv, &d, &dbc, &input);

	if (r)
		return r < 0 ? 0 : r;
	if ((r = dbc_load(dbc, &d.dbc, err, sizeof(err))) < 0) {
		fprintf(stderr, "railmon decode: %s\n", err[0] ? err : strerror(-r));
		return 1;
	}
	/* what the lenient load accepted, each with its file:line */
	for (unsigned i = 0; i < dbc_warning_count(d.dbc); i++)
		fprintf(stderr, "railmon decode: warning: %s\n", dbc_warning(d.dbc, i));
	if (cli_decode_alloc(&d) < 0 || (input && !(in = fopen(input, "re")))) {
		r = d.samples ? cli_fail("decode", "%s: %s", input, strerror(errno)) : cli_fail("decode", "out of memory");
		cli_decode_release(&d);
		return r;
	}
	r = cli_decode_run(&d, in, input ? input : "stdin", dbc);
	if (input)
		fclose(in);
	cli_decode_release(&d);
	return r;
}
