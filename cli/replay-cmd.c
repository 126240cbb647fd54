/* SPDX-License-Identifier: MIT */
/*
 * replay-cmd.c - `railmon replay`: a trace (candump, Vector ASC/BLF, PEAK TRC:
 * trace/trace.h) or a railmon log through the
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
#include "conf/config-types.h"
#include "conf/replay.h"
#include "pipeline/daemon.h"
#include "pipeline/logdir.h"
#include "report/logfault.h"
#include "cli/progress.h"
#include "cli/replay-trace.h"
#include "bus/to-can.h"
#include "trace/trace.h"
#include "storage/stor.h"

static const char replay_usage[] =
	"Usage: railmon replay SOURCE --board FILE [OPTIONS]\n"
	"       railmon replay TRACE --dbc FILE [--data DIR] [OPTIONS]\n"
	"Feed recorded data through the same decode and store path as live data.\n"
	"SOURCE is a trace (a candump log, Vector ASC or BLF, PEAK TRC 1.0 to 2.1,\n"
	"told apart by content; a text one may be gzip-compressed, .asc.gz) or a\n"
	"railmon log directory, or a packet capture (pcap, pcapng) replayed as TRDP\n"
	"telegrams: into the board's [trdp] bus, or without --board one TRDP bus on\n"
	"the standard ports (raw telegrams).\n"
	"Before it starts, replay says the trace's frames on each channel and which\n"
	"bus reads which; frames no bus reads are said, and a replay that would\n"
	"store none of them is refused.\n"
	"A trace: with one CAN bus in the board file it takes every frame (unless\n"
	"its 'channel =' names one); with several, each bus the frames of the trace\n"
	"interface named like its 'interface =' (candump) or of its 'channel =' (ASC,\n"
	"BLF, TRC; by default the n-th CAN bus takes channel n).  What in a trace is\n"
	"damaged is said (file:line or offset) and skipped.  A log: its raw CAN\n"
	"frames are decoded again with the board's DBC files, its Modbus samples and\n"
	"events are kept, by bus index.\n\n"
	"  -b, --board FILE   board file (DBC files, vehicle id)\n"
	"  -D, --dbc FILE     no board file: one CAN bus decoded with FILE (a trace); it\n"
	"                     reads the trace's one channel, or --channel N of several\n"
	"      --channel N    with --dbc (or a board of one CAN bus): only channel N of\n"
	"                     an ASC, BLF or TRC trace\n"
	"      --vehicle ID   with --dbc, or a capture without --board: the vehicle id\n"
	"                     the log carries (default replay)\n"
	"  -d, --data DIR     log directory (overrides [storage] dir; with --dbc the\n"
	"                     default is ./railmon-data)\n"
	"      --append       add to the log already in DIR (refused without it: the\n"
	"                     same trace twice doubles the data)\n"
	"  -s, --speed X      pace at X times real time (default 0: as fast as possible)\n"
	"      --to-can IFACE send the trace's frames onto a SocketCAN interface instead\n"
	"                     (no --board needed); only virtual interfaces (vcan, vxcan)\n"
	"      --force        allow --to-can onto a physical CAN interface: railmon then\n"
	"                     TRANSMITS on that bus\n"
	"  -q, --quiet        no progress line (shown on a terminal: a trace's frames\n"
	"                     read of its total, a log's records stored)\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon replay trace.asc --dbc train.dbc --data replayed\n"
	"  railmon replay railmon-data --board board.ini --data redecoded\n";

/* Send every frame of a trace onto a CAN interface, paced like the trace
   (or as fast as the interface takes them); the loop is bus/to-can.h's. */
static int replay_to_can(const char *trace, const char *ifname, double speed, bool force)
{
	struct bus_cfg in, out;
	bus_dev_t *src = NULL, *dst = NULL;
	uint64_t sent = 0;
	int virt = bus_can_iface_virtual(ifname), r;

	if (virt < 0)
		return cli_fail("replay", "--to-can %s: %s", ifname,
		                virt == -ENOTTY ? "not a CAN interface" : "no such interface");
	if (!virt && !force)
		return cli_fail("replay", "--to-can %s: a physical CAN interface: railmon would transmit on a real "
		                "bus; refused without --force", ifname);
	bus_to_can_cfgs(trace, ifname, speed, &in, &out);
	if ((r = bus_dev_new(&in, &src)) < 0 || (r = bus_dev_new(&out, &dst)) < 0) {
		fprintf(stderr, "railmon replay: %s: %s\n", src ? ifname : trace, strerror(-r));
		bus_dev_free(src);
		return 1;
	}
	cli_install_signals();
	r = bus_can_forward(src, dst, &cli_stop_requested, &sent);
	bus_dev_free(src);
	bus_dev_free(dst);
	if (r < 0) {
		fprintf(stderr, "railmon replay: %s: %s after %" PRIu64 " frames\n", ifname, strerror(-r), sent);
		return 1;
	}
	fprintf(stderr, "railmon replay: %" PRIu64 " frames sent on %s\n", sent, ifname);
	return 0;
}

