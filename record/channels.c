/* SPDX-License-Identifier: MIT */
/*
 * channels.c - channel id -> name and unit, open addressing with linear
 * probing.  Ids are dense per bus (bus << 16 | 0, 1, 2, ...): a
 * multiplicative hash spreads them over the whole table, so runs stay
 * short at a load of at most one half.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "channels.h"

struct slot {
	struct rec_channel ch;
	char *strings;         /* name and unit, one allocation; NULL: slot free */
};

struct rec_channels {
	struct slot *tab;
	size_t cap;            /* a power of two, or 0 */
	size_t n;
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

int rec_channels_set(rec_channels_t *m, uint32_t id, const char *name, const char *unit)
{
	size_t nlen, ulen;
	struct slot *s;
	char *str;

	if (!m)
		return -EINVAL;
	name = name ? name : "";
	unit = unit ? unit : "";
	nlen = strlen(name) + 1;
	ulen = strlen(unit) + 1;
	if (channels_grow(m) < 0 || !(str = malloc(nlen + ulen)))
		return -ENOMEM;
	memcpy(str, name, nlen);
	memcpy(str + nlen, unit, ulen);
	s = slot_find(m, id);
	if (s->strings)
		free(s->strings);
	else
		m->n++;
	*s = (struct slot){ { .id = id, .name = str, .unit = str + nlen }, str };
	return 0;
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
		r = rec_channels_set(m, c.id, c.name, c.unit);
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

struct rec_names rec_channels_names(const rec_channels_t *m, const struct acq_item *it)
{
	const struct rec_channel *c = NULL;

	if (it && it->kind == ACQ_ITEM_SAMPLE)
		c = rec_channels_find(m, it->sample.channel);
	return c ? (struct rec_names){ .channel = c->name, .unit = c->unit } : (struct rec_names){ 0 };
}

size_t rec_channels_count(const rec_channels_t *m)
{
	return m ? m->n : 0;
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
