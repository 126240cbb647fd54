/* SPDX-License-Identifier: MIT */
/*
 * faults.c - faults in plain words, rate-limited (faults.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "faults.h"
#include "storage/stor.h"

static uint32_t fault_src(uint32_t src)
{
	return src < CONF_BUSES_MAX ? src : CONF_BUSES_MAX;
}

void pl_faults_note(struct pl_faults *f, uint32_t src, enum pl_fault k, uint64_t amount, int64_t arg,
                       uint32_t detail)
{
	struct pl_fault_slot *s;

	if (!f || k >= PL_FAULT_MAX)
		return;
	s = &f->slot[fault_src(src)][k];
	atomic_store_explicit(&s->arg, arg, memory_order_relaxed);
	atomic_store_explicit(&s->detail, detail, memory_order_relaxed);
	atomic_store_explicit(&s->amount, atomic_load_explicit(&s->amount, memory_order_relaxed) + amount,
	                      memory_order_relaxed);
	/* release: a reader that sees the new count sees its arg and amount */
	atomic_store_explicit(&s->count, atomic_load_explicit(&s->count, memory_order_relaxed) + 1,
	                      memory_order_release);
}

void pl_faults_note_item(struct pl_faults *f, const struct acq_item *it)
{
	if (!f || it->kind != ACQ_ITEM_EVENT)
		return;
	switch (it->event.code) {
	case ACQ_EV_CAN_BUS_OFF:
		pl_faults_note(f, it->bus, PL_FAULT_CAN_BUS_OFF, 1, it->event.arg, it->event.detail);
		break;
	case ACQ_EV_MB_TIMEOUT:
		pl_faults_note(f, it->bus, PL_FAULT_MB_TIMEOUT, 1, it->event.arg, it->event.detail);
		break;
	case ACQ_EV_MB_EXCEPTION:
		pl_faults_note(f, it->bus, PL_FAULT_MB_EXCEPTION, 1, it->event.arg, it->event.detail);
		break;
	case ACQ_EV_CLOCK_STEP:
		pl_faults_note(f, ACQ_SOURCE_DAEMON, PL_FAULT_CLOCK_STEP, 1, it->event.arg, it->event.detail);
		break;
	case ACQ_EV_TRDP_TIMEOUT:
		pl_faults_note(f, it->bus, PL_FAULT_TRDP_TIMEOUT, 1, it->event.arg, it->event.detail);
		break;
	default:
		break;
	}
}

void pl_bus_where(const struct bus_cfg *bc, char *buf, size_t len)
{
	static const char *const can_drivers[BUS_CAN_DRIVER_MAX] = { "socketcan", "slcan", "trace" };

	if (bc->kind == BUS_KIND_TRDP)
		snprintf(buf, len, "trdp UDP %u%s%s", bc->trdp.pd_port, bc->trdp.ifname[0] ? " on " : "", bc->trdp.ifname);
	else if (bc->kind == BUS_KIND_MODBUS && bc->mb.rtu)
		snprintf(buf, len, "modbus rtu %s", bc->mb.device);
	else if (bc->kind == BUS_KIND_MODBUS)
		snprintf(buf, len, "modbus tcp %s:%u", bc->mb.host, bc->mb.port);
	else
		snprintf(buf, len, "%s %s", bc->can.driver < BUS_CAN_DRIVER_MAX ? can_drivers[bc->can.driver] : "can",
		         bc->can.driver == BUS_CAN_SOCKETCAN ? bc->can.ifname : bc->can.device);
}

/* The Modbus exception codes (Modbus Application Protocol 1.1b3, 7). */
static const char *mb_exception_words(unsigned code)
{
	switch (code) {
	case 1: return "illegal function: the device does not support this table";
	case 2: return "illegal data address: no such register on the device; check the address (0-based)";
	case 3: return "illegal data value: the count or type does not fit the device";
	case 4: return "server device failure";
	case 5: return "acknowledge: the device is busy with a long command";
	case 6: return "server device busy";
	case 10: return "gateway path unavailable";
	case 11: return "gateway target device failed to respond";
	default: return "unknown exception code";
	}
}

/* "bus 'plc' (modbus tcp 10.0.0.2:502)", or "the log" for the daemon. */
static void source_words(const struct pl_fault_reporter *rep, size_t src, enum pl_fault k, char *buf, size_t len)
{
	char where[BUS_PATH_MAX + 32];

	if (k == PL_FAULT_CLOCK_STEP) {
		snprintf(buf, len, "the system clock");
		return;
	}
	if (src >= CONF_BUSES_MAX || !rep->cfg || src >= rep->cfg->nbuses) {
		snprintf(buf, len, "the log");
		return;
	}
	pl_bus_where(&rep->cfg->buses[src], where, sizeof(where));
	snprintf(buf, len, "bus '%s' (%s)", rep->cfg->buses[src].name, where);
}

