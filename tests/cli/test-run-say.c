/* SPDX-License-Identifier: MIT */
/*
 * test-run-say.c - cli/run-say.c and demo-say.c: the words `run`,
 * `replay` and `demo` say about a running daemon, written into memory and
 * compared with the texts operators and the journal have always had.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/demo-say.h"
#include "cli/run-say.h"
#include "uplink/spb-pub.h"
#include "tlib.h"

/* Two buses: CAN over SocketCAN, Modbus TCP. */
static struct conf_board *board(void)
{
	struct conf_board *cfg = calloc(1, sizeof(*cfg));

	CHECK(cfg);
	snprintf(cfg->vehicle, sizeof(cfg->vehicle), "EMU-7");
	cfg->hash = 0x1234abcdull;
	cfg->nbuses = 2;
	snprintf(cfg->buses[0].name, sizeof(cfg->buses[0].name), "vehicle");
	cfg->buses[0].kind = BUS_KIND_CAN;
	cfg->buses[0].can.driver = BUS_CAN_SOCKETCAN;
	snprintf(cfg->buses[0].can.ifname, sizeof(cfg->buses[0].can.ifname), "can0");
	snprintf(cfg->buses[1].name, sizeof(cfg->buses[1].name), "traction");
	cfg->buses[1].kind = BUS_KIND_MODBUS;
	snprintf(cfg->buses[1].mb.host, sizeof(cfg->buses[1].mb.host), "10.0.0.2");
	cfg->buses[1].mb.port = 502;
	snprintf(cfg->uplink.host, sizeof(cfg->uplink.host), "ground.example");
	cfg->uplink.port = 8883;
	cfg->uplink.tls = true;
	return cfg;
}

static void test_cursor(void)
{
	static const struct {
		int err;
		const char *want;
	} cases[] = {
		{ -ENODATA, "is empty" },
		{ -ERANGE, "holds a sequence number that is zero, negative or too large" },
		{ -EOVERFLOW, "points at seq 900, past the end of the log (its next seq is 120)" },
		{ -EISDIR, "is a directory, not a file: remove it, or the cursor is never saved and every start sends the whole log again" },
		{ -EACCES, "cannot be read (Permission denied)" },
	};
	struct upl_forward_stats st = { .cursor_damage = -EBADMSG };
	char buf[256];
	struct tlib_mem m;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cli_cursor_damage_words(cases[i].err, 900, 120, buf, sizeof(buf));
		CHECK_STR(buf, cases[i].want);
	}
	tlib_mem_open(&m);
	cli_uplink_cursor_warning(m.f, "run", "/data", &st, 5);
	st.cursor_damage = 0; /* nothing wrong: nothing said */
	cli_uplink_cursor_warning(m.f, "run", "/data", &st, 5);
	CHECK_STR(tlib_mem_text(&m), "railmon run: warning: the uplink cursor /data/uplink.cursor does not hold a cursor line "
	          "(\"railmon-cursor 1 <seq>\"): it is damaged or was cut short; sending the whole log again from its "
	          "oldest record (the ground gets duplicates, nothing is lost)\n");
	tlib_mem_close(&m);
}

