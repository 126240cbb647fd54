/* SPDX-License-Identifier: MIT */
/*
 * replay-trace.c - what a trace holds, said before `railmon replay` reads it
 * (replay-trace.h).  An incident investigator must know what a replay left out;
 * the daemon's summary has only counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus/bus.h"
#include "conf/config-types.h"
#include "bus/can-trace.h"
#include "trace/candump.h"
#include "trace/pcap.h"
#include "trace/trace.h"
#include "report/say.h"
#include "cli/replay-trace.h"

static bool has_channels(enum trace_format fmt)
{
	return fmt == TRACE_ASC || fmt == TRACE_BLF || fmt == TRACE_TRC;
}

/* "channel 1 8, channel 2 4" of the channels with frames */
static void say_channels(FILE *out, const struct cli_trace_info *info)
{
	bool first = true;

	for (size_t c = 1; c < BUS_TRACE_CHANNELS; c++)
		if (info->chan[c]) {
			fprintf(out, "%schannel %zu %" PRIu64, first ? "" : ", ", c, info->chan[c]);
			first = false;
		}
}

/* The survey through the driver: every format, gzip, pipes. */
static int survey_serial(FILE *out, const char *trace, enum trace_format fmt, struct cli_trace_info *ret_info)
{
	struct bus_cfg in = { .kind = BUS_KIND_CAN };
	struct acq_item items[256];
	struct cli_trace_info info = { .fmt = fmt };
	uint64_t bad = 0;
	bus_dev_t *dev = NULL;
	char first[PATH_MAX + 128];
	int n;

	in.can.driver = BUS_CAN_TRACE;
	snprintf(in.can.device, sizeof(in.can.device), "%s", trace);
	if ((n = bus_dev_new(&in, &dev)) < 0)
		return n;
	while ((n = bus_dev_recv(dev, items, 256, 0)) > 0)
		for (int i = 0; i < n; i++) {
			info.frames += items[i].kind == ACQ_ITEM_CAN;
			bad += items[i].kind == ACQ_ITEM_EVENT && items[i].event.code == ACQ_EV_CAN_BAD_LINE;
		}
	bus_can_trace_channels(dev, info.chan, BUS_TRACE_CHANNELS);
	fprintf(out, "railmon replay: %s: %s, %" PRIu64 " frames", trace, trace_format_name(fmt), info.frames);
	if (info.frames && has_channels(fmt)) {
		fputs(": ", out);
		say_channels(out, &info);
	}
	if (bad && bus_can_trace_first_bad(dev, first, sizeof(first)) == 0)
		fprintf(out, "; %" PRIu64 " damaged part%s skipped, the first: %s", bad, bad == 1 ? "" : "s", first);
	if (bus_can_trace_skipped(dev, first, sizeof(first)) == 0)
		fprintf(out, "; objects that are no CAN frame skipped: %s", first);
	fputc('\n', out);
	bus_dev_free(dev);
	info.damaged = bad;
	if (ret_info)
		*ret_info = info;
	return n == -ENODATA ? 0 : n;
}

/*
 * The survey of a plain candump log, the usual replay input, in up to
 * SURVEY_PARTS threads: the file cut at line starts, each part tallied
 * (trace_candump_tally: the driver's verdict per line) and the parts
 * added up.  The serial survey below read the whole trace through the
 * driver before the replay could start, a third of a replay's time; a
 * candump line needs nothing of the lines before it, so the parts are
 * independent.  RAILMON_REPLAY_SURVEY=serial takes the driver's way (the
 * benchmark's baseline in the same run, and the test that both say the
 * same); =N (1 to SURVEY_PARTS) cuts any file into N parts, so a test's
 * small file is cut too.
 */
#define SURVEY_PARTS 4
#define SURVEY_BLOCK (1024 * 1024)        /* per read; holds a whole driver line */
#define SURVEY_SPLIT_MIN (8 * 1024 * 1024) /* below: one part, no thread */

