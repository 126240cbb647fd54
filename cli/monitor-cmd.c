/* SPDX-License-Identifier: MIT */
/*
 * monitor-cmd.c - `railmon monitor SOURCE --dbc FILE`: the live decoded
 * values of one CAN bus with only a DBC, no board file, no log, no daemon
 * (`cantools monitor`, `candump | cantools decode` are the models).
 * SOURCE is a SocketCAN interface, slcan:TTY[@BAUD] or a trace file
 * (candump log, ASC, BLF, TRC) played at --speed.
 *
 * One job over ~600 lines: one command that is its own small daemon (bus,
 * decode, table in one thread), kept together so that loop reads in one place.
 *
 * What a daemon would do for the bus, done here in one thread: the bus is
 * the board file's bus driver (bus/bus.h, opened from the one-bus board a
 * board file with that [can] section would give, conf_parse), the frames
 * are decoded by the daemon's own channel table (pipeline/channels.h:
 * the same names, sources, labels and J1939 handling as `run` and
 * `watch`), and the values are drawn by watch's table (cli/live-table.h).
 * No ring, no collector thread, no log: nothing is kept but each
 * channel's latest value.
 *
 * On a terminal the table is redrawn in place every --interval with
 * watch's keys; at the end (the end of a trace, --duration, the device
 * gone, q or Ctrl-C) the final table is printed once, without escapes,
 * as it is at once with --once or when stdout is not a terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "bus/bus.h"
#include "bus/can-trace.h"
#include "cli.h"
#include "cli/live-table.h"
#include "cli/watch-screen.h"
#include "conf/config.h"
#include "dbc/dbc.h"
#include "dbc/j1939.h"
#include "pipeline/channels.h"
#include "report/say.h"

static const char monitor_usage[] =
	"Usage: railmon monitor SOURCE --dbc FILE [OPTIONS]\n"
	"The live decoded values of one CAN bus with only a DBC: no board file, no log,\n"
	"no daemon (value, unit, label, age, source; the table `railmon watch` shows).\n\n"
	"SOURCE is one of:\n"
	"  IFACE                 a SocketCAN interface (can0, vcan0), opened listen-only\n"
	"  slcan:TTY[@BAUD]      a serial slcan adapter (slcan:/dev/ttyACM0@115200; BAUD\n"
	"                        is the tty's, default 115200), opened listen-only ('L')\n"
	"  TRACE                 a trace file (candump log, Vector ASC or BLF, PEAK TRC)\n"
	"                        played at --speed\n\n"
	"  -D, --dbc FILE        the CAN database (required)\n"
	"      --bitrate N       set the bus's bit rate first (slcan: 10000 to 1000000, its\n"
	"                        S0-S8; SocketCAN: through the link, as root); default:\n"
	"                        as the adapter or interface is set up\n"
	"      --j1939           a J1939 bus: messages matched by PGN, multi-frame\n"
	"                        messages (BAM, RTS/CTS) reassembled\n"
	"      --speed X         trace: X times real time (default 1); 0 = as fast as it reads\n"
	"      --duration S      stop after S seconds and print the final table\n"
	"      --sort KEY        id (DBC order, default), name, age (freshest first), source\n"
	"      --filter TEXT     only channels whose name, source or unit holds TEXT\n"
	"      --interval S      redraw every S seconds (default 0.5)\n"
	"  -S, --stale S         mark values older than S seconds as stale (default 5)\n"
	"  -1, --once            no live screen: print the table once at the end (the end\n"
	"                        of the trace, --duration, Ctrl-C); also when stdout is\n"
	"                        not a terminal\n"
	"      --no-color        no colours (also with NO_COLOR set)\n"
	"  -h, --help            this text\n\n"
	"The title counts the frames seen, decoded, not in the DBC, and the errors\n"
	"(error frames, damaged trace parts, lost frames).  Marks: '*' changed within\n"
	"the last second (bold), '~' stale (dim), '>' a text cut to fit its column (a\n"
	"name loses its start: '>' leads).  Keys: q quit, s next sort, / filter\n"
	"(Enter: apply, Esc: clear), j/k or arrows scroll, space a page.\n"
	"Exit status: 0; 1 when the device is gone, no signal of the DBC was seen, or a\n"
	"trace had damaged parts; 2 for a usage error.\n"
	"\n"
	"Examples:\n"
	"  railmon monitor can0 --dbc train.dbc\n"
	"  railmon monitor slcan:/dev/ttyACM0@115200 --dbc train.dbc --filter Brake\n"
	"  railmon monitor candump-2026-12-03.log --dbc train.dbc --speed 0 --once\n";

enum monitor_opt {
	OPT_J1939 = 256,
	OPT_SPEED,
	OPT_DURATION,
	OPT_SORT,
	OPT_FILTER,
	OPT_INTERVAL,
	OPT_NO_COLOR,
	OPT_BITRATE,
};

#define MONITOR_ITEMS 256 /* items read from the bus at once */

