/* SPDX-License-Identifier: MIT */
/*
 * dbc-parse.c - DBC text to struct dbc (messages, signals, VAL_,
 * SIG_VALTYPE_, SG_MUL_VAL_).  One job, the grammar, so one file.  Comments (CM_) are checked for syntax and
 * dropped; attributes and the other sections are skipped to their ';'.
 *
 * A small lexer over the whole file: strings may span lines (CM_ texts
 * do), and the statements that have no terminating ';' (BO_, SG_) end at
 * the end of their line, so tokens carry their line number.  `//` starts
 * a comment to the end of the line (outside strings), as in the files
 * some generators write.
 *
 * What production files get wrong but is not ambiguous goes through
 * dbc_warn(): a warning and a skip when lenient, an error when strict.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dbc-private.h"

enum tok_type {
	T_EOF = 0,
	T_WORD,
	T_STR,
	T_PUNCT,
};

struct tok {
	enum tok_type type;
	const char *s;  /* T_STR: without the quotes, escapes not processed */
	size_t len;
	unsigned line;
	bool col0;      /* first character of its line */
};

struct parser {
	struct dbc *dbc;
	const char *path;
	const char *start, *p, *end;
	unsigned line;
	char *errbuf;
	size_t errlen;
	int cur_msg;    /* message SG_ lines belong to; -1 none, -2 skipped */
};

