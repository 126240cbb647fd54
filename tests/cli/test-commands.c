/* SPDX-License-Identifier: MIT */
/*
 * test-commands.c - what the commands say (cli/), called from C
 * on streams in memory: check's plan (cli/check-plan.h) on board files the
 * test writes, with the load and Modicon warnings `run` gives too;
 * watch's screen (cli/watch-screen.h) from a "channels" answer; export's
 * option checks and totals (export-cli.c); and the exit codes and words
 * of channels, decode, summary and verify on what cannot be read;
 * replay's trace check and keygen.
 *
 * Usage: test-commands SOURCE_ROOT (for cli/demo/train.dbc and .log).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dbc/dbc.h"
#include "conf/config.h"
#include "report/log-channels.h"
#include "cli/check-plan.h"
#include "cli/decode-run.h"
#include "report/export.h"
#include "cli/keygen-say.h"
#include "cli/live-table.h"
#include "pipeline/statserver.h"
#include "record/batch.h"
#include "report/summary.h"
#include "cli/replay-trace.h"
#include "cli/stat-table.h"
#include "cli/verify-say.h"
#include "cli/watch-screen.h"
#include "tlib.h"

static void write_file(const char *path, const char *content)
{
	FILE *f = fopen(path, "we");

	CHECK(f, "%s", path);
	fputs(content, f);
	CHECK(fclose(f) == 0);
}

static struct conf_board *load(const char *dir, const char *name, const char *content)
{
	char path[512], err[CONF_ERR_MAX];
	struct conf_board *cfg;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, content);
	CHECK(conf_load(path, &cfg, err, sizeof(err)) == 0, "%s", err);
	return cfg;
}

static const char rtu_board[] =
	"[board]\nvehicle = RTU-1\n"
	"[modbus line]\ntransport = rtu\ndevice = /dev/ttyS9\nbaud = 1200\nperiod_ms = 10\n"
	"[channel a]\nbus = line\nunit_id = 1\naddress = 40001\ntable = input\ntype = u16\n"
	"[channel b]\nbus = line\nunit_id = 1\naddress = 30005\ntable = input\ntype = u32\n"
	"[channel c]\nbus = line\nunit_id = 1\naddress = 35\ntable = holding\ntype = f32\n"
	"[channel d]\nbus = line\nunit_id = 1\naddress = 52000\ntype = s16\n";

/* A Modbus RTU line: each channel, the Modicon warnings, the request plan
   and the line too busy at 1200 baud; then the same warnings as run has
   them. */
static void test_check_modbus(const char *dir)
{
	struct cli_check_key key = { .r = 0 };
	struct conf_board *cfg = load(dir, "rtu.ini", rtu_board);
	struct tlib_mem out, err;
	char buf[320];

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_check_board(out.f, err.f, cfg, dir, &key) == 0, "%s", tlib_mem_text(&err));
	CHECK_STR(tlib_mem_text(&err), "");
	CHECK(strstr(tlib_mem_text(&out), "  [modbus line] RTU /dev/ttyS9 1200 8E1, timeout "), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "    warning: channel 'a': address 40001 looks like Modicon notation (holding register 1, "
	                         "numbered from 1); railmon takes the 0-based protocol address: for that register write "
	                         "'table = holding' and 'address = 0' (the channel says table = input)\n"),
	      "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "    request: unit 1 FC4 input 30005..30006 (1 channel) every 10 ms\n"), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "% of the line at 1200 baud (TOO BUSY: lengthen periods)\n"), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "UNSIGNED (no [board] key)"), "%s", tlib_mem_text(&out));
	/* "ok" is the last line */
	CHECK(strstr(tlib_mem_text(&out), "\nok\n") && !strstr(tlib_mem_text(&out), "\nok\n")[4], "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);

	CHECK(cli_bus_load_warning(cfg, 0, NULL, buf, sizeof(buf)));
	CHECK(!strncmp(buf, "[modbus line]: ", 15) && strstr(buf, "% of the line at 1200 baud (TOO BUSY: lengthen periods)"),
	      "%s", buf);
	CHECK(cli_mb_modicon_warning(&cfg->buses[0].mb.channels[1], buf, sizeof(buf)));
	CHECK(strstr(buf, "(input register 5, numbered from 1)") && strstr(buf, "'address = 4'") &&
	      !strstr(buf, "the channel says"), "%s", buf);
	CHECK(!cli_mb_modicon_warning(&cfg->buses[0].mb.channels[2], buf, sizeof(buf)));
	CHECK(cli_mb_modicon_warning(&cfg->buses[0].mb.channels[3], buf, sizeof(buf)));
	CHECK_STR(buf, "channel 'd': address 52000: railmon takes the 0-based protocol address; if this is Modicon "
	               "notation (3xxxx, 4xxxx), convert it");
	conf_free(cfg);
}

