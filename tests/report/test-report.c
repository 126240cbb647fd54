/* SPDX-License-Identifier: MIT */
/*
 * test-report.c - report/ called from C on a small log the test writes:
 * summary's figures and words, export's engine (filters, bare channel
 * names, time order, a Batch that does not decode), what a damaged log
 * cost, stat's health table, the channel listing, decode, verify's
 * words, a trace's survey, the live table, and `hold list`.  Each answer is read back from a memory
 * stream, so what the commands print is asserted byte for byte where the
 * text is the contract.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/batch.h"
#include "record/order.h"
#include "dbc/dbc.h"
#include "report/log-channels.h"
#include "cli/decode-run.h"
#include "report/export.h"
#include "cli/hold-list.h"
#include "cli/live-table.h"
#include "report/logfault.h"
#include "cli/stat-table.h"
#include "report/summary.h"
#include "cli/replay-trace.h"
#include "cli/verify-say.h"
#include "storage/stor.h"
#include "tlib.h"

#define S(n) ((int64_t)(n) * 1000000000LL)
#define T0 S(1764748800) /* 2025-12-03T08:00:00Z */

static struct acq_item sample(int64_t t, uint32_t ch, double v, uint32_t q)
{
	return (struct acq_item){ .t_ns = t, .kind = ACQ_ITEM_SAMPLE, .sample = { ch, q, v } };
}

static void append(stor_log_t *log, const void *buf, size_t len, uint32_t count, int64_t t0, int64_t t1)
{
	struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .count = count, .t_first_ns = t0,
	                        .t_last_ns = t1, .payload = buf, .len = (uint32_t)len };

	CHECK(stor_log_append(log, &rec) == 0);
}

/*
 * Two Batches: the dictionary (Eng.Speed km/h, id 1; Eng.Temp degC, id 2)
 * with Speed at 1, 2, 3 s and Temp at 1 s (invalid) and 2 s (out of
 * range); then Speed at 2.5 s, logged after 3 s but earlier (the time
 * order puts it back), and at 10 s (a gap: 7 s after 3 s, over 5 times
 * the shortest interval, 0.5 s).  With bad, a Batch
 * that does not decode between them.
 */
static void write_log(const char *dir, bool bad)
{
	static const struct rec_channel chans[] = {
		{ .id = 1, .name = "Eng.Speed", .unit = "km/h", .source = "test" },
		{ .id = 2, .name = "Eng.Temp", .unit = "degC", .source = "test" },
	};
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "V1", .segment_bytes = 1 << 20 };
	struct rec_batch_meta meta = { .vehicle = "V1" };
	struct acq_item one[] = {
		sample(T0 + S(1), 1, 10, ACQ_Q_GOOD), sample(T0 + S(1), 2, NAN, ACQ_Q_INVALID),
		sample(T0 + S(2), 1, 20, ACQ_Q_GOOD), sample(T0 + S(2), 2, 99, ACQ_Q_OUT_OF_RANGE),
		sample(T0 + S(3), 1, 30, ACQ_Q_GOOD),
	};
	struct acq_item two[] = { sample(T0 + S(2) + S(1) / 2, 1, 25, ACQ_Q_GOOD), sample(T0 + S(10), 1, 40, ACQ_Q_GOOD) };
	rec_encoder_t *enc;
	stor_log_t *log;
	const uint8_t *buf;
	size_t len;

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(rec_encoder_new(&meta, 64, &enc) == 0);
	CHECK(rec_encoder_set_channels(enc, chans, 2) == 2);
	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		CHECK(rec_encoder_add(enc, &one[i]) == 0);
	CHECK(rec_encoder_finish(enc, stor_log_next_seq(log), &buf, &len) == 5);
	append(log, buf, len, 5, T0 + S(1), T0 + S(3));
	if (bad)
		append(log, "not a Batch", 11, 3, T0 + S(4), T0 + S(4));
	for (size_t i = 0; i < sizeof(two) / sizeof(two[0]); i++)
		CHECK(rec_encoder_add(enc, &two[i]) == 0);
	CHECK(rec_encoder_finish(enc, stor_log_next_seq(log), &buf, &len) == 2);
	append(log, buf, len, 2, T0 + S(2), T0 + S(10));
	CHECK(stor_log_sync(log) == 0);
	stor_log_free(log);
	rec_encoder_free(enc);
}

