/* SPDX-License-Identifier: MIT */
/*
 * run.c - the daemon's life: start, status, SIGHUP reload, watchdogs, stop.
 *
 * The main thread only supervises: the pipeline runs on the daemon's own
 * threads.  A reload validates the new board file completely first; only
 * then is the running daemon stopped (its rings drained, its last Batch
 * closed and synced) and a new one started on the same log, so sequence
 * numbers continue and nothing confirmed is lost.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "report/check.h"
#include "cli.h"
#include "conf/config.h"
#include "daemon.h"
#include "pipeline/faults.h"
#include "pipeline/notify.h"
#include "statserver.h"
#include "uplink/forward.h"
#include "basic/clock.h"

#define STATUS_PERIOD_NS (60 * 1000000000ll)
#define ALIVE_NS (2 * 1000000000ll) /* collector ticks every 20 ms */
#define UPLINK_REPEAT_NS (60 * 1000000000ll) /* "still cannot connect" at most this often */

/* What the operator was told about the uplink, so each change is said
   once and a broker that stays away is repeated only once a minute. */
struct uplink_watch {
	uint64_t fails_seen;      /* connect_fails already accounted for */
	uint64_t connects_seen;
	bool connected;
	uint64_t outage_fails;    /* failed attempts since the last connection */
	int64_t outage_ns;        /* when the outage began, 0 = none */
	int64_t said_ns;          /* when it was last reported */
};

/* What was last said about a bus's device (report_link). */
struct link_seen {
	uint64_t losses, reopens;
	int reopen_err;
	int64_t said_ns;
};

struct runner {
	const char *cmd;
	struct conf_board *cfg;
	struct conf_board *orig;    /* the caller's; never freed here */
	struct board_daemon_opts opts;
	bool no_service;
	struct board_daemon *d;
	struct board_stat_server *stat;
	bool started;              /* a daemon ran before: this is a restart */
	int hwdog;
	int64_t dog_next, dog_period;
	struct uplink_watch up;
	char broker[160];          /* mqtt[s]://host:port, for messages */
	struct link_seen seen[CONF_BUSES_MAX]; /* of the running daemon */
	struct pl_fault_reporter faults;     /* what was said of its faults */
	uint64_t replay_skipped;   /* over every daemon of this run (reloads) */
	int replay_error;
	/* The log refusing records is said loudly, not only counted. */
	uint64_t refused_before;   /* by the daemons before a reload */
	uint64_t unreported;       /* refused, and in no event on disk */
	uint64_t seen_refused;     /* the current daemon's count at the last look */
	int log_error;
	bool refusing;
	int64_t refuse_said_ns, refuse_last_ns;
};

#define REFUSE_REPEAT_NS (10 * 1000000000ll) /* while refusing, say so this often */
#define REFUSE_QUIET_NS (2 * 1000000000ll)   /* no refusal for this long: recovered? */

/* The cursor damage codes of uplink/forward.h, in plain words. */
static void cursor_damage_words(int err, const struct upl_forward_stats *st, uint64_t log_next, char *buf,
                                size_t len)
{
	switch (err) {
	case -ENODATA:
		snprintf(buf, len, "is empty");
		break;
	case -EBADMSG:
		snprintf(buf, len, "does not hold a cursor line (\"railmon-cursor 1 <seq>\"): it is damaged or was cut short");
		break;
	case -ERANGE:
		snprintf(buf, len, "holds a sequence number that is zero, negative or too large");
		break;
	case -EOVERFLOW:
		snprintf(buf, len, "points at seq %" PRIu64 ", past the end of the log (its next seq is %" PRIu64 ")",
		         st->cursor_damaged_seq, log_next);
		break;
	case -EISDIR:
		snprintf(buf, len, "is a directory, not a file: remove it, or the cursor is never saved and every start sends the whole log again");
		break;
	case -ESPIPE:
		snprintf(buf, len, "is not a regular file (a FIFO, socket or device); a regular file replaces it at the first acknowledgement");
		break;
	default:
		snprintf(buf, len, "cannot be read (%s)", strerror(-err));
		break;
	}
}