struct monitor {
	const char *source, *dbc;
	unsigned long bitrate;       /* 0: leave it */
	bool j1939, once, speed_given;
	double speed, duration_s, interval_s;
	struct cli_live_view view;
	struct cli_live_keys keys;
	struct conf_board *cfg;
	pl_channels_t *ch;
	bus_dev_t *dev;
	const struct pl_channel *list;
	size_t nch;
	struct cli_live_row *rows;
	cli_livetable_t *table;
	struct acq_item *items, *out;
	size_t outmax;
	uint64_t frames, decoded, unknown, error_frames;
	int64_t last_t_ns;           /* the newest frame's time: "now" of a trace read as fast as it goes */
	int gone;                    /* the device's cause (-errno), 0 while there */
	bool ended;                  /* the end of the trace */
	bool key_seen;               /* a key was read: draw now */
	char title[320];
	struct cli_term term;        /* raw mode, the alternate screen (cli/watch-screen.h) */
};

/* ---------------------------------------------------------------- options */

/* A usage error (a bad option value, a source spelt wrong): its sentence
   and the --help pointer (issue 28), as export says it.  2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rpt_vfail(stderr, "monitor", fmt, ap);
	va_end(ap);
	return cli_see_help("monitor");
}

static int monitor_opts(struct monitor *m, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dbc", required_argument, NULL, 'D' }, { "j1939", no_argument, NULL, OPT_J1939 },
		{ "speed", required_argument, NULL, OPT_SPEED }, { "duration", required_argument, NULL, OPT_DURATION },
		{ "sort", required_argument, NULL, OPT_SORT }, { "filter", required_argument, NULL, OPT_FILTER },
		{ "interval", required_argument, NULL, OPT_INTERVAL }, { "stale", required_argument, NULL, 'S' },
		{ "once", no_argument, NULL, '1' }, { "no-color", no_argument, NULL, OPT_NO_COLOR },
		{ "bitrate", required_argument, NULL, OPT_BITRATE }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "D:S:1h", opts, NULL)) != -1) {
		switch (c) {
		case 'D': m->dbc = optarg; break;
		case OPT_J1939: m->j1939 = true; break;
		case OPT_BITRATE:
			errno = 0;
			m->bitrate = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || m->bitrate < 1000 || m->bitrate > 20000000)
				return usage_error("--bitrate: expected a rate from 1000 to 20000000, not '%s'", optarg);
			break;
		case OPT_SPEED:
			m->speed_given = true;
			errno = 0;
			m->speed = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(m->speed >= 0 && m->speed <= 1000))
				return usage_error("--speed: expected 0 (as fast as it reads) or a factor up to 1000, "
				                "not '%s'", optarg);
			break;
		case OPT_DURATION:
			if (!cli_parse_seconds(optarg, &m->duration_s) || m->duration_s <= 0)
				return usage_error("--duration: expected seconds > 0, not '%s'", optarg);
			break;
		case OPT_SORT:
			if (cli_live_sort_parse(optarg, &m->view.sort) < 0)
				return usage_error("--sort: expected id, name, age or source, not '%s'", optarg);
			break;
		case OPT_FILTER: snprintf(m->view.filter, sizeof(m->view.filter), "%s", optarg); break;
		case OPT_INTERVAL:
			if (!cli_parse_seconds(optarg, &m->interval_s) || m->interval_s < 0.05)
				return usage_error("--interval: expected seconds >= 0.05, not '%s'", optarg);
			break;
		case 'S':
			if (!cli_parse_seconds(optarg, &m->view.stale_s) || m->view.stale_s <= 0)
				return usage_error("--stale: expected seconds > 0, not '%s'", optarg);
			break;
		case '1': m->once = true; break;
		case OPT_NO_COLOR: m->view.color = false; break;
		case 'h': fputs(monitor_usage, stdout); return -1;
		default: return cli_see_help("monitor");
		}
	}
	if (optind >= argc)
		return usage_error("which bus? give an interface (can0), slcan:TTY or a trace file");
	m->source = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s' (one source at a time)", argv[optind]);
	if (!m->dbc)
		return usage_error("--dbc FILE is required");
	return 0;
}

/* ------------------------------------------------------------ the board */

