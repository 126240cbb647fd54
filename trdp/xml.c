/* SPDX-License-Identifier: MIT */
/*
 * xml.c - the device's TRDP XML configuration read with libexpat: the
 * telegrams of each <bus-interface> and the <data-set-list>, checked, and
 * each telegram's data set compiled (dataset.c).  Element and attribute
 * names, defaults and the type numbers are those of the TCNopen reference
 * stack (tau_xml.c readTelegramDef()/tau_readXmlDatasetConfig(),
 * trdp-config.xsd); unknown elements and attributes are ignored, as the
 * reference ignores them.
 *
 * One job over ~600 lines, the XML into a checked struct trdp_config, so
 * one file: the expat callbacks build it on one parser state (struct
 * xstate, with the first error's line and column), and the checks across
 * elements (references, nesting, duplicates) run on what they built.
 */
#include <errno.h>
#include <expat.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/parse.h"
#include "dataset.h"
#include "xml.h"

/* What an open tag is, for its children's sake. */
enum tag {
	TAG_OTHER,
	TAG_BUS_INTERFACE,
	TAG_TELEGRAM,
	TAG_DATA_SET,
};

/* Deeper XML is refused: the format nests five levels. */
#define XML_DEPTH_MAX 256

/* A type named by a number above 30 or by a name that is no base type:
   resolved once every data set is read. */
struct ref {
	size_t ds, el;
	char *name;       /* NULL: by id */
	uint32_t id;
};

struct xstate {
	XML_Parser parser;
	struct trdp_config *cfg;
	char *err;
	size_t errlen;
	int rc;
	unsigned depth;
	uint8_t tags[XML_DEPTH_MAX];
	char *interface;        /* the open <bus-interface>'s name */
	int telegram;           /* the open telegram's index; -1 none or merged */
	int dataset;            /* the open data set's index, -1 none */
	size_t cap_tel, cap_ds, cap_el, cap_refs;
	struct ref *refs;
	size_t n_refs;
};

/* The type names of the reference (tau_xml.c string2type()). */
static const struct {
	const char *name;
	uint32_t type;
} type_names[] = {
	{ "BITSET8", 1 }, { "BOOL8", 1 }, { "ANTIVALENT8", 1 }, { "CHAR8", 2 }, { "UTF8", 2 },
	{ "UTF16", 3 }, { "INT8", 4 }, { "INT16", 5 }, { "INT32", 6 }, { "INT64", 7 },
	{ "UINT8", 8 }, { "UINT16", 9 }, { "UINT32", 10 }, { "UINT64", 11 }, { "REAL32", 12 },
	{ "REAL64", 13 }, { "TIMEDATE32", 14 }, { "TIMEDATE48", 15 }, { "TIMEDATE64", 16 },
};

/* ---- errors ---- */