static void test_uplink(const struct conf_board *cfg)
{
	struct upl_forward_stats st = { .cursor = 40, .connect_fails = 3, .cursor_errors = 2 };
	char broker[160];
	struct tlib_mem m;

	cli_broker_url(&cfg->uplink, broker, sizeof(broker));
	CHECK_STR(broker, "mqtts://ground.example:8883");
	snprintf(st.last_error_text, sizeof(st.last_error_text), "Connection refused");
	tlib_mem_open(&m);
	cli_uplink_news(m.f, "run", broker, &(struct pl_uplink_news){ .conn = PL_UPLINK_CONN_LOST,
	                .fail = PL_UPLINK_FAIL_STILL, .fails = 12, .fail_s = 61.4 }, "Connection refused");
	cli_uplink_news(m.f, "run", broker, &(struct pl_uplink_news){ .conn = PL_UPLINK_CONN_BACK, .back_fails = 1,
	                .back_s = 2.25 }, "");
	cli_uplink_news(m.f, "run", broker, &(struct pl_uplink_news){ .conn = PL_UPLINK_CONN_RECONNECTED }, "");
	cli_uplink_news(m.f, "run", broker, &(struct pl_uplink_news){ .fail = PL_UPLINK_FAIL_CANNOT }, "timeout");
	cli_uplink_status(m.f, broker, &st, 100);
	CHECK_STR(tlib_mem_text(&m),
	          "railmon run: uplink: lost the connection to mqtts://ground.example:8883: Connection refused; reconnecting\n"
	          "railmon run: uplink: still cannot connect to mqtts://ground.example:8883: Connection refused (12 attempts in 61 s)\n"
	          "railmon run: uplink: connected to mqtts://ground.example:8883 after 1 failed attempt in 2.2 s\n"
	          "railmon run: uplink: reconnected to mqtts://ground.example:8883\n"
	          "railmon run: uplink: cannot connect to mqtts://ground.example:8883: timeout; retrying (said again at most once a minute)\n"
	          "railmon: uplink to mqtts://ground.example:8883: not connected, 60 records not yet acknowledged (from seq 40), "
	          "3 failed connection attempts, last connection error: Connection refused; cursor file write failures: 2\n");
	tlib_mem_close(&m);
}

/* The Sparkplug B publisher's words: every counter that is not zero, in
   its place; a quiet one says only what went.  Its TLS warning only for
   [sparkplug] with TLS and tls_insecure. */
static void test_sparkplug(void)
{
	struct upl_spb_stats st = { .connected = true, .bdseq = 7, .ddata = 300, .metrics = 450, .bytes = 14742,
	                            .acked_seq = 560, .connect_failures = 4, .rewinds = 1, .resent = 3,
	                            .batches_too_big = 2, .nulled = 11, .batches_bad = 5, .dead_batches = 6, .cmd_refused = 8,
	                            .state_bad = 9, .bdseq_damage = -EBADMSG, .cursor_store_failures = 1,
	                            .cursor_damage = -ERANGE };
	struct upl_spb_stats quiet = { .ddata = 1, .metrics = 2, .bytes = 30, .acked_seq = 10 };
	struct conf_board *cfg = calloc(1, sizeof(*cfg));
	struct tlib_mem m;

	CHECK(cfg);
	tlib_mem_open(&m);
	cli_spb_start_warning(m.f, "run", "/data", &st);
	cli_spb_start_warning(m.f, "run", "/data", &quiet); /* no damage: nothing said */
	cli_spb_status(m.f, "mqtt://scada:1883", &st, 600);
	cli_spb_status(m.f, "mqtt://scada:1883", &quiet, 5); /* the log behind the cursor: 0, not a wrap */
	CHECK_STR(tlib_mem_text(&m),
	          "railmon run: warning: the sparkplug cursor /data/sparkplug-cursor holds a sequence number that is "
	          "zero, negative or too large; publishing the whole log again from its oldest record, historical (the "
	          "host gets duplicates, nothing is lost)\n"
	          "railmon: sparkplug to mqtt://scada:1883: connected, bdSeq 7, 300 DDATA (450 metrics, 14742 bytes), "
	          "40 records not yet confirmed by the broker (from seq 560), 4 failed connection attempts; 3 Batches "
	          "sent again (historical) after 1 lost connections; 2 Batches too big for a DDATA, not sent; 11 samples sent null (value not "
	          "of the channel's datatype); 5 Batches "
	          "not decodable, not sent; 6 Batches of a gone device (DDEATH), not sent; 8 command metrics refused "
	          "(only Rebirth is done); 9 primary host STATE messages not understood; the bdSeq file sparkplug-bdseq "
	          "was damaged (Bad message): started again at 0; cursor file write failures: 1\n"
	          "railmon: sparkplug to mqtt://scada:1883: not connected, bdSeq 0, 1 DDATA (2 metrics, 30 bytes), 0 "
	          "records not yet confirmed by the broker (from seq 10), 0 failed connection attempts\n");
	tlib_mem_close(&m);
	/* tls_insecure said for [sparkplug] with TLS, not without */
	snprintf(cfg->vehicle, sizeof(cfg->vehicle), "T-1");
	cfg->sparkplug.mqtt.enabled = cfg->sparkplug.mqtt.tls_insecure = true;
	tlib_mem_open(&m);
	cli_run_started(m.f, "run", cfg, "/data", "", "");
	cfg->sparkplug.mqtt.tls = true;
	cli_run_started(m.f, "run", cfg, "/data", "", "");
	CHECK_STR(tlib_mem_text(&m),
	          "railmon run: vehicle T-1, 0 buses, config 0000000000000000, log in /data\n"
	          "railmon run: WARNING: [sparkplug] tls_insecure = true: the broker's certificate is NOT verified\n"
	          "railmon run: vehicle T-1, 0 buses, config 0000000000000000, log in /data\n");
	tlib_mem_close(&m);
	free(cfg);
}