/* Acquisition never waits for the cursor: say what is wrong with it. */
static void uplink_start_warnings(struct runner *rn)
{
	struct upl_forward_stats st;
	struct board_daemon_stats ds;
	char words[256];

	if (board_daemon_uplink_stats(rn->d, &st) < 0 || !st.cursor_damage)
		return;
	board_daemon_stats(rn->d, &ds);
	cursor_damage_words(st.cursor_damage, &st, ds.first_seq, words, sizeof(words));
	fprintf(stderr, "railmon %s: warning: the uplink cursor %s/uplink.cursor %s; sending the whole log again "
	        "from its oldest record (the ground gets duplicates, nothing is lost)\n",
	        rn->cmd, board_daemon_data_dir(rn->d), words);
}

/* Connection trouble, said once when it starts, then at most once a
   minute while it lasts, and when the link is back. */
static void uplink_watch(struct runner *rn, int64_t now)
{
	struct uplink_watch *w = &rn->up;
	struct upl_forward_stats st;

	if (!rn->d || board_daemon_uplink_stats(rn->d, &st) < 0)
		return;
	if (st.connects > w->connects_seen) {
		if (w->outage_ns)
			fprintf(stderr, "railmon %s: uplink: connected to %s after %" PRIu64 " failed attempt%s in %.1f s\n",
			        rn->cmd, rn->broker, w->outage_fails, w->outage_fails == 1 ? "" : "s",
			        (double)(now - w->outage_ns) / 1e9);
		else
			fprintf(stderr, "railmon %s: uplink: %s to %s\n", rn->cmd, w->connects_seen ? "reconnected" : "connected",
			        rn->broker);
		w->connects_seen = st.connects;
		w->outage_ns = 0;
		w->outage_fails = 0;
	} else if (w->connected && !st.connected) {
		fprintf(stderr, "railmon %s: uplink: lost the connection to %s: %s; reconnecting\n", rn->cmd, rn->broker,
		        st.last_error_text);
		w->outage_ns = w->said_ns = now;
	}
	if (st.connect_fails > w->fails_seen) {
		w->outage_fails += st.connect_fails - w->fails_seen;
		w->fails_seen = st.connect_fails;
		if (!w->outage_ns) {
			fprintf(stderr, "railmon %s: uplink: cannot connect to %s: %s; retrying (said again at most once a minute)\n",
			        rn->cmd, rn->broker, st.last_error_text);
			w->outage_ns = w->said_ns = now;
		} else if (now - w->said_ns >= UPLINK_REPEAT_NS) {
			fprintf(stderr, "railmon %s: uplink: still cannot connect to %s: %s (%" PRIu64 " attempts in %.0f s)\n",
			        rn->cmd, rn->broker, st.last_error_text, w->outage_fails, (double)(now - w->outage_ns) / 1e9);
			w->said_ns = now;
		}
	}
	w->connected = st.connected;
}

/* The uplink's part of the summary: what is still to be sent, and why. */
static void print_uplink_status(struct runner *rn, const struct board_daemon_stats *ds)
{
	struct upl_forward_stats st;

	if (board_daemon_uplink_stats(rn->d, &st) < 0)
		return;
	fprintf(stderr, "railmon: uplink to %s: %s, %" PRIu64 " records not yet acknowledged (from seq %" PRIu64 "), %"
	        PRIu64 " failed connection attempts", rn->broker, st.connected ? "connected" : "not connected",
	        ds->next_seq > st.cursor ? ds->next_seq - st.cursor : 0, st.cursor, st.connect_fails);
	if (st.last_error_text[0])
		fprintf(stderr, ", last connection error: %s", st.last_error_text);
	if (st.cursor_errors)
		fprintf(stderr, "; cursor file write failures: %" PRIu64, st.cursor_errors);
	fputc('\n', stderr);
}

static void print_status(struct runner *rn)
{
	struct board_daemon_stats st;
	char status[256];

	board_daemon_stats(rn->d, &st);
	fprintf(stderr, "railmon: %" PRIu64 " records stored (seq %" PRIu64 "..%" PRIu64 "), %" PRIu64
	        " ring drops, %" PRIu64 " refused by the log;", st.records, st.first_seq,
	        st.next_seq ? st.next_seq - 1 : 0, st.ring_drops, st.log_dropped);
	for (size_t b = 0; b < rn->cfg->nbuses; b++) {
		struct acq_link_state l = { 0 };
		board_daemon_bus_link(rn->d, b, &l);
		fprintf(stderr, " %s: %" PRIu64 " in, %" PRIu64 " errors", rn->cfg->buses[b].name, st.bus_rx[b],
		        st.bus_errors[b]);
		if (l.losses)
			fprintf(stderr, ", device lost %" PRIu64 " times, reopened %" PRIu64 ", now %s", l.losses,
			        l.reopens, acq_link_name(l.state));
		fputc(';', stderr);
	}
	fputc('\n', stderr);
	print_uplink_status(rn, &st);
	snprintf(status, sizeof(status), "STATUS=%" PRIu64 " records stored, %" PRIu64 " ring drops, %" PRIu64
	         " refused by the log", st.records, st.ring_drops, st.log_dropped);
	pl_notify(status);
}

