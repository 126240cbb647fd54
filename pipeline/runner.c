/* SPDX-License-Identifier: MIT */
/*
 * runner.c - what `run`'s main loop watches, deciding what is news
 * (runner.h); cli/run-say.c has the words, cli/run-watch.c says them.
 */
#include "notify.h"
#include "runner.h"

/* Connection trouble, said once when it starts, then at most once a
   minute while it lasts, and when the link is back. */
bool pl_uplink_watch_step(struct pl_uplink_watch *w, const struct upl_forward_stats *st, int64_t now,
                          struct pl_uplink_news *ret_news)
{
	struct pl_uplink_news n = { 0 };

	if (st->connects > w->connects_seen) {
		if (w->outage_ns) {
			n.conn = PL_UPLINK_CONN_BACK;
			n.back_fails = w->outage_fails;
			n.back_s = (double)(now - w->outage_ns) / 1e9;
		} else {
			n.conn = w->connects_seen ? PL_UPLINK_CONN_RECONNECTED : PL_UPLINK_CONN_CONNECTED;
		}
		w->connects_seen = st->connects;
		w->outage_ns = 0;
		w->outage_fails = 0;
	} else if (w->connected && !st->connected) {
		n.conn = PL_UPLINK_CONN_LOST;
		w->outage_ns = w->said_ns = now;
	}
	if (st->connect_fails > w->fails_seen) {
		w->outage_fails += st->connect_fails - w->fails_seen;
		w->fails_seen = st->connect_fails;
		if (!w->outage_ns) {
			n.fail = PL_UPLINK_FAIL_CANNOT;
			w->outage_ns = w->said_ns = now;
		} else if (now - w->said_ns >= PL_UPLINK_REPEAT_NS) {
			n.fail = PL_UPLINK_FAIL_STILL;
			n.fails = w->outage_fails;
			n.fail_s = (double)(now - w->outage_ns) / 1e9;
			w->said_ns = now;
		}
	}
	w->connected = st->connected;
	*ret_news = n;
	return n.conn != PL_UPLINK_CONN_NONE || n.fail != PL_UPLINK_FAIL_NONE;
}

/*
 * When a bus's device goes away, fails to reopen in a new way, and comes
 * back. At most one line per bus per second: a device that flaps is
 * summed up ("3 losses since the last message"), never a line per attempt.
 */
bool pl_link_watch_step(struct pl_link_seen *seen, const struct acq_link_state *l, int64_t now,
                        uint64_t *ret_lost)
{
	uint64_t lost;

	if (now - seen->said_ns < PL_LINK_REPEAT_NS)
		return false;
	lost = l->losses - seen->losses;
	if (!lost && l->reopens == seen->reopens && (l->state == ACQ_LINK_UP || l->reopen_err == seen->reopen_err))
		return false;
	/* The "gone" line does not say how the reopen fails (the main loop may
	   look only after the first attempt): that error stays news for the
	   "still gone" line a second later. */
	*seen = (struct pl_link_seen){ l->losses, l->reopens, lost && l->state != ACQ_LINK_UP ? 0 : l->reopen_err, now };
	*ret_lost = lost;
	return true;
}

/*
 * Watch the log's refusals (every loop, 20 ms): the first one is said at
 * once on stderr (the journal, under systemd) and in the service status,
 * again every 10 s while it goes on, and the recovery once the log has
 * written the events for them.  A daemon must never store nothing for
 * minutes without saying so.
 */
enum pl_refuse_news pl_refuse_watch_step(struct pl_refuse_watch *w, uint64_t log_dropped,
                                         uint64_t log_unreported, int64_t now)
{
	if (log_dropped > w->seen) {
		w->seen = log_dropped;
		w->last_ns = now;
		if (w->refusing && now < w->said_ns + PL_REFUSE_REPEAT_NS)
			return PL_REFUSE_QUIET;
		w->refusing = true;
		w->said_ns = now;
		return PL_REFUSE_REFUSING;
	}
	if (w->refusing && now - w->last_ns >= PL_REFUSE_QUIET_NS && !log_unreported) {
		w->refusing = false;
		return PL_REFUSE_RECOVERED;
	}
	return PL_REFUSE_QUIET;
}

void pl_run_totals_add(struct pl_run_totals *t, uint64_t replay_skipped, int replay_error, uint64_t log_dropped,
                       uint64_t log_unreported, int log_error)
{
	t->replay_skipped += replay_skipped;
	if (replay_error)
		t->replay_error = replay_error;
	t->refused += log_dropped;
	t->unreported += log_unreported;
	if (log_error)
		t->log_error = log_error;
}

int pl_watchdogs_open(struct pl_watchdogs *w, const char *hw_path, int hw_timeout_s, int64_t now)
{
	uint64_t usec = pl_notify_watchdog_usec();
	int64_t period = usec ? (int64_t)usec * 1000 / 2 : 0;
	int r = 0;

	w->hwdog = -1;
	if (hw_path && hw_path[0]) {
		r = pl_hwdog_open(hw_path, hw_timeout_s, &w->hwdog);
		if (r >= 0 && (!period || period > 1000000000ll))
			period = 1000000000ll; /* well inside any driver's timeout */
	}
	w->period = period;
	w->next = now;
	return r < 0 ? r : 0;
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
void pl_watchdogs_kick(struct pl_watchdogs *w, int64_t now, int64_t heartbeat)
{
	if (!w->period || now < w->next)
		return;
	w->next = now + w->period;
	if (now - heartbeat > PL_ALIVE_NS)
		return;
	if (pl_notify_watchdog_usec())
		pl_notify("WATCHDOG=1");
	if (w->hwdog >= 0)
		pl_hwdog_kick(w->hwdog);
}

void pl_watchdogs_close(struct pl_watchdogs *w)
{
	if (w->hwdog >= 0)
		pl_hwdog_close(w->hwdog, 1);
	w->hwdog = -1;
}
