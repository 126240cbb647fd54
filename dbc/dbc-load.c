/* SPDX-License-Identifier: MIT */
/*
 * dbc.c - load a DBC (parsing is in dbc-parse.c), precompile every signal
 * into a struct dbc_op, and decode frames table-driven.
 *
 * Decode is: one table lookup for the id (a direct 2048-entry table for
 * standard ids, binary search for extended ones), two 64-bit loads of the
 * first 8 payload bytes (little- and big-endian), then per signal a shift
 * and a mask.  Signals beyond byte 8 (CAN FD) take a byte loop.
 * Multiplexors are ordered before the signals they select, so one pass
 * knows whether each multiplexed signal is present.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dbc-private.h"
#include "j1939.h"

#define DBC_FILE_MAX (64u << 20)

/* What a path is when it is not a regular file, for messages. */
static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "is a directory" : S_ISFIFO(m) ? "is a FIFO, not a regular file"
	     : S_ISCHR(m) ? "is a character device, not a regular file"
	     : S_ISBLK(m) ? "is a block device, not a regular file"
	     : S_ISSOCK(m) ? "is a socket, not a regular file" : "is not a regular file";
}

/*
 * Read a whole regular file.  Opened with O_NONBLOCK so a FIFO (or a tty)
 * given as a DBC is refused at once instead of blocking `run` and `check`
 * until something writes to it.  On error, *ret_why says what is wrong.
 */
