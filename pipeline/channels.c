/* SPDX-License-Identifier: MIT */
/*
 * channels.c - a board's channels (channels.h): the list of every Modbus
 * register, DBC signal and TRDP leaf, the DBCs and TRDP XMLs loaded and
 * checked, the dictionary the uplink sends, and a channel found by name
 * or a value by its label.  Decoding is channels-decode.c, the latest
 * values channels-live.c (struct pl_channels: channels-private.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "channels-private.h"
#include "conf/config-schema.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "dbc/j1939.h"
#include "trdp/dataset.h"
#include "trdp/header.h"
#include "trdp/xml.h"

/* ------------------------------------------------------------ the DBCs */

/* A signal whose name the channel table would cut: two long names would
   become one, so say so instead.  Units are not cut (struct pl_channel). */
static int dbc_check_names(const dbc_t *dbc, const char *path, char *why, size_t whylen)
{
	const size_t name_max = sizeof(((struct pl_channel *)0)->name) - 1;

	for (unsigned i = 0; i < dbc_signal_count(dbc); i++) {
		struct dbc_signal_info si;
		size_t n;

		if (dbc_signal_info(dbc, i, &si) < 0)
			return -EINVAL;
		n = strlen(si.message) + 1 + strlen(si.name); /* "Message.Signal" */
		if (n > name_max) {
			snprintf(why, whylen, "%s:%u: signal '%.40s%s': a qualified name (message.signal) of %zu characters "
			         "(at most %zu)", path, si.line, si.name, strlen(si.name) > 40 ? "..." : "", n, name_max);
			return -ENAMETOOLONG;
		}
	}
	return 0;
}

/* What makes a DBC that parsed useless or dangerous for this board. */
static int dbc_check_board(const struct conf_board *cfg, size_t b, const dbc_t *dbc, char *err, size_t errlen)
{
	const struct bus_cfg *bc = &cfg->buses[b];
	int line = cfg->dbc_line[b];

	if (dbc_signal_count(dbc) > CONF_BUS_CHANNELS_MAX) {
		/* channel ids are bus << 16 | signal index: more would collide
		   with the next bus's */
		snprintf(err, errlen, "%s:%d: [can %s]: %s: %u signals, but a bus has channel ids for %u "
		         "(split the DBC over buses)", cfg->path, line, bc->name, bc->can.dbc,
		         dbc_signal_count(dbc), CONF_BUS_CHANNELS_MAX);
		return -E2BIG;
	}
	return 0;
}

int pl_dbc_load(const struct conf_board *cfg, size_t b, dbc_t **ret_dbc, char *err, size_t errlen)
{
	const struct bus_cfg *bc;
	char why[CONF_ERR_MAX];
	dbc_t *dbc;
	int r;

	if (!cfg || b >= cfg->nbuses || cfg->buses[b].kind != BUS_KIND_CAN || !cfg->buses[b].can.dbc[0] ||
	    !ret_dbc || !err || !errlen)
		return -EINVAL;
	bc = &cfg->buses[b];
	r = dbc_load_flags(bc->can.dbc, bc->can.dbc_strict ? DBC_STRICT : 0, &dbc, why, sizeof(why));
	if (r == 0 && (r = dbc_check_names(dbc, bc->can.dbc, why, sizeof(why))) < 0) {
		dbc = dbc_free(dbc);
		r = -EBADMSG; /* reported like a syntax error: the DBC's line first */
	}
	if (r == -EBADMSG) {
		/* the DBC's own file:line first: that is where the fix goes */
		snprintf(err, errlen, "%s (the dbc of [can %s], %s:%d)", why, bc->name, cfg->path, cfg->dbc_line[b]);
		return r;
	}
	if (r < 0) {
		snprintf(err, errlen, "%s:%d: [can %s]: dbc %s", cfg->path, cfg->dbc_line[b], bc->name, why);
		return r;
	}
	r = dbc_check_board(cfg, b, dbc, err, errlen);
	if (r < 0) {
		dbc_free(dbc);
		return r;
	}
	*ret_dbc = dbc;
	return 0;
}

/* ------------------------------------------------------------ the list */