/* What a loss's errno means for a bus device, where the text alone does
   not say it; "" otherwise. */
static const char *gone_words(int cause)
{
	switch (-cause) {
	case EPIPE: return " (the tty hung up: adapter unplugged or its pty closed)";
	case ENODEV: return " (interface deleted or adapter unplugged)";
	case ENETDOWN: return " (interface set down or deleted)";
	default: return "";
	}
}

/*
 * Say on stderr (the journal) when a bus's device goes away, fails to
 * reopen in a new way, and comes back; and put it in the service status.
 * At most one line per bus per second: a device that flaps is summed up
 * ("3 losses since the last message"), never a line per attempt.
 */
static void report_link(struct runner *rn, size_t b, int64_t now)
{
	struct link_seen *seen = &rn->seen[b];
	const struct bus_cfg *bc = &rn->cfg->buses[b];
	struct acq_link_state l;
	char where[BUS_PATH_MAX + 32], msg[BUS_PATH_MAX + 256], status[BUS_PATH_MAX + 272], extra[64] = "";
	uint64_t lost;

	if (board_daemon_bus_link(rn->d, b, &l) < 0 || now - seen->said_ns < 1000000000ll)
		return;
	lost = l.losses - seen->losses;
	if (!lost && l.reopens == seen->reopens && (l.state == ACQ_LINK_UP || l.reopen_err == seen->reopen_err))
		return;
	pl_bus_where(bc, where, sizeof(where));
	if (lost > 1)
		snprintf(extra, sizeof(extra), " (%" PRIu64 " losses since the last message)", lost);
	if (l.state == ACQ_LINK_UP && lost) /* gone and back within a second: say why here */
		snprintf(msg, sizeof(msg), "bus '%s' (%s) is back after %.1f s, reopen #%" PRIu64 "%s; it was gone: %s%s",
		         bc->name, where, (double)(l.back_ns - l.gone_ns) / 1e9, l.reopens, extra, strerror(-l.cause),
		         gone_words(l.cause));
	else if (l.state == ACQ_LINK_UP)
		snprintf(msg, sizeof(msg), "bus '%s' (%s) is back after %.1f s (%u attempt%s), reopen #%" PRIu64 "%s",
		         bc->name, where, (double)(l.back_ns - l.gone_ns) / 1e9, l.attempts, l.attempts == 1 ? "" : "s",
		         l.reopens, extra);
	else if (lost)
		snprintf(msg, sizeof(msg), "bus '%s' (%s) is gone: %s%s; recording the rest, reopening every 0.1-5 s%s",
		         bc->name, where, strerror(-l.cause), gone_words(l.cause), extra);
	else
		snprintf(msg, sizeof(msg), "bus '%s' (%s) still gone after %u attempt%s: reopen: %s", bc->name, where,
		         l.attempts, l.attempts == 1 ? "" : "s", strerror(-l.reopen_err));
	fprintf(stderr, "railmon %s: %s\n", rn->cmd, msg);
	snprintf(status, sizeof(status), "STATUS=%s", msg);
	pl_notify(status);
	*seen = (struct link_seen){ l.losses, l.reopens, l.reopen_err, now };
}

/* A bus too busy for its poll periods or its bitrate, a Modbus address in
   Modicon notation: said at every start, with the words `check` uses. */
