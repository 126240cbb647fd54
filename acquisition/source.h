/* SPDX-License-Identifier: MIT */
/*
 * source.h - the loop that turns a source (a bus device, a recorded file)
 * into items in its SPSC ring, and the monitor that runs its link checks.
 *
 * An acq_source runs one thread (SCHED_FIFO for a live bus) around the
 * callbacks in its ops.  On the hot path it calls recv() and nothing else
 * that can block, then stamps the items with their bus, pushes them (a full
 * ring drops and counts for a live bus; a file waits for room), and
 * measures the latency a wakeup added.  Around that it does what every
 * source needs, once for all of them:
 *  - an error pauses 10 ms, doubling to 1 s: no error path spins;
 *  - a device that goes away (recv says -ENODEV) is announced
 *    (ACQ_EV_CAN_GONE, arg = the cause), released at once, reopened as
 *    soon as it returns (ops->await: watched, not polled) or else after
 *    jittered waits doubling from 100 ms to 5 s (a device that is there
 *    but fails to open always waits those), and announced back
 *    (ACQ_EV_CAN_BACK, arg = attempts, detail = ms blind after its return:
 *    from the sign of it to the reopen; ACQ_BLIND_UNKNOWN when no sign was
 *    seen); its presence is
 *    published for any thread (acq_source_link());
 *  - at stop, what the device already holds is read and pushed (bounded);
 *  - a recorded source is paced at X times real time (acq-pace.h);
 *  - link checks that may block (netlink round-trips) are run by an
 *    acq_monitor thread at normal priority, never on the source's thread;
 *    their events go into a ring of their own, which the collector merges
 *    into the source's stream by time stamp (see acq_collector_cfg).
 * acquisition/ knows nothing of buses, files or protobuf: the callbacks
 * and their ctx carry that.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acq.h"

/*
 * A source's callbacks.  recv is required, the rest optional (NULL).
 * Every callback but check runs on the source's own thread only.
 */
struct acq_source_ops {
	/*
	 * Fill up to max items, waiting at most timeout_ms.  Returns the
	 * number of items (0 on timeout), -ENODATA when the source has ended
	 * (a file at its end: the loop stops), -ENODEV when the device went
	 * away (with release and reopen below: the gone cycle), or another
	 * -errno (counted, the loop pauses).  Must not allocate on a realtime
	 * thread.
	 */
	int (*recv)(void *ctx, struct acq_item *items, size_t max, int timeout_ms);
	/*
	 * Poll the link for what recv cannot see; events into events (up to
	 * max), returns their number or -errno.  May block (netlink), so it
	 * runs on the monitor's thread, concurrently with recv: it must touch
	 * only what recv does not write, or atomics.  Never while release or
	 * reopen run: the loop waits for a check in progress before it
	 * releases, and the monitor checks only a source that is up.
	 */
	int (*check)(void *ctx, struct acq_item *events, size_t max);
	/* After -ENODEV: why, as -errno (goes into ACQ_EV_CAN_GONE). */
	int (*gone_cause)(void *ctx);
	/* Close the device's handle now, keep its buffers (no allocation). */
	int (*release)(void *ctx);
	/* Open it again into those buffers: 0, or -errno while still away. */
	int (*reopen)(void *ctx);
	/*
	 * While released: wait up to timeout_ms for a sign that the device
	 * is back (its path created again, its interface up): 1 (reopen
	 * now), 0 (none yet), or -errno when nothing is watched.  With it, a
	 * device that is absent is reopened as it returns; the timed waits
	 * below remain for one that is there but fails to open, and as a
	 * slow safety net.  No allocation.
	 */
	int (*await)(void *ctx, int timeout_ms);
	/* Told which items went into the ring after each recv (a source that
	   keeps counts of its own, e.g. per bus of a log replay). */
	void (*pushed)(void *ctx, const struct acq_item *items, size_t n);
};

struct acq_source_cfg {
	const struct acq_source_ops *ops;
	void *ctx;                /* handed to every callback */
	struct acq_ring *ring;    /* of struct acq_item; this source is its only
	                             producer; must outlive the source */
	uint16_t bus;             /* written into every item and event */
	bool keep_bus;            /* the items carry their own bus (a log replay
	                             of every bus into one ring) */
	bool backpressure;        /* a full ring waits for room (a file read as
	                             fast as possible), instead of dropping and
	                             counting (a live bus cannot wait) */
	bool drain_at_stop;       /* at stop, read what the device already holds */
	bool stamp_latency;       /* items carry CLOCK_REALTIME arrival stamps:
	                             record now - the newest stamp per wakeup */
	double pace_speed;        /* > 0: hold each item until its t_ns is due at
	                             this speed (acq-pace.h); stamps are kept */
	int64_t coalesce_ns;      /* > 0: after a wakeup that did not fill a
	                             batch, let frames gather this long before
	                             the next recv (one wakeup and one syscall
	                             per burst instead of per frame, at up to
	                             this much added latency); 0: recv at once;
	                             at most ACQ_SOURCE_COALESCE_MAX_NS */
	uint32_t link_down_code;  /* != 0: the source's own events that mean its */
	uint32_t link_up_code;    /* device went away / is back (a driver that
	                             reconnects by itself, like Modbus) */
	uint64_t seed;            /* jitter of the reopen waits: give each
	                             source of each board its own */
};

