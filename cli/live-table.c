/* SPDX-License-Identifier: MIT */
/*
 * live-table.c - the live table of `watch` and `demo` (live-table.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "basic/escape.h"
#include "basic/hash.h"
#include "cli/live-table.h"
#include "report/say.h"

#define CHANGED_NS 1000000000ll /* a changed value stays marked this long */

/* What was drawn for a channel id: open addressing, id + 1 as the key (0 = free). */
struct seen {
	uint32_t key;
	double value;
	int64_t changed_ns;
};

struct cli_livetable {
	struct seen *seen;
	size_t nseen;           /* slots, a power of two, at least 2 x max */
	size_t max;
	size_t *order;          /* row indices, sorted */
};

int cli_livetable_new(size_t max_rows, cli_livetable_t **ret)
{
	cli_livetable_t *t;
	size_t slots = 16;

	if (!ret || !max_rows || max_rows > (1u << 24))
		return -EINVAL;
	while (slots < 2 * max_rows)
		slots <<= 1;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->seen = calloc(slots, sizeof(*t->seen));
	t->order = calloc(max_rows, sizeof(*t->order));
	if (!t->seen || !t->order)
		return cli_livetable_free(t), -ENOMEM;
	t->nseen = slots;
	t->max = max_rows;
	*ret = t;
	return 0;
}

cli_livetable_t *cli_livetable_free(cli_livetable_t *t)
{
	if (!t)
		return NULL;
	free(t->seen);
	free(t->order);
	free(t);
	return NULL;
}

static struct seen *seen_slot(cli_livetable_t *t, uint32_t id)
{
	size_t i = (id * 2654435761u) & (t->nseen - 1);

	while (t->seen[i].key && t->seen[i].key != id + 1)
		i = (i + 1) & (t->nseen - 1);
	return &t->seen[i];
}

/* A text as a number that changes when it does (FNV-1a, 52 bits: exact in
   a double), so a text channel's change is marked as a value's is. */
static double text_key(const char *s)
{
	return (double)(basic_fnv1a_str(s) >> 12);
}

/* True while the value of row r differs from what was drawn before, for
   CHANGED_NS after each change.  The first sight of a value is no change. */
static bool row_changed(cli_livetable_t *t, const struct cli_live_row *r, int64_t now)
{
	struct seen *s = seen_slot(t, r->id);
	double v = r->text ? text_key(r->label) : r->value;
	bool same;

	if (r->age_ns < 0)
		return false;
	if (!s->key) {
		*s = (struct seen){ r->id + 1, v, 0 };
		return false;
	}
	same = s->value == v || (isnan(s->value) && isnan(v));
	if (!same) {
		s->value = v;
		s->changed_ns = now;
	}
	return s->changed_ns && now - s->changed_ns < CHANGED_NS;
}