static void load_warnings(struct runner *rn)
{
	char msg[BUS_NAME_MAX + 128], modicon[320];

	for (size_t b = 0; b < rn->cfg->nbuses; b++) {
		const struct bus_cfg *bc = &rn->cfg->buses[b];
		const bus_dbc_t *dbc = board_daemon_dbc(rn->d, b);

		if (rpt_bus_load_warning(rn->cfg, b, dbc, msg, sizeof(msg)))
			fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, msg);
		/* one line, not one per warning: check lists them */
		if (bus_dbc_warning_count(dbc))
			fprintf(stderr, "railmon %s: warning: dbc %s: %u warnings, the first %s ('railmon check' lists them)\n",
			        rn->cmd, rn->cfg->buses[b].can.dbc, bus_dbc_warning_count(dbc), bus_dbc_warning(dbc, 0));
		for (size_t i = 0; bc->kind == BUS_KIND_MODBUS && i < bc->mb.nchannels; i++)
			if (rpt_mb_modicon_warning(&bc->mb.channels[i], modicon, sizeof(modicon)))
				fprintf(stderr, "railmon %s: warning: [modbus %s] %s\n", rn->cmd, bc->name, modicon);
	}
}

/* Create and start a daemon for rn->cfg; with a stat socket beside it. */
static int runner_start(struct runner *rn, uint64_t reloaded_hash)
{
	struct board_daemon_opts o = rn->opts;
	char err[CONF_ERR_MAX], warn[256], sock[BUS_PATH_MAX + 16];
	int r;

	o.reloaded_hash = reloaded_hash;
	/* The first start refuses a device that is not there (a wrong path is
	   said at once; the service manager restarts us).  A restart (reload,
	   or the fallback to the old file) must not stop recording the other
	   buses because one adapter is unplugged: that one starts gone. */
	o.absent_ok = rn->started;
	memset(rn->seen, 0, sizeof(rn->seen)); /* a new daemon counts from 0 */
	rn->faults = (struct pl_fault_reporter){ .cmd = rn->cmd, .cfg = rn->cfg };
	r = board_daemon_new(rn->cfg, &o, &rn->d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon %s: %s\n", rn->cmd, err);
		return r;
	}
	r = board_daemon_start(rn->d, warn, sizeof(warn));
	if (r < 0) {
		fprintf(stderr, "railmon %s: cannot start: %s\n", rn->cmd, strerror(-r));
		rn->d = board_daemon_free(rn->d);
		return r;
	}
	rn->started = true;
	if (warn[0])
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, warn);
	if (board_daemon_log_warning(rn->d)[0])
		fprintf(stderr, "railmon %s: warning: %s\n", rn->cmd, board_daemon_log_warning(rn->d));
	if (rn->cfg->uplink.enabled && rn->cfg->uplink.tls_insecure)
		fprintf(stderr, "railmon %s: WARNING: [uplink] tls_insecure = true: the broker's certificate is NOT verified\n",
		        rn->cmd);
	fprintf(stderr, "railmon %s: vehicle %s, %zu bus%s, config %016" PRIx64 ", log in %s\n", rn->cmd,
	        rn->cfg->vehicle, rn->cfg->nbuses, rn->cfg->nbuses == 1 ? "" : "es", rn->cfg->hash,
	        board_daemon_data_dir(rn->d));
	/* A new daemon has a new forwarder: its counters start again. */
	memset(&rn->up, 0, sizeof(rn->up));
	snprintf(rn->broker, sizeof(rn->broker), "%s://%s:%u", rn->cfg->uplink.tls ? "mqtts" : "mqtt",
	         rn->cfg->uplink.host, rn->cfg->uplink.port);
	uplink_start_warnings(rn);
	if (rn->no_service)
		return 0; /* a replay is a command: no stat socket, no watchdogs */
	load_warnings(rn);
	if (rn->cfg->stat_socket[0])
		snprintf(sock, sizeof(sock), "%s", rn->cfg->stat_socket);
	else
		snprintf(sock, sizeof(sock), "%s/railmon.sock", board_daemon_data_dir(rn->d));
	r = board_stat_server_start(rn->d, sock, &rn->stat);
	if (r < 0)
		fprintf(stderr, "railmon %s: warning: no stat socket %s: %s\n", rn->cmd, sock, strerror(-r));
	return 0;
}

/*
 * Watch the log's refusals (every loop, 20 ms): the first one is said at
 * once on stderr (the journal, under systemd) and in the service status,
 * again every 10 s while it goes on, and the recovery once the log has
 * written the events for them.  A daemon must never store nothing for
 * minutes without saying so.
 */