__attribute__((format(printf, 3, 4)))
static int perr(struct parser *ps, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->errbuf && ps->errlen) {
		n = snprintf(ps->errbuf, ps->errlen, "%s:%u: ", ps->path, line);
		if (n >= 0 && (size_t)n < ps->errlen) {
			va_start(ap, fmt);
			vsnprintf(ps->errbuf + n, ps->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -EBADMSG;
}

static bool word_char(unsigned char c)
{
	return isalnum(c) || c == '_' || c == '.' || c == '+' || c == '-' || c >= 0x80;
}

static int lex_string(struct parser *ps, struct tok *t)
{
	const char *s = ++ps->p;

	while (ps->p < ps->end && *ps->p != '"') {
		if (*ps->p == '\\' && ps->p + 1 < ps->end)
			ps->p++;
		if (*ps->p == '\n')
			ps->line++;
		ps->p++;
	}
	if (ps->p >= ps->end)
		return perr(ps, t->line, "unterminated string");
	t->type = T_STR;
	t->s = s;
	t->len = (size_t)(ps->p - s);
	ps->p++;
	return 0;
}

static int lex_next(struct parser *ps, struct tok *t)
{
	unsigned char c;

	for (;;) {
		while (ps->p < ps->end && isspace((unsigned char)*ps->p)) {
			if (*ps->p == '\n')
				ps->line++;
			ps->p++;
		}
		if (ps->end - ps->p < 2 || ps->p[0] != '/' || ps->p[1] != '/')
			break;
		while (ps->p < ps->end && *ps->p != '\n')
			ps->p++;
	}
	*t = (struct tok){ .type = T_EOF, .line = ps->line, .s = ps->p };
	if (ps->p >= ps->end)
		return 0;
	t->col0 = ps->p == ps->start || ps->p[-1] == '\n';
	c = (unsigned char)*ps->p;
	if (c == '"')
		return lex_string(ps, t);
	if (word_char(c)) {
		while (ps->p < ps->end && word_char((unsigned char)*ps->p))
			ps->p++;
		t->type = T_WORD;
		t->len = (size_t)(ps->p - t->s);
		return 0;
	}
	if (c < 0x20 || c == 0x7f)
		return perr(ps, ps->line, "unexpected byte 0x%02x", c);
	t->type = T_PUNCT;
	t->len = 1;
	ps->p++;
	return 0;
}

static int lex_peek(struct parser *ps, struct tok *t)
{
	const char *p = ps->p;
	unsigned line = ps->line;
	int r = lex_next(ps, t);

	ps->p = p;
	ps->line = line;
	return r;
}

static bool tok_is(const struct tok *t, const char *s)
{
	return (t->type == T_WORD || t->type == T_PUNCT) && t->len == strlen(s) &&
	       memcmp(t->s, s, t->len) == 0;
}

static int expect(struct parser *ps, const char *what)
{
	struct tok t;
	int r = lex_next(ps, &t);

	if (r < 0)
		return r;
	if (!tok_is(&t, what))
		return perr(ps, t.line, "expected '%s', found '%.*s'", what, (int)(t.len > 40 ? 40 : t.len), t.s);
	return 0;
}

static int next_type(struct parser *ps, struct tok *t, enum tok_type type, const char *what)
{
	int r = lex_next(ps, t);

	if (r < 0)
		return r;
	if (t->type != type)
		return perr(ps, t->line, "expected %s, found '%.*s'", what, (int)(t->len > 40 ? 40 : t->len), t->s);
	return 0;
}

static int tok_double(struct parser *ps, const struct tok *t, double *ret)
{
	char buf[64], *e;
	double v;

	if (t->type != T_WORD || t->len >= sizeof(buf))
		return perr(ps, t->line, "expected a number");
	memcpy(buf, t->s, t->len);
	buf[t->len] = '\0';
	errno = 0;
	v = strtod(buf, &e);
	if (e == buf || *e || !isfinite(v))
		return perr(ps, t->line, "bad number '%s'", buf);
	*ret = v;
	return 0;
}

static int tok_int(struct parser *ps, const struct tok *t, int64_t lo, uint64_t hi, int64_t *ret)
{
	char buf[32], *e;
	long long v;
	unsigned long long u;

	if (t->type != T_WORD || t->len >= sizeof(buf))
		return perr(ps, t->line, "expected an integer");
	memcpy(buf, t->s, t->len);
	buf[t->len] = '\0';
	errno = 0;
	if (buf[0] == '-') {
		v = strtoll(buf, &e, 10);
		if (e == buf || *e || errno || v < lo)
			return perr(ps, t->line, "bad integer '%s'", buf);
		*ret = v;
		return 0;
	}
	/* "+5" is 5, as cantools (Python's int()) reads it */
	u = strtoull(buf, &e, 10);
	if (e == buf || *e || errno || u > hi || (buf[0] == '+' && !isdigit((unsigned char)buf[1])))
		return perr(ps, t->line, "bad integer '%s'", buf);
	*ret = (int64_t)u;
	return 0;
}

static int next_int(struct parser *ps, int64_t lo, uint64_t hi, int64_t *ret)
{
	struct tok t;
	int r = lex_next(ps, &t);

	return r < 0 ? r : tok_int(ps, &t, lo, hi, ret);
}

static int next_double(struct parser *ps, double *ret)
{
	struct tok t;
	int r = lex_next(ps, &t);

	return r < 0 ? r : tok_double(ps, &t, ret);
}

static char *tok_dup(const struct tok *t)
{
	return strndup(t->s, t->len);
}

/* Skip to the ';' that ends the statement (attributes and the like). */
static int skip_statement(struct parser *ps, unsigned line)
{
	struct tok t;
	int r;

	for (;;) {
		r = lex_next(ps, &t);
		if (r < 0)
			return r;
		if (t.type == T_EOF)
			return perr(ps, line, "statement not terminated by ';'");
		if (t.type == T_PUNCT && *t.s == ';')
			return 0;
	}
}

/* Skip the remaining tokens of line (node lists, transmitters, BS_). */
static int skip_line(struct parser *ps, unsigned line)
{
	struct tok t;
	int r;

	for (;;) {
		r = lex_peek(ps, &t);
		if (r < 0)
			return r;
		if (t.type == T_EOF || t.line != line)
			return 0;
		lex_next(ps, &t);
	}
}

/* NS_ : its indented keyword list runs up to the next line starting in column 0. */
static int parse_ns(struct parser *ps)
{
	struct tok t;
	int r = expect(ps, ":");

	while (r >= 0) {
		r = lex_peek(ps, &t);
		if (r < 0 || t.type == T_EOF || t.col0)
			break;
		lex_next(ps, &t);
	}
	return r < 0 ? r : 0;
}

/* A statement keyword: capitals (and digits) ending in '_', or VERSION. */
static bool tok_keyword(const struct tok *t)
{
	if (t->type != T_WORD)
		return false;
	if (tok_is(t, "VERSION"))
		return true;
	if (t->len < 2 || t->s[t->len - 1] != '_')
		return false;
	for (size_t i = 0; i < t->len; i++)
		if (!isupper((unsigned char)t->s[i]) && !isdigit((unsigned char)t->s[i]) && t->s[i] != '_')
			return false;
	return true;
}

/* BU_: node names, on as many lines as the writer wanted, up to the next keyword. */
static int parse_bu(struct parser *ps)
{
	struct tok t;
	int r = expect(ps, ":");

	while (r >= 0) {
		r = lex_peek(ps, &t);
		if (r < 0 || t.type != T_WORD || tok_keyword(&t))
			break;
		lex_next(ps, &t);
	}
	return r < 0 ? r : 0;
}

static struct dbc_msg *find_msg(struct dbc *dbc, uint32_t id, bool ext)
{
	for (unsigned i = 0; i < dbc->nmsgs; i++)
		if (dbc->msgs[i].id == id && dbc->msgs[i].ext == ext)
			return &dbc->msgs[i];
	return NULL;
}

static struct dbc_sig *find_sig(struct dbc *dbc, const struct dbc_msg *m, const char *name, size_t len)
{
	for (unsigned i = m->first; i < m->first + m->nsig; i++)
		if (strlen(dbc->sigs[i].name) == len && memcmp(dbc->sigs[i].name, name, len) == 0)
			return &dbc->sigs[i];
	return NULL;
}

/*
 * Message id as a DBC writes it: bit 31 flags a 29-bit id.  An id above
 * 0x7ff without it (files that leave bit 31 out, which cantools loads) is
 * read as a 29-bit id, the only kind of frame that can carry it; returns 1
 * then, for the BO_ to warn.  One above 29 bits without bit 31 (cantools
 * loads it; no frame has it) returns 2 and an id no message matches.
 */
static int next_msg_id(struct parser *ps, uint32_t *ret_id, bool *ret_ext, unsigned *ret_line)
{
	struct tok t;
	int64_t v = 0; /* set by tok_int on success; -O3 cannot tell */
	int r = lex_next(ps, &t);

	if (r < 0 || (r = tok_int(ps, &t, 0, UINT32_MAX, &v)) < 0)
		return r;
	*ret_line = t.line;
	*ret_ext = (v & 0x80000000) != 0;
	*ret_id = (uint32_t)v & 0x1fffffff;
	if ((uint32_t)v == DBC_INDEPENDENT_ID || (uint32_t)v == DBC_INDEPENDENT_ID_ALT) {
		*ret_id = DBC_INDEPENDENT_ID;
		return 0;
	}
	if (!*ret_ext && (uint32_t)v > 0x1fffffff) {
		*ret_id = (uint32_t)v;
		return 2;
	}
	if (!*ret_ext && *ret_id > 0x7ff) {
		*ret_ext = true;
		return 1;
	}
	return 0;
}

static int grow(void **arr, unsigned *cap, unsigned n, size_t elem)
{
	void *p;
	unsigned ncap;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, ncap * elem);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * elem, 0, (ncap - *cap) * elem);
	*arr = p;
	*cap = ncap;
	return 0;
}

