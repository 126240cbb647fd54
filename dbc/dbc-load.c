/* SPDX-License-Identifier: MIT */
/*
 * dbc-load.c - load a DBC: read the file (CP1252 or UTF-8, dbc-text.c),
 * parse it (dbc-parse.c), check and resolve multiplexing, precompile every
 * signal into a struct dbc_op and build the look-up indices that
 * dbc-decode.c reads.  One job, the load, so one file.
 *
 * Decode (dbc-decode.c) is: one table lookup for the id (a direct 2048-entry table for
 * standard ids, binary search for extended ones), two 64-bit loads of the
 * first 8 payload bytes (little- and big-endian), then per signal a shift
 * and a mask.  Signals beyond byte 8 (CAN FD) take a byte loop.
 * Multiplexors are ordered before the signals they select, so one pass
 * knows whether each multiplexed signal is present.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

static void compile_sig(struct dbc *dbc, unsigned i, struct dbc_op *op)
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
static int assign_slots(const struct dbc *dbc, struct dbc_msg *m, const int *parent, const char *path,
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
			return dbc_err(errbuf, errlen, path, m->line, "message %s has more than %d multiplexors",
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
static int order_ops(struct dbc *dbc, struct dbc_msg *m, struct dbc_op *ops, const int *parent,
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
			r = dbc_err(errbuf, errlen, path, dbc->sigs[m->first + i].line, "multiplexor cycle in message %s", m->name);
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

static int compile_msg(struct dbc *dbc, struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
{
	struct dbc_op *ops = calloc(m->nsig ? m->nsig : 1, sizeof(*ops));
	int *parent = calloc(m->nsig ? m->nsig : 1, sizeof(*parent));
	int r = (ops && parent) ? 0 : -ENOMEM;

	for (unsigned i = 0; r == 0 && i < m->nsig; i++) {
		struct dbc_sig *s = &dbc->sigs[m->first + i];

		if (s->is_mux && s->valtype != DBC_INT)
			r = dbc_err(errbuf, errlen, path, s->line, "multiplexor '%s' must be an integer", s->name);
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
static int sig_named(const struct dbc *dbc, const struct dbc_msg *m, const char *name)
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
static int resolve_named(struct dbc *dbc, const struct dbc_msg *m, struct dbc_sig *s, unsigned nmux,
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
static int resolve_msg(struct dbc *dbc, const struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
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
				r = dbc_err(errbuf, errlen, path, s->mul_line, "too many multiplexor ranges");
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
static int prune_msg(struct dbc *dbc, struct dbc_msg *m, const char *path, char *errbuf, size_t errlen)
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
static int compact(struct dbc *dbc)
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

static int prune(struct dbc *dbc, const char *path, char *errbuf, size_t errlen)
{
	int r = 0;

	for (unsigned i = 0; r == 0 && i < dbc->nmsgs; i++)
		r = prune_msg(dbc, &dbc->msgs[i], path, errbuf, errlen);
	return r == 0 ? compact(dbc) : r;
}

/* The long names replace the short ones once nothing refers by name any more. */
static void apply_long_names(struct dbc *dbc)
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
static int to_utf8(struct dbc *dbc, const char *name, const char **text, size_t *len, char **ret_buf,
                   char *errbuf, size_t errlen)
{
	size_t off = 0;
	int r;

	*ret_buf = NULL;
	off = dbc_utf8_invalid_at(*text, *len);
	if (off == *len)
		return 0;
	if (!(dbc->flags & DBC_STRICT) &&
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

static int build_index(struct dbc *dbc)
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
			dbc->pgn_index[dbc->npgn++] = (struct dbc_ext_key){ dbc_j1939_id_parse(dbc->msgs[i].id).pgn, i };
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

int dbc_load_buffer_flags(const char *name, const char *text, size_t len, unsigned flags,
                              dbc_t **ret_dbc, char *errbuf, size_t errlen)
{
	struct dbc *dbc;
	char *converted = NULL;
	int r;

	if (!name || !ret_dbc || (!text && len) || (flags & ~DBC_STRICT))
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
		r = dbc_err(errbuf, errlen, name, 1, "too many messages");
	for (unsigned i = 0; r == 0 && i < dbc->nmsgs; i++)
		r = compile_msg(dbc, &dbc->msgs[i], name, errbuf, errlen);
	if (r == 0)
		r = build_index(dbc);
	if (r == 0 && dbc->nwarnings)
		qsort(dbc->warnings, dbc->nwarnings, sizeof(*dbc->warnings), cmp_warning);
	if (r == 0)
		apply_long_names(dbc);
	if (r < 0) {
		dbc_free(dbc);
		return r;
	}
	*ret_dbc = dbc;
	return 0;
}

int dbc_load_buffer(const char *name, const char *text, size_t len, dbc_t **ret_dbc,
                        char *errbuf, size_t errlen)
{
	return dbc_load_buffer_flags(name, text, len, 0, ret_dbc, errbuf, errlen);
}

int dbc_load(const char *path, dbc_t **ret_dbc, char *errbuf, size_t errlen)
{
	return dbc_load_flags(path, 0, ret_dbc, errbuf, errlen);
}

int dbc_load_flags(const char *path, unsigned flags, dbc_t **ret_dbc, char *errbuf, size_t errlen)
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
	r = dbc_load_buffer_flags(path, text, len, flags, ret_dbc, errbuf, errlen);
	free(text);
	return r;
}

dbc_t *dbc_free(dbc_t *dbc)
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
