/* SPDX-License-Identifier: MIT */
/*
 * bench-bus: DBC decode rate (frames/s, signals/s) on the demo DBC and the
 * demo trace's frames, against a naive decoder measured in the same run
 * (bit-by-bit extraction, linear message search: what a decoder without
 * precompiled tables does); and trace read rate (candump lines through
 * the trace driver) against plain fgets() of the same file; and the
 * same frames as Vector ASC, Vector BLF (written by record/'s writers)
 * and PEAK TRC 2.1 through the trace driver, in frames/s beside the
 * candump reader of the same run.
 * Rates are per CPU-second of this thread (CLOCK_THREAD_CPUTIME_ID).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bus/bus.h"
#include "trace/candump.h"
#include "dbc/dbc-private.h"
#include "dbc/dbc.h"
#include "trace/trace-write.h"
#include "railmon-config.h"

#define DEMO_DBC RAILMON_SOURCE_DIR "/cli/demo/train.dbc"
#define DEMO_LOG RAILMON_SOURCE_DIR "/cli/demo/train.log"
#define MAX_FRAMES 20000

/* CPU time of this thread: the machine is shared, wall time is not ours */
static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t load_frames(struct acq_item *frames)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	bus_dev_t *dev;
	size_t n = 0;
	int r;

	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", DEMO_LOG);
	if (bus_dev_new(&cfg, &dev) < 0)
		exit(1);
	while (n < MAX_FRAMES && (r = bus_dev_recv(dev, frames + n, MAX_FRAMES - n, 0)) > 0)
		n += (size_t)r;
	bus_dev_free(dev);
	return n;
}

/* The naive way: walk the bits of each signal one at a time. */
static uint64_t naive_raw(const struct dbc_sig *s, const struct acq_item *f, int *ret_ok)
{
	unsigned pos = s->start;
	uint64_t raw = 0;

	*ret_ok = 1;
	for (unsigned k = 0; k < s->size; k++) {
		unsigned bit = s->motorola ? pos : s->start + k;

		if (bit / 8 >= f->can.len) {
			*ret_ok = 0;
			return 0;
		}
		if (s->motorola) {
			raw = raw << 1 | ((f->can.data[bit / 8] >> (bit % 8)) & 1);
			pos = pos % 8 == 0 ? pos + 15 : pos - 1;
		} else {
			raw |= (uint64_t)((f->can.data[bit / 8] >> (bit % 8)) & 1) << k;
		}
	}
	return raw;
}

/* Same output as dbc_decode for integer signals and simple multiplexing. */
static int naive_decode(const struct dbc *dbc, const struct acq_item *f, struct acq_item *out)
{
	const struct dbc_msg *m = NULL;
	int n = 0, ok;

	for (unsigned i = 0; i < dbc->nmsgs && !m; i++)
		if (dbc->msgs[i].id == f->can.id && dbc->msgs[i].ext == !!(f->can.flags & ACQ_CAN_EXT))
			m = &dbc->msgs[i];
	if (!m)
		return 0;
	for (unsigned i = m->first; i < m->first + m->nsig; i++) {
		const struct dbc_sig *s = &dbc->sigs[i];
		uint64_t raw = naive_raw(s, f, &ok);
		double v;

		if (!ok)
			continue;
		if (s->muxed) {
			for (unsigned j = m->first; j < m->first + m->nsig; j++)
				if (dbc->sigs[j].is_mux && !dbc->sigs[j].muxed && naive_raw(&dbc->sigs[j], f, &ok) != s->mux_val)
					ok = 0;
			if (!ok)
				continue;
		}
		if (s->is_signed && s->size < 64 && (raw >> (s->size - 1)) & 1)
			raw |= ~((UINT64_C(1) << s->size) - 1);
		v = (s->is_signed ? (double)(int64_t)raw : (double)raw) * s->scale + s->offset;
		out[n] = (struct acq_item){ .t_ns = f->t_ns, .kind = ACQ_ITEM_SAMPLE, .bus = f->bus };
		out[n].sample.value = v;
		out[n].sample.channel = i;
		out[n].sample.quality = (s->min || s->max) && (v < s->min || v > s->max);
		n++;
	}
	return n;
}

