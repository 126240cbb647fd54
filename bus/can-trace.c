/* SPDX-License-Identifier: MIT */
/*
 * can-trace.c - a trace file as a CAN source (BUS_CAN_TRACE).  One job,
 * the driver (open, gzip, pacing, loop, channels, damage), so one file;
 * the formats themselves are trace/'s.
 *
 * cfg->can.device is the file: a candump log, Vector ASC or BLF, or PEAK
 * TRC, told apart by its first 64 KiB at the first open (trace.h); a file
 * that is none of them is refused with -EMEDIUMTYPE.  cfg->can.ifname
 * ("" = all) keeps only the lines of one interface of a candump log,
 * cfg->can.trace_channel (0 = all) only one channel of the others,
 * cfg->can.filters apply as on CAN_RAW.  trace_speed > 0 paces frames by their trace
 * timestamps divided by the speed (acquisition/acq-pace.h, the pacing of
 * every recorded source) and restamps them with CLOCK_REALTIME at
 * delivery, as a live bus would; trace_speed == 0 delivers as fast as the
 * caller drains and keeps the trace timestamps, so a replay is
 * deterministic.  With trace_loop the file starts over at EOF and the
 * timestamps keep increasing: each pass is shifted by the span of the
 * first pass plus its mean frame gap.
 *
 * recv() returns items, 0 on timeout, -ENODATA at EOF without loop (and
 * with loop if a whole pass had no frame, to avoid spinning on an empty
 * file).  Malformed lines are counted in stats.bad_input and reported as
 * ACQ_EV_CAN_BAD_LINE events (arg = count so far, detail = line number,
 * or the file offset of the damage in a BLF file); reading continues with
 * the next line (BLF: object or container).
 *
 * The file is read through one buffer allocated at open: recv() does
 * read(2) and clock_nanosleep(2) but never allocates.
 *
 * A read error (EIO from a failing card, a file on a lost mount) is the
 * source gone (bus.h): recv() returns -ENODEV with the read's -errno as
 * the cause; reopen() opens the path again and seeks to where reading
 * stopped, so no line is read twice or skipped.  A directory is refused at
 * open and reopen (-EISDIR): it would open and then fail every read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "acquisition/acq-pace.h"
#include "bus-private.h"
#include "can-filter.h"
#include "can-trace.h"
#include "trace/candump.h"
#include "trace/trace-fmt.h"
#include "trace/trace.h"
#include "basic/clock.h"

#define TRACE_BUF_SIZE BUS_CAN_TRACE_LINE_MAX
#define NS_PER_SEC 1000000000LL

enum line_kind {
	LINE_EOF = 0,
	LINE_OK = 1,
	LINE_OVERLONG = 2, /* no newline within the buffer: garbage */
};

/* Below this, a change of realtime - monotonic is read jitter, not the
   clocks moving apart (trace_recv()). */
#define TRACE_OFFSET_SLACK_NS 1000000ll

struct trace {
	int fd;
	char *buf;
	size_t pos, fill;
	off_t file_pos;            /* bytes of this pass read from the file */
	bool eof;
	bool skipping;             /* discarding the rest of an overlong line */
	unsigned long lineno;
	unsigned long first_bad;   /* line (BLF: offset + 1); 0 = none */
	char first_why[96];        /* BLF: what was wrong there */
	enum trace_format fmt; /* found at the first open */
	bool detected;
	int detect_err;            /* a read error while detecting at open: the
	                              first recv() says the file gone */
	struct trace_asc asc;
	struct trace_trc trc;
	struct trace_blf *blf;
	/* timeline */
	bool have_first;
	bool first_pass;
	int64_t first_ts, last_ts; /* trace stamps of the first pass */
	uint64_t first_pass_frames;
	uint64_t pass_frames;
	int64_t loop_off;
	int64_t last_t_ns;         /* last delivered frame, stamps events at speed 0 */
	struct acq_pace pace;      /* trace_speed > 0 */
	bool off_known;
	int64_t off;               /* realtime - monotonic the due frames are stamped with */
	struct acq_item pending;
	bool have_pending;
	/* a gzip-compressed file (.asc.gz): told by its magic at the first
	   fill, inflated into buf; zin holds the compressed bytes */
	bool gz;
	bool gz_eof;               /* no more compressed bytes */
	bool gz_bad;               /* damaged gzip data: the rest is lost */
	bool gz_said;
	bool gz_member_end;        /* the last inflate ended a member */
	unsigned char *zin;
	z_stream zs;
	uint64_t chan_frames[BUS_TRACE_CHANNELS]; /* first pass, before choosing */
};