struct survey_part {
	int fd;
	off_t start, end;
	struct trace_candump_tally t;
	int err;
};

/* Tally [start, end) of the file, read in blocks; a line cut by a
   block's end is moved to the front of the next. */
static void *survey_part_run(void *arg)
{
	struct survey_part *sp = arg;
	char *buf = malloc(SURVEY_BLOCK);
	size_t keep = 0;
	off_t at = sp->start;

	if (!buf) {
		sp->err = -ENOMEM;
		return NULL;
	}
	for (;;) {
		size_t want = SURVEY_BLOCK - keep;
		ssize_t n = 0;
		long used;

		if (sp->end - at < (off_t)want)
			want = (size_t)(sp->end - at);
		if (want && (n = pread(sp->fd, buf + keep, want, at)) < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sp->err = -errno;
			break;
		}
		at += n;
		/* the part ends at a line start, the file's end at EOF */
		used = trace_candump_tally(buf, keep + (size_t)n, n == 0 || at >= sp->end, BUS_CAN_TRACE_LINE_MAX,
		                           &sp->t);
		if (used < 0 || n == 0 || at >= sp->end) {
			sp->err = used < 0 ? (int)used : 0;
			break;
		}
		keep = keep + (size_t)n - (size_t)used;
		memmove(buf, buf + used, keep);
	}
	free(buf);
	return NULL;
}

/* The first line start at or after off (size if none). */
static int survey_cut(int fd, off_t off, off_t size, off_t *ret_cut)
{
	char b[4096];

	if (off < 1)
		off = 1; /* the byte before off is read: a cut at 0 is no cut */
	while (off < size) {
		ssize_t n = pread(fd, b, sizeof(b), off - 1);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		nl = memchr(b, '\n', (size_t)n);
		if (nl) {
			*ret_cut = off - 1 + (nl - b) + 1;
			return 0;
		}
		off += n;
	}
	*ret_cut = size;
	return 0;
}

/* The parts of the file, tallied in threads, added up in info; the
   first damaged line in first (as bus_can_trace_first_bad says it). */
static int survey_parts(int fd, off_t size, size_t forced, const char *trace, struct cli_trace_info *info,
                        char *first, size_t first_len)
{
	struct survey_part parts[SURVEY_PARTS];
	pthread_t tid[SURVEY_PARTS];
	bool started[SURVEY_PARTS] = { false };
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = forced                                ? forced
	           : size < SURVEY_SPLIT_MIN || cpus < 2 ? 1
	           : cpus < SURVEY_PARTS                 ? (size_t)cpus
	                                                 : SURVEY_PARTS;
	uint64_t lines = 0, first_bad = 0;
	off_t at = 0;
	int r = 0;

	for (size_t i = 0; i < n; i++) {
		off_t cut = size;

		if (i + 1 < n && (r = survey_cut(fd, size / (off_t)n * (off_t)(i + 1), size, &cut)) < 0)
			break;
		if (cut < at)
			cut = at;
		parts[i] = (struct survey_part){ .fd = fd, .start = at, .end = cut };
		at = cut;
	}
	for (size_t i = 1; r == 0 && i < n; i++) /* part 0 on this thread */
		started[i] = pthread_create(&tid[i], NULL, survey_part_run, &parts[i]) == 0;
	if (r == 0)
		survey_part_run(&parts[0]);
	for (size_t i = 1; r == 0 && i < n; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			survey_part_run(&parts[i]); /* no thread: tallied here */
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct trace_candump_tally *t = &parts[i].t;

		if (parts[i].err < 0)
			return parts[i].err;
		if (t->bad && !first_bad)
			first_bad = lines + t->first_bad;
		lines += t->lines;
		info->frames += t->frames;
		info->damaged += t->bad;
	}
	info->chan[0] = info->frames; /* a candump log has no numbered channels */
	if (first_bad)
		snprintf(first, first_len, "%s:%lu: malformed %s line", trace, (unsigned long)first_bad,
		         trace_format_name(TRACE_CANDUMP));
	return r;
}

