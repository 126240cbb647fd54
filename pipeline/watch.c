/* SPDX-License-Identifier: MIT */
/*
 * watch.c - triggers and required channels (watch.h).
 *
 * Everything is resolved and allocated at pl_watch_new(): a table from
 * channel index to the first trigger on it (and its requirement), one from
 * event code to the first trigger on it, and a fixed queue of firings.
 * The item path is then table look-ups and compares.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/clock.h"
#include "record/names.h"
#include "storage/stor.h"
#include "watch.h"

#define FIRED_MAX 64    /* firings waiting for their hold (one tick's worth) */
#define EVENT_CODES 256 /* event codes a trigger may name */
#define NONE UINT32_MAX

struct trig {
	const struct conf_trigger *c;
	uint32_t index;      /* in the board file */
	double value;        /* compared with */
	uint32_t next;       /* the next trigger on the same channel or code, NONE */
	bool was_true;       /* a condition fires on its rising edge */
	int64_t quiet_until; /* an event fires once per post window */
};

struct req {
	uint32_t within_ms;
	uint32_t channel;    /* id */
	int64_t last_ns;     /* wall time of the last value (the start before one) */
	bool stale, seen;
};

struct fired {
	uint32_t trig;
	int64_t t_ns;
};

struct pl_watch {
	const pl_channels_t *ch;
	char *dir;
	struct trig *trigs;
	size_t ntrigs;
	struct req *reqs;
	size_t nreqs;
	uint32_t *chan_trig;  /* per channel index: first trigger, NONE */
	uint32_t *chan_req;   /* per channel index: its requirement, NONE */
	size_t nchans;
	uint32_t code_trig[EVENT_CODES];
	struct fired fired[FIRED_MAX];
	size_t nfired;
	bool started;         /* the requirements' clocks run */
	void (*on_hold)(void *ctx, int64_t from_ns, int64_t to_ns);
	void *hold_ctx;
	struct pl_watch_stats st;
};

/* ------------------------------------------------------------ set-up */

static int event_code(const char *name, uint32_t *ret)
{
	char *end;
	unsigned long n = strtoul(name, &end, 10);

	if (!*end && end != name && n < EVENT_CODES) {
		*ret = (uint32_t)n;
		return 0;
	}
	for (uint32_t c = 1; c < EVENT_CODES; c++) {
		const char *s = rec_event_name(c);

		if (s && (!strcasecmp(s, name) || (!strncasecmp(name, "EVENT_", 6) && !strcasecmp(s, name + 6)))) {
			*ret = c;
			return 0;
		}
	}
	return -ENOENT;
}

static int resolve_channel(const pl_channels_t *ch, const struct conf_board *b, const char *name, int line,
                           size_t *ret, char *err, size_t errlen)
{
	char why[256] = "";
	int r = pl_channels_find(ch, name, ret, why, sizeof(why));

	if (r == -ENOTUNIQ)
		snprintf(err, errlen, "%s:%d: channel '%s' is ambiguous: %s", b->path, line, name, why);
	else if (r < 0)
		snprintf(err, errlen, "%s:%d: no channel '%s' on this board (a Modbus [channel] or a signal of a "
		         "bus's DBC; `railmon channels` lists them)", b->path, line, name);
	return r;
}

static int setup_trigger(pl_watch_t *w, const struct pl_watch_cfg *cfg, uint32_t k, char *err, size_t errlen)
{
	const struct conf_trigger *c = &cfg->board->triggers[k];
	struct trig *t = &w->trigs[k];
	uint32_t code;
	size_t i;
	char *end;
	int r;

	*t = (struct trig){ .c = c, .index = k, .next = NONE };
	if (c->op == CONF_OP_EVENT) {
		if (event_code(c->value, &code) < 0) {
			snprintf(err, errlen, "%s:%d: [trigger %s] no event '%s' (names as `export` prints them: "
			         "CAN_BUS_OFF, J1939_DTC_ACTIVE, LOG_FAULT, ...)", cfg->board->path, c->when_line,
			         c->name, c->value);
			return -ENOENT;
		}
		t->next = w->code_trig[code];
		w->code_trig[code] = k;
		return 0;
	}
	r = resolve_channel(cfg->channels, cfg->board, c->channel, c->when_line, &i, err, errlen);
	if (r < 0)
		return r;
	t->value = strtod(c->value, &end);
	if (*end || end == c->value || !isfinite(t->value)) {
		if (pl_channels_label_value(cfg->channels, i, c->value, &t->value) < 0) {
			snprintf(err, errlen, "%s:%d: [trigger %s] '%s' is neither a number nor a label of %s's value "
			         "table", cfg->board->path, c->when_line, c->name, c->value, c->channel);
			return -ENOENT;
		}
	}
	t->next = w->chan_trig[i];
	w->chan_trig[i] = k;
	return 0;
}

