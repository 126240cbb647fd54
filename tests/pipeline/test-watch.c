/* SPDX-License-Identifier: MIT */
/*
 * test-watch.c - pipeline/watch.c, triggers and required channels, on the
 * demo's DBC (cli/demo/train.dbc) through a real board file, the real
 * channel list and a real holds file:
 *   - a channel condition fires on its rising edge only, with a number or a
 *     value-table label; an invalid sample neither fires nor re-arms;
 *   - an event trigger fires once per post window;
 *   - each firing becomes a hold [t - pre, t + post] (expiry = hold) in
 *     the holds file and a TRIGGER event carrying its id, at the tick;
 *   - a required channel goes STALE (naming it, -1 when never seen) after
 *     within_ms and FRESH when a value comes back, once each;
 *   - the board file: bad `when`, unknown channel, label, event, twice
 *     required, required_within_ms under the poll period: file:line;
 *   - through the sink: the events land in the log.
 * usage: test-watch SOURCE_ROOT
 */
#include <limits.h>

#include "conf/config.h"
#include "pipeline/channels.h"
#include "pipeline/sink.h"
#include "pipeline/watch.h"
#include "record/batch.h"
#include "stor-test-util.h"

#define SEC 1000000000ll
#define MS 1000000ll
#define T0 ((int64_t)1800000000 * SEC)

static char root[PATH_MAX];

static const char board_fmt[] =
	"[board]\nvehicle = W-1\n"
	"[can vehicle]\ndriver = trace\nfile = %s/cli/demo/train.log\ndbc = %s/cli/demo/train.dbc\n"
	"[trigger EmergencyBrake]\nwhen = EmergencyBrake == 1\npre = 10m\npost = 2m\nhold = 30d\n"
	"[trigger Overspeed]\nwhen = Speed > 160\npre = 1m\npost = 1m\n"
	"[trigger Reverse]\nwhen = Direction == reverse\n"
	"[trigger BusOff]\nwhen = event CAN_BUS_OFF\npost = 30s\n"
	"[signal Speed]\nrequired_within_ms = 500\n"
	"[signal BrakePipePressure]\nrequired_within_ms = 1000\n"
	"%s";

static struct conf_board *board(const char *extra, char *err, size_t errlen, int *ret)
{
	struct conf_board *c = NULL;
	char *text;

	CHECK(asprintf(&text, board_fmt, root, root, extra) > 0);
	*ret = conf_parse("w.ini", text, &c, err, errlen);
	free(text);
	return c;
}

static uint32_t id_of(pl_channels_t *ch, const char *name)
{
	const struct pl_channel *list;
	size_t i;
	char why[128];

	CHECK(pl_channels_find(ch, name, &i, why, sizeof(why)) == 0, "%s", name);
	pl_channels_list(ch, &list);
	return list[i].id;
}

static struct acq_item sample(uint32_t id, int64_t t, double v)
{
	struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = t };

	it.sample.channel = id;
	it.sample.value = v;
	return it;
}

static struct acq_item event(uint32_t code, int64_t t)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = t, .bus = 0 };

	it.event.code = code;
	return it;
}

struct rig {
	struct conf_board *cfg;
	pl_channels_t *ch;
	pl_watch_t *w;
	char *dir;
	uint32_t speed, emergency, direction, bpp;
};

static void rig_open(struct rig *g)
{
	char err[512];
	int r;

	memset(g, 0, sizeof(*g));
	g->cfg = board("", err, sizeof(err), &r);
	CHECK(r == 0, "%s", err);
	CHECK(pl_channels_new(g->cfg, &g->ch, err, sizeof(err)) == 0, "%s", err);
	g->dir = tu_tmpdir_in("watch", true);
	CHECK(pl_watch_new(&(struct pl_watch_cfg){ .board = g->cfg, .channels = g->ch, .log_dir = g->dir,
	                                           .start_ns = T0 }, &g->w, err, sizeof(err)) == 0, "%s", err);
	g->speed = id_of(g->ch, "Speed");
	g->emergency = id_of(g->ch, "EmergencyBrake");
	g->direction = id_of(g->ch, "Direction");
	g->bpp = id_of(g->ch, "BrakePipePressure");
}