static ssize_t trace_read(struct trace *tr, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(tr->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	tr->file_pos += n;
	return n;
}

/* Inflate into buf[fill..]: concatenated members (gzip -c a b) go on;
   damaged data ends the file, said once as a damaged part. */
static int trace_inflate(struct trace *tr)
{
	size_t room = TRACE_BUF_SIZE - tr->fill;

	tr->zs.next_out = (unsigned char *)tr->buf + tr->fill;
	tr->zs.avail_out = (uInt)room;
	while (tr->zs.avail_out == room && !tr->eof) {
		int z;

		if (tr->zs.avail_in == 0 && !tr->gz_eof) {
			ssize_t n = trace_read(tr, tr->zin, TRACE_BUF_SIZE);

			if (n < 0)
				return (int)n;
			tr->gz_eof = n == 0;
			tr->zs.next_in = tr->zin;
			tr->zs.avail_in = (uInt)n;
		}
		if (tr->zs.avail_in == 0) {
			/* the end of the file: whole if it ends with a member */
			tr->gz_bad = !tr->gz_member_end;
			tr->eof = true;
			break;
		}
		z = inflate(&tr->zs, Z_NO_FLUSH);
		tr->gz_member_end = z == Z_STREAM_END;
		if (z == Z_STREAM_END) {
			inflateReset(&tr->zs); /* a next member (gzip -c a b) may follow */
		} else if (z != Z_OK && z != Z_BUF_ERROR) {
			tr->gz_bad = true; /* damaged: the rest is lost */
			tr->eof = true;
		}
	}
	tr->fill = TRACE_BUF_SIZE - tr->zs.avail_out;
	return 0;
}

static int trace_fill(struct trace *tr)
{
	ssize_t n;

	if (tr->pos > 0) {
		memmove(tr->buf, tr->buf + tr->pos, tr->fill - tr->pos);
		tr->fill -= tr->pos;
		tr->pos = 0;
	}
	if (tr->gz)
		return trace_inflate(tr);
	n = trace_read(tr, tr->buf + tr->fill, TRACE_BUF_SIZE - tr->fill);
	if (n < 0)
		return (int)n;
	if (n == 0)
		tr->eof = true;
	tr->fill += (size_t)n;
	return 0;
}

/* The gzip magic at the start: what was read becomes the compressed
   input, and buf is refilled with what it inflates to.  Allocates (at
   open, like the BLF reader). */
static int trace_gz_start(struct trace *tr)
{
	if (tr->fill < 2 || (unsigned char)tr->buf[0] != 0x1f || (unsigned char)tr->buf[1] != 0x8b || tr->gz)
		return 0;
	tr->zin = malloc(TRACE_BUF_SIZE);
	if (!tr->zin)
		return -ENOMEM;
	memcpy(tr->zin, tr->buf, tr->fill);
	tr->zs = (z_stream){ .next_in = tr->zin, .avail_in = (uInt)tr->fill };
	if (inflateInit2(&tr->zs, 16 + MAX_WBITS) != Z_OK) {
		free(tr->zin);
		tr->zin = NULL;
		return -ENOMEM;
	}
	tr->gz = true;
	tr->gz_eof = tr->eof;
	tr->eof = false;
	tr->pos = tr->fill = 0;
	return trace_inflate(tr);
}

/* Next line (without the newline) in ret_line and ret_len; see enum line_kind. */
static int trace_next_line(struct trace *tr, const char **ret_line, size_t *ret_len)
{
	for (;;) {
		char *s = tr->buf + tr->pos;
		char *nl = memchr(s, '\n', tr->fill - tr->pos);
		int r;

		if (nl) {
			size_t len = (size_t)(nl - s);
			bool was_skipping = tr->skipping;

			tr->pos += len + 1;
			tr->skipping = false;
			if (was_skipping)
				continue; /* tail of an overlong line, already reported */
			tr->lineno++;
			*ret_line = s;
			*ret_len = len;
			return LINE_OK;
		}
		if (tr->eof) {
			size_t len = tr->fill - tr->pos;

			tr->pos = tr->fill;
			/* a gzip file cut short: its last line is cut too, and
			   the damage is said instead (trace_fetch) */
			if (len == 0 || tr->skipping || tr->gz_bad)
				return LINE_EOF;
			tr->lineno++;
			*ret_line = s;
			*ret_len = len;
			return LINE_OK;
		}
		if (tr->pos == 0 && tr->fill == TRACE_BUF_SIZE) {
			/* a full buffer without newline: report once, drop the rest */
			tr->pos = tr->fill = 0;
			if (!tr->skipping) {
				tr->skipping = true;
				tr->lineno++;
				return LINE_OVERLONG;
			}
		}
		r = trace_fill(tr);
		if (r < 0)
			return r;
	}
}

/* At EOF: start the next pass, shifted so time keeps increasing. */
static int trace_rewind(bus_dev_t *dev, struct trace *tr)
{
	int64_t span, gap;

	if (!dev->cfg.can.trace_loop || tr->pass_frames == 0)
		return -ENODATA;
	if (lseek(tr->fd, 0, SEEK_SET) < 0)
		return -errno;
	tr->file_pos = 0;
	if (tr->first_pass) {
		tr->first_pass = false;
		tr->first_pass_frames = tr->pass_frames;
	}
	span = tr->last_ts - tr->first_ts;
	if (span < 0)
		span = 0;
	gap = tr->first_pass_frames > 1 ? span / (int64_t)(tr->first_pass_frames - 1) : NS_PER_SEC;
	tr->loop_off += span + (gap > 0 ? gap : 1);
	tr->pos = tr->fill = 0;
	tr->eof = tr->skipping = false;
	if (tr->gz) {
		inflateReset(&tr->zs);
		tr->zs.avail_in = 0;
		tr->gz_eof = tr->gz_bad = tr->gz_said = tr->gz_member_end = false;
	}
	tr->lineno = 0;
	tr->pass_frames = 0;
	trace_asc_init(&tr->asc);
	trace_trc_init(&tr->trc);
	if (tr->blf)
		trace_blf_reset(tr->blf);
	return 0;
}

/* where: the line number, or a BLF file offset */
static void trace_bad_at(bus_dev_t *dev, struct trace *tr, uint64_t where, struct acq_item *ret_item)
{
	uint64_t count = bus_stat_add(&dev->stats.bad_input, 1);

	if (!tr->first_bad) {
		tr->first_bad = (unsigned long)where + (tr->fmt == TRACE_BLF);
		if (tr->blf)
			snprintf(tr->first_why, sizeof(tr->first_why), "%s", trace_blf_why(tr->blf, NULL));
	}
	*ret_item = (struct acq_item){
		.t_ns = dev->cfg.can.trace_speed > 0 ? basic_now_ns(CLOCK_REALTIME) : tr->last_t_ns,
		.kind = ACQ_ITEM_EVENT,
		.bus = dev->cfg.index,
		.event = { .code = ACQ_EV_CAN_BAD_LINE, .detail = (uint32_t)where, .arg = (int64_t)count },
	};
}

static void trace_bad_line(bus_dev_t *dev, struct trace *tr, struct acq_item *ret_item)
{
	trace_bad_at(dev, tr, tr->lineno, ret_item);
}

static void trace_note_frame(bus_dev_t *dev, struct trace *tr, struct acq_item *it)
{
	int64_t ts = it->t_ns;

	if (tr->first_pass) {
		if (!tr->have_first) {
			tr->have_first = true;
			tr->first_ts = ts;
		}
		tr->last_ts = ts;
	}
	tr->pass_frames++;
	it->t_ns = ts + tr->loop_off;
	it->bus = dev->cfg.index;
	tr->last_t_ns = it->t_ns;
	bus_stat_add(&dev->stats.rx_frames, 1);
	if (it->can.flags & ACQ_CAN_ERR)
		bus_stat_add(&dev->stats.rx_errors, 1);
}

/* BLF bytes: what the detection buffered first, then the file */
static ssize_t trace_blf_read(void *ctx, void *buf, size_t len)
{
	struct trace *tr = ctx;
	ssize_t n;

	if (tr->pos < tr->fill) {
		size_t k = tr->fill - tr->pos < len ? tr->fill - tr->pos : len;

		memcpy(buf, tr->buf + tr->pos, k);
		tr->pos += k;
		return (ssize_t)k;
	}
	n = trace_read(tr, buf, len);
	return n;
}

/* a == b for the short names of interfaces: inlined, where the call to
   strcmp cost the reading thread almost as much as parsing the line */
static inline bool same_name(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Keep the frame? (interface of a candump log, channel of the others, filters) */
static bool trace_wanted(const bus_dev_t *dev, struct trace *tr, const char *ifname, unsigned chan,
                         const struct acq_can *can)
{
	if (tr->first_pass)
		tr->chan_frames[tr->fmt == TRACE_CANDUMP || chan >= BUS_TRACE_CHANNELS ? 0 : chan]++;
	if (tr->fmt == TRACE_CANDUMP) {
		if (dev->cfg.can.ifname[0] && !same_name(ifname, dev->cfg.can.ifname))
			return false;
	} else if (dev->cfg.can.trace_channel && chan != dev->cfg.can.trace_channel) {
		return false;
	}
	return bus_can_filter_pass(&dev->cfg.can, can);
}

static int trace_fetch_blf(bus_dev_t *dev, struct trace *tr, struct acq_item *ret_item)
{
	unsigned chan = 0;

	for (;;) {
		int r = trace_blf_next(tr->blf, trace_blf_read, tr, ret_item, &chan);
		uint64_t off;

		if (r == -EBADMSG) {
			trace_blf_why(tr->blf, &off);
			trace_bad_at(dev, tr, off, ret_item);
			return 0;
		}
		if (r < 0)
			return r;
		if (r == 0) {
			r = trace_rewind(dev, tr);
			if (r < 0)
				return r;
			continue;
		}
		if (!trace_wanted(dev, tr, "", chan, &ret_item->can))
			continue;
		trace_note_frame(dev, tr, ret_item);
		return 0;
	}
}

/* One line of a text format: TRACE_FRAME, TRACE_SKIP or -EBADMSG. */
static int trace_parse_line(struct trace *tr, const char *line, size_t len, struct acq_item *ret_item,
                            char *ifname, unsigned *ret_chan)
{
	switch (tr->fmt) {
	case TRACE_ASC:
		return trace_asc_line(&tr->asc, line, len, ret_item, ret_chan);
	case TRACE_TRC:
		return trace_trc_line(&tr->trc, line, len, ret_item, ret_chan);
	default:
		if (trace_candump_blank(line, len))
			return TRACE_SKIP;
		/* in a file a NUL byte is garbage, not the end of the line: the
		   bytes parser refuses it (no scan for one first) */
		if (trace_candump_parse_bytes(line, len, ret_item, ifname, TRACE_CANDUMP_LINE_MAX) < 0)
			return -EBADMSG;
		return TRACE_FRAME;
	}
}

/* Next item from the file: a frame or a bad-line event; -ENODATA at the end. */
static int trace_fetch(bus_dev_t *dev, struct trace *tr, struct acq_item *ret_item)
{
	/* only the first byte set: zeroing all of it cost more per frame
	   than the parse (a candump line writes the name it holds) */
	char ifname[TRACE_CANDUMP_LINE_MAX];
	const char *line;
	size_t len;

	ifname[0] = '\0';
	if (tr->fmt == TRACE_BLF)
		return trace_fetch_blf(dev, tr, ret_item);
	for (;;) {
		unsigned chan = 1;
		int r = trace_next_line(tr, &line, &len);

		if (r < 0)
			return r;
		if (r == LINE_EOF && tr->gz_bad && !tr->gz_said) {
			tr->gz_said = true; /* the line after the last one read */
			if (!tr->first_bad)
				snprintf(tr->first_why, sizeof(tr->first_why), "damaged gzip data: the rest of the file is lost");
			trace_bad_at(dev, tr, tr->lineno + 1, ret_item);
			return 0;
		}
		if (r == LINE_EOF) {
			r = trace_rewind(dev, tr);
			if (r < 0)
				return r;
			continue;
		}
		if (r == LINE_OVERLONG) {
			trace_bad_line(dev, tr, ret_item);
			return 0;
		}
		/* another bus's line: not parsed (it keeps only its own) */
		if (tr->fmt == TRACE_CANDUMP && dev->cfg.can.ifname[0] &&
		    trace_candump_other_iface(line, len, dev->cfg.can.ifname))
			continue;
		r = trace_parse_line(tr, line, len, ret_item, ifname, &chan);
		if (r < 0) {
			trace_bad_line(dev, tr, ret_item);
			return 0;
		}
		if (r != TRACE_FRAME || !trace_wanted(dev, tr, ifname, chan, &ret_item->can))
			continue;
		trace_note_frame(dev, tr, ret_item);
		return 0;
	}
}

/*
 * Wait until the pending frame is due (acq-pace.h: the one pacing loop of
 * every recorded source).  Returns 1 when due, 0 if it is not due before
 * deadline_ns (or at all when nowait).  A due frame is stamped with the
 * instant it was due on CLOCK_REALTIME (*off: realtime - monotonic, read
 * once per recv): a paced trace plays a live bus, whose kernel stamps the
 * frame when it arrives, also when the reader takes a burst of them later
 * (acq_source's coalescing).  *now caches CLOCK_MONOTONIC, so the frames
 * already due in a burst cost no clock read each.
 */
static int trace_pace(struct trace *tr, int64_t deadline_ns, bool nowait, int64_t *now, int64_t off)
{
	int64_t due = acq_pace_due(&tr->pace, tr->pending.t_ns);

	if (due > *now) {
		*now = basic_now_ns(CLOCK_MONOTONIC);
		if (due > *now && !acq_pace_wait(&tr->pace, tr->pending.t_ns, nowait ? 0 : deadline_ns, NULL))
			return 0;
	}
	tr->pending.t_ns = due + off;
	return 1;
}

static int trace_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct trace *tr = dev->priv;
	int64_t now, real, off, deadline;
	size_t n = 0;

	/* One offset for every burst until the clocks really move apart (a
	   step, or slewing that adds up to TRACE_OFFSET_SLACK_NS): read anew
	   per burst, an interrupted read (load, sanitizers) moved it by more
	   than the frames' spacing at speed, and frames came out of order. */
	basic_clock_pair(&real, &now);
	off = real - now;
	if (!tr->off_known || off - tr->off > TRACE_OFFSET_SLACK_NS || tr->off - off > TRACE_OFFSET_SLACK_NS) {
		tr->off = off;
		tr->off_known = true;
	}
	off = tr->off;
	deadline = timeout_ms < 0 ? -1 : now + (int64_t)timeout_ms * 1000000;

	if (tr->fd < 0)
		return bus_gone(dev, dev->gone_cause); /* released, not reopened */
	if (tr->detect_err) {
		int e = tr->detect_err;

		tr->detect_err = 0;
		return bus_gone(dev, e);
	}
	/* Unpaced (a replay as fast as it goes): each item parsed straight
	   into the caller's array, not into pending and copied from there. */
	while (dev->cfg.can.trace_speed <= 0 && !tr->have_pending && n < max) {
		int r = trace_fetch(dev, tr, &items[n]);

		if (r < 0 && n > 0)
			return (int)n;
		if (r < 0)
			return r == -ENODATA ? r : bus_gone(dev, r);
		n++;
	}
	while (n < max) {
		if (!tr->have_pending) {
			int r = trace_fetch(dev, tr, &tr->pending);

			/* A read error (not EOF) is the file gone (bus.h); what
			   is buffered stays for after the reopen. */
			if (r < 0 && n > 0)
				return (int)n;
			if (r < 0)
				return r == -ENODATA ? r : bus_gone(dev, r);
			tr->have_pending = true;
		}
		/* events are not paced: they have no trace time of their own */
		if (dev->cfg.can.trace_speed > 0 && tr->pending.kind == ACQ_ITEM_CAN &&
		    trace_pace(tr, deadline, n > 0, &now, off) == 0)
			break;
		items[n++] = tr->pending;
		tr->have_pending = false;
	}
	return (int)n;
}

static void trace_release(bus_dev_t *dev)
{
	struct trace *tr = dev->priv;

	if (tr->fd >= 0)
		close(tr->fd);
	tr->fd = -1;
}

static void trace_close(bus_dev_t *dev)
{
	struct trace *tr = dev->priv;

	if (!tr)
		return;
	trace_release(dev);
	trace_blf_free(tr->blf);
	if (tr->gz)
		inflateEnd(&tr->zs);
	free(tr->zin);
	free(tr->buf);
	free(tr);
	dev->priv = NULL;
}

/* Open the file and go to where reading stopped (0 at the first open). */
static int trace_attach(bus_dev_t *dev)
{
	struct trace *tr = dev->priv;
	struct stat st;
	int r = 0;

	tr->fd = open(dev->cfg.can.device, O_RDONLY | O_CLOEXEC);
	if (tr->fd < 0)
		return -errno;
	/* A directory opens but never reads: say so now, not at every read. */
	if (fstat(tr->fd, &st) < 0)
		r = -errno;
	else if (S_ISDIR(st.st_mode))
		r = -EISDIR;
	else if (tr->file_pos && lseek(tr->fd, tr->file_pos, SEEK_SET) < 0 && errno != ESPIPE)
		r = -errno; /* ESPIPE: a pipe has no place to go back to */
	if (r < 0)
		trace_release(dev);
	return r;
}

/*
 * The format, from what the first reads bring (until a line tells, up to
 * the whole buffer):
 * the bytes stay in the buffer for the reader, so a pipe works too.  A
 * file absent at open (bus_open_absent) is told when it comes back (and a
 * BLF reader then allocated: once, at that reopen).
 */
static int trace_detect(struct trace *tr)
{
	int r;

	/* read on only while nothing tells: a pipe's writer may be slow */
	for (;;) {
		if (!tr->gz && tr->fill >= 2 && (r = trace_gz_start(tr)) < 0)
			return r;
		tr->fmt = trace_format_detect(tr->buf, tr->fill);
		if ((tr->fmt != TRACE_UNKNOWN && tr->fmt != TRACE_EMPTY) || tr->eof || tr->fill == TRACE_BUF_SIZE)
			break;
		if ((r = trace_fill(tr)) < 0)
			return r;
	}
	tr->detected = true;
	trace_asc_init(&tr->asc);
	trace_trc_init(&tr->trc);
	/* a packet capture holds no CAN frame (trace/pcap.h reads it) */
	if (tr->fmt == TRACE_UNKNOWN || tr->fmt == TRACE_PCAP || tr->fmt == TRACE_PCAPNG)
		return -EMEDIUMTYPE;
	if (tr->fmt == TRACE_BLF)
		return trace_blf_new(&tr->blf);
	return 0;
}

/* Detection at open or reopen: a read error (EIO) is the file gone, said
   by the first recv() as for any read, while the open itself succeeds. */
static int trace_detect_at_open(bus_dev_t *dev, struct trace *tr)
{
	int r = trace_detect(tr);

	if (r < 0 && r != -EMEDIUMTYPE && r != -ENOMEM) {
		tr->detect_err = r;
		return 0;
	}
	if (r < 0)
		trace_release(dev);
	return r;
}

/* What is buffered stays: the frames go on from where the error hit them.
   A paced trace starts its clock again, as a live bus would not make up
   for the time it was away. */
static int trace_reopen(bus_dev_t *dev)
{
	struct trace *tr = dev->priv;
	int r;

	trace_release(dev);
	acq_pace_restart(&tr->pace);
	r = trace_attach(dev);
	if (r == 0 && !tr->detected)
		r = trace_detect_at_open(dev, tr);
	return r;
}

static int trace_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_can_cfg *can = &cfg->can;
	struct trace *tr;
	int r;

	if (!can->device[0] || !isfinite(can->trace_speed) || can->trace_speed < 0 ||
	    !memchr(can->device, '\0', sizeof(can->device)) || !memchr(can->ifname, '\0', sizeof(can->ifname)))
		return -EINVAL;
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		return -ENOMEM;
	tr->first_pass = true;
	tr->fd = -1;
	if (can->trace_speed > 0)
		acq_pace_init(&tr->pace, can->trace_speed); /* finite and > 0: checked above */
	tr->buf = malloc(TRACE_BUF_SIZE);
	dev->priv = tr;
	r = tr->buf ? trace_attach(dev) : -ENOMEM;
	if (r == 0)
		r = trace_detect_at_open(dev, tr);
	else if (r != -ENOMEM)
		r = bus_open_absent(dev, r);
	if (r < 0)
		trace_close(dev);
	return r;
}

