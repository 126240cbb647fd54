/* SPDX-License-Identifier: MIT */
/* check-plan.c - what `railmon check` says about a board file (check-plan.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbc/dbc.h"
#include "bus/can-filter.h"
#include "bus/load.h"
#include "bus/regmap.h"
#include "cli/check-plan.h"
#include "conf/config.h"
#include "conf/config-schema.h"
#include "pipeline/channels.h"
#include "pipeline/evidence.h"
#include "pipeline/forwarder.h"
#include "pipeline/logdir.h"
#include "pipeline/rtenv.h"
#include "pipeline/window.h"
#include "storage/stor.h"
#include "trdp/dataset.h"
#include "trdp/header.h"
#include "trdp/xml.h"

/* The log's sizes against its filesystem: refused as `run` would refuse. */
static int check_storage(FILE *out, FILE *err, const struct conf_board *cfg, const char *data)
{
	const char *dir = pl_data_dir(cfg, data);
	char msg[CONF_ERR_MAX], warn[512];
	struct stor_space sp;
	char fs[32], avail[32];

	if (pl_log_check_space(cfg, dir, msg, sizeof(msg), warn, sizeof(warn)) < 0) {
		fprintf(err, "railmon check: %s\n", msg);
		return -EINVAL;
	}
	if (stor_space_query(dir, &sp) == 0)
		fprintf(out, "  log filesystem: %s, %s free for the log\n", conf_size_text(sp.fs_bytes, fs, sizeof(fs)),
		       conf_size_text(sp.free_bytes + sp.log_bytes, avail, sizeof(avail)));
	if (warn[0])
		fprintf(out, "  WARNING: %s\n", warn);
	return 0;
}

/* Remote configuration: the ground's key it is taken with, when named. */
static int check_config_pubkey(FILE *out, FILE *err, const struct conf_board *cfg)
{
	uint8_t pk[EVD_PUBLIC_LEN];
	char msg[CONF_ERR_MAX], id[17];
	int r = pl_evidence_config_pubkey(cfg, pk, msg, sizeof(msg));

	if (r < 0) {
		fprintf(err, "railmon check: %s\n", msg);
		return r;
	}
	if (r > 0)
		fprintf(out, "  remote configuration: taken when signed with %s (key id %s)\n", cfg->uplink.config_pubkey,
		        evd_key_id(pk, id));
	return 0;
}

/* The evidence chain: signed with the board's key, or unsigned (said). */
static int check_evidence(FILE *out, FILE *err, const struct conf_board *cfg, const struct cli_check_key *key)
{
	char id[17];

	if (key->r < 0) {
		fprintf(err, "railmon check: %s\n", key->err);
		return key->r;
	}
	if (key->r == 0) {
		fprintf(out, "  evidence: hash chain and Seals every %u s, UNSIGNED (no [board] key): tamper-evident, "
		        "not authenticated\n", cfg->seal_interval_s);
		return 0;
	}
	fprintf(out, "  evidence: hash chain and Seals every %u s, signed with %s (key id %s)\n", cfg->seal_interval_s,
	        cfg->key, evd_key_id(key->public_key, id));
	return 0;
}

/* A board that asks for SCHED_FIFO: what its tail depends on here, and
   what it lacks (warnings, not refusals: the board may be checked on
   another machine than the one it runs on). */