static void runner_log_watch(struct runner *rn, int64_t now)
{
	struct board_daemon_stats st;
	char status[256];

	if (!rn->d || board_daemon_stats(rn->d, &st) < 0)
		return;
	if (st.log_error)
		rn->log_error = st.log_error;
	if (st.log_dropped > rn->seen_refused) {
		rn->seen_refused = st.log_dropped;
		rn->refuse_last_ns = now;
		if (rn->refusing && now < rn->refuse_said_ns + REFUSE_REPEAT_NS)
			return;
		rn->refusing = true;
		rn->refuse_said_ns = now;
		fprintf(stderr, "railmon %s: THE LOG IS REFUSING RECORDS (%s): %" PRIu64 " refused so far; they are counted "
		        "and written as one event once the log accepts records again\n", rn->cmd,
		        st.log_error ? strerror(-st.log_error) : "error", rn->refused_before + st.log_dropped);
		snprintf(status, sizeof(status), "STATUS=the log is refusing records (%s): %" PRIu64 " refused",
		         st.log_error ? strerror(-st.log_error) : "error", rn->refused_before + st.log_dropped);
		pl_notify(status);
	} else if (rn->refusing && now - rn->refuse_last_ns >= REFUSE_QUIET_NS && !st.log_unreported) {
		rn->refusing = false;
		fprintf(stderr, "railmon %s: the log takes records again; %" PRIu64 " were refused, counted in its "
		        "LOG_DROPPED events\n", rn->cmd, rn->refused_before + st.log_dropped);
		pl_notify("STATUS=the log takes records again");
	}
}

/* The faults the sink noted (faults.h): the first at once, then a summary
   a minute, on stderr and in the service status. */
static void runner_faults(struct runner *rn, int64_t now, bool final)
{
	char last[600], status[620];

	if (!rn->d)
		return;
	last[0] = 0;
	if (pl_faults_report(board_daemon_faults(rn->d), &rn->faults, now, final, stderr, last, sizeof(last)) > 0) {
		snprintf(status, sizeof(status), "STATUS=%s", last);
		pl_notify(status);
	}
}

static void runner_stop(struct runner *rn)
{
	struct board_daemon_stats st;

	rn->stat = board_stat_server_free(rn->stat);
	if (!rn->d)
		return;
	board_daemon_stop(rn->d);
	runner_faults(rn, basic_mono_ns(), true); /* what the last minute held */
	print_status(rn);
	board_daemon_stats(rn->d, &st);
	rn->replay_skipped += st.replay_skipped;
	if (st.replay_error)
		rn->replay_error = st.replay_error;
	rn->refused_before += st.log_dropped;
	rn->unreported += st.log_unreported;
	rn->seen_refused = 0;
	if (st.log_error)
		rn->log_error = st.log_error;
	rn->d = board_daemon_free(rn->d);
}

/* The exit status says whether the run kept everything: a replay that
   skipped parts of its source log, or stopped early, is not a success. */
static int runner_verdict(const struct runner *rn, int rc)
{
	if (rn->refused_before) {
		/* A recorder that lost records did not succeed. */
		fprintf(stderr, "railmon %s: %" PRIu64 " records were refused by the log (%s)\n", rn->cmd,
		        rn->refused_before, rn->log_error ? strerror(-rn->log_error) : "see above");
		if (rn->unreported)
			fprintf(stderr, "railmon %s: %" PRIu64 " of them are in no LOG_DROPPED event: the log still refused "
			        "records at the stop, so only this message says so\n", rn->cmd, rn->unreported);
		rc = 1;
	}
	if (rn->replay_error) {
		fprintf(stderr, "railmon %s: the source log could not be read to its end: %s\n", rn->cmd,
		        strerror(-rn->replay_error));
		rc = 1;
	}
	if (rn->replay_skipped) {
		fprintf(stderr, "railmon %s: %" PRIu64 " unreadable part%s of the source log skipped (see above)\n",
		        rn->cmd, rn->replay_skipped, rn->replay_skipped == 1 ? "" : "s");
		rc = 1;
	}
	return rc;
}

