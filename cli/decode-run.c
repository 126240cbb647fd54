/* SPDX-License-Identifier: MIT */
/*
 * decode-run.c - what `railmon decode` prints (decode-run.h): each candump line
 * decoded with a DBC, as text (like `cantools decode`) or as export's
 * rows, the frame and then its samples.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/candump.h"
#include "dbc/dbc.h"
#include "record/format.h"
#include "cli/decode-run.h"

/* Signal sig's resolution in decimals, -1 if none (or not known). */
static int sig_decimals(const struct cli_decode *d, uint32_t sig)
{
	return d->decimals && sig < dbc_signal_count(d->dbc) ? d->decimals[sig] : -1;
}

/* "Traction(Speed: 12.5 km/h, Direction: 1 'Forward')" after the line */
static void print_text(struct cli_decode *d, const char *line, size_t len, const struct acq_item *s, int n)
{
	struct dbc_signal_info si;
	char v[REC_DOUBLE_MAX];

	fwrite(line, 1, len, d->out);
	for (int i = 0; i < n; i++) {
		const char *label = NULL;

		dbc_signal_info(d->dbc, s[i].sample.channel, &si);
		if (!i)
			fprintf(d->out, " :: %s(", si.message);
		fprintf(d->out, "%s%s: %s", i ? ", " : "", si.name,
		                rec_format_value(s[i].sample.value, sig_decimals(d, s[i].sample.channel), v, sizeof(v)) > 0 ? v : "invalid");
		if (si.unit && *si.unit)
			fprintf(d->out, " %s", si.unit);
		if (dbc_value_label(d->dbc, s[i].sample.channel, s[i].sample.value, &label) == 0)
			fprintf(d->out, " '%s'", label);
		if (s[i].sample.quality == ACQ_Q_OUT_OF_RANGE)
			fputs(" (out of range)", d->out);
	}
	/* a frame the DBC does not describe: the line as it is (cantools too) */
	fputs(n > 0 ? ")\n" : "\n", d->out);
}

/* The frame and its samples as export's rows: channel = signal index,
   name the qualified Message.Signal, as run and replay name it. */
static void print_rows(struct cli_decode *d, const struct acq_item *frame, const struct acq_item *s, int n)
{
	struct dbc_signal_info si;
	char name[256];

	rec_format_item(d->out, d->fmt, frame, NULL, NULL);
	for (int i = 0; i < n; i++) {
		struct rec_names nm = { 0 };
		const char *label = NULL;

		if (dbc_signal_info(d->dbc, s[i].sample.channel, &si) == 0) {
			snprintf(name, sizeof(name), "%s.%s", si.message, si.name);
			nm.channel = name;
			nm.unit = si.unit;
		}
		nm.has_decimals = sig_decimals(d, s[i].sample.channel) >= 0;
		nm.decimals = nm.has_decimals ? (unsigned)sig_decimals(d, s[i].sample.channel) : 0;
		if (dbc_value_label(d->dbc, s[i].sample.channel, s[i].sample.value, &label) == 0)
			nm.label = label;
		rec_format_item(d->out, d->fmt, &s[i], &nm, NULL);
	}
}

/* Bytes no text has: NUL and the control characters but tab, CR, LF and
   ESC (candump -c colours its lines). */
static bool is_binary(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c < 0x20 && c != '\t' && c != '\r' && c != '\n' && c != 0x1b)
			return true;
	}
	return false;
}

/* candump -c's colours: "ESC [ ... m" taken out in place; the new length */
static size_t strip_colour(char *line, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		if (line[i] == 0x1b && i + 1 < len && line[i + 1] == '[') {
			size_t j = i + 2;

			while (j < len && ((line[j] >= '0' && line[j] <= '9') || line[j] == ';'))
				j++;
			if (j < len && line[j] == 'm') {
				i = j;
				continue;
			}
		}
		line[o++] = line[i];
	}
	return o;
}