/* A name a board file can hold (no newline, ';', '#', '[' or ']'). */
static bool board_safe(const char *s)
{
	return !strpbrk(s, "\n;#[]");
}

/* --bitrate as the board key (slcan: its S command; SocketCAN: the link's). */
static int bitrate_line(const struct monitor *m, char *sec, size_t len)
{
	if (m->bitrate)
		snprintf(sec + strlen(sec), len - strlen(sec), "bitrate = %lu\n", m->bitrate);
	return 0;
}

/*
 * The [can] section a board file would have for m->source: a trace
 * (an existing file), slcan:TTY[@BAUD], or an interface.  0, or the exit
 * code with the sentence said.
 */
static int source_section(const struct monitor *m, char *sec, size_t len)
{
	char path[PATH_MAX], tty[PATH_MAX];
	struct stat st;

	if (!strncmp(m->source, "slcan:", 6)) {
		const char *at = strrchr(m->source + 6, '@');
		unsigned long baud = 115200;
		char *end;

		snprintf(tty, sizeof(tty), "%.*s", at ? (int)(at - m->source - 6) : (int)strlen(m->source + 6),
		         m->source + 6);
		if (at) {
			errno = 0;
			baud = strtoul(at + 1, &end, 10);
			if (errno || end == at + 1 || *end || baud < 1000 || baud > 20000000)
				return usage_error("%s: expected a baud rate from 1000 to 20000000 after '@', not '%s'",
				                m->source, at + 1);
		}
		if (!tty[0])
			return usage_error("%s: expected slcan:TTY[@BAUD], as slcan:/dev/ttyACM0", m->source);
		if (!realpath(tty, path)) {
			fprintf(stderr, "railmon monitor: %s: %s\n", tty, strerror(errno));
			return 1;
		}
		if (!board_safe(path))
			return usage_error("%s: a path with newline ; # [ or ] in it cannot be used", tty);
		if (m->speed_given)
			return usage_error("--speed is for a trace, not a bus (%s)", m->source);
		snprintf(sec, len, "[can slcan]\ndriver = slcan\ndevice = %s\nserial_baud = %lu\n", path, baud);
		return bitrate_line(m, sec, len);
	}
	if (stat(m->source, &st) == 0 || strchr(m->source, '/') || strchr(m->source, '.')) {
		/* a path: a trace (an interface name has neither '/' nor '.') */
		if (stat(m->source, &st) == 0 && S_ISCHR(st.st_mode))
			return usage_error("%s is a device, not a trace: an slcan adapter is slcan:%s", m->source,
			                   m->source);
		if (!realpath(m->source, path)) {
			fprintf(stderr, "railmon monitor: %s: %s\n", m->source, strerror(errno));
			return 1;
		}
		if (!board_safe(path))
			return usage_error("%s: a path with newline ; # [ or ] in it cannot be used", m->source);
		if (m->bitrate)
			return usage_error("--bitrate is for a bus, not a trace (%s)", m->source);
		snprintf(sec, len, "[can trace]\ndriver = trace\nfile = %s\nspeed = %.17g\n", path, m->speed);
		return 0;
	}
	if (strlen(m->source) > 15 || !board_safe(m->source) || strpbrk(m->source, " \t="))
		return usage_error("%s: no such interface, slcan:TTY or trace file", m->source);
	if (m->speed_given)
		return usage_error("--speed is for a trace, not a bus (%s)", m->source);
	snprintf(sec, len, "[can bus]\ndriver = socketcan\ninterface = %s\n", m->source);
	return bitrate_line(m, sec, len);
}