/* The fast survey's info, or -EOPNOTSUPP for a trace it does not read
   (not a plain candump log, or the serial way asked for). */
static int survey_fast(const char *trace, enum trace_format fmt, struct cli_trace_info *info, char *first,
                       size_t first_len)
{
	const char *how = getenv("RAILMON_REPLAY_SURVEY");
	unsigned char magic[2] = { 0 };
	size_t forced = how && how[0] >= '1' && how[0] < '1' + SURVEY_PARTS && !how[1] ? (size_t)(how[0] - '0') : 0;
	struct stat st;
	int fd, r;

	/* the driver's device name holds the path: a longer one it would cut */
	if (fmt != TRACE_CANDUMP || (how && !strcmp(how, "serial")) || strlen(trace) >= BUS_PATH_MAX)
		return -EOPNOTSUPP;
	fd = open(trace, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -EOPNOTSUPP; /* the driver says why */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread(fd, magic, 2, 0) < 0 ||
	    (magic[0] == 0x1f && magic[1] == 0x8b)) {
		close(fd); /* a pipe, or gzip (inflated by the driver) */
		return -EOPNOTSUPP;
	}
	r = survey_parts(fd, st.st_size, forced, trace, info, first, first_len);
	close(fd);
	return r;
}

int cli_trace_survey_info(FILE *out, const char *trace, enum trace_format fmt, struct cli_trace_info *ret_info)
{
	struct cli_trace_info info = { .fmt = fmt };
	char first[PATH_MAX + 128] = "";
	int r = survey_fast(trace, fmt, &info, first, sizeof(first));

	if (r == -EOPNOTSUPP)
		return survey_serial(out, trace, fmt, ret_info);
	if (r < 0)
		return r;
	fprintf(out, "railmon replay: %s: %s, %" PRIu64 " frames", trace, trace_format_name(fmt), info.frames);
	if (info.damaged && first[0])
		fprintf(out, "; %" PRIu64 " damaged part%s skipped, the first: %s", info.damaged,
		        info.damaged == 1 ? "" : "s", first);
	fputc('\n', out);
	if (ret_info)
		*ret_info = info;
	return 0;
}

int cli_trace_survey(FILE *out, const char *trace, enum trace_format fmt)
{
	return cli_trace_survey_info(out, trace, fmt, NULL);
}

int cli_trace_pick_channel(FILE *err, const struct cli_trace_info *info, struct conf_board *cfg, uint32_t channel)
{
	size_t held = 0, only = 0;

	if (!has_channels(info->fmt) || cfg->nbuses != 1) {
		if (channel)
			return rpt_fail(err, "replay", "--channel: a %s has no numbered channels",
			                trace_format_name(info->fmt));
		return -1;
	}
	for (size_t c = 1; c < BUS_TRACE_CHANNELS; c++)
		if (info->chan[c]) {
			held++;
			only = only ? only : c;
		}
	if (channel && (channel >= BUS_TRACE_CHANNELS || !info->chan[channel])) {
		fprintf(err, "railmon replay: --channel %" PRIu32 ": the trace has no frame on it; it holds ", channel);
		say_channels(err, info);
		fputc('\n', err);
		return 2;
	}
	if (!channel && held > 1) {
		fputs("railmon replay: the trace holds several channels (", err);
		say_channels(err, info);
		fputs("); --dbc decodes one bus: give --channel N\n", err);
		return 2;
	}
	cfg->buses[0].can.trace_channel = channel ? channel : (uint32_t)only;
	return -1;
}

/* The frames bus b of a trace replay gets */
static uint64_t bus_frames(const struct cli_trace_info *info, const struct bus_cfg *b)
{
	uint64_t sum = 0;

	if (b->can.trace_channel)
		return b->can.trace_channel < BUS_TRACE_CHANNELS ? info->chan[b->can.trace_channel] : 0;
	for (size_t c = 0; c < BUS_TRACE_CHANNELS; c++)
		sum += info->chan[c];
	return sum;
}