static int parse_bo(struct parser *ps, unsigned line)
{
	struct dbc *dbc = ps->dbc;
	struct dbc_msg *m;
	struct tok name;
	uint32_t id;
	bool ext;
	int64_t dlc;
	unsigned idline;
	int r;

	if ((r = next_msg_id(ps, &id, &ext, &idline)) == 1)
		r = dbc_warn(dbc, ps->path, idline, "read as an extended (29-bit) id", ps->errbuf, ps->errlen,
		             "standard id %u out of range (extended ids need bit 31)", id);
	else if (r == 2 && (r = dbc_warn(dbc, ps->path, idline, "message skipped", ps->errbuf, ps->errlen,
	                                 "message id %u is not a CAN id (more than 29 bits)", id)) == 0)
		id = DBC_INDEPENDENT_ID; /* its signals go nowhere, as the independent ones */
	if (r < 0 || (r = next_type(ps, &name, T_WORD, "message name")) < 0 || (r = expect(ps, ":")) < 0 ||
	    (r = next_int(ps, 0, 64, &dlc)) < 0 || (r = skip_line(ps, line)) < 0)
		return r;
	if (id == DBC_INDEPENDENT_ID) {
		ps->cur_msg = -2; /* a holder of unassigned signals, not on the bus */
		return 0;
	}
	if (find_msg(dbc, id, ext))
		return perr(ps, line, "duplicate message id %u", id);
	if (grow((void **)&dbc->msgs, &dbc->capmsgs, dbc->nmsgs, sizeof(*dbc->msgs)) < 0)
		return -ENOMEM;
	m = &dbc->msgs[dbc->nmsgs];
	*m = (struct dbc_msg){ .id = id, .ext = ext, .dlc = (unsigned)dlc, .line = line,
	                       .first = dbc->nsigs, .name = tok_dup(&name) };
	if (!m->name)
		return -ENOMEM;
	ps->cur_msg = (int)dbc->nmsgs++;
	return 0;
}