/* A source's presence, as its thread sees it. */
enum acq_link {
	ACQ_LINK_UP = 0,
	ACQ_LINK_GONE,      /* went away: closed, waiting to reopen */
	ACQ_LINK_REOPENING, /* reopen attempts failed so far; still trying */
	ACQ_LINK_MAX
};

struct acq_link_state {
	enum acq_link state;
	uint64_t losses;          /* times the device went away */
	uint64_t reopens;         /* times it came back */
	int cause;                /* -errno it went away with (the last time) */
	int reopen_err;           /* -errno of the last failed reopen, 0 = none */
	uint32_t attempts;        /* reopen attempts (this or the last time) */
	int64_t gone_ns;          /* CLOCK_MONOTONIC it went away (the last time) */
	int64_t back_ns;          /* CLOCK_MONOTONIC it came back, 0 = never */
	uint32_t blind_ms;        /* the last return: ms from the sign of the
	                             device's return (ops->await, or the
	                             driver's own watch) to the reopen, the
	                             time the bus went unheard after it was
	                             there again; ACQ_BLIND_UNKNOWN: reopened
	                             on a timed step, its return not seen */
};


struct acq_source_stats {
	uint64_t items;           /* received and handed to the ring (the ring
	                             counts what it dropped) */
	uint64_t errors;          /* failed recv() calls (not gone, not the end) */
	uint64_t check_drops;     /* link-check events that found the check
	                             ring full (counted, never blocking) */
};

typedef struct acq_source acq_source_t;

/* A coalescing wait longer than the loop's stop poll (100 ms) would hold
   a stop back: coalesce_ns is at most this. */
#define ACQ_SOURCE_COALESCE_MAX_NS (100 * 1000 * 1000)

/*
 * Set up a source from cfg (copied; ops, ctx and ring must outlive it).
 * Allocates everything the loop will use, so the loop itself never does.
 * Returns 0, -EINVAL (no ops, recv or ring; release/reopen without the
 * other; a pace_speed that is not finite; coalesce_ns outside 0 to
 * ACQ_SOURCE_COALESCE_MAX_NS), -ENOMEM.
 */
int acq_source_new(const struct acq_source_cfg *cfg, acq_source_t **ret_source);

/* Stop if running, free; accepts NULL; returns NULL. */
acq_source_t *acq_source_free(acq_source_t *s);

/* Start the loop on a thread configured by tcfg (acq_thread_start: a
   refused SCHED_FIFO degrades to normal priority, *ret_degraded says why).
   Returns 0, -EINVAL (already started), or -errno. */
int acq_source_start(acq_source_t *s, const struct acq_thread_cfg *tcfg, int *ret_degraded);

/* Ask the loop to stop; returns at once.  It sees the request within
   100 ms, also in a pause, a reopen wait or a paced gap. */
void acq_source_request_stop(acq_source_t *s);

/* Stop and join: the loop drains (drain_at_stop) before it ends.  Stop
   several sources faster by requesting each first.  0, -EINVAL if not
   started. */
int acq_source_stop(acq_source_t *s);

/* True once the source ended by itself (recv said -ENODATA). */
bool acq_source_done(const acq_source_t *s);

/* Counters; any thread (each read atomically). */
int acq_source_stats(const acq_source_t *s, struct acq_source_stats *ret_stats);

/* The coalescing window its loop waits after a short read (its cfg's
   coalesce_ns, as the caller built it); 0 for NULL. */
int64_t acq_source_coalesce_ns(const acq_source_t *s);

/* The presence; any thread.  The counters are read first (acquire): the
   details that follow belong to that count or a newer one. */
int acq_source_link(const acq_source_t *s, struct acq_link_state *ret_link);

/* The wakeup-latency histogram (stamp_latency); read it with
   acq_latency_snapshot() from any thread.  NULL for NULL. */
const struct acq_latency *acq_source_latency(const acq_source_t *s);

/* "up", "gone", "reopening"; "?" out of range. */
const char *acq_link_name(enum acq_link state);

/* ------------------------------------------------------------ monitor */

typedef struct acq_monitor acq_monitor_t;

/*
 * One normal-priority thread that runs the check() of every source that
 * has one, every period_ms (0 = 1000), and puts the events into that
 * source's check ring.  sources must outlive the monitor.  Returns 0,
 * -EINVAL, -ENOMEM.
 */
int acq_monitor_new(acq_source_t *const *sources, size_t n, uint32_t period_ms, acq_monitor_t **ret_monitor);

/* One round of checks now, on the caller's thread (tests).  Returns the
   number of events queued. */
int acq_monitor_poll(acq_monitor_t *m);

/* Start / stop (join) the thread (none when no source has a check); stop
   it before the devices are freed. */
int acq_monitor_start(acq_monitor_t *m, const struct acq_thread_cfg *tcfg);
int acq_monitor_stop(acq_monitor_t *m);

/* Stop if running, free; accepts NULL; returns NULL. */
acq_monitor_t *acq_monitor_free(acq_monitor_t *m);