/* Both decoders must agree before their speeds mean anything. */
static int cross_check(const dbc_t *dbc, const struct acq_item *frames, size_t n)
{
	struct acq_item a[64], b[64];

	for (size_t i = 0; i < n; i++) {
		int na = dbc_decode(dbc, &frames[i], 0, a, 64), nb = naive_decode(dbc, &frames[i], b);

		for (int j = 0; na == nb && j < na; j++) {
			int k = 0;

			while (k < nb && b[k].sample.channel != a[j].sample.channel)
				k++;
			if (k == nb || b[k].sample.value != a[j].sample.value || b[k].sample.quality != a[j].sample.quality)
				nb = -1;
		}
		if (na != nb) {
			fprintf(stderr, "decoders disagree on frame %zu\n", i);
			return -1;
		}
	}
	return 0;
}

typedef int (*decode_fn)(const dbc_t *dbc, const struct acq_item *f, struct acq_item *out);

static int fast_decode(const dbc_t *dbc, const struct acq_item *f, struct acq_item *out)
{
	return dbc_decode(dbc, f, 0, out, 64);
}

static void run_decode(const char *name, decode_fn fn, const dbc_t *dbc, const struct acq_item *frames,
                       size_t n, double *ret_fps, double *ret_sps)
{
	static struct acq_item out[64];
	double t0, t;
	uint64_t nframes = 0, nsig = 0;
	volatile double sink = 0;

	t0 = now_s();
	do {
		for (size_t i = 0; i < n; i++) {
			int k = fn(dbc, &frames[i], out);

			nsig += (uint64_t)k;
			if (k > 0)
				sink += out[0].sample.value;
		}
		nframes += n;
		t = now_s() - t0;
	} while (t < 0.5);
	*ret_fps = (double)nframes / t;
	*ret_sps = (double)nsig / t;
	printf("%-28s %14.0f %14.0f\n", name, *ret_fps, *ret_sps);
	(void)sink;
}

static double run_trace(const char *path)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	static struct acq_item items[256];
	uint64_t total = 0;
	double t0 = now_s(), t;
	bus_dev_t *dev;
	int r;

	cfg.can.driver = BUS_CAN_TRACE;
	cfg.can.trace_loop = true; /* as fast as possible, looping over the file */
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", path);
	if (bus_dev_new(&cfg, &dev) < 0)
		exit(1);
	do {
		for (int i = 0; i < 100; i++) {
			r = bus_dev_recv(dev, items, 256, 0);
			if (r <= 0)
				exit(1);
			for (int k = 0; k < r; k++)
				if (items[k].kind != ACQ_ITEM_CAN) {
					fprintf(stderr, "%s: a bad line: the rate would not be of frames\n", path);
					exit(1);
				}
			total += (uint64_t)r;
		}
		t = now_s() - t0;
	} while (t < 0.5);
	bus_dev_free(dev);
	return (double)total / t;
}

static double run_fgets(void)
{
	char line[512];
	uint64_t total = 0;
	double t0 = now_s(), t;
	volatile size_t sink = 0;

	do {
		FILE *f = fopen(DEMO_LOG, "r");

		if (!f)
			exit(1);
		while (fgets(line, sizeof(line), f)) {
			sink += (size_t)line[1];
			total++;
		}
		fclose(f);
		t = now_s() - t0;
	} while (t < 0.5);
	(void)sink;
	return (double)total / t;
}

/* The demo frames as ASC or BLF (record/'s writers) in path. */
static void write_trace(const char *path, enum trace_write_format fmt, const struct acq_item *frames, size_t n)
{
	FILE *f = fopen(path, "w");
	trace_writer_t *w;

	if (!f || trace_writer_new(f, fmt, &w) < 0)
		exit(1);
	for (size_t i = 0; i < n; i++)
		if (trace_writer_frame(w, &frames[i]) < 0)
			exit(1);
	if (trace_writer_close(w) < 0 || fclose(f) != 0)
		exit(1);
}

