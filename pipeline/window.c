/* SPDX-License-Identifier: MIT */
/* window.c - the retention window against the log's space (window.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dbc/dbc.h"
#include "storage/stor.h"
#include "watch.h"
#include "window.h"

static void can_rate(const pl_channels_t *ch, size_t b, struct pl_window *w)
{
	const dbc_t *dbc = pl_channels_dbc(ch, b);
	struct dbc_message_info m;

	if (!dbc)
		return;
	for (unsigned i = 0; i < dbc_message_count(dbc); i++) {
		if (dbc_message_info(dbc, i, &m) < 0)
			continue;
		if (!m.cycle_ms) {
			w->can_uncounted++;
			continue;
		}
		w->can_frames_s += 1000.0 / m.cycle_ms;
		w->can_samples_s += 1000.0 * m.nsignals / m.cycle_ms;
	}
}

static void rate(const struct conf_board *cfg, const pl_channels_t *ch, struct pl_window *w)
{
	for (size_t b = 0; b < cfg->nbuses; b++) {
		const struct bus_cfg *bc = &cfg->buses[b];

		if (bc->kind == BUS_KIND_CAN) {
			can_rate(ch, b, w);
			continue;
		}
		for (size_t i = 0; i < bc->mb.nchannels; i++)
			if (bc->mb.channels[i].period_ms)
				w->mb_samples_s += 1000.0 / bc->mb.channels[i].period_ms;
	}
	w->bytes_s = w->can_frames_s * PL_BYTES_PER_FRAME + (w->can_samples_s + w->mb_samples_s) * PL_BYTES_PER_SAMPLE +
	             PL_BYTES_PER_SEAL / (cfg->seal_interval_s ? cfg->seal_interval_s : 60) +
	             PL_BYTES_PER_HEALTH * (double)(cfg->nbuses + 3) /
	                     (cfg->health_interval_s ? cfg->health_interval_s : 10);
}

uint64_t pl_keep_recent_s(const struct conf_board *cfg)
{
	uint64_t pre = 0;

	for (size_t i = 0; i < cfg->ntriggers; i++)
		if (cfg->triggers[i].pre_s > pre)
			pre = cfg->triggers[i].pre_s;
	return cfg->ntriggers ? pre + PL_PRE_MARGIN_S : 0;
}

/* The budget's room for holds (issue 24): what the pre window keeps, what
   one hold keeps at most, and how many of those fit beside the floor. */
static void holds_need(const struct conf_board *cfg, struct pl_window *w)
{
	uint64_t seg = cfg->storage.segment_bytes, one = 0, floor;

	w->recent_s = pl_keep_recent_s(cfg);
	w->recent_bytes = (uint64_t)(w->bytes_s * (double)w->recent_s) + 2 * seg;
	for (size_t i = 0; i < cfg->ntriggers; i++)
		if (cfg->triggers[i].pre_s + cfg->triggers[i].post_s > one)
			one = cfg->triggers[i].pre_s + cfg->triggers[i].post_s;
	w->hold_bytes = (uint64_t)(w->bytes_s * (double)one) + 2 * seg;
	floor = w->need_bytes > w->recent_bytes ? w->need_bytes : w->recent_bytes;
	w->holds_fit = w->budget_bytes > floor ? (w->budget_bytes - floor) / w->hold_bytes : 0;
}

int pl_window_check(const struct conf_board *cfg, const pl_channels_t *ch, const char *dir,
                    struct pl_window *ret, char *err, size_t errlen)
{
	const struct conf_storage *st = &cfg->storage;
	struct pl_window w = { 0 };
	struct stor_space sp;
	char need[32], budget[32], where[BUS_PATH_MAX + 16];
	int r;

	if (!cfg || !ch || !dir || !ret || !err)
		return -EINVAL;
	err[0] = 0;
	rate(cfg, ch, &w);
	if (st->retention_min_age_s || cfg->ntriggers) {
		/* the log keeps the longer of the two undeletable */
		uint64_t floor_s = st->retention_min_age_s > pl_keep_recent_s(cfg) ? st->retention_min_age_s :
		                   pl_keep_recent_s(cfg);

		if (st->retention_min_age_s)
			w.need_bytes = (uint64_t)(w.bytes_s * (double)floor_s) + 2 * st->segment_bytes;
		w.budget_bytes = st->retention_bytes;
		if (!w.budget_bytes) {
			r = stor_space_query(dir, &sp);
			if (r < 0 && !st->retention_min_age_s) {
				/* only the holds' figures wanted: said without them */
				*ret = w;
				return 0;
			}
			if (r < 0) {
				snprintf(err, errlen, "%s: cannot size the filesystem for retention_min_age: %s", dir,
				         strerror(-r));
				*ret = w;
				return r;
			}
			w.budget_bytes = sp.fs_bytes;
			w.budget_is_fs = true;
		}
		if (cfg->ntriggers)
			holds_need(cfg, &w);
	}
	*ret = w;
	if (w.need_bytes <= w.budget_bytes)
		return 0;
	snprintf(where, sizeof(where), "%s:%d: ", cfg->path, st->min_age_line);
	snprintf(err, errlen, "%sretention_min_age %.1f h needs %s at this board's rate, %.0f B/s (CAN %.0f frames/s "
	         "and %.0f samples/s from the DBC cycle times, Modbus %.0f samples/s; %.0f B a frame, %.0f B a sample "
	         "as measured on the demo), but %s %s can hold only %s: shorten the window, lower the rate, or give "
	         "the log more space", st->min_age_line ? where : "", (double)st->retention_min_age_s / 3600,
	         basic_format_size(w.need_bytes, need, sizeof(need)), w.bytes_s, w.can_frames_s, w.can_samples_s,
	         w.mb_samples_s, PL_BYTES_PER_FRAME, PL_BYTES_PER_SAMPLE,
	         w.budget_is_fs ? "the filesystem holding" : "retention_size for", dir,
	         basic_format_size(w.budget_bytes, budget, sizeof(budget)));
	return -EFBIG;
}