static int setup_required(pl_watch_t *w, const struct pl_watch_cfg *cfg, uint32_t k, char *err, size_t errlen)
{
	const struct conf_required *c = &cfg->board->required[k];
	const struct pl_channel *list;
	size_t i;
	int r = resolve_channel(cfg->channels, cfg->board, c->channel, c->line, &i, err, errlen);

	if (r < 0)
		return r;
	pl_channels_list(cfg->channels, &list);
	if (w->chan_req[i] != NONE) {
		snprintf(err, errlen, "%s:%d: %s is required twice (also at line %d)", cfg->board->path, c->line,
		         list[i].name, cfg->board->required[w->chan_req[i]].line);
		return -EINVAL;
	}
	w->reqs[k] = (struct req){ .within_ms = c->within_ms, .channel = list[i].id, .last_ns = cfg->start_ns };
	w->started = cfg->start_ns != 0;
	w->chan_req[i] = k;
	return 0;
}

int pl_watch_new(const struct pl_watch_cfg *cfg, pl_watch_t **ret, char *err, size_t errlen)
{
	const struct conf_board *b = cfg ? cfg->board : NULL;
	pl_watch_t *w;
	int r = 0;

	if (!cfg || !b || !cfg->channels || !cfg->log_dir || !ret || !err)
		return -EINVAL;
	err[0] = 0;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->ch = cfg->channels;
	w->nchans = pl_channels_list(cfg->channels, NULL);
	w->ntrigs = b->ntriggers;
	w->nreqs = b->nrequired;
	w->dir = strdup(cfg->log_dir);
	w->on_hold = cfg->on_hold;
	w->hold_ctx = cfg->hold_ctx;
	w->trigs = calloc(w->ntrigs + 1, sizeof(*w->trigs));
	w->reqs = calloc(w->nreqs + 1, sizeof(*w->reqs));
	w->chan_trig = malloc((w->nchans + 1) * sizeof(*w->chan_trig));
	w->chan_req = malloc((w->nchans + 1) * sizeof(*w->chan_req));
	if (!w->dir || !w->trigs || !w->reqs || !w->chan_trig || !w->chan_req) {
		pl_watch_free(w);
		return -ENOMEM;
	}
	memset(w->chan_trig, 0xff, (w->nchans + 1) * sizeof(*w->chan_trig));
	memset(w->chan_req, 0xff, (w->nchans + 1) * sizeof(*w->chan_req));
	memset(w->code_trig, 0xff, sizeof(w->code_trig));
	for (uint32_t k = 0; r == 0 && k < w->ntrigs; k++)
		r = setup_trigger(w, cfg, k, err, errlen);
	for (uint32_t k = 0; r == 0 && k < w->nreqs; k++)
		r = setup_required(w, cfg, k, err, errlen);
	if (r < 0) {
		pl_watch_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

pl_watch_t *pl_watch_free(pl_watch_t *w)
{
	if (!w)
		return NULL;
	free(w->dir);
	free(w->trigs);
	free(w->reqs);
	free(w->chan_trig);
	free(w->chan_req);
	free(w);
	return NULL;
}

/* ------------------------------------------------------------ items */

static bool holds(const struct trig *t, double v)
{
	switch (t->c->op) {
	case CONF_OP_EQ: return v == t->value;
	case CONF_OP_NE: return v != t->value;
	case CONF_OP_GT: return v > t->value;
	case CONF_OP_GE: return v >= t->value;
	case CONF_OP_LT: return v < t->value;
	case CONF_OP_LE: return v <= t->value;
	default: return false;
	}
}

static void fire(pl_watch_t *w, struct trig *t, int64_t t_ns)
{
	w->st.fired++;
	if (w->nfired == FIRED_MAX) {
		w->st.missed++;
		return;
	}
	w->fired[w->nfired++] = (struct fired){ t->index, t_ns };
}

static struct acq_item daemon_event(int64_t t_ns, uint32_t code, int64_t arg, uint32_t detail)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = t_ns, .bus = ACQ_SOURCE_DAEMON };

	ev.event = (struct acq_event){ .code = code, .arg = arg, .detail = detail };
	return ev;
}