/* The DBC on its own first: its syntax errors as file:line, its warnings,
   and nothing to show refused (issue 28: no silent success). */
static int check_dbc(const struct monitor *m)
{
	char err[512] = "";
	dbc_t *dbc = NULL;
	int r = dbc_load(m->dbc, &dbc, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "railmon monitor: %s\n", err[0] ? err : strerror(-r));
		return 1;
	}
	r = dbc_signal_count(dbc) ? 0 : 1;
	if (r) /* one sentence, not the load's warning that says it too */
		fprintf(stderr, "railmon monitor: %s defines no signal: nothing to monitor\n", m->dbc);
	for (unsigned i = 0; !r && i < dbc_warning_count(dbc); i++)
		fprintf(stderr, "railmon monitor: warning: %s\n", dbc_warning(dbc, i));
	dbc_free(dbc);
	return r;
}

/* The one-bus board, its channels, and the buffers. */
static int monitor_setup(struct monitor *m)
{
	char sec[PATH_MAX + 128], dpath[PATH_MAX], err[CONF_ERR_MAX] = "", *text = NULL;
	int r;

	if ((r = check_dbc(m)) || (r = source_section(m, sec, sizeof(sec))))
		return r;
	if (!realpath(m->dbc, dpath) || !board_safe(dpath)) {
		fprintf(stderr, "railmon monitor: %s: %s\n", m->dbc, errno ? strerror(errno) : "a path a board file cannot hold");
		return 1;
	}
	if (asprintf(&text, "[board]\nvehicle = monitor\nrt_priority = 0\n\n[storage]\ndir = railmon-data\n\n%s"
	             "dbc = %s\nj1939 = %s\n", sec, dpath, m->j1939 ? "true" : "false") < 0)
		return fputs("railmon monitor: out of memory\n", stderr), 1;
	r = conf_parse("(monitor)", text, &m->cfg, err, sizeof(err));
	free(text);
	if (r < 0) {
		fprintf(stderr, "railmon monitor: %s: %s\n", m->source, err);
		return 1;
	}
	if (pl_channels_new(m->cfg, &m->ch, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon monitor: %s\n", err);
		return 1;
	}
	m->nch = pl_channels_list(m->ch, &m->list);
	m->outmax = pl_channels_decode_max(m->ch);
	m->rows = calloc(m->nch ? m->nch : 1, sizeof(*m->rows));
	m->items = calloc(MONITOR_ITEMS, sizeof(*m->items));
	m->out = calloc(m->outmax ? m->outmax : 1, sizeof(*m->out));
	if (!m->rows || !m->items || !m->out || cli_livetable_new(m->nch ? m->nch : 1, &m->table) < 0)
		return fputs("railmon monitor: out of memory\n", stderr), 1;
	return 0;
}

/* bus_dev_new()'s error in words: the device named, as candump says it. */
static int monitor_open(struct monitor *m)
{
	const struct bus_can_cfg *c = &m->cfg->buses[0].can;
	int r;

	/* an interface that is not there is that, on a kernel without
	   SocketCAN too (the driver's socket() would say that first) */
	if (c->driver == BUS_CAN_SOCKETCAN && !if_nametoindex(c->ifname)) {
		fprintf(stderr, "railmon monitor: %s: no such device\n", c->ifname);
		return 1;
	}
	r = bus_dev_new(&m->cfg->buses[0], &m->dev);
	if (r == 0)
		return 0;
	if (c->driver == BUS_CAN_SOCKETCAN && r == -ENODEV)
		fprintf(stderr, "railmon monitor: %s: no such device\n", c->ifname);
	else if (c->driver == BUS_CAN_SOCKETCAN && (r == -EAFNOSUPPORT || r == -EPROTONOSUPPORT))
		fprintf(stderr, "railmon monitor: %s: this kernel has no SocketCAN (modprobe can-raw)\n", c->ifname);
	else if (c->driver == BUS_CAN_TRACE && r == -EMEDIUMTYPE)
		fprintf(stderr, "railmon monitor: %s: not a trace railmon reads (candump log, ASC, BLF or TRC)\n",
		        m->source);
	else if (c->driver == BUS_CAN_SLCAN && r == -EINVAL && c->bitrate)
		fprintf(stderr, "railmon monitor: %s: --bitrate %" PRIu32 ": an slcan adapter has 10000, 20000, 50000, "
		        "100000, 125000, 250000, 500000, 800000 or 1000000\n", m->source, c->bitrate);
	else if (c->driver == BUS_CAN_SLCAN && r == -ETIMEDOUT)
		fprintf(stderr, "railmon monitor: %s: the adapter does not answer its set-up commands\n", m->source);
	else
		fprintf(stderr, "railmon monitor: %s: %s\n", m->source, strerror(-r));
	return 1;
}

/* --------------------------------------------------------------- reading */

static bool j1939_transport(uint32_t id)
{
	uint32_t pgn = dbc_j1939_id_parse(id).pgn;

	return pgn == DBC_J1939_PGN_TP_CM || pgn == DBC_J1939_PGN_TP_DT;
}

static void take(struct monitor *m, const struct acq_item *it)
{
	int n;

	if (it->kind != ACQ_ITEM_CAN)
		return; /* the driver's events: counted in its stats */
	m->frames++;
	if (it->t_ns > m->last_t_ns)
		m->last_t_ns = it->t_ns;
	if (it->can.flags & ACQ_CAN_ERR) {
		m->error_frames++;
		return;
	}
	n = pl_channels_decode(m->ch, it, m->out, m->outmax);
	for (int i = 0; i < n; i++)
		if (m->out[i].kind == ACQ_ITEM_SAMPLE)
			pl_channels_set_live(m->ch, &m->out[i]);
	if (n > 0)
		m->decoded++;
	else if (!m->j1939 || !(it->can.flags & ACQ_CAN_EXT) || !j1939_transport(it->can.id))
		m->unknown++; /* a J1939 transport packet is part of a message, not unknown */
}

/* Read what the bus has within timeout_ms.  0, or -1 once it ended. */
static int monitor_read(struct monitor *m, int timeout_ms)
{
	int n = bus_dev_recv(m->dev, m->items, MONITOR_ITEMS, timeout_ms);

	if (n == -ENODATA) {
		m->ended = true;
		return -1;
	}
	if (n == -ENODEV) {
		m->gone = bus_dev_gone_cause(m->dev);
		if (!m->gone)
			m->gone = -ENODEV;
		return -1;
	}
	for (int i = 0; i < n; i++)
		take(m, &m->items[i]);
	return 0; /* other errors (EINTR, a bad read) are the device's stats' */
}

/* ----------------------------------------------------------------- screen */

/* Why the device went, in words: a tty's hang-up is the adapter unplugged
   or its pty closed, not a "broken pipe". */
static const char *gone_text(int cause)
{
	return cause == -EPIPE ? "hung up" : strerror(-cause);
}

static uint64_t monitor_errors(const struct monitor *m)
{
	struct bus_stats st = { 0 };

	bus_dev_stats(m->dev, &st);
	return m->error_frames + st.rx_errors + st.bad_input + st.rx_dropped;
}

/* The rows from the channels' latest values; ages at now (the clock of
   the frames' times). */
static void monitor_rows(struct monitor *m, int64_t now)
{
	for (size_t i = 0; i < m->nch; i++) {
		struct cli_live_row *r = &m->rows[i];
		struct pl_live live;
		const char *label;

		memset(r, 0, sizeof(*r));
		r->id = m->list[i].id;
		snprintf(r->name, sizeof(r->name), "%s", m->list[i].name);
		snprintf(r->unit, sizeof(r->unit), "%s", m->list[i].unit);
		snprintf(r->source, sizeof(r->source), "%s", m->list[i].source);
		r->age_ns = -1;
		if (pl_channels_live(m->ch, i, &live) < 0 || !live.t_ns)
			continue;
		r->value = live.value;
		r->quality = live.quality;
		r->age_ns = now > live.t_ns ? now - live.t_ns : 0;
		if ((label = pl_channels_value_label(m->ch, i, live.value)))
			snprintf(r->label, sizeof(r->label), "%s", label);
	}
}

/* A trace read as fast as it goes keeps its own times: the ages are at
   its newest frame.  Everything else is stamped now. */
static int64_t monitor_now(const struct monitor *m)
{
	if (m->cfg->buses[0].can.driver == BUS_CAN_TRACE && m->speed == 0)
		return m->last_t_ns;
	return basic_realtime_ns();
}

static void monitor_title(struct monitor *m)
{
	char state[64] = "";
	uint64_t e = monitor_errors(m);

	if (m->keys.editing) {
		snprintf(m->title, sizeof(m->title), "railmon monitor %s  filter: %s_", m->source, m->keys.edit);
		m->view.title = m->title;
		return;
	}
	if (m->ended)
		snprintf(state, sizeof(state), ", trace ended");
	else if (m->gone)
		snprintf(state, sizeof(state), ", gone: %s", gone_text(m->gone));
	/* the counts and the state first: a narrow terminal cuts the source, not them */
	snprintf(m->title, sizeof(m->title),
	         "monitor %" PRIu64 " frame%s, %" PRIu64 " decoded, %" PRIu64 " not in the DBC, %" PRIu64
	         " error%s%s  %s",
	         m->frames, m->frames == 1 ? "" : "s", m->decoded, m->unknown, e, e == 1 ? "" : "s", state, m->source);
	m->view.title = m->title;
}

static void monitor_draw(struct monitor *m, cli_livetable_t *t, FILE *out)
{
	monitor_rows(m, monitor_now(m));
	monitor_title(m);
	cli_livetable_draw(t, m->rows, m->nch, &m->view, basic_mono_ns(), out);
}

/* Keys waiting on stdin; false when the user quits or the terminal went. */
static bool monitor_keys(struct monitor *m)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };

	if (!m->term.raw || poll(&pfd, 1, 0) <= 0)
		return true;
	if (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))
		return false;
	m->key_seen = true; /* drawn at once, as watch does */
	return cli_term_keys(&m->term, &m->keys, &m->view, m->nch);
}