static void rig_close(struct rig *g)
{
	pl_watch_free(g->w);
	pl_channels_free(g->ch);
	conf_free(g->cfg);
	tu_rm_rf(g->dir);
	free(g->dir);
}

/* Feed one item; no FRESH expected unless said. */
static size_t feed(struct rig *g, struct acq_item it, struct acq_item *out)
{
	return pl_watch_item(g->w, &it, out, 2);
}

static void triggers(void)
{
	struct rig g;
	struct acq_item out[16];
	struct stor_holds holds;
	struct pl_watch_stats st;
	unsigned line;
	size_t n;

	rig_open(&g);
	/* Speed 150, 170 (fires), 180 (still true: no), 150, 165 (fires again) */
	feed(&g, sample(g.speed, T0 + 1 * SEC, 150), out);
	feed(&g, sample(g.speed, T0 + 2 * SEC, 170), out);
	feed(&g, sample(g.speed, T0 + 3 * SEC, 180), out);
	feed(&g, sample(g.speed, T0 + 4 * SEC, 150), out);
	feed(&g, sample(g.speed, T0 + 5 * SEC, 165), out);
	/* an invalid sample is not a value: no edge either way */
	{
		struct acq_item bad = sample(g.emergency, T0 + 5 * SEC, 1);
		bad.sample.quality = ACQ_Q_INVALID;
		feed(&g, bad, out);
	}
	feed(&g, sample(g.emergency, T0 + 6 * SEC, 0), out);
	feed(&g, sample(g.emergency, T0 + 7 * SEC, 1), out);
	/* "reverse" is 2 in the value table */
	feed(&g, sample(g.direction, T0 + 8 * SEC, 1), out);
	feed(&g, sample(g.direction, T0 + 9 * SEC, 2), out);
	/* bus-off three times within 30 s: one hold; after 30 s: another */
	feed(&g, event(ACQ_EV_CAN_BUS_OFF, T0 + 10 * SEC), out);
	feed(&g, event(ACQ_EV_CAN_BUS_OFF, T0 + 11 * SEC), out);
	feed(&g, event(ACQ_EV_CAN_BUS_OFF, T0 + 39 * SEC), out);
	feed(&g, event(ACQ_EV_CAN_BUS_OFF, T0 + 41 * SEC), out);
	CHECK(stor_holds_read(g.dir, &holds, &line) == 0 && holds.n == 0, "holds are made at the tick");
	n = pl_watch_tick(g.w, T0 + 42 * SEC, out, 16);
	/* 6 TRIGGER events first (Speed twice, EB, Reverse, BusOff twice) */
	CHECK(pl_watch_stats(g.w, &st) == 0 && st.fired == 6 && st.holds == 6 && !st.hold_errors);
	for (size_t k = 0; k < 6; k++)
		CHECK(out[k].kind == ACQ_ITEM_EVENT && out[k].event.code == ACQ_EV_TRIGGER &&
		      out[k].event.arg == (int64_t)k + 1, "event %zu: code %u arg %" PRId64, k, out[k].event.code,
		      out[k].event.arg);
	CHECK(out[0].t_ns == T0 + 2 * SEC && out[0].event.detail == 1, "Overspeed is trigger 1");
	CHECK(out[2].t_ns == T0 + 7 * SEC && out[2].event.detail == 0);
	CHECK(out[3].t_ns == T0 + 9 * SEC && out[3].event.detail == 2);
	CHECK(out[5].t_ns == T0 + 41 * SEC && out[5].event.detail == 3);
	CHECK(stor_holds_read(g.dir, &holds, &line) == 0 && holds.n == 6);
	CHECK_STR(holds.h[2].trigger, "EmergencyBrake");
	CHECK(holds.h[2].from_ns == T0 + 7 * SEC - 600 * SEC && holds.h[2].to_ns == T0 + 7 * SEC + 120 * SEC);
	CHECK(holds.h[2].expiry_ns == T0 + 42 * SEC + 30 * 86400 * SEC && holds.h[0].expiry_ns == 0);
	/* both required channels were never seen: STALE, arg -1, naming them */
	CHECK(n == 8, "%zu events", n);
	CHECK(out[6].event.code == ACQ_EV_CHANNEL_STALE && out[7].event.code == ACQ_EV_CHANNEL_STALE);
	CHECK(out[6].event.detail == g.speed && out[7].event.detail == g.bpp && out[6].event.arg > 0,
	      "Speed was seen (arg %" PRId64 "), BPP never", out[6].event.arg);
	CHECK(out[7].event.arg == -1);
	/* once each, not every tick */
	CHECK(pl_watch_tick(g.w, T0 + 43 * SEC, out, 16) == 0);
	CHECK(pl_watch_stats(g.w, &st) == 0 && st.stale == 2);
	/* a value: FRESH with the gap, then fresh values keep it quiet */
	CHECK(feed(&g, sample(g.bpp, T0 + 44 * SEC, 5.0), out) == 1);
	CHECK(out[0].event.code == ACQ_EV_CHANNEL_FRESH && out[0].event.detail == g.bpp);
	CHECK(feed(&g, sample(g.bpp, T0 + 44 * SEC + 500 * MS, 5.0), out) == 0);
	CHECK(pl_watch_tick(g.w, T0 + 45 * SEC, out, 16) == 0);
	CHECK(pl_watch_tick(g.w, T0 + 46 * SEC, out, 16) == 1 && out[0].event.code == ACQ_EV_CHANNEL_STALE &&
	      out[0].event.detail == g.bpp && out[0].event.arg == 1500);
	rig_close(&g);
}

