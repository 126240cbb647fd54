/* SPDX-License-Identifier: MIT */
/* wide.c - samples as one column per channel (wide.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "wide.h"
#include "basic/escape.h"
#include "basic/utc.h"

struct wide_col {
	uint32_t channel;
	size_t index;      /* position in the header */
};

struct rec_wide {
	FILE *out;
	size_t n;
	struct wide_col *by_id;  /* sorted by channel id */
	double *value;           /* per header column */
	char (*text)[ACQ_TEXT_MAX + 1]; /* per column: a text channel's text ... */
	bool *is_text;           /* ... when its last record was a text */
	int8_t *decimals;        /* per column: rec_format_value()'s, -1 none */
	int64_t *t;              /* time of value[i]; INT64_MIN: none */
	int64_t period_ns, max_age_ns;
	int64_t row_t;           /* per timestamp: the pending row's time */
	bool pending;            /* per timestamp: a row is being filled */
	int64_t next_ns;         /* raster: the next point to write */
	bool started;            /* raster: next_ns is set */
	int64_t last_ns;         /* raster: the newest sample */
	uint64_t rows;
	char *row;               /* a row's text, written with one fwrite */
};

/* A row's room: the times, and per column a comma and the longest field,
   a text of ACQ_TEXT_MAX '"' quoted and doubled or a value. */
#define ROW_TIME_MAX (BASIC_UTC_MAX + 24)
#define ROW_FIELD_MAX (1 + (2 * ACQ_TEXT_MAX + 2 > REC_DOUBLE_MAX ? 2 * ACQ_TEXT_MAX + 2 : REC_DOUBLE_MAX))

static int col_cmp(const void *a, const void *b)
{
	const struct wide_col *x = a, *y = b;

	return x->channel < y->channel ? -1 : x->channel > y->channel;
}

/* the row's time as export's rows write it (record/format.c), and in ns */
static size_t put_time(char *dst, int64_t t_ns)
{
	char buf[BASIC_UTC_MAX];
	int k = snprintf(dst, ROW_TIME_MAX, "%s,%" PRId64, basic_utc_text(t_ns, 9, 0, buf, sizeof(buf)), t_ns);

	return k > 0 && k < ROW_TIME_MAX ? (size_t)k : 0;
}

static int write_header(rec_wide_t *w, const struct rec_wide_column *cols)
{
	fputs("time,time_ns", w->out);
	for (size_t i = 0; i < w->n; i++) {
		char *h = NULL;
		const char *name = cols[i].name ? cols[i].name : "";

		fputc(',', w->out);
		if (cols[i].unit && *cols[i].unit && asprintf(&h, "%s [%s]", name, cols[i].unit) < 0)
			return -ENOMEM;
		basic_csv_field(w->out, h ? h : name);
		free(h);
	}
	fputc('\n', w->out);
	return ferror(w->out) ? -EIO : 0;
}

int rec_wide_new(FILE *out, const struct rec_wide_column *cols, size_t n, int64_t period_ns,
                 int64_t max_age_ns, rec_wide_t **ret_wide)
{
	rec_wide_t *w;
	int r;

	if (!out || !cols || !n || period_ns < 0 || max_age_ns <= 0 || !ret_wide)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w || !(w->by_id = calloc(n, sizeof(*w->by_id))) || !(w->value = calloc(n, sizeof(double))) ||
	    !(w->text = calloc(n, sizeof(*w->text))) || !(w->is_text = calloc(n, sizeof(bool))) ||
	    !(w->t = calloc(n, sizeof(int64_t))) || !(w->decimals = calloc(n, sizeof(int8_t))) ||
	    !(w->row = malloc(ROW_TIME_MAX + n * ROW_FIELD_MAX + 1))) {
		r = -ENOMEM;
		goto fail;
	}
	*w = (struct rec_wide){ .out = out, .n = n, .by_id = w->by_id, .value = w->value, .t = w->t,
	                        .text = w->text, .is_text = w->is_text, .decimals = w->decimals, .row = w->row,
	                        .period_ns = period_ns, .max_age_ns = max_age_ns };
	for (size_t i = 0; i < n; i++) {
		w->by_id[i] = (struct wide_col){ cols[i].channel, i };
		w->t[i] = INT64_MIN;
		w->decimals[i] = (int8_t)(cols[i].has_decimals && cols[i].decimals <= 15 ? (int)cols[i].decimals : -1);
	}
	qsort(w->by_id, n, sizeof(*w->by_id), col_cmp);
	for (size_t i = 1; i < n; i++)
		if (w->by_id[i].channel == w->by_id[i - 1].channel) {
			r = -EINVAL;
			goto fail;
		}
	r = write_header(w, cols);
	if (r < 0)
		goto fail;
	*ret_wide = w;
	return 0;
