/* SPDX-License-Identifier: MIT */
/*
 * faults.h - the faults that matter, said in plain words on stderr (the
 * journal under systemd), not only counted in the log: a CAN controller
 * bus-off, a Modbus unit that does not answer or answers with exceptions,
 * an I/O fault of the log, retention deleting records the uplink never
 * sent.
 *
 * Two halves.  The tally (struct pl_faults) is written by the collector
 * thread only (the sink notes every event it stores and what the log
 * reports) and read by any thread.  The reporter runs on the main thread:
 * the first fault of a kind on a source is said at once; what follows is
 * summed up once a minute ("57 more in the last 60 s"), and a minute
 * without one says it has stopped.  A fault that repeats every poll period
 * is one line a minute, never a line per poll.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "acquisition/acq-item.h"
#include "conf/config-types.h"

enum pl_fault {
	PL_FAULT_CAN_BUS_OFF,     /* arg = RX errors, detail = TX errors (-1: unknown) */
	PL_FAULT_MB_TIMEOUT,      /* arg = address, detail = unit << 8 | function */
	PL_FAULT_MB_EXCEPTION,    /* arg = address, detail = unit << 8 | exception code */
	PL_FAULT_LOG,             /* arg = -errno, detail = segments abandoned */
	PL_FAULT_RETENTION,       /* arg = records deleted unforwarded (per note) */
	PL_FAULT_WINDOW,          /* retention_min_age cannot be kept: arg = bytes needed,
	                             detail = enum stor_window_alarm */
	PL_FAULT_HOLD,            /* the holds file cannot be read: arg = -errno, detail =
	                             its bad line; noted when it happens and once a
	                             second (each failed read) while it lasts */
	PL_FAULT_TRIGGER,         /* a trigger's hold not written: arg = -errno, detail = trigger */
	PL_FAULT_CLOCK_STEP,      /* arg = step in ns, detail = window ms (docs/time.md) */
	PL_FAULT_TRDP_TIMEOUT,    /* a TRDP telegram silent past its timeout: arg = timeout ms,
	                             detail = ComId (TRDP_TIMEOUT) */
	PL_FAULT_MAX
};

/* Every bus, and one more for the daemon's own (the log). */
#define PL_FAULT_SOURCES (CONF_BUSES_MAX + 1)
#define PL_FAULT_SUMMARY_NS (60 * 1000000000ll)

struct pl_fault_slot {
	_Atomic uint64_t count;      /* occurrences; stored last (release) */
	_Atomic uint64_t amount;     /* records, for RETENTION; else = count */
	_Atomic int64_t arg;         /* of the latest */
	_Atomic uint32_t detail;
};

/* Zeroed by the caller (memset or static init); no allocation. */
struct pl_faults {
	struct pl_fault_slot slot[PL_FAULT_SOURCES][PL_FAULT_MAX];
};

/* The collector: note an item if it is a fault (any other item: nothing).
   RT-safe (a few relaxed stores), one writer. */
void pl_faults_note_item(struct pl_faults *f, const struct acq_item *it);

/* The collector: note a fault of source src (a bus index, or
   ACQ_SOURCE_DAEMON).  amount: records concerned (RETENTION), else 1. */
void pl_faults_note(struct pl_faults *f, uint32_t src, enum pl_fault k, uint64_t amount, int64_t arg,
                       uint32_t detail);

/* What the reporter has said, per slot; zero it to start. */
struct pl_fault_said {
	uint64_t seen;        /* count at the last look */
	uint64_t said_count;  /* count covered by the lines said so far */
	uint64_t said_amount;
	int64_t said_ns;      /* when the first line or the last summary was said */
	bool active;
};

struct pl_fault_reporter {
	const char *cmd;                 /* "run": lines read "railmon run: ..." */
	const struct conf_board *cfg;     /* bus names and devices */
	const char *log_dir;             /* the holds file's directory, for its
	                                    path in the message; NULL: not named */
	struct pl_fault_said said[PL_FAULT_SOURCES][PL_FAULT_MAX];
};

/*
 * Say what is new in f since the last call, at monotonic time now_ns, on
 * out: a first fault at once, then a summary per slot at most every
 * PL_FAULT_SUMMARY_NS, then "no more" after a quiet period.  final (the
 * end of a run): every fault not yet summed up is said now.  The last line
 * said is copied into ret_last (for the service status) when not NULL.
 * Returns the number of lines written.
 */
int pl_faults_report(const struct pl_faults *f, struct pl_fault_reporter *rep, int64_t now_ns,
                        bool final, FILE *out, char *ret_last, size_t lastlen);

/* "slcan /dev/ttyACM0", "socketcan can0", "modbus tcp 10.0.0.2:502"... */
void pl_bus_where(const struct bus_cfg *bc, char *buf, size_t len);