/* ------------------------------------------------------------------- run */

/* Read until the end (trace, --duration, gone, a signal, q), drawing live
   every --interval when live. */
static void monitor_loop(struct monitor *m, bool live)
{
	int64_t start = basic_mono_ns(), next = 0;
	int64_t stop = m->duration_s > 0 ? start + (int64_t)(m->duration_s * 1e9) : INT64_MAX;

	if (live)
		cli_term_raw(&m->term);
	/* SIGHUP is the terminal hanging up, not a reload */
	while (!cli_stop_requested && !cli_reload_requested && !ferror(stdout)) {
		int64_t now = basic_mono_ns(), wait;

		if (live && now >= next) {
			cli_term_size(&m->view);
			monitor_draw(m, m->table, stdout);
			next = now + (int64_t)(m->interval_s * 1e9);
		}
		/* a short wait: keys, the next frame and the end are seen soon */
		wait = (live ? next : stop) - now;
		if (wait > 100000000)
			wait = 100000000;
		if (wait < 0)
			wait = 0;
		if (monitor_read(m, (int)(wait / 1000000) + 1) < 0)
			break;
		if (live && !monitor_keys(m))
			break;
		if (m->key_seen)
			next = 0;
		m->key_seen = false;
		/* The stop looked at after a read, not before: what is due by
		   then is in the table even when --duration went by before the
		   first read (a loaded machine), so the output follows the
		   frames, not the scheduler. */
		if (basic_mono_ns() >= stop)
			break;
	}
	if (live && !m->term.raw)
		fputc('\n', stdout); /* no alternate screen: the final table below the last frame */
	if (live)
		cli_term_restore(&m->term);
}

