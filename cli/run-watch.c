/* SPDX-License-Identifier: MIT */
/*
 * run-watch.c - what `railmon run` watches a running daemon for and says,
 * on stderr (the journal) and in the service status: the warnings of a
 * start, the periodic status, a bus's device going and coming back, the
 * uplink's connection, the log refusing records, the faults the sink
 * noted, a holds file that could not be read.
 *
 * pipeline/runner.h decides when something is news; cli/run-say.c has the
 * words; this file asks the daemon and says them.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/clock.h"
#include "cli.h"
#include "cli/check-plan.h"
#include "cli/run-runner.h"
#include "cli/run-say.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "pipeline/faults.h"
#include "pipeline/notify.h"
#include "pipeline/runner.h"
#include "storage/stor.h"
#include "uplink/forward.h"
#include "uplink/spb-pub.h"

/* Acquisition never waits for the cursor: say what is wrong with it. */
void cli_run_uplink_start_warnings(struct runner *rn)
{
	struct upl_forward_stats st;
	struct pl_daemon_stats ds;

	struct upl_spb_stats sp;

	if (pl_daemon_sparkplug_stats(rn->d, &sp) == 0)
		cli_spb_start_warning(stderr, rn->cmd, pl_daemon_data_dir(rn->d), &sp);
	if (pl_daemon_uplink_stats(rn->d, &st) < 0 || !st.cursor_damage)
		return;
	pl_daemon_stats(rn->d, &ds);
	cli_uplink_cursor_warning(stderr, rn->cmd, pl_daemon_data_dir(rn->d), &st, ds.first_seq);
}

/* Connection trouble, said once when it starts, then at most once a
   minute while it lasts, and when the link is back. */
void cli_run_uplink_watch(struct runner *rn, int64_t now)
{
	struct upl_forward_stats st;
	struct pl_uplink_news news;

	if (!rn->d || pl_daemon_uplink_stats(rn->d, &st) < 0)
		return;
	if (pl_uplink_watch_step(&rn->up, &st, now, &news))
		cli_uplink_news(stderr, rn->cmd, rn->broker, &news, st.last_error_text);
}

/* The daemon's counters as cli/run-say.h takes them. */
static struct cli_run_counts run_counts(const struct pl_daemon_stats *st)
{
	return (struct cli_run_counts){ .records = st->records, .batches = st->batches, .first_seq = st->first_seq,
	                                .next_seq = st->next_seq, .ring_drops = st->ring_drops,
	                                .log_dropped = st->log_dropped, .bus_rx = st->bus_rx,
	                                .bus_errors = st->bus_errors };
}

void cli_run_print_status(struct runner *rn)
{
	struct pl_daemon_stats st;
	struct upl_forward_stats up;
	struct upl_spb_stats sp;
	struct acq_link_state links[CONF_BUSES_MAX] = { 0 };
	struct cli_run_counts c;
	char status[256];

	pl_daemon_stats(rn->d, &st);
	c = run_counts(&st);
	for (size_t b = 0; b < rn->cfg->nbuses; b++)
		pl_daemon_bus_link(rn->d, b, &links[b]);
	cli_run_status(stderr, rn->cfg, &c, links);
	/* the uplink's part of the summary: what is still to be sent, and why */
	if (pl_daemon_uplink_stats(rn->d, &up) >= 0)
		cli_uplink_status(stderr, rn->broker, &up, st.next_seq);
	if (pl_daemon_sparkplug_stats(rn->d, &sp) == 0) {
		char broker[sizeof(rn->broker)];
		cli_broker_url(&rn->cfg->sparkplug.mqtt, broker, sizeof(broker));
		cli_spb_status(stderr, broker, &sp, st.next_seq);
	}
	cli_run_status_text(&c, status, sizeof(status));
	pl_notify(status);
}

/*
 * Say on stderr (the journal) when a bus's device goes away, fails to
 * reopen in a new way, and comes back; and put it in the service status.
 * At most one line per bus per second: a device that flaps is summed up
 * ("3 losses since the last message"), never a line per attempt.
 */
void cli_run_report_link(struct runner *rn, size_t b, int64_t now)
{
	struct acq_link_state l;
	char msg[BUS_PATH_MAX + 256], status[BUS_PATH_MAX + 272];
	uint64_t lost;

	if (pl_daemon_bus_link(rn->d, b, &l) < 0 || !pl_link_watch_step(&rn->seen[b], &l, now, &lost))
		return;
	cli_link_words(&rn->cfg->buses[b], &l, lost, msg, sizeof(msg));
	fprintf(stderr, "railmon %s: %s\n", rn->cmd, msg);
	snprintf(status, sizeof(status), "STATUS=%s", msg);
	pl_notify(status);
}

