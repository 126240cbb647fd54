/* SPDX-License-Identifier: MIT */
/*
 * ini-schema.c - the table-driven INI engine (ini-schema.h).
 *
 * inih does not tell its handler the line number, so we feed it through
 * ini_parse_stream() with our own line reader that counts lines: the
 * handler runs right after the line it is called for was read, so the
 * count is that line's number.
 */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ini-schema.h"
#include "parse.h"

struct basic_ini {
	const char *name;       /* file name for messages */
	const char *dir;        /* its directory, for relative paths ... */
	size_t dirlen;          /* ... dirlen bytes of name, 0 = none */
	const char *pos;        /* reader position in the text */
	int line;
	const struct basic_ini_ops *ops;
	void *user;
	char section[128];      /* the current section as inih gives it */
	struct basic_ini_section sec;
	/* line of each key of the current section, 0 = not given yet: a
	   section is opened once, so this is the duplicate check */
	int key_line[BASIC_INI_KEYS_MAX];
	bool header_pending;    /* a [section] line was read since the last key */
	int header_line;
	char err[BASIC_INI_ERR_MAX];
};

static int vfail(struct basic_ini *ini, int line, const char *fmt, va_list ap)
{
	int n;

	/* the first error only: later ones are usually its consequences */
	if (ini->err[0])
		return -EINVAL;
	n = snprintf(ini->err, sizeof(ini->err), "%s:%d: ", ini->name, line);
	if (n > 0 && (size_t)n < sizeof(ini->err))
		vsnprintf(ini->err + n, sizeof(ini->err) - (size_t)n, fmt, ap);
	return -EINVAL;
}