/* The final table: every channel, no escapes. */
static void monitor_final(struct monitor *m)
{
	cli_livetable_t *t = NULL;

	m->view.clear = false;
	m->view.color = false;
	m->view.height = 0;
	m->view.scroll = 0;
	m->view.keys = NULL;
	m->keys.editing = false;
	if (cli_livetable_new(m->nch ? m->nch : 1, &t) == 0)
		monitor_draw(m, t, stdout);
	cli_livetable_free(t);
}

/* What the end says on stderr, and the exit code. */
static int monitor_verdict(struct monitor *m)
{
	const struct bus_can_cfg *c = &m->cfg->buses[0].can;
	struct bus_stats st = { 0 };
	char first[512];
	int r = 0;

	bus_dev_stats(m->dev, &st);
	if (m->gone) {
		fprintf(stderr, "railmon monitor: %s: the device is gone (%s)\n", m->source, gone_text(m->gone));
		r = 1;
	}
	if (c->driver == BUS_CAN_TRACE && st.bad_input) {
		if (bus_can_trace_first_bad(m->dev, first, sizeof(first)) < 0)
			snprintf(first, sizeof(first), "%s", m->source);
		fprintf(stderr, "railmon monitor: %s: %" PRIu64 " damaged part%s skipped, the first: %s\n", m->source,
		        st.bad_input, st.bad_input == 1 ? "" : "s", first);
		r = 1;
	}
	if (!m->decoded) {
		fprintf(stderr, "railmon monitor: %s: no signal of %s seen (%" PRIu64 " frame%s, none of them in it)\n",
		        m->source, m->dbc, m->frames, m->frames == 1 ? "" : "s");
		r = 1;
	}
	return r;
}