/* "M", "m<n>" or "m<n>M"; a bare "m" is a plain signal (with a warning). */
static int parse_mux_flag(struct parser *ps, const struct tok *t, const struct tok *name, struct dbc_sig *s)
{
	size_t i = 1;
	uint64_t v = 0;

	if (t->len == 1 && t->s[0] == 'M') {
		s->is_mux = s->marked = true;
		return 0;
	}
	if (t->len == 1 && t->s[0] == 'm')
		return dbc_warn(ps->dbc, ps->path, t->line, "read as a plain signal", ps->errbuf, ps->errlen,
		                "signal '%.*s': multiplexer indicator 'm' without a value", (int)name->len, name->s);
	if (t->s[0] != 'm' || t->len < 2)
		return perr(ps, t->line, "bad multiplexer indicator '%.*s'", (int)t->len, t->s);
	for (; i < t->len && isdigit((unsigned char)t->s[i]) && i < 19; i++)
		v = v * 10 + (uint64_t)(t->s[i] - '0');
	if (i == 1 || (i < t->len && !(i + 1 == t->len && t->s[i] == 'M')))
		return perr(ps, t->line, "bad multiplexer indicator '%.*s'", (int)t->len, t->s);
	s->muxed = s->marked = true;
	s->mux_val = v;
	s->is_mux = i < t->len;
	return 0;
}

/* "start|size@order sign" */
static int parse_layout(struct parser *ps, struct dbc_sig *s)
{
	struct tok t;
	int64_t start, size;
	int r;

	if ((r = next_int(ps, 0, 511, &start)) < 0 || (r = expect(ps, "|")) < 0 ||
	    (r = next_int(ps, 1, 64, &size)) < 0 || (r = expect(ps, "@")) < 0 ||
	    (r = next_type(ps, &t, T_WORD, "byte order")) < 0)
		return r;
	if (size < 1)
		return perr(ps, t.line, "signal size must be 1..64");
	if (t.len != 2 || (t.s[0] != '0' && t.s[0] != '1') || (t.s[1] != '+' && t.s[1] != '-'))
		return perr(ps, t.line, "bad byte order/sign '%.*s' (want 0+, 0-, 1+ or 1-)", (int)(t.len > 8 ? 8 : t.len), t.s);
	s->start = (unsigned)start;
	s->size = (unsigned)size;
	s->motorola = t.s[0] == '0';
	s->is_signed = t.s[1] == '-';
	return 0;
}

/* "(scale,offset) [min|max] "unit"" */
static int parse_phys(struct parser *ps, struct dbc_sig *s)
{
	struct tok unit;
	int r;

	if ((r = expect(ps, "(")) < 0 || (r = next_double(ps, &s->scale)) < 0 ||
	    (r = expect(ps, ",")) < 0 || (r = next_double(ps, &s->offset)) < 0 ||
	    (r = expect(ps, ")")) < 0 || (r = expect(ps, "[")) < 0 ||
	    (r = next_double(ps, &s->min)) < 0 || (r = expect(ps, "|")) < 0 ||
	    (r = next_double(ps, &s->max)) < 0 || (r = expect(ps, "]")) < 0 ||
	    (r = next_type(ps, &unit, T_STR, "unit string")) < 0)
		return r;
	if (s->scale == 0)
		return perr(ps, unit.line, "scale must not be 0");
	s->unit = tok_dup(&unit);
	return s->unit ? 0 : -ENOMEM;
}

