/* SPDX-License-Identifier: MIT */
/*
 * channel-names.c - channel id -> name and unit, open addressing with linear
 * probing.  Ids are dense per bus (bus << 16 | 0, 1, 2, ...): a
 * multiplicative hash spreads them over the whole table, so runs stay
 * short at a load of at most one half.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channels.h"

struct slot {
	struct rec_channel ch;
	char *strings;         /* every string, the value table's arrays; one
	                          allocation; NULL: slot free */
	double *vt_value;      /* the value table's values, parsed */
};

struct rec_channels {
	struct slot *tab;
	size_t cap;            /* a power of two, or 0 */
	size_t n;
	char **bus_names;      /* by bus index, from the entries that name it */
	size_t nbus_names;
};

/* Fibonacci hashing: the top bits of id * 2^32/phi. */
static size_t slot_of(const rec_channels_t *m, uint32_t id)
{
	return (size_t)((id * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & (m->cap - 1);
}

static struct slot *slot_find(const rec_channels_t *m, uint32_t id)
{
	size_t i = slot_of(m, id);

	while (m->tab[i].strings && m->tab[i].ch.id != id)
		i = (i + 1) & (m->cap - 1);
	return &m->tab[i];
}

int rec_channels_new(rec_channels_t **ret_map)
{
	rec_channels_t *m;

	if (!ret_map)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*ret_map = m;
	return 0;
}

rec_channels_t *rec_channels_free(rec_channels_t *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->cap; i++)
		free(m->tab[i].strings);
	for (size_t i = 0; i < m->nbus_names; i++)
		free(m->bus_names[i]);
	free(m->bus_names);
	free(m->tab);
	free(m);
	return NULL;
}

/* Keep the table at most half full: room for one more entry. */
static int channels_grow(rec_channels_t *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct slot *old = m->tab;
	size_t old_cap = m->cap;

	if ((m->n + 1) * 2 <= m->cap)
		return 0;
	m->tab = calloc(cap, sizeof(*m->tab));
	if (!m->tab) {
		m->tab = old;
		return -ENOMEM;
	}
	m->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].strings)
			*slot_find(m, old[i].ch.id) = old[i];
	free(old);
	return 0;
}

/* Bus b is called name (a later name replaces an earlier one). */
static int bus_name_set(rec_channels_t *m, uint32_t b, const char *name)
{
	char *copy;

	if (!name || !*name || b > 0xffff)
		return 0;
	if (b >= m->nbus_names) {
		size_t n = b + 1;
		char **v = realloc(m->bus_names, n * sizeof(*v));

		if (!v)
			return -ENOMEM;
		memset(v + m->nbus_names, 0, (n - m->nbus_names) * sizeof(*v));
		m->bus_names = v;
		m->nbus_names = n;
	}
	if (m->bus_names[b] && !strcmp(m->bus_names[b], name))
		return 0;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	free(m->bus_names[b]);
	m->bus_names[b] = copy;
	return 0;
}

static size_t str_size(const char *s)
{
	return (s ? strlen(s) : 0) + 1;
}

/* Copy s into *p, return the copy. */
static char *put_str(char **p, const char *s)
{
	char *out = *p;
	size_t n = str_size(s);

	memcpy(out, s ? s : "", n);
	*p += n;
	return out;
}