/* [sparkplug] in check's plan: broker, the NBIRTH topic with the edge node
   defaulting to the vehicle, the devices (all buses when none listed, else
   the list), the primary host. */
static void test_check_sparkplug(const char *dir)
{
	static const char *const boards[][2] = {
		{ "[board]\nvehicle = T-9\n[can a]\ninterface = can0\n[can b]\ninterface = can1\n"
		  "[sparkplug]\nbroker = mqtt://scada:1884\ngroup_id = Fleet\n",
		  "  sparkplug mqtt://scada:1884: spBv1.0/Fleet/NBIRTH/T-9, devices a b\n" },
		{ "[board]\nvehicle = T-9\n[can a]\ninterface = can0\n[can b]\ninterface = can1\n"
		  "[sparkplug]\nbroker = mqtt://scada\ngroup_id = Fleet\nedge_node = E\ndevices = b\nprimary_host = H\n",
		  "  sparkplug mqtt://scada:1883: spBv1.0/Fleet/NBIRTH/E, devices b, publishing while "
		  "spBv1.0/STATE/H is online\n" },
	};
	struct cli_check_key key = { .r = 0 };

	for (size_t i = 0; i < sizeof(boards) / sizeof(boards[0]); i++) {
		struct conf_board *cfg = load(dir, "spb.ini", boards[i][0]);
		struct tlib_mem out, err;

		tlib_mem_open(&out);
		tlib_mem_open(&err);
		cli_check_board(out.f, err.f, cfg, dir, &key);
		CHECK(strstr(tlib_mem_text(&out), boards[i][1]), "%s", tlib_mem_text(&out));
		tlib_mem_close(&out);
		tlib_mem_close(&err);
		conf_free(cfg);
	}
}

/* A CAN bus at 10 kbit/s with the demo DBC: its messages and the load
   warning; a key: signed, or refused; a DBC that is not there. */
static void test_check_can(const char *dir, const char *src)
{
	char board[1024], dbcpath[512], buf[320], errbuf[256];
	struct cli_check_key key = { .r = 1 }, bad = { .r = -EPERM, .err = "b.ini:3: key k: readable by others" };
	struct conf_board *cfg;
	struct tlib_mem out, err;
	dbc_t *dbc;

	snprintf(dbcpath, sizeof(dbcpath), "%s/cli/demo/train.dbc", src);
	snprintf(board, sizeof(board), "[board]\nvehicle = CAN-1\n[can slow]\ndriver = trace\nfile = t.log\n"
	         "bitrate = 10000\ndbc = %s\n[can other]\ndriver = trace\nfile = t.log\ndbc = %s/missing.dbc\n"
	         "uplink = change\n",
	         dbcpath, dir);
	cfg = load(dir, "can.ini", board);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_check_board(out.f, err.f, cfg, dir, &key) == 1);
	snprintf(buf, sizeof(buf), "  [can slow] driver trace, %s/t.log, listen-only, 10000 bit/s\n", dir);
	CHECK(strstr(tlib_mem_text(&out), buf), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "    DBC "), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&out), "% of the bus at 10 kbit/s (above 70%: frames will queue)\n"), "%s", tlib_mem_text(&out));
	/* the all-zero public key's id, not the secret */
	CHECK(strstr(tlib_mem_text(&out), "  evidence: hash chain and Seals every 60 s, signed with  (key id "), "%s", tlib_mem_text(&out));
	CHECK(!strstr(tlib_mem_text(&out), "\nok\n"), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&err), "railmon check: ") && strstr(tlib_mem_text(&err), "missing.dbc"), "%s", tlib_mem_text(&err));
	/* the recorder's channels, the uplink's and the bus's own plan all load
	   the DBC: its error said once, not three times */
	CHECK(!strstr(strstr(tlib_mem_text(&err), "missing.dbc") + 1, "missing.dbc"), "%s", tlib_mem_text(&err));
	tlib_mem_close(&out);
	tlib_mem_close(&err);

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_check_board(out.f, err.f, cfg, dir, &bad) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon check: b.ini:3: key k: readable by others\n"), "%s", tlib_mem_text(&err));
	CHECK(!strstr(tlib_mem_text(&out), "  evidence:"), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);

	CHECK(dbc_load(dbcpath, &dbc, errbuf, sizeof(errbuf)) == 0, "%s", errbuf);
	CHECK(cli_bus_load_warning(cfg, 0, dbc, buf, sizeof(buf)));
	CHECK(!strncmp(buf, "[can slow]: about ", 18) && strstr(buf, "% of the bus at 10 kbit/s (above 70%: frames will "
	                                                              "queue)"), "%s", buf);
	CHECK(!cli_bus_load_warning(cfg, 0, NULL, buf, sizeof(buf)));
	dbc_free(dbc);
	conf_free(cfg);
}