static int add_channel(pl_channels_t *ch, const struct pl_channel *c)
{
	if (ch->n == ch->cap) {
		size_t ncap = ch->cap ? ch->cap * 2 : 64;
		struct pl_channel *n = realloc(ch->list, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		ch->list = n;
		ch->cap = ncap;
	}
	ch->list[ch->n++] = *c;
	return 0;
}

static int add_modbus(pl_channels_t *ch, size_t b)
{
	const struct bus_cfg *bc = &ch->cfg->buses[b];
	struct pl_channel c;
	int r;

	for (size_t i = 0; i < bc->mb.nchannels; i++) {
		const struct bus_mb_channel *m = &bc->mb.channels[i];
		memset(&c, 0, sizeof(c));
		c.id = m->id;
		c.bus = (uint16_t)b;
		snprintf(c.name, sizeof(c.name), "%s", m->name);
		c.unit = m->unit;
		snprintf(c.source, sizeof(c.source), "modbus %s u%u %s %u", bc->name, m->unit_id,
		         conf_mb_table_name(m->table), m->addr);
		/* a float register has no resolution; an integer one its scale's */
		c.decimals = (int8_t)(m->type == BUS_MB_F32 || m->type == BUS_MB_F64 ? -1 :
		                      rec_format_decimals(m->scale, m->offset));
		if ((r = add_channel(ch, &c)) < 0)
			return r;
	}
	return 0;
}

static int add_signals(pl_channels_t *ch, size_t b)
{
	const struct bus_cfg *bc = &ch->cfg->buses[b];
	unsigned n = dbc_signal_count(ch->dbc[b]);
	struct pl_channel c;
	int r;

	for (unsigned i = 0; i < n; i++) {
		struct dbc_signal_info si;
		if (dbc_signal_info(ch->dbc[b], i, &si) < 0)
			return -EINVAL;
		memset(&c, 0, sizeof(c));
		c.id = (uint32_t)b << 16 | i;
		c.bus = (uint16_t)b;
		snprintf(c.name, sizeof(c.name), "%s.%s", si.message, si.name);
		c.unit = si.unit ? si.unit : "";
		snprintf(c.source, sizeof(c.source), "can %s %s", bc->name, si.message);
		c.decimals = (int8_t)(si.is_float ? -1 : rec_format_decimals(si.scale, si.offset));
		if ((r = add_channel(ch, &c)) < 0)
			return r;
	}
	return 0;
}


/* ------------------------------------------------------------ TRDP */

/* Load the XML of TRDP bus b; errors keep the XML's file:line:column
   first (that is where the fix goes), then the board file's line. */
int pl_trdp_load(const struct conf_board *cfg, size_t b, struct trdp_config **ret, char *err, size_t errlen)
{
	const struct bus_cfg *bc;
	char why[CONF_ERR_MAX];
	int r;

	if (!cfg || b >= cfg->nbuses || cfg->buses[b].kind != BUS_KIND_TRDP || !cfg->buses[b].trdp.xml[0] || !ret ||
	    !err || !errlen)
		return -EINVAL;
	bc = &cfg->buses[b];
	r = trdp_config_load(bc->trdp.xml, ret, why, sizeof(why));

	if (r == -EINVAL)
		snprintf(err, errlen, "%s (the xml of [trdp %s], %s:%d)", why, bc->name, cfg->path, cfg->dbc_line[b]);
	else if (r < 0)
		snprintf(err, errlen, "%s:%d: [trdp %s]: xml %s", cfg->path, cfg->dbc_line[b], bc->name, why);
	return r;
}

static int trdp_type_float(uint32_t type)
{
	return type == TRDP_TYPE_REAL32 || type == TRDP_TYPE_REAL64 || type == TRDP_TYPE_TIMEDATE32 || type == TRDP_TYPE_TIMEDATE48 ||
	       type == TRDP_TYPE_TIMEDATE64;
}

/* One telegram's leaves as channels `Telegram.Element`, a variable
   array's first TRDP_DYN_CHANNELS items each a channel of its own. */
static int add_trdp_telegram(pl_channels_t *ch, size_t b, const struct trdp_telegram *t, struct trdp_tel_map *m,
                             char *err, size_t errlen)
{
	const struct bus_cfg *bc = &ch->cfg->buses[b];
	size_t nl = trdp_plan_leaves(t->plan);
	struct pl_channel c;
	int r;

	m->first = calloc(nl ? nl : 1, sizeof(*m->first));
	m->nslots = calloc(nl ? nl : 1, sizeof(*m->nslots));
	if (!m->first || !m->nslots)
		return -ENOMEM;
	for (size_t l = 0; l < nl; l++) {
		struct trdp_leaf_info li;
		uint32_t k;

		if ((r = trdp_plan_leaf(t->plan, l, &li)) < 0)
			return r;
		m->first[l] = (uint32_t)(ch->n - ch->base[b]);
		m->nslots[l] = !li.dynamic ? 1 : li.max_items < TRDP_DYN_CHANNELS ? li.max_items : TRDP_DYN_CHANNELS;
		for (k = 0; k < m->nslots[l]; k++) {
			memset(&c, 0, sizeof(c));
			if (ch->n - ch->base[b] >= CONF_BUS_CHANNELS_MAX) {
				snprintf(err, errlen, "%s: more than %u channels on [trdp %s] (split the XML over buses)",
				         bc->trdp.xml, CONF_BUS_CHANNELS_MAX, bc->name);
				return -E2BIG;
			}
			c.id = (uint32_t)b << 16 | (uint32_t)(ch->n - ch->base[b]);
			c.bus = (uint16_t)b;
			r = trdp_plan_value_name(t->plan, (uint32_t)l, k, c.name, sizeof(c.name));
			if (r < 0)
				return r;
			if ((size_t)r >= sizeof(c.name)) {
				/* cut, two names could become one */
				snprintf(err, errlen, "%s:%u:%u: telegram %s: a channel name of %d characters (at most %zu)",
				         bc->trdp.xml, t->line, t->column, t->name, r, sizeof(c.name) - 1);
				return -ENAMETOOLONG;
			}
			c.unit = li.unit ? li.unit : "";
			snprintf(c.source, sizeof(c.source), "trdp %s ComId %" PRIu32, bc->name, t->comid);
			c.decimals = (int8_t)(li.text || trdp_type_float(li.type) ? -1 :
			                      rec_format_decimals(li.scale, li.offset));
			if ((r = add_channel(ch, &c)) < 0)
				return r;
		}
		m->nchannels += m->nslots[l];
	}
	return 0;
}

static int add_trdp(pl_channels_t *ch, size_t b, char *err, size_t errlen)
{
	struct trdp_bus *tb = calloc(1, sizeof(*tb));
	int r;

	if (!tb)
		return -ENOMEM;
	ch->trdp[b] = tb;
	if ((r = pl_trdp_load(ch->cfg, b, &tb->cfg, err, errlen)) < 0)
		return r;
	tb->map = calloc(tb->cfg->n_telegrams ? tb->cfg->n_telegrams : 1, sizeof(*tb->map));
	if (!tb->map)
		return -ENOMEM;
	for (size_t i = 0; i < tb->cfg->n_telegrams; i++) {
		const struct trdp_telegram *t = &tb->cfg->telegrams[i];
		size_t nv, nt;

		if (!t->plan)
			continue;
		if ((r = add_trdp_telegram(ch, b, t, &tb->map[i], err, errlen)) < 0) {
			if (r == -ENOMEM || r == -EINVAL)
				snprintf(err, errlen, "%s: [trdp %s]: %s", ch->cfg->path, ch->cfg->buses[b].name,
				         strerror(-r));
			return r;
		}
		if (t->pd && (t->timeout_us || t->cycle_us))
			tb->map[i].timeout_ns = (int64_t)(t->timeout_us ? t->timeout_us : 3ull * t->cycle_us) * 1000;
		/* a telegram's samples, and the timeouts and return it may show */
		if (tb->map[i].nchannels + tb->cfg->n_telegrams + 1 > ch->decode_max)
			ch->decode_max = tb->map[i].nchannels + tb->cfg->n_telegrams + 1;
		/* the decode scratch: the largest data set a header allows */
		nv = trdp_plan_values_max(t->plan, TRDP_MD_DATA_MAX);
		nt = trdp_plan_text_max(TRDP_MD_DATA_MAX);
		if (nv > ch->ntvalues)
			ch->ntvalues = nv;
		if (nt > ch->nttext)
			ch->nttext = nt;
	}
	return 0;
}

static void trdp_bus_free(struct trdp_bus *tb)
{
	if (!tb)
		return;
	for (size_t i = 0; tb->map && tb->cfg && i < tb->cfg->n_telegrams; i++) {
		free(tb->map[i].first);
		free(tb->map[i].nslots);
	}
	free(tb->map);
	trdp_config_free(tb->cfg);
	free(tb);
}

static int build(pl_channels_t *ch, char *err, size_t errlen)
{
	const struct conf_board *cfg = ch->cfg;
	int r = 0;

	for (size_t b = 0; b < cfg->nbuses && r >= 0; b++) {
		const struct bus_cfg *bc = &cfg->buses[b];
		ch->base[b] = ch->n;
		if (bc->kind == BUS_KIND_MODBUS) {
			r = add_modbus(ch, b);
		} else if (bc->kind == BUS_KIND_TRDP) {
			if (bc->trdp.xml[0])
				r = add_trdp(ch, b, err, errlen);
		} else if (bc->can.j1939 && (r = dbc_j1939_new(&ch->j1939[b])) < 0) {
			snprintf(err, errlen, "[can %s]: j1939: %s", bc->name, strerror(-r));
		} else if (bc->can.dbc[0]) {
			r = pl_dbc_load(cfg, b, &ch->dbc[b], err, errlen);
			if (r >= 0 && dbc_decode_max(ch->dbc[b]) > ch->decode_max)
				ch->decode_max = dbc_decode_max(ch->dbc[b]);
			if (r >= 0)
				r = add_signals(ch, b);
		}
		ch->count[b] = ch->n - ch->base[b];
	}
	/* a J1939 frame may time sessions out, end one, and carry a DM1 */
	for (size_t b = 0; b < cfg->nbuses && r >= 0; b++)
		if (ch->j1939[b] && ch->decode_max < J1939_ITEMS_MAX + dbc_decode_max(ch->dbc[b]))
			ch->decode_max = J1939_ITEMS_MAX + dbc_decode_max(ch->dbc[b]);
	return r;
}

/* A DBC signal's value table as the dictionary carries it: "VALUE LABEL"
   strings (railmon.proto Channel.value_table), one allocation. */
static int dict_value_table(const dbc_t *dbc, unsigned sig, struct rec_channel *d)
{
	double v;
	const char *label;
	size_t n = 0, bytes = 0;
	char **tab, *p, num[REC_DOUBLE_MAX];

	while (dbc_value_entry(dbc, sig, (unsigned)n, &v, &label) == 0) {
		rec_format_double(v, num, sizeof(num));
		bytes += strlen(num) + 1 + strlen(label) + 1;
		n++;
	}
	if (!n)
		return 0;
	tab = malloc(n * sizeof(*tab) + bytes);
	if (!tab)
		return -ENOMEM;
	p = (char *)(tab + n);
	for (size_t i = 0; i < n; i++) {
		dbc_value_entry(dbc, sig, (unsigned)i, &v, &label);
		rec_format_double(v, num, sizeof(num));
		tab[i] = p;
		p += sprintf(p, "%s %s", num, label) + 1;
	}
	d->value_table = (const char *const *)tab;
	d->nvalue_table = n;
	return 0;
}

/* Dictionary entry i: the list's strings, the bus's name, and for a DBC
   signal its declared range (a DBC's 0..0 is none) and value table. */
static int dict_entry(pl_channels_t *ch, size_t i)
{
	const struct pl_channel *c = &ch->list[i];
	struct rec_channel *d = &ch->dict[i];
	const dbc_t *dbc = c->bus < CONF_BUSES_MAX ? ch->dbc[c->bus] : NULL;
	struct dbc_signal_info si;

	*d = (struct rec_channel){ .id = c->id, .name = c->name, .unit = c->unit, .bus = c->bus, .source = c->source,
	                           .bus_name = c->bus < ch->cfg->nbuses ? ch->cfg->buses[c->bus].name : NULL };
	d->has_decimals = c->decimals >= 0;
	d->decimals = c->decimals >= 0 ? (uint32_t)c->decimals : 0;
	if (!dbc || dbc_signal_info(dbc, c->id & 0xffff, &si) < 0)
		return 0;
	if (si.min < si.max) {
		d->has_range = true;
		d->min = si.min;
		d->max = si.max;
	}
	return dict_value_table(dbc, c->id & 0xffff, d);
}

int pl_channels_new(const struct conf_board *cfg, pl_channels_t **ret, char *err, size_t errlen)
{
	pl_channels_t *ch;
	int r;

	if (!cfg || !ret || !err || !errlen)
		return -EINVAL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -ENOMEM;
	ch->cfg = cfg;
	r = build(ch, err, errlen);
	if (r >= 0) {
		ch->live = calloc(ch->n ? ch->n : 1, sizeof(*ch->live));
		ch->dict = calloc(ch->n ? ch->n : 1, sizeof(*ch->dict));
		r = ch->live && ch->dict ? 0 : -ENOMEM;
		if (r >= 0 && ch->ntvalues) {
			ch->tvalues = calloc(ch->ntvalues, sizeof(*ch->tvalues));
			ch->ttext = malloc(ch->nttext ? ch->nttext : 1);
			r = ch->tvalues && ch->ttext ? 0 : -ENOMEM;
		}
	}
	if (r < 0) {
		pl_channels_free(ch);
		return r;
	}
	for (size_t i = 0; i < ch->n && r >= 0; i++)
		r = dict_entry(ch, i);
	if (r < 0) {
		pl_channels_free(ch);
		snprintf(err, errlen, "%s: out of memory for the channel dictionary", cfg->path);
		return r;
	}
	*ret = ch;
	return 0;
}

pl_channels_t *pl_channels_free(pl_channels_t *ch)
{
	if (!ch)
		return NULL;
	for (size_t b = 0; b < CONF_BUSES_MAX; b++) {
		dbc_free(ch->dbc[b]);
		dbc_j1939_free(ch->j1939[b]);
		trdp_bus_free(ch->trdp[b]);
	}
	free(ch->tvalues);
	free(ch->ttext);
	for (size_t i = 0; ch->dict && i < ch->n; i++)
		free((void *)ch->dict[i].value_table);
	free(ch->list);
	free(ch->dict);
	free(ch->live);
	free(ch);
	return NULL;
}

size_t pl_channels_list(const pl_channels_t *ch, const struct pl_channel **ret)
{
	if (!ch)
		return 0;
	if (ret)
		*ret = ch->list;
	return ch->n;
}

const struct rec_channel *pl_channels_dictionary(const pl_channels_t *ch)
{
	return ch ? ch->dict : NULL;
}

/* ------------------------------------------------------------ by name and label */

static const char *channel_name(const void *ctx, size_t i)
{
	return ((const pl_channels_t *)ctx)->list[i].name;
}

int pl_channels_find(const pl_channels_t *ch, const char *name, size_t *ret_index, char *why, size_t whylen)
{
	if (!ch)
		return -EINVAL;
	return rec_name_resolve(channel_name, ch, ch->n, name, ret_index, why, whylen);
}

const char *pl_channels_value_label(const pl_channels_t *ch, size_t i, double value)
{
	const char *label;
	size_t b;

	if (!ch || i >= ch->n)
		return NULL;
	b = ch->list[i].bus;
	if (!ch->dbc[b] || dbc_value_label(ch->dbc[b], ch->list[i].id & 0xffff, value, &label) < 0)
		return NULL;
	return label;
}

int pl_channels_label_value(const pl_channels_t *ch, size_t i, const char *label, double *ret_value)
{
	const char *l;
	double v;
	size_t b;

	if (!ch || i >= ch->n || !label || !ret_value)
		return -EINVAL;
	b = ch->list[i].bus;
	if (!ch->dbc[b])
		return -ENOENT;
	for (unsigned k = 0; dbc_value_entry(ch->dbc[b], ch->list[i].id & 0xffff, k, &v, &l) == 0; k++) {
		if (!strcmp(l, label)) {
			*ret_value = v;
			return 0;
		}
	}
	return -ENOENT;
}