static void test_status(const struct conf_board *cfg)
{
	uint64_t rx[2] = { 500, 20 }, errors[2] = { 0, 3 };
	struct cli_run_counts c = { .records = 520, .first_seq = 1, .next_seq = 521, .ring_drops = 4,
	                            .log_dropped = 2, .bus_rx = rx, .bus_errors = errors };
	struct acq_link_state links[2] = { { .state = ACQ_LINK_GONE, .losses = 2, .reopens = 1 }, { 0 } };
	char status[256];
	struct tlib_mem m;

	tlib_mem_open(&m);
	cli_run_status(m.f, cfg, &c, links);
	cli_run_started(m.f, "run", cfg, "/data", "realtime not granted", "");
	CHECK_STR(tlib_mem_text(&m), "railmon: 520 records stored (seq 1..520), 4 ring drops, 2 refused by the log; vehicle: 500 in, "
	          "0 errors, device lost 2 times, reopened 1, now gone; traction: 20 in, 3 errors;\n"
	          "railmon run: warning: realtime not granted\n"
	          "railmon run: vehicle EMU-7, 2 buses, config 000000001234abcd, log in /data\n");
	tlib_mem_close(&m);
	cli_run_status_text(&c, status, sizeof(status));
	CHECK_STR(status, "STATUS=520 records stored, 4 ring drops, 2 refused by the log");
}

