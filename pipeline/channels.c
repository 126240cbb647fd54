/* SPDX-License-Identifier: MIT */
/* channels.c - a board's channels, DBC decoding and latest values (channels.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "channels.h"
#include "conf/config-schema.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "dbc/j1939.h"
#include "trdp/dataset.h"
#include "trdp/header.h"
#include "trdp/xml.h"

/* Items one J1939 frame adds besides its message's samples: every session
   timed out, the session it ends, the changes of a DM1. */
#define J1939_ITEMS_MAX (DBC_J1939_SESSIONS + 1 + DBC_J1939_DTC_EVENTS)

#define LIVE_TEXT_WORDS (ACQ_TEXT_MAX / 8)

struct live_slot {
	_Atomic uint64_t bits;   /* the double's bits */
	_Atomic int64_t t_ns;
	_Atomic uint32_t quality;
	/* A text channel's text, under a sequence lock: the collector writes,
	   the stat server reads.  Words, each atomic (relaxed), so a reader
	   racing a write reads no torn byte, only a text the sequence makes
	   it read again. */
	_Atomic uint32_t text_seq;  /* odd while the text is being written */
	_Atomic uint64_t text[LIVE_TEXT_WORDS];
	_Atomic uint8_t text_len;
	_Atomic bool is_text;
};

/* Items of a variable array that get channels of their own: a UINT16
   length could give 65,535 channels per leaf (the bus has ids for 65,536
   in all), so the items after these are decoded but not kept, and
   counted (pl_channels_trdp_counts). */
#define TRDP_DYN_CHANNELS 16u

/* A telegram's leaves as channel numbers on its bus (id & 0xffff). */
struct trdp_tel_map {
	uint32_t *first;     /* per leaf: its first channel (a dynamic leaf has nslots) */
	uint32_t *nslots;    /* per leaf: 1, or a dynamic leaf's channels */
	size_t nchannels;    /* the telegram's channels: the most samples it gives */
	/* PD supervision (TRDP_TIMEOUT / TRDP_BACK) by the telegrams' receive
	   times, so a replay of the log gives the same events */
	int64_t timeout_ns;  /* the XML's timeout, else 3 cycles; 0: none (not PD) */
	int64_t last_ns;     /* the last one's receive time */
	uint8_t state;       /* TEL_* */
};

enum { TEL_NEVER, TEL_LIVE, TEL_TIMED_OUT };

/* A TRDP bus with an XML: its telegrams' plans and where their values go. */
struct trdp_bus {
	struct trdp_config *cfg;
	struct trdp_tel_map *map; /* per telegram of cfg */
	struct pl_trdp_counts counts;
};

struct pl_channels {
	const struct conf_board *cfg;
	struct trdp_bus *trdp[CONF_BUSES_MAX]; /* TRDP buses with xml = */
	/* the collector's scratch for one telegram's decode (allocated once) */
	struct trdp_value *tvalues;
	size_t ntvalues;
	char *ttext;
	size_t nttext;
	dbc_t *dbc[CONF_BUSES_MAX];
	dbc_j1939_t *j1939[CONF_BUSES_MAX]; /* j1939 = true buses */
	size_t decode_max;                 /* the largest message of any DBC */
	struct pl_channel *list;
	struct rec_channel *dict;
	struct live_slot *live;
	size_t n, cap;
	size_t base[CONF_BUSES_MAX];      /* index of the bus's first channel */
	size_t count[CONF_BUSES_MAX];
};

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

/* ------------------------------------------------------------ decoding */

/* ------------------------------------------------------------ J1939 */

static void j1939_event(struct acq_item *o, const struct acq_item *frame, uint32_t code, int64_t arg, uint32_t detail)
{
	*o = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = frame->t_ns, .bus = frame->bus };
	o->event.code = code;
	o->event.arg = arg;
	o->event.detail = detail;
}

static void j1939_fault_event(struct acq_item *o, const struct acq_item *frame, const struct dbc_j1939_fault *f)
{
	j1939_event(o, frame, ACQ_EV_J1939_TP_FAULT,
	            (int64_t)f->kind | (int64_t)f->reason << 8 | (int64_t)f->expected << 16 | (int64_t)(f->got & 0xff) << 24 |
	            (int64_t)(f->total & 0xff) << 32 | (int64_t)f->da << 40, f->pgn | (uint32_t)f->sa << 24);
}

