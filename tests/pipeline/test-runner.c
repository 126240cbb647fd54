/* SPDX-License-Identifier: MIT */
/*
 * test-runner.c - pipeline/runner.c, the watches of `run`'s main loop,
 * stepped with counters on a made-up clock: what is news about the uplink,
 * a bus's device and the log's refusals, and when; the run's totals; the
 * watchdogs kicked (WATCHDOG=1 to a real datagram socket, as a service
 * manager listens) only while the heartbeat moves.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pipeline/runner.h"
#include "tlib.h"

#define S 1000000000ll

static void test_uplink(void)
{
	struct pl_uplink_watch w = { 0 };
	struct upl_forward_stats st = { 0 };
	struct pl_uplink_news n;

	CHECK(!pl_uplink_watch_step(&w, &st, 1 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_NONE && n.fail == PL_UPLINK_FAIL_NONE);
	/* the first connection */
	st.connects = 1;
	st.connected = true;
	CHECK(pl_uplink_watch_step(&w, &st, 2 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_CONNECTED && n.fail == PL_UPLINK_FAIL_NONE);
	CHECK(!pl_uplink_watch_step(&w, &st, 3 * S, &n));
	/* lost, then a failed attempt in the same outage: no "cannot connect" */
	st.connected = false;
	CHECK(pl_uplink_watch_step(&w, &st, 10 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_LOST);
	st.connect_fails = 1;
	CHECK(!pl_uplink_watch_step(&w, &st, 11 * S, &n));
	/* a minute after the loss was said: "still", with the attempts and the outage's length */
	st.connect_fails = 5;
	CHECK(!pl_uplink_watch_step(&w, &st, 69 * S, &n));
	st.connect_fails = 6;
	CHECK(pl_uplink_watch_step(&w, &st, 70 * S, &n));
	CHECK(n.fail == PL_UPLINK_FAIL_STILL && n.fails == 6 && n.fail_s == 60.0, "%d %llu %g", (int)n.fail,
	      (unsigned long long)n.fails, n.fail_s);
	st.connect_fails = 7;
	CHECK(!pl_uplink_watch_step(&w, &st, 80 * S, &n)); /* said 10 s ago */
	/* back: after the attempts of the outage, in its time */
	st.connects = 2;
	st.connected = true;
	CHECK(pl_uplink_watch_step(&w, &st, 85 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_BACK && n.back_fails == 7 && n.back_s == 75.0, "%llu %g",
	      (unsigned long long)n.back_fails, n.back_s);
	/* a broker never reached: "cannot connect" at the first failure */
	w = (struct pl_uplink_watch){ 0 };
	st = (struct upl_forward_stats){ .connect_fails = 1 };
	CHECK(pl_uplink_watch_step(&w, &st, 1 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_NONE && n.fail == PL_UPLINK_FAIL_CANNOT);
	/* a reconnection without an outage said (a new daemon's counters) */
	w = (struct pl_uplink_watch){ .connects_seen = 1 };
	st = (struct upl_forward_stats){ .connects = 2, .connected = true };
	CHECK(pl_uplink_watch_step(&w, &st, 1 * S, &n));
	CHECK(n.conn == PL_UPLINK_CONN_RECONNECTED);
}

static void test_link(void)
{
	struct pl_link_seen seen = { 0 };
	struct acq_link_state l = { .state = ACQ_LINK_UP };
	uint64_t lost = 99;

	CHECK(!pl_link_watch_step(&seen, &l, 5 * S, &lost));
	CHECK(lost == 99); /* written only when there is news */
	l = (struct acq_link_state){ .state = ACQ_LINK_GONE, .losses = 1, .cause = -ENODEV };
	CHECK(pl_link_watch_step(&seen, &l, 5 * S, &lost));
	CHECK(lost == 1 && seen.losses == 1 && seen.said_ns == 5 * S);
	/* the reopen fails differently, but within the second: not yet */
	l.reopen_err = -ENOENT;
	l.attempts = 1;
	CHECK(!pl_link_watch_step(&seen, &l, 5 * S + S / 2, &lost));
	CHECK(pl_link_watch_step(&seen, &l, 6 * S, &lost));
	CHECK(lost == 0 && seen.reopen_err == -ENOENT);
	/* the same error again: nothing */
	l.attempts = 2;
	CHECK(!pl_link_watch_step(&seen, &l, 8 * S, &lost));
	/* back, lost twice more and back again within the quiet second: summed up */
	l = (struct acq_link_state){ .state = ACQ_LINK_UP, .losses = 3, .reopens = 3 };
	CHECK(pl_link_watch_step(&seen, &l, 9 * S, &lost));
	CHECK(lost == 2 && seen.reopens == 3);
	CHECK(!pl_link_watch_step(&seen, &l, 20 * S, &lost));
	/* gone again, first seen after the first reopen failed: the gone line
	   does not say the reopen error, so the next second's line does */
	l = (struct acq_link_state){ .state = ACQ_LINK_REOPENING, .losses = 4, .reopens = 3, .cause = -ENETDOWN,
	                             .reopen_err = -ENODEV, .attempts = 1 };
	CHECK(pl_link_watch_step(&seen, &l, 21 * S, &lost));
	CHECK(lost == 1 && seen.reopen_err == 0);
	l.attempts = 3;
	CHECK(pl_link_watch_step(&seen, &l, 22 * S, &lost));
	CHECK(lost == 0 && seen.reopen_err == -ENODEV);
	CHECK(!pl_link_watch_step(&seen, &l, 23 * S, &lost));
}

static void test_refuse(void)
{
	struct pl_refuse_watch w = { 0 };

	CHECK(pl_refuse_watch_step(&w, 0, 0, 1 * S) == PL_REFUSE_QUIET);
	CHECK(pl_refuse_watch_step(&w, 3, 3, 2 * S) == PL_REFUSE_REFUSING);
	/* more, within 10 s of saying it: quiet; after: said again */
	CHECK(pl_refuse_watch_step(&w, 5, 5, 5 * S) == PL_REFUSE_QUIET);
	CHECK(pl_refuse_watch_step(&w, 6, 6, 12 * S) == PL_REFUSE_REFUSING);
	CHECK(pl_refuse_watch_step(&w, 6, 0, 13 * S) == PL_REFUSE_QUIET); /* 1 s quiet only */
	/* no refusal for 2 s, but not yet in an event on disk: not recovered */
	CHECK(pl_refuse_watch_step(&w, 6, 6, 15 * S) == PL_REFUSE_QUIET);
	CHECK(pl_refuse_watch_step(&w, 6, 0, 16 * S) == PL_REFUSE_RECOVERED);
	CHECK(!w.refusing);
	CHECK(pl_refuse_watch_step(&w, 6, 0, 20 * S) == PL_REFUSE_QUIET);
	/* refusing again is said at once */
	CHECK(pl_refuse_watch_step(&w, 7, 1, 21 * S) == PL_REFUSE_REFUSING);
}

static void test_totals(void)
{
	struct pl_run_totals t = { 0 };

	pl_run_totals_add(&t, 1, 0, 10, 2, -ENOSPC);
	pl_run_totals_add(&t, 2, -EIO, 5, 0, 0); /* a later daemon without an error keeps the first's */
	CHECK(t.replay_skipped == 3 && t.replay_error == -EIO && t.refused == 15 && t.unreported == 2 &&
	      t.log_error == -ENOSPC);
}

static void expect_none(int fd)
{
	char got[64];

	CHECK(recv(fd, got, sizeof(got), MSG_DONTWAIT) < 0 && errno == EAGAIN, "a datagram came");
}

static void expect_kick(int fd)
{
	char got[64];
	ssize_t n = recv(fd, got, sizeof(got) - 1, MSG_DONTWAIT);

	CHECK(n > 0, "no kick");
	got[n] = 0;
	CHECK_STR(got, "WATCHDOG=1");
}

static void test_watchdogs(void)
{
	char dir[] = "/tmp/test-runner-XXXXXX", path[64], pid[32];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pl_watchdogs w;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0 && mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "%s", strerror(errno));
	setenv("NOTIFY_SOCKET", path, 1);

	/* no watchdog asked for: nothing kicked; a hardware one that is not
	   there is said (-ENOENT) and left out */
	unsetenv("WATCHDOG_USEC");
	CHECK(pl_watchdogs_open(&w, "", 0, 0) == 0 && w.period == 0 && w.hwdog == -1);
	pl_watchdogs_kick(&w, 10 * S, 10 * S);
	expect_none(fd);
	CHECK(pl_watchdogs_open(&w, "/nonexistent/watchdog", 10, 0) == -ENOENT && w.hwdog == -1 && w.period == 0);

	/* WATCHDOG_USEC 4 s: kicked every 2 s, while the heartbeat is within 2 s */
	setenv("WATCHDOG_USEC", "4000000", 1);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("WATCHDOG_PID", pid, 1);
	CHECK(pl_watchdogs_open(&w, NULL, 0, 100 * S) == 0 && w.period == 2 * S && w.next == 100 * S);
	pl_watchdogs_kick(&w, 100 * S, 100 * S);
	expect_kick(fd);
	pl_watchdogs_kick(&w, 101 * S, 101 * S); /* not due */
	expect_none(fd);
	pl_watchdogs_kick(&w, 102 * S, 101 * S);
	expect_kick(fd);
	/* a wedged pipeline: due, but the heartbeat stands still; it must fire */
	pl_watchdogs_kick(&w, 105 * S, 102 * S);
	expect_none(fd);
	CHECK(w.next == 107 * S);
	pl_watchdogs_kick(&w, 107 * S, 106 * S);
	expect_kick(fd);
	pl_watchdogs_close(&w);
	CHECK(w.hwdog == -1);

	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
	close(fd);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_uplink();
	test_link();
	test_refuse();
	test_totals();
	test_watchdogs();
	printf("runner: ok\n");
	return 0;
}