/* The first DBC warnings whole (file:line: what; what was done), then
   their count: a production file can have hundreds, said at every start.
   replay --dbc has no board file for check, so decode is named too. */
#define RUN_DBC_WARNINGS_SHOWN 5

void cli_run_dbc_warnings(const struct runner *rn, size_t b, const dbc_t *dbc)
{
	unsigned n = dbc_warning_count(dbc);

	for (unsigned i = 0; i < n && i < RUN_DBC_WARNINGS_SHOWN; i++)
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, dbc_warning(dbc, i));
	if (n > RUN_DBC_WARNINGS_SHOWN)
		fprintf(stderr, "railmon %s: warning: dbc %s: %u more warnings ('railmon check --board FILE' or "
		        "'railmon decode --dbc %s < /dev/null' lists them)\n", rn->cmd, rn->cfg->buses[b].can.dbc,
		        n - RUN_DBC_WARNINGS_SHOWN, rn->cfg->buses[b].can.dbc);
}

/* A bus too busy for its poll periods or its bitrate, a Modbus address in
   Modicon notation: said at every start, with the words `check` uses. */
void cli_run_load_warnings(struct runner *rn)
{
	char msg[BUS_NAME_MAX + 128], modicon[320];

	for (size_t b = 0; b < rn->cfg->nbuses; b++) {
		const struct bus_cfg *bc = &rn->cfg->buses[b];
		const dbc_t *dbc = pl_daemon_dbc(rn->d, b);

		if (cli_bus_load_warning(rn->cfg, b, dbc, msg, sizeof(msg)))
			fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, msg);
		cli_run_dbc_warnings(rn, b, dbc);
		for (size_t i = 0; bc->kind == BUS_KIND_MODBUS && i < bc->mb.nchannels; i++)
			if (cli_mb_modicon_warning(&bc->mb.channels[i], modicon, sizeof(modicon)))
				fprintf(stderr, "railmon %s: warning: [modbus %s] %s\n", rn->cmd, bc->name, modicon);
	}
}

/* Watch the log's refusals (every round, 250 ms; pipeline/runner.h): a
   daemon must never store nothing for minutes without saying so. */
void cli_runner_log_watch(struct runner *rn, int64_t now)
{
	struct pl_daemon_stats st;
	char status[256];

	if (!rn->d || pl_daemon_stats(rn->d, &st) < 0)
		return;
	if (st.log_error)
		rn->totals.log_error = st.log_error;
	switch (pl_refuse_watch_step(&rn->refuse, st.log_dropped, st.log_unreported, now)) {
	case PL_REFUSE_REFUSING:
		cli_log_refusing(stderr, rn->cmd, st.log_error, rn->totals.refused + st.log_dropped, status,
		                 sizeof(status));
		pl_notify(status);
		break;
	case PL_REFUSE_RECOVERED:
		cli_log_recovered(stderr, rn->cmd, rn->totals.refused + st.log_dropped);
		pl_notify("STATUS=the log takes records again");
		break;
	default:
		break;
	}
}

/* The faults the sink noted (faults.h): the first at once, then a summary
   a minute, on stderr and in the service status. */
void cli_runner_faults(struct runner *rn, int64_t now, bool final)
{
	char last[600], status[620];

	if (!rn->d)
		return;
	last[0] = 0;
	if (pl_faults_report(pl_daemon_faults(rn->d), &rn->faults, now, final, stderr, last, sizeof(last)) > 0) {
		snprintf(status, sizeof(status), "STATUS=%s", last);
		pl_notify(status);
	}
}

/* A holds file that could not be read during the run (retention deleted
   nothing while it was so) makes the exit status 1, and whether it still
   cannot be read at the stop is said with it. */
void cli_runner_holds_verdict(struct runner *rn)
{
	const struct pl_fault_slot *s = &pl_daemon_faults(rn->d)->slot[PL_FAULT_SOURCES - 1][PL_FAULT_HOLD];
	struct stor_holds *h;
	unsigned line = 0;

	if (!atomic_load_explicit(&s->count, memory_order_acquire)) {
		rn->totals.hold_error_now = 0; /* readable for this daemon's life */
		return;
	}
	rn->totals.hold_error = (int)atomic_load_explicit(&s->arg, memory_order_relaxed);
	rn->totals.hold_error_line = atomic_load_explicit(&s->detail, memory_order_relaxed);
	snprintf(rn->totals.holds_dir, sizeof(rn->totals.holds_dir), "%s", pl_daemon_data_dir(rn->d));
	h = malloc(sizeof(*h));
	rn->totals.hold_error_now = h ? stor_holds_read(rn->totals.holds_dir, h, &line) : -ENOMEM;
	if (rn->totals.hold_error_now == -EBADMSG)
		rn->totals.hold_error_line = line;
	free(h);
}