int bus_can_trace_first_bad(const bus_dev_t *dev, char *buf, size_t len)
{
	const struct trace *tr;

	if (!dev || dev->ops != &bus_can_trace_ops || !dev->priv || !buf || len == 0)
		return -EINVAL;
	tr = dev->priv;
	if (!tr->first_bad)
		return -ENOENT;
	if (tr->fmt == TRACE_BLF)
		snprintf(buf, len, "%s: offset %lu: %s", dev->cfg.can.device, tr->first_bad - 1, tr->first_why);
	else if (tr->first_why[0])
		snprintf(buf, len, "%s:%lu: %s", dev->cfg.can.device, tr->first_bad, tr->first_why);
	else
		snprintf(buf, len, "%s:%lu: malformed %s line", dev->cfg.can.device, tr->first_bad,
		         trace_format_name(tr->fmt == TRACE_EMPTY ? TRACE_CANDUMP : tr->fmt));
	return 0;
}

int bus_can_trace_channels(const bus_dev_t *dev, uint64_t *counts, size_t n)
{
	const struct trace *tr;

	if (!dev || dev->ops != &bus_can_trace_ops || !dev->priv || !counts)
		return -EINVAL;
	tr = dev->priv;
	for (size_t c = 0; c < n; c++)
		counts[c] = c < BUS_TRACE_CHANNELS ? tr->chan_frames[c] : 0;
	return 0;
}