static void test_summary(const char *dir)
{
	const char *only[] = { "Eng.Sped" }, *bare[] = { "Speed" };
	struct rpt_summary_opts o = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	struct tlib_mem out, err;
	rpt_summary_t *s;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(rpt_summary_new(NULL, err.f, &s) == -EINVAL);
	CHECK(rpt_summary_new(&o, NULL, &s) == -EINVAL);
	o.nonly = RPT_SUMMARY_ONLY_MAX + 1;
	CHECK(rpt_summary_new(&o, err.f, &s) == -EINVAL);
	o.nonly = 0;
	CHECK(rpt_summary_free(NULL) == NULL);

	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_read(s, dir) == 0);
	CHECK(rpt_summary_channels(s) == 2 && rpt_summary_damaged(s) == 0);
	CHECK(rpt_summary_print(s, true, out.f) == 0);
	/* Speed in time order: 10, 20, 25, 30, 40; the 7 s after 3 s is the gap */
	CHECK_STR(tlib_mem_text(&out),
	          "{\"channel\":1,\"name\":\"Eng.Speed\",\"unit\":\"km/h\",\"count\":5,"
	          "\"first\":\"2025-12-03T08:00:01.000Z\",\"first_ns\":1764748801000000000,"
	          "\"last\":\"2025-12-03T08:00:10.000Z\",\"last_ns\":1764748810000000000,"
	          "\"min\":10,\"max\":40,\"mean\":25,\"gaps\":1,\"longest_interval_s\":7,"
	          "\"out_of_range\":0,\"invalid\":0}\n"
	          "{\"channel\":2,\"name\":\"Eng.Temp\",\"unit\":\"degC\",\"count\":2,"
	          "\"first\":\"2025-12-03T08:00:01.000Z\",\"first_ns\":1764748801000000000,"
	          "\"last\":\"2025-12-03T08:00:02.000Z\",\"last_ns\":1764748802000000000,"
	          "\"min\":99,\"max\":99,\"mean\":99,\"gaps\":0,\"longest_interval_s\":1,"
	          "\"out_of_range\":1,\"invalid\":1}\n");
	CHECK_STR(tlib_mem_text(&err), "");
	rpt_summary_free(s);

	/* an unknown --channel: said with the nearest name */
	o.only = only;
	o.nonly = 1;
	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_resolve(s, dir) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon summary: --channel 'Eng.Sped': ") &&
	      strstr(tlib_mem_text(&err), "has no such channel; nearest: Eng.Speed, Eng.Temp\n"), "%s", tlib_mem_text(&err));
	rpt_summary_free(s);

	/* the bare signal name, as export takes it (issue 28): the one resolver,
	   so summary's rows are Eng.Speed's alone */
	tlib_mem_close(&out);
	tlib_mem_close(&err);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	o.only = bare;
	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_resolve(s, dir) == 0);
	CHECK(rpt_summary_read(s, dir) == 0);
	CHECK(rpt_summary_channels(s) == 1);
	CHECK(rpt_summary_print(s, true, out.f) == 0);
	CHECK(!strncmp(tlib_mem_text(&out), "{\"channel\":1,\"name\":\"Eng.Speed\",", 32) &&
	      !strchr(tlib_mem_text(&out), '\n')[1], "%s", tlib_mem_text(&out));
	CHECK_STR(tlib_mem_text(&err), "");
	rpt_summary_free(s);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* export's engine as cli/export-cmd.c sets it up: CSV of one channel named
   by its bare signal name, in time order. */