/* --dbc: the board file a one-bus trace replay would have.  0 or the
   exit code. */
static int dbc_board(const char *trace, const char *dbc, const char *vehicle, struct conf_board **ret_cfg)
{
	char err[CONF_ERR_MAX + PATH_MAX];
	int r = conf_replay_dbc(trace, dbc, vehicle, ret_cfg, err, sizeof(err));

	if (r == -EBADMSG) {
		fprintf(stderr, "railmon replay: %s\n", err);
		return 1;
	}
	return r < 0 ? cli_fail("replay", "%s", err) : 0;
}

/* A capture without --board: one TRDP bus.  0 or the exit code. */
static int capture_board(const char *capture, const char *vehicle, struct conf_board **ret_cfg)
{
	char err[CONF_ERR_MAX + PATH_MAX];
	int r = conf_replay_capture_board(capture, vehicle, ret_cfg, err, sizeof(err));

	return r < 0 ? cli_fail("replay", "%s", err) : 0;
}

/* What the command line asked for. */
struct replay_args {
	const char *board, *data, *trace, *to_can, *dbc, *vehicle;
	bool force, append, quiet, capture;
	uint32_t channel;
	double speed;
};

/* The options into a: -1 to go on, else the exit status (--help, a usage
   error). */
static int replay_parse(int argc, char **argv, struct replay_args *a)
{
	static const struct option lopts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "speed", required_argument, NULL, 's' }, { "to-can", required_argument, NULL, 1 },
		{ "force", no_argument, NULL, 2 }, { "dbc", required_argument, NULL, 'D' },
		{ "vehicle", required_argument, NULL, 3 }, { "append", no_argument, NULL, 4 },
		{ "channel", required_argument, NULL, 5 }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "b:d:s:D:qh", lopts, NULL)) != -1) {
		switch (c) {
		case 'b': a->board = optarg; break;
		case 'D': a->dbc = optarg; break;
		case 3: a->vehicle = optarg; break;
		case 4: a->append = true; break;
		case 'q': a->quiet = true; break;
		case 5: {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || v < 1 || v > 255)
				return cli_fail("replay", "--channel: expected 1 to 255, not '%s'", optarg);
			a->channel = (uint32_t)v;
			break;
		}
		case 'd': a->data = optarg; break;
		case 's':
			if (!cli_parse_seconds(optarg, &a->speed) || a->speed > 1000)
				return cli_fail("replay", "--speed: expected 0 to 1000, not '%s'", optarg);
			break;
		case 1: a->to_can = optarg; break;
		case 2: a->force = true; break;
		case 'h': fputs(replay_usage, stdout); return 0;
		default: return cli_see_help("replay");
		}
	}
	if (optind != argc - 1)
		return cli_fail("replay", "expected one SOURCE (see --help)");
	a->trace = argv[optind];
	return -1;
}

/* A log replay's unreadable parts, said the way export and stat say them
   (called on the replay thread; only cli/ prints). */
static bool replay_reader_fault(void *ctx, const char *dir, const stor_reader_t *rd)
{
	return rpt_log_fault_print(stderr, "replay", dir, rd);
}

static void replay_undecodable(void *ctx, const char *dir, const struct stor_rec *rec, int err)
{
	rpt_log_undecodable_print(stderr, "replay", dir, rec, err);
}

static bool replay_tail(void *ctx, const char *dir, stor_reader_t *rd)
{
	return rpt_log_tail_print(stderr, "replay", dir, rd);
}

/* The daemon's options for the source: a log directory is read by the log
   source, never into itself; a data directory already holding a log is
   added to only with --append.  -1 to go on, else the exit status (cfg
   is then freed). */
static int replay_target(const struct replay_args *a, const struct stat *sb, struct conf_board *cfg,
                         struct pl_daemon_opts *opts, struct cli_trace_info *info)
{
	const char *out = pl_data_dir(cfg, a->data);

