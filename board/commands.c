/* SPDX-License-Identifier: MIT */
/* commands.c - demo, run, check and replay: option parsing and reporting. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "bus/dbc.h"
#include "bus/regmap.h"
#include "cli.h"
#include "config.h"
#include "railmon-config.h"
#include "daemon.h"
#include "demo.h"
#include "logdir.h"
#include "storage/stor.h"

int cli_fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "railmon %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

bool cli_parse_seconds(const char *s, double *ret)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || v < 0)
		return false;
	*ret = v;
	return true;
}

/* ------------------------------------------------------------------ demo */

static const char demo_usage[] =
	"Usage: railmon demo [OPTIONS]\n"
	"A simulated train on this machine: a Modbus TCP traction converter, HVAC and\n"
	"door controller on loopback, and the vehicle CAN bus replayed from a candump\n"
	"trace, acquired, decoded, logged and shown live.\n\n"
	"  -t, --duration S   stop after S seconds (default: until Ctrl-C)\n"
	"  -d, --data DIR     log directory (default: a new directory under /tmp)\n"
	"  -b, --board FILE   demo board file (default: board/demo.ini of the source tree)\n"
	"      --no-live      print the table only at the end\n"
	"  -h, --help         this text\n";

int board_cmd_demo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "duration", required_argument, NULL, 't' }, { "data", required_argument, NULL, 'd' },
		{ "board", required_argument, NULL, 'b' }, { "no-live", no_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct demo_opts o = { .board = RAILMON_SOURCE_DIR "/board/demo.ini", .live = true };
	char tmpl[] = "/tmp/railmon-demo.XXXXXX";
	int c;

	while ((c = getopt_long(argc, argv, "t:d:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!cli_parse_seconds(optarg, &o.duration_s))
				return cli_fail("demo", "--duration: expected seconds, not '%s'", optarg);
			break;
		case 'd': o.data_dir = optarg; break;
		case 'b': o.board = optarg; break;
		case 1: o.live = false; break;
		case 'h': fputs(demo_usage, stdout); return 0;
		default: fputs(demo_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("demo", "unexpected argument '%s'", argv[optind]);
	if (!o.data_dir) {
		if (!mkdtemp(tmpl))
			return cli_fail("demo", "mkdtemp: %s", strerror(errno));
		o.data_dir = tmpl;
	}
	o.ansi = o.live && isatty(STDOUT_FILENO);
	board_install_signals();
	return board_demo_run(&o, &board_stop_requested) < 0 ? 1 : 0;
}

/* ------------------------------------------------------------------- run */

static const char run_usage[] =
	"Usage: railmon run --board FILE [OPTIONS]\n"
	"Acquire every bus of the board file, log to flash, until SIGTERM or SIGINT.\n\n"
	"  -b, --board FILE   board file (required)\n"
	"  -d, --data DIR     log directory (overrides [storage] dir)\n"
	"  -t, --duration S   stop after S seconds\n"
	"  -h, --help         this text\n";

static int load_board(const char *cmd, const char *path, struct board_cfg **ret)
{
	char err[BOARD_ERR_MAX];

	if (!path)
		return cli_fail(cmd, "--board FILE is required");
	if (board_cfg_load(path, ret, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon %s: %s\n", cmd, err);
		return 1;
	}
	return 0;
}

int board_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL;
	struct board_cfg *cfg;
	double duration = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "b:d:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 't':
			if (!cli_parse_seconds(optarg, &duration))
				return cli_fail("run", "--duration: expected seconds, not '%s'", optarg);
			break;
		case 'h': fputs(run_usage, stdout); return 0;
		default: fputs(run_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("run", "unexpected argument '%s'", argv[optind]);
	if ((r = load_board("run", board, &cfg)) != 0)
		return r;
	r = board_run_daemon("run", cfg, &(struct board_daemon_opts){ .data_dir = data, .lock_memory = true },
	                     duration, false);
	board_cfg_free(cfg);
	return r;
}

/* ----------------------------------------------------------------- check */

static const char check_usage[] =
	"Usage: railmon check --board FILE [--data DIR]\n"
	"Validate a board file and the DBC files it names; print the acquisition plan.\n"
	"The log's segment_size and retention_size are checked against the filesystem\n"
	"holding the log directory (--data DIR, else [storage] dir), as `run` does.\n";

/* The log's sizes against its filesystem: refused as `run` would refuse. */
static int check_storage(const struct board_cfg *cfg, const char *data)
{
	const char *dir = board_data_dir(cfg, data);
	char err[BOARD_ERR_MAX], warn[512];
	struct stor_space sp;
	char fs[32], avail[32];

	if (board_log_check_space(cfg, dir, err, sizeof(err), warn, sizeof(warn)) < 0) {
		fprintf(stderr, "railmon check: %s\n", err);
		return -EINVAL;
	}
	if (stor_space_query(dir, &sp) == 0)
		printf("  log filesystem: %s, %s free for the log\n", board_size_text(sp.fs_bytes, fs, sizeof(fs)),
		       board_size_text(sp.free_bytes + sp.log_bytes, avail, sizeof(avail)));
	if (warn[0])
		printf("  WARNING: %s\n", warn);
	return 0;
}

static const char *const can_drivers[] = { "socketcan", "slcan", "trace" };

/*
 * Bus load from the DBC's cycle times.  A classic frame is 44 + 8 * len bits
 * with a standard id, 64 + 8 * len extended (CRC, ACK, EOF, IFS included);
 * an FD frame spends 29 / 49 bits at the nominal rate and its data and CRC
 * (8 * len + 22, or + 26 past 16 bytes) at dbitrate.  Plus about 20% stuff
 * bits.  Filters do not count: the load is the bus's, not what passes them.
 */
static void check_can_load(const struct bus_can_cfg *c, const bus_dbc_t *dbc)
{
	double bitrate = c->bitrate ? c->bitrate : 500000, dbitrate = c->dbitrate ? c->dbitrate : bitrate;
	double fps = 0, seconds = 0;
	unsigned with = 0, n = bus_dbc_message_count(dbc);

	for (unsigned i = 0; i < n; i++) {
		struct bus_dbc_message_info m;
		double t;
		if (bus_dbc_message_info(dbc, i, &m) < 0 || !m.cycle_ms)
			continue;
		with++;
		if (m.dlc <= 8)
			t = ((m.ext ? 64 : 44) + 8.0 * m.dlc) / bitrate;
		else
			t = (m.ext ? 49 : 29) / bitrate + (8.0 * m.dlc + (m.dlc > 16 ? 26 : 22)) / dbitrate;
		fps += 1000.0 / m.cycle_ms;
		seconds += 1000.0 / m.cycle_ms * 1.2 * t;
	}
	if (!with) {
		printf("    no GenMsgCycleTime in the DBC: bus load not estimated\n");
		return;
	}
	printf("    %u of %u messages cyclic: %.0f frames/s, about %.0f%% of the bus at %.0f kbit/s%s\n", with, n, fps,
	       seconds * 100, bitrate / 1000, seconds > 0.7 ? " (above 70%: frames will queue)" : "");
}

static int check_can(const struct board_cfg *cfg, const struct bus_cfg *b)
{
	const struct bus_can_cfg *c = &b->can;
	char err[BOARD_ERR_MAX];
	bus_dbc_t *dbc;

	printf("  [can %s] driver %s, %s%s, %s", b->name, can_drivers[c->driver],
	       c->driver == BUS_CAN_SOCKETCAN ? c->ifname : c->device,
	       c->fd ? ", CAN FD" : "", c->listen_only ? "listen-only" : "NORMAL MODE (may transmit)");
	if (c->bitrate)
		printf(", %u bit/s", c->bitrate);
	if (c->nfilters)
		printf(", %u filters", c->nfilters);
	putchar('\n');
	if (!c->dbc[0]) {
		printf("    no DBC: raw frames only\n");
		return 0;
	}
	if (board_dbc_load(cfg, b->index, &dbc, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon check: %s\n", err);
		return -EINVAL;
	}
	printf("    DBC %s: %u messages, %u signals\n", c->dbc, bus_dbc_message_count(dbc), bus_dbc_signal_count(dbc));
	check_can_load(c, dbc);
	bus_dbc_free(dbc);
	return 0;
}

/* The request plan the driver will poll (bus/regmap.c merges neighbours),
   and what it costs on the wire. */
static int check_modbus(const struct bus_cfg *b)
{
	const struct bus_mb_cfg *m = &b->mb;
	struct bus_mb_regmap *map;
	double req_s = 0, bytes_s = 0;
	int r;

	if (m->rtu)
		printf("  [modbus %s] RTU %s %u %u%c%u%s, timeout %u ms\n", b->name, m->device, m->baud, m->data_bits,
		       m->parity, m->stop_bits, m->rs485 ? " RS-485" : "", m->response_timeout_ms);
	else
		printf("  [modbus %s] TCP %s:%u, timeout %u ms\n", b->name, m->host, m->port, m->response_timeout_ms);
	for (size_t i = 0; i < m->nchannels; i++) {
		const struct bus_mb_channel *c = &m->channels[i];
		printf("    %-24s unit %3u %-8s %5u %-3s %s scale %g offset %g %-6s every %u ms\n", c->name, c->unit_id,
		       board_mb_table_name(c->table), c->addr, board_mb_type_name(c->type),
		       board_mb_order_name(c->order), c->scale, c->offset,
		       c->unit, c->period_ms);
	}
	r = bus_mb_regmap_new(m->channels, m->nchannels, m->max_gap, &map);
	if (r < 0) {
		fprintf(stderr, "railmon check: [modbus %s]: cannot plan requests: %s\n", b->name, strerror(-r));
		return r;
	}
	for (size_t g = 0; g < map->ngroups; g++) {
		const struct bus_mb_group *gr = &map->groups[g];
		for (size_t k = gr->first_req; k < gr->first_req + gr->nreqs; k++) {
			const struct bus_mb_request *q = &map->reqs[k];
			bool bits = q->table == BUS_MB_COIL || q->table == BUS_MB_DISCRETE;
			/* request and response ADU sizes: MBAP 7 + PDU for TCP,
			   unit + PDU + CRC for RTU */
			double data = bits ? (q->count + 7) / 8 : 2.0 * q->count;
			double adu = m->rtu ? (1 + 5 + 2) + (1 + 2 + data + 2) : (7 + 5) + (7 + 2 + data);
			printf("    request: unit %u FC%u %s %u..%u (%u channels) every %u ms\n", q->unit_id, q->table,
			       board_mb_table_name(q->table), q->addr, q->addr + q->count - 1, q->nslots, gr->period_ms);
			req_s += 1000.0 / gr->period_ms;
			bytes_s += adu * 1000.0 / gr->period_ms;
		}
	}
	printf("    %zu channels in %zu requests: %.1f requests/s, %.0f bytes/s", m->nchannels, map->nreqs, req_s,
	       bytes_s);
	if (m->rtu) {
		/* bits per character: start + data + parity + stop, plus the
		   3.5-character silence around every frame */
		double bits = 1 + m->data_bits + (m->parity != 'N') + m->stop_bits;
		double load = (bytes_s + 2 * req_s * 3.5) * bits / m->baud * 100;
		printf(", %.1f%% of the line at %u baud%s", load, m->baud, load > 70 ? " (TOO BUSY: lengthen periods)" : "");
	}
	putchar('\n');
	bus_mb_regmap_free(map);
	return 0;
}

int board_cmd_check(int argc, char **argv)
{
	static const struct option opts[] = { { "board", required_argument, NULL, 'b' },
		                              { "data", required_argument, NULL, 'd' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	const char *board = NULL, *data = NULL;
	struct board_cfg *cfg;
	int c, r, bad = 0;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 'h': fputs(check_usage, stdout); return 0;
		default: fputs(check_usage, stderr); return 2;
		}
	}
	if (!board && optind < argc)
		board = argv[optind++];
	if ((r = load_board("check", board, &cfg)) != 0)
		return r;
	printf("%s: vehicle %s, config hash %016" PRIx64 "\n", cfg->path, cfg->vehicle, cfg->hash);
	printf("  log %s, segments %" PRIu64 " KiB, sync window %u ms, batches every %u ms\n",
	       board_data_dir(cfg, data), cfg->storage.segment_bytes >> 10,
	       cfg->storage.sync_window_ms, cfg->batch_ms);
	bad |= check_storage(cfg, data) < 0;
	if (cfg->uplink.enabled)
		printf("  uplink %s://%s:%u%s\n", cfg->uplink.tls ? "mqtts" : "mqtt", cfg->uplink.host, cfg->uplink.port,
		       cfg->uplink.tls_insecure ? " (TLS VERIFICATION DISABLED)" : "");
	for (size_t i = 0; i < cfg->nbuses; i++) {
		if (cfg->buses[i].kind == BUS_KIND_CAN)
			bad |= check_can(cfg, &cfg->buses[i]) < 0;
		else
			bad |= check_modbus(&cfg->buses[i]) < 0;
	}
	board_cfg_free(cfg);
	if (bad)
		return 1;
	printf("ok\n");
	return 0;
}

/* ---------------------------------------------------------------- replay */

static const char replay_usage[] =
	"Usage: railmon replay SOURCE --board FILE [OPTIONS]\n"
	"Feed recorded data through the same decode and store path as live data.\n"
	"SOURCE is a candump trace or a railmon log directory.\n"
	"A trace: with one CAN bus in the board file it takes every frame; with\n"
	"several, the frames of the trace interface named like each bus's\n"
	"'interface ='.  A log: its raw CAN frames are decoded again with the board's\n"
	"DBC files, its Modbus samples and events are kept, by bus index.\n\n"
	"  -b, --board FILE   board file (DBC files, vehicle id); required\n"
	"  -d, --data DIR     log directory (overrides [storage] dir)\n"
	"  -s, --speed X      pace at X times real time (default 0: as fast as possible)\n"
	"      --to-can IFACE send the trace's frames onto a SocketCAN interface instead\n"
	"                     (no --board needed); only virtual interfaces (vcan, vxcan)\n"
	"      --force        allow --to-can onto a physical CAN interface: railmon then\n"
	"                     TRANSMITS on that bus\n"
	"  -h, --help         this text\n";

/* 1: a virtual CAN interface (vcan, vxcan: under /sys/devices/virtual),
   0: a real CAN device, -ENODEV: no such interface, -ENOTTY: not CAN. */
static int iface_is_virtual(const char *ifname)
{
	char path[128], real[PATH_MAX];
	int type = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/net/%s/type", ifname);
	f = fopen(path, "re");
	if (!f)
		return -ENODEV;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	if (type != 280) /* ARPHRD_CAN */
		return -ENOTTY;
	snprintf(path, sizeof(path), "/sys/class/net/%s", ifname);
	if (!realpath(path, real))
		return -errno;
	return strstr(real, "/devices/virtual/") != NULL;
}

/* Send every frame of a trace onto a CAN interface, paced like the trace
   (or as fast as the interface takes them). */
static int replay_to_can(const char *trace, const char *ifname, double speed, bool force)
{
	struct bus_cfg in = { .kind = BUS_KIND_CAN }, out = { .kind = BUS_KIND_CAN };
	struct acq_item items[64];
	bus_dev_t *src = NULL, *dst = NULL;
	uint64_t sent = 0;
	int virt = iface_is_virtual(ifname), r;

	if (virt < 0)
		return cli_fail("replay", "--to-can %s: %s", ifname,
		                virt == -ENOTTY ? "not a CAN interface" : "no such interface");
	if (!virt && !force)
		return cli_fail("replay", "--to-can %s: a physical CAN interface: railmon would transmit on a real "
		                "bus; refused without --force", ifname);
	in.can.driver = BUS_CAN_TRACE;
	snprintf(in.can.device, sizeof(in.can.device), "%s", trace);
	in.can.trace_speed = speed;
	out.can.driver = BUS_CAN_SOCKETCAN;
	snprintf(out.can.ifname, sizeof(out.can.ifname), "%s", ifname);
	out.can.fd = true;
	out.can.listen_only = false;
	out.can.allow_normal_mode = true; /* checked above: virtual, or forced */
	if ((r = bus_dev_new(&in, &src)) < 0 || (r = bus_dev_new(&out, &dst)) < 0) {
		fprintf(stderr, "railmon replay: %s: %s\n", src ? ifname : trace, strerror(-r));
		bus_dev_free(src);
		return 1;
	}
	board_install_signals();
	for (;;) {
		int n = bus_dev_recv(src, items, 64, 100);
		if (n == -ENODATA || board_stop_requested) {
			r = 0;
			break;
		}
		r = n < 0 ? n : 0;
		for (int i = 0; i < n && r >= 0; i++) {
			if (items[i].kind != ACQ_ITEM_CAN)
				continue;
			/* a full TX queue is back-pressure, not an error */
			while ((r = bus_dev_send(dst, &items[i])) == -ENOBUFS && !board_stop_requested)
				usleep(200);
			if (r >= 0)
				sent++;
		}
		if (r < 0)
			break;
	}
	bus_dev_free(src);
	bus_dev_free(dst);
	if (r < 0) {
		fprintf(stderr, "railmon replay: %s: %s after %" PRIu64 " frames\n", ifname, strerror(-r), sent);
		return 1;
	}
	fprintf(stderr, "railmon replay: %" PRIu64 " frames sent on %s\n", sent, ifname);
	return 0;
}

/* Turn every CAN bus into a trace source reading path; Modbus links have
   nothing to replay from a candump trace and are left out. */
static void replay_config(struct board_cfg *cfg, const char *path, double speed)
{
	size_t ncan = 0, k = 0;

	for (size_t i = 0; i < cfg->nbuses; i++)
		ncan += cfg->buses[i].kind == BUS_KIND_CAN;
	for (size_t i = 0; i < cfg->nbuses; i++) {
		struct bus_cfg b = cfg->buses[i];
		if (b.kind != BUS_KIND_CAN)
			continue;
		b.can.driver = BUS_CAN_TRACE;
		snprintf(b.can.device, sizeof(b.can.device), "%s", path);
		if (ncan == 1)
			b.can.ifname[0] = 0;
		b.can.trace_speed = speed;
		b.can.trace_loop = false;
		b.index = (uint16_t)k;
		cfg->buses[k++] = b;
	}
	cfg->nbuses = k;
}

int board_cmd_replay(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "speed", required_argument, NULL, 's' }, { "to-can", required_argument, NULL, 1 },
		{ "force", no_argument, NULL, 2 }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL, *trace, *to_can = NULL;
	bool force = false;
	struct board_daemon_opts opts = { 0 };
	struct board_cfg *cfg;
	struct stat sb;
	double speed = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "b:d:s:h", lopts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 's':
			if (!cli_parse_seconds(optarg, &speed) || speed > 1000)
				return cli_fail("replay", "--speed: expected 0 to 1000, not '%s'", optarg);
			break;
		case 1: to_can = optarg; break;
		case 2: force = true; break;
		case 'h': fputs(replay_usage, stdout); return 0;
		default: fputs(replay_usage, stderr); return 2;
		}
	}
	if (optind != argc - 1)
		return cli_fail("replay", "expected one SOURCE (see --help)");
	trace = argv[optind];
	if (stat(trace, &sb) < 0)
		return cli_fail("replay", "%s: %s", trace, strerror(errno));
	if (to_can) {
		if (S_ISDIR(sb.st_mode))
			return cli_fail("replay", "--to-can takes a candump trace, not a log directory");
		return replay_to_can(trace, to_can, speed, force);
	}
	if ((r = load_board("replay", board, &cfg)) != 0)
		return r;
	opts.data_dir = data;
	if (S_ISDIR(sb.st_mode)) {
		struct stat db;
		/* The reader would meet the records this replay writes and send
		   them through again. */
		if (stat(board_data_dir(cfg, data), &db) == 0 && db.st_dev == sb.st_dev && db.st_ino == sb.st_ino) {
			board_cfg_free(cfg);
			return cli_fail("replay", "%s is the log being replayed: give another --data DIR", trace);
		}
		opts.replay_log = trace;
		opts.replay_speed = speed;
	} else {
		replay_config(cfg, trace, speed);
		if (!cfg->nbuses) {
			board_cfg_free(cfg);
			return cli_fail("replay", "%s has no [can] bus to replay the trace into", board);
		}
	}
	r = board_run_daemon("replay", cfg, &opts, 0, true);
	board_cfg_free(cfg);
	return r;
}