static void decode_line(struct cli_decode *d, char *line, size_t len, uint64_t lineno, const char *src)
{
	struct acq_item frame;
	int n;

	if (len <= 1 && (len == 0 || line[0] == '\n'))
		return;
	if (is_binary(line, len)) {
		/* a BLF file or any other bytes: one sentence, not its bytes
		   echoed line by line */
		fprintf(d->err, "railmon decode: %s:%" PRIu64 ": binary data, not candump text (candump -l, -L "
		        "or its screen output); nothing more read\n", src, lineno);
		d->binary = true;
		return;
	}
	if (memchr(line, 0x1b, len))
		len = strip_colour(line, len);
	if (d->after_error && trace_candump_screen_cont(line, len))
		return; /* -e: the error frame said in words */
	d->after_error = false;
	if (trace_candump_parse(line, len, &frame, NULL, 0) < 0 &&
	    trace_candump_parse_screen(line, len, &frame, NULL, 0) < 0) {
		if (d->bad++ < CLI_DECODE_BAD_SAID)
			fprintf(d->err, "railmon decode: %s:%" PRIu64 ": not a candump line: %.*s\n", src, lineno,
			        (int)(len && line[len - 1] == '\n' ? len - 1 : len), line);
		return;
	}
	d->frames++;
	d->after_error = frame.can.flags & ACQ_CAN_ERR;
	frame.seq = ++d->seq;
	n = dbc_decode(d->dbc, &frame, 0, d->samples, d->max);
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

int cli_decode_stream(struct cli_decode *d, FILE *in, const char *src)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	uint64_t lineno = 0;

	while (!d->binary && (len = getline(&line, &cap, in)) >= 0)
		decode_line(d, line, (size_t)len, ++lineno, src);
	free(line);
	return ferror(in) ? -EIO : 0;
}

int cli_decode_alloc(struct cli_decode *d)
{
	d->max = dbc_decode_max(d->dbc);
	d->samples = calloc(d->max ? d->max : 1, sizeof(*d->samples));
	d->decimals = calloc(dbc_signal_count(d->dbc) + 1, sizeof(*d->decimals));
	if (!d->samples || !d->decimals)
		return -ENOMEM;
	for (unsigned i = 0; i < dbc_signal_count(d->dbc); i++) {
		struct dbc_signal_info si;
		d->decimals[i] = (int8_t)(dbc_signal_info(d->dbc, i, &si) == 0 && !si.is_float ?
		                                rec_format_decimals(si.scale, si.offset) : -1);
	}
	return 0;
}

int cli_decode_run(struct cli_decode *d, FILE *in, const char *src, const char *dbc_name)
{
	int r;

	/* nothing to do is no success (issue 28: exit 0 with nothing decoded) */
	if (!dbc_signal_count(d->dbc)) {
		fprintf(d->err, "railmon decode: %s defines no signal: nothing to decode with\n", dbc_name);
		return 1;
	}
	if (!d->text)
		rec_format_header(d->out, d->fmt);
	r = cli_decode_stream(d, in, src);
	fflush(d->out);
	if (d->binary && !d->frames)
		return 1; /* said in its one sentence */
	if (r == 0 && !d->frames && !d->bad) {
		fprintf(d->err, "railmon decode: %s is empty: no candump line to decode\n", src);
		return 1;
	}
	fprintf(d->err, "railmon decode: %" PRIu64 " frames, %" PRIu64 " decoded with %s", d->frames, d->decoded,
	        dbc_name);
	if (d->bad)
		fprintf(d->err, "; %" PRIu64 " line%s not candump (%s)", d->bad, d->bad == 1 ? "" : "s",
		        d->bad > CLI_DECODE_BAD_SAID ? "the first ones said above" : "said above");
	fputc('\n', d->err);
	if (r < 0)
		fprintf(d->err, "railmon decode: reading %s: %s\n", src, strerror(-r));
	return r < 0 || d->bad || d->binary ? 1 : 0;
}

void cli_decode_release(struct cli_decode *d)
{
	free(d->samples);
	free(d->decimals);
	d->samples = NULL;
	d->decimals = NULL;
	d->dbc = dbc_free(d->dbc);
}