static void monitor_release(struct monitor *m)
{
	m->dev = bus_dev_free(m->dev);
	m->table = cli_livetable_free(m->table);
	m->ch = pl_channels_free(m->ch);
	m->cfg = conf_free(m->cfg);
	free(m->rows);
	free(m->items);
	free(m->out);
}

int cli_cmd_monitor(int argc, char **argv)
{
	struct monitor m = { .speed = 1, .interval_s = 0.5, .view = { .stale_s = 5, .color = true, .clear = true } };
	bool live;
	int r = monitor_opts(&m, argc, argv);

	if (r)
		return r < 0 ? 0 : r;
	if (getenv("NO_COLOR") || !isatty(STDOUT_FILENO))
		m.view.color = false;
	live = !m.once && isatty(STDOUT_FILENO);
	/* before the open: a SIGTERM while an adapter is set up still ends
	   with the final table */
	cli_install_signals();
	r = monitor_setup(&m);
	if (r == 0)
		r = monitor_open(&m);
	if (r) {
		monitor_release(&m);
		return r;
	}
	if (live)
		m.view.keys = "q quit, s sort, / filter, j/k scroll";
	monitor_loop(&m, live);
	cli_term_size(&m.view);
	monitor_final(&m);
	r = monitor_verdict(&m);
	monitor_release(&m);
	return r;
}