/* What the board file refuses, with its line. */
static void refusals(void)
{
	static const struct {
		const char *extra, *want;
	} bad[] = {
		{ "[trigger X]\nwhen = Speed >> 3\n", "w.ini:26: when: expected CHANNEL OP VALUE" },
		{ "[trigger X]\nwhen = Speed\n", "w.ini:26: when: expected CHANNEL OP VALUE" },
		{ "[trigger X]\npre = 1m\n", "when" },
		{ "[trigger EmergencyBrake]\nwhen = Speed > 1\n", "trigger 'EmergencyBrake' is defined twice" },
		{ "[trigger bad/name]\nwhen = Speed > 1\n", "bad trigger name" },
		{ "[signal Speed]\nrequired_within_ms = 10\n", "'Speed' is required twice" },
		{ "[signal X]\nrequired_within_ms = 0\n", "w.ini:26: required_within_ms" },
	};
	static const struct {
		const char *extra, *want;
	} unresolved[] = {
		{ "[trigger X]\nwhen = NoSuch > 3\n", "w.ini:26: no channel 'NoSuch'" },
		{ "[trigger X]\nwhen = Direction == sideways\n", "w.ini:26: [trigger X] 'sideways' is neither a number nor a label" },
		{ "[trigger X]\nwhen = event NO_SUCH_EVENT\n", "w.ini:26: [trigger X] no event 'NO_SUCH_EVENT'" },
		{ "[signal NoSuch]\nrequired_within_ms = 100\n", "w.ini:25: no channel 'NoSuch'" },
		{ "[signal Speed.Speed]\nrequired_within_ms = 100\n", "no channel" },
	};
	char err[512], *dir = tu_tmpdir_in("watchbad", true);
	struct conf_board *c;
	pl_channels_t *ch;
	pl_watch_t *w;
	int r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = board(bad[i].extra, err, sizeof(err), &r);
		CHECK(r < 0 && !c && strstr(err, bad[i].want), "case %zu: %s", i, err);
	}
	for (size_t i = 0; i < sizeof(unresolved) / sizeof(unresolved[0]); i++) {
		c = board(unresolved[i].extra, err, sizeof(err), &r);
		CHECK(r == 0, "%s", err);
		CHECK(pl_channels_new(c, &ch, err, sizeof(err)) == 0);
		r = pl_watch_new(&(struct pl_watch_cfg){ .board = c, .channels = ch, .log_dir = dir }, &w, err,
		                 sizeof(err));
		CHECK(r < 0 && strstr(err, unresolved[i].want), "case %zu: %s", i, err);
		pl_channels_free(ch);
		conf_free(c);
	}
	CHECK(pl_watch_new(NULL, &w, err, sizeof(err)) == -EINVAL);
	CHECK(pl_watch_item(NULL, NULL, NULL, 0) == 0 && pl_watch_tick(NULL, 0, NULL, 0) == 0);
	CHECK(pl_watch_stats(NULL, NULL) == -EINVAL);
	tu_rm_rf(dir);
	free(dir);
}