static int parse_sg(struct parser *ps, unsigned line)
{
	struct dbc *dbc = ps->dbc;
	struct dbc_sig sig = { .line = line }, *s;
	struct tok name, t;
	int r;

	if (ps->cur_msg == -1)
		return perr(ps, line, "SG_ outside a message");
	if ((r = next_type(ps, &name, T_WORD, "signal name")) < 0 || (r = lex_next(ps, &t)) < 0)
		return r;
	if (t.type == T_WORD) {
		if ((r = parse_mux_flag(ps, &t, &name, &sig)) < 0 || (r = expect(ps, ":")) < 0)
			return r;
	} else if (!tok_is(&t, ":")) {
		return perr(ps, t.line, "expected ':' after the signal name");
	}
	if ((r = parse_layout(ps, &sig)) < 0 || (r = parse_phys(ps, &sig)) < 0) {
		free(sig.unit);
		return r;
	}
	r = skip_line(ps, t.line > line ? t.line : line);
	if (r < 0 || ps->cur_msg == -2) {
		free(sig.unit);
		return r;
	}
	if (find_sig(dbc, &dbc->msgs[ps->cur_msg], name.s, name.len)) {
		free(sig.unit);
		return perr(ps, line, "duplicate signal '%.*s'", (int)name.len, name.s);
	}
	if (grow((void **)&dbc->sigs, &dbc->capsigs, dbc->nsigs, sizeof(*dbc->sigs)) < 0) {
		free(sig.unit);
		return -ENOMEM;
	}
	sig.msg = (unsigned)ps->cur_msg;
	sig.name = tok_dup(&name);
	s = &dbc->sigs[dbc->nsigs++];
	*s = sig;
	dbc->msgs[ps->cur_msg].nsig++;
	return s->name ? 0 : -ENOMEM;
}

/* The message of id for statement kw; NULL and a warning (0) or an error if unknown. */
static int ref_msg(struct parser *ps, const char *kw, uint32_t id, bool ext, unsigned line, struct dbc_msg **ret_msg)
{
	*ret_msg = find_msg(ps->dbc, id, ext);
	if (*ret_msg)
		return 0;
	return dbc_warn(ps->dbc, ps->path, line, "statement skipped", ps->errbuf, ps->errlen,
	                "%s: unknown message id %u", kw, id | (ext ? 0x80000000u : 0));
}

/*
 * Signal named by "<msg id> <signal name>", as VAL_ and friends (kw)
 * write it.  Returns 0, or 1 when the caller skips the statement: a signal
 * of VECTOR__INDEPENDENT_SIG_MSG (not on the bus), or an unknown message
 * or signal in lenient mode (warned).
 */
static int ref_sig(struct parser *ps, const char *kw, uint32_t id, bool ext, unsigned line, const struct tok *name,
                   struct dbc_sig **ret_sig);

static int next_sig_ref(struct parser *ps, const char *kw, struct dbc_sig **ret_sig)
{
	struct tok name;
	uint32_t id;
	bool ext;
	unsigned line;
	int r;

	if ((r = next_msg_id(ps, &id, &ext, &line)) < 0 || (r = next_type(ps, &name, T_WORD, "signal name")) < 0)
		return r;
	return ref_sig(ps, kw, id, ext, line, &name, ret_sig);
}

/* The signal name of message id, as next_sig_ref() returns it. */
static int ref_sig(struct parser *ps, const char *kw, uint32_t id, bool ext, unsigned line, const struct tok *name,
                   struct dbc_sig **ret_sig)
{
	struct dbc_msg *m;
	struct dbc_sig *s;
	int r;

	if (id == DBC_INDEPENDENT_ID)
		return 1;
	if ((r = ref_msg(ps, kw, id, ext, line, &m)) < 0 || !m)
		return r < 0 ? r : 1;
	s = find_sig(ps->dbc, m, name->s, name->len);
	if (!s) {
		r = dbc_warn(ps->dbc, ps->path, name->line, "statement skipped", ps->errbuf, ps->errlen,
		             "%s: unknown signal '%.*s' in message %u", kw, (int)name->len, name->s, id);
		return r < 0 ? r : 1;
	}
	*ret_sig = s;
	return 0;
}

static int add_label(struct dbc_sig *s, int64_t value, const struct tok *t)
{
	struct dbc_label *l = realloc(s->labels, (s->nlabels + 1) * sizeof(*l));

	if (!l)
		return -ENOMEM;
	s->labels = l;
	l[s->nlabels].value = value;
	l[s->nlabels].label = tok_dup(t);
	if (!l[s->nlabels].label)
		return -ENOMEM;
	s->nlabels++;
	return 0;
}