/* A J1939 message (a frame's or a reassembled one): its signals by PGN, and a DM1's changes. */
static int j1939_payload(pl_channels_t *ch, const struct acq_item *frame, uint32_t pgn, uint8_t sa,
                         const uint8_t *data, size_t len, struct acq_item *out, size_t max)
{
	struct dbc_j1939_dtc dtc[DBC_J1939_DTC_EVENTS];
	const dbc_t *dbc = ch->dbc[frame->bus];
	int n = 0, k;

	if (dbc && (n = dbc_decode_pgn(dbc, pgn, data, len, frame->t_ns, frame->bus, (uint32_t)frame->bus << 16,
	                                   out, max)) < 0)
		return n;
	if (pgn != DBC_J1939_PGN_DM1)
		return n;
	k = dbc_j1939_dm1(ch->j1939[frame->bus], sa, data, len, dtc,
	                  max - (size_t)n < DBC_J1939_DTC_EVENTS ? max - (size_t)n : DBC_J1939_DTC_EVENTS);
	for (int i = 0; i < k; i++)
		j1939_event(&out[n++], frame, dtc[i].active ? ACQ_EV_J1939_DTC_ACTIVE : ACQ_EV_J1939_DTC_CLEARED,
		            (int64_t)dtc[i].spn | (int64_t)dtc[i].fmi << 19 | (int64_t)dtc[i].oc << 24 |
		            (int64_t)dtc[i].lamps << 32, dtc[i].sa);
	return n;
}

/* A frame of a j1939 = true bus: sessions first (timeouts, then this frame), then its payload. */
static int decode_j1939(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	dbc_j1939_t *j = ch->j1939[it->bus];
	struct dbc_j1939_fault f;
	struct dbc_j1939_msg m;
	struct dbc_j1939_id id;
	size_t n = 0;
	int r;

	while (n < max && dbc_j1939_expire(j, it->t_ns, &f) == 1)
		j1939_fault_event(&out[n++], it, &f);
	r = dbc_j1939_feed(j, it, &m, &f);
	if (r == 2 && n < max)
		j1939_fault_event(&out[n++], it, &f);
	if (r == 1)
		r = j1939_payload(ch, it, m.id.pgn, m.id.sa, m.data, m.len, out + n, max - n);
	else if ((id = dbc_j1939_id_parse(it->can.id)).pgn != DBC_J1939_PGN_TP_CM && id.pgn != DBC_J1939_PGN_TP_DT)
		r = j1939_payload(ch, it, id.pgn, id.sa, it->can.data, it->can.len, out + n, max - n);
	else
		r = 0;
	return r < 0 ? r : (int)n + r;
}

/* ------------------------------------------------------------ TRDP */

/*
 * A decoded text (UTF-8) as a text item: a text item holds printable ASCII
 * only (acq-item.h; the Batch refuses anything else), so each character
 * that is not becomes one '?', and the first ACQ_TEXT_MAX characters are
 * kept.  Either makes the quality INVALID: the text is not the one sent.
 */
static void trdp_text_item(struct acq_text *t, const char *s, size_t len)
{
	size_t i = 0, n = 0;
	bool exact = true;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t step = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

		if (n == ACQ_TEXT_MAX) {
			exact = false;
			break;
		}
		if (c >= 0x20 && c <= 0x7e) {
			t->text[n++] = (char)c;
		} else {
			t->text[n++] = '?';
			exact = false;
		}
		i += step;
	}
	t->len = (uint8_t)n;
	t->quality = exact ? ACQ_Q_GOOD : ACQ_Q_INVALID;
}

static void trdp_event(struct acq_item *o, int64_t t_ns, uint16_t bus, uint32_t code, int64_t arg, uint32_t comid)
{
	*o = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = t_ns, .bus = bus };
	o->event = (struct acq_event){ .code = code, .arg = arg, .detail = comid };
}

/* TRDP_TIMEOUT for each telegram of bus b silent for more than its
   timeout + grace at now (up to max); stamped when it timed out. */
static size_t trdp_expire(pl_channels_t *ch, size_t b, int64_t now_ns, int64_t grace_ns, struct acq_item *out,
                          size_t max)
{
	struct trdp_bus *tb = ch->trdp[b];
	size_t n = 0;

	for (size_t i = 0; tb && i < tb->cfg->n_telegrams && n < max; i++) {
		struct trdp_tel_map *m = &tb->map[i];
		if (m->state != TEL_LIVE || !m->timeout_ns || now_ns - m->last_ns <= m->timeout_ns + grace_ns)
			continue;
		m->state = TEL_TIMED_OUT;
		tb->counts.timeouts++;
		trdp_event(&out[n++], m->last_ns + m->timeout_ns, (uint16_t)b, ACQ_EV_TRDP_TIMEOUT,
		           m->timeout_ns / 1000000, tb->cfg->telegrams[i].comid);
	}
	return n;
}