int rec_channels_put(rec_channels_t *m, const struct rec_channel *c)
{
	size_t nvt = c && c->value_table ? c->nvalue_table : 0, bytes;
	struct slot *s, new_slot = { 0 };
	const char **labels;
	char *p;

	if (!m || !c || nvt > 65536)
		return -EINVAL;
	bytes = nvt * (sizeof(double) + sizeof(char *)) + str_size(c->name) + str_size(c->unit) +
	        str_size(c->source) + str_size(c->bus_name);
	for (size_t i = 0; i < nvt; i++)
		bytes += str_size(c->value_table[i]);
	if (channels_grow(m) < 0 || bus_name_set(m, c->bus, c->bus_name) < 0 || !(new_slot.strings = malloc(bytes)))
		return -ENOMEM;
	/* doubles first (aligned), then the label pointers, then the text */
	new_slot.vt_value = (double *)(void *)new_slot.strings;
	labels = (const char **)(void *)(new_slot.vt_value + nvt);
	p = (char *)(labels + nvt);
	new_slot.ch = *c;
	new_slot.ch.name = put_str(&p, c->name);
	new_slot.ch.unit = put_str(&p, c->unit);
	new_slot.ch.source = put_str(&p, c->source);
	new_slot.ch.bus_name = put_str(&p, c->bus_name);
	for (size_t i = 0; i < nvt; i++) {
		char *end;

		labels[i] = put_str(&p, c->value_table[i]);
		/* "VALUE LABEL": the label is what follows the first blank */
		new_slot.vt_value[i] = strtod(labels[i], &end);
		if (end == labels[i])
			new_slot.vt_value[i] = NAN; /* matches no value */
	}
	new_slot.ch.value_table = labels;
	new_slot.ch.nvalue_table = nvt;
	s = slot_find(m, c->id);
	if (s->strings)
		free(s->strings);
	else
		m->n++;
	*s = new_slot;
	return 0;
}

int rec_channels_set(rec_channels_t *m, uint32_t id, const char *name, const char *unit)
{
	const struct rec_channel c = { .id = id, .name = name, .unit = unit, .bus = id >> 16 };

	return rec_channels_put(m, &c);
}

int rec_channels_learn(rec_channels_t *m, const rec_batch_t *b)
{
	struct rec_batch_info info;
	int r;

	if (!m || rec_batch_info(b, &info) < 0)
		return -EINVAL;
	for (size_t i = 0; i < info.nchannels; i++) {
		struct rec_channel c;

		if (rec_batch_channel(b, i, &c) < 0)
			continue;
		r = rec_channels_put(m, &c);
		if (r < 0)
			return r;
	}
	return (int)(info.nchannels > INT32_MAX ? INT32_MAX : info.nchannels);
}

const struct rec_channel *rec_channels_find(const rec_channels_t *m, uint32_t id)
{
	const struct slot *s;

	if (!m || !m->cap)
		return NULL;
	s = slot_find(m, id);
	return s->strings ? &s->ch : NULL;
}

const char *rec_channels_bus_name(const rec_channels_t *m, uint32_t bus)
{
	return m && bus < m->nbus_names ? m->bus_names[bus] : NULL;
}

const char *rec_channels_label(const rec_channels_t *m, uint32_t id, double value)
{
	const struct slot *s;

	if (!m || !m->cap)
		return NULL;
	s = slot_find(m, id);
	for (size_t i = 0; s->strings && i < s->ch.nvalue_table; i++)
		if (s->vt_value[i] == value) {
			const char *blank = strchr(s->ch.value_table[i], ' ');

			return blank ? blank + 1 : "";
		}
	return NULL;
}

struct rec_names rec_channels_names(const rec_channels_t *m, const struct acq_item *it)
{
	const struct rec_channel *c = NULL;
	struct rec_names nm = { 0 };

	if (!it)
		return nm;
	nm.bus_name = rec_channels_bus_name(m, it->bus);
	if (it->kind == ACQ_ITEM_SAMPLE || it->kind == ACQ_ITEM_TEXT)
		c = rec_channels_find(m, it->kind == ACQ_ITEM_SAMPLE ? it->sample.channel : it->text.channel);
	if (c) {
		nm.channel = c->name;
		nm.unit = c->unit;
		nm.has_decimals = c->has_decimals;
		nm.decimals = c->decimals;
		/* a text's label is its text (record/format.c) */
		nm.label = it->kind == ACQ_ITEM_SAMPLE ? rec_channels_label(m, c->id, it->sample.value) : NULL;
	}
	return nm;
}

size_t rec_channels_count(const rec_channels_t *m)
{
	return m ? m->n : 0;
}

/* name is want qualified: "<something>." + want */
static bool qualified_as(const char *name, const char *want, size_t wlen)
{
	size_t nlen = strlen(name);

	return nlen > wlen + 1 && name[nlen - wlen - 1] == '.' && memcmp(name + nlen - wlen, want, wlen) == 0;
}

/* "'want' is ambiguous: A.want, B.want (give one of them)", alphabetical,
   by selection: candidates are few, and this runs once per name given. */