/* The cycle time (GenMsgCycleTime) of the message carrying CAN channel i,
   0 if none is declared or it is not a DBC signal. */
static unsigned cycle_of(const pl_channels_t *ch, size_t i)
{
	const struct pl_channel *list;
	const dbc_t *dbc;
	struct dbc_signal_info si;
	struct dbc_message_info mi;

	pl_channels_list(ch, &list);
	dbc = pl_channels_dbc(ch, list[i].bus);
	if (!dbc || dbc_signal_info(dbc, list[i].id & 0xffff, &si) < 0)
		return 0;
	for (unsigned k = 0; k < dbc_message_count(dbc); k++)
		if (dbc_message_info(dbc, k, &mi) == 0 && mi.id == si.msg_id && mi.ext == si.ext)
			return mi.cycle_ms;
	return 0;
}

/* A required signal whose message comes less often than required would be
   STALE between every two frames: refused (Modbus channels are checked
   against their period by the board file's own checks). */
static int required_vs_cycle(const struct conf_board *cfg, const pl_channels_t *ch, char *err, size_t errlen)
{
	for (size_t k = 0; k < cfg->nrequired; k++) {
		const struct conf_required *rq = &cfg->required[k];
		char why[64];
		size_t i;
		unsigned cyc;

		if (pl_channels_find(ch, rq->channel, &i, why, sizeof(why)) < 0)
			continue; /* pl_watch_new() says so */
		cyc = cycle_of(ch, i);
		if (cyc && rq->within_ms < cyc) {
			snprintf(err, errlen, "%s:%d: %s: required_within_ms %u is shorter than its message's cycle time, "
			         "%u ms (GenMsgCycleTime in the DBC): it would be STALE between every two frames", cfg->path,
			         rq->line, rq->channel, rq->within_ms, cyc);
			return -EINVAL;
		}
	}
	return 0;
}

int pl_recorder_check(const struct conf_board *cfg, const char *dir, char *note, size_t notelen, char *err,
                      size_t errlen)
{
	pl_channels_t *ch = NULL;
	pl_watch_t *w = NULL;
	struct pl_window win;
	char need[32], budget[32];
	int r;

	note[0] = 0;
	r = pl_channels_new(cfg, &ch, err, errlen);
	if (r == 0)
		r = pl_watch_new(&(struct pl_watch_cfg){ .board = cfg, .channels = ch, .log_dir = dir }, &w, err, errlen);
	if (r == 0)
		r = required_vs_cycle(cfg, ch, err, errlen);
	if (r == 0)
		r = pl_window_check(cfg, ch, dir, &win, err, errlen);
	if (r == 0 && cfg->storage.retention_min_age_s)
		snprintf(note, notelen, "retention window %.1f h: %s at %.0f B/s (CAN %.0f frames/s, %.0f samples/s; "
		         "Modbus %.0f samples/s%s) of %s %s (%.0f%%); %zu trigger(s), %zu required channel(s)",
		         (double)cfg->storage.retention_min_age_s / 3600,
		         basic_format_size(win.need_bytes, need, sizeof(need)), win.bytes_s, win.can_frames_s,
		         win.can_samples_s, win.mb_samples_s, win.can_uncounted ? "; messages without a cycle time not "
		         "counted" : "", win.budget_is_fs ? "the filesystem's" : "retention_size",
		         basic_format_size(win.budget_bytes, budget, sizeof(budget)),
		         100.0 * (double)win.need_bytes / (double)win.budget_bytes, cfg->ntriggers, cfg->nrequired);
	else if (r == 0 && (cfg->ntriggers || cfg->nrequired))
		snprintf(note, notelen, "%zu trigger(s), %zu required channel(s); no retention_min_age", cfg->ntriggers,
		         cfg->nrequired);
	if (r == 0 && win.hold_bytes && win.budget_bytes) {
		char recent[32], one[32];
		size_t n = strlen(note);

		snprintf(note + n, notelen - n, "\n  holds: the newest %" PRIu64 " s (the longest trigger pre + %d s), "
		         "%s, is never deleted for the budget, so a hold finds its pre window; one hold keeps up to %s "
		         "(its pre + post and two segments); %s %s leaves room for %" PRIu64 " hold(s) beside %s%s",
		         win.recent_s, PL_PRE_MARGIN_S, basic_format_size(win.recent_bytes, recent, sizeof(recent)),
		         basic_format_size(win.hold_bytes, one, sizeof(one)),
		         win.budget_is_fs ? "the filesystem's" : "retention_size",
		         basic_format_size(win.budget_bytes, budget, sizeof(budget)), win.holds_fit,
		         cfg->storage.retention_min_age_s ? "the window" : "it",
		         win.holds_fit < cfg->ntriggers ? " (fewer than one per trigger: when holds fill the budget the "
		         "log grows past it by the pre window, and unheld data older than it goes first)" : "");
	}
	pl_watch_free(w);
	pl_channels_free(ch);
	return r;
}