/* Through the sink: a CAN frame decoded to EmergencyBrake = 1 and the
   tick: TRIGGER in the log, with the hold's id. */
static void through_sink(void)
{
	struct rig g;
	struct stor_log_cfg lc;
	struct rec_batch_meta meta = { .vehicle = "W-1", .config_hash = 1 };
	stor_log_t *log;
	pl_sink_t *sink;
	stor_reader_t *rd;
	struct stor_rec rec;
	struct acq_item frame = { .kind = ACQ_ITEM_CAN, .t_ns = T0 + SEC, .bus = 0 };
	struct stor_holds holds;
	unsigned line;
	bool trig = false;

	rig_open(&g);
	lc = (struct stor_log_cfg){ .dir = g.dir, .vehicle = "W-1", .segment_bytes = 65536 };
	CHECK(stor_log_open(&lc, &log) == 0);
	CHECK(pl_sink_new(&(struct pl_sink_cfg){ .log = log, .channels = g.ch, .meta = &meta, .batch_max = 64,
	                                         .batch_ms = 1000, .meta_interval_s = 3600, .log_dir = g.dir,
	                                         .no_evidence = true, .watch = g.w }, &sink) == 0);
	/* BrakePressure (0x120): EmergencyBrake is bit 59 (motorola), byte 7 bit 3 */
	frame.can.id = 0x120;
	frame.can.len = 8;
	frame.can.data[7] = 0x08;
	CHECK(pl_sink_items(sink, &frame, 1) == 0);
	CHECK(pl_sink_tick(sink) >= 0);
	CHECK(pl_sink_close(sink) == 0);
	pl_sink_free(sink);
	stor_log_free(log);
	CHECK(stor_holds_read(g.dir, &holds, &line) == 0 && holds.n == 1);
	CHECK_STR(holds.h[0].trigger, "EmergencyBrake");
	CHECK(stor_reader_open(g.dir, &rd) == 0);
	while (stor_reader_next(rd, &rec) == 1) {
		struct rec_batch_info info;
		rec_batch_t *b;

		CHECK(rec_batch_decode(rec.payload, rec.len, &b) == 0 && rec_batch_info(b, &info) == 0);
		for (size_t k = 0; k < info.count; k++) {
			struct acq_item it;

			CHECK(rec_batch_item(b, k, &it) == 0);
			if (it.kind == ACQ_ITEM_EVENT && it.event.code == ACQ_EV_TRIGGER) {
				CHECK(it.event.arg == 1 && it.t_ns == T0 + SEC);
				trig = true;
			}
		}
		rec_batch_free(b);
	}
	stor_reader_free(rd);
	CHECK(trig, "no TRIGGER event in the log");
	rig_close(&g);
}

/* Health fields 25-26 (the log's window) survive the Batch codec. */
static void health_window(void)
{
	struct rec_batch_meta meta = { .vehicle = "W-1" };
	struct rec_health h = { .name = "log", .kind = "log", .bus = ACQ_SOURCE_DAEMON, .window_alarm = 2,
	                        .window_s = 48 * 3600 + 17 };
	struct acq_item ev = event(ACQ_EV_RETENTION_WINDOW, T0);
	struct rec_health got;
	struct rec_batch_info info;
	rec_encoder_t *enc;
	rec_batch_t *b;
	const uint8_t *buf;
	size_t len;

	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	CHECK(rec_encoder_add(enc, &ev) == 0 && rec_encoder_add_health(enc, &h) == 0);
	CHECK(rec_encoder_finish(enc, 1, &buf, &len) == 1);
	CHECK(rec_batch_decode(buf, len, &b) == 0 && rec_batch_info(b, &info) == 0 && info.nhealth == 1);
	CHECK(rec_batch_health(b, 0, &got) == 0 && got.window_alarm == 2 && got.window_s == 48 * 3600 + 17);
	rec_batch_free(b);
	rec_encoder_free(enc);
}

int main(int argc, char **argv)
{
	health_window();
	CHECK(argc == 2);
	CHECK(realpath(argv[1], root));
	triggers();
	refusals();
	through_sink();
	printf("ok\n");
	return 0;
}