/* The first fault of a slot: what it is, what it costs, what to look at. */
/* The holds file with its path and line: "DIR/holds:4: ..." */
static void hold_words(const char *dir, int64_t arg, uint32_t detail, char *buf, size_t len)
{
	char path[BUS_PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s%s%s", dir ? dir : "", dir ? "/" : "", STOR_HOLDS_NAME);
	if (arg == -EBADMSG && detail)
		snprintf(buf, len, "%s:%u: the holds file is damaged (a changed or cut line; its CRC does not match): "
		         "retention deletes nothing until it can be read again, recording goes on; keep a copy for the "
		         "investigation, then repair or remove it", path, detail);
	else
		snprintf(buf, len, "%s: the holds file cannot be read (%s): retention deletes nothing until it can, "
		         "recording goes on", path, arg < 0 ? strerror((int)-arg) : "unknown error");
}

static void first_words(const struct pl_fault_reporter *rep, enum pl_fault k, int64_t arg, uint32_t detail,
                        uint64_t amount, char *buf, size_t len)
{
	unsigned unit = detail >> 8 & 0xff, x = detail & 0xff;

	switch (k) {
	case PL_FAULT_CAN_BUS_OFF:
		if ((int32_t)detail >= 0 && arg >= 0)
			snprintf(buf, len, "the CAN controller went bus-off (TX errors %u, RX errors %" PRId64 "): %s", detail,
			         arg, strerror(ENETDOWN));
		else
			snprintf(buf, len, "the CAN controller went bus-off: %s", strerror(ENETDOWN));
		snprintf(buf + strlen(buf), len - strlen(buf), "; nothing is received until it restarts (check wiring, "
		         "termination and bitrate; restart-ms on the interface)");
		break;
	case PL_FAULT_MB_TIMEOUT:
		snprintf(buf, len, "unit %u does not answer: no reply to function %u at address %" PRId64 " within the "
		         "response timeout (%s); its channels get no new values (an MB_TIMEOUT event each poll)", unit, x, arg, strerror(ETIMEDOUT));
		break;
	case PL_FAULT_MB_EXCEPTION:
		snprintf(buf, len, "unit %u answers address %" PRId64 " with exception %u (%s)", unit, arg, x,
		         mb_exception_words(x));
		break;
	case PL_FAULT_LOG:
		snprintf(buf, len, "I/O fault: %s%s", arg < 0 ? strerror((int)-arg) : "unknown error",
		         detail ? "; the segment being written was abandoned and a new one started" : "");
		break;
	case PL_FAULT_RETENTION:
		snprintf(buf, len, "retention deleted %" PRIu64 " record%s never sent by the uplink: the ground will "
		         "not get them; raise [storage] retention_size or check the uplink", amount, amount == 1 ? "" : "s");
		break;
	case PL_FAULT_WINDOW:
		if (detail == 2)
			snprintf(buf, len, "retention_min_age cannot be kept: the log is at its budget and the oldest data "
			         "not held is younger than the floor, so nothing is deleted and the log grows (%.1f MB "
			         "needed at this rate); when the disk is full new records are refused", (double)arg / 1e6);
		else
			snprintf(buf, len, "retention_min_age will not fit: at the rate of the last segments the window "
			         "needs %.1f MB, more than the space the log has; nothing young is deleted, but the log "
			         "will outgrow its budget (raise retention_size, lower the rate)", (double)arg / 1e6);
		break;
	case PL_FAULT_HOLD:
		hold_words(rep->log_dir, arg, detail, buf, len);
		break;
	case PL_FAULT_TRIGGER:
		snprintf(buf, len, "a trigger fired but its hold could not be written (%s): retention does not protect "
		         "that window (the TRIGGER event in the log says when it fired)", arg < 0 ? strerror((int)-arg) :
		         "unknown error");
		break;
	case PL_FAULT_CLOCK_STEP:
		snprintf(buf, len, "CLOCK_REALTIME stepped by %+.3f s (within %u ms): records after it carry the new "
		         "time (a CLOCK_STEP event; export --corrected-time, docs/time.md)", (double)arg / 1e9, detail);
		break;
	case PL_FAULT_TRDP_TIMEOUT:
		snprintf(buf, len, "no telegram of ComId %u within its timeout of %" PRId64 " ms: its channels are stale "
		         "until it is back (TRDP_TIMEOUT and TRDP_BACK events; check the sender and the groups joined)",
		         detail, arg);
		break;
	default:
		snprintf(buf, len, "fault");
		break;
	}
}

/* What a summary counts: "timeouts", "records deleted unforwarded"... */
static const char *fault_plural(enum pl_fault k)
{
	static const char *const words[PL_FAULT_MAX] = {
		[PL_FAULT_CAN_BUS_OFF] = "bus-off events",
		[PL_FAULT_MB_TIMEOUT] = "Modbus timeouts",
		[PL_FAULT_MB_EXCEPTION] = "Modbus exception replies",
		[PL_FAULT_LOG] = "log I/O faults",
		[PL_FAULT_RETENTION] = "records deleted by retention unsent",
		[PL_FAULT_WINDOW] = "retention window alarms",
		[PL_FAULT_HOLD] = "failed reads of the holds file (one a second while it lasts)",
		[PL_FAULT_TRIGGER] = "holds not written",
		[PL_FAULT_CLOCK_STEP] = "clock steps",
		[PL_FAULT_TRDP_TIMEOUT] = "TRDP telegram timeouts",
	};
	return words[k];
}

static int say(struct pl_fault_reporter *rep, FILE *out, const char *who, const char *what, char *ret_last,
               size_t lastlen)
{
	fprintf(out, "railmon %s: %s: %s\n", rep->cmd, who, what);
	if (ret_last && lastlen)
		snprintf(ret_last, lastlen, "%s: %s", who, what);
	return 1;
}

/* One slot: returns the lines said. */
static int report_slot(const struct pl_fault_slot *s, struct pl_fault_reporter *rep, size_t src,
                       enum pl_fault k, int64_t now, bool final, FILE *out, char *ret_last, size_t lastlen)
{
	struct pl_fault_said *w = &rep->said[src][k];
	uint64_t count = atomic_load_explicit(&s->count, memory_order_acquire);
	uint64_t amount = atomic_load_explicit(&s->amount, memory_order_relaxed);
	int64_t arg = atomic_load_explicit(&s->arg, memory_order_relaxed);
	uint32_t detail = atomic_load_explicit(&s->detail, memory_order_relaxed);
	char who[BUS_NAME_MAX + BUS_PATH_MAX + 48], what[1024], last[640];
	uint64_t n = count - w->said_count, m = amount - w->said_amount;

	w->seen = count;
	if (!n && !w->active)
		return 0;
	source_words(rep, src, k, who, sizeof(who));
	if (n && !w->active) {
		first_words(rep, k, arg, detail, amount - w->said_amount, what, sizeof(what));
		snprintf(what + strlen(what), sizeof(what) - strlen(what), " (said again at most once a minute)");
		/* The line tells of one fault (a count of records for
		   RETENTION): any others since the last look, up to a round
		   of the caller's loop, go into the summary, so the line and
		   the summaries add up to the events in the log. */
		if (k == PL_FAULT_RETENTION)
			*w = (struct pl_fault_said){ count, count, amount, now, true };
		else
			*w = (struct pl_fault_said){ count, w->said_count + 1, w->said_amount + 1, now, true };
		return say(rep, out, who, what, ret_last, lastlen);
	}
	if (!final && now - w->said_ns < PL_FAULT_SUMMARY_NS)
		return 0;
	if (!n) {
		snprintf(what, sizeof(what), "no more %s in the last %.0f s", fault_plural(k), (double)(now - w->said_ns) / 1e9);
		w->active = false;
		w->said_ns = now;
		return final ? 0 : say(rep, out, who, what, ret_last, lastlen);
	}
	first_words(rep, k, arg, detail, m, last, sizeof(last));
	if (k == PL_FAULT_RETENTION) /* counted in records, and its words say nothing new */
		snprintf(what, sizeof(what), "%" PRIu64 " more %s in the last %.0f s", m, fault_plural(k),
		         (double)(now - w->said_ns) / 1e9);
	else
		snprintf(what, sizeof(what), "%" PRIu64 " more %s in the last %.0f s; the latest: %s", n, fault_plural(k),
		         (double)(now - w->said_ns) / 1e9, last);
	w->said_count = count;
	w->said_amount = amount;
	w->said_ns = now;
	return say(rep, out, who, what, ret_last, lastlen);
}

int pl_faults_report(const struct pl_faults *f, struct pl_fault_reporter *rep, int64_t now_ns,
                        bool final, FILE *out, char *ret_last, size_t lastlen)
{
	int lines = 0;

	if (!f || !rep || !out)
		return -EINVAL;
	for (size_t src = 0; src < PL_FAULT_SOURCES; src++)
		for (int k = 0; k < PL_FAULT_MAX; k++)
			lines += report_slot(&f->slot[src][k], rep, src, (enum pl_fault)k, now_ns, final, out, ret_last,
			                     lastlen);
	return lines;
}