size_t pl_channels_tick(pl_channels_t *ch, int64_t now_ns, int64_t grace_ns, struct acq_item *out, size_t max)
{
	size_t n = 0;

	for (size_t b = 0; ch && b < ch->cfg->nbuses && n < max; b++)
		n += trdp_expire(ch, b, now_ns, grace_ns, out + n, max - n);
	return n;
}

/*
 * A valid telegram of a bus with an XML: its data set (datasetLength bytes
 * after the header, never the padding after them) decoded with its
 * telegram's plan into samples and texts at the telegram's receive time.
 * Items of a variable array past its channels, and telegrams whose data
 * set is short, are counted, not decoded.
 */
static int decode_trdp(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	struct trdp_bus *tb = ch->trdp[it->bus];
	const struct trdp_telegram *t;
	const struct trdp_tel_map *m;
	struct trdp_decode_result res;
	struct trdp_tel_map *tm;
	struct trdp_header h;
	size_t hsize, n = 0;
	int kind, r;

	if (!tb || !it->trdp.data || (it->trdp.flags >> ACQ_TRDP_RESULT_SHIFT) != TRDP_HDR_OK)
		return 0;
	kind = it->trdp.flags & ACQ_TRDP_MD ? TRDP_KIND_MD : TRDP_KIND_PD;
	if (trdp_header_parse((enum trdp_kind)kind, it->trdp.data, it->trdp.len, &h) != TRDP_HDR_OK)
		return 0;
	/* the timeouts this telegram's time shows, as a tick would have */
	n = trdp_expire(ch, it->bus, it->t_ns, 0, out, max);
	if (!(t = trdp_config_find(tb->cfg, h.com_id))) {
		tb->counts.unknown++;
		return (int)n;
	}
	tm = &tb->map[t - tb->cfg->telegrams];
	if (kind == TRDP_KIND_PD) {
		if (tm->state == TEL_TIMED_OUT && n < max) {
			tb->counts.backs++;
			trdp_event(&out[n++], it->t_ns, it->bus, ACQ_EV_TRDP_BACK, (it->t_ns - tm->last_ns) / 1000000,
			           t->comid);
		}
		tm->state = TEL_LIVE;
		tm->last_ns = it->t_ns;
	}
	if (!t->plan)
		return (int)n;
	m = tm;
	hsize = kind == TRDP_KIND_MD ? TRDP_MD_HEADER_SIZE : TRDP_PD_HEADER_SIZE;
	r = trdp_plan_decode(t->plan, it->trdp.data + hsize, h.dataset_len, ch->tvalues, ch->ntvalues, ch->ttext,
	                     ch->nttext, &res);
	if (r < 0) {
		/* never part of a data set: a short one says nothing for sure */
		tb->counts.bad++;
		return (int)n;
	}
	tb->counts.decoded++;
	for (size_t k = 0; k < res.count && n < max; k++) {
		const struct trdp_value *v = &ch->tvalues[k];
		uint32_t id;

		if (v->index >= m->nslots[v->leaf]) {
			tb->counts.past_channels++;
			continue;
		}
		id = (uint32_t)it->bus << 16 | (m->first[v->leaf] + v->index);
		if (v->type == TRDP_TYPE_CHAR8 || v->type == TRDP_TYPE_UTF16) {
			out[n] = (struct acq_item){ .kind = ACQ_ITEM_TEXT, .t_ns = it->t_ns, .bus = it->bus };
			out[n].text.channel = id;
			trdp_text_item(&out[n].text, ch->ttext + v->text_off, v->text_len);
		} else {
			out[n] = (struct acq_item){ .kind = ACQ_ITEM_SAMPLE, .t_ns = it->t_ns, .bus = it->bus };
			out[n].sample.channel = id;
			out[n].sample.quality = v->value == v->value ? ACQ_Q_GOOD : ACQ_Q_INVALID;
			out[n].sample.value = v->value;
		}
		n++;
	}
	return (int)n;
}

int pl_channels_trdp_counts(const pl_channels_t *ch, size_t b, struct pl_trdp_counts *ret)
{
	if (!ch || b >= CONF_BUSES_MAX || !ch->trdp[b] || !ret)
		return -EINVAL;
	*ret = ch->trdp[b]->counts;
	return 0;
}

int pl_channels_decode(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	if (it->bus >= ch->cfg->nbuses)
		return 0;
	if (it->kind == ACQ_ITEM_TRDP)
		return decode_trdp(ch, it, out, max);
	if (it->kind != ACQ_ITEM_CAN || (it->can.flags & (ACQ_CAN_ERR | ACQ_CAN_RTR)))
		return 0;
	if (ch->j1939[it->bus] && (it->can.flags & ACQ_CAN_EXT))
		return decode_j1939(ch, it, out, max);
	if (!ch->dbc[it->bus])
		return 0;
	return dbc_decode(ch->dbc[it->bus], it, (uint32_t)it->bus << 16, out, max);
}

