/* SPDX-License-Identifier: MIT */
/*
 * test-faults.c - pipeline/faults.c: the faults that matter said in plain
 * words with their strerror text, the first at once, then one summary per
 * minute, then "no more"; driven on a clock of the test's own, so the
 * minutes pass at once.  Every kind on a bus and on the log: CAN bus-off,
 * Modbus timeouts and exceptions, log I/O faults, retention of unsent
 * records.  The same through the real daemon: tests/cli/test-run-faults.sh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/faults.h"
#include "tlib.h"

#define SEC 1000000000ll

static struct conf_board cfg;

/* The report at time now, as text; *ret_lines = lines written. */
static char *report(const struct pl_faults *f, struct pl_fault_reporter *rep, int64_t now, bool final,
                    int *ret_lines)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(out);
	*ret_lines = pl_faults_report(f, rep, now, final, out, NULL, 0);
	fclose(out);
	return buf;
}

static struct acq_item event(uint16_t bus, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .bus = bus };

	it.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	return it;
}

static void setup_cfg(void)
{
	cfg.nbuses = 2;
	snprintf(cfg.buses[0].name, sizeof(cfg.buses[0].name), "vehicle");
	cfg.buses[0].kind = BUS_KIND_CAN;
	cfg.buses[0].can.driver = BUS_CAN_SOCKETCAN;
	snprintf(cfg.buses[0].can.ifname, sizeof(cfg.buses[0].can.ifname), "can0");
	snprintf(cfg.buses[1].name, sizeof(cfg.buses[1].name), "plc");
	cfg.buses[1].kind = BUS_KIND_MODBUS;
	snprintf(cfg.buses[1].mb.host, sizeof(cfg.buses[1].mb.host), "10.0.0.2");
	cfg.buses[1].mb.port = 502;
}

/* A Modbus unit that stops answering: one line at once, nothing for the
   next 59 s of timeouts, one summary at 60 s with the count, "no more"
   after a quiet minute, and a new first line when it starts again. */
static void test_rate_limit(void)
{
	struct pl_faults *f = calloc(1, sizeof(*f));
	struct pl_fault_reporter rep = { .cmd = "run", .cfg = &cfg };
	struct acq_item to = event(1, ACQ_EV_MB_TIMEOUT, 100, 2u << 8 | 3);
	char *s;
	int n;

	CHECK(f);
	s = report(f, &rep, 0, false, &n);
	CHECK(n == 0 && !s[0], "nothing happened, said: %s", s);
	free(s);
	pl_faults_note_item(f, &to);
	s = report(f, &rep, 1 * SEC, false, &n);
	CHECK(n == 1, "%d lines", n);
	CHECK(strstr(s, "railmon run: bus 'plc' (modbus tcp 10.0.0.2:502): unit 2 does not answer: no reply to "
	                "function 3 at address 100"), "%s", s);
	CHECK(strstr(s, strerror(ETIMEDOUT)), "no strerror text: %s", s);
	free(s);
	for (int t = 2; t < 61; t++) {
		pl_faults_note_item(f, &to);
		pl_faults_note_item(f, &to);
		s = report(f, &rep, t * SEC, false, &n);
		CHECK(n == 0, "second %d: said again within the minute: %s", t, s);
		free(s);
	}
	s = report(f, &rep, 61 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "bus 'plc' (modbus tcp 10.0.0.2:502): 118 more Modbus timeouts in the last 60 s"),
	      "%s", s);
	free(s);
	s = report(f, &rep, 100 * SEC, false, &n);
	CHECK(n == 0, "%s", s);
	free(s);
	s = report(f, &rep, 121 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "no more Modbus timeouts in the last 60 s"), "%s", s);
	free(s);
	s = report(f, &rep, 200 * SEC, false, &n);
	CHECK(n == 0, "quiet, but said: %s", s);
	free(s);
	pl_faults_note_item(f, &to);
	s = report(f, &rep, 201 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "unit 2 does not answer"), "a new outage is said at once: %s", s);
	free(s);
	/* the end of a run: what the minute held so far, at once */
	pl_faults_note_item(f, &to);
	pl_faults_note_item(f, &to);
	s = report(f, &rep, 202 * SEC, true, &n);
	CHECK(n == 1 && strstr(s, "2 more Modbus timeouts in the last 1 s"), "%s", s);
	free(s);
	free(f);
}