static int read_file(const char *path, char **ret_text, size_t *ret_len, const char **ret_why)
{
	char *text = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	ssize_t n;
	int fd, r = 0;

	*ret_why = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		*ret_why = file_kind(st.st_mode);
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	do {
		if (len + 4096 > cap) {
			char *p;

			cap = cap ? cap * 2 : 65536;
			if (cap > DBC_FILE_MAX) {
				r = -EFBIG;
				*ret_why = "larger than 64 MiB";
				break;
			}
			p = realloc(text, cap);
			if (!p) {
				r = -ENOMEM;
				break;
			}
			text = p;
		}
		n = read(fd, text + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			r = -errno;
		else
			len += (size_t)n;
	} while (r == 0 && n > 0);
	close(fd);
	if (r < 0) {
		free(text);
		return r;
	}
	*ret_text = text;
	*ret_len = len;
	return 0;
}

__attribute__((format(printf, 5, 6)))
static int lerr(char *errbuf, size_t errlen, const char *path, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (errbuf && errlen) {
		n = snprintf(errbuf, errlen, "%s:%u: ", path, line);
		if (n >= 0 && (size_t)n < errlen) {
			va_start(ap, fmt);
			vsnprintf(errbuf + n, errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EBADMSG;
}

int dbc_warn(struct bus_dbc *dbc, const char *path, unsigned line, const char *action, char *errbuf,
             size_t errlen, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (dbc->flags & BUS_DBC_STRICT)
		return lerr(errbuf, errlen, path, line, "%s", text);
	if (dbc->nwarnings == dbc->capwarnings) {
		unsigned ncap = dbc->capwarnings ? dbc->capwarnings * 2 : 16;
		struct dbc_warning *w = realloc(dbc->warnings, ncap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		dbc->warnings = w;
		dbc->capwarnings = ncap;
	}
	n = asprintf(&dbc->warnings[dbc->nwarnings].text, "%s:%u: %s; %s", path, line, text, action);
	if (n < 0)
		return -ENOMEM;
	dbc->warnings[dbc->nwarnings].line = line;
	dbc->warnings[dbc->nwarnings].seq = dbc->nwarnings;
	dbc->nwarnings++;
	return 0;
}

/* Motorola: big-endian bit index (0 = MSB of byte 0) of the signal's MSB. */
static unsigned be_msb(const struct dbc_sig *s)
{
	return (s->start / 8) * 8 + (7 - s->start % 8);
}

/* Place the signal in the payload; returns the bytes the frame must have. */
static unsigned compile_layout(const struct dbc_sig *s, struct dbc_op *op)
{
	unsigned last_bit, first_bit;

	op->size = (uint8_t)s->size;
	op->mask = s->size == 64 ? UINT64_MAX : (UINT64_C(1) << s->size) - 1;
	if (!s->motorola) {
		first_bit = s->start;
		last_bit = s->start + s->size - 1;
		op->kind = last_bit < 64 ? DBC_OP_LE : DBC_OP_LE_SLOW;
		op->shift = (uint8_t)(op->kind == DBC_OP_LE ? first_bit : first_bit % 8);
		op->first = (uint8_t)(first_bit / 8);
		op->nbytes = (uint8_t)(last_bit / 8 - first_bit / 8 + 1);
		return last_bit / 8 + 1;
	}
	first_bit = be_msb(s);
	last_bit = first_bit + s->size - 1; /* the LSB, big-endian numbering */
	op->kind = last_bit < 64 ? DBC_OP_BE : DBC_OP_BE_SLOW;
	op->shift = (uint8_t)(op->kind == DBC_OP_BE ? 63 - last_bit : 7 - last_bit % 8);
	op->first = (uint8_t)(first_bit / 8);
	op->nbytes = (uint8_t)(last_bit / 8 - first_bit / 8 + 1);
	return last_bit / 8 + 1;
}

static void compile_sig(struct bus_dbc *dbc, unsigned i, struct dbc_op *op)
{
	const struct dbc_sig *s = &dbc->sigs[i];

	op->need_len = (uint8_t)compile_layout(s, op); /* prune() dropped the signals that do not fit */
	op->valtype = (uint8_t)s->valtype;
	op->slow_value = s->valtype != DBC_INT || (!s->is_signed && s->size == 64);
	op->sext = (uint8_t)(s->is_signed ? 64 - s->size : 0);
	op->index = i;
	op->scale = s->scale;
	op->offset = s->offset;
	op->min = (s->min == 0 && s->max == 0) ? -INFINITY : s->min;
	op->max = (s->min == 0 && s->max == 0) ? INFINITY : s->max;
	op->mux_slot = -1;
	op->parent_slot = -1;
	if (s->parent >= 0) {
		op->ranges = s->ranges;
		op->nranges = (uint8_t)s->nranges;
	}
}

/* Each multiplexor gets a slot for its raw value; dependents point to their parent's. */
static int assign_slots(const struct bus_dbc *dbc, struct dbc_msg *m, const int *parent, const char *path,
                        char *errbuf, size_t errlen)
{
	unsigned nslots = 0;

	for (unsigned i = 0; i < m->nsig; i++) {
		struct dbc_op *op = &m->ops[i];
		bool selects = false;

		/* only a multiplexor some signal hangs from needs its value kept */
		for (unsigned j = 0; j < m->nsig && !selects; j++)
			selects = parent[j] == (int)op->index;
		if (!selects)
			continue;
		if (nslots == DBC_MUX_SLOTS)
			return lerr(errbuf, errlen, path, m->line, "message %s has more than %d multiplexors",
			            m->name, DBC_MUX_SLOTS);
		op->mux_slot = (int8_t)nslots++;
	}
	for (unsigned i = 0; i < m->nsig; i++) {
		struct dbc_op *op = &m->ops[i];
		int p = parent[op->index - m->first];

		for (unsigned j = 0; p >= 0 && j < m->nsig; j++)
			if (m->ops[j].index == (unsigned)p)
				op->parent_slot = m->ops[j].mux_slot;
	}
	return 0;
}

/*
 * Order the ops by multiplexing depth (stable, so file order otherwise):
 * a multiplexor is always decoded before the signals it selects.
 * parent[] holds absolute signal indices, -1 for none.
 */
static int order_ops(struct bus_dbc *dbc, struct dbc_msg *m, struct dbc_op *ops, const int *parent,
                     const char *path, char *errbuf, size_t errlen)
{
	unsigned *depth = calloc(m->nsig ? m->nsig : 1, sizeof(*depth));
	unsigned maxdepth = 0, k = 0;
	int r = 0;

	if (!depth)
		return -ENOMEM;
	for (unsigned i = 0; i < m->nsig && r == 0; i++) {
		int p = parent[i];

		while (p >= 0 && depth[i] <= m->nsig) {
			depth[i]++;
			p = parent[p - (int)m->first];
		}
		if (depth[i] > m->nsig)
			r = lerr(errbuf, errlen, path, dbc->sigs[m->first + i].line, "multiplexor cycle in message %s", m->name);
		if (depth[i] > maxdepth)
			maxdepth = depth[i];
	}
	m->ops = r == 0 ? calloc(m->nsig ? m->nsig : 1, sizeof(*m->ops)) : NULL;
	if (r == 0 && !m->ops)
		r = -ENOMEM;
	for (unsigned d = 0; r == 0 && d <= maxdepth; d++)
		for (unsigned i = 0; i < m->nsig; i++)
			if (depth[i] == d)
				m->ops[k++] = ops[i];
	free(depth);
	return r == 0 ? assign_slots(dbc, m, parent, path, errbuf, errlen) : r;
}

static int compile_msg(struct bus_dbc *dbc, struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
{
	struct dbc_op *ops = calloc(m->nsig ? m->nsig : 1, sizeof(*ops));
	int *parent = calloc(m->nsig ? m->nsig : 1, sizeof(*parent));
	int r = (ops && parent) ? 0 : -ENOMEM;

	for (unsigned i = 0; r == 0 && i < m->nsig; i++) {
		struct dbc_sig *s = &dbc->sigs[m->first + i];

		if (s->is_mux && s->valtype != DBC_INT)
			r = lerr(errbuf, errlen, path, s->line, "multiplexor '%s' must be an integer", s->name);
		compile_sig(dbc, m->first + i, &ops[i]);
		parent[i] = s->parent;
	}
	if (r == 0)
		r = order_ops(dbc, m, ops, parent, path, errbuf, errlen);
	free(ops);
	free(parent);
	return r;
}

static bool sig_fits(const struct dbc_sig *s, unsigned dlc)
{
	struct dbc_op op;
	unsigned need = compile_layout(s, &op);

	return need <= dlc && !(s->motorola && be_msb(s) + s->size > dlc * 8);
}

/* The signal of m named name, -1 if none. */
static int sig_named(const struct bus_dbc *dbc, const struct dbc_msg *m, const char *name)
{
	for (unsigned i = m->first; i < m->first + m->nsig; i++)
		if (strcmp(dbc->sigs[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Let value v select s too, unless a range already does. */
static int add_value(struct dbc_sig *s, uint64_t v)
{
	struct dbc_range *rg;

	for (unsigned i = 0; i < s->nranges; i++)
		if (v >= s->ranges[i].lo && v <= s->ranges[i].hi)
			return 0;
	if (s->nranges >= 255) /* what struct dbc_op counts; SG_MUL_VAL_ stops there too */
		return -E2BIG;
	rg = realloc(s->ranges, (s->nranges + 1) * sizeof(*rg));
	if (!rg)
		return -ENOMEM;
	s->ranges = rg;
	rg[s->nranges++] = (struct dbc_range){ v, v };
	return 0;
}

/* The multiplexor of marked signal s when the message has none or several
   (nmux) marked M: only SG_MUL_VAL_ can name it. */
static int resolve_named(struct bus_dbc *dbc, const struct dbc_msg *m, struct dbc_sig *s, unsigned nmux,
                         const char *path, char *errbuf, size_t errlen)
{
	char action[160];
	int p;

	if (!s->mux_parent) {
		if (!s->muxed)
			return 0; /* "M": a multiplexor at the top */
		if (!nmux)
			return dbc_warn(dbc, path, s->line, s->is_mux ? "read as a multiplexor at the top" : "read as a plain signal",
			                errbuf, errlen, "signal '%s': m%llu but message %s has no multiplexor (M)", s->name,
			                (unsigned long long)s->mux_val, m->name);
		return dbc_warn(dbc, path, s->line, s->is_mux ? "read as a multiplexor at the top" : "read as a plain signal",
		                errbuf, errlen, "signal '%s': m%llu but message %s has %u multiplexors (M) and no "
		                "SG_MUL_VAL_ names the one of this signal", s->name, (unsigned long long)s->mux_val, m->name,
		                nmux);
	}
	p = sig_named(dbc, m, s->mux_parent);
	if (p < 0 || !dbc->sigs[p].is_mux) {
		/* cantools loads it and never decodes the signal: neither do we */
		s->skip = true;
		snprintf(action, sizeof(action), "signal '%.100s' skipped", s->name);
		return dbc_warn(dbc, path, s->mul_line, action, errbuf, errlen, "'%s' is not a multiplexor of message %s%s",
		                s->mux_parent, m->name, p < 0 ? " (no such signal)" : " (no M indicator)");
	}
	s->parent = p;
	return 0;
}

/*
 * Which multiplexor selects each signal of m and by which raw values, as
 * cantools reads a DBC (formats/dbc.py, Message._create_codec):
 * - a signal with no indicator (or a bare "m") is decoded in every frame,
 *   whatever SG_MUL_VAL_ says of it;
 * - when exactly one signal is marked "M" or "mNM", every other marked
 *   signal hangs from it, selected by its N and by the ranges SG_MUL_VAL_
 *   gives it under that multiplexor;
 * - with none or several, only SG_MUL_VAL_ names a marked signal's
 *   multiplexor (which must be marked M) and its values; one it does not
 *   name is decoded in every frame, its N unused.
 * What a writer may not have meant is warned about.  Then signals in a
 * multiplexor cycle are skipped.
 */
static int resolve_msg(struct bus_dbc *dbc, const struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
{
	unsigned nmux = 0;
	int top = -1, r = 0;

	for (unsigned i = m->first; i < m->first + m->nsig; i++) {
		dbc->sigs[i].parent = -1;
		if (dbc->sigs[i].is_mux) {
			nmux++;
			top = (int)i;
		}
	}
	for (unsigned i = m->first; r == 0 && i < m->first + m->nsig; i++) {
		struct dbc_sig *s = &dbc->sigs[i];

		if (!s->marked) {
			if (s->mux_parent) {
				r = dbc_warn(dbc, path, s->mul_line, "SG_MUL_VAL_ ignored, decoded in every frame", errbuf, errlen,
				             "SG_MUL_VAL_ for signal '%s', which has no multiplexer indicator (mN)", s->name);
				s->nranges = 0;
			}
		} else if (nmux != 1) {
			r = resolve_named(dbc, m, s, nmux, path, errbuf, errlen);
		} else if ((int)i != top) {
			if (s->mux_parent && strcmp(s->mux_parent, dbc->sigs[top].name) != 0) {
				r = dbc_warn(dbc, path, s->mul_line, "SG_MUL_VAL_ ignored", errbuf, errlen,
				             "SG_MUL_VAL_: '%s' is not the multiplexor of message %s (its only M is '%s')",
				             s->mux_parent, m->name, dbc->sigs[top].name);
				s->nranges = 0;
			}
			s->parent = top;
			if (r == 0 && s->muxed && !s->is_mux && (r = add_value(s, s->mux_val)) == -E2BIG)
				r = lerr(errbuf, errlen, path, s->mul_line, "too many multiplexor ranges");
		}
	}
	for (unsigned i = m->first; r == 0 && i < m->first + m->nsig; i++) {
		struct dbc_sig *s = &dbc->sigs[i];
		unsigned depth = 0;

		for (int p = s->parent; p >= 0 && depth <= m->nsig; p = dbc->sigs[p].parent)
			depth++;
		if (depth > m->nsig && !s->skip) {
			s->skip = true;
			r = dbc_warn(dbc, path, s->line, "signal skipped", errbuf, errlen, "signal '%s': multiplexor cycle in message %s",
			             s->name, m->name);
		}
	}
	return r;
}

/*
 * Lenient: mark the signals that do not fit their message, then those
 * whose multiplexor was marked, each with a warning.  Strict: the first
 * is an error.
 */
static int prune_msg(struct bus_dbc *dbc, struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
{
	bool changed = true;
	int r = resolve_msg(dbc, m, path, errbuf, errlen);

	for (unsigned i = m->first; r == 0 && i < m->first + m->nsig; i++) {
		struct dbc_sig *s = &dbc->sigs[i];

		if (!s->skip && !sig_fits(s, m->dlc)) {
			s->skip = true;
			r = dbc_warn(dbc, path, s->line, "signal skipped", errbuf, errlen,
			             "signal '%s' does not fit in the %u bytes of message %s", s->name, m->dlc, m->name);
		}
	}
	while (r == 0 && changed) {
		changed = false;
		for (unsigned i = m->first; r == 0 && i < m->first + m->nsig; i++) {
			struct dbc_sig *s = &dbc->sigs[i];
			int p = s->parent;

			if (s->skip || p < 0 || !dbc->sigs[p].skip)
				continue;
			s->skip = changed = true;
			r = dbc_warn(dbc, path, s->line, "signal skipped", errbuf, errlen,
			             "signal '%s': its multiplexor '%s' was skipped", s->name, dbc->sigs[p].name);
		}
	}
	return r;
}

static void sig_free(struct dbc_sig *s)
{
	free(s->name);
	free(s->long_name);
	free(s->unit);
	free(s->mux_parent);
	free(s->ranges);
	for (unsigned j = 0; j < s->nlabels; j++)
		free(s->labels[j].label);
	free(s->labels);
}

/* Drop the marked signals; messages keep their signals contiguous, and
   parents (never dropped when a child is kept) follow their signal. */
static int compact(struct bus_dbc *dbc)
{
	unsigned *moved = calloc(dbc->nsigs ? dbc->nsigs : 1, sizeof(*moved));
	unsigned k = 0;

	if (!moved)
		return -ENOMEM;
	for (unsigned mi = 0; mi < dbc->nmsgs; mi++) {
		struct dbc_msg *m = &dbc->msgs[mi];
		unsigned first = k;

		for (unsigned i = m->first; i < m->first + m->nsig; i++) {
			moved[i] = k;
			if (dbc->sigs[i].skip)
				sig_free(&dbc->sigs[i]);
			else
				dbc->sigs[k++] = dbc->sigs[i];
		}
		m->first = first;
		m->nsig = k - first;
	}
	dbc->nsigs = k;
	for (unsigned i = 0; i < k; i++)
		if (dbc->sigs[i].parent >= 0)
			dbc->sigs[i].parent = (int)moved[dbc->sigs[i].parent];
	free(moved);
	return 0;
}

static int prune(struct bus_dbc *dbc, const char *path, char *errbuf, size_t errlen)
{
	int r = 0;

	for (unsigned i = 0; r == 0 && i < dbc->nmsgs; i++)
		r = prune_msg(dbc, &dbc->msgs[i], path, errbuf, errlen);
	return r == 0 ? compact(dbc) : r;
}

/* The long names replace the short ones once nothing refers by name any more. */
static void apply_long_names(struct bus_dbc *dbc)
{
	for (unsigned i = 0; i < dbc->nmsgs; i++)
		if (dbc->msgs[i].long_name) {
			free(dbc->msgs[i].name);
			dbc->msgs[i].name = dbc->msgs[i].long_name;
			dbc->msgs[i].long_name = NULL;
		}
	for (unsigned i = 0; i < dbc->nsigs; i++)
		if (dbc->sigs[i].long_name) {
			free(dbc->sigs[i].name);
			dbc->sigs[i].name = dbc->sigs[i].long_name;
			dbc->sigs[i].long_name = NULL;
		}
}

/* Line of byte offset off, for the encoding warning. */
static unsigned line_of(const char *text, size_t off)
{
	unsigned line = 1;

	for (size_t i = 0; i < off; i++)
		line += text[i] == '\n';
	return line;
}

/* Text that is not UTF-8 is CP1252 (Vector's tools): converted, with a note. */
static int to_utf8(struct bus_dbc *dbc, const char *name, const char **text, size_t *len, char **ret_buf,
                   char *errbuf, size_t errlen)
{
	size_t off = 0;
	int r;

	*ret_buf = NULL;
	off = dbc_utf8_invalid_at(*text, *len);
	if (off == *len)
		return 0;
	if (!(dbc->flags & BUS_DBC_STRICT) &&
	    (r = dbc_warn(dbc, name, line_of(*text, off), "read as CP1252", errbuf, errlen,
	                  "not UTF-8 (byte 0x%02x)", (unsigned char)(*text)[off])) < 0)
		return r;
	if ((r = dbc_cp1252_to_utf8(*text, *len, ret_buf, len)) < 0)
		return r;
	*text = *ret_buf;
	return 0;
}

/* Warnings in file order: the checks after parsing find theirs later. */
static int cmp_warning(const void *a, const void *b)
{
	const struct dbc_warning *x = a, *y = b;

	return x->line != y->line ? (x->line > y->line) - (x->line < y->line) : (x->seq > y->seq) - (x->seq < y->seq);
}

static int cmp_ext(const void *a, const void *b)
{
	const struct dbc_ext_key *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static int cmp_pgn(const void *a, const void *b)
{
	const struct dbc_ext_key *x = a, *y = b;

	return x->id != y->id ? (x->id > y->id) - (x->id < y->id) : (x->msg > y->msg) - (x->msg < y->msg);
}

static int cmp_label(const void *a, const void *b)
{
	const struct dbc_label *x = a, *y = b;

	return (x->value > y->value) - (x->value < y->value);
}

static int build_index(struct bus_dbc *dbc)
{
	unsigned next = 0, k;

	for (unsigned i = 0; i < dbc->nmsgs; i++)
		next += dbc->msgs[i].ext;
	dbc->ext_index = calloc(next ? next : 1, sizeof(*dbc->ext_index));
	if (!dbc->ext_index)
		return -ENOMEM;
	for (unsigned i = 0; i < dbc->nmsgs; i++) {
		if (dbc->msgs[i].ext)
			dbc->ext_index[dbc->next++] = (struct dbc_ext_key){ dbc->msgs[i].id, i };
		else
			dbc->std_index[dbc->msgs[i].id] = (uint16_t)(i + 1);
		if (dbc->msgs[i].nsig > dbc->decode_max)
			dbc->decode_max = dbc->msgs[i].nsig;
	}
	qsort(dbc->ext_index, dbc->next, sizeof(*dbc->ext_index), cmp_ext);
	dbc->pgn_index = calloc(next ? next : 1, sizeof(*dbc->pgn_index));
	if (!dbc->pgn_index)
		return -ENOMEM;
	for (unsigned i = 0; i < dbc->nmsgs; i++)
		if (dbc->msgs[i].ext)
			dbc->pgn_index[dbc->npgn++] = (struct dbc_ext_key){ bus_j1939_id_parse(dbc->msgs[i].id).pgn, i };
	/* stable for equal PGNs (file order), then one entry per PGN */
	qsort(dbc->pgn_index, dbc->npgn, sizeof(*dbc->pgn_index), cmp_pgn);
	k = 0;
	for (unsigned i = 0; i < dbc->npgn; i++)
		if (!k || dbc->pgn_index[k - 1].id != dbc->pgn_index[i].id)
			dbc->pgn_index[k++] = dbc->pgn_index[i];
	dbc->npgn = k;
	for (unsigned i = 0; i < dbc->nsigs; i++)
		if (dbc->sigs[i].nlabels)
			qsort(dbc->sigs[i].labels, dbc->sigs[i].nlabels, sizeof(struct dbc_label), cmp_label);
	return 0;
}

int bus_dbc_load_buffer_flags(const char *name, const char *text, size_t len, unsigned flags,
                              bus_dbc_t **ret_dbc, char *errbuf, size_t errlen)
{
	struct bus_dbc *dbc;
	char *converted = NULL;
	int r;

	if (!name || !ret_dbc || (!text && len) || (flags & ~BUS_DBC_STRICT))
		return -EINVAL;
	if (errbuf && errlen)
		errbuf[0] = '\0';
	dbc = calloc(1, sizeof(*dbc));
	if (!dbc)
		return -ENOMEM;
	dbc->flags = flags;
	text = text ? text : "";
	r = to_utf8(dbc, name, &text, &len, &converted, errbuf, errlen);
	if (r == 0)
		r = dbc_parse(dbc, name, text, len, errbuf, errlen);
	free(converted);
	/* cantools loads it; a bus with it logs raw frames only */
	if (r == 0 && !dbc->nmsgs)
		r = dbc_warn(dbc, name, 1, "nothing will be decoded", errbuf, errlen, "defines no message (BO_)");
	if (r == 0)
		r = prune(dbc, name, errbuf, errlen);
	if (r == 0 && dbc->nmsgs >= UINT16_MAX)
		r = lerr(errbuf, errlen, name, 1, "too many messages");
	for (unsigned i = 0; r == 0 && i < dbc->nmsgs; i++)
		r = compile_msg(dbc, &dbc->msgs[i], name, errbuf, errlen);
	if (r == 0)
		r = build_index(dbc);
	if (r == 0 && dbc->nwarnings)
		qsort(dbc->warnings, dbc->nwarnings, sizeof(*dbc->warnings), cmp_warning);
	if (r == 0)
		apply_long_names(dbc);
	if (r < 0) {
		bus_dbc_free(dbc);
		return r;
	}
	*ret_dbc = dbc;
	return 0;
}

int bus_dbc_load_buffer(const char *name, const char *text, size_t len, bus_dbc_t **ret_dbc,
                        char *errbuf, size_t errlen)
{
	return bus_dbc_load_buffer_flags(name, text, len, 0, ret_dbc, errbuf, errlen);
}

int bus_dbc_load(const char *path, bus_dbc_t **ret_dbc, char *errbuf, size_t errlen)
{
	return bus_dbc_load_flags(path, 0, ret_dbc, errbuf, errlen);
}

int bus_dbc_load_flags(const char *path, unsigned flags, bus_dbc_t **ret_dbc, char *errbuf, size_t errlen)
{
	const char *why;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!path || !*path || !ret_dbc)
		return -EINVAL;
	r = read_file(path, &text, &len, &why);
	if (r < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s: %s", path, why ? why : strerror(-r));
		return r;
	}
	r = bus_dbc_load_buffer_flags(path, text, len, flags, ret_dbc, errbuf, errlen);
	free(text);
	return r;
}

bus_dbc_t *bus_dbc_free(bus_dbc_t *dbc)
{
	if (!dbc)
		return NULL;
	for (unsigned i = 0; i < dbc->nmsgs; i++) {
		free(dbc->msgs[i].name);
		free(dbc->msgs[i].long_name);
		free(dbc->msgs[i].ops);
	}
	for (unsigned i = 0; i < dbc->nsigs; i++)
		sig_free(&dbc->sigs[i]);
	for (unsigned i = 0; i < dbc->nwarnings; i++)
		free(dbc->warnings[i].text);
	free(dbc->warnings);
	free(dbc->msgs);
	free(dbc->sigs);
	free(dbc->ext_index);
	free(dbc->pgn_index);
	free(dbc);
	return NULL;
}

unsigned bus_dbc_warning_count(const bus_dbc_t *dbc)
{
	return dbc ? dbc->nwarnings : 0;
}

const char *bus_dbc_warning(const bus_dbc_t *dbc, unsigned i)
{
	return dbc && i < dbc->nwarnings ? dbc->warnings[i].text : NULL;
}

unsigned bus_dbc_signal_count(const bus_dbc_t *dbc)
{
	return dbc ? dbc->nsigs : 0;
}

unsigned bus_dbc_decode_max(const bus_dbc_t *dbc)
{
	return dbc ? dbc->decode_max : 0;
}

unsigned bus_dbc_message_count(const bus_dbc_t *dbc)
{
	return dbc ? dbc->nmsgs : 0;
}

int bus_dbc_message_info(const bus_dbc_t *dbc, unsigned index, struct bus_dbc_message_info *ret_info)
{
	const struct dbc_msg *m;

	if (!dbc || !ret_info || index >= dbc->nmsgs)
		return -EINVAL;
	m = &dbc->msgs[index];
	*ret_info = (struct bus_dbc_message_info){ .name = m->name, .id = m->id, .ext = m->ext, .dlc = m->dlc,
	                                            .cycle_ms = m->cycle_ms, .nsignals = m->nsig };
	return 0;
}

int bus_dbc_signal_info(const bus_dbc_t *dbc, unsigned index, struct bus_dbc_signal_info *ret_info)
{
	const struct dbc_sig *s;
	const struct dbc_msg *m;

	if (!dbc || !ret_info || index >= dbc->nsigs)
		return -EINVAL;
	s = &dbc->sigs[index];
	m = &dbc->msgs[s->msg];
	*ret_info = (struct bus_dbc_signal_info){
		.message = m->name, .msg_id = m->id, .ext = m->ext, .name = s->name, .unit = s->unit,
		.min = s->min, .max = s->max, .scale = s->scale, .offset = s->offset,
		.is_float = s->valtype != DBC_INT, .index = index,
		.line = s->line,
	};
	return 0;
}

int bus_dbc_signal_find(const bus_dbc_t *dbc, uint32_t msg_id, int ext, const char *name,
                        unsigned *ret_index)
{
	if (!dbc || !name || !ret_index)
		return -EINVAL;
	for (unsigned i = 0; i < dbc->nsigs; i++) {
		const struct dbc_msg *m = &dbc->msgs[dbc->sigs[i].msg];

		if (m->id == msg_id && m->ext == !!ext && strcmp(dbc->sigs[i].name, name) == 0) {
			*ret_index = i;
			return 0;
		}
	}
	return -ENOENT;
}

int bus_dbc_value_label(const bus_dbc_t *dbc, unsigned index, double value, const char **ret_label)
{
	const struct dbc_sig *s;
	double raw;
	int64_t key;
	unsigned lo = 0, hi;

	if (!dbc || !ret_label || index >= dbc->nsigs || !isfinite(value))
		return -EINVAL;
	s = &dbc->sigs[index];
	raw = round((value - s->offset) / s->scale);
	if (!(raw >= -9.2e18 && raw <= 9.2e18))
		return -ENOENT;
	key = (int64_t)raw;
	hi = s->nlabels;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (s->labels[mid].value == key) {
			*ret_label = s->labels[mid].label;
			return 0;
		}
		if (s->labels[mid].value < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int bus_dbc_value_entry(const bus_dbc_t *dbc, unsigned index, unsigned i, double *ret_value,
                        const char **ret_label)
{
	const struct dbc_sig *s;

	if (!dbc || !ret_value || !ret_label || index >= dbc->nsigs)
		return -EINVAL;
	s = &dbc->sigs[index];
	if (i >= s->nlabels)
		return -ENOENT;
	*ret_value = (double)s->labels[i].value * s->scale + s->offset;
	*ret_label = s->labels[i].label;
	return 0;
}

static const struct dbc_msg *lookup(const struct bus_dbc *dbc, const struct acq_can *can)
{
	unsigned lo = 0, hi = dbc->next;

	if (!(can->flags & ACQ_CAN_EXT))
		return can->id < 2048 && dbc->std_index[can->id] ? &dbc->msgs[dbc->std_index[can->id] - 1] : NULL;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (dbc->ext_index[mid].id == can->id)
			return &dbc->msgs[dbc->ext_index[mid].msg];
		if (dbc->ext_index[mid].id < can->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t extract_slow(const struct dbc_op *op, const uint8_t *d)
{
	unsigned n = op->nbytes < 8 ? op->nbytes : 8;
	uint64_t v = 0;

	if (op->kind == DBC_OP_LE_SLOW) {
		for (unsigned i = 0; i < n; i++)
			v |= (uint64_t)d[op->first + i] << (8 * i);
		v >>= op->shift;
		if (op->nbytes > 8) /* 9 bytes: shift >= 1 */
			v |= (uint64_t)d[op->first + 8] << (64 - op->shift);
		return v & op->mask;
	}
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | d[op->first + i];
	if (op->nbytes > 8)
		v = v << (8 - op->shift) | d[op->first + 8] >> op->shift;
	else
		v >>= op->shift;
	return v & op->mask;
}

/* IEEE float/double signals and 64-bit unsigned ones (rare). */
static double physical_slow(const struct dbc_op *op, uint64_t raw)
{
	double v;

	if (op->valtype == DBC_FLOAT) {
		uint32_t u = (uint32_t)raw;
		float f;

		memcpy(&f, &u, sizeof(f));
		v = f;
	} else if (op->valtype == DBC_DOUBLE) {
		memcpy(&v, &raw, sizeof(v));
	} else {
		v = (double)raw;
	}
	return v * op->scale + op->offset;
}

/*
 * Sign extension by moving the sign bit to bit 63 and back (sext =
 * 64 - size); unsigned signals below 64 bits have sext = 0 and fit int64
 * as they are.  int64 -> double is one instruction, uint64 -> double is
 * not.
 */
static inline double physical_int(const struct dbc_op *op, uint64_t raw)
{
	return (double)((int64_t)(raw << op->sext) >> op->sext) * op->scale + op->offset;
}

static bool mux_match(const struct dbc_op *op, uint64_t v)
{
	for (unsigned i = 0; i < op->nranges; i++)
		if (v >= op->ranges[i].lo && v <= op->ranges[i].hi)
			return true;
	return false;
}

_Static_assert(ACQ_Q_GOOD == 0 && ACQ_Q_OUT_OF_RANGE == 1, "quality computed as a comparison");

/*
 * What every sample of one frame shares, in locals: the project builds
 * with -fno-strict-aliasing, so without restrict a store into out[] could
 * alias the frame and the ops and everything would be reloaded for each
 * signal.
 */
struct frame_ctx {
	int64_t t_ns;
	uint32_t channel_base;
	uint16_t bus;
	unsigned len;
	uint64_t w[2];          /* first 8 bytes: w[DBC_OP_LE], w[DBC_OP_BE] */
	const uint8_t *data;
};

/* The samples written, or -ENOBUFS when out[] cannot take them all. */
static int decode_ops(const struct dbc_op *restrict ops, unsigned nops, const struct frame_ctx *restrict fc,
                      struct acq_item *restrict out, size_t max)
{
	uint64_t mux[DBC_MUX_SLOTS];
	unsigned active = 0;
	size_t n = 0;

	for (unsigned i = 0; i < nops; i++) {
		const struct dbc_op *op = &ops[i];
		struct acq_item *o;
		uint32_t q;
		uint64_t raw;
		double v;

		if (op->need_len > fc->len)
			continue;
		if (op->parent_slot >= 0 &&
		    (!(active & (1u << op->parent_slot)) || !mux_match(op, mux[op->parent_slot])))
			continue;
		/* A short buffer is an error, not a shorter frame: signals
		   dropped here would be lost without a trace. */
		if (n == max)
			return -ENOBUFS;
		raw = op->kind <= DBC_OP_BE ? (fc->w[op->kind] >> op->shift) & op->mask : extract_slow(op, fc->data);
		if (op->mux_slot >= 0) {
			/* the raw value selects, never the physical one (DBC
			   convention; a scaled multiplexor shows the difference) */
			mux[op->mux_slot] = raw;
			active |= 1u << op->mux_slot;
		}
		/* min/max are -inf/+inf when the signal declares no range */
		if (!op->slow_value) {
			v = physical_int(op, raw);
			q = (uint32_t)((v < op->min) | (v > op->max));
		} else {
			v = physical_slow(op, raw);
			q = !isfinite(v) ? ACQ_Q_INVALID : (uint32_t)((v < op->min) | (v > op->max));
		}
		/* only the sample's fields: zeroing the whole union would cost
		   more than the decode itself */
		o = &out[n++];
		o->t_ns = fc->t_ns;
		o->seq = 0;
		o->kind = ACQ_ITEM_SAMPLE;
		o->bus = fc->bus;
		o->reserved = 0;
		o->sample.channel = fc->channel_base + op->index;
		o->sample.quality = q;
		o->sample.value = v;
	}
	return (int)n;
}

int bus_dbc_decode(const bus_dbc_t *dbc, const struct acq_item *frame, uint32_t channel_base,
                   struct acq_item *out, size_t max)
{
	const struct dbc_msg *m;
	struct frame_ctx fc;

	if (!dbc || !frame || (!out && max) || frame->kind != ACQ_ITEM_CAN || frame->can.len > ACQ_CAN_DATA_MAX)
		return -EINVAL;
	if (frame->can.flags & (ACQ_CAN_RTR | ACQ_CAN_ERR))
		return 0;
	m = lookup(dbc, &frame->can);
	if (!m)
		return 0;
	fc = (struct frame_ctx){ .t_ns = frame->t_ns, .channel_base = channel_base, .bus = frame->bus,
	                         .len = frame->can.len, .data = frame->can.data };
	/*
	 * data[] always has 64 bytes; bytes past len only ever land in bits
	 * the masks drop, since signals not inside len are skipped.
	 */
	memcpy(&fc.w[0], frame->can.data, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	fc.w[0] = __builtin_bswap64(fc.w[0]);
#endif
	fc.w[1] = __builtin_bswap64(fc.w[0]);
	return decode_ops(m->ops, m->nsig, &fc, out, max);
}

int bus_dbc_decode_pgn(const bus_dbc_t *dbc, uint32_t pgn, const uint8_t *data, size_t len, int64_t t_ns,
                       uint16_t bus, uint32_t channel_base, struct acq_item *out, size_t max)
{
	const struct dbc_msg *m = NULL;
	unsigned lo = 0, hi;
	struct frame_ctx fc;

	if (!dbc || (!data && len) || (!out && max) || len > BUS_J1939_TP_MAX)
		return -EINVAL;
	hi = dbc->npgn;
	while (lo < hi && !m) {
		unsigned mid = lo + (hi - lo) / 2;

		if (dbc->pgn_index[mid].id == pgn)
			m = &dbc->msgs[dbc->pgn_index[mid].msg];
		else if (dbc->pgn_index[mid].id < pgn)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!m)
		return 0;
	fc = (struct frame_ctx){ .t_ns = t_ns, .channel_base = channel_base, .bus = bus, .len = (unsigned)len,
	                         .data = data };
	memcpy(&fc.w[0], data, len < 8 ? len : 8); /* bytes past len only reach masked-off bits */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	fc.w[0] = __builtin_bswap64(fc.w[0]);
#endif
	fc.w[1] = __builtin_bswap64(fc.w[0]);
	return decode_ops(m->ops, m->nsig, &fc, out, max);
}