size_t pl_channels_decode_max(const pl_channels_t *ch)
{
	return ch ? ch->decode_max : 0;
}

const dbc_t *pl_channels_dbc(const pl_channels_t *ch, size_t b)
{
	return ch && b < CONF_BUSES_MAX ? ch->dbc[b] : NULL;
}

/* ------------------------------------------------------------ live values */

/* Map a channel id to its index, -1 if it is not one of ours. */
static ssize_t channel_index(const pl_channels_t *ch, uint32_t id)
{
	size_t b = id >> 16, i = id & 0xffff;

	if (b >= ch->cfg->nbuses || i >= ch->count[b])
		return -1;
	return (ssize_t)(ch->base[b] + i);
}

/* A text item as the channel's latest (the collector thread, the only writer). */
static void set_live_text(struct live_slot *s, const struct acq_item *it)
{
	uint32_t seq = atomic_load_explicit(&s->text_seq, memory_order_relaxed);
	uint64_t w[LIVE_TEXT_WORDS] = { 0 };

	memcpy(w, it->text.text, it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX);
	atomic_store_explicit(&s->text_seq, seq + 1, memory_order_relaxed);
	/* Each word with release (no fence: TSan does not model them): a
	   reader that acquires a new word sees the odd sequence before it. */
	for (size_t k = 0; k < LIVE_TEXT_WORDS; k++)
		atomic_store_explicit(&s->text[k], w[k], memory_order_release);
	atomic_store_explicit(&s->text_len, it->text.len <= ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX,
	                      memory_order_release);
	atomic_store_explicit(&s->is_text, true, memory_order_relaxed);
	/* every word is visible before the even sequence */
	atomic_store_explicit(&s->text_seq, seq + 2, memory_order_release);
	atomic_store_explicit(&s->quality, it->text.quality, memory_order_relaxed);
	atomic_store_explicit(&s->t_ns, it->t_ns, memory_order_release);
}

/* The text of slot s into ret (a reader on any thread): read again while
   the writer was at it. */
static void live_text(struct live_slot *s, struct pl_live *ret)
{
	uint64_t w[LIVE_TEXT_WORDS];
	uint32_t a, b;
	uint8_t len;

	do {
		a = atomic_load_explicit(&s->text_seq, memory_order_acquire);
		/* acquire: the second read of the sequence stays after these */
		for (size_t k = 0; k < LIVE_TEXT_WORDS; k++)
			w[k] = atomic_load_explicit(&s->text[k], memory_order_acquire);
		len = atomic_load_explicit(&s->text_len, memory_order_acquire);
		b = atomic_load_explicit(&s->text_seq, memory_order_relaxed);
	} while ((a & 1) || a != b);
	memcpy(ret->text, w, len);
	ret->text[len] = 0;
	ret->is_text = true;
}

void pl_channels_set_live(pl_channels_t *ch, const struct acq_item *it)
{
	ssize_t i = it->kind == ACQ_ITEM_SAMPLE ? channel_index(ch, it->sample.channel)
	          : it->kind == ACQ_ITEM_TEXT   ? channel_index(ch, it->text.channel) : -1;
	uint64_t bits;

	if (i < 0)
		return;
	if (it->kind == ACQ_ITEM_TEXT) {
		set_live_text(&ch->live[i], it);
		return;
	}
	memcpy(&bits, &it->sample.value, sizeof(bits));
	atomic_store_explicit(&ch->live[i].bits, bits, memory_order_relaxed);
	atomic_store_explicit(&ch->live[i].quality, it->sample.quality, memory_order_relaxed);
	/* Written last with release: a reader that sees the new time sees the
	   value that goes with it. */
	atomic_store_explicit(&ch->live[i].t_ns, it->t_ns, memory_order_release);
}

int pl_channels_live(const pl_channels_t *ch, size_t i, struct pl_live *ret)
{
	struct live_slot *s;
	uint64_t bits;

	if (!ch || !ret || i >= ch->n)
		return -EINVAL;
	s = &ch->live[i];
	ret->t_ns = atomic_load_explicit(&s->t_ns, memory_order_acquire);
	bits = atomic_load_explicit(&s->bits, memory_order_relaxed);
	memcpy(&ret->value, &bits, sizeof(bits));
	ret->quality = atomic_load_explicit(&s->quality, memory_order_relaxed);
	ret->is_text = false;
	if (atomic_load_explicit(&s->is_text, memory_order_relaxed))
		live_text(s, ret);
	return 0;
}

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

ssize_t pl_channels_index(const pl_channels_t *ch, uint32_t id)
{
	return ch ? channel_index(ch, id) : -1;
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