uint64_t cli_trace_frames_read(const struct cli_trace_info *info, const struct conf_board *cfg)
{
	uint64_t read = 0;

	if (!has_channels(info->fmt))
		return info->frames; /* candump: each bus its interface's frames */
	for (size_t i = 0; i < cfg->nbuses; i++)
		read += bus_frames(info, &cfg->buses[i]);
	return read;
}

int cli_trace_plan(FILE *out, const struct cli_trace_info *info, const struct conf_board *cfg)
{
	static const char lead[] = "railmon replay: ";
	uint64_t read = 0;

	if (!has_channels(info->fmt))
		return -1; /* candump: buses go by interface, said by the daemon */
	for (size_t i = 0; i < cfg->nbuses; i++) {
		const struct bus_cfg *b = &cfg->buses[i];
		uint64_t k = bus_frames(info, b);

		read += k;
		if (b->can.trace_channel)
			fprintf(out, "%sbus %s reads channel %" PRIu32 ": %" PRIu64 " frames\n", lead, b->name,
			        b->can.trace_channel, k);
		else
			fprintf(out, "%sbus %s reads every channel: %" PRIu64 " frames\n", lead, b->name, k);
	}
	for (size_t c = 1; c < BUS_TRACE_CHANNELS; c++) {
		bool taken = false;

		for (size_t i = 0; i < cfg->nbuses; i++)
			taken |= cfg->buses[i].can.trace_channel == 0 || cfg->buses[i].can.trace_channel == c;
		if (info->chan[c] && !taken) {
			fprintf(out, "%schannel %zu: %" PRIu64 " frames no bus reads (a bus's 'channel = %zu' would)\n",
			        lead, c, info->chan[c], c);
		}
	}
	if (info->frames && !read) {
		fprintf(out, "%snone of the trace's %" PRIu64 " frames is on a channel a bus reads: nothing to "
		        "replay\n", lead, info->frames);
		return 1;
	}
	return -1;
}

/* A TRDP bus's ports as its capture driver reads them (bus/trdp-trace.c
   tt_open): UDP to its PD and MD ports and from its MD port, TCP on its
   MD port; a bus without MD (md_port 0) no TCP, as live. */
static struct trace_pcap_cfg capture_cfg(const struct bus_trdp_cfg *t)
{
	struct trace_pcap_cfg pcfg = { .tcp_port = t->md_port, .no_tcp = !t->md_port, .udp_src_port = t->md_port };

	if (t->pd_port)
		pcfg.udp_ports[pcfg.n_udp_ports++] = t->pd_port;
	if (t->md_port)
		pcfg.udp_ports[pcfg.n_udp_ports++] = t->md_port;
	return pcfg;
}

/* Whether a capture read with pcfg (its 0s as trace/pcap.c takes them)
   delivers ev: a datagram or stream an earlier survey pass counted. */
static bool capture_takes(const struct trace_pcap_cfg *pcfg, const struct trace_pcap_event *ev)
{
	uint16_t tcp = pcfg->tcp_port ? pcfg->tcp_port : TRACE_PCAP_PORT_MD;
	bool want = false;

	if (ev->proto == 6)
		return !pcfg->no_tcp && (ev->sport == tcp || ev->dport == tcp);
	if (!pcfg->n_udp_ports)
		want = ev->dport == TRACE_PCAP_PORT_PD || ev->dport == TRACE_PCAP_PORT_MD;
	for (size_t i = 0; i < pcfg->n_udp_ports; i++)
		want |= pcfg->udp_ports[i] == ev->dport;
	return want || (pcfg->udp_src_port && ev->sport == pcfg->udp_src_port);
}