/* Each kind in its words, on its own source, one line each at once. */
static void test_kinds(void)
{
	struct pl_faults *f = calloc(1, sizeof(*f));
	struct pl_fault_reporter rep = { .cmd = "run", .cfg = &cfg };
	struct acq_item off = event(0, ACQ_EV_CAN_BUS_OFF, 12, 255);
	struct acq_item exc = event(1, ACQ_EV_MB_EXCEPTION, 7, 1u << 8 | 2);
	struct acq_item frame = { .kind = ACQ_ITEM_CAN, .bus = 0 };
	struct acq_item passive = event(0, ACQ_EV_CAN_ERROR_PASSIVE, 130, 0);
	char last[512];
	char *buf = NULL;
	size_t len = 0;
	FILE *out;
	int n;

	CHECK(f);
	pl_faults_note_item(f, &frame);
	pl_faults_note_item(f, &passive);
	pl_faults_note_item(f, &off);
	pl_faults_note_item(f, &exc);
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_LOG, 1, -EIO, 1);
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_RETENTION, 5000, 5000, 0);
	out = open_memstream(&buf, &len);
	n = pl_faults_report(f, &rep, SEC, false, out, last, sizeof(last));
	fclose(out);
	printf("%s", buf);
	CHECK(n == 4, "%d lines: %s", n, buf);
	CHECK(strstr(buf, "railmon run: bus 'vehicle' (socketcan can0): the CAN controller went bus-off (TX errors "
	                  "255, RX errors 12): Network is down"), "%s", buf);
	CHECK(strstr(buf, "bus 'plc' (modbus tcp 10.0.0.2:502): unit 1 answers address 7 with exception 2 (illegal "
	                  "data address"), "%s", buf);
	CHECK(strstr(buf, "railmon run: the log: I/O fault: Input/output error; the segment being written was "
	                  "abandoned"), "%s", buf);
	CHECK(strstr(buf, "railmon run: the log: retention deleted 5000 records never sent by the uplink"), "%s", buf);
	CHECK(!strstr(buf, "passive"), "error-passive is not a fault said here: %s", buf);
	CHECK(strstr(last, "the log: retention deleted 5000 records"), "the status line: %s", last);
	free(buf);
	/* more retention within the minute: summed up by records, not notes */
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_RETENTION, 300, 300, 0);
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_RETENTION, 200, 200, 0);
	buf = report(f, &rep, 61 * SEC, false, &n);
	CHECK(strstr(buf, "the log: 500 more records deleted by retention unsent in the last 60 s"), "%s", buf);
	free(buf);
	CHECK(pl_faults_report(NULL, &rep, 0, false, stderr, NULL, 0) == -EINVAL);
	CHECK(pl_faults_report(f, NULL, 0, false, stderr, NULL, 0) == -EINVAL);
	pl_faults_note(NULL, 0, PL_FAULT_LOG, 1, -EIO, 0); /* no tally: nothing, no crash */
	free(f);
}

/* A damaged holds file (issue 24): the file and its line, again each
   minute while the sink notes it (once a second), "no more" once it is
   readable. */
static void test_holds_file(void)
{
	struct pl_faults *f = calloc(1, sizeof(*f));
	struct pl_fault_reporter rep = { .cmd = "run", .cfg = &cfg, .log_dir = "/data" };
	char *s;
	int n;

	CHECK(f);
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_HOLD, 1, -EBADMSG, 4);
	s = report(f, &rep, SEC, false, &n);
	CHECK(n == 1 && strstr(s, "railmon run: the log: /data/holds:4: the holds file is damaged (a changed or cut "
	                          "line; its CRC does not match): retention deletes nothing until it can be read again, "
	                          "recording goes on"), "%s", s);
	free(s);
	for (int i = 0; i < 60; i++)
		pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_HOLD, 1, -EBADMSG, 4);
	s = report(f, &rep, 61 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "the log: 60 more failed reads of the holds file (one a second while it lasts) in "
	                          "the last 60 s; the latest: /data/holds:4: the holds file is damaged"), "%s", s);
	free(s);
	s = report(f, &rep, 122 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "no more failed reads of the holds file"), "%s", s);
	free(s);
	pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_HOLD, 1, -EACCES, 0);
	s = report(f, &rep, 200 * SEC, false, &n);
	CHECK(n == 1 && strstr(s, "/data/holds: the holds file cannot be read (Permission denied)"), "%s", s);
	free(s);
	free(f);
}

int main(void)
{
	setup_cfg();
	test_rate_limit();
	test_kinds();
	test_holds_file();
	printf("PASS\n");
	return 0;
}