__attribute__((format(printf, 4, 5)))
static int fail_at(struct xstate *x, uint32_t line, uint32_t col, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (x->rc < 0)
		return x->rc;
	x->rc = -EINVAL;
	if (x->err && x->errlen) {
		n = snprintf(x->err, x->errlen, "%s:%u:%u: ", x->cfg->file, (unsigned)line, (unsigned)col);
		if (n >= 0 && (size_t)n < x->errlen) {
			va_start(ap, fmt);
			vsnprintf(x->err + n, x->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	if (x->parser)
		XML_StopParser(x->parser, XML_FALSE);
	return x->rc;
}

/* expat's position is that of the event being handled: the start tag. */
static uint32_t cur_line(const struct xstate *x)
{
	return (uint32_t)XML_GetCurrentLineNumber(x->parser);
}

static uint32_t cur_col(const struct xstate *x)
{
	return (uint32_t)XML_GetCurrentColumnNumber(x->parser) + 1;
}

#define FAIL(x, ...) fail_at((x), cur_line(x), cur_col(x), __VA_ARGS__)

/* ---- attribute values ---- */

/*
 * A decimal number within 32 bits, spaces around allowed.  Not
 * basic_parse_u64(): the reference reads these with strtoul(.., 10), so
 * "010" is ten here, never C's octal eight.
 */
static int parse_dec_u32(const char *s, uint32_t *ret)
{
	uint64_t v = 0;
	size_t digits = 0;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	for (; *s >= '0' && *s <= '9'; s++, digits++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > UINT32_MAX)
			return -ERANGE;
	}
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	if (!digits || *s)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static int attr_u32(struct xstate *x, const char *tag, const char *attr, const char *value, uint32_t *ret)
{
	int r = parse_dec_u32(value, ret);

	if (r == -ERANGE)
		return FAIL(x, "<%s %s=\"%s\">: above 4294967295", tag, attr, value);
	if (r < 0)
		return FAIL(x, "<%s %s=\"%s\">: not a decimal number", tag, attr, value);
	return 0;
}

static int attr_double(struct xstate *x, const char *attr, const char *value, double *ret)
{
	char buf[64];
	size_t b = 0, e = strlen(value);

	/* the reference's strtod() skips leading spaces; trailing ones too here */
	while (b < e && (value[b] == ' ' || value[b] == '\t'))
		b++;
	while (e > b && (value[e - 1] == ' ' || value[e - 1] == '\t'))
		e--;
	if (e - b >= sizeof(buf))
		return FAIL(x, "<element %s=\"%.40s...\">: not a number", attr, value);
	memcpy(buf, value + b, e - b);
	buf[e - b] = '\0';
	if (basic_parse_double(buf, ret) < 0)
		return FAIL(x, "<element %s=\"%s\">: not a finite number", attr, value);
	return 0;
}

/* A name for channels: text without control characters (expat has made
   sure it is UTF-8). */
static int name_ok(struct xstate *x, const char *tag, const char *value)
{
	if (!*value)
		return FAIL(x, "<%s name=\"\">: an empty name", tag);
	for (const unsigned char *p = (const unsigned char *)value; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return FAIL(x, "<%s name=...>: a control character (0x%02x) in the name", tag, *p);
	return 0;
}

static char *xstrdup(struct xstate *x, const char *s)
{
	char *d = strdup(s);

	if (!d && x->rc == 0) {
		x->rc = -ENOMEM;
		XML_StopParser(x->parser, XML_FALSE);
	}
	return d;
}

/* Room for one more of n in *arr (*cap grows by doubling). */
static int grow(struct xstate *x, void **arr, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return 0;
	p = reallocarray(*arr, c, size);
	if (!p) {
		x->rc = -ENOMEM;
		XML_StopParser(x->parser, XML_FALSE);
		return -ENOMEM;
	}
	*arr = p;
	*cap = c;
	return 0;
}

/* ---- telegrams ---- */

/* A second telegram of the same ComId: the same telegram on another
   interface is kept once (1, merged); anything else is an error. */
static int telegram_dup(struct xstate *x, uint32_t comid, const char *name, uint32_t dsid)
{
	const struct trdp_config *c = x->cfg;

	for (size_t i = 0; i < c->n_telegrams; i++) {
		const struct trdp_telegram *o = &c->telegrams[i];

		if (o->comid != comid)
			continue;
		if (strcmp(o->name, name) || o->dataset_id != dsid || !strcmp(o->interface, x->interface ? x->interface : ""))
			return FAIL(x, "ComId %u defined again (first at line %u, \"%s\" with data set %u)",
			            (unsigned)comid, (unsigned)o->line, o->name, (unsigned)o->dataset_id);
		return 1;
	}
	return 0;
}

static bool telegram_named(const struct trdp_config *c, const char *name)
{
	for (size_t i = 0; i < c->n_telegrams; i++)
		if (!strcmp(c->telegrams[i].name, name))
			return true;
	return false;
}

/* The channels' prefix: the name, unique.  The reference's own examples
   give two ComIds one name (test6.xml, trdp-md-test.xml); the later one
   becomes "name#ComId", counted in cfg->renamed. */
static char *telegram_name(struct xstate *x, const char *name, uint32_t comid)
{
	char *n;

	if (!telegram_named(x->cfg, name))
		return xstrdup(x, name);
	if (asprintf(&n, "%s#%u", name, (unsigned)comid) < 0) {
		x->rc = -ENOMEM;
		XML_StopParser(x->parser, XML_FALSE);
		return NULL;
	}
	if (telegram_named(x->cfg, n)) {
		FAIL(x, "telegram name \"%s\" used again, and \"%s\" too", name, n);
		free(n);
		return NULL;
	}
	x->cfg->renamed++;
	return n;
}

static void telegram_start(struct xstate *x, const char **atts)
{
	const char *name = NULL;
	uint32_t comid = 0, dsid = 0;
	bool have_comid = false;
	char gen[32];
	struct trdp_telegram *t;
	int r;

	for (size_t i = 0; atts[i]; i += 2) {
		if (!strcmp(atts[i], "com-id")) {
			if (attr_u32(x, "telegram", atts[i], atts[i + 1], &comid) < 0)
				return;
			have_comid = true;
		} else if (!strcmp(atts[i], "data-set-id")) {
			if (attr_u32(x, "telegram", atts[i], atts[i + 1], &dsid) < 0)
				return;
		} else if (!strcmp(atts[i], "name")) {
			if (name_ok(x, "telegram", atts[i + 1]) < 0)
				return;
			name = atts[i + 1];
		}
	}
	if (!have_comid) {
		FAIL(x, "<telegram> without com-id");
		return;
	}
	if (!name) {
		snprintf(gen, sizeof(gen), "comid%u", (unsigned)comid);
		name = gen;
	}
	r = telegram_dup(x, comid, name, dsid);
	if (r < 0)
		return;
	if (r > 0) {
		x->cfg->merged++;
		x->telegram = -1;
		return;
	}
	if (grow(x, (void **)&x->cfg->telegrams, &x->cap_tel, x->cfg->n_telegrams, sizeof(*t)) < 0)
		return;
	t = &x->cfg->telegrams[x->cfg->n_telegrams];
	*t = (struct trdp_telegram){ .comid = comid, .dataset_id = dsid, .dataset = -1,
	                             .line = cur_line(x), .column = cur_col(x) };
	t->name = telegram_name(x, name, comid);
	t->interface = t->name ? xstrdup(x, x->interface ? x->interface : "") : NULL;
	if (!t->name || !t->interface) {
		free(t->name);
		free(t->interface);
		return;
	}
	x->telegram = (int)x->cfg->n_telegrams++;
}

static void pd_parameter(struct xstate *x, struct trdp_telegram *t, const char **atts)
{
	t->pd = true;
	for (size_t i = 0; atts[i]; i += 2) {
		if (!strcmp(atts[i], "cycle")) {
			if (attr_u32(x, "pd-parameter", atts[i], atts[i + 1], &t->cycle_us) < 0)
				return;
		} else if (!strcmp(atts[i], "timeout")) {
			if (attr_u32(x, "pd-parameter", atts[i], atts[i + 1], &t->timeout_us) < 0)
				return;
		}
	}
}

static void md_parameter(struct xstate *x, struct trdp_telegram *t, const char **atts)
{
	t->md = true;
	for (size_t i = 0; atts[i]; i += 2) {
		if (!strcmp(atts[i], "reply-timeout")) {
			if (attr_u32(x, "md-parameter", atts[i], atts[i + 1], &t->reply_timeout_us) < 0)
				return;
		} else if (!strcmp(atts[i], "confirm-timeout")) {
			if (attr_u32(x, "md-parameter", atts[i], atts[i + 1], &t->confirm_timeout_us) < 0)
				return;
		} else if (!strcmp(atts[i], "protocol")) {
			/* the reference: "TCP" in any case is TCP, anything else UDP */
			t->md_tcp = !strcasecmp(atts[i + 1], "TCP");
		}
	}
}

/* ---- data sets ---- */

static void dataset_start(struct xstate *x, const char **atts)
{
	struct trdp_config *c = x->cfg;
	struct trdp_dataset *d;
	const char *name = "";
	uint32_t id = 0;
	bool have_id = false;

	for (size_t i = 0; atts[i]; i += 2) {
		if (!strcmp(atts[i], "id")) {
			if (attr_u32(x, "data-set", atts[i], atts[i + 1], &id) < 0)
				return;
			have_id = true;
		} else if (!strcmp(atts[i], "name")) {
			if (name_ok(x, "data-set", atts[i + 1]) < 0)
				return;
			name = atts[i + 1];
		}
	}
	if (!have_id) {
		FAIL(x, "<data-set> without id");
		return;
	}
	if (id <= TRDP_TYPE_RESERVED_MAX) {
		FAIL(x, "<data-set id=\"%u\">: an id must be above %u (lower numbers are the element types)",
		     (unsigned)id, TRDP_TYPE_RESERVED_MAX);
		return;
	}
	for (size_t i = 0; i < c->n_datasets; i++) {
		if (c->datasets[i].id == id) {
			FAIL(x, "data set %u defined again (first at line %u)", (unsigned)id,
			     (unsigned)c->datasets[i].line);
			return;
		}
		if (*name && !strcmp(c->datasets[i].name, name)) {
			FAIL(x, "data set name \"%s\" used again (first at line %u)", name,
			     (unsigned)c->datasets[i].line);
			return;
		}
	}
	if (grow(x, (void **)&c->datasets, &x->cap_ds, c->n_datasets, sizeof(*d)) < 0)
		return;
	d = &c->datasets[c->n_datasets];
	*d = (struct trdp_dataset){ .id = id, .line = cur_line(x), .column = cur_col(x) };
	d->name = xstrdup(x, name);
	if (!d->name)
		return;
	x->cap_el = 0;
	x->dataset = (int)c->n_datasets++;
}

/* Is an element a single integer of 8 to 32 bits, that can give the length
   of a variable array after it?  The reference (tau_marshall.c) takes the
   length from the last 8-, 16- or 32-bit value it copied. */
static bool is_length(const struct trdp_element *e)
{
	switch (e->type) {
	case TRDP_TYPE_INT8: case TRDP_TYPE_INT16: case TRDP_TYPE_INT32:
	case TRDP_TYPE_UINT8: case TRDP_TYPE_UINT16: case TRDP_TYPE_UINT32:
		return e->array_size == 1;
	default:
		return false;
	}
}

/* The type attribute: a name, a number, or a data set (a pending ref). */
static int element_type(struct xstate *x, struct trdp_element *e, const char *value, size_t ds, size_t el)
{
	uint32_t n = 0;
	struct ref *rf;

	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (!strcmp(value, type_names[i].name)) {
			e->type = type_names[i].type;
			return 0;
		}
	if (parse_dec_u32(value, &n) == 0) {
		if (n >= 1 && n < TRDP_TYPE_MAX) {
			e->type = n;
			return 0;
		}
		if (n <= TRDP_TYPE_RESERVED_MAX)
			return FAIL(x, "<element type=\"%s\">: no such type (1-16 are the types, above 30 a data set's id)",
			            value);
	} else if (!*value || strchr(" \t0123456789", *value)) {
		return FAIL(x, "<element type=\"%s\">: not a type", value);
	}
	if (grow(x, (void **)&x->refs, &x->cap_refs, x->n_refs, sizeof(*rf)) < 0)
		return -ENOMEM;
	rf = &x->refs[x->n_refs];
	*rf = (struct ref){ .ds = ds, .el = el, .id = n };
	if (parse_dec_u32(value, &n) < 0) {
		rf->name = xstrdup(x, value);
		if (!rf->name)
			return -ENOMEM;
	}
	x->n_refs++;
	e->type = TRDP_TYPE_INVALID;
	return 0;
}

static int element_attrs(struct xstate *x, struct trdp_element *e, const char **atts, size_t ds, size_t el,
                         const char **ret_name)
{
	bool have_type = false;

	for (size_t i = 0; atts[i]; i += 2) {
		const char *a = atts[i], *v = atts[i + 1];

		if (!strcmp(a, "type")) {
			if (element_type(x, e, v, ds, el) < 0)
				return -EINVAL;
			have_type = true;
		} else if (!strcmp(a, "array-size")) {
			if (attr_u32(x, "element", a, v, &e->array_size) < 0)
				return -EINVAL;
		} else if (!strcmp(a, "name")) {
			if (name_ok(x, "element", v) < 0)
				return -EINVAL;
			*ret_name = v;
		} else if (!strcmp(a, "unit")) {
			free(e->unit);
			if (!(e->unit = xstrdup(x, v)))
				return -ENOMEM;
		} else if (!strcmp(a, "scale")) {
			if (attr_double(x, a, v, &e->scale) < 0)
				return -EINVAL;
		} else if (!strcmp(a, "offset")) {
			if (attr_double(x, a, v, &e->offset) < 0)
				return -EINVAL;
		}
	}
	if (!have_type)
		return FAIL(x, "<element> without type");
	return 0;
}

static bool element_named(const struct trdp_dataset *d, const char *name)
{
	for (size_t i = 0; i + 1 < d->n_elements; i++)
		if (d->elements[i].name && !strcmp(d->elements[i].name, name))
			return true;
	return false;
}

/* The element's part of its channels' names, unique in its data set.  The
   reference's examples repeat a name (interoperability_test.xml: "UINT16"
   before each variable array); the second becomes "UINT16#2", the third
   "UINT16#3", counted in cfg->renamed. */
static char *element_name(struct xstate *x, const struct trdp_dataset *d, const char *name)
{
	char *n = NULL;

	if (!element_named(d, name))
		return xstrdup(x, name);
	for (unsigned k = 2; k < 2 + d->n_elements; k++) {
		free(n);
		if (asprintf(&n, "%s#%u", name, k) < 0) {
			x->rc = -ENOMEM;
			XML_StopParser(x->parser, XML_FALSE);
			return NULL;
		}
		if (!element_named(d, n)) {
			x->cfg->renamed++;
			return n;
		}
	}
	free(n);
	FAIL(x, "element name \"%s\" used again in data set %u", name, (unsigned)d->id);
	return NULL;
}

static void element_start(struct xstate *x, const char **atts)
{
	struct trdp_dataset *d = &x->cfg->datasets[x->dataset];
	struct trdp_element *e;
	const char *name = NULL;
	char gen[32];

	if (grow(x, (void **)&d->elements, &x->cap_el, d->n_elements, sizeof(*e)) < 0)
		return;
	e = &d->elements[d->n_elements];
	*e = (struct trdp_element){ .array_size = 1, .scale = 1.0, .line = cur_line(x), .column = cur_col(x) };
	/* counted at once, so that trdp_config_free() frees what it holds */
	d->n_elements++;
	if (element_attrs(x, e, atts, (size_t)x->dataset, d->n_elements - 1, &name) < 0)
		return;
	if (!e->unit && !(e->unit = xstrdup(x, "")))
		return;
	if (!name) {
		snprintf(gen, sizeof(gen), "element%zu", d->n_elements);
		name = gen;
	}
	if (!(e->name = element_name(x, d, name)))
		return;
	if (e->array_size == 0 && (d->n_elements < 2 || !is_length(&d->elements[d->n_elements - 2])))
		FAIL(x, "element \"%s\": array-size 0 (a variable array) needs a single integer element"
		     " (INT8..INT32, UINT8..UINT32) just before it, its length", name);
}

/* ---- expat's callbacks ---- */

static void XMLCALL on_start(void *user, const XML_Char *tag, const XML_Char **atts)
{
	struct xstate *x = user;
	uint8_t parent = x->depth ? x->tags[x->depth - 1] : TAG_OTHER, kind = TAG_OTHER;

	if (x->rc < 0)
		return;
	if (x->depth >= XML_DEPTH_MAX) {
		FAIL(x, "elements nested deeper than %d", XML_DEPTH_MAX);
		return;
	}
	if (!strcmp(tag, "bus-interface")) {
		kind = TAG_BUS_INTERFACE;
		free(x->interface);
		x->interface = NULL;
		for (size_t i = 0; atts[i]; i += 2)
			if (!strcmp(atts[i], "name") && !(x->interface = xstrdup(x, atts[i + 1])))
				return;
	} else if (!strcmp(tag, "telegram") && parent == TAG_BUS_INTERFACE) {
		kind = TAG_TELEGRAM;
		x->telegram = -1;
		telegram_start(x, atts);
	} else if (parent == TAG_TELEGRAM && x->telegram >= 0 && !strcmp(tag, "pd-parameter")) {
		pd_parameter(x, &x->cfg->telegrams[x->telegram], atts);
	} else if (parent == TAG_TELEGRAM && x->telegram >= 0 && !strcmp(tag, "md-parameter")) {
		md_parameter(x, &x->cfg->telegrams[x->telegram], atts);
	} else if (!strcmp(tag, "data-set")) {
		kind = TAG_DATA_SET;
		x->dataset = -1;
		dataset_start(x, atts);
	} else if (!strcmp(tag, "element") && parent == TAG_DATA_SET && x->dataset >= 0) {
		element_start(x, atts);
	}
	x->tags[x->depth++] = kind;
}

static void XMLCALL on_end(void *user, const XML_Char *tag)
{
	struct xstate *x = user;

	(void)tag;
	if (x->depth == 0)
		return;
	switch (x->tags[--x->depth]) {
	case TAG_TELEGRAM:
		x->telegram = -1;
		break;
	case TAG_DATA_SET:
		x->dataset = -1;
		break;
	default:
		break;
	}
}

/* ---- after the parse ---- */

static int find_dataset(const struct trdp_config *c, uint32_t id)
{
	for (size_t i = 0; i < c->n_datasets; i++)
		if (c->datasets[i].id == id)
			return (int)i;
	return -1;
}

static int resolve_refs(struct xstate *x)
{
	struct trdp_config *c = x->cfg;

	for (size_t i = 0; i < x->n_refs; i++) {
		const struct ref *rf = &x->refs[i];
		struct trdp_element *e = &c->datasets[rf->ds].elements[rf->el];
		int k = -1;

		if (rf->name) {
			for (size_t j = 0; j < c->n_datasets && k < 0; j++)
				if (!strcmp(c->datasets[j].name, rf->name))
					k = (int)j;
			if (k < 0)
				return fail_at(x, e->line, e->column, "element \"%s\": type \"%s\" is no type and no data set",
				               e->name, rf->name);
		} else if ((k = find_dataset(c, rf->id)) < 0) {
			return fail_at(x, e->line, e->column, "element \"%s\": data set %u (its type) is not defined",
			               e->name, (unsigned)rf->id);
		}
		e->nested = (uint32_t)k;
	}
	return 0;
}

/*
 * Depth-first over the nesting, memoised: colour 1 while a data set is
 * open (met again then, it contains itself), 2 when done, with height[]
 * the levels of data sets it holds (1 when it nests none).  Each data set
 * is walked once, so a file of many references to the same sets stays
 * linear; the recursion is as deep as the nesting, bounded on the way
 * down by TRDP_NEST_MAX.
 */
static int check_nesting(struct xstate *x, size_t ds, uint8_t *colour, uint8_t *height, unsigned depth)
{
	const struct trdp_dataset *d = &x->cfg->datasets[ds];
	unsigned h = 1;

	if (d->n_elements == 0)
		return fail_at(x, d->line, d->column, "data set %u has no element", (unsigned)d->id);
	colour[ds] = 1;
	for (size_t i = 0; i < d->n_elements; i++) {
		const struct trdp_element *e = &d->elements[i];
		int r;

		if (e->type != TRDP_TYPE_INVALID)
			continue;
		if (colour[e->nested] == 1)
			return fail_at(x, e->line, e->column, "element \"%s\": data set %u contains itself (through"
			               " data set %u)", e->name, (unsigned)x->cfg->datasets[e->nested].id,
			               (unsigned)d->id);
		if (colour[e->nested] == 0) {
			if (depth + 1 >= TRDP_NEST_MAX)
				return fail_at(x, e->line, e->column, "element \"%s\": data sets nested more than %u deep",
				               e->name, TRDP_NEST_MAX);
			if ((r = check_nesting(x, e->nested, colour, height, depth + 1)) < 0)
				return r;
		}
		if (height[e->nested] + 1u > h)
			h = height[e->nested] + 1u;
		if (h > TRDP_NEST_MAX)
			return fail_at(x, e->line, e->column, "element \"%s\": data sets nested more than %u deep",
			               e->name, TRDP_NEST_MAX);
	}
	colour[ds] = 2;
	height[ds] = (uint8_t)h;
	return 0;
}

static int by_comid_cmp(const void *a, const void *b, void *arg)
{
	const struct trdp_telegram *t = arg;
	uint32_t x = t[*(const uint32_t *)a].comid, y = t[*(const uint32_t *)b].comid;

	return (x > y) - (x < y);
}

static int finish(struct xstate *x)
{
	struct trdp_config *c = x->cfg;
	uint8_t *colour;
	int r;

	if ((r = resolve_refs(x)) < 0)
		return r;
	/* colour and height side by side */
	colour = calloc(c->n_datasets ? c->n_datasets : 1, 2);
	if (!colour)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_datasets && r == 0; i++)
		if (colour[i] == 0)
			r = check_nesting(x, i, colour, colour + c->n_datasets, 0);
	free(colour);
	if (r < 0)
		return r;
	c->by_comid = calloc(c->n_telegrams ? c->n_telegrams : 1, sizeof(*c->by_comid));
	if (!c->by_comid)
		return -ENOMEM;
	for (size_t i = 0; i < c->n_telegrams; i++)
		c->by_comid[i] = (uint32_t)i;
	qsort_r(c->by_comid, c->n_telegrams, sizeof(*c->by_comid), by_comid_cmp, c->telegrams);
	for (size_t i = 0; i < c->n_telegrams; i++) {
		struct trdp_telegram *t = &c->telegrams[i];

		if (t->dataset_id == 0)
			continue;
		if ((t->dataset = find_dataset(c, t->dataset_id)) < 0)
			return fail_at(x, t->line, t->column, "telegram \"%s\" (ComId %u): data set %u is not defined",
			               t->name, (unsigned)t->comid, (unsigned)t->dataset_id);
		if ((r = trdp_plan_compile(c, t, &t->plan, x->err, x->errlen)) < 0)
			return x->rc = r;
	}
	return 0;
}

/* ---- the calls ---- */

int trdp_config_parse(const char *name, const char *text, size_t len, struct trdp_config **ret_cfg,
                      char *err, size_t errlen)
{
	struct xstate x = { .err = err, .errlen = errlen, .telegram = -1, .dataset = -1 };
	int r = 0;

	if (!name || (!text && len) || !ret_cfg)
		return -EINVAL;
	if (len > TRDP_XML_MAX_BYTES || len > INT32_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "%s: %zu bytes, more than a TRDP configuration has (%u MiB)", name, len,
			         TRDP_XML_MAX_BYTES >> 20);
		return -EFBIG;
	}
	if (err && errlen)
		err[0] = '\0';
	x.cfg = calloc(1, sizeof(*x.cfg));
	if (!x.cfg || !(x.cfg->file = strdup(name))) {
		r = -ENOMEM;
		goto out;
	}
	/* expat >= 2.4 limits entity expansion itself (billion laughs), and
	   reads no external entity without a handler: a file cannot pull
	   others in */
	x.parser = XML_ParserCreate(NULL);
	if (!x.parser) {
		r = -ENOMEM;
		goto out;
	}
	XML_SetUserData(x.parser, &x);
	XML_SetElementHandler(x.parser, on_start, on_end);
	if (XML_Parse(x.parser, text ? text : "", (int)len, XML_TRUE) == XML_STATUS_ERROR && x.rc == 0)
		fail_at(&x, cur_line(&x), cur_col(&x), "%s", XML_ErrorString(XML_GetErrorCode(x.parser)));
	r = x.rc;
	if (r == 0)
		r = finish(&x);
out:
	if (x.parser)
		XML_ParserFree(x.parser);
	for (size_t i = 0; i < x.n_refs; i++)
		free(x.refs[i].name);
	free(x.refs);
	free(x.interface);
	if (r == -ENOMEM && err && errlen)
		snprintf(err, errlen, "%s: out of memory", name);
	if (r < 0) {
		trdp_config_free(x.cfg);
		return r;
	}
	*ret_cfg = x.cfg;
	return 0;
}

int trdp_config_load(const char *path, struct trdp_config **ret_cfg, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	int fd, r;

	if (!path || !ret_cfg)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		if (err && errlen)
			snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	if ((uint64_t)st.st_size > TRDP_XML_MAX_BYTES) {
		r = -EFBIG;
		if (err && errlen)
			snprintf(err, errlen, "%s: %jd bytes, more than a TRDP configuration has (%u MiB)", path,
			         (intmax_t)st.st_size, TRDP_XML_MAX_BYTES >> 20);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		r = -ENOMEM;
		goto fail;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, text + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	r = trdp_config_parse(path, text, got, ret_cfg, err, errlen);
	goto out;
fail:
	if (err && errlen)
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
out:
	if (fd >= 0)
		close(fd);
	free(text);
	return r;
}

struct trdp_config *trdp_config_free(struct trdp_config *cfg)
{
	if (!cfg)
		return NULL;
	for (size_t i = 0; i < cfg->n_telegrams; i++) {
		free(cfg->telegrams[i].name);
		free(cfg->telegrams[i].interface);
		trdp_plan_free(cfg->telegrams[i].plan);
	}
	for (size_t i = 0; i < cfg->n_datasets; i++) {
		struct trdp_dataset *d = &cfg->datasets[i];

		for (size_t j = 0; j < d->n_elements; j++) {
			free(d->elements[j].name);
			free(d->elements[j].unit);
		}
		free(d->elements);
		free(d->name);
	}
	free(cfg->telegrams);
	free(cfg->datasets);
	free(cfg->by_comid);
	free(cfg->file);
	free(cfg);
	return NULL;
}

const struct trdp_telegram *trdp_config_find(const struct trdp_config *cfg, uint32_t comid)
{
	size_t lo = 0, hi;

	if (!cfg || !cfg->by_comid)
		return NULL;
	hi = cfg->n_telegrams;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct trdp_telegram *t = &cfg->telegrams[cfg->by_comid[mid]];

		if (t->comid == comid)
			return t;
		if (t->comid < comid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