/* SIGHUP: swap in the new board file only if it is valid and starts. */
static void runner_reload(struct runner *rn)
{
	struct conf_board *next, *prev = rn->cfg;
	char err[CONF_ERR_MAX];

	board_reload_requested = 0;
	if (conf_load(prev->path, &next, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: reload refused, keeping the running configuration: %s\n", rn->cmd, err);
		return;
	}
	pl_notify("RELOADING=1");
	runner_stop(rn);
	rn->cfg = next;
	if (runner_start(rn, next->hash) < 0) {
		/* The new file parsed but does not start (a device missing):
		   go back to what worked rather than stop recording. */
		fprintf(stderr, "railmon %s: reload failed, restarting with the previous configuration\n", rn->cmd);
		rn->cfg = prev;
		conf_free(next);
		if (runner_start(rn, 0) < 0)
			return;
	} else {
		if (prev != rn->orig)
			conf_free(prev);
		fprintf(stderr, "railmon %s: reloaded %s\n", rn->cmd, next->path);
	}
	pl_notify("READY=1");
}

/*
 * Kick both watchdogs, but only while the collector is ticking: a wedged
 * pipeline must let them fire.  A bus whose device is gone does not stop
 * the kicks: its RX thread is alive and reopening (in a bounded backoff,
 * not spinning), the other buses are still being recorded, and a reboot
 * cannot bring back an unplugged adapter or a deleted interface - it would
 * only lose the others' data while the board restarts.  The loss is said
 * instead: an event in the log, a line on stderr, STATUS= for the service
 * manager, and "gone" in `railmon stat`.
 */
static void runner_watchdogs(struct runner *rn, int64_t now)
{
	if (!rn->dog_period || now < rn->dog_next || !rn->d)
		return;
	rn->dog_next = now + rn->dog_period;
	if (now - board_daemon_heartbeat(rn->d) > ALIVE_NS)
		return;
	if (pl_notify_watchdog_usec())
		pl_notify("WATCHDOG=1");
	if (rn->hwdog >= 0)
		pl_hwdog_kick(rn->hwdog);
}

static void runner_watchdog_setup(struct runner *rn)
{
	uint64_t usec = pl_notify_watchdog_usec();
	int64_t period = usec ? (int64_t)usec * 1000 / 2 : 0;
	int r;

	rn->hwdog = -1;
	if (rn->cfg->hw_watchdog[0]) {
		r = pl_hwdog_open(rn->cfg->hw_watchdog, (int)rn->cfg->hw_watchdog_timeout_s, &rn->hwdog);
		if (r < 0)
			fprintf(stderr, "railmon %s: warning: hardware watchdog %s: %s\n", rn->cmd, rn->cfg->hw_watchdog,
			        strerror(-r));
		else if (!period || period > 1000000000ll)
			period = 1000000000ll; /* well inside any driver's timeout */
	}
	rn->dog_period = period;
	rn->dog_next = basic_mono_ns();
}

int board_run_daemon(const char *cmd, struct conf_board *cfg, const struct board_daemon_opts *opts,
                     double duration_s, bool until_sources_done)
{
	struct runner rn = { .cmd = cmd, .cfg = cfg, .orig = cfg, .opts = *opts, .hwdog = -1,
	                     .no_service = until_sources_done };
	int rc = 0;
	int64_t t0, next_status;

	board_install_signals();
	if (runner_start(&rn, 0) < 0)
		return 1;
	if (!rn.no_service)
		runner_watchdog_setup(&rn);
	pl_notify("READY=1");
	t0 = basic_mono_ns();
	next_status = t0 + STATUS_PERIOD_NS;
	while (!board_stop_requested) {
		if (!rn.d) {
			rc = 1; /* a reload and the fallback both failed */
			break;
		}
		int64_t now = basic_mono_ns();
		if (duration_s > 0 && now - t0 >= (int64_t)(duration_s * 1e9))
			break;
		if (until_sources_done && board_daemon_sources_done(rn.d))
			break;
		if (board_reload_requested && !until_sources_done)
			runner_reload(&rn);
		runner_watchdogs(&rn, now);
		uplink_watch(&rn, now);
		for (size_t b = 0; rn.d && b < rn.cfg->nbuses; b++)
			report_link(&rn, b, now);
		runner_log_watch(&rn, now);
		runner_faults(&rn, now, false);
		if (!until_sources_done && now >= next_status) {
			print_status(&rn);
			next_status = now + STATUS_PERIOD_NS;
		}
		usleep(20000);
	}
	pl_notify("STOPPING=1");
	runner_stop(&rn);
	if (rn.hwdog >= 0)
		pl_hwdog_close(rn.hwdog, 1);
	fprintf(stderr, "railmon %s: stopped after %.2f s\n", cmd, (double)(basic_mono_ns() - t0) / 1e9);
	if (rn.cfg != rn.orig)
		conf_free(rn.cfg);
	return runner_verdict(&rn, rc);
}