static int parse_val(struct parser *ps, unsigned line)
{
	struct dbc_sig *s;
	struct tok t;
	int64_t v;
	int r;

	if ((r = lex_peek(ps, &t)) < 0)
		return r;
	if (t.type != T_WORD || !isdigit((unsigned char)t.s[0]))
		return skip_statement(ps, line); /* value table of an environment variable */
	if ((r = next_sig_ref(ps, "VAL_", &s)) != 0)
		return r < 0 ? r : skip_statement(ps, line);
	for (;;) {
		if ((r = lex_next(ps, &t)) < 0)
			return r;
		if (tok_is(&t, ";"))
			return 0;
		if ((r = tok_int(ps, &t, INT64_MIN, UINT64_MAX, &v)) < 0 ||
		    (r = next_type(ps, &t, T_STR, "value description")) < 0 || (r = add_label(s, v, &t)) < 0)
			return r;
	}
}

static int parse_valtype(struct parser *ps, unsigned line)
{
	struct dbc_sig *s;
	struct tok t;
	int64_t v;
	int r;

	if ((r = next_sig_ref(ps, "SIG_VALTYPE_", &s)) != 0)
		return r < 0 ? r : skip_statement(ps, line);
	if ((r = lex_next(ps, &t)) < 0)
		return r;
	if (tok_is(&t, ":") && (r = lex_next(ps, &t)) < 0)
		return r;
	if ((r = tok_int(ps, &t, 0, 2, &v)) < 0)
		return r;
	if ((v == DBC_FLOAT && s->size != 32) || (v == DBC_DOUBLE && s->size != 64))
		return perr(ps, t.line, "signal '%s': IEEE %s needs %u bits", s->name,
		            v == DBC_FLOAT ? "float" : "double", v == DBC_FLOAT ? 32 : 64);
	s->valtype = (enum dbc_valtype)v;
	return expect(ps, ";");
}

/* "lo-hi" */
static int tok_range(struct parser *ps, const struct tok *t, struct dbc_range *ret)
{
	const char *dash = t->len > 1 ? memchr(t->s + 1, '-', t->len - 1) : NULL;
	struct tok a = *t, b = *t;
	int64_t lo, hi;
	int r;

	if (t->type != T_WORD || !dash)
		return perr(ps, t->line, "bad multiplexor range '%.*s'", (int)(t->len > 40 ? 40 : t->len), t->s);
	a.len = (size_t)(dash - t->s);
	b.s = dash + 1;
	b.len = t->len - a.len - 1;
	if ((r = tok_int(ps, &a, 0, UINT64_MAX, &lo)) < 0 || (r = tok_int(ps, &b, 0, UINT64_MAX, &hi)) < 0)
		return r;
	if ((uint64_t)lo > (uint64_t)hi)
		return perr(ps, t->line, "empty multiplexor range");
	*ret = (struct dbc_range){ (uint64_t)lo, (uint64_t)hi };
	return 0;
}

static int parse_mul_val(struct parser *ps, unsigned line)
{
	struct dbc_sig *s;
	struct dbc_range *rg;
	struct tok mux, t;
	int r;

	if ((r = next_sig_ref(ps, "SG_MUL_VAL_", &s)) != 0)
		return r < 0 ? r : skip_statement(ps, line);
	if ((r = next_type(ps, &mux, T_WORD, "multiplexor name")) < 0)
		return r;
	if (s->mux_parent)
		return perr(ps, line, "second SG_MUL_VAL_ for signal '%s'", s->name);
	s->mux_parent = tok_dup(&mux);
	s->mul_line = line;
	if (!s->mux_parent)
		return -ENOMEM;
	for (;;) {
		if ((r = lex_next(ps, &t)) < 0)
			return r;
		if (tok_is(&t, ";"))
			break;
		if (tok_is(&t, ",") && s->nranges > 0)
			continue;
		rg = realloc(s->ranges, (s->nranges + 1) * sizeof(*rg));
		if (!rg)
			return -ENOMEM;
		s->ranges = rg;
		if ((r = tok_range(ps, &t, &rg[s->nranges])) < 0)
			return r;
		if (++s->nranges > 255)
			return perr(ps, t.line, "too many multiplexor ranges");
	}
	return s->nranges ? 0 : perr(ps, line, "SG_MUL_VAL_ without ranges");
}