void cli_live_value_text(double v, char *buf, size_t len)
{
	if (isnan(v)) {
		snprintf(buf, len, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == trunc(v) && fabs(v) < 1e15) {
		snprintf(buf, len, "%.0f", v == 0 ? 0.0 : v); /* never "-0" */
		return;
	}
	for (int p = 1; p <= 10; p++) {
		snprintf(buf, len, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static const char *const sort_names[CLI_LIVE_SORT_MAX] = { "id", "name", "age", "source" };

int cli_live_sort_parse(const char *s, enum cli_live_sort *ret)
{
	for (int i = 0; s && i < CLI_LIVE_SORT_MAX; i++)
		if (!strcmp(s, sort_names[i])) {
			*ret = (enum cli_live_sort)i;
			return 0;
		}
	return -EINVAL;
}

const char *cli_live_sort_name(enum cli_live_sort s)
{
	return s < CLI_LIVE_SORT_MAX ? sort_names[s] : "?";
}

struct sort_ctx {
	const struct cli_live_row *rows;
	enum cli_live_sort by;
};

static int row_cmp(const void *a, const void *b, void *p)
{
	const struct sort_ctx *c = p;
	const struct cli_live_row *x = &c->rows[*(const size_t *)a], *y = &c->rows[*(const size_t *)b];
	int r = 0;

	switch (c->by) {
	case CLI_LIVE_SORT_NAME:
		r = strcasecmp(x->name, y->name);
		break;
	case CLI_LIVE_SORT_SOURCE:
		r = strcasecmp(x->source, y->source);
		break;
	case CLI_LIVE_SORT_AGE: {
		/* never received last */
		uint64_t ax = x->age_ns < 0 ? UINT64_MAX : (uint64_t)x->age_ns;
		uint64_t ay = y->age_ns < 0 ? UINT64_MAX : (uint64_t)y->age_ns;
		r = ax < ay ? -1 : ax > ay;
		break;
	}
	default:
		break;
	}
	return r ? r : (x->id > y->id) - (x->id < y->id);
}

static bool row_passes(const struct cli_live_row *r, const char *filter)
{
	return !filter[0] || strcasestr(r->name, filter) || strcasestr(r->source, filter) ||
	       (r->unit[0] && strcasestr(r->unit, filter));
}

/* The column widths for a terminal width w. */
struct cols {
	int name, value, unit, label, age, source;
};

static struct cols cols_for(int w)
{
	/* 80 columns: qualified CAN names (Message.Signal) get 26, the
	   source what is left (about 13: its message name repeats the name's) */
	struct cols c = { 26, 10, 6, 10, 6, 0 };

	if (w < 60)
		w = 60;
	if (w >= 120) {
		c.name = 36;
		c.value = 16;
		c.unit = 8;
		c.label = 20;
		c.age = 8;
	}
	/* marker, spaces between the columns */
	c.source = w - (2 + c.name + 1 + c.value + 2 + c.unit + 1 + c.label + 1 + c.age + 2);
	if (c.source < 4)
		c.source = 4;
	return c;
}

/* The columns of the other fields and the spaces between them. */
static int others(const struct cols *c)
{
	return 2 + 1 + c->value + 2 + c->unit + 1 + c->label + 1 + c->age + 2;
}

/* On a terminal of w columns: the name column as wide as the longest name
   shown (at least cols_for's), as far as the others and 12 columns of
   source leave room; the source takes the rest. */
static void fit_names(struct cols *c, int w, const struct cli_live_row *rows, const size_t *order, size_t n)
{
	int longest = 0, room = w - others(c) - 12;

	for (size_t k = 0; k < n; k++) {
		int len = (int)strlen(rows[order[k]].name);

		longest = len > longest ? len : longest;
	}
	if (longest > c->name && room > c->name)
		c->name = longest < room ? longest : room;
	c->source = w - others(c) - c->name;
	if (c->source < 4)
		c->source = 4;
}

/* One line, never wider than the terminal: cut with RPT_CUT_MARK at the
   end of a cut field (one mark for "cut" in every table; '~' is "stale"),
   so a long text does not shift the columns. */
static void field(FILE *out, const char *s, int w, bool right)
{
	int n = (int)strlen(s);

	if (n > w)
		fprintf(out, "%.*s%c", w - 1, s, RPT_CUT_MARK);
	else
		fprintf(out, right ? "%*s" : "%-*s", w, s);
}

/* A name too long for its column loses its start, not its end: of
   "BrakePressure.BrakeCylinder1" the signal is what tells rows apart. */
static void name_field(FILE *out, const char *s, int w)
{
	int n = (int)strlen(s);

	if (n > w)
		fprintf(out, "%c%s", RPT_CUT_MARK, s + n - (w - 1));
	else
		fprintf(out, "%-*s", w, s);
}

static void draw_row(FILE *out, const struct cli_live_row *r, const struct cols *c, bool changed, bool stale,
                     bool color)
{
	char value[32], age[24], label[80];

	if (r->age_ns < 0) {
		snprintf(value, sizeof(value), "-");
		age[0] = 0;
	} else {
		if (r->text)
			value[0] = 0; /* the text is in the label column */
		else
			cli_live_value_text(r->value, value, sizeof(value));
		if (r->age_ns < 100 * 1000000000ll)
			snprintf(age, sizeof(age), "%.1fs", (double)r->age_ns / 1e9);
		else
			snprintf(age, sizeof(age), "%.0fs", (double)r->age_ns / 1e9);
	}
	snprintf(label, sizeof(label), "%s", r->label[0] ? r->label : r->quality == 1 ? "OUT-RANGE"
	                                                         : r->quality == 2 ? "INVALID" : "");
	if (color && (changed || stale))
		fputs(changed ? "\033[1m" : "\033[2m", out);
	fputc(changed ? '*' : stale ? '~' : ' ', out);
	fputc(' ', out);
	name_field(out, r->name, c->name);
	fputc(' ', out);
	field(out, value, c->value, true);
	fputs("  ", out);
	field(out, r->unit, c->unit, false);
	fputc(' ', out);
	field(out, label, c->label, false);
	fputc(' ', out);
	field(out, age, c->age, true);
	fputs("  ", out);
	if (c->source > 0)
		field(out, r->source, c->source, false);
	else
		fputs(r->source, out);
	if (color && (changed || stale))
		fputs("\033[0m", out);
}

/* End a line: clear what an older, longer line left there. */
static void eol(FILE *out, const struct cli_live_view *v)
{
	fputs(v->clear ? "\033[K\n" : "\n", out);
}

size_t cli_livetable_draw(cli_livetable_t *t, const struct cli_live_row *rows, size_t n,
                          const struct cli_live_view *v, int64_t now, FILE *out)
{
	int width = v->width > 0 ? v->width : 80;
	struct cols c = cols_for(width);
	struct sort_ctx ctx = { rows, v->sort };
	size_t shown = 0, body, first, lines = 0;
	char foot[320];

	if (!t || !rows || !v || !out || n > t->max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (row_passes(&rows[i], v->filter))
			t->order[shown++] = i;
	qsort_r(t->order, shown, sizeof(*t->order), row_cmp, &ctx);
	if (v->width > 0) /* a terminal's width known: names as long as it lets them be */
		fit_names(&c, width, rows, t->order, shown);
	/* title, header, rows, footer */
	body = v->height > 3 ? (size_t)v->height - 3 : shown;
	first = v->scroll < shown ? v->scroll : 0;
	if (shown > body && first > shown - body)
		first = shown - body;
	if (v->clear)
		fputs("\033[H", out);
	else if (v->width <= 0)
		c.source = 0; /* appended text (a file, a pipe): the whole source */
	fprintf(out, "%.*s", width, v->title ? v->title : "railmon");
	eol(out, v);
	fprintf(out, "  %-*s %*s  %-*s %-*s %*s  %s", c.name, "channel", c.value, "value", c.unit, "unit", c.label,
	        "label", c.age, "age", "source");
	eol(out, v);
	for (size_t k = 0; k < shown; k++) {
		const struct cli_live_row *r = &rows[t->order[k]];
		bool changed = row_changed(t, r, now); /* every row: a change off screen is still one */
		if (k < first || k >= first + body)
			continue;
		draw_row(out, r, &c, changed, r->age_ns > (int64_t)(v->stale_s * 1e9), v->color);
		eol(out, v);
		lines++;
	}
	for (size_t i = 0; i < n; i++) /* the filtered-out ones too: no stale "changed" later */
		if (!row_passes(&rows[i], v->filter))
			row_changed(t, &rows[i], now);
	snprintf(foot, sizeof(foot), "%zu-%zu of %zu channel%s", shown ? first + 1 : 0, first + lines, shown,
	         shown == 1 ? "" : "s");
	if (shown != n)
		snprintf(foot + strlen(foot), sizeof(foot) - strlen(foot), " (filter '%s' of %zu)", v->filter, n);
	snprintf(foot + strlen(foot), sizeof(foot) - strlen(foot), ", sort %s%s%s", cli_live_sort_name(v->sort),
	         v->keys ? "; " : "", v->keys ? v->keys : "");
	fprintf(out, "%.*s", width, foot);
	if (v->clear)
		fputs("\033[K\033[J", out); /* clear to the end of the screen: fewer rows than before */
	else
		fputc('\n', out);
	fflush(out);
	return shown;
}

/* The JSON string after "key": into out (our own escapes: \" \\ \uXXXX). */
static bool json_text(const char *line, const char *key, char *out, size_t len)
{
	char pat[32];
	const char *p;
	size_t k = 0;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	out[0] = 0;
	if (!(p = strstr(line, pat)))
		return false;
	for (p += strlen(pat); *p && *p != '"' && k + 1 < len; p++) {
		if (*p == '\\' && p[1] == 'u' && strlen(p) >= 6) {
			unsigned cp = (unsigned)strtoul((char[5]){ p[2], p[3], p[4], p[5], 0 }, NULL, 16);
			out[k++] = cp < 0x80 ? (char)cp : '?';
			p += 5;
		} else if (*p == '\\' && p[1]) {
			out[k++] = *++p;
		} else {
			out[k++] = *p;
		}
	}
	out[k] = 0;
	return true;
}

static bool json_num(const char *line, const char *key, double *ret)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (!(p = strstr(line, pat)))
		return false;
	p += strlen(pat);
	if (!strncmp(p, "null", 4))
		return false;
	if (*p == '"')
		p++; /* "nan", "inf", "-inf" */
	*ret = strtod(p, NULL);
	return true;
}


int cli_live_clock_parse(const char *line, struct pl_stat_clock *ret)
{
	char state[16];
	double max_us = 0;

	if (strncmp(line, "{\"clock\":", 9) || !json_text(line, "clock", state, sizeof(state)))
		return -EBADMSG;
	json_num(line, "clock_max_error_us", &max_us);
	/* anything but "synced" is not to be trusted */
	*ret = (struct pl_stat_clock){ .unsynced = strcmp(state, "synced") != 0,
	                                .max_error_us = max_us > 0 ? (uint64_t)max_us : 0 };
	return 0;
}

int cli_live_row_parse(const char *line, struct cli_live_row *r)
{
	double v;

	memset(r, 0, sizeof(*r));
	if (!json_num(line, "id", &v))
		return -EBADMSG;
	r->id = (uint32_t)v;
	json_text(line, "name", r->name, sizeof(r->name));
	json_text(line, "unit", r->unit, sizeof(r->unit));
	json_text(line, "source", r->source, sizeof(r->source));
	json_text(line, "label", r->label, sizeof(r->label));
	r->age_ns = -1;
	if (strstr(line, "\"text\":\""))
		r->text = json_text(line, "text", r->label, sizeof(r->label)); /* a text channel */
	if ((json_num(line, "value", &r->value) || r->text) && json_num(line, "age_ms", &v))
		r->age_ns = (int64_t)(v * 1e6);
	if (json_num(line, "quality", &v))
		r->quality = (uint32_t)v;
	return 0;
}

static size_t page(const struct cli_live_view *v)
{
	return v->height > 4 ? (size_t)v->height - 3 : 1;
}

/* A key typed while editing the filter. */
static void key_edit(struct cli_live_keys *k, struct cli_live_view *v, int c)
{
	size_t n = strlen(k->edit);

	if (c == '\n' || c == '\r') {
		snprintf(v->filter, sizeof(v->filter), "%s", k->edit);
		k->editing = false;
	} else if (c == 27) {
		v->filter[0] = 0;
		k->editing = false;
	} else if ((c == 127 || c == 8) && n) {
		k->edit[n - 1] = 0;
	} else if (c >= 0x20 && c < 0x7f && n + 1 < sizeof(k->edit)) {
		k->edit[n] = (char)c;
		k->edit[n + 1] = 0;
	}
	v->scroll = 0;
}

bool cli_live_keys_feed(struct cli_live_keys *k, struct cli_live_view *v, const unsigned char *buf, size_t n,
                        size_t nrows)
{
	for (size_t i = 0; i < n; i++) {
		int c = buf[i];
		if (k->editing) {
			key_edit(k, v, c);
			continue;
		}
		if (c == 27 && i + 2 < n && buf[i + 1] == '[') { /* arrows: ESC [ A / B */
			c = buf[i + 2] == 'A' ? 'k' : buf[i + 2] == 'B' ? 'j' : 0;
			i += 2;
		}
		switch (c) {
		case 'q': return false;
		case 's': v->sort = (enum cli_live_sort)((v->sort + 1) % CLI_LIVE_SORT_MAX); break;
		case '/': k->editing = true; k->edit[0] = 0; break;
		case 'j': v->scroll++; break;
		case 'k': v->scroll -= v->scroll > 0; break;
		case ' ': v->scroll += page(v); break;
		case 'g': v->scroll = 0; break;
		default: break;
		}
	}
	if (v->scroll >= nrows)
		v->scroll = nrows ? nrows - 1 : 0;
	return true;
}