/* watch's screen from a daemon's answer: the clock said in the title, the
   rows, values that age while the daemon is away, --once without escapes. */
static void test_watch(void)
{
	struct pl_stat_value v[] = {
		{ .id = 1, .name = "Eng.Speed", .unit = "km/h", .source = "can0", .value = 20, .t_ns = 1000000000 },
		{ .id = 2, .name = "Eng.Temp", .unit = "degC", .source = "can0", .value = 99.5, .t_ns = 2000000000 },
	};
	struct pl_stat_clock clock = { .unsynced = true, .max_error_us = 16000 };
	struct cli_watch w = { .sock = "/run/x.sock", .view = { .width = 100, .stale_s = 5 } };
	struct tlib_mem answer, out;
	int64_t age;
	FILE *f;

	tlib_mem_open(&answer);
	pl_stat_clock_json(answer.f, &clock);
	pl_stat_live_json(answer.f, &v[0], 3000000000);
	fputs("not a channel\n", answer.f);
	pl_stat_live_json(answer.f, &v[1], 3000000000);
	f = fmemopen((void *)tlib_mem_text(&answer), strlen(tlib_mem_text(&answer)), "r");
	CHECK(f);
	CHECK(cli_watch_read(&w, f) == 0);
	fclose(f);
	tlib_mem_close(&answer);
	CHECK(w.nrows == 2 && !strcmp(w.rows[0].name, "Eng.Speed") && !strcmp(w.rows[1].name, "Eng.Temp"));
	CHECK_STR(w.clock, "  clock unsynced (max error 16 ms)");

	tlib_mem_open(&out);
	CHECK(cli_watch_frame(&w, 0, 10000000000, out.f) == 0);
	CHECK(w.table && strstr(w.title, "railmon watch /run/x.sock  ") && strstr(w.title, "  clock unsynced"),
	      "%s", w.title);
	CHECK(strstr(tlib_mem_text(&out), "Eng.Speed") && strstr(tlib_mem_text(&out), "Eng.Temp"), "%s", tlib_mem_text(&out));
	age = w.rows[0].age_ns;
	/* the daemon is away: the same rows, two seconds older */
	CHECK(cli_watch_frame(&w, -ECONNREFUSED, 12000000000, out.f) == 0);
	CHECK(w.rows[0].age_ns == age + 2000000000, "%lld", (long long)w.rows[0].age_ns);
	CHECK(strstr(w.title, ": Connection refused (retrying)"), "%s", w.title);
	tlib_mem_close(&out);

	tlib_mem_open(&out);
	cli_watch_once(&w, out.f);
	CHECK(strstr(tlib_mem_text(&out), "Eng.Speed") && strstr(tlib_mem_text(&out), "Eng.Temp") && !strchr(tlib_mem_text(&out), '\033'),
	      "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	cli_watch_release(&w);
	CHECK(!w.rows && !w.table && !w.nrows);
}

/* watch's buses from a daemon's health answer (stat's JSON lines): a bus
   that came back with its reopens and blind time, one whose return was
   not seen without a blind time, one gone; a bus that never went away,
   the uplink, the clock and the daemon line not said.  First in the
   title, whole after the --once table. */
static void test_watch_buses(void)
{
	struct rec_health h[] = {
		{ .name = "vehicle", .kind = "can", .state = "up", .reopens = 1, .blind_ms = 117 },
		{ .name = "steady", .kind = "can", .state = "up", .reopens = 0, .blind_ms = UINT32_MAX },
		{ .name = "recorder", .kind = "can", .state = "up", .reopens = 4, .blind_ms = UINT32_MAX },
		{ .name = "hvac", .kind = "modbus", .state = "gone", .reopens = 0, .blind_ms = UINT32_MAX },
		{ .name = "uplink", .kind = "uplink", .state = "offline", .reopens = 2, .blind_ms = UINT32_MAX },
		{ .name = "clock", .kind = "clock", .state = "unsynced", .reopens = 3, .blind_ms = UINT32_MAX },
	};
	const char *want = "vehicle up, 1 reopen, blind 117 ms; recorder up, 4 reopens; hvac gone, 0 reopens";
	struct cli_watch w = { .sock = "/run/x.sock", .view = { .width = 200 } };
	struct tlib_mem answer, out;
	FILE *f;

	tlib_mem_open(&answer);
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		pl_stat_health_json(answer.f, &h[i]);
	fputs("{\"name\":\"daemon\",\"records\":5,\"reopens\":9,\"state\":\"up\"}\n", answer.f);
	f = fmemopen((void *)tlib_mem_text(&answer), strlen(tlib_mem_text(&answer)), "r");
	CHECK(f);
	CHECK(cli_watch_read_buses(&w, f) == 3);
	fclose(f);
	tlib_mem_close(&answer);
	CHECK_STR(w.buses, want);
	cli_watch_title(&w, 0);
	CHECK(!strncmp(w.title, "railmon watch vehicle up, 1 reopen, blind 117 ms; ", 50) &&
	      strstr(w.title, "hvac gone, 0 reopens  /run/x.sock  "), "%s", w.title);
	tlib_mem_open(&out);
	cli_watch_once(&w, out.f);
	{
		/* the last line, after the table */
		const char *text = tlib_mem_text(&out), *last = "buses: vehicle up, 1 reopen, blind 117 ms; "
		                                                   "recorder up, 4 reopens; hvac gone, 0 reopens\n";

		CHECK(strlen(text) >= strlen(last) && !strcmp(text + strlen(text) - strlen(last), last) &&
		      (strlen(text) == strlen(last) || text[strlen(text) - strlen(last) - 1] == '\n'), "%s", text);
	}
	tlib_mem_close(&out);
	cli_watch_release(&w);

	/* every bus back and steady: nothing said, the title as before */
	tlib_mem_open(&answer);
	pl_stat_health_json(answer.f, &h[1]);
	f = fmemopen((void *)tlib_mem_text(&answer), strlen(tlib_mem_text(&answer)), "r");
	CHECK(f);
	CHECK(cli_watch_read_buses(&w, f) == 0 && !w.buses[0]);
	fclose(f);
	tlib_mem_close(&answer);
	cli_watch_title(&w, 0);
	CHECK(!strncmp(w.title, "railmon watch /run/x.sock  ", 27), "%s", w.title);
}

/* stat's drops column, through the daemon's JSON line as `railmon stat`
   reads it: a bus's drops are its ring's and its kernel socket's
   (rx_dropped: SO_RXQ_OVFL, the link check's SK_MEMINFO and interface
   counters), for CAN as for TRDP, so no drop is left out of the table. */
static void test_stat_drops(void)
{
	static const struct {
		struct rec_health h;
		uint64_t want;
	} c[] = {
		{ { .name = "vehicle", .kind = "can", .items = 10, .drops = 2, .rx_dropped = 5 }, 7 },
		{ { .name = "ecn", .kind = "trdp", .items = 10, .drops = 1, .rx_dropped = 4 }, 5 },
		{ { .name = "hvac", .kind = "modbus", .items = 10, .drops = 3 }, 3 },
		{ { .name = "log", .kind = "log", .items = 10, .drops = 6 }, 6 },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct tlib_mem json, out;
		struct rec_health h;
		char name[32], kind[16];
		uint64_t items, drops;
		double rate;

		tlib_mem_open(&json);
		pl_stat_health_json(json.f, &c[i].h);
		fflush(json.f);
		cli_stat_health_parse(tlib_mem_text(&json), &h);
		tlib_mem_close(&json);
		tlib_mem_open(&out);
		cli_health_row(out.f, &h);
		fflush(out.f);
		CHECK(sscanf(tlib_mem_text(&out), "%31s %15s %" SCNu64 " %lf %" SCNu64, name, kind, &items, &rate,
		             &drops) == 5, "%s", tlib_mem_text(&out));
		CHECK(!strcmp(name, c[i].h.name) && drops == c[i].want, "%s drops %" PRIu64 ", want %" PRIu64 ":\n%s",
		      c[i].h.kind, drops, c[i].want, tlib_mem_text(&out));
		tlib_mem_close(&out);
	}
}

/* export's option combinations, its default kinds and its totals. */
static void test_export_cli(void)
{
	struct rpt_export x = { .format = REC_FORMAT_CSV, .raster_ns = 100000000, .window_ns = REC_ORDER_WINDOW_NS };
	struct tlib_mem out, err;

	tlib_mem_open(&err);
	x.err = err.f;
	CHECK(rpt_export_check(&x) == 2);
	CHECK_STR(tlib_mem_text(&err), "railmon export: --raster needs --wide\n");
	x.wide = true;
	x.format = REC_FORMAT_JSONL;
	CHECK(rpt_export_check(&x) == 2);
	CHECK(strstr(tlib_mem_text(&err), "railmon export: --wide writes CSV: no --format jsonl\n"), "%s", tlib_mem_text(&err));
	/* --from at or after --to: no time between them, a usage error (issue 28:
	   it wrote a header and "0 records written", exit 0) */
	x = (struct rpt_export){ .err = err.f, .format = REC_FORMAT_CANDUMP, .window_ns = REC_ORDER_WINDOW_NS,
	                         .from_ns = 2000, .to_ns = 1000 };
	CHECK(rpt_export_check(&x) == 2 && !x.order);
	CHECK(strstr(tlib_mem_text(&err), "railmon export: --from is not before --to: no time is between them\n"), "%s",
	      tlib_mem_text(&err));
	x.to_ns = 2000;
	CHECK(rpt_export_check(&x) == 2 && !x.order);
	x.to_ns = 2001;
	CHECK(rpt_export_check(&x) == 0 && x.kinds == 1u << ACQ_ITEM_CAN && x.order);
	tlib_mem_close(&err);

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	x.out = out.f;
	x.err = err.f;
	x.written = 3;
	fputs("row\n", x.out);
	CHECK(rpt_export_finish(&x, 0) == 0);
	CHECK(out.len == 4, "finish flushes the output: %zu", out.len);
	rpt_export_summary(&x);
	CHECK_STR(tlib_mem_text(&err), "railmon export: 3 records written\n");
	x.damaged = 1;
	rpt_export_summary(&x);
	CHECK(strstr(tlib_mem_text(&err), "railmon export: 3 records written; 1 unreadable part of the log skipped (see above)\n"),
	      "%s", tlib_mem_text(&err));
	rpt_export_release(&x);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* channels, summary and verify on what is not there: the exit code 1 and
   the path in the words. */
static void test_not_there(void)
{
	struct evd_verify_cfg vc = { 0 };
	struct rpt_summary_opts o = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	rpt_summary_t *s;
	struct tlib_mem out, err;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(rpt_channels_of_log(out.f, err.f, "/nonexistent-railmon", false, 0) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon channels: /nonexistent-railmon: "), "%s", tlib_mem_text(&err));
	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_run(s, "/nonexistent-railmon", false, out.f) == 1);
	rpt_summary_free(s);
	CHECK(strstr(tlib_mem_text(&err), "railmon summary: /nonexistent-railmon: "), "%s", tlib_mem_text(&err));
	CHECK(cli_verify_run(out.f, err.f, "/nonexistent-railmon", "/nonexistent-railmon.pub", &vc, false) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon verify: /nonexistent-railmon.pub: "), "%s", tlib_mem_text(&err));
	CHECK(!vc.public_key, "the caller's cfg is left as it was");
	CHECK(cli_verify_run(out.f, err.f, "/nonexistent-railmon", NULL, &vc, false) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon verify: /nonexistent-railmon: "), "%s", tlib_mem_text(&err));
	CHECK_STR(tlib_mem_text(&out), "");
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* channels of a board: the demo DBC's signals, counted on err. */
static void test_channels_of_board(const char *dir, const char *src)
{
	char board[1024];
	struct conf_board *cfg;
	struct tlib_mem out, err;

	snprintf(board, sizeof(board), "[board]\nvehicle = C\n[can x]\ndriver = trace\nfile = t.log\n"
	         "dbc = %s/cli/demo/train.dbc\n", src);
	cfg = load(dir, "ch.ini", board);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(rpt_channels_of_board(out.f, err.f, cfg, "ch.ini", true, 0) == 0, "%s", tlib_mem_text(&err));
	CHECK(strstr(tlib_mem_text(&err), "railmon channels: ") && strstr(tlib_mem_text(&err), " channels in ch.ini\n"), "%s", tlib_mem_text(&err));
	CHECK(strstr(tlib_mem_text(&out), "{\""), "%s", tlib_mem_text(&out));
	tlib_mem_close(&out);
	tlib_mem_close(&err);
	conf_free(cfg);
}

/* decode: the header, the frames and a line that is not candump, said and
   counted in the totals. */
static void test_decode_run(const char *src)
{
	struct cli_decode d = { .fmt = REC_FORMAT_CSV };
	char dbcpath[512], errbuf[256], line[256], input[1024] = "";
	struct tlib_mem out, err;
	FILE *f, *in;

	snprintf(dbcpath, sizeof(dbcpath), "%s/cli/demo/train.log", src);
	f = fopen(dbcpath, "re");
	CHECK(f);
	for (int i = 0; i < 3 && fgets(line, sizeof(line), f); i++)
		strcat(input, line);
	fclose(f);
	strcat(input, "junk\n");
	snprintf(dbcpath, sizeof(dbcpath), "%s/cli/demo/train.dbc", src);
	CHECK(dbc_load(dbcpath, &d.dbc, errbuf, sizeof(errbuf)) == 0, "%s", errbuf);
	CHECK(cli_decode_alloc(&d) == 0 && d.samples && d.max > 0);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	d.out = out.f;
	d.err = err.f;
	in = fmemopen(input, strlen(input), "r");
	CHECK(in);
	CHECK(cli_decode_run(&d, in, "mem", "train.dbc") == 1);
	fclose(in);
	CHECK(!strncmp(tlib_mem_text(&out), "vehicle,log_id,seq,", 19), "%s", tlib_mem_text(&out));
	CHECK(strstr(tlib_mem_text(&err), "railmon decode: mem:4: ") &&
	      strstr(tlib_mem_text(&err), "railmon decode: 3 frames, 3 decoded with train.dbc; 1 line not candump (said above)\n"),
	      "%s", tlib_mem_text(&err));

	/* an empty input, then an empty DBC: one sentence and exit 1, not 0
	   (issue 28) */
	tlib_mem_close(&err);
	tlib_mem_open(&err);
	d.err = err.f;
	d.frames = d.decoded = d.bad = 0;
	in = fopen("/dev/null", "re");
	CHECK(in);
	CHECK(cli_decode_run(&d, in, "empty.log", "train.dbc") == 1);
	fclose(in);
	CHECK_STR(tlib_mem_text(&err), "railmon decode: empty.log is empty: no candump line to decode\n");
	cli_decode_release(&d);
	CHECK(!d.samples && !d.dbc);
	CHECK(dbc_load_buffer("empty.dbc", "", 0, &d.dbc, errbuf, sizeof(errbuf)) == 0, "%s", errbuf);
	CHECK(cli_decode_alloc(&d) == 0);
	in = fmemopen(input, strlen(input), "r");
	CHECK(in);
	tlib_mem_close(&err);
	tlib_mem_open(&err);
	d.err = err.f;
	CHECK(cli_decode_run(&d, in, "mem", "empty.dbc") == 1);
	fclose(in);
	CHECK_STR(tlib_mem_text(&err), "railmon decode: empty.dbc defines no signal: nothing to decode with\n");
	cli_decode_release(&d);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

/* replay's source: a trace railmon reads (what it holds said), or not. */
static void test_trace_check(const char *dir, const char *src)
{
	static struct cli_trace_info info; /* 2 KiB: off the stack */
	char path[512];
	struct tlib_mem err;

	tlib_mem_open(&err);
	CHECK(cli_trace_check(err.f, "/nonexistent-railmon.log", true) == 2);
	CHECK_STR(tlib_mem_text(&err), "railmon replay: /nonexistent-railmon.log: No such file or directory\n");
	snprintf(path, sizeof(path), "%s/garbage.log", dir);
	write_file(path, "garbage\n");
	CHECK(cli_trace_check(err.f, path, true) == 2);
	CHECK(strstr(tlib_mem_text(&err), ": not a trace in any format railmon reads (tried "), "%s", tlib_mem_text(&err));
	tlib_mem_close(&err);
	tlib_mem_open(&err);
	snprintf(path, sizeof(path), "%s/cli/demo/train.log", src);
	CHECK(cli_trace_check(err.f, path, false) == -1);
	CHECK_STR(tlib_mem_text(&err), "");
	CHECK(cli_trace_check(err.f, path, true) == -1);
	CHECK(strstr(tlib_mem_text(&err), "train.log: candump, 8100 frames\n"), "%s", tlib_mem_text(&err));
	tlib_mem_close(&err);

	/* an empty trace: refused, not a log of 5 events and exit 0 (issue 28) */
	tlib_mem_open(&err);
	snprintf(path, sizeof(path), "%s/empty.log", dir);
	write_file(path, "");
	CHECK(cli_trace_check(err.f, path, true) == 1);
	CHECK(strstr(tlib_mem_text(&err), "empty.log holds no CAN frame: nothing to replay\n"), "%s", tlib_mem_text(&err));
	tlib_mem_close(&err);

	/* a damaged line: counted by the survey, and the replay that ran exits 1
	   as decode of the same file does (issue 28) */
	tlib_mem_open(&err);
	snprintf(path, sizeof(path), "%s/damaged.log", dir);
	write_file(path, "(1.000000) can0 123#00\njunk\n(2.000000) can0 123#01\n");
	CHECK(cli_trace_check_info(err.f, path, true, &info) == -1);
	CHECK(info.frames == 2 && info.damaged == 1, "%" PRIu64 " %" PRIu64, info.frames, info.damaged);
	CHECK(strstr(tlib_mem_text(&err), "damaged.log:2: "), "%s", tlib_mem_text(&err));
	CHECK(cli_trace_verdict(err.f, "damaged.log", &info, 2) == 2);
	CHECK(cli_trace_verdict(err.f, "damaged.log", &info, 0) == 1);
	CHECK(strstr(tlib_mem_text(&err), "railmon replay: 1 damaged part of damaged.log skipped (the first named above); "
	             "the rest replayed\n"), "%s", tlib_mem_text(&err));
	info.damaged = 0;
	CHECK(cli_trace_verdict(err.f, "damaged.log", &info, 0) == 0);
	tlib_mem_close(&err);
}

/* keygen: a pair made and said; never over an existing file. */
static void test_keygen(const char *dir)
{
	char secret[512], pub[512];
	struct tlib_mem out, err;

	snprintf(secret, sizeof(secret), "%s/v.key", dir);
	snprintf(pub, sizeof(pub), "%s/v.key.pub", dir);
	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(cli_keygen(out.f, err.f, secret, pub) == 0, "%s", tlib_mem_text(&err));
	CHECK(strstr(tlib_mem_text(&out), "(0600): name it in the board file, [board] key = ") &&
	      strstr(tlib_mem_text(&out), ", key id "), "%s", tlib_mem_text(&out));
	CHECK(access(secret, R_OK) == 0 && access(pub, R_OK) == 0);
	CHECK(cli_keygen(out.f, err.f, secret, pub) == 1);
	CHECK_STR(tlib_mem_text(&err), "railmon keygen: a key file exists (never overwritten): remove it first, or choose another "
	                      "name\n");
	tlib_mem_close(&out);
	tlib_mem_close(&err);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test-commands-XXXXXX";

	CHECK(argc == 2, "usage: test-commands SOURCE_ROOT");
	CHECK(mkdtemp(dir));
	test_check_modbus(dir);
	test_check_sparkplug(dir);
	test_check_can(dir, argv[1]);
	test_watch();
	test_watch_buses();
	test_stat_drops();
	test_export_cli();
	test_not_there();
	test_channels_of_board(dir, argv[1]);
	test_decode_run(argv[1]);
	test_trace_check(dir, argv[1]);
	test_keygen(dir);
	CHECK(tlib_run((char *const[]){ "rm", "-rf", dir, NULL }, 30) == 0);
	return 0;
}