static void test_export(const char *dir, bool bad)
{
	struct rpt_export x = { .from_ns = INT64_MIN, .to_ns = INT64_MAX, .format = REC_FORMAT_CSV,
	                        .kinds = 1u << ACQ_ITEM_SAMPLE, .channels = { "Speed" }, .nchannel_filters = 1 };
	struct tlib_mem out, err;
	const char *csv;
	double last = -1;
	int lines = 0;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	x.out = out.f;
	x.err = err.f;
	CHECK(rec_order_new(REC_ORDER_MAX_ITEMS, REC_ORDER_WINDOW_NS, &x.order) == 0);
	CHECK(rec_channels_new(&x.chans) == 0);
	CHECK(rpt_export_dir(&x, dir) == 0);
	CHECK(x.written == 5, "%llu written", (unsigned long long)x.written);
	CHECK(x.damaged == (bad ? 1u : 0u));
	CHECK_STR(x.resolved[0], "Eng.Speed");
	csv = tlib_mem_text(&out);
	/* a header, then Speed's five values in time order, 25 among them */
	for (const char *p = strchr(csv, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
		CHECK(strstr(p, ",Eng.Speed,") && strstr(p, ",Eng.Speed,") < strchr(p + 1, '\n'), "%s", csv);
		lines++;
	}
	CHECK(lines == 5, "%s", csv);
	for (const char *p = strstr(csv, "\n1764748"); p; p = strstr(p + 1, "\n1764748")) {
		double t = strtod(p + 1, NULL);

		CHECK(t >= last, "out of order: %s", csv);
		last = t;
	}
	if (bad)
		CHECK(strstr(tlib_mem_text(&err), "railmon export: ") && strstr(tlib_mem_text(&err), ".seg: Batch at offset ") &&
		      strstr(tlib_mem_text(&err), " does not decode (Bad message): records 6..8 skipped\n"), "%s", tlib_mem_text(&err));
	else
		CHECK_STR(tlib_mem_text(&err), "");
	rpt_export_release(&x);
	CHECK(!x.order && !x.chans && !x.resolved[0]);

	/* an unknown --channel: the exit code 1, said with the nearest */
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	x = (struct rpt_export){ .out = out.f, .err = err.f, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                         .kinds = 1u << ACQ_ITEM_SAMPLE, .channels = { "Eng.Temq" }, .nchannel_filters = 1 };
	CHECK(rec_channels_new(&x.chans) == 0);
	CHECK(rpt_export_dir(&x, dir) == 1);
	CHECK(strstr(tlib_mem_text(&err), "--channel 'Eng.Temq': ") && strstr(tlib_mem_text(&err), "nearest: Eng.Temp"), "%s", tlib_mem_text(&err));
	CHECK(x.written == 0);
	rpt_export_release(&x);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* A segment that is a directory: the fault names it and the records. */
static void test_logfault(const char *dir)
{
	struct stor_rec rec = { .first_seq = 6, .count = 3, .segment = 1, .offset = 512 };
	struct tlib_mem err;

	tlib_mem_open(&err);
	rpt_log_undecodable_print(err.f, "export", dir, &rec, -EBADMSG);
	CHECK(strstr(tlib_mem_text(&err), "/00000000000000000001.seg: Batch at offset 512 does not decode (Bad message): "
	             "records 6..8 skipped\n"), "%s", tlib_mem_text(&err));
	tlib_mem_close(&err);
}

/* A log whose Batches carry health entries: stat shows the latest one of
   each name. */
static void test_stat(const char *dir)
{
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "V1", .segment_bytes = 1 << 20 };
	struct rec_batch_meta meta = { .vehicle = "V1" };
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = T0, .bus = ACQ_SOURCE_DAEMON,
	                       .event = { .code = ACQ_EV_START } };
	struct rec_health h = { .name = "can0", .kind = "can", .state = "up", .rate_hz = 12.5 };
	struct tlib_mem out, err;
	rec_encoder_t *enc;
	stor_log_t *log;
	const uint8_t *buf;
	size_t len;
	FILE *in;
	char lines[1024];
	const char *want = "{\"name\":\"can0\",\"kind\":\"can\",\"bus\":0,\"items\":300,\"rate_hz\":12.5,";

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	/* the last entry, written as the daemon stopped, says rate 0 (issue 28:
	   stat then looked live with nothing coming in): the rate shown is the
	   last it had while running, and the sentence says the log ended */
	for (uint64_t items = 100; items <= 300; items += 100) {
		h.items = items;
		h.rate_hz = items == 300 ? 0 : 12.5;
		CHECK(rec_encoder_add(enc, &ev) == 0 && rec_encoder_add_health(enc, &h) == 0);
		CHECK(rec_encoder_finish(enc, stor_log_next_seq(log), &buf, &len) == 1);
		append(log, buf, len, 1, T0 + S(items / 100 - 1), T0 + S(items / 100 - 1));
	}
	CHECK(stor_log_sync(log) == 0);
	stor_log_free(log);
	rec_encoder_free(enc);

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_stat_log(dir, true, out.f, err.f) == 0);
	CHECK(!strncmp(tlib_mem_text(&out), want, strlen(want)) && !strchr(strchr(tlib_mem_text(&out), '\n') + 1, '\n'), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "\"state\":\"up\",\"reopens\":0,\"window_alarm\":0,\"window_s\":0,\"transaction_count\":0,\"transaction_p99_us\":0,\"transaction_max_ns\":0}\n"), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&err), ": a recorded log, no daemon on it; it ended at 2025-12-03T08:00:02.000Z (its last "
	             "record); rates are the last each had while it ran"), "%s", tlib_mem_text(&err));

	/* the socket's lines back to the table: the entry and the daemon's sentence */
	snprintf(lines, sizeof(lines), "%s{\"name\":\"daemon\",\"records\":5,\"next_seq\":6,\"ring_drops\":0,"
	         "\"log_dropped\":0,\"uplink\":\"connected\",\"unsent\":2}\n", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	CHECK(in = fmemopen(lines, strlen(lines), "r"));
	CHECK(cli_stat_lines(in, false, out.f) == 2);
	fclose(in);
	CHECK(!strncmp(tlib_mem_text(&out), "name ", 5) && strstr(tlib_mem_text(&out), "\ncan0           can                300      12.5"),
	      "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "  up              0        -\ndaemon: 5 records stored this run, next seq 6, 0 ring drops, "
	             "0 refused by the log; uplink connected, 2 records not yet acknowledged\n"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);

	/* the clock entry (docs/time.md): its fields in the JSON line, and in
	   the table a sentence of its own (the columns are a bus's) */
	struct rec_health c = { .name = "clock", .kind = "clock", .state = "unsynced", .items = 2,
	                        .clock_unsynced = true, .clock_max_error_us = 16000000, .clock_est_error_us = 500,
	                        .clock_status = 0x40 };
	tlib_mem_open(&out);
	pl_stat_health_json(out.f, &c);
	CHECK(strstr(tlib_mem_text(&out), "\"transaction_max_ns\":0,\"clock_unsynced\":true,\"clock_max_error_us\":16000000,"
	             "\"clock_est_error_us\":500,\"clock_status\":64}\n"), "%s", tlib_mem_text(&out));
	snprintf(lines, sizeof(lines), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	CHECK(in = fmemopen(lines, strlen(lines), "r"));
	CHECK(cli_stat_lines(in, false, out.f) == 1);
	fclose(in);
	CHECK(strstr(tlib_mem_text(&out), "\nclock          clock     2 steps this run; unsynced, max error 16000000 us, "
	             "estimated 500 us, status 0x0040\n"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	pl_stat_health_json(out.f, &h);
	CHECK(!strstr(tlib_mem_text(&out), "clock_"), "a bus's entry has no clock fields: %s", tlib_mem_text(&out));
	tlib_mem_close(&out);

	/* no health entries: said, -ENOENT */
	CHECK(cli_stat_log("/nonexistent-railmon-log", false, stdout, err.f) < 0);
	tlib_mem_close(&err);
}

/* The dictionary the log carries, listed as `railmon channels --data`. */
static void test_channels(const char *dir)
{
	const struct rec_channel **list;
	rec_channels_t *map;
	struct tlib_mem out;
	int n;

	CHECK(rec_channels_new(&map) == 0);
	CHECK(rpt_channels_learn_log("/nonexistent-railmon-log", map) < 0);
	CHECK(rpt_channels_learn_log(dir, map) == 0);
	n = rec_channels_sorted(map, &list);
	CHECK(n == 2);
	tlib_mem_open(&out);
	rpt_channels_print(out.f, list, 2, true, 0);
	CHECK_STR(tlib_mem_text(&out), "{\"id\":1,\"bus\":0,\"bus_name\":\"\",\"name\":\"Eng.Speed\",\"unit\":\"km/h\","
	          "\"source\":\"test\",\"min\":null,\"max\":null,\"value_table\":{}}\n"
	          "{\"id\":2,\"bus\":0,\"bus_name\":\"\",\"name\":\"Eng.Temp\",\"unit\":\"degC\","
	          "\"source\":\"test\",\"min\":null,\"max\":null,\"value_table\":{}}\n");
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	rpt_channels_print(out.f, list, 2, false, 0);
	CHECK(!strncmp(tlib_mem_text(&out), "id       bus          name", 26) &&
	      strstr(tlib_mem_text(&out), "\n1        -            Eng.Speed                    km/h     -                test"),
	      "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	free(list);
	rec_channels_free(map);
}

/* What candump prints on the terminal (not its log format), in each
   shape, decoded like its log lines; -e's tab lines after an error frame
   and -c's colours are no bad lines. */
static void test_decode_screen(struct cli_decode *d0)
{
	static const char lines[] =
		"  can0  123   [1]  0A\n"
		" (1436509052.249713)  can0  123   [1]  0B\n"
		" (000.000123)  can0  123   [1]  0C\n"
		" (2015-07-10 08:17:32.249713)  can0  123   [1]  0D\n"
		"  can0  TX - -  123   [1]  0E\n"
		"  can0  RX B -  123  [01]  0F\n"
		"  can0  123   [1]  10                        '.'\n"
		"  can0  123   [0]  remote request\n"
		"  can0  20000080   [8]  00 00 00 00 00 00 00 00   ERRORFRAME\n"
		"\tbus-error\n"
		"\033[1;31m  can0  123   [1]  11\033[0m\n";
	struct cli_decode d = { .text = true, .dbc = d0->dbc, .samples = d0->samples, .max = d0->max };
	struct tlib_mem out, err;
	FILE *in;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	d.out = out.f;
	d.err = err.f;
	CHECK(in = fmemopen((void *)lines, strlen(lines), "r"));
	CHECK(cli_decode_stream(&d, in, "screen") == 0);
	fclose(in);
	CHECK_STR(tlib_mem_text(&err), "");
	CHECK(d.frames == 10 && d.decoded == 8 && d.bad == 0, "%" PRIu64 " %" PRIu64 " %" PRIu64, d.frames, d.decoded, d.bad);
	CHECK(strstr(tlib_mem_text(&out), "  can0  123   [1]  0A :: Eng(Speed: 10 km/h)\n") &&
	      strstr(tlib_mem_text(&out), "  can0  RX B -  123  [01]  0F :: Eng(Speed: 15 km/h)\n") &&
	      strstr(tlib_mem_text(&out), "  can0  123   [1]  11 :: Eng(Speed: 17 km/h)\n"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* A binary file on stdin (a BLF trace): one sentence, not its bytes. */
static void test_decode_binary(struct cli_decode *d0)
{
	static const char blf[] = "LOGG\x90\0\0\0\x01\0\0\0\n\x02\0\0\0LOBJ\0\0\n\n\x07\x08";
	struct cli_decode d = { .text = true, .dbc = d0->dbc, .samples = d0->samples, .max = d0->max };
	struct tlib_mem out, err;
	FILE *in;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	d.out = out.f;
	d.err = err.f;
	CHECK(in = fmemopen((void *)blf, sizeof(blf) - 1, "r"));
	CHECK(cli_decode_stream(&d, in, "t.blf") == 0);
	fclose(in);
	CHECK_STR(tlib_mem_text(&err), "railmon decode: t.blf:1: binary data, not candump text (candump -l, -L or its "
	          "screen output); nothing more read\n");
	CHECK_STR(tlib_mem_text(&out), "");
	CHECK(d.binary && d.frames == 0 && d.bad == 0);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* candump lines through a one-signal DBC, as text and as export's rows. */
static void test_decode(const char *dir)
{
	static const char dbc_text[] =
		"VERSION \"\"\n\nBU_: ECU\n\n"
		"BO_ 291 Eng: 1 ECU\n SG_ Speed : 0|8@1+ (1,0) [0|200] \"km/h\" ECU\n\n"
		"VAL_ 291 Speed 0 \"Stop\" ;\n";
	static const char lines[] = "(1.000000) can0 123#0A\n(2.000000) can0 123#00\njunk\n(3.000000) can0 456#01\n";
	struct cli_decode d = { .text = true };
	struct tlib_mem out, err;
	char path[512], why[256];
	FILE *f, *in;

	snprintf(path, sizeof(path), "%s/t.dbc", dir);
	CHECK(f = fopen(path, "w"));
	fputs(dbc_text, f);
	fclose(f);
	CHECK(dbc_load(path, &d.dbc, why, sizeof(why)) == 0, "%s", why);
	d.max = dbc_decode_max(d.dbc);
	CHECK(d.samples = calloc(d.max, sizeof(*d.samples)));
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	d.out = out.f;
	d.err = err.f;
	CHECK(in = fmemopen((void *)lines, strlen(lines), "r"));
	CHECK(cli_decode_stream(&d, in, "t.log") == 0);
	fclose(in);
	CHECK_STR(tlib_mem_text(&out), "(1.000000) can0 123#0A :: Eng(Speed: 10 km/h)\n"
	                      "(2.000000) can0 123#00 :: Eng(Speed: 0 km/h 'Stop')\n"
	                      "(3.000000) can0 456#01\n");
	CHECK_STR(tlib_mem_text(&err), "railmon decode: t.log:3: not a candump line: junk\n");
	CHECK(d.frames == 3 && d.decoded == 2 && d.bad == 1 && d.seq == 5);

	/* rows: the frame, then its sample named Message.Signal */
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	d = (struct cli_decode){ .out = out.f, .err = err.f, .dbc = d.dbc, .samples = d.samples, .max = d.max,
	                         .fmt = REC_FORMAT_JSONL };
	CHECK(in = fmemopen((void *)lines, 23, "r"));
	CHECK(cli_decode_stream(&d, in, "t.log") == 0);
	fclose(in);
	CHECK(strstr(tlib_mem_text(&out), "\"seq\":2,") && strstr(tlib_mem_text(&out), "\"name\":\"Eng.Speed\"") &&
	      strstr(tlib_mem_text(&out), "\"unit\":\"km/h\"") && strstr(tlib_mem_text(&out), "\"value\":10"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);
	test_decode_screen(&d);
	test_decode_binary(&d);
	free(d.samples);
	dbc_free(d.dbc);
}

/* verify's words for a problem and a result. */
static void test_verify(void)
{
	struct tlib_mem out, err;
	struct cli_verify_out o = { .dir = "log" };
	struct evd_problem p = { .kind = EVD_PROBLEM_CHAIN, .segment = 1, .offset = 512, .seq = 7, .range_first = 7,
	                         .range_end = 10 };
	struct evd_result r = { .seals = 2, .signed_seals = 2, .verified_first = 1, .verified_end = 10,
	                        .verified_t_first = T0, .verified_t_last = T0 + S(1) / 2, .seal_t_first = T0 + S(1),
	                        .seal_t_last = T0 + S(2), .tail_first = 10, .tail_end = 12, .records = 11,
	                        .nranges = 2, .ranges = { { 1, 10, EVD_RANGE_VERIFIED }, { 10, 12, EVD_RANGE_TAIL } },
	                        .seqs = { [EVD_RANGE_VERIFIED] = 9, [EVD_RANGE_TAIL] = 2 } };
	uint8_t pk[EVD_PUBLIC_LEN] = { 0xab, 0xcd };

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	o.err = err.f;
	cli_verify_problem(&o, &p);
	CHECK_STR(tlib_mem_text(&err), "railmon verify: log/00000000000000000001.seg: offset 512: seq 7: the records of a Seal's "
	          "range do not hash to its chain head (changed, removed, added or reordered), records 7..9\n");
	for (int i = 0; i < CLI_VERIFY_PRINT_MAX + 5; i++)
		cli_verify_problem(&o, &p);
	CHECK(o.printed == CLI_VERIFY_PRINT_MAX + 6);
	cli_verify_result(out.f, &r, pk);
	CHECK_STR(tlib_mem_text(&out), "verified: seq 1..9\n"
	          "unsealed tail: after the last Seal, not yet sealed: seq 10..11\n"
	          "verified: 9 seqs by 2 Seals, each signed by key abcd000000000000\n"
	          "verified record times: 2025-12-03T08:00:00.000Z .. 2025-12-03T08:00:00.500Z (the first record of "
	          "each verified Batch)\n"
	          "sealed: 2025-12-03T08:00:01.000Z .. 2025-12-03T08:00:02.000Z (the verified Seals' signed times)\n"
	          "11 records read, 0 problems\n");
	/* after a problem, nothing is explained as a run that ended; a wrong
	   key is said as such */
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	r = (struct evd_result){ .bad_signatures = 2, .records = 11, .problems = 2, .nranges = 2,
	                         .ranges = { { 1, 10, EVD_RANGE_UNPROVEN }, { 10, 12, EVD_RANGE_TAIL } } };
	cli_verify_result(out.f, &r, pk);
	CHECK_STR(tlib_mem_text(&out), "unproven: their Seal does not verify (signature or link): seq 1..9\n"
	          "unsealed tail: after the last Seal, not proven: seq 10..11\n"
	          "verified: nothing\n"
	          "no Seal verifies with key abcd000000000000: the log was signed by another key (or every Seal was "
	          "altered)\n"
	          "11 records read, 2 problems\n");
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* What a trace holds, said before a replay: its frames and its first
   damage by file and line. */
static void test_trace_survey(const char *dir)
{
	char path[256], want[1024];
	enum trace_format fmt;
	struct tlib_mem err;
	FILE *f;

	snprintf(path, sizeof(path), "%s/t.candump", dir);
	CHECK(f = fopen(path, "w"));
	fputs("(1.000000) can0 123#0A\n(1.5) can0 12#\n(2.000000) can0 123#00\n(3.000000) can0 456#01\n", f);
	fclose(f);
	CHECK(trace_format_detect_file(path, &fmt) == 0);
	tlib_mem_open(&err);
	CHECK(cli_trace_survey(err.f, path, fmt) == 0);
	snprintf(want, sizeof(want), "railmon replay: %s: %s, 3 frames; 1 damaged part skipped, the first: %s:2", path,
	         trace_format_name(fmt), path);
	CHECK(!strncmp(tlib_mem_text(&err), want, strlen(want)), "%s", tlib_mem_text(&err));
	tlib_mem_close(&err);
	snprintf(path, sizeof(path), "%s/none.candump", dir);
	tlib_mem_open(&err);
	CHECK(cli_trace_survey(err.f, path, fmt) == -ENOENT);
	tlib_mem_close(&err);
}

static void test_livetable(void)
{
	struct cli_live_row rows[] = {
		{ .id = 2, .name = "Eng.Temp", .unit = "degC", .source = "can0", .value = 99.5, .age_ns = S(9) },
		{ .id = 1, .name = "Eng.Speed", .unit = "km/h", .source = "can0", .value = 20, .age_ns = S(1) / 10 },
	};
	struct cli_live_view v = { .width = 80, .sort = CLI_LIVE_SORT_NAME, .stale_s = 5, .title = "test" };
	enum cli_live_sort sort;
	cli_livetable_t *t;
	char buf[32];
	struct tlib_mem out;

	CHECK(cli_livetable_new(0, &t) == -EINVAL);
	CHECK(cli_livetable_new(4, &t) == 0);
	cli_live_value_text(1.0, buf, sizeof(buf));
	CHECK_STR(buf, "1");
	cli_live_value_text(0.1, buf, sizeof(buf));
	CHECK_STR(buf, "0.1");
	CHECK(cli_live_sort_parse("age", &sort) == 0 && sort == CLI_LIVE_SORT_AGE);
	CHECK(cli_live_sort_parse("colour", &sort) == -EINVAL);
	CHECK_STR(cli_live_sort_name(CLI_LIVE_SORT_SOURCE), "source");

	tlib_mem_open(&out);
	CHECK(cli_livetable_draw(t, rows, 2, &v, S(100), out.f) == 2);
	/* by name: Speed before Temp; Temp is older than 5 s: marked stale */
	CHECK(strstr(tlib_mem_text(&out), "Eng.Speed") && strstr(tlib_mem_text(&out), "Eng.Temp") &&
	      strstr(tlib_mem_text(&out), "Eng.Speed") < strstr(tlib_mem_text(&out), "Eng.Temp"), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "~ Eng.Temp") || strstr(tlib_mem_text(&out), "~Eng.Temp"), "%s", tlib_mem_text(&out));
	CHECK(!strchr(tlib_mem_text(&out), '\033'), "escapes without clear and colour: %s", tlib_mem_text(&out));
	tlib_mem_close(&out);

	tlib_mem_open(&out);
	strcpy(v.filter, "TEMP");
	CHECK(cli_livetable_draw(t, rows, 2, &v, S(100), out.f) == 1);
	CHECK(!strstr(tlib_mem_text(&out), "Eng.Speed"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	cli_livetable_free(t);

	/* a row as the stat socket's "channels" answer gives it */
	CHECK(cli_live_row_parse("{\"id\":65537,\"name\":\"Eng.\\\"Speed\\u0041\",\"unit\":\"km/h\",\"value\":\"nan\","
	                         "\"age_ms\":250,\"quality\":2}", &rows[0]) == 0);
	CHECK(rows[0].id == 65537 && isnan(rows[0].value) && rows[0].age_ns == 250000000 && rows[0].quality == 2);
	CHECK_STR(rows[0].name, "Eng.\"SpeedA");
	CHECK(cli_live_row_parse("{\"id\":1,\"name\":\"x\",\"value\":null}", &rows[1]) == 0 && rows[1].age_ns == -1);
	CHECK(cli_live_row_parse("{\"name\":\"x\"}", &rows[1]) == -EBADMSG);

	/* the daemon's line and watch's parser agree: a round trip */
	struct pl_stat_value lv = { 7, "Door \"A\"", "", "mb 3", "Open", 1, T0, ACQ_Q_GOOD, NULL };
	struct pl_stat_value never = { 8, "Door.B", "", "mb 3", NULL, 0, 0, 0, NULL };
	struct pl_stat_value txt = { 9, "vehicle_number", "", "mb 1", NULL, 0, T0, ACQ_Q_GOOD, "EMU-4021" };
	tlib_mem_open(&out);
	pl_stat_live_json(out.f, &lv, T0 + S(2));
	CHECK_STR(tlib_mem_text(&out), "{\"id\":7,\"name\":\"Door \\\"A\\\"\",\"unit\":\"\",\"source\":\"mb 3\",\"value\":1,"
	          "\"t_ns\":1764748800000000000,\"age_ms\":2000.0,\"quality\":0,\"label\":\"Open\"}\n");
	CHECK(cli_live_row_parse(tlib_mem_text(&out), &rows[0]) == 0 && rows[0].id == 7 && rows[0].value == 1 &&
	      rows[0].age_ns == S(2) && !strcmp(rows[0].name, "Door \"A\"") && !strcmp(rows[0].label, "Open"));
	tlib_mem_close(&out);
	tlib_mem_open(&out);
	pl_stat_live_json(out.f, &never, T0);
	CHECK_STR(tlib_mem_text(&out), "{\"id\":8,\"name\":\"Door.B\",\"unit\":\"\",\"source\":\"mb 3\",\"value\":null,"
	          "\"age_ms\":null}\n");
	CHECK(cli_live_row_parse(tlib_mem_text(&out), &rows[1]) == 0 && rows[1].age_ns == -1);
	tlib_mem_close(&out);
	/* a text channel: value null, the text in "text", parsed into the label */
	tlib_mem_open(&out);
	pl_stat_live_json(out.f, &txt, T0 + S(1));
	CHECK_STR(tlib_mem_text(&out), "{\"id\":9,\"name\":\"vehicle_number\",\"unit\":\"\",\"source\":\"mb 1\",\"value\":null,"
	          "\"text\":\"EMU-4021\",\"t_ns\":1764748800000000000,\"age_ms\":1000.0,\"quality\":0}\n");
	CHECK(cli_live_row_parse(tlib_mem_text(&out), &rows[1]) == 0 && rows[1].text && !strcmp(rows[1].label, "EMU-4021") &&
	      rows[1].age_ns == S(1));
	tlib_mem_close(&out);

	/* the clock line first in the "channels" answer (watch's title,
	   docs/time.md): written, read back, and no row of its own */
	struct pl_stat_clock clk = { .unsynced = true, .max_error_us = 16000000 }, back;
	tlib_mem_open(&out);
	pl_stat_clock_json(out.f, &clk);
	CHECK_STR(tlib_mem_text(&out), "{\"clock\":\"unsynced\",\"clock_max_error_us\":16000000}\n");
	CHECK(cli_live_clock_parse(tlib_mem_text(&out), &back) == 0 && back.unsynced && back.max_error_us == 16000000);
	CHECK(cli_live_row_parse(tlib_mem_text(&out), &rows[1]) == -EBADMSG);
	tlib_mem_close(&out);
	CHECK(cli_live_clock_parse("{\"clock\":\"synced\",\"clock_max_error_us\":120}", &back) == 0 &&
	      !back.unsynced && back.max_error_us == 120);
	CHECK(cli_live_clock_parse("{\"id\":7,\"name\":\"clock\"}", &back) == -EBADMSG);

	/* watch's keys on a 20-line terminal and a table of 40 rows */
	struct cli_live_keys k = { 0 };
	struct cli_live_view kv = { .height = 20 };
#define FEED(s) cli_live_keys_feed(&k, &kv, (const unsigned char *)(s), strlen(s), 40)
	CHECK(FEED("ss") && kv.sort == CLI_LIVE_SORT_AGE);
	CHECK(FEED("ss") && kv.sort == CLI_LIVE_SORT_ID);
	CHECK(FEED("jj\033[B") && kv.scroll == 3);
	CHECK(FEED("\033[Ak") && kv.scroll == 1);
	CHECK(FEED(" ") && kv.scroll == 18);
	CHECK(FEED("    ") && kv.scroll == 39, "clamped to the last row: %zu", kv.scroll);
	CHECK(FEED("g") && kv.scroll == 0);
	CHECK(FEED("/Tem\177mp") && k.editing && !strcmp(k.edit, "Temp") && !kv.filter[0]);
	CHECK(FEED("\r") && !k.editing && !strcmp(kv.filter, "Temp"));
	CHECK(FEED("/x\033") && !k.editing && !kv.filter[0]);
	CHECK(FEED("/q") && k.editing, "q while typing is a letter");
	CHECK(FEED("\n") && !strcmp(kv.filter, "q"));
	CHECK(!FEED("jq"));
#undef FEED
}

/* `hold list`: the header and one line per hold, exact; what a hold keeps
   of a log on disk (its records and segment); a damaged holds file named
   by its line, and nothing on out. */
static void test_hold(const char *log_dir, const char *empty_dir)
{
	struct stor_hold h1 = { .trigger = "Start", .t_ns = T0, .from_ns = T0 - S(60), .to_ns = T0 + S(10) };
	struct stor_hold h2 = { .trigger = "Moving", .t_ns = T0 + S(5), .from_ns = T0 - S(25), .to_ns = T0 + S(35),
		                .expiry_ns = T0 + S(3600) };
	struct stor_holds all;
	struct stor_hold_extent ext[2];
	char path[512], want[1024], recs[64], *file = NULL;
	struct tlib_mem out, err;
	unsigned line = 0;
	uint32_t id;
	size_t len = 0;
	FILE *f;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_hold_list(empty_dir, out.f, err.f) == 0);
	snprintf(want, sizeof(want), "%s: no holds\n", empty_dir);
	CHECK_STR(tlib_mem_text(&out), want);
	CHECK_STR(tlib_mem_text(&err), "");
	tlib_mem_close(&out);

	/* no log in empty_dir: the holds keep nothing on disk */
	CHECK(stor_hold_add(empty_dir, &h1, &id) == 0 && id == 1);
	CHECK(stor_hold_add(empty_dir, &h2, &id) == 0 && id == 2);
	tlib_mem_open(&out);
	CHECK(cli_hold_list(empty_dir, out.f, err.f) == 0);
	CHECK_STR(tlib_mem_text(&out),
	          "id    trigger              fired (UTC)              window        records                 segments"
	          "        bytes  expires\n"
	          "1     Start                2025-12-03 08:00:00.000Z -1m +10s    none on disk                   0"
	          "            0  at release\n"
	          "2     Moving               2025-12-03 08:00:05.000Z -30s +30s    none on disk                   0"
	          "            0  2025-12-03 09:00:00.000Z (ended)\n");
	tlib_mem_close(&out);

	/* over the log test_summary reads: both Batches, one segment */
	CHECK(stor_hold_add(log_dir, &h1, &id) == 0 && id == 1);
	CHECK(stor_holds_read(log_dir, &all, &line) == 0 && all.n == 1);
	CHECK(stor_hold_extents(log_dir, &all, ext) == 0 && ext[0].segments == 1 && ext[0].bytes > 0);
	CHECK(ext[0].end_seq - ext[0].first_seq == 7, "%llu..%llu", (unsigned long long)ext[0].first_seq,
	      (unsigned long long)ext[0].end_seq);
	tlib_mem_open(&out);
	CHECK(cli_hold_list(log_dir, out.f, err.f) == 0);
	snprintf(recs, sizeof(recs), "%llu-%llu", (unsigned long long)ext[0].first_seq,
	         (unsigned long long)ext[0].end_seq - 1);
	snprintf(want, sizeof(want), "\n1     Start                2025-12-03 08:00:00.000Z -1m +10s    %-23s        1 %12llu"
	         "  at release\n", recs, (unsigned long long)ext[0].bytes);
	CHECK(strstr(tlib_mem_text(&out), want), "%s\nwant %s", tlib_mem_text(&out), want);
	tlib_mem_close(&out);

	/* a digit of hold 2's time changed: the CRC no longer matches */
	snprintf(path, sizeof(path), "%s/%s", empty_dir, STOR_HOLDS_NAME);
	f = fopen(path, "r+");
	CHECK(f && getdelim(&file, &len, 0, f) > 0);
	CHECK(strstr(file, "hold 2 Moving 1"));
	fseek(f, strstr(file, "hold 2 Moving 1") - file + 14, SEEK_SET);
	CHECK(fputc('9', f) == '9' && fclose(f) == 0);
	tlib_mem_open(&out);
	CHECK(cli_hold_list(empty_dir, out.f, err.f) == 1);
	CHECK_STR(tlib_mem_text(&out), "");
	CHECK(strstr(tlib_mem_text(&err), "/holds:") && strstr(tlib_mem_text(&err), ": the holds file is damaged (its CRC does not match"),
	      "%s", tlib_mem_text(&err));
	CHECK(!strncmp(tlib_mem_text(&err), "railmon hold: ", 14) && strstr(tlib_mem_text(&err), empty_dir), "%s", tlib_mem_text(&err));
	free(file);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* `hold list` of a hold whose window retention deleted (issue 24): the
   records column is only what is on disk, and a "gone:" line names the
   deleted seqs.  Segments of 3 records, record n at T0 + n s; the 3rd and
   4th segment files removed as retention removes them. */
static void test_hold_gone(const char *dir)
{
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "GONE", .segment_bytes = 1024 };
	uint8_t payload[100] = { 0 };
	struct stor_hold h;
	char name[600], want[512];
	struct tlib_mem out, err;
	uint64_t first[16];
	size_t n = 0;
	stor_log_t *log;
	uint32_t id;
	DIR *d;
	struct dirent *e;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (uint64_t s = 1; s <= 30; s++) {
		struct stor_rec rec = { .first_seq = s, .count = 1, .t_first_ns = T0 + S(s), .t_last_ns = T0 + S(s),
		                        .payload = payload, .len = sizeof(payload) };

		CHECK(stor_log_append(log, &rec) == 0);
	}
	stor_log_free(log);
	CHECK((d = opendir(dir)));
	while ((e = readdir(d)))
		if (strstr(e->d_name, ".seg") && n < 16)
			first[n++] = strtoull(e->d_name, NULL, 10);
	closedir(d);
	CHECK(n >= 6, "%zu segments", n);
	for (size_t i = 0; i < n; i++) /* sorted, by insertion */
		for (size_t k = i; k > 0 && first[k - 1] > first[k]; k--) {
			uint64_t t = first[k];
			first[k] = first[k - 1];
			first[k - 1] = t;
		}
	for (size_t i = 2; i < 4; i++) {
		snprintf(name, sizeof(name), "%s/%020llu.seg", dir, (unsigned long long)first[i]);
		CHECK(unlink(name) == 0, "%s", name);
	}
	/* a window around the second record of the 3rd segment */
	h = (struct stor_hold){ .trigger = "Late", .t_ns = T0 + S(first[2] + 1), .from_ns = T0 + S(first[2] + 1) - S(1) / 10,
		                .to_ns = T0 + S(first[2] + 1) + S(1) / 10 };
	CHECK(stor_hold_add(dir, &h, &id) == 0);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_hold_list(dir, out.f, err.f) == 0);
	printf("%s", tlib_mem_text(&out));
	snprintf(want, sizeof(want), " %llu-%llu ", (unsigned long long)first[4], (unsigned long long)first[5] - 1);
	CHECK(strstr(tlib_mem_text(&out), want), "kept %s:\n%s", want, tlib_mem_text(&out));
	snprintf(want, sizeof(want), "\n      gone: seqs %llu-%llu (%llu records deleted between the segments kept; the "
	         "window's records among them are lost)\n", (unsigned long long)first[2], (unsigned long long)first[4] - 1,
	         (unsigned long long)(first[4] - first[2]));
	CHECK(strstr(tlib_mem_text(&out), want), "want%s\n%s", want, tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

int main(void)
{
	char good[] = "/tmp/test-report-XXXXXX", bad[] = "/tmp/test-report-XXXXXX", health[] = "/tmp/test-report-XXXXXX",
	     holds[] = "/tmp/test-report-XXXXXX", gone[] = "/tmp/test-report-XXXXXX";

	CHECK(mkdtemp(good) && mkdtemp(bad) && mkdtemp(health) && mkdtemp(holds) && mkdtemp(gone));
	write_log(good, false);
	write_log(bad, true);
	test_summary(good);
	test_export(good, false);
	test_export(bad, true);
	test_logfault(good);
	test_stat(health);
	test_channels(good);
	test_decode(health);
	test_verify();
	test_trace_survey(health);
	test_livetable();
	test_hold(good, holds);
	test_hold_gone(gone);
	CHECK(tlib_run((char *const[]){ "rm", "-rf", good, bad, health, holds, gone, NULL }, 30) == 0);
	return 0;
}
