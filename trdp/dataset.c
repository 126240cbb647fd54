/* SPDX-License-Identifier: MIT */
/*
 * dataset.c - a data set compiled into a flat list of steps (nested data
 * sets and fixed arrays unrolled, one loop per variable array of data
 * sets), and a payload decoded by walking the steps once.
 *
 * One job over ~600 lines, the data set's wire layout, so one file: the
 * compiler and the walker share the step list and must agree on every
 * step kind (apart, a kind could be compiled that no walk reads).
 *
 * The wire layout is the reference stack's (tau_marshall.c marshallDs()
 * writes each element right after the one before, big-endian, and aligns
 * only its host-side struct pointer): packed, no padding anywhere.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/byteorder.h"
#include "basic/utf8.h"
#include "dataset.h"

enum step_kind {
	STEP_VALUE,   /* one number */
	STEP_VALUES,  /* a variable array of numbers: the length register's items */
	STEP_TEXT,    /* CHAR8/UTF16: count items (fixed) or the length register's */
	STEP_LOOP,    /* a variable array of data sets: the steps up to `end`, repeated */
	STEP_END,
};

struct step {
	uint8_t kind;
	uint8_t type;
	bool var;              /* the count is the length register's (the element before) */
	uint32_t count;        /* STEP_TEXT: fixed item count */
	uint32_t max;          /* var: the most items */
	uint32_t leaf;
	uint32_t end;          /* STEP_LOOP: its STEP_END; STEP_END: its STEP_LOOP */
	uint32_t body_values;  /* STEP_LOOP: values per item */
	uint32_t body_bytes;   /* STEP_LOOP: bytes per item (at least 1) */
};

struct leaf {
	char *prefix, *suffix;
	bool dynamic;
	uint32_t max_items;
	uint32_t type;
	const char *unit;      /* the config's: a plan lives as long as its config */
	double scale, offset;
};

struct trdp_plan {
	uint32_t comid;
	struct step *steps;
	size_t n_steps, cap_steps;
	struct leaf *leaves;
	size_t n_leaves, cap_leaves;
	size_t min_bytes;
	size_t static_values;  /* values outside variable arrays */
};

/* What compiling carries down the nesting. */
struct compile {
	const struct trdp_config *cfg;
	const struct trdp_telegram *t;
	struct trdp_plan *plan;
	char *err;
	size_t errlen;
	const char *dyn;       /* in a loop: the leaf names' prefix (before the index) */
	size_t *bytes;         /* the byte count to add to: min_bytes, or the loop's item */
	uint32_t *values;      /* the value count to add to, in a loop */
	uint32_t loop_max;     /* in a loop: its most items */
};

static bool is_text(uint32_t type)
{
	return type == TRDP_TYPE_CHAR8 || type == TRDP_TYPE_UTF16;
}

__attribute__((format(printf, 3, 4)))
static int compile_fail(const struct compile *c, const struct trdp_element *e, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->err || !c->errlen)
		return -EINVAL;
	n = snprintf(c->err, c->errlen, "%s:%u:%u: telegram \"%s\" (ComId %u), element \"%s\": ", c->cfg->file,
	             (unsigned)e->line, (unsigned)e->column, c->t->name, (unsigned)c->t->comid, e->name);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int add_bytes(const struct compile *c, const struct trdp_element *e, uint64_t n)
{
	if (n > TRDP_DATASET_MAX_BYTES || *c->bytes + n > TRDP_DATASET_MAX_BYTES)
		return compile_fail(c, e, "the data set needs more than %u bytes", TRDP_DATASET_MAX_BYTES);
	*c->bytes += (size_t)n;
	return 0;
}