/* A packet capture read once for each set of ports cfg's [trdp] buses
   read (after conf_replay_capture: the board's, else 17224/17225), not
   the standard ports: a capture on a board's other ports is not "no TRDP
   traffic".  A datagram or stream two sets take is counted once.  What it
   holds for them, its first damage.  -1 to go on, else the exit code. */
int cli_capture_survey(FILE *err, const char *trace, struct cli_trace_info *info, const struct conf_board *cfg)
{
	struct trace_pcap_cfg pcfg[CONF_BUSES_MAX];
	uint64_t packets = 0, udp = 0, tcp = 0;
	const char *link = "unknown";
	char damage[320] = ""; /* said after the counts */
	size_t n = 0;
	int r = 0;

	for (size_t b = 0; b < cfg->nbuses && n < CONF_BUSES_MAX; b++) {
		struct trace_pcap_event ev;
		trace_pcap_t *pc;
		char why[256] = "";
		bool before = false;

		pcfg[n] = capture_cfg(&cfg->buses[b].trdp);
		for (size_t e = 0; e < n && !before; e++) /* buses on the same ports: read once */
			before = pcfg[e].tcp_port == pcfg[n].tcp_port && pcfg[e].no_tcp == pcfg[n].no_tcp &&
			         pcfg[e].n_udp_ports == pcfg[n].n_udp_ports &&
			         !memcmp(pcfg[e].udp_ports, pcfg[n].udp_ports, sizeof(pcfg[n].udp_ports));
		if (before)
			continue;
		if ((r = trace_pcap_open(trace, &pcfg[n], &pc, why, sizeof(why))) < 0)
			return rpt_fail(err, "replay", "%s: %s", trace, why[0] ? why : strerror(-r));
		while ((r = trace_pcap_next(pc, &ev)) > 0) {
			if (ev.kind != TRACE_PCAP_UDP && ev.kind != TRACE_PCAP_TCP_DATA)
				continue;
			for (size_t e = 0; e < n && !before; e++)
				before = capture_takes(&pcfg[e], &ev);
			if (!before && ev.kind == TRACE_PCAP_UDP)
				udp++;
			else if (!before)
				tcp += ev.len;
			before = false;
		}
		if (!n) {
			struct trace_pcap_stats st;

			trace_pcap_stats(pc, &st);
			packets = st.packets;
			link = trace_pcap_link_name(pc); /* libpcap's static name */
		}
		if (!info->damaged && (r < 0 || trace_pcap_note(pc)[0])) {
			info->damaged = 1;
			snprintf(damage, sizeof(damage), "%s", r < 0 ? trace_pcap_error(pc) : trace_pcap_note(pc));
		}
		trace_pcap_free(pc);
		n++;
	}
	fprintf(err, "railmon replay: %s: %s capture (%s), %" PRIu64 " packets: %" PRIu64 " UDP datagrams and %"
	        PRIu64 " TCP stream bytes on the TRDP ports\n", trace, trace_format_name(info->fmt), link, packets, udp,
	        tcp);
	if (info->damaged)
		fprintf(err, "railmon replay: %s\n", damage);
	info->frames = udp + (tcp ? 1 : 0);
	if (!info->frames) {
		fprintf(err, "railmon replay: %s holds no TRDP traffic on the ports of its [trdp] bus%s: nothing to "
		        "replay\n", trace, cfg->nbuses == 1 ? "" : "es");
		return 1;
	}
	return -1;
}