static size_t sample(pl_watch_t *w, const struct acq_item *it, struct acq_item *out, size_t max)
{
	ssize_t i = pl_channels_index(w->ch, it->sample.channel);
	struct req *rq;
	size_t n = 0;

	if (i < 0)
		return 0;
	for (uint32_t k = w->chan_trig[i]; k != NONE; k = w->trigs[k].next) {
		struct trig *t = &w->trigs[k];
		/* an invalid value (NaN, "not available") is not true, and does not
		   re-arm the edge either */
		bool now = it->sample.quality != ACQ_Q_INVALID && holds(t, it->sample.value);

		if (it->sample.quality == ACQ_Q_INVALID)
			continue;
		if (now && !t->was_true)
			fire(w, t, it->t_ns);
		t->was_true = now;
	}
	if (w->chan_req[i] == NONE)
		return 0;
	rq = &w->reqs[w->chan_req[i]];
	if (rq->stale && max > n) {
		out[n++] = daemon_event(it->t_ns, ACQ_EV_CHANNEL_FRESH, (it->t_ns - rq->last_ns) / BASIC_NS_PER_MS,
		                        rq->channel);
		rq->stale = false;
		w->st.stale--;
	}
	if (!rq->stale)
		rq->last_ns = it->t_ns;
	rq->seen = true;
	return n;
}

static void event(pl_watch_t *w, const struct acq_item *it)
{
	if (it->event.code >= EVENT_CODES)
		return;
	for (uint32_t k = w->code_trig[it->event.code]; k != NONE; k = w->trigs[k].next) {
		struct trig *t = &w->trigs[k];

		/* a storm of bus-offs is one incident: one hold per post window */
		if (it->t_ns < t->quiet_until)
			continue;
		t->quiet_until = it->t_ns + (int64_t)t->c->post_s * BASIC_NS_PER_SEC;
		fire(w, t, it->t_ns);
	}
}

size_t pl_watch_item(pl_watch_t *w, const struct acq_item *it, struct acq_item *out, size_t max)
{
	if (!w || !it)
		return 0;
	if (it->kind == ACQ_ITEM_SAMPLE)
		return sample(w, it, out, max);
	if (it->kind == ACQ_ITEM_EVENT)
		event(w, it);
	return 0;
}

/* ------------------------------------------------------------ tick */

static struct acq_item make_hold(pl_watch_t *w, const struct fired *f, int64_t now_ns)
{
	const struct conf_trigger *c = w->trigs[f->trig].c;
	struct stor_hold h = {
		.t_ns = f->t_ns,
		.from_ns = f->t_ns - (int64_t)c->pre_s * BASIC_NS_PER_SEC,
		.to_ns = f->t_ns + (int64_t)c->post_s * BASIC_NS_PER_SEC,
		.created_ns = now_ns,
		.expiry_ns = c->hold_s ? now_ns + (int64_t)c->hold_s * BASIC_NS_PER_SEC : 0,
	};
	uint32_t id = 0;
	int r;

	snprintf(h.trigger, sizeof(h.trigger), "%s", c->name);
	r = stor_hold_add(w->dir, &h, &id);
	if (r < 0) {
		w->st.hold_errors++;
		w->st.last_error = r;
		return daemon_event(f->t_ns, ACQ_EV_TRIGGER, r, f->trig);
	}
	w->st.holds++;
	w->st.last_hold_id = id;
	if (w->on_hold)
		w->on_hold(w->hold_ctx, h.from_ns, h.to_ns);
	return daemon_event(f->t_ns, ACQ_EV_TRIGGER, id, f->trig);
}

size_t pl_watch_tick(pl_watch_t *w, int64_t now_ns, struct acq_item *out, size_t max)
{
	size_t n = 0, k;

	if (!w || !out)
		return 0;
	if (!w->started) {
		/* start_ns 0: the clocks start with the first tick, when the
		   buses are open (not while the daemon was still setting up) */
		for (size_t i = 0; i < w->nreqs; i++)
			w->reqs[i].last_ns = now_ns;
		w->started = true;
	}
	for (k = 0; k < w->nfired && n < max; k++)
		out[n++] = make_hold(w, &w->fired[k], now_ns);
	memmove(w->fired, w->fired + k, (w->nfired - k) * sizeof(w->fired[0]));
	w->nfired -= k;
	for (size_t i = 0; i < w->nreqs && n < max; i++) {
		struct req *rq = &w->reqs[i];

		if (rq->stale || now_ns - rq->last_ns <= (int64_t)rq->within_ms * BASIC_NS_PER_MS)
			continue;
		rq->stale = true;
		w->st.stale++;
		out[n++] = daemon_event(now_ns, ACQ_EV_CHANNEL_STALE,
		                        rq->seen ? (now_ns - rq->last_ns) / BASIC_NS_PER_MS : -1, rq->channel);
	}
	return n;
}

int pl_watch_stats(const pl_watch_t *w, struct pl_watch_stats *ret)
{
	if (!w || !ret)
		return -EINVAL;
	*ret = w->st;
	return 0;
}