/* CM_ SG_ id name "text" or, as some writers put it, CM_ SG_ id "text" (warned). */
static int parse_cm_sg(struct parser *ps)
{
	struct dbc_sig *s;
	struct tok t, name;
	uint32_t id;
	bool ext;
	unsigned idline;
	int r;

	if ((r = next_msg_id(ps, &id, &ext, &idline)) < 0 || (r = lex_next(ps, &t)) < 0)
		return r;
	if (t.type == T_STR) {
		r = dbc_warn(ps->dbc, ps->path, idline, "comment skipped", ps->errbuf, ps->errlen,
		             "CM_ SG_ %u without a signal name", id);
		return r < 0 ? r : expect(ps, ";");
	}
	if (t.type != T_WORD)
		return perr(ps, t.line, "expected signal name, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
	name = t;
	/* the text first: an unterminated one is the error to report */
	if ((r = next_type(ps, &t, T_STR, "comment string")) < 0 ||
	    (r = ref_sig(ps, "CM_ SG_", id, ext, idline, &name, &s)) < 0)
		return r;
	return expect(ps, ";");
}

/* CM_ [BU_ node | BO_ id | SG_ id name | EV_ name] "text" ; - checked, not kept */
static int parse_cm(struct parser *ps, unsigned line)
{
	struct dbc_msg *m;
	struct tok t;
	uint32_t id;
	bool ext;
	unsigned idline;
	int r;

	if ((r = lex_next(ps, &t)) < 0)
		return r;
	if (tok_is(&t, "BU_") || tok_is(&t, "EV_")) {
		r = next_type(ps, &t, T_WORD, "name");
	} else if (tok_is(&t, "BO_")) {
		if ((r = next_msg_id(ps, &id, &ext, &idline)) < 0)
			return r;
		if (id != DBC_INDEPENDENT_ID && ((r = ref_msg(ps, "CM_ BO_", id, ext, idline, &m)) < 0 || !m))
			return r < 0 ? r : skip_statement(ps, line);
	} else if (tok_is(&t, "SG_")) {
		return parse_cm_sg(ps);
	} else if (t.type == T_STR) {
		return expect(ps, ";");
	} else {
		return perr(ps, t.line, "bad CM_ object");
	}
	if (r < 0 || (r = next_type(ps, &t, T_STR, "comment string")) < 0)
		return r;
	return expect(ps, ";");
}

static bool tok_str_is(const struct tok *t, const char *s)
{
	return t->type == T_STR && t->len == strlen(s) && memcmp(t->s, s, t->len) == 0;
}

/*
 * GenMsgCycleTime's value: generators write "100", "100.0", "1e2" or the
 * string "100"; cantools takes each as int(Decimal(text)), truncating.
 */
static int next_cycle_time(struct parser *ps, int64_t *ret_ms)
{
	struct tok t;
	double v;
	int r = lex_next(ps, &t);

	if (r < 0)
		return r;
	if (t.type == T_STR)
		t.type = T_WORD; /* the number inside the quotes */
	if ((r = tok_double(ps, &t, &v)) < 0)
		return r;
	if (!(v > -1 && v < 3600001))
		return perr(ps, t.line, "cycle time %.*s ms out of range (0..3600000)", (int)(t.len > 20 ? 20 : t.len), t.s);
	*ret_ms = (int64_t)v;
	return 0;
}

/* BA_ "attr" BO_ id value ; - GenMsgCycleTime and SystemMessageLongSymbol kept */
static int parse_ba_bo(struct parser *ps, const struct tok *attr, unsigned line)
{
	struct dbc_msg *m;
	struct tok t;
	uint32_t id;
	bool ext;
	unsigned idline;
	int64_t ms = 0; /* set by next_cycle_time on success */
	int r;

	if ((r = next_msg_id(ps, &id, &ext, &idline)) < 0)
		return r;
	if (id == DBC_INDEPENDENT_ID || (r = ref_msg(ps, "BA_", id, ext, idline, &m)) < 0 || !m)
		return r < 0 ? r : skip_statement(ps, line);
	if (tok_str_is(attr, "GenMsgCycleTime")) {
		if ((r = next_cycle_time(ps, &ms)) < 0)
			return r;
		m->cycle_ms = (unsigned)ms;
	} else if (tok_str_is(attr, "SystemMessageLongSymbol")) {
		if ((r = next_type(ps, &t, T_STR, "long name")) < 0)
			return r;
		free(m->long_name);
		if (!(m->long_name = tok_dup(&t)))
			return -ENOMEM;
	} else {
		return skip_statement(ps, line);
	}
	return expect(ps, ";");
}

/* BA_ "attr" SG_ id name value ; - SystemSignalLongSymbol kept */
static int parse_ba_sg(struct parser *ps, const struct tok *attr, unsigned line)
{
	struct dbc_sig *s;
	struct tok t;
	int r;

	if ((r = next_sig_ref(ps, "BA_", &s)) != 0)
		return r < 0 ? r : skip_statement(ps, line);
	if (!tok_str_is(attr, "SystemSignalLongSymbol"))
		return skip_statement(ps, line);
	if ((r = next_type(ps, &t, T_STR, "long name")) < 0)
		return r;
	free(s->long_name);
	if (!(s->long_name = tok_dup(&t)))
		return -ENOMEM;
	return expect(ps, ";");
}

/* BA_: the cycle time (railmon check estimates the bus load from it) and
   the long names are kept; every other attribute is checked for its ';'. */
static int parse_ba(struct parser *ps, unsigned line)
{
	struct tok attr, t;
	int r;

	if ((r = lex_next(ps, &attr)) < 0)
		return r;
	if (attr.type != T_STR)
		return attr.type == T_PUNCT && *attr.s == ';' ? 0 : skip_statement(ps, line);
	if ((r = lex_next(ps, &t)) < 0)
		return r;
	if (tok_is(&t, "BO_"))
		return parse_ba_bo(ps, &attr, line);
	if (tok_is(&t, "SG_"))
		return parse_ba_sg(ps, &attr, line);
	return t.type == T_PUNCT && *t.s == ';' ? 0 : skip_statement(ps, line);
}

static int parse_statement(struct parser *ps, const struct tok *kw)
{
	unsigned line = kw->line;

	if (tok_is(kw, "VERSION")) {
		struct tok t;

		return next_type(ps, &t, T_STR, "version string");
	}
	if (tok_is(kw, "NS_"))
		return parse_ns(ps);
	if (tok_is(kw, "BS_"))
		return skip_line(ps, line);
	if (tok_is(kw, "BU_"))
		return parse_bu(ps);
	if (tok_is(kw, "BO_"))
		return parse_bo(ps, line);
	if (tok_is(kw, "SG_"))
		return parse_sg(ps, line);
	if (tok_is(kw, "CM_"))
		return parse_cm(ps, line);
	if (tok_is(kw, "VAL_"))
		return parse_val(ps, line);
	if (tok_is(kw, "SIG_VALTYPE_"))
		return parse_valtype(ps, line);
	if (tok_is(kw, "SG_MUL_VAL_"))
		return parse_mul_val(ps, line);
	if (tok_is(kw, "BA_"))
		return parse_ba(ps, line);
	/* BA_*, VAL_TABLE_, BO_TX_BU_, EV_, SIG_GROUP_, ...: all end with ';' */
	if (kw->type == T_WORD && kw->len > 1 && kw->s[kw->len - 1] == '_')
		return skip_statement(ps, line);
	return perr(ps, line, "unknown keyword '%.*s'", (int)(kw->len > 40 ? 40 : kw->len), kw->s);
}

int dbc_parse(struct dbc *dbc, const char *path, const char *text, size_t len,
              char *errbuf, size_t errlen)
{
	struct parser ps = {
		.dbc = dbc, .path = path, .start = text, .p = text, .end = text + len,
		.line = 1, .errbuf = errbuf, .errlen = errlen, .cur_msg = -1,
	};
	struct tok t;
	int r;

	/* editors on Windows write a UTF-8 byte order mark */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		ps.start = ps.p = text + 3;
	for (;;) {
		if ((r = lex_next(&ps, &t)) < 0)
			return r;
		if (t.type == T_EOF)
			return 0;
		if (t.type != T_WORD)
			return perr(&ps, t.line, "expected a keyword, found '%.*s'", (int)(t.len > 40 ? 40 : t.len), t.s);
		/* SG_ lines belong to the BO_ above them, up to any other statement */
		if (!tok_is(&t, "SG_") && !tok_is(&t, "BO_"))
			ps.cur_msg = -1;
		if ((r = parse_statement(&ps, &t)) < 0)
			return r;
	}
}