/* ... and as PEAK TRC 2.1, as PCAN-View writes it (classic frames only) */
static void write_trc(const char *path, const struct acq_item *frames, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		exit(1);
	fputs(";$FILEVERSION=2.1\r\n;$STARTTIME=46000.5\r\n;$COLUMNS=N,O,T,B,I,d,R,L,D\r\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct acq_can *c = &frames[i].can;

		fprintf(f, "%7zu %13.3f DT %2d %*X Rx -  %-2u", i + 1, (double)(frames[i].t_ns - frames[0].t_ns) / 1e6, 1,
		        (c->flags & ACQ_CAN_EXT) ? 8 : 4, c->id, c->len);
		for (unsigned k = 0; k < c->len; k++)
			fprintf(f, " %02X", c->data[k]);
		fputs("\r\n", f);
	}
	if (fclose(f) != 0)
		exit(1);
}

static void run_formats(const struct acq_item *frames, size_t n)
{
	char dir[] = "/tmp/bench-trace-XXXXXX", asc[64], blf[64], trc[64];
	double candump, r;

	if (!mkdtemp(dir))
		exit(1);
	snprintf(asc, sizeof(asc), "%s/t.asc", dir);
	snprintf(blf, sizeof(blf), "%s/t.blf", dir);
	snprintf(trc, sizeof(trc), "%s/t.trc", dir);
	write_trace(asc, TRACE_WRITE_ASC, frames, n);
	write_trace(blf, TRACE_WRITE_BLF, frames, n);
	write_trc(trc, frames, n);
	printf("\ntrace formats, the %zu frames of %s in each\n", n, DEMO_LOG);
	printf("%-28s %14s %14s\n", "format (trace driver)", "frames/s", "vs candump");
	candump = run_trace(DEMO_LOG);
	printf("%-28s %14.0f %14s\n", "candump (baseline)", candump, "1.00x");
	r = run_trace(asc);
	printf("%-28s %14.0f %13.2fx\n", "Vector ASC", r, r / candump);
	r = run_trace(blf);
	printf("%-28s %14.0f %13.2fx\n", "Vector BLF (zlib)", r, r / candump);
	r = run_trace(trc);
	printf("%-28s %14.0f %13.2fx\n", "PEAK TRC 2.1", r, r / candump);
	unlink(asc);
	unlink(blf);
	unlink(trc);
	rmdir(dir);
}

int main(void)
{
	static struct acq_item frames[MAX_FRAMES];
	double fps, sps, nfps, nsps, trace, base;
	dbc_t *dbc;
	size_t n = load_frames(frames);

	if (dbc_load(DEMO_DBC, &dbc, NULL, 0) < 0 || n == 0 || cross_check(dbc, frames, n) < 0)
		return 1;
	printf("DBC decode, %s (%u signals), %zu frames of %s\n", DEMO_DBC, dbc_signal_count(dbc), n, DEMO_LOG);
	printf("%-28s %14s %14s\n", "decoder", "frames/s", "signals/s");
	run_decode("naive bit walk (baseline)", (decode_fn)naive_decode, dbc, frames, n, &nfps, &nsps);
	run_decode("dbc_decode", fast_decode, dbc, frames, n, &fps, &sps);
	printf("%-28s %14.1fx %13.1fx\n", "ratio", fps / nfps, sps / nsps);
	printf("\ntrace read, %s\n", DEMO_LOG);
	printf("%-28s %14s\n", "reader", "lines/s");
	base = run_fgets();
	printf("%-28s %14.0f\n", "fgets only (baseline)", base);
	trace = run_trace(DEMO_LOG);
	printf("%-28s %14.0f\n", "trace driver (parse, speed 0)", trace);
	printf("%-28s %14.2fx\n", "ratio", trace / base);
	run_formats(frames, n);
	dbc_free(dbc);
	return 0;
}