fail:
	rec_wide_free(w);
	return r;
}

/* One row at time t: column i holds value[i] when held(i).  Made in
   w->row and written with one fwrite: a stream call per column (a comma,
   a value) took more time than the values' digits. */
static void write_row(rec_wide_t *w, int64_t t, bool raster)
{
	char *p = w->row;
	int k;

	p += put_time(p, t);
	for (size_t i = 0; i < w->n; i++) {
		bool held = raster ? w->t[i] != INT64_MIN && t - w->t[i] <= w->max_age_ns : w->t[i] == t;

		*p++ = ',';
		if (held && w->is_text[i]) /* a text channel's text, quoted as CSV needs */
			p += basic_csv_field_into(w->text[i], p, ROW_FIELD_MAX - 1);
		else if (held && (k = rec_format_value(w->value[i], w->decimals[i], p, REC_DOUBLE_MAX)) > 0)
			p += k;
	}
	*p++ = '\n';
	fwrite(w->row, 1, (size_t)(p - w->row), w->out);
	w->rows++;
}

/* Raster: does any column hold a value at t (an invalid one is none)? */
static bool any_held(const rec_wide_t *w, int64_t t)
{
	for (size_t i = 0; i < w->n; i++)
		if (w->t[i] != INT64_MIN && t - w->t[i] <= w->max_age_ns && (w->is_text[i] || isfinite(w->value[i])))
			return true;
	return false;
}

/* Raster points before end (or up to it, inclusive), skipping the ones
   where nothing is held: a gap in the log jumps to end's point. */
static void raster_until(rec_wide_t *w, int64_t end, bool inclusive)
{
	while (w->next_ns < end || (inclusive && w->next_ns == end)) {
		if (any_held(w, w->next_ns)) {
			write_row(w, w->next_ns, true);
			w->next_ns += w->period_ns;
		} else {
			/* nothing held from here until the next sample */
			int64_t skip = (end - w->next_ns) / w->period_ns;

			w->next_ns += (skip ? skip : 1) * w->period_ns;
		}
	}
}

/* The first raster point at or after t. */
static int64_t raster_ceil(int64_t t, int64_t p)
{
	int64_t q = t / p * p;

	return q < t ? q + p : q;
}

int rec_wide_add(rec_wide_t *w, const struct acq_item *it)
{
	struct wide_col key, *c;
	size_t i;

	if (!w || !it)
		return -EINVAL;
	if (it->kind != ACQ_ITEM_SAMPLE && it->kind != ACQ_ITEM_TEXT)
		return 0;
	key.channel = it->kind == ACQ_ITEM_SAMPLE ? it->sample.channel : it->text.channel;
	c = bsearch(&key, w->by_id, w->n, sizeof(*c), col_cmp);
	if (!c)
		return 0;
	i = c->index;
	if (w->period_ns) {
		if (!w->started) {
			w->next_ns = raster_ceil(it->t_ns, w->period_ns);
			w->started = true;
		}
		raster_until(w, it->t_ns, false);
		w->last_ns = it->t_ns;
	} else if (w->pending && it->t_ns != w->row_t) {
		write_row(w, w->row_t, false);
	}
	w->pending = true;
	w->row_t = it->t_ns;
	w->is_text[i] = it->kind == ACQ_ITEM_TEXT;
	if (w->is_text[i]) {
		size_t len = it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

		memcpy(w->text[i], it->text.text, len);
		w->text[i][len] = 0;
	} else {
		/* an invalid value clears the column rather than holding the last one */
		w->value[i] = isfinite(it->sample.value) ? it->sample.value : NAN;
	}
	w->t[i] = it->t_ns;
	return ferror(w->out) ? -EIO : 0;
}

int rec_wide_finish(rec_wide_t *w)
{
	if (!w)
		return -EINVAL;
	if (w->period_ns && w->started)
		raster_until(w, w->last_ns, true);
	else if (!w->period_ns && w->pending)
		write_row(w, w->row_t, false);
	w->pending = false;
	w->started = false;
	return ferror(w->out) ? -EIO : 0;
}

rec_wide_t *rec_wide_free(rec_wide_t *w)
{
	if (w) {
		free(w->by_id);
		free(w->value);
		free(w->text);
		free(w->is_text);
		free(w->t);
		free(w->decimals);
		free(w->row);
		free(w);
	}
	return NULL;
}

uint64_t rec_wide_rows(const rec_wide_t *w)
{
	return w ? w->rows : 0;
}
