/* SPDX-License-Identifier: MIT */
/*
 * test-recv.c - recv's receiver (ground/receiver.h) and its words
 * (cli/recv-say.h) without a broker: bad arguments, each setup step that
 * fails (the output, the log directory, the MQTT client, the database)
 * named and said as `railmon recv` says it, byte for byte from a memory
 * stream; a receiver that cannot reach its broker runs until --duration,
 * says why and that it never connected, and ends with the summary; a stop
 * already requested ends the wait at once.  And `railmon db`'s answers
 * (cli/db-say.h) when the database cannot be reached: a failure on the
 * error stream, nothing on the output.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ground/receiver.h"
#include "cli/db-say.h"
#include "cli/recv-say.h"
#include "tlib.h"

static char tmp[] = "/tmp/test-recv.XXXXXX";
static volatile sig_atomic_t stop_flag;

/* A receiver for a closed port on this host (port 1): nothing listens. */
static struct grd_receiver_cfg closed_cfg(void)
{
	return (struct grd_receiver_cfg){
		.recv = { .host = "127.0.0.1", .port = 1, .client_id = "test-recv", .backoff_max_ms = 100 },
		.out = stdout, .fmt = REC_FORMAT_JSONL, .window_ns = -1, .keep_dir = tmp, .stop = &stop_flag,
	};
}

static struct cli_recv closed_words(FILE *err)
{
	return (struct cli_recv){ .err = err, .host = "127.0.0.1", .port = 1, .duration_s = 0.3 };
}

static void test_bad_args(void)
{
	struct grd_receiver_cfg cfg = closed_cfg();
	grd_receiver_t *rc = (grd_receiver_t *)1;

	CHECK(grd_receiver_new(NULL, &rc) == -EINVAL);
	CHECK(grd_receiver_new(&cfg, NULL) == -EINVAL);
	cfg.stop = NULL;
	CHECK(grd_receiver_new(&cfg, &rc) == -EINVAL);
	CHECK(rc == (grd_receiver_t *)1, "ret_rc untouched on failure");
	CHECK(grd_receiver_free(NULL) == NULL);
	cfg = closed_cfg();
	CHECK(grd_receiver_new(&cfg, &rc) == 0);
	CHECK(grd_receiver_start(rc) == -EINVAL, "no start before setup");
	CHECK(grd_receiver_stop(rc) == 0, "stopping what never started");
	CHECK(stop_flag == 1, "stop sets the caller's flag");
	stop_flag = 0;
	rc = grd_receiver_free(rc);
}

/* Each failing step: named by the receiver, said by cli/recv-say.c. */
static void test_setup_steps(void)
{
	struct grd_receiver_cfg cfg = closed_cfg();
	struct tlib_mem err;
	grd_receiver_t *rc;
	char path[256], logdir[256], want[1024];
	FILE *f;

	/* the output file */
	snprintf(path, sizeof(path), "%s/no/such/dir.jsonl", tmp);
	cfg.output = path;
	CHECK(grd_receiver_new(&cfg, &rc) == 0);
	CHECK(grd_receiver_setup(rc) == -ENOENT);
	CHECK(grd_receiver_failed(rc) == GRD_RECEIVER_OUTPUT);
	rc = grd_receiver_free(rc);
	tlib_mem_open(&err);
	struct cli_recv x = closed_words(err.f);
	CHECK(cli_recv_open(&x, &cfg, &rc) == 2);
	snprintf(want, sizeof(want), "railmon recv: %s: No such file or directory\n", path);
	CHECK_STR(tlib_mem_text(&err), want);
	tlib_mem_close(&err);

	/* the log directory: the output is open and holds the CSV header by then */
	snprintf(path, sizeof(path), "%s/records.csv", tmp);
	snprintf(logdir, sizeof(logdir), "%s/no/logs", tmp);
	cfg.output = path;
	cfg.text = true;
	cfg.fmt = REC_FORMAT_CSV;
	cfg.logdir = logdir;
	tlib_mem_open(&err);
	x.err = err.f;
	CHECK(cli_recv_open(&x, &cfg, &rc) == 2);
	snprintf(want, sizeof(want), "railmon recv: --log %s: No such file or directory\n", logdir);
	CHECK_STR(tlib_mem_text(&err), want);
	tlib_mem_close(&err);
	f = fopen(path, "r");
	CHECK(f && fgets(want, sizeof(want), f));
	CHECK(!strncmp(want, "vehicle,log_id,seq,time,", 24), "the header: %s", want);
	fclose(f);
	unlink(path);

	/* the MQTT client (no client id): after --insecure's warning, exit code 1 */
	cfg = closed_cfg();
	cfg.recv.client_id = NULL;
	tlib_mem_open(&err);
	x.err = err.f;
	x.insecure = true;
	CHECK(cli_recv_open(&x, &cfg, &rc) == 1);
	CHECK_STR(tlib_mem_text(&err), "railmon recv: WARNING: --insecure: the broker's host name is NOT checked\n"
	                      "railmon recv: Invalid argument\n");
	tlib_mem_close(&err);
	x.insecure = false;

	/* the database: unreachable is waited for (libpq), or not built in */
	cfg = closed_cfg();
	cfg.db_url = "postgresql://127.0.0.1:1/railmon?connect_timeout=2";
	CHECK(grd_receiver_new(&cfg, &rc) == 0);
	int r = grd_receiver_setup(rc);
	if (r == 0) {
		CHECK(grd_receiver_db_waiting(rc), "a database that refuses is waited for");
		CHECK(grd_receiver_failed(rc) == GRD_RECEIVER_OK);
		CHECK(grd_receiver_grd(rc)->db);
	} else {
		CHECK(r == -ENOTSUP && grd_receiver_failed(rc) == GRD_RECEIVER_DB, "%d", r);
	}
	rc = grd_receiver_free(rc);
	tlib_mem_open(&err);
	x.err = err.f;
	if (r == 0) {
		CHECK(cli_recv_open(&x, &cfg, &rc) == 0);
		CHECK(!strncmp(tlib_mem_text(&err), "railmon recv: database: ", 24) &&
		      strstr(tlib_mem_text(&err), " (retrying when Batches come; none is acknowledged before it is committed)\n"),
		      "%s", tlib_mem_text(&err));
		rc = grd_receiver_free(rc);
	} else {
		CHECK(cli_recv_open(&x, &cfg, &rc) == 2);
		CHECK_STR(tlib_mem_text(&err), "railmon recv: --db: " GRD_DB_NOT_BUILT "\n");
	}
	tlib_mem_close(&err);
}