static void list_candidates(rec_name_at_fn name_at, const void *ctx, size_t n, const char *want, char *why,
                            size_t whylen)
{
	size_t wlen = strlen(want), used;
	const char *last = NULL;
	int k;

	k = snprintf(why, whylen, "'%s' is ambiguous:", want);
	used = k < 0 ? 0 : (size_t)k;
	for (;;) {
		const char *next = NULL;

		for (size_t i = 0; i < n; i++) {
			const char *c = name_at(ctx, i);

			if (c && qualified_as(c, want, wlen) && (!last || strcmp(c, last) > 0) &&
			    (!next || strcmp(c, next) < 0))
				next = c;
		}
		if (!next)
			break;
		/* room for the name and the closing words, else "..." */
		if (used + strlen(next) + 24 >= whylen) {
			k = snprintf(why + used, whylen - used, " ...");
			used += k < 0 ? 0 : (size_t)k;
			break;
		}
		k = snprintf(why + used, whylen - used, "%s %s", last ? "," : "", next);
		used += k < 0 ? 0 : (size_t)k;
		last = next;
	}
	if (used < whylen)
		snprintf(why + used, whylen - used, " (give one of them)");
}

int rec_name_resolve(rec_name_at_fn name_at, const void *ctx, size_t n, const char *want, size_t *ret_index,
                     char *why, size_t whylen)
{
	size_t wlen, found = 0, count = 0;

	if (!name_at || !want || !*want || !ret_index || (why && !whylen))
		return -EINVAL;
	wlen = strlen(want);
	for (size_t i = 0; i < n; i++) {
		const char *c = name_at(ctx, i);

		if (c && strcmp(c, want) == 0) {
			*ret_index = i;
			return 0;
		}
		if (c && qualified_as(c, want, wlen) && count++ == 0)
			found = i;
	}
	if (count == 1) {
		*ret_index = found;
		return 0;
	}
	if (count > 1 && why)
		list_candidates(name_at, ctx, n, want, why, whylen);
	return count ? -ENOTUNIQ : -ENOENT;
}

static const char *slot_name(const void *ctx, size_t i)
{
	const rec_channels_t *m = ctx;

	return m->tab[i].strings ? m->tab[i].ch.name : NULL;
}

int rec_channels_resolve(const rec_channels_t *m, const char *want, uint32_t *ret_id, char *why, size_t whylen)
{
	size_t i;
	int r;

	if (!m || !ret_id)
		return -EINVAL;
	r = rec_name_resolve(slot_name, m, m->cap, want, &i, why, whylen);
	if (r == 0)
		*ret_id = m->tab[i].ch.id;
	return r;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct rec_channel *x = *(const struct rec_channel *const *)a;
	const struct rec_channel *y = *(const struct rec_channel *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int rec_channels_sorted(const rec_channels_t *m, const struct rec_channel ***ret_list)
{
	const struct rec_channel **v;
	size_t k = 0;

	if (!m || !ret_list || m->n > INT32_MAX)
		return -EINVAL;
	*ret_list = NULL;
	if (!m->n)
		return 0;
	v = malloc(m->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->tab[i].strings)
			v[k++] = &m->tab[i].ch;
	qsort(v, k, sizeof(*v), entry_cmp);
	*ret_list = v;
	return (int)k;
}

int rec_channels_ids(const rec_channels_t *m, rec_name_at_fn name_at, const void *ctx, size_t n, uint32_t **ret_ids)
{
	const struct rec_channel **list;
	uint32_t *ids;
	int nl, k = 0;

	if (!name_at || !ret_ids)
		return -EINVAL;
	nl = rec_channels_sorted(m, &list);
	if (nl < 0)
		return nl;
	ids = malloc(((size_t)nl + 1) * sizeof(*ids));
	if (!ids) {
		free(list);
		return -ENOMEM;
	}
	for (int i = 0; i < nl; i++)
		for (size_t j = 0; j < n; j++) {
			const char *name = name_at(ctx, j);

			if (name && !strcmp(list[i]->name, name)) {
				ids[k++] = list[i]->id;
				break;
			}
		}
	free(list);
	*ret_ids = ids;
	return k;
}