static void check_realtime(FILE *out, const struct conf_board *cfg)
{
	struct pl_rt_env e;
	char text[2048];

	if (cfg->rt_priority <= 0 || pl_rt_env_read("/", &e) < 0)
		return;
	pl_rt_env_say(&e, cfg->rt_priority, cfg->cpu_latency_us, text, sizeof(text));
	for (char *save, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		fprintf(out, "  %s\n", l);
}

static const char *const can_drivers[] = { "socketcan", "slcan", "trace" };

/* The words of a load warning, in check's plan and in run's warning. */
static const char can_busy[] = "above 70%: frames will queue";
static const char line_busy[] = "TOO BUSY: lengthen periods";

/* Bus load from the DBC's cycle times (bus/load.h). */
static void check_can_load(FILE *out, const struct bus_can_cfg *c, const dbc_t *dbc)
{
	struct bus_can_load l;

	bus_can_load(c, dbc, &l);
	if (!l.cyclic) {
		fprintf(out, "    no GenMsgCycleTime in the DBC: bus load not estimated\n");
		return;
	}
	fprintf(out, "    %u of %u messages cyclic: %.0f frames/s, about %.0f%% of the bus at %.0f kbit/s%s%s%s\n", l.cyclic,
	       l.messages, l.frames_s, l.load * 100, l.bitrate / 1000, l.load > BUS_LOAD_WARN ? " (" : "",
	       l.load > BUS_LOAD_WARN ? can_busy : "", l.load > BUS_LOAD_WARN ? ")" : "");
}

/* The DBC messages the bus's filters drop (can-filter.h, as every driver
   applies them): their signals would never be decoded, a silent loss a
   mistyped filter causes, so check names them. */
static bool check_can_dropped(const struct bus_can_cfg *c, const dbc_t *dbc, unsigned i, struct dbc_message_info *mi)
{
	struct acq_can f = { 0 };

	if (dbc_message_info(dbc, i, mi) < 0)
		return false;
	f.id = mi->id;
	f.flags = mi->ext ? ACQ_CAN_EXT : 0;
	return !bus_can_filter_pass(c, &f);
}

static void check_can_filters(FILE *out, const struct bus_can_cfg *c, const dbc_t *dbc)
{
	unsigned n = dbc_message_count(dbc), dropped = 0, said = 0;
	struct dbc_message_info mi;

	for (unsigned i = 0; i < n; i++)
		dropped += check_can_dropped(c, dbc, i, &mi);
	if (!dropped)
		return;
	fprintf(out, "    warning: %u of %u DBC messages outside the bus's filters, never decoded:", dropped, n);
	for (unsigned i = 0; i < n; i++)
		if (check_can_dropped(c, dbc, i, &mi))
			fprintf(out, "%s %s 0x%0*" PRIX32, said++ ? "," : "", mi.name, mi.ext ? 8 : 3, mi.id);
	fputc('\n', out);
}

static int check_can(FILE *out, FILE *err, const struct conf_board *cfg, const struct bus_cfg *b)
{
	const struct bus_can_cfg *c = &b->can;
	char msg[CONF_ERR_MAX];
	dbc_t *dbc;

	fprintf(out, "  [can %s] driver %s, %s%s%s, %s", b->name, can_drivers[c->driver],
	       c->driver == BUS_CAN_SOCKETCAN ? c->ifname : c->device, c->fd ? ", CAN FD" : "",
	       c->j1939 ? ", J1939 (transport, PGN, DM1)" : "", c->listen_only ? "listen-only" : "NORMAL MODE (may transmit)");
	if (c->bitrate)
		fprintf(out, ", %u bit/s", c->bitrate);
	if (c->nfilters)
		fprintf(out, ", %u filters", c->nfilters);
	fputc('\n', out);
	if (!c->dbc[0]) {
		fprintf(out, "    no DBC: raw frames only\n");
		return 0;
	}
	if (pl_dbc_load(cfg, b->index, &dbc, msg, sizeof(msg)) < 0) {
		fprintf(err, "railmon check: %s\n", msg);
		return -EINVAL;
	}
	fprintf(out, "    DBC %s: %u messages, %u signals\n", c->dbc, dbc_message_count(dbc), dbc_signal_count(dbc));
	for (unsigned i = 0; i < dbc_warning_count(dbc); i++)
		fprintf(out, "    warning: %s\n", dbc_warning(dbc, i));
	if (dbc_warning_count(dbc))
		fprintf(out, "    %u DBC warning%s (dbc_strict = true refuses the file instead)\n", dbc_warning_count(dbc),
		       dbc_warning_count(dbc) == 1 ? "" : "s");
	check_can_filters(out, c, dbc);
	check_can_load(out, c, dbc);
	dbc_free(dbc);
	return 0;
}

/* The request plan the driver will poll (bus/regmap.c merges neighbours),
   and what it costs on the wire (bus/load.h). */
static void check_requests(FILE *out, const struct bus_mb_cfg *m, const struct bus_mb_regmap *map)
{
	struct bus_mb_load l;

	for (size_t g = 0; g < map->ngroups; g++) {
		const struct bus_mb_group *gr = &map->groups[g];
		for (size_t k = gr->first_req; k < gr->first_req + gr->nreqs; k++) {
			const struct bus_mb_request *q = &map->reqs[k];
			fprintf(out, "    request: unit %u FC%u %s %u..%u (%u channel%s) every %u ms\n", q->unit_id, q->table,
			       conf_mb_table_name(q->table), q->addr, q->addr + q->count - 1, q->nslots,
			       q->nslots == 1 ? "" : "s", gr->period_ms);
		}
	}
	bus_mb_load(m, map, &l);
	fprintf(out, "    %zu channels in %zu requests: %.1f requests/s, %.0f bytes/s", m->nchannels, map->nreqs,
	       l.requests_s, l.bytes_s);
	if (m->rtu)
		fprintf(out, ", %.1f%% of the line at %u baud%s%s%s", l.line_load * 100, m->baud,
		       l.line_load > BUS_LOAD_WARN ? " (" : "", l.line_load > BUS_LOAD_WARN ? line_busy : "",
		       l.line_load > BUS_LOAD_WARN ? ")" : "");
	fputc('\n', out);
}

bool cli_mb_modicon_warning(const struct bus_mb_channel *c, char *buf, size_t len)
{
	unsigned a = c->addr, base = a >= 40001 && a <= 49999 ? 40001 : a >= 30001 && a <= 39999 ? 30001 : 0;
	enum bus_mb_table t = base == 40001 ? BUS_MB_HOLDING : BUS_MB_INPUT;

	if (a < 30001)
		return false;
	if (!base) {
		snprintf(buf, len, "channel '%s': address %u: railmon takes the 0-based protocol address; if this is "
		         "Modicon notation (3xxxx, 4xxxx), convert it", c->name, a);
		return true;
	}
	snprintf(buf, len, "channel '%s': address %u looks like Modicon notation (%s register %u, numbered from 1); "
	         "railmon takes the 0-based protocol address: for that register write 'table = %s' and "
	         "'address = %u'%s%s", c->name, a, conf_mb_table_name(t), a - base + 1, conf_mb_table_name(t),
	         a - base, c->table != t ? " (the channel says table = " : "",
	         c->table != t ? conf_mb_table_name(c->table) : "");
	if (c->table != t)
		snprintf(buf + strlen(buf), len - strlen(buf), ")");
	return true;
}

static int check_modbus(FILE *out, FILE *err, const struct bus_cfg *b)
{
	char warn[320];

	const struct bus_mb_cfg *m = &b->mb;
	struct bus_mb_regmap *map;
	int r;

	if (m->rtu)
		fprintf(out, "  [modbus %s] RTU %s %u %u%c%u%s, timeout %u ms\n", b->name, m->device, m->baud, m->data_bits,
		       m->parity, m->stop_bits, m->rs485 ? " RS-485" : "", m->response_timeout_ms);
	else
		fprintf(out, "  [modbus %s] TCP %s:%u, timeout %u ms\n", b->name, m->host, m->port, m->response_timeout_ms);
	for (size_t i = 0; i < m->nchannels; i++) {
		const struct bus_mb_channel *c = &m->channels[i];
		fprintf(out, "    %-24s unit %3u %-8s %5u %-3s %s scale %g offset %g %-6s every %u ms\n", c->name, c->unit_id,
		       conf_mb_table_name(c->table), c->addr, conf_mb_type_name(c->type),
		       conf_mb_order_name(c->order), c->scale, c->offset,
		       c->unit, c->period_ms);
		if (cli_mb_modicon_warning(c, warn, sizeof(warn)))
			fprintf(out, "    warning: %s\n", warn);
	}
	r = bus_mb_regmap_new(m->channels, m->nchannels, m->max_gap, &map);
	if (r < 0) {
		fprintf(err, "railmon check: [modbus %s]: cannot plan requests: %s\n", b->name, strerror(-r));
		return r;
	}
	check_requests(out, m, map);
	bus_mb_regmap_free(map);
	return 0;
}

static void ipv4_text(uint32_t ip, char buf[static 16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255u, (ip >> 8) & 255u, ip & 255u);
}

/*
 * Microseconds as exact milliseconds: "1000", "1.5", "12.345".  A "%.3g"
 * printed a 1000 ms cycle as "1e+03" and 12345 us as "12.3".
 */
static void check_ms_text(char buf[static 24], uint64_t us)
{
	uint64_t frac = us % 1000;
	int n = snprintf(buf, 24, "%" PRIu64, us / 1000);

	if (frac == 0 || n < 0 || n >= 20)
		return;
	snprintf(buf + n, (size_t)(24 - n), ".%03u", (unsigned)frac);
	for (size_t e = strlen(buf); buf[e - 1] == '0'; e--)
		buf[e - 1] = '\0';
}

/*
 * The TRDP plan: each telegram of the XML with its ComId, cycle, timeout
 * (the XML's, else the 3 cycles the receiver takes), the bytes of its data
 * set ("+" when a variable array may add more) and, for PD, the bytes a
 * second it puts on the wire: the 40-byte header and the data set padded
 * to 4, once per cycle (UDP/IP headers not counted).
 */
static void check_trdp_plan(FILE *out, const struct bus_trdp_cfg *t, const struct trdp_config *tc)
{
	double total = 0;
	size_t channels = 0;

	fprintf(out, "    XML %s: %zu telegrams, %zu data sets", t->xml, tc->n_telegrams, tc->n_datasets);
	if (tc->merged || tc->renamed)
		fprintf(out, " (%zu merged, %zu renamed)", tc->merged, tc->renamed);
	fputc('\n', out);
	fprintf(out, "    %-24s %10s %10s %10s %8s %9s %8s\n", "telegram", "ComId", "cycle ms", "timeout ms", "bytes",
	        "bytes/s", "leaves");
	for (size_t i = 0; i < tc->n_telegrams; i++) {
		const struct trdp_telegram *tg = &tc->telegrams[i];
		size_t bytes = tg->plan ? trdp_plan_min_bytes(tg->plan) : 0, leaves = tg->plan ? trdp_plan_leaves(tg->plan) : 0;
		bool var = false;
		char cyc[24] = "-", tmo[24] = "-", bps[24] = "-";

		for (size_t l = 0; l < leaves; l++) {
			struct trdp_leaf_info li;
			if (trdp_plan_leaf(tg->plan, l, &li) == 0 && li.dynamic)
				var = true;
		}
		if (tg->pd && tg->cycle_us) {
			double rate = (TRDP_PD_HEADER_SIZE + ((bytes + 3) & ~(size_t)3)) * 1e6 / tg->cycle_us;
			check_ms_text(cyc, tg->cycle_us);
			snprintf(bps, sizeof(bps), "%.0f%s", rate, var ? "+" : "");
			total += rate;
		}
		if (tg->pd && (tg->timeout_us || tg->cycle_us)) {
			check_ms_text(tmo, tg->timeout_us ? tg->timeout_us : 3 * (uint64_t)tg->cycle_us);
			if (!tg->timeout_us)
				strcat(tmo, " (3c)");
		}
		fprintf(out, "    %-24s %10" PRIu32 " %10s %10s %7zu%s %9s %8zu\n", tg->name, tg->comid, cyc, tmo, bytes,
		        var ? "+" : " ", bps, leaves);
		channels += leaves;
	}
	fprintf(out, "    %zu leaves (channels; a variable array has up to its items' own), PD %.0f bytes/s%s\n",
	        channels, total, tc->n_telegrams ? "" : " (no telegram)");
}

/* A TRDP bus: where it listens, the groups it joins, its XML's plan. */
static int check_trdp(FILE *out, FILE *err, const struct conf_board *cfg, const struct bus_cfg *b)
{
	const struct bus_trdp_cfg *t = &b->trdp;
	char ip[16], msg[CONF_ERR_MAX];
	struct trdp_config *tc;

	fprintf(out, "  [trdp %s] interface %s", b->name, t->ifname[0] ? t->ifname : "(by route)");
	if (t->bind_ip) {
		ipv4_text(t->bind_ip, ip);
		fprintf(out, ", bound to %s", ip);
	}
	fprintf(out, ", PD UDP %s%u, MD UDP and TCP %s%u", t->pd_port ? "" : "off ", t->pd_port, t->md_port ? "" : "off ",
	        t->md_port);
	fprintf(out, ", groups");
	for (unsigned g = 0; g < t->ngroups; g++) {
		ipv4_text(t->groups[g], ip);
		fprintf(out, "%s%s", g ? ", " : " ", ip);
	}
	if (!t->ngroups)
		fprintf(out, " none (unicast only)");
	fputc('\n', out);
	if (t->receive_capture)
		fprintf(out, "    receive = capture: UDP read from %s's packet ring (libpcap, as tcpdump), blocks handed "
		        "over at least every %u ms, the sockets only hold the ports and groups; needs CAP_NET_RAW "
		        "(root, or the unit's capability); MD over TCP from its listener\n"
		        "    ring of %u KiB: %u blocks of 256 KiB, a stall of the bus thread of %llu ms covered at "
		        "low rates (a block each %u ms)\n",
		        t->ifname, t->capture_block_ms, t->capture_buffer_kib, t->capture_buffer_kib / 256,
		        (unsigned long long)(t->capture_buffer_kib / 256) * t->capture_block_ms, t->capture_block_ms);
	if (!t->xml[0]) {
		fprintf(out, "    no XML: raw telegrams only\n");
		return 0;
	}
	if (pl_trdp_load(cfg, b->index, &tc, msg, sizeof(msg)) < 0) {
		fprintf(err, "railmon check: %s\n", msg);
		return -EINVAL;
	}
	check_trdp_plan(out, t, tc);
	trdp_config_free(tc);
	return 0;
}

bool cli_bus_load_warning(const struct conf_board *cfg, size_t b, const dbc_t *dbc, char *buf, size_t len)
{
	const struct bus_cfg *bc = &cfg->buses[b];
	struct bus_mb_regmap *map;
	struct bus_can_load cl;
	struct bus_mb_load ml;
	bool over = false;

	if (bc->kind == BUS_KIND_CAN && dbc && bus_can_load(&bc->can, dbc, &cl) == 0 && cl.load > BUS_LOAD_WARN) {
		snprintf(buf, len, "[can %s]: about %.0f%% of the bus at %.0f kbit/s (%s)", bc->name, cl.load * 100,
		         cl.bitrate / 1000, can_busy);
		return true;
	}
	if (bc->kind != BUS_KIND_MODBUS || !bc->mb.rtu ||
	    bus_mb_regmap_new(bc->mb.channels, bc->mb.nchannels, bc->mb.max_gap, &map) < 0)
		return false;
	if (bus_mb_load(&bc->mb, map, &ml) == 0 && ml.line_load > BUS_LOAD_WARN) {
		snprintf(buf, len, "[modbus %s]: %.1f%% of the line at %u baud (%s)", bc->name, ml.line_load * 100,
		         bc->mb.baud, line_busy);
		over = true;
	}
	bus_mb_regmap_free(map);
	return over;
}

static const char *reduce_text(const struct upl_policy *p, char *buf, size_t len)
{
	struct conf_uplink_policy c = { p->flags, p->deadband, (uint64_t)(p->every_ns / 1000000) };

	return conf_uplink_policy_text(&c, buf, len);
}

/* [sparkplug]: where the edge node publishes, and which buses are its devices. */
static void check_sparkplug(FILE *out, const struct conf_board *cfg)
{
	const struct conf_sparkplug *sp = &cfg->sparkplug;

	if (!sp->mqtt.enabled)
		return;
	fprintf(out, "  sparkplug %s://%s:%u%s: spBv1.0/%s/NBIRTH/%s, devices", sp->mqtt.tls ? "mqtts" : "mqtt",
	        sp->mqtt.host, sp->mqtt.port, sp->mqtt.tls_insecure ? " (TLS VERIFICATION DISABLED)" : "",
	        sp->group_id, sp->edge_node);
	if (!sp->ndevices)
		for (size_t i = 0; i < cfg->nbuses; i++)
			fprintf(out, " %s", cfg->buses[i].name);
	for (size_t i = 0; i < sp->ndevices; i++)
		fprintf(out, " %s", sp->devices[i]);
	if (!cfg->nbuses)
		fprintf(out, " none");
	if (sp->primary_host[0])
		fprintf(out, ", publishing while spBv1.0/STATE/%s is online", sp->primary_host);
	fprintf(out, "\n");
}

/*
 * The uplink's reduction, when the board has one: each bus's default and
 * raw frames, then every channel with what the uplink sends of it (its
 * own policy marked with its line).  Nothing for a board that sends
 * everything, so its output is as before reduction existed.
 */
static int check_uplink_reduce(FILE *out, FILE *err, const struct conf_board *cfg)
{
	const struct pl_channel *list;
	struct upl_reduce_cfg rc;
	char msg[CONF_ERR_MAX], a[96];
	pl_channels_t *ch = NULL;
	size_t n;
	int r;

	if (!pl_uplink_reduces(cfg))
		return 0; /* nothing loaded, nothing said: check as before */
	r = pl_channels_new(cfg, &ch, msg, sizeof(msg));
	if (r == 0)
		r = pl_uplink_reduce(cfg, ch, &rc, msg, sizeof(msg));
	if (r < 0) {
		fprintf(err, "railmon check: %s\n", msg);
		pl_channels_free(ch);
		return r;
	}
	if (r == 0) {
		pl_channels_free(ch);
		return 0;
	}
	fprintf(out, "  uplink reduced (the log keeps every record; events and Health always sent):\n");
	for (size_t b = 0; b < cfg->nbuses && b < UPL_REDUCE_BUSES; b++) {
		const struct conf_uplink_frames *f = &cfg->bus_frames[b];

		fprintf(out, "    [%s] channels %s", cfg->buses[b].name, reduce_text(&rc.bus_default[b], a, sizeof(a)));
		if (cfg->buses[b].kind == BUS_KIND_CAN) {
			fprintf(out, ", frames %s", f->none ? "none" : f->nranges ? "ids" : "all");
			for (size_t i = 0; i < f->nranges; i++)
				fprintf(out, f->ranges[i].lo == f->ranges[i].hi ? " 0x%" PRIX32 : " 0x%" PRIX32 "-0x%" PRIX32,
				        f->ranges[i].lo, f->ranges[i].hi);
		}
		fputc('\n', out);
	}
	n = pl_channels_list(ch, &list);
	for (size_t i = 0; i < n; i++) {
		int line = 0;

		for (size_t k = 0; k < cfg->npolicies && !line; k++) {
			size_t j;

			if (pl_channels_find(ch, cfg->policies[k].channel, &j, NULL, 0) == 0 && j == i)
				line = cfg->policies[k].line;
		}
		fprintf(out, "    %-32s %s", list[i].name, reduce_text(&rc.chans[i].pol, a, sizeof(a)));
		if (line)
			fprintf(out, " (line %d)", line);
		fputc('\n', out);
	}
	pl_uplink_reduce_free(&rc);
	pl_channels_free(ch);
	return 0;
}

static int check_board(FILE *out, FILE *err, const struct conf_board *cfg, const char *data,
                       const struct cli_check_key *key)
{
	char note[1024], msg[CONF_ERR_MAX];
	int r, bad = 0;

	fprintf(out, "%s: vehicle %s, config hash %016" PRIx64 "\n", cfg->path, cfg->vehicle, cfg->hash);
	fprintf(out, "  log %s, segments %" PRIu64 " KiB, sync window %u ms, batches every %u ms\n",
	        pl_data_dir(cfg, data), cfg->storage.segment_bytes >> 10,
	        cfg->storage.sync_window_ms, cfg->batch_ms);
	bad |= check_storage(out, err, cfg, data) < 0;
	bad |= check_evidence(out, err, cfg, key) < 0;
	check_realtime(out, cfg);
	/* triggers, required channels, retention_min_age (pipeline/window.h) */
	if ((r = pl_recorder_check(cfg, pl_data_dir(cfg, data), note, sizeof(note), msg, sizeof(msg))) < 0)
		fprintf(err, "railmon check: %s\n", msg);
	else if (note[0])
		fprintf(out, "  %s\n", note);
	bad |= r < 0;
	if (cfg->uplink.enabled)
		fprintf(out, "  uplink %s://%s:%u%s\n", cfg->uplink.tls ? "mqtts" : "mqtt", cfg->uplink.host,
		        cfg->uplink.port, cfg->uplink.tls_insecure ? " (TLS VERIFICATION DISABLED)" : "");
	bad |= check_config_pubkey(out, err, cfg) < 0;
	bad |= check_uplink_reduce(out, err, cfg) < 0;
	check_sparkplug(out, cfg);
	for (size_t i = 0; i < cfg->nbuses; i++) {
		if (cfg->buses[i].kind == BUS_KIND_CAN)
			bad |= check_can(out, err, cfg, &cfg->buses[i]) < 0;
		else if (cfg->buses[i].kind == BUS_KIND_TRDP)
			bad |= check_trdp(out, err, cfg, &cfg->buses[i]) < 0;
		else
			bad |= check_modbus(out, err, &cfg->buses[i]) < 0;
	}
	if (bad)
		return 1;
	fprintf(out, "ok\n");
	return 0;
}

/* Each error line once, in order: one fault (a missing DBC) reaches check
   through the recorder's channels, the uplink's and the bus's own plan,
   and three copies of one line read as three faults. */
static void check_say_once(FILE *err, const char *text, size_t len)
{
	const char *end = text + len;

	for (const char *line = text, *eol; line < end; line = eol + 1) {
		size_t n;
		bool seen = false;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol)
			eol = end;
		n = (size_t)(eol - line);
		for (const char *p = text, *pe; p < line && !seen; p = pe + 1) {
			pe = memchr(p, '\n', (size_t)(line - p));
			seen = pe && (size_t)(pe - p) == n && !memcmp(p, line, n);
		}
		if (!seen)
			fprintf(err, "%.*s\n", (int)n, line);
	}
}

int cli_check_board(FILE *out, FILE *err, const struct conf_board *cfg, const char *data,
                    const struct cli_check_key *key)
{
	char *text = NULL;
	size_t len = 0;
	FILE *e = open_memstream(&text, &len);
	int r;

	if (!e) /* no memory for the copy: the errors as they come */
		return check_board(out, err, cfg, data, key);
	r = check_board(out, e, cfg, data, key);
	if (fclose(e) == 0)
		check_say_once(err, text, len);
	free(text);
	return r;
}