int cli_capture_split(FILE *out, const char *trace, const struct conf_board *cfg)
{
	uint64_t took[CONF_BUSES_MAX] = { 0 }, none = 0, all = 0;
	uint32_t none_to = 0;
	uint16_t none_port = 0;

	/* each bus's ports read as its driver reads them (bus/trdp-trace.c) */
	for (size_t b = 0; b < cfg->nbuses; b++) {
		struct trace_pcap_cfg pcfg = capture_cfg(&cfg->buses[b].trdp);
		struct trace_pcap_event ev;
		trace_pcap_t *pc;
		char why[256] = "";
		int first, owner, r;

		if ((r = trace_pcap_open(trace, &pcfg, &pc, why, sizeof(why))) < 0)
			return rpt_fail(out, "replay", "%s: %s", trace, why[0] ? why : strerror(-r));
		while (trace_pcap_next(pc, &ev) > 0) {
			if (ev.kind != TRACE_PCAP_UDP && ev.kind != TRACE_PCAP_TCP_OPEN)
				continue;
			owner = bus_trdp_capture_owner(cfg->buses, cfg->nbuses, ev.proto == 6, ev.src, ev.sport, ev.dst,
			                               ev.dport, &first);
			if (owner == (int)b)
				took[b]++;
			if (owner < 0 && first == (int)b && !none++) {
				none_to = ev.dst;
				none_port = ev.dport;
			}
		}
		trace_pcap_free(pc);
		all += took[b];
	}
	fprintf(out, "railmon replay: %s into %zu [trdp] buses by the address each telegram was sent to (bind, "
	        "group): ", trace, cfg->nbuses);
	for (size_t b = 0; b < cfg->nbuses; b++)
		fprintf(out, "%s'%s' %" PRIu64, b ? ", " : "", cfg->buses[b].name, took[b]);
	fprintf(out, " UDP datagrams and TCP connections");
	if (none)
		fprintf(out, "; %" PRIu64 " on their ports addressed to none of them (the first to %u.%u.%u.%u:%u), "
		        "counted (stat: capture_unmatched) and not replayed", none, none_to >> 24, none_to >> 16 & 255,
		        none_to >> 8 & 255, none_to & 255, none_port);
	fputc('\n', out);
	if (!all) {
		fprintf(out, "railmon replay: %s: none of its TRDP traffic is addressed to a bus of the board: nothing "
		        "to replay\n", trace);
		return 1;
	}
	return -1;
}

int cli_trace_check_info(FILE *err, const char *trace, bool survey, struct cli_trace_info *ret_info)
{
	struct cli_trace_info mine, *info = ret_info ? ret_info : &mine;
	enum trace_format fmt;
	int r;

	*info = (struct cli_trace_info){ 0 };
	r = trace_format_detect_file(trace, &fmt);
	if (r == -EMEDIUMTYPE)
		return rpt_fail(err, "replay", "%s: not a trace in any format railmon reads (tried %s)", trace,
		                TRACE_FORMATS);
	if (r == 0 && (fmt == TRACE_PCAP || fmt == TRACE_PCAPNG) && !survey)
		return rpt_fail(err, "replay", "%s: a packet capture (%s) holds no CAN frame to send", trace,
		                trace_format_name(fmt));
	if (r == 0 && (fmt == TRACE_PCAP || fmt == TRACE_PCAPNG)) {
		info->fmt = fmt; /* surveyed once the board says its ports: cli_capture_survey() */
		return -1;
	}
	if (r < 0 || (survey && (r = cli_trace_survey_info(err, trace, fmt, info)) < 0))
		return rpt_fail(err, "replay", "%s: %s", trace, strerror(-r));
	info->fmt = fmt;
	if (survey && !info->frames) {
		fprintf(err, "railmon replay: %s holds no CAN frame: nothing to replay\n", trace);
		return 1;
	}
	return -1;
}

int cli_trace_verdict(FILE *err, const char *trace, const struct cli_trace_info *info, int r)
{
	if (r != 0 || !info->damaged)
		return r;
	fprintf(err, "railmon replay: %" PRIu64 " damaged part%s of %s skipped (the first named above); the rest "
	        "replayed\n", info->damaged, info->damaged == 1 ? "" : "s", trace);
	return 1;
}

int cli_trace_check(FILE *err, const char *trace, bool survey)
{
	return cli_trace_check_info(err, trace, survey, NULL);
}