	opts->data_dir = a->data;
	if (S_ISDIR(sb->st_mode)) {
		struct stat db;
		/* The reader would meet the records this replay writes and send
		   them through again. */
		if (stat(out, &db) == 0 && db.st_dev == sb->st_dev && db.st_ino == sb->st_ino) {
			conf_free(cfg);
			return cli_fail("replay", "%s is the log being replayed: give another --data DIR", a->trace);
		}
		opts->replay_log = a->trace;
		opts->replay_speed = a->speed;
		opts->replay_faults = (struct pl_logsource_faults){ .reader = replay_reader_fault,
		                                                    .undecodable = replay_undecodable,
		                                                    .tail = replay_tail };
	}
	if (!a->append && stor_dir_holds_log(out)) {
		fprintf(stderr, "railmon replay: %s holds a log already: replaying into it adds to it (the same "
		        "trace twice doubles the data); give another --data DIR, or --append to add\n", out);
		conf_free(cfg);
		return 1;
	}
	if (a->capture) {
		size_t n = conf_replay_capture(cfg, a->trace, a->speed);
		if (n == 0) {
			conf_free(cfg);
			return cli_fail("replay", "%s has no [trdp] bus to replay the capture into",
			                a->board ? a->board : "the default board");
		}
		int r = cli_capture_survey(stderr, a->trace, info, cfg);

		if (r < 0 && n > 1)
			r = cli_capture_split(stderr, a->trace, cfg);
		if (r >= 0) {
			conf_free(cfg);
			return r;
		}
	} else if (!S_ISDIR(sb->st_mode)) {
		conf_replay_trace(cfg, a->trace, a->speed);
		if (!cfg->nbuses) {
			conf_free(cfg);
			return cli_fail("replay", "%s has no [can] bus to replay the trace into", a->board);
		}
	}
	return -1;
}

/* The channel of a --dbc (or --channel) replay, then which bus reads
   which.  -1 to go on, else the exit status. */
static int replay_channels(const struct replay_args *a, const struct cli_trace_info *info, struct conf_board *cfg)
{
	int r;

	if (a->channel && !a->dbc && cfg->nbuses != 1)
		return cli_fail("replay", "--channel: %s has %zu CAN buses; each takes its channel from its "
		                "'channel =' (or the n-th channel n)", a->board, cfg->nbuses);
	if ((a->dbc || a->channel) && (r = cli_trace_pick_channel(stderr, info, cfg, a->channel)) >= 0)
		return r;
	return cli_trace_plan(stderr, info, cfg);
}

int cli_cmd_replay(int argc, char **argv)
{
	struct replay_args a = { .vehicle = "replay" };
	struct pl_daemon_opts opts = { 0 };
	static struct cli_trace_info info; /* 2 KiB of counts: off the stack */
	struct conf_board *cfg;
	struct stat sb;
	int r;

	r = replay_parse(argc, argv, &a);
	if (r >= 0)
		return r;
	if (stat(a.trace, &sb) < 0)
		return cli_fail("replay", "%s: %s", a.trace, strerror(errno));
	if (!S_ISDIR(sb.st_mode) && (r = cli_trace_check_info(stderr, a.trace, !a.to_can, &info)) >= 0)
		return r;
	a.capture = !S_ISDIR(sb.st_mode) && (info.fmt == TRACE_PCAP || info.fmt == TRACE_PCAPNG);
	if (a.capture && (a.dbc || a.channel))
		return cli_fail("replay", "%s: a packet capture holds TRDP telegrams: no --dbc, no --channel (a "
		                "--board's [trdp] bus decodes them with its XML)", a.trace);
	if (a.channel && (a.to_can || S_ISDIR(sb.st_mode)))
		return cli_fail("replay", "--channel chooses a channel of a trace replayed into a log");
	if (a.to_can) {
		if (S_ISDIR(sb.st_mode))
			return cli_fail("replay", "--to-can takes a candump trace, not a log directory");
		return replay_to_can(a.trace, a.to_can, a.speed, a.force);
	}
	if (a.board && a.dbc)
		return cli_fail("replay", "--board or --dbc, not both (a board file names its DBC files)");
	if (a.dbc && S_ISDIR(sb.st_mode))
		return cli_fail("replay", "--dbc replays a candump trace; a log directory needs its --board");
	if (!a.board && !a.dbc && !a.capture)
		return cli_fail("replay", "--board FILE or --dbc FILE is required");
	if (a.capture && !a.board)
		r = capture_board(a.trace, a.vehicle, &cfg);
	else
		r = a.dbc ? dbc_board(a.trace, a.dbc, a.vehicle, &cfg) : cli_load_board("replay", a.board, &cfg);
	if (r != 0)
		return r;
	r = replay_target(&a, &sb, cfg, &opts, &info);
	if (r >= 0)
		return r;
	if (!S_ISDIR(sb.st_mode) && !a.capture && (r = replay_channels(&a, &info, cfg)) >= 0) {
		conf_free(cfg);
		return r;
	}
	{
		struct cli_progress pg;

		cli_progress_init(&pg, stderr, "replay", S_ISDIR(sb.st_mode) ? CLI_PROGRESS_RECORDS : CLI_PROGRESS_FRAMES,
		                  a.quiet);
		r = cli_run_daemon_progress("replay", cfg, &opts, 0, true, &pg,
		                            S_ISDIR(sb.st_mode) || a.capture ? 0 : cli_trace_frames_read(&info, cfg));
	}
	conf_free(cfg);
	return S_ISDIR(sb.st_mode) ? r : cli_trace_verdict(stderr, a.trace, &info, r);
}