struct passes {
	unsigned n, busy;
};

static void count_pass(void *ctx, const struct grd_receiver_stats *st)
{
	struct passes *p = ctx;

	p->n++;
	p->busy += !st;
}

/* No broker: the wait lasts --duration, the failure is kept, nothing connected. */
static void test_run_unreachable(void)
{
	struct grd_receiver_cfg cfg = closed_cfg();
	struct grd_receiver_stats st;
	struct grd_receiver_log l;
	struct passes p = { 0 };
	grd_receiver_t *rc;
	uint64_t late = 1, asked = 1;
	int64_t t0;

	CHECK(grd_receiver_new(&cfg, &rc) == 0);
	CHECK(grd_receiver_setup(rc) == 0);
	CHECK(grd_receiver_start(rc) == 0);
	t0 = tlib_mono_ms();
	CHECK(grd_receiver_wait(rc, 0, 0.3, count_pass, &p, &st) == 0, "never connected");
	CHECK(tlib_mono_ms() - t0 >= 290, "the whole duration");
	CHECK(p.n >= 2, "a pass about every 100 ms: %u", p.n);
	CHECK(st.connects == 0 && st.connect_failures >= 1 && st.fail == GRD_RECEIVER_FAIL_OTHER,
	      "refused: %d, %s", (int)st.fail, st.fail_text);
	CHECK(grd_receiver_stop(rc) == 0);
	CHECK(grd_receiver_finish(rc, &late) == 0 && late == 0);
	CHECK(grd_receiver_log(rc, 0, &l) == -ENOENT);
	CHECK(!grd_receiver_repairs(rc, &asked) && asked == 0);
	rc = grd_receiver_free(rc);

	/* a stop already requested: the wait ends at once */
	stop_flag = 1;
	CHECK(grd_receiver_new(&cfg, &rc) == 0);
	CHECK(grd_receiver_setup(rc) == 0 && grd_receiver_start(rc) == 0);
	t0 = tlib_mono_ms();
	p = (struct passes){ 0 };
	CHECK(grd_receiver_wait(rc, 0, 10, count_pass, &p, &st) == 0);
	CHECK(tlib_mono_ms() - t0 < 5000 && p.n == 0);
	rc = grd_receiver_free(rc); /* stops the thread it started */
	stop_flag = 0;
}

/* The whole run as recv says it. */
static void test_run_words(void)
{
	struct grd_receiver_cfg cfg = closed_cfg();
	struct tlib_mem err;
	grd_receiver_t *rc;
	const char *t;

	tlib_mem_open(&err);
	struct cli_recv x = closed_words(err.f);
	CHECK(cli_recv_open(&x, &cfg, &rc) == 0);
	CHECK(cli_recv_run(&x, rc) == 1, "exit 1: never connected");
	rc = grd_receiver_free(rc);
	t = tlib_mem_text(&err);
	CHECK(!strncmp(t, "railmon recv: cannot connect to 127.0.0.1:1: ", 45), "%s", t);
	CHECK(strstr(t, "\nrailmon recv: never connected to 127.0.0.1:1: "), "%s", t);
	CHECK(strstr(t, "\nrailmon recv: 0 messages, 0 records, 0 duplicates skipped, 0 missing, 0 malformed payloads, "
	                "0 vehicles, 0 logs\n"), "%s", t);
	CHECK(!strstr(t, "gap repair"), "no repair without a database");
	tlib_mem_close(&err);
	stop_flag = 0;
}

static void test_db_words(void)
{
	struct tlib_mem out, err;

	for (int cmd = CLI_DB_INIT; cmd < CLI_DB_CMD_MAX; cmd++) {
		tlib_mem_open(&out);
		tlib_mem_open(&err);
		CHECK(cli_db_run("postgresql://127.0.0.1:1/railmon?connect_timeout=2", (enum cli_db_cmd)cmd, 86400,
		                 out.f, err.f) == 1);
		CHECK_STR(tlib_mem_text(&out), "");
		CHECK(!strncmp(tlib_mem_text(&err), "railmon db: ", 12) && tlib_mem_text(&err)[strlen(tlib_mem_text(&err)) - 1] == '\n' &&
		      (strstr(tlib_mem_text(&err), "127.0.0.1") || strstr(tlib_mem_text(&err), "without PostgreSQL")), "%s", tlib_mem_text(&err));
		tlib_mem_close(&out);
		tlib_mem_close(&err);
	}
}

int main(void)
{
	CHECK(mkdtemp(tmp));
	test_bad_args();
	test_setup_steps();
	test_run_unreachable();
	test_run_words();
	test_db_words();
	rmdir(tmp);
	return 0;
}