int bus_can_trace_skipped(const bus_dev_t *dev, char *buf, size_t len)
{
	const struct trace *tr;
	struct trace_blf_skip sk;
	size_t at = 0;

	if (!dev || dev->ops != &bus_can_trace_ops || !dev->priv || !buf || len == 0)
		return -EINVAL;
	tr = dev->priv;
	buf[0] = '\0';
	for (size_t i = 0; tr->blf && trace_blf_skipped(tr->blf, i, &sk) == 0 && at < len; i++) {
		const char *name = trace_blf_type_name(sk.type);
		int n;

		if (sk.other)
			n = snprintf(buf + at, len - at, "%s%" PRIu64 " of other types", i ? ", " : "", sk.count);
		else
			n = snprintf(buf + at, len - at, "%s%" PRIu64 " of type %" PRIu32 "%s%s%s", i ? ", " : "",
			             sk.count, sk.type, name ? " (" : "", name ? name : "", name ? ")" : "");
		if (n < 0)
			return -EINVAL;
		at += (size_t)n;
	}
	return buf[0] ? 0 : -ENOENT;
}

const struct bus_ops bus_can_trace_ops = {
	.name = "can-trace",
	.open = trace_open,
	.recv = trace_recv,
	.close = trace_close,
	.release = trace_release,
	.reopen = trace_reopen,
};