int basic_ini_fail(struct basic_ini *ini, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(ini, ini->line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int basic_ini_fail_at(struct basic_ini *ini, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(ini, line, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int basic_ini_bad(struct basic_ini *ini, const struct basic_ini_key *key, const char *value, const char *what)
{
	char buf[160];

	return basic_ini_fail(ini, "%s: %s: '%s'", key->name, what ? what : basic_ini_expect_text(key, buf, sizeof(buf)),
	                      value);
}

void *basic_ini_user(const struct basic_ini *ini)
{
	return ini->user;
}

int basic_ini_line(const struct basic_ini *ini)
{
	return ini->line;
}

/* ---------------------------------------------------------------- values */

static int resolve(const char *dir, size_t dirlen, const char *value, char *dst, size_t len)
{
	int n;

	if (value[0] == '/' || !dirlen)
		n = snprintf(dst, len, "%s", value);
	else
		n = snprintf(dst, len, "%.*s/%s", (int)dirlen, dir, value);
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int basic_ini_path(const struct basic_ini *ini, const char *value, char *dst, size_t len)
{
	return resolve(ini->dir, ini->dirlen, value, dst, len);
}

/* The range a numeric key takes: min = max = 0 means any value of the
   field (UINT, INT: its size; SIZE, DURATION: any; DOUBLE: any). */
static void int_range(const struct basic_ini_key *k, int64_t *lo, uint64_t *hi)
{
	unsigned bits = k->size >= 8 ? 64 : 8 * (unsigned)k->size;

	*lo = k->min;
	*hi = k->max;
	if (k->min || k->max)
		return;
	if (k->type == BASIC_INI_INT) {
		*lo = bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1));
		*hi = bits == 64 ? INT64_MAX : (UINT64_C(1) << (bits - 1)) - 1;
	} else {
		*hi = k->type != BASIC_INI_UINT || bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	}
}

static size_t str_max(const struct basic_ini_key *k)
{
	return k->max ? (size_t)k->max : k->size - 1;
}

/* Store the low k->size bytes of v (two's complement for signed fields). */
static void put_int(void *field, size_t size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	if (size == 1)
		memcpy(field, &u8, 1);
	else if (size == 2)
		memcpy(field, &u16, 2);
	else if (size == 4)
		memcpy(field, &u32, 4);
	else
		memcpy(field, &v, 8);
}

static int store_number(const struct basic_ini_key *k, void *field, const char *v)
{
	int64_t lo, i;
	uint64_t hi, u;
	int r;

	int_range(k, &lo, &hi);
	if (k->type == BASIC_INI_INT) {
		r = basic_parse_i64(v, lo, (int64_t)hi, &i);
		u = (uint64_t)i;
	} else if (k->type == BASIC_INI_UINT) {
		r = basic_parse_u64(v, (uint64_t)lo, hi, &u);
	} else {
		r = k->type == BASIC_INI_SIZE ? basic_parse_size(v, &u) : basic_parse_duration(v, &u);
		if (r == 0 && (u < (uint64_t)lo || u > hi))
			r = -ERANGE;
	}
	if (r == 0 && (k->flags & BASIC_INI_POW2) && (u & (u - 1)))
		r = -ERANGE;
	if (r == 0)
		put_int(field, k->type == BASIC_INI_SIZE || k->type == BASIC_INI_DURATION ? 8 : k->size, u);
	return r;
}

static int store_double(const struct basic_ini_key *k, void *field, const char *v)
{
	double x;
	int r = basic_parse_double(v, &x);

	if (r == 0 && (k->min || k->max) && (x < (double)k->min || x > (double)k->max))
		r = -ERANGE;
	if (r == 0)
		memcpy(field, &x, sizeof(x));
	return r;
}

static int store_enum(const struct basic_ini_key *k, void *field, const char *v)
{
	for (const struct basic_ini_name *n = k->names; n && n->name; n++) {
		if (k->flags & BASIC_INI_NOCASE ? !strcasecmp(n->name, v) : !strcmp(n->name, v)) {
			put_int(field, k->size, (uint64_t)n->value);
			return 0;
		}
	}
	return -EINVAL;
}

/* The typed part of setting a key: parse v and store it into base. */
static int store_value(const struct basic_ini_key *k, void *base, const char *v, const char *dir, size_t dirlen)
{
	char *field = (char *)base + k->offset;
	bool b;

	if ((k->type == BASIC_INI_STRING || k->type == BASIC_INI_PATH) && (k->flags & BASIC_INI_NONEMPTY) && !*v)
		return -EINVAL;
	switch (k->type) {
	case BASIC_INI_BOOL:
		if (basic_parse_bool(v, &b) < 0)
			return -EINVAL;
		memcpy(field, &b, sizeof(b));
		return 0;
	case BASIC_INI_INT:
	case BASIC_INI_UINT:
	case BASIC_INI_SIZE:
	case BASIC_INI_DURATION:
		return store_number(k, field, v);
	case BASIC_INI_DOUBLE:
		return store_double(k, field, v);
	case BASIC_INI_STRING:
		if (strlen(v) > str_max(k))
			return -ERANGE;
		memcpy(field, v, strlen(v) + 1);
		return 0;
	case BASIC_INI_PATH:
		return resolve(dir, dirlen, v, field, str_max(k) + 1);
	case BASIC_INI_ENUM:
		return store_enum(k, field, v);
	default:
		return -EINVAL; /* CUSTOM: the hook's */
	}
}

/* -------------------------------------------------------------- the parse */

static int set_key(struct basic_ini *ini, const struct basic_ini_key *k, const char *value)
{
	int r = 0;

	if (k->type != BASIC_INI_CUSTOM && store_value(k, ini->sec.base, value, ini->dir, ini->dirlen) < 0)
		return basic_ini_bad(ini, k, value, k->expect);
	if (k->hook)
		r = k->hook(ini, k, ini->sec.base, value);
	if (r < 0)
		return ini->err[0] ? r : basic_ini_bad(ini, k, value, k->expect);
	if (k->flags & BASIC_INI_LINE)
		memcpy((char *)ini->sec.base + k->line_offset, &ini->line, sizeof(int));
	return 0;
}

/* Open the section a key belongs to at its header's own line, so that a
   section defined twice is caught even when the two are adjacent. */
static int open_section(struct basic_ini *ini, const char *section)
{
	int line = ini->line, r;

	snprintf(ini->section, sizeof(ini->section), "%s", section);
	memset(ini->key_line, 0, sizeof(ini->key_line));
	memset(&ini->sec, 0, sizeof(ini->sec));
	if (ini->header_pending)
		ini->line = ini->header_line;
	ini->header_pending = false;
	r = ini->ops->section(ini, section, &ini->sec);
	ini->line = line;
	return r;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct basic_ini *ini = user;
	const struct basic_ini_table *t;
	size_t i;

	/* inih goes on after a handler error; we report the first one only,
	   and after it the caller's state (the current section) is not to be
	   trusted. */
	if (ini->err[0])
		return 0;
	/* inih does not report section headers (unless built to), but the
	   line reader saw them */
	if ((ini->header_pending || strcmp(section, ini->section)) && open_section(ini, section) < 0)
		return 0;
	if (!*section)
		return basic_ini_fail(ini, "key '%s' outside any section", name), 0;
	t = ini->sec.table;
	for (i = 0; t && i < t->nkeys && strcmp(t->keys[i].name, name); i++)
		;
	if (!t || i == t->nkeys || i >= BASIC_INI_KEYS_MAX)
		return basic_ini_fail(ini, "unknown key '%s' in [%s]", name, ini->sec.title), 0;
	/* a key given twice is almost always a copy-paste slip that would
	   silently win over the first */
	if (!(t->keys[i].flags & BASIC_INI_REPEAT) && ini->key_line[i])
		return basic_ini_fail(ini, "'%s' given twice in [%s] (first at line %d)", name, section, ini->key_line[i]), 0;
	ini->key_line[i] = ini->line;
	return set_key(ini, &t->keys[i], value) < 0 ? 0 : 1;
}

/*
 * ini_reader: like fgets over the in-memory text, counting lines (each
 * call is one whole line, so the count is right on a last line without
 * '\n' too).  Two things inih would misread are settled here:
 * - a line longer than inih's buffer (num) is refused: inih would parse
 *   the rest of it as more lines (and an indented rest as a continuation
 *   of the key: "given twice");
 * - leading blanks are dropped, so an indented line is an ordinary line,
 *   never a continuation of the previous value (inih's multi-line
 *   values: "  dbc = x" after "interface = can0" was read as a second
 *   interface).
 */
static char *read_line(char *str, int num, void *stream)
{
	struct basic_ini *ini = stream;
	const char *nl;
	size_t n, blank;

	if (!*ini->pos || ini->err[0])
		return NULL;
	nl = strchr(ini->pos, '\n');
	n = nl ? (size_t)(nl - ini->pos) + 1 : strlen(ini->pos);
	ini->line++;
	if (n > (size_t)num - 1) {
		basic_ini_fail(ini, "line too long: %zu characters, at most %d", nl ? n - 1 : n, num - 2);
		return NULL; /* ends the parse: basic_ini_parse() sees the error */
	}
	blank = strspn(ini->pos, " \t");
	if (blank == n - (nl != NULL))
		blank = 0; /* a blank line stays blank */
	memcpy(str, ini->pos + blank, n - blank);
	str[n - blank] = 0;
	ini->pos += n;
	if (str[0] == '[') {
		ini->header_pending = true;
		ini->header_line = ini->line;
	}
	return str;
}

int basic_ini_parse(const char *name, const char *text, const struct basic_ini_ops *ops, void *user, char *err,
                    size_t errlen)
{
	struct basic_ini ini = { .name = name, .pos = text, .ops = ops, .user = user, .dir = name };
	const char *slash;
	int r;

	if (!name || !text || !ops || !ops->section)
		return -EINVAL;
	slash = strrchr(name, '/');
	ini.dirlen = slash ? (size_t)(slash - name) : 0;
	r = ini_parse_stream(read_line, &ini, on_key, &ini);
	if (r > 0 && !ini.err[0]) {
		ini.line = r;
		basic_ini_fail(&ini, "syntax error (expected [section], key = value, or ; comment)");
	}
	/* the line reader may have stopped the parse with an error (r == 0) */
	if (r == -2)
		r = -ENOMEM;
	else if (r || ini.err[0])
		r = -EINVAL;
	else if (ops->done)
		r = ops->done(&ini);
	if (r == 0 && ini.err[0])
		r = -EINVAL;
	if (r < 0 && err && errlen)
		snprintf(err, errlen, "%s", ini.err[0] ? ini.err : strerror(-r));
	return r;
}

/* ---------------------------------------------------------------- tables */

int basic_ini_defaults(const struct basic_ini_table *table, void *base)
{
	if (!table || !base)
		return -EINVAL;
	for (size_t i = 0; i < table->nkeys; i++) {
		const struct basic_ini_key *k = &table->keys[i];
		if (k->def && (k->type == BASIC_INI_CUSTOM || store_value(k, base, k->def, NULL, 0) < 0))
			return -EINVAL;
	}
	return 0;
}

static bool int_size_ok(size_t size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

/* One key's mistakes, or NULL. */
static const char *key_mistake(const struct basic_ini_key *k)
{
	int64_t lo;
	uint64_t hi;

	if (!k->name || !k->help)
		return "no name or no help";
	if (k->type >= BASIC_INI_TYPE_MAX)
		return "no such type";
	if (k->type == BASIC_INI_CUSTOM && (!k->hook || !k->syntax))
		return "a custom key needs a hook and a syntax";
	if ((k->type == BASIC_INI_STRING || k->type == BASIC_INI_PATH) && (!k->size || str_max(k) >= k->size))
		return "the field is not longer than max";
	if ((k->type == BASIC_INI_INT || k->type == BASIC_INI_UINT || k->type == BASIC_INI_ENUM) && !int_size_ok(k->size))
		return "an integer field of 1, 2, 4 or 8 bytes";
	if ((k->type == BASIC_INI_SIZE || k->type == BASIC_INI_DURATION || k->type == BASIC_INI_DOUBLE) && k->size != 8)
		return "a field of 8 bytes (uint64_t, double)";
	if (k->type == BASIC_INI_BOOL && k->size != sizeof(bool))
		return "a bool field";
	if (k->type == BASIC_INI_ENUM && (!k->names || !k->names[0].name))
		return "an enum without names";
	if (k->type == BASIC_INI_UINT || k->type == BASIC_INI_INT) {
		struct basic_ini_key full = *k;
		int64_t flo;
		uint64_t fhi;
		full.min = full.max = 0;
		int_range(&full, &flo, &fhi);
		int_range(k, &lo, &hi);
		if (lo < flo || (k->type == BASIC_INI_INT ? (int64_t)hi > (int64_t)fhi || lo > (int64_t)hi : hi > fhi))
			return "a range the field cannot hold";
	}
	/* min without max is not "any": unsigned kinds give max explicitly */
	if (k->type != BASIC_INI_INT && k->type != BASIC_INI_DOUBLE && (k->min || k->max) &&
	    (k->min < 0 || (uint64_t)k->min > k->max))
		return "min above max, or below 0";
	if (k->type == BASIC_INI_DOUBLE && (k->min || k->max) && k->min > (int64_t)k->max)
		return "min above max";
	if ((k->flags & BASIC_INI_POW2) && k->type != BASIC_INI_UINT)
		return "POW2 on a key that is not UINT";
	if (k->def && k->type == BASIC_INI_CUSTOM)
		return "a default on a custom key";
	return NULL;
}

int basic_ini_table_check(const struct basic_ini_table *table, char *why, size_t len)
{
	char field[4096];

	if (!why || !len)
		return -EINVAL;
	if (!table || !table->keys || !table->section || table->nkeys > BASIC_INI_KEYS_MAX) {
		snprintf(why, len, "no table, or more than %d keys", BASIC_INI_KEYS_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < table->nkeys; i++) {
		const struct basic_ini_key *k = &table->keys[i];
		const char *m = key_mistake(k);
		/* a default must be a value its own key takes (written to a
		   scratch field, never to the caller's struct) */
		if (!m && k->def) {
			struct basic_ini_key at0 = *k;
			at0.offset = 0;
			if (k->size > sizeof(field) || store_value(&at0, field, k->def, NULL, 0) < 0)
				m = "a default its key refuses";
		}
		for (size_t j = 0; !m && j < i; j++)
			if (!strcmp(table->keys[j].name, k->name))
				m = "given twice";
		if (m) {
			snprintf(why, len, "[%s] %s: %s", table->section, k->name ? k->name : "(null)", m);
			return -EINVAL;
		}
	}
	return 0;
}

/* ------------------------------------------------------------- reference */

const char *basic_ini_type_name(const struct basic_ini_key *key)
{
	static const char *const names[] = {
		[BASIC_INI_BOOL] = "bool", [BASIC_INI_INT] = "integer", [BASIC_INI_UINT] = "integer",
		[BASIC_INI_SIZE] = "size", [BASIC_INI_DURATION] = "duration", [BASIC_INI_DOUBLE] = "number",
		[BASIC_INI_STRING] = "string", [BASIC_INI_PATH] = "path", [BASIC_INI_ENUM] = "enum",
	};

	if (!key || key->type >= BASIC_INI_TYPE_MAX)
		return "?";
	if (key->type == BASIC_INI_CUSTOM)
		return key->syntax ? key->syntax : "?";
	return names[key->type];
}

/* "a, b or c" (last = " or ") or "a, b, c". */
static void names_text(const struct basic_ini_key *k, const char *last, char *buf, size_t len)
{
	size_t n = 0, used = 0;

	while (k->names[n].name)
		n++;
	buf[0] = 0;
	for (size_t i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : i == n - 1 ? last : ", ", k->names[i].name);
		used += w > 0 ? (size_t)w : 0;
	}
}

/* A bound as the key's type writes it: "64K" for a size, "30d" for a
   duration, signed for INT and DOUBLE. */
static char *bound_text(const struct basic_ini_key *k, uint64_t v, char *buf, size_t len)
{
	if (k->type == BASIC_INI_SIZE)
		return basic_format_size(v, buf, len);
	if (k->type == BASIC_INI_DURATION)
		return basic_format_duration(v, buf, len);
	if (k->type == BASIC_INI_UINT)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%lld", (long long)(int64_t)v);
	return buf;
}

char *basic_ini_range_text(const struct basic_ini_key *key, char *buf, size_t len)
{
	char lo_s[32], hi_s[32];
	bool numeric = key->type == BASIC_INI_INT || key->type == BASIC_INI_UINT;
	int64_t lo;
	uint64_t hi;

	buf[0] = 0;
	if (key->type == BASIC_INI_ENUM) {
		snprintf(buf, len, "one of ");
		names_text(key, ", ", buf + strlen(buf), len - strlen(buf));
	} else if (key->type == BASIC_INI_STRING || key->type == BASIC_INI_PATH) {
		snprintf(buf, len, "%s %zu characters", key->flags & BASIC_INI_NONEMPTY ? "1 to" : "at most", str_max(key));
	} else if (key->type != BASIC_INI_BOOL && key->type != BASIC_INI_CUSTOM && (numeric || key->min || key->max)) {
		int_range(key, &lo, &hi);
		bound_text(key, (uint64_t)lo, lo_s, sizeof(lo_s));
		if (hi == UINT64_MAX)
			snprintf(buf, len, "at least %s", lo_s);
		else
			snprintf(buf, len, "%s%s to %s", key->flags & BASIC_INI_POW2 ? "a power of two from " : "", lo_s,
			         bound_text(key, hi, hi_s, sizeof(hi_s)));
	}
	return buf;
}

const char *basic_ini_default_text(const struct basic_ini_key *key)
{
	return key->doc_def ? key->doc_def : key->def ? key->def : "";
}

char *basic_ini_expect_text(const struct basic_ini_key *key, char *buf, size_t len)
{
	char range[128];

	if (key->expect) {
		snprintf(buf, len, "%s", key->expect);
		return buf;
	}
	basic_ini_range_text(key, range, sizeof(range));
	if (key->type == BASIC_INI_ENUM)
		names_text(key, " or ", range, sizeof(range));
	switch (key->type) {
	case BASIC_INI_BOOL: snprintf(buf, len, "expected true or false"); break;
	case BASIC_INI_ENUM:
	case BASIC_INI_INT:
	case BASIC_INI_UINT: snprintf(buf, len, "expected %s", range); break;
	case BASIC_INI_SIZE: snprintf(buf, len, "expected a size like 64K or 16M%s%s", range[0] ? ", " : "", range); break;
	case BASIC_INI_DURATION: snprintf(buf, len, "expected a duration like 30s, 15m, 12h or 30d"); break;
	case BASIC_INI_DOUBLE: snprintf(buf, len, "expected a number%s%s", range[0] ? " from " : "", range); break;
	case BASIC_INI_STRING: snprintf(buf, len, "%s%s", key->flags & BASIC_INI_NONEMPTY ? "expected " : "", range);
		break;
	case BASIC_INI_PATH: snprintf(buf, len, "bad path"); break;
	default: snprintf(buf, len, "expected %s", basic_ini_type_name(key)); break;
	}
	return buf;
}