static void test_link(const struct conf_board *cfg)
{
	struct acq_link_state l = { .state = ACQ_LINK_GONE, .losses = 3, .cause = -ENODEV };
	char buf[512];

	cli_link_words(&cfg->buses[0], &l, 2, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'vehicle' (socketcan can0) is gone: No such device (interface deleted or adapter "
	          "unplugged); recording the rest, reopening as soon as it returns (2 losses since the last message)");
	l.reopen_err = -ENOENT;
	l.attempts = 1;
	cli_link_words(&cfg->buses[0], &l, 0, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'vehicle' (socketcan can0) still gone after 1 attempt: reopen: No such file or directory");
	l = (struct acq_link_state){ .state = ACQ_LINK_UP, .reopens = 4, .attempts = 3, .gone_ns = 1000000000,
	                             .back_ns = 3500000000, .blind_ms = ACQ_BLIND_UNKNOWN };
	cli_link_words(&cfg->buses[1], &l, 0, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'traction' (modbus tcp 10.0.0.2:502) is back after 2.5 s (3 attempts), reopen #4");
	l.cause = -EPIPE;
	cli_link_words(&cfg->buses[1], &l, 1, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'traction' (modbus tcp 10.0.0.2:502) is back after 2.5 s, reopen #4; it was gone: Broken pipe "
	          "(the tty hung up: adapter unplugged or its pty closed)");
	/* its return seen: the blind time after it, 0 ms included */
	l.blind_ms = 0;
	cli_link_words(&cfg->buses[1], &l, 0, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'traction' (modbus tcp 10.0.0.2:502) is back after 2.5 s (3 attempts), reopen #4, read again "
	          "0 ms after it reappeared");
	l.blind_ms = 104;
	cli_link_words(&cfg->buses[0], &l, 2, buf, sizeof(buf));
	CHECK_STR(buf, "bus 'vehicle' (socketcan can0) is back after 2.5 s, reopen #4, read again 104 ms after it "
	          "reappeared (2 losses since the last message); it was gone: Broken pipe (the tty hung up: adapter "
	          "unplugged or its pty closed)");
}

static void test_refusals_and_verdict(void)
{
	struct pl_run_totals t = { .refused = 7, .unreported = 2, .log_error = -ENOSPC, .replay_skipped = 1 };
	char status[256];
	struct tlib_mem m;

	tlib_mem_open(&m);
	cli_log_refusing(m.f, "run", -EIO, 9, status, sizeof(status));
	CHECK_STR(status, "STATUS=the log is refusing records (Input/output error): 9 refused");
	cli_log_recovered(m.f, "run", 9);
	CHECK(cli_run_verdict(m.f, "replay", &t, 0) == 1);
	CHECK_STR(tlib_mem_text(&m), "railmon run: THE LOG IS REFUSING RECORDS (Input/output error): 9 refused so far; they are "
	          "counted and written as one event once the log accepts records again\n"
	          "railmon run: the log takes records again; 9 were refused, counted in its LOG_DROPPED events\n"
	          "railmon replay: 7 records were refused by the log (No space left on device)\n"
	          "railmon replay: 2 of them are in no LOG_DROPPED event: the log still refused records at the stop, "
	          "so only this message says so\n"
	          "railmon replay: 1 unreadable part of the source log skipped (see above)\n");
	tlib_mem_close(&m);
	/* a run that kept everything keeps its exit code, and says nothing */
	tlib_mem_open(&m);
	CHECK(cli_run_verdict(m.f, "run", &(struct pl_run_totals){ 0 }, 0) == 0);
	CHECK(cli_run_verdict(m.f, "run", &(struct pl_run_totals){ 0 }, 1) == 1);
	CHECK(cli_run_verdict(m.f, "replay", &(struct pl_run_totals){ .replay_error = -EBADMSG }, 0) == 1);
	CHECK_STR(tlib_mem_text(&m), "railmon replay: the source log could not be read to its end: Bad message\n");
	tlib_mem_close(&m);
	/* a holds file damaged during the run (issue 24): exit 1, file and line */
	tlib_mem_open(&m);
	t = (struct pl_run_totals){ .hold_error = -EBADMSG, .hold_error_line = 5, .hold_error_now = -EBADMSG,
	                            .holds_dir = "/data" };
	CHECK(cli_run_verdict(m.f, "run", &t, 0) == 1);
	t.hold_error_now = 0;
	CHECK(cli_run_verdict(m.f, "run", &t, 0) == 1);
	t = (struct pl_run_totals){ .hold_error = -EACCES, .hold_error_now = -EACCES, .holds_dir = "/data" };
	CHECK(cli_run_verdict(m.f, "run", &t, 0) == 1);
	CHECK_STR(tlib_mem_text(&m), "railmon run: the holds file /data/holds was damaged during the run (line 5): "
	          "retention deleted nothing while it was so; it still is, at line 5: the next start refuses it until "
	          "it is repaired or removed\n"
	          "railmon run: the holds file /data/holds was damaged during the run (line 5): retention deleted "
	          "nothing while it was so; it is readable again\n"
	          "railmon run: the holds file /data/holds could not be read during the run (Permission denied): "
	          "retention deleted nothing while it was so; it still cannot be read (Permission denied)\n");
	tlib_mem_close(&m);
}

static void test_demo(const struct conf_board *cfg)
{
	char dir[] = "/tmp/test-run-say-XXXXXX", quoted[64], want[2 * 4096 + 512], exe[4096];
	/* the demo's three kinds of bus: a TRDP bus after the two */
	uint64_t rx[3] = { 900, 60, 340 };
	struct conf_board *demo = malloc(sizeof(*demo));
	struct cli_run_counts c = { .records = 1200, .batches = 6, .first_seq = 1, .next_seq = 1201, .bus_rx = rx };
	struct pl_channel ch = { .id = 1, .name = "speed", .unit = "km/h", .source = "can vehicle Speed" };
	struct pl_live lv = { .t_ns = 1000, .value = 42.5 };
	struct cli_demo_view dv = { 0 };
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct tlib_mem m;

	CHECK(n > 0);
	exe[n] = 0;
	/* a log directory with a quote: the hint quotes it for the shell */
	CHECK(mkdtemp(dir));
	snprintf(quoted, sizeof(quoted), "%s/it's", dir);
	CHECK(mkdir(quoted, 0700) == 0);
	CHECK(demo);
	memcpy(demo, cfg, sizeof(*demo));
	demo->nbuses = 3;
	demo->buses[2].kind = BUS_KIND_TRDP;
	tlib_mem_open(&m);
	cli_demo_summary(m.f, demo, &c, 2.04, quoted);
	free(demo);
	snprintf(want, sizeof(want), "railmon demo: stopped after 2.0 s: 1200 records stored (seq 1..1200) in 6 batches, "
	         "900 CAN frames, 60 Modbus samples and 340 TRDP telegrams acquired, 0 ring drops, 0 records refused by "
	         "the log\n"
	         "log: %s\ntry: %s export --data '%s/it'\\''s' --format csv | head\n     %s stat --data '%s/it'\\''s'\n",
	         quoted, exe, dir, exe, dir);
	CHECK_STR(tlib_mem_text(&m), want);
	tlib_mem_close(&m);

	/* one row, the table drawn without colour: its title and the row */
	CHECK(cli_demo_view_new(1, false, &dv) == 0 && dv.max == 1);
	cli_demo_row(&ch, &lv, NULL, 1000 + 500000000, &dv.rows[0]);
	CHECK(dv.rows[0].age_ns == 500000000 && dv.rows[0].value == 42.5 && !strcmp(dv.rows[0].name, "speed"));
	lv.t_ns = 0;
	cli_demo_row(&ch, &lv, "never", 5, &dv.rows[0]); /* never received */
	CHECK(dv.rows[0].age_ns == -1 && !strcmp(dv.rows[0].label, "never"));
	tlib_mem_open(&m);
	cli_demo_table(&dv, 1, &c, 3.0, false, m.f);
	CHECK(!strncmp(tlib_mem_text(&m), "railmon demo  t=3.0s  records stored 1200 (seq 1..1200)  ring drops 0", 69), "%s",
	      tlib_mem_text(&m));
	CHECK(strstr(tlib_mem_text(&m), "speed") && tlib_mem_text(&m)[strlen(tlib_mem_text(&m)) - 1] == '\n');
	tlib_mem_close(&m);
	cli_demo_view_free(&dv);
	CHECK(!dv.rows && !dv.table);
	rmdir(quoted);
	rmdir(dir);
}

int main(void)
{
	struct conf_board *cfg = board();

	test_cursor();
	test_uplink(cfg);
	test_sparkplug();
	test_status(cfg);
	test_link(cfg);
	test_refusals_and_verdict();
	test_demo(cfg);
	free(cfg);
	printf("run-say: ok\n");
	return 0;
}