static int add_step(const struct compile *c, const struct trdp_element *e, struct step s)
{
	struct trdp_plan *p = c->plan;

	if (p->n_steps >= TRDP_PLAN_MAX_STEPS)
		return compile_fail(c, e, "the data set unrolls into more than %u steps", TRDP_PLAN_MAX_STEPS);
	if (p->n_steps == p->cap_steps) {
		size_t cap = p->cap_steps ? p->cap_steps * 2 : 16;
		struct step *n = reallocarray(p->steps, cap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->steps = n;
		p->cap_steps = cap;
	}
	p->steps[p->n_steps++] = s;
	return 0;
}

/* A leaf named name (owned by it from here, also on failure). */
static int add_leaf(const struct compile *c, const struct trdp_element *e, char *name, uint32_t max_items)
{
	struct trdp_plan *p = c->plan;
	struct leaf *l;

	if (!name)
		return -ENOMEM;
	if (p->n_leaves == p->cap_leaves) {
		size_t cap = p->cap_leaves ? p->cap_leaves * 2 : 16;
		struct leaf *n = reallocarray(p->leaves, cap, sizeof(*n));

		if (!n) {
			free(name);
			return -ENOMEM;
		}
		p->leaves = n;
		p->cap_leaves = cap;
	}
	l = &p->leaves[p->n_leaves];
	*l = (struct leaf){ .type = e->type, .unit = e->unit, .scale = e->scale, .offset = e->offset,
	                    .max_items = c->dyn ? c->loop_max : max_items };
	if (c->dyn) {
		/* in a loop: name is the part after the index */
		l->prefix = strdup(c->dyn);
		l->suffix = name;
		l->dynamic = true;
		if (!l->prefix) {
			free(name);
			return -ENOMEM;
		}
	} else if (max_items) {
		l->prefix = name;
		l->suffix = strdup("");
		l->dynamic = true;
		if (!l->suffix) {
			free(name);
			return -ENOMEM;
		}
	} else {
		l->prefix = name;
	}
	p->n_leaves++;
	if (c->values)
		(*c->values)++;
	else if (!max_items)
		p->static_values++;
	return 0;
}

__attribute__((format(printf, 1, 2)))
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, f);
	r = vasprintf(&s, f, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

/* The length register's maximum: the previous element's type's, capped. */
static uint32_t var_max(const struct trdp_dataset *d, size_t i)
{
	size_t bytes = trdp_type_size(d->elements[i - 1].type);

	return bytes == 1 ? 255u : TRDP_VAR_MAX;
}

static int compile_ds(struct compile *c, size_t ds, const char *base);

/* One base-type element: its leaves and steps. */
static int compile_base(struct compile *c, const struct trdp_dataset *d, size_t i, const char *name)
{
	const struct trdp_element *e = &d->elements[i];
	size_t size = trdp_type_size(e->type);
	uint32_t n = e->array_size;
	struct step s = { .type = (uint8_t)e->type, .leaf = (uint32_t)c->plan->n_leaves };
	int r;

	if (is_text(e->type)) {
		s.kind = STEP_TEXT;
		s.count = n;
		s.var = n == 0;
		s.max = s.var ? var_max(d, i) : 0;
		if ((r = add_bytes(c, e, (uint64_t)size * n)) < 0 || (r = add_leaf(c, e, strdup(name), 0)) < 0)
			return r;
		return add_step(c, e, s);
	}
	if (n == 0) {
		if (c->dyn)
			return compile_fail(c, e, "a variable array inside a variable array of data sets"
			                    " (not supported: one variable array per channel)");
		s.kind = STEP_VALUES;
		s.var = true;
		s.max = var_max(d, i);
		if ((r = add_leaf(c, e, strdup(name), s.max)) < 0)
			return r;
		return add_step(c, e, s);
	}
	if ((r = add_bytes(c, e, (uint64_t)size * n)) < 0)
		return r;
	s.kind = STEP_VALUE;
	for (uint32_t k = 0; k < n; k++) {
		s.leaf = (uint32_t)c->plan->n_leaves;
		r = add_leaf(c, e, n == 1 ? strdup(name) : fmt("%s[%u]", name, (unsigned)k), 0);
		if (r < 0 || (r = add_step(c, e, s)) < 0)
			return r;
	}
	return 0;
}

/* A variable array of data sets: a loop around the nested set's steps. */
static int compile_loop(struct compile *c, const struct trdp_dataset *d, size_t i, const char *name)
{
	const struct trdp_element *e = &d->elements[i];
	struct compile in = *c;
	size_t begin = c->plan->n_steps, item_bytes = 0;
	uint32_t item_values = 0;
	int r;

	if (c->dyn)
		return compile_fail(c, e, "a variable array inside a variable array of data sets"
		                    " (not supported: one variable array per channel)");
	if ((r = add_step(c, e, (struct step){ .kind = STEP_LOOP, .var = true, .max = var_max(d, i),
	                                       .leaf = (uint32_t)c->plan->n_leaves })) < 0)
		return r;
	in.dyn = name;
	in.loop_max = var_max(d, i);
	in.bytes = &item_bytes;
	in.values = &item_values;
	if ((r = compile_ds(&in, e->nested, "")) < 0)
		return r;
	if ((r = add_step(c, e, (struct step){ .kind = STEP_END, .end = (uint32_t)begin })) < 0)
		return r;
	c->plan->steps[begin].end = (uint32_t)(c->plan->n_steps - 1);
	c->plan->steps[begin].body_values = item_values;
	/* every data set starts with an element of at least one byte (a
	   variable array needs one before it), so an item is never empty */
	c->plan->steps[begin].body_bytes = item_bytes ? (uint32_t)item_bytes : 1;
	return 0;
}

static int compile_element(struct compile *c, const struct trdp_dataset *d, size_t i, const char *base)
{
	const struct trdp_element *e = &d->elements[i];
	char *name = *base ? fmt("%s.%s", base, e->name) : fmt(".%s", e->name);
	int r = 0;

	if (!name)
		return -ENOMEM;
	if (e->type != TRDP_TYPE_INVALID)
		r = compile_base(c, d, i, name);
	else if (e->array_size == 0)
		r = compile_loop(c, d, i, name);
	else if (e->array_size == 1)
		r = compile_ds(c, e->nested, name);
	else
		for (uint32_t k = 0; k < e->array_size && r == 0; k++) {
			char *item = fmt("%s[%u]", name, (unsigned)k);

			r = item ? compile_ds(c, e->nested, item) : -ENOMEM;
			free(item);
		}
	free(name);
	return r;
}

/* base: the names so far ("Telegram", "Telegram.Inner[2]", or in a loop
   the part after the index, "" at its start). */
static int compile_ds(struct compile *c, size_t ds, const char *base)
{
	const struct trdp_dataset *d = &c->cfg->datasets[ds];
	int r;

	for (size_t i = 0; i < d->n_elements; i++)
		if ((r = compile_element(c, d, i, base)) < 0)
			return r;
	return 0;
}

int trdp_plan_compile(const struct trdp_config *cfg, const struct trdp_telegram *t,
                      struct trdp_plan **ret_plan, char *err, size_t errlen)
{
	struct trdp_plan *p;
	struct compile c;
	int r;

	if (!cfg || !t || t->dataset < 0 || (size_t)t->dataset >= cfg->n_datasets || !ret_plan)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->comid = t->comid;
	c = (struct compile){ .cfg = cfg, .t = t, .plan = p, .err = err, .errlen = errlen, .bytes = &p->min_bytes };
	r = compile_ds(&c, (size_t)t->dataset, t->name);
	if (r < 0) {
		if (r == -ENOMEM && err && errlen)
			snprintf(err, errlen, "%s: out of memory", cfg->file);
		trdp_plan_free(p);
		return r;
	}
	*ret_plan = p;
	return 0;
}

struct trdp_plan *trdp_plan_free(struct trdp_plan *plan)
{
	if (!plan)
		return NULL;
	for (size_t i = 0; i < plan->n_leaves; i++) {
		free(plan->leaves[i].prefix);
		free(plan->leaves[i].suffix);
	}
	free(plan->leaves);
	free(plan->steps);
	free(plan);
	return NULL;
}

/* ---- what a plan holds ---- */

uint32_t trdp_plan_comid(const struct trdp_plan *plan)
{
	return plan ? plan->comid : 0;
}

size_t trdp_plan_leaves(const struct trdp_plan *plan)
{
	return plan ? plan->n_leaves : 0;
}

size_t trdp_plan_min_bytes(const struct trdp_plan *plan)
{
	return plan ? plan->min_bytes : 0;
}

int trdp_plan_leaf(const struct trdp_plan *plan, size_t leaf, struct trdp_leaf_info *ret_info)
{
	const struct leaf *l;

	if (!plan || leaf >= plan->n_leaves || !ret_info)
		return -EINVAL;
	l = &plan->leaves[leaf];
	*ret_info = (struct trdp_leaf_info){ .prefix = l->prefix, .suffix = l->suffix ? l->suffix : "",
	                                     .dynamic = l->dynamic, .max_items = l->max_items, .type = l->type,
	                                     .text = is_text(l->type), .unit = l->unit, .scale = l->scale,
	                                     .offset = l->offset };
	return 0;
}

int trdp_plan_value_name(const struct trdp_plan *plan, uint32_t leaf, uint32_t index, char *buf, size_t cap)
{
	const struct leaf *l;
	int n;

	if (!plan || leaf >= plan->n_leaves || (!buf && cap))
		return -EINVAL;
	l = &plan->leaves[leaf];
	if (l->dynamic)
		n = snprintf(buf, cap, "%s[%u]%s", l->prefix, (unsigned)index, l->suffix);
	else
		n = snprintf(buf, cap, "%s", l->prefix);
	return n < 0 ? -EINVAL : n;
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

size_t trdp_plan_values_max(const struct trdp_plan *plan, size_t len)
{
	size_t n;

	if (!plan)
		return 0;
	n = plan->static_values;
	for (size_t i = 0; i < plan->n_steps; i++) {
		const struct step *s = &plan->steps[i];

		if (s->kind == STEP_VALUES)
			n += min_size(s->max, len / trdp_type_size(s->type));
		else if (s->kind == STEP_LOOP) {
			n += min_size(s->max, len / s->body_bytes) * s->body_values;
			i = s->end;
		}
	}
	return n;
}

size_t trdp_plan_text_max(size_t len)
{
	/* a CHAR8 byte gives at most 3 (U+FFFD), a UTF-16 unit 3, a pair 4 */
	return len * 3;
}

/* ---- decoding ---- */

struct decode {
	const struct trdp_plan *plan;
	const uint8_t *p;
	size_t len, pos;
	struct trdp_value *values;
	size_t nvalues;
	char *text;
	size_t textcap;
	struct trdp_decode_result *res;
	uint64_t length;       /* the last 8-32 bit integer's bits: a variable array's length */
	uint32_t index;        /* the loop's item, 0 outside */
};

static int short_payload(struct decode *d, uint32_t leaf, size_t need)
{
	d->res->offset = (uint32_t)d->pos;
	d->res->need = (uint32_t)need;
	d->res->leaf = leaf;
	return -EBADMSG;
}

static struct trdp_value *next_value(struct decode *d, uint32_t leaf)
{
	struct trdp_value *v;

	if (d->res->count >= d->nvalues) {
		d->res->offset = (uint32_t)d->pos;
		d->res->leaf = leaf;
		return NULL;
	}
	v = &d->values[d->res->count];
	*v = (struct trdp_value){ .leaf = leaf, .index = d->index, .offset = (uint32_t)d->pos };
	return v;
}

/* One number at d->pos into v (its bytes are there). */
static void read_number(struct decode *d, const struct leaf *l, struct trdp_value *v)
{
	const uint8_t *p = d->p + d->pos;
	size_t size = trdp_type_size(l->type);
	uint64_t u = basic_get_ben(p, size);
	double x;

	v->type = l->type;
	switch (l->type) {
	case TRDP_TYPE_INT8: v->raw.i = (int8_t)u; x = (double)v->raw.i; break;
	case TRDP_TYPE_INT16: v->raw.i = (int16_t)u; x = (double)v->raw.i; break;
	case TRDP_TYPE_INT32: v->raw.i = (int32_t)u; x = (double)v->raw.i; break;
	case TRDP_TYPE_INT64: v->raw.i = (int64_t)u; x = (double)v->raw.i; break;
	case TRDP_TYPE_REAL32: {
		uint32_t bits = (uint32_t)u;
		float f;

		memcpy(&f, &bits, sizeof(f));
		v->raw.f = f;
		x = v->raw.f;
		break;
	}
	case TRDP_TYPE_REAL64:
		memcpy(&v->raw.f, &u, sizeof(v->raw.f));
		x = v->raw.f;
		break;
	case TRDP_TYPE_TIMEDATE48:
		v->raw.u = u >> 16;
		v->sub = (int32_t)(u & 0xffff);
		x = (double)v->raw.u + (double)v->sub / 65536.0;
		break;
	case TRDP_TYPE_TIMEDATE64:
		v->raw.u = u >> 32;
		v->sub = (int32_t)(uint32_t)u;
		x = (double)v->raw.u + (double)v->sub / 1e6;
		break;
	default: /* BOOL8, UINT*, TIMEDATE32 */
		v->raw.u = u;
		x = (double)u;
		break;
	}
	/* two statements: no fused multiply-add, the same double as the tests'
	   Python computes */
	x = x * l->scale;
	v->value = x + l->offset;
	if (size <= 4 && l->type != TRDP_TYPE_REAL32 && l->type != TRDP_TYPE_TIMEDATE32)
		d->length = u;
	d->pos += size;
}

static int put_text(struct decode *d, const char *s, size_t n)
{
	if (d->textcap - d->res->text_used < n)
		return -ENOBUFS;
	memcpy(d->text + d->res->text_used, s, n);
	d->res->text_used += n;
	return 0;
}

static int put_code(struct decode *d, uint32_t c)
{
	char b[4];
	size_t n;

	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xc0 | c >> 6);
		b[1] = (char)(0x80 | (c & 0x3f));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xe0 | c >> 12);
		b[1] = (char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (char)(0x80 | (c & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | c >> 18);
		b[1] = (char)(0x80 | (c >> 12 & 0x3f));
		b[2] = (char)(0x80 | (c >> 6 & 0x3f));
		b[3] = (char)(0x80 | (c & 0x3f));
		n = 4;
	}
	return put_text(d, b, n);
}

/* CHAR8 text up to its first NUL; a byte that starts no well-formed
   UTF-8 sequence becomes U+FFFD, so the text is always UTF-8. */
static int char8_text(struct decode *d, const uint8_t *p, size_t n)
{
	const char *s = (const char *)p;
	const char *nul = memchr(s, 0, n);
	size_t end = nul ? (size_t)(nul - s) : n;

	for (size_t i = 0; i < end;) {
		size_t k = basic_utf8_seq(s + i, end - i);
		int r = k ? put_text(d, s + i, k) : put_code(d, 0xfffd);

		if (r < 0)
			return r;
		i += k ? k : 1;
	}
	return 0;
}

/* UTF-16 big-endian up to its first 0 unit; surrogate pairs joined, a
   lone surrogate is U+FFFD. */
static int utf16_text(struct decode *d, const uint8_t *p, size_t units)
{
	for (size_t i = 0; i < units; i++) {
		uint32_t c = (uint32_t)basic_get_ben(p + 2 * i, 2);
		int r;

		if (c == 0)
			break;
		if (c >= 0xd800 && c <= 0xdbff && i + 1 < units) {
			uint32_t lo = (uint32_t)basic_get_ben(p + 2 * i + 2, 2);

			if (lo >= 0xdc00 && lo <= 0xdfff) {
				c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
				i++;
			}
		}
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;
		if ((r = put_code(d, c)) < 0)
			return r;
	}
	return 0;
}

/* A variable count: the length register, at most max. */
static int var_count(struct decode *d, const struct step *s, uint32_t *ret)
{
	if (d->length > s->max) {
		d->res->offset = (uint32_t)d->pos;
		d->res->need = d->length > UINT32_MAX ? UINT32_MAX : (uint32_t)d->length;
		d->res->leaf = s->leaf;
		return -ERANGE;
	}
	*ret = (uint32_t)d->length;
	return 0;
}

static int step_text(struct decode *d, const struct step *s)
{
	const struct leaf *l = &d->plan->leaves[s->leaf];
	size_t unit = trdp_type_size(s->type);
	struct trdp_value *v;
	uint32_t n = s->count;
	size_t start;
	int r;

	if (s->var && (r = var_count(d, s, &n)) < 0)
		return r;
	if (d->len - d->pos < (size_t)n * unit)
		return short_payload(d, s->leaf, (size_t)n * unit);
	if (!(v = next_value(d, s->leaf)))
		return -ENOBUFS;
	v->type = l->type;
	start = d->res->text_used;
	r = s->type == TRDP_TYPE_CHAR8 ? char8_text(d, d->p + d->pos, n) : utf16_text(d, d->p + d->pos, n);
	if (r < 0) {
		d->res->offset = (uint32_t)d->pos;
		d->res->leaf = s->leaf;
		d->res->text_used = start;
		return r;
	}
	v->text_off = (uint32_t)start;
	v->text_len = (uint32_t)(d->res->text_used - start);
	d->pos += (size_t)n * unit;
	d->res->count++;
	return 0;
}

static int step_numbers(struct decode *d, const struct step *s)
{
	const struct leaf *l = &d->plan->leaves[s->leaf];
	size_t size = trdp_type_size(s->type);
	uint32_t n = 1, keep = d->index;
	int r;

	if (s->kind == STEP_VALUES && (r = var_count(d, s, &n)) < 0)
		return r;
	for (uint32_t k = 0; k < n; k++) {
		struct trdp_value *v;

		if (d->len - d->pos < size)
			return short_payload(d, s->leaf, size);
		if (s->kind == STEP_VALUES)
			d->index = k;
		v = next_value(d, s->leaf);
		d->index = keep;
		if (!v)
			return -ENOBUFS;
		read_number(d, l, v);
		d->res->count++;
	}
	return 0;
}

static int run_steps(struct decode *d)
{
	const struct trdp_plan *p = d->plan;
	uint32_t items = 0;
	int r;

	for (size_t i = 0; i < p->n_steps; i++) {
		const struct step *s = &p->steps[i];

		switch (s->kind) {
		case STEP_VALUE:
		case STEP_VALUES:
			r = step_numbers(d, s);
			break;
		case STEP_TEXT:
			r = step_text(d, s);
			break;
		case STEP_LOOP:
			/* its count is read once, before items change the register */
			if ((r = var_count(d, s, &items)) == 0 && items == 0)
				i = s->end;
			d->index = 0;
			break;
		default: /* STEP_END */
			r = 0;
			if (++d->index < items)
				i = s->end; /* the loop step: its first item step follows */
			else
				d->index = 0;
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

int trdp_plan_decode(const struct trdp_plan *plan, const uint8_t *payload, size_t len,
                     struct trdp_value *values, size_t nvalues, char *text, size_t textcap,
                     struct trdp_decode_result *res)
{
	struct decode d;
	int r;

	if (!res)
		return -EINVAL;
	*res = (struct trdp_decode_result){ 0 };
	if (!plan || (!payload && len) || (!values && nvalues) || (!text && textcap))
		return -EINVAL;
	d = (struct decode){ .plan = plan, .p = payload, .len = len, .values = values, .nvalues = nvalues,
	                     .text = text, .textcap = textcap, .res = res };
	r = run_steps(&d);
	res->used = d.pos;
	return r;
}

int trdp_decode_strerror(const struct trdp_plan *plan, int rc, const struct trdp_decode_result *res,
                         char *buf, size_t cap)
{
	char name[256] = "?";
	uint32_t comid = trdp_plan_comid(plan);

	if (!res)
		return snprintf(buf, cap, "ComId %u: %s", (unsigned)comid, strerror(rc < 0 ? -rc : rc));
	if (plan && res->leaf < plan->n_leaves) {
		const struct leaf *l = &plan->leaves[res->leaf];

		snprintf(name, sizeof(name), "%s%s%s", l->prefix, l->dynamic ? "[]" : "", l->dynamic ? l->suffix : "");
	}
	switch (rc) {
	case 0:
		return snprintf(buf, cap, "ComId %u: %zu values from %zu bytes", (unsigned)comid, res->count, res->used);
	case -EBADMSG:
		return snprintf(buf, cap, "ComId %u: the payload ends at byte offset %u, %s needs %u bytes there"
		                " (%zu values decoded)", (unsigned)comid, (unsigned)res->offset, name,
		                (unsigned)res->need, res->count);
	case -ERANGE:
		return snprintf(buf, cap, "ComId %u: at byte offset %u, %s has %u items, more than its length's"
		                " type allows", (unsigned)comid, (unsigned)res->offset, name, (unsigned)res->need);
	case -ENOBUFS:
		return snprintf(buf, cap, "ComId %u: at byte offset %u, no room for %s's value (%zu values decoded)",
		                (unsigned)comid, (unsigned)res->offset, name, res->count);
	default:
		return snprintf(buf, cap, "ComId %u: %s", (unsigned)comid, strerror(rc < 0 ? -rc : rc));
	}
}
