/* SPDX-License-Identifier: MIT */
/*
 * replay.c - `railmon replay`: a candump trace or a railmon log through the
 * same decode and store path as live data (a daemon whose buses are trace
 * sources, or whose one source is the log: logsource.h), or a trace onto a
 * CAN interface.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "conf/config.h"
#include "daemon.h"
#include "pipeline/logdir.h"

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
static void replay_config(struct conf_board *cfg, const char *path, double speed)
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
	struct conf_board *cfg;
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
	if ((r = cli_load_board("replay", board, &cfg)) != 0)
		return r;
	opts.data_dir = data;
	if (S_ISDIR(sb.st_mode)) {
		struct stat db;
		/* The reader would meet the records this replay writes and send
		   them through again. */
		if (stat(pl_data_dir(cfg, data), &db) == 0 && db.st_dev == sb.st_dev && db.st_ino == sb.st_ino) {
			conf_free(cfg);
			return cli_fail("replay", "%s is the log being replayed: give another --data DIR", trace);
		}
		opts.replay_log = trace;
		opts.replay_speed = speed;
	} else {
		replay_config(cfg, trace, speed);
		if (!cfg->nbuses) {
			conf_free(cfg);
			return cli_fail("replay", "%s has no [can] bus to replay the trace into", board);
		}
	}
	r = board_run_daemon("replay", cfg, &opts, 0, true);
	conf_free(cfg);
	return r;
}
