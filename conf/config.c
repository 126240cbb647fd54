/* SPDX-License-Identifier: MIT */
/*
 * config.c - the board file's text into a struct conf_board: what its
 * sections open, and the checks across keys and sections after the whole
 * file was read.  Reading the file from disk and hashing the files it
 * names are config-file.c.
 *
 * The keys themselves (types, ranges, defaults, error words) are the
 * tables of config-schema.c; basic/ini-schema.c reads the file with them
 * and keeps the first error as "file:line: message".
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/hash.h"
#include "basic/parse.h"
#include "config-schema.h"
#include "config.h"
#include "bus/regmap.h"

struct parser {
	struct conf_board *cfg;
	struct conf_pending_bus *buses;     /* CONF_BUSES_MAX */
	size_t nbuses;
	struct conf_pending_channel *chans; /* CONF_CHANNELS_MAX */
	size_t nchans;
	struct conf_pending_signal *sigs;   /* CONF_REQUIRED_MAX + CONF_POLICIES_MAX */
	size_t nsigs;
	bool seen[CONF_SEC_UPLINK + 1];     /* [board], [storage], [uplink] */
	bool seen_sparkplug;
};

struct conf_private {
	struct conf_board pub;
	struct bus_mb_channel *channels; /* all Modbus channels, grouped by bus */
};

/* ------------------------------------------------------------ sections */

static bool valid_name(const char *s)
{
	if (!*s || strlen(s) >= BUS_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

static struct conf_pending_bus *find_bus(struct parser *p, const char *name)
{
	for (size_t i = 0; i < p->nbuses; i++)
		if (!strcmp(p->buses[i].bus.name, name))
			return &p->buses[i];
	return NULL;
}

/* Defaults come from the tables; a default its own key refuses is a bug
   in config-schema.c (test-board checks every table). */
static int defaults(struct basic_ini *ini, enum conf_section s, void *base)
{
	if (basic_ini_defaults(conf_schema_table(s), base) < 0)
		return basic_ini_fail(ini, "internal error: a default of [%s] is refused", conf_schema_table(s)->section);
	return 0;
}

static int new_bus(struct basic_ini *ini, struct parser *p, enum bus_kind kind, const char *name,
                   struct basic_ini_section *ret)
{
	enum conf_section s = kind == BUS_KIND_CAN ? CONF_SEC_CAN : kind == BUS_KIND_TRDP ? CONF_SEC_TRDP : CONF_SEC_MODBUS;
	struct conf_pending_bus *b;

	if (!valid_name(name))
		return basic_ini_fail(ini, "bad bus name '%s' (letters, digits, '-', '_', '.'; at most %d)", name,
		                      BUS_NAME_MAX - 1);
	if (find_bus(p, name))
		return basic_ini_fail(ini, "bus '%s' is defined twice", name);
	if (p->nbuses >= CONF_BUSES_MAX)
		return basic_ini_fail(ini, "at most %d buses", CONF_BUSES_MAX);
	b = &p->buses[p->nbuses];
	memset(b, 0, sizeof(*b));
	b->bus.kind = kind;
	b->bus.index = (uint16_t)p->nbuses;
	strcpy(b->bus.name, name);
	b->line = basic_ini_line(ini);
	if (defaults(ini, s, b) < 0)
		return -EINVAL;
	p->nbuses++;
	*ret = (struct basic_ini_section){ .table = conf_schema_table(s), .base = b };
	snprintf(ret->title, sizeof(ret->title), "%s %s",
	         kind == BUS_KIND_CAN ? "can" : kind == BUS_KIND_TRDP ? "trdp" : "modbus", name);
	return 0;
}

static int new_channel(struct basic_ini *ini, struct parser *p, const char *name, struct basic_ini_section *ret)
{
	struct conf_pending_channel *pc;

	if (!valid_name(name) || strlen(name) >= sizeof(pc->ch.name))
		return basic_ini_fail(ini, "bad channel name '%s'", name);
	for (size_t i = 0; i < p->nchans; i++)
		if (!strcmp(p->chans[i].ch.name, name))
			return basic_ini_fail(ini, "channel '%s' is defined twice (first at line %d)", name, p->chans[i].line);
	if (p->nchans >= CONF_CHANNELS_MAX)
		return basic_ini_fail(ini, "at most %d channels", CONF_CHANNELS_MAX);
	pc = &p->chans[p->nchans];
	memset(pc, 0, sizeof(*pc));
	strcpy(pc->ch.name, name);
	pc->line = basic_ini_line(ini);
	if (defaults(ini, CONF_SEC_CHANNEL, pc) < 0)
		return -EINVAL;
	p->nchans++;
	*ret = (struct basic_ini_section){ .table = conf_schema_table(CONF_SEC_CHANNEL), .base = pc };
	snprintf(ret->title, sizeof(ret->title), "channel %s", name);
	return 0;
}

static int new_trigger(struct basic_ini *ini, struct parser *p, const char *name, struct basic_ini_section *ret)
{
	struct conf_board *c = p->cfg;
	struct conf_trigger *t;

	/* The name goes into the holds file and `hold list`: one word. */
	if (!valid_name(name) || strlen(name) >= sizeof(t->name))
		return basic_ini_fail(ini, "bad trigger name '%s' (letters, digits, '-', '_', '.')", name);
	for (size_t i = 0; i < c->ntriggers; i++)
		if (!strcmp(c->triggers[i].name, name))
			return basic_ini_fail(ini, "trigger '%s' is defined twice (first at line %d)", name,
			                      c->triggers[i].line);
	if (c->ntriggers >= CONF_TRIGGERS_MAX)
		return basic_ini_fail(ini, "at most %d triggers", CONF_TRIGGERS_MAX);
	t = &c->triggers[c->ntriggers];
	memset(t, 0, sizeof(*t));
	strcpy(t->name, name);
	t->line = basic_ini_line(ini);
	if (defaults(ini, CONF_SEC_TRIGGER, t) < 0)
		return -EINVAL;
	c->ntriggers++;
	*ret = (struct basic_ini_section){ .table = conf_schema_table(CONF_SEC_TRIGGER), .base = t };
	snprintf(ret->title, sizeof(ret->title), "trigger %s", name);
	return 0;
}

static int new_required(struct basic_ini *ini, struct parser *p, const char *name, int line,
                        struct conf_required **ret)
{
	struct conf_board *c = p->cfg;

	if (strlen(name) >= sizeof(c->required[0].channel))
		return basic_ini_fail_at(ini, line, "channel name '%s' is too long", name);
	for (size_t i = 0; i < c->nrequired; i++)
		if (!strcmp(c->required[i].channel, name))
			return basic_ini_fail_at(ini, line, "'%s' is required twice (first at line %d)", name,
			                         c->required[i].line);
	if (c->nrequired >= CONF_REQUIRED_MAX)
		return basic_ini_fail_at(ini, line, "at most %d required channels", CONF_REQUIRED_MAX);
	*ret = &c->required[c->nrequired++];
	memset(*ret, 0, sizeof(**ret));
	strcpy((*ret)->channel, name);
	(*ret)->line = line;
	return 0;
}

#define SIGNALS_MAX (CONF_REQUIRED_MAX + CONF_POLICIES_MAX)

static int new_signal(struct basic_ini *ini, struct parser *p, const char *name, struct basic_ini_section *ret)
{
	struct conf_pending_signal *ps;

	if (strlen(name) >= sizeof(ps->name))
		return basic_ini_fail(ini, "channel name '%s' is too long", name);
	if (p->nsigs >= SIGNALS_MAX)
		return basic_ini_fail(ini, "at most %d [signal] sections", SIGNALS_MAX);
	ps = &p->sigs[p->nsigs++];
	memset(ps, 0, sizeof(*ps));
	strcpy(ps->name, name);
	ps->line = basic_ini_line(ini);
	*ret = (struct basic_ini_section){ .table = conf_schema_table(CONF_SEC_SIGNAL), .base = ps };
	snprintf(ret->title, sizeof(ret->title), "signal %s", name);
	return 0;
}

/* A channel's own uplink policy (a [channel] or [signal] with uplink =). */
static int add_policy(struct basic_ini *ini, struct parser *p, const char *name,
                      const struct conf_uplink_policy *pol, int line)
{
	struct conf_board *c = p->cfg;
	struct conf_channel_policy *cp;

	for (size_t i = 0; i < c->npolicies; i++)
		if (!strcmp(c->policies[i].channel, name))
			return basic_ini_fail_at(ini, line, "'%s' has two uplink policies (first at line %d)", name,
			                         c->policies[i].line);
	if (c->npolicies >= CONF_POLICIES_MAX)
		return basic_ini_fail_at(ini, line, "at most %d channels with an uplink policy of their own (set the "
		                         "bus's uplink = instead)", CONF_POLICIES_MAX);
	cp = &c->policies[c->npolicies++];
	snprintf(cp->channel, sizeof(cp->channel), "%s", name);
	cp->pol = *pol;
	cp->line = line;
	return 0;
}

/* [signal NAME]: a required signal, a policy, or both; nothing is a mistake. */
static int validate_signal(struct basic_ini *ini, struct parser *p, const struct conf_pending_signal *ps)
{
	struct conf_required *rq;
	int r;

	if (!ps->within_ms && !ps->uplink_line)
		return basic_ini_fail_at(ini, ps->line, "[signal %s]: missing 'required_within_ms =' or 'uplink ='",
		                         ps->name);
	if (ps->uplink_line && (r = add_policy(ini, p, ps->name, &ps->uplink, ps->uplink_line)) < 0)
		return r;
	if (!ps->within_ms)
		return 0;
	r = new_required(ini, p, ps->name, ps->line, &rq);
	if (r == 0)
		rq->within_ms = ps->within_ms;
	return r;
}

/* A [section] header: what it declares, and the table of its keys. */
static int open_section(struct basic_ini *ini, const char *section, struct basic_ini_section *ret)
{
	struct parser *p = basic_ini_user(ini);
	void *const single[] = { p->cfg, &p->cfg->storage, &p->cfg->uplink };
	char kind[32], name[96];

	for (enum conf_section s = CONF_SEC_BOARD; s <= CONF_SEC_UPLINK; s++) {
		if (strcmp(section, conf_schema_table(s)->section))
			continue;
		if (p->seen[s])
			return basic_ini_fail(ini, "section [%s] appears twice", section);
		p->seen[s] = true;
		*ret = (struct basic_ini_section){ .table = conf_schema_table(s), .base = single[s] };
		snprintf(ret->title, sizeof(ret->title), "%s", section);
		return 0;
	}
	if (!strcmp(section, conf_schema_table(CONF_SEC_SPARKPLUG)->section)) {
		if (p->seen_sparkplug)
			return basic_ini_fail(ini, "section [%s] appears twice", section);
		p->seen_sparkplug = true;
		p->cfg->sparkplug.line = basic_ini_line(ini);
		*ret = (struct basic_ini_section){ .table = conf_schema_table(CONF_SEC_SPARKPLUG),
		                                   .base = &p->cfg->sparkplug };
		snprintf(ret->title, sizeof(ret->title), "%s", section);
		return 0;
	}
	if (sscanf(section, "%31s %95s", kind, name) != 2)
		return basic_ini_fail(ini, "unknown section [%s] (expected board, storage, uplink, sparkplug, can NAME, "
		                      "modbus NAME, trdp NAME, channel NAME, trigger NAME, signal NAME)", section);
	if (!strcmp(kind, "can"))
		return new_bus(ini, p, BUS_KIND_CAN, name, ret);
	if (!strcmp(kind, "modbus"))
		return new_bus(ini, p, BUS_KIND_MODBUS, name, ret);
	if (!strcmp(kind, "trdp"))
		return new_bus(ini, p, BUS_KIND_TRDP, name, ret);
	if (!strcmp(kind, "channel"))
		return new_channel(ini, p, name, ret);
	if (!strcmp(kind, "trigger"))
		return new_trigger(ini, p, name, ret);
	if (!strcmp(kind, "signal"))
		return new_signal(ini, p, name, ret);
	return basic_ini_fail(ini, "unknown section [%s]", section);
}

/* ------------------------------------------------------------ validate */

static int validate_channel(struct basic_ini *ini, struct parser *p, struct conf_pending_channel *pc)
{
	struct bus_cfg *b = conf_bus(p->cfg, pc->bus);
	struct bus_mb_channel *ch = &pc->ch;

	if (!pc->bus[0])
		return basic_ini_fail_at(ini, pc->line, "channel '%s': missing 'bus ='", ch->name);
	if (!b || b->kind != BUS_KIND_MODBUS)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': no [modbus %s] section", ch->name, pc->bus);
	if (!pc->address_line)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': missing 'address ='", ch->name);
	/* On a serial line 0 is the broadcast address, which no slave ever
	   answers.  Modbus TCP keeps 0: a device on its own IP address
	   ignores the unit id or takes 0 as "this device", and gateways that
	   route by unit id answer 0 themselves or map it to a slave; one that
	   forwarded it as a broadcast would only give timeouts, never a value
	   from the wrong device. */
	if (b->mb.rtu && !ch->unit_id && pc->unit_line)
		return basic_ini_fail_at(ini, pc->unit_line, "channel '%s': unit_id = 0 is the Modbus broadcast address, "
		                         "which no slave answers on a serial line (use 1 to 247)", ch->name);
	if (b->mb.rtu && !ch->unit_id)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': missing 'unit_id =' (1 to 247 on a serial line)",
		                         ch->name);
	if ((ch->table == BUS_MB_COIL || ch->table == BUS_MB_DISCRETE) && ch->type != BUS_MB_BIT) {
		if (pc->table_line && ch->type != BUS_MB_U16)
			return basic_ini_fail_at(ini, pc->line, "channel '%s': coils and discrete inputs are bits: use "
			                         "'type = bit'", ch->name);
		ch->type = BUS_MB_BIT;
	}
	if (ch->type == BUS_MB_STRING && !ch->count)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': type = string needs 'count =' (1 to %d registers)",
		                         ch->name, BUS_MB_STRING_REGS_MAX);
	if (ch->type != BUS_MB_STRING && ch->count)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': 'count =' is for type = string only", ch->name);
	if (ch->type == BUS_MB_STRING && (ch->scale != 1 || ch->offset != 0 || ch->unit[0]))
		return basic_ini_fail_at(ini, pc->line, "channel '%s': a string has no scale, offset or unit", ch->name);
	if ((unsigned)ch->addr + bus_mb_channel_regs(ch) > 65536)
		return basic_ini_fail_at(ini, pc->line, "channel '%s': address + size runs past register 65535", ch->name);
	if (!ch->period_ms)
		ch->period_ms = p->buses[b->index].period_ms;
	if (pc->uplink_line) {
		int r = add_policy(ini, p, ch->name, &pc->uplink, pc->uplink_line);

		if (r < 0)
			return r;
	}
	if (pc->required_ms) {
		struct conf_required *rq;
		int r = new_required(ini, p, ch->name, pc->required_line, &rq);

		if (r < 0)
			return r;
		rq->within_ms = pc->required_ms;
		/* Read every period_ms: a shorter limit is always missed. */
		if (pc->required_ms < ch->period_ms)
			return basic_ini_fail_at(ini, pc->required_line, "channel '%s': required_within_ms %u is shorter "
			                         "than its poll period %u ms", ch->name, pc->required_ms, ch->period_ms);
	}
	return 0;
}

static int validate_bus(struct basic_ini *ini, struct parser *p, const struct bus_cfg *b)
{
	int line = p->buses[b->index].line;

	if (b->kind == BUS_KIND_CAN) {
		const struct bus_can_cfg *c = &b->can;
		if (c->driver == BUS_CAN_SOCKETCAN && !c->ifname[0])
			return basic_ini_fail_at(ini, line, "[can %s]: driver socketcan needs 'interface ='", b->name);
		if (c->driver != BUS_CAN_SOCKETCAN && !c->device[0])
			return basic_ini_fail_at(ini, line, "[can %s]: driver %s needs 'device =' (or 'file =')", b->name,
			                         c->driver == BUS_CAN_SLCAN ? "slcan" : "trace");
		if (!c->listen_only && !c->allow_normal_mode && c->driver != BUS_CAN_TRACE)
			return basic_ini_fail_at(ini, line, "[can %s]: listen_only = false also needs allow_normal_mode = "
			                         "true (railmon is read-only towards the train)", b->name);
		return 0;
	}
	if (b->kind == BUS_KIND_TRDP) {
		const struct bus_trdp_cfg *t = &b->trdp;
		if (!t->pd_port && !t->md_port)
			return basic_ini_fail_at(ini, line, "[trdp %s]: pd_port and md_port are both 0: nothing to "
			                         "receive", b->name);
		if (t->pd_port && t->pd_port == t->md_port)
			return basic_ini_fail_at(ini, line, "[trdp %s]: pd_port and md_port are the same port %u",
			                         b->name, t->pd_port);
		if (t->receive_capture && !t->ifname[0])
			return basic_ini_fail_at(ini, line, "[trdp %s]: receive = capture needs 'interface =' (the "
			                         "interface whose packets are read)", b->name);
		if (t->bind_ip && t->ngroups)
			return basic_ini_fail_at(ini, line, "[trdp %s]: bind = an address receives no multicast: leave "
			                         "bind out and name the interface the groups are joined on", b->name);
		return 0;
	}
	if (b->mb.rtu && !b->mb.device[0])
		return basic_ini_fail_at(ini, line, "[modbus %s]: transport rtu needs 'device ='", b->name);
	if (!b->mb.rtu && !b->mb.host[0])
		return basic_ini_fail_at(ini, line, "[modbus %s]: transport tcp needs 'host ='", b->name);
	if (!b->mb.nchannels)
		return basic_ini_fail_at(ini, line, "[modbus %s]: no [channel] uses this bus", b->name);
	return 0;
}

/* The buses as conf_board keeps them, in the order of the file. */
static void move_buses(struct parser *p)
{
	struct conf_board *c = p->cfg;

	for (size_t i = 0; i < p->nbuses; i++) {
		c->buses[i] = p->buses[i].bus;
		c->bus_cpu[i] = p->buses[i].cpu;
		c->dbc_line[i] = p->buses[i].dbc_line;
		c->bus_uplink[i] = p->buses[i].uplink;
		c->bus_frames[i] = p->buses[i].frames;
	}
	c->nbuses = p->nbuses;
}

/* Copy the channels into one array grouped by bus, number them
   bus << 16 | index (stable for a given board file). */
static int assign_channels(struct parser *p, struct conf_private *priv)
{
	struct conf_board *c = p->cfg;
	size_t k = 0;

	priv->channels = calloc(p->nchans ? p->nchans : 1, sizeof(*priv->channels));
	if (!priv->channels)
		return -ENOMEM;
	for (size_t b = 0; b < c->nbuses; b++) {
		if (c->buses[b].kind != BUS_KIND_MODBUS)
			continue;
		c->buses[b].mb.channels = priv->channels + k;
		for (size_t i = 0; i < p->nchans; i++) {
			if (strcmp(p->chans[i].bus, c->buses[b].name))
				continue;
			priv->channels[k] = p->chans[i].ch;
			priv->channels[k].id = (uint32_t)b << 16 | (uint32_t)c->buses[b].mb.nchannels;
			c->buses[b].mb.nchannels++;
			k++;
		}
	}
	return 0;
}

/*
 * The byte budget counts the segment being written (preallocated whole) and
 * the recycled spare: below two segments it can never be kept (the log stays
 * above it) and no closed segment survives a roll, so a budget that small
 * is a mistake, not a choice.
 */
static int validate_storage(struct basic_ini *ini, const struct conf_storage *s)
{
	char ret[BASIC_SIZE_TEXT_MAX], seg[BASIC_SIZE_TEXT_MAX], min[BASIC_SIZE_TEXT_MAX];

	if (!s->retention_bytes || s->retention_bytes / 2 >= s->segment_bytes)
		return 0;
	return basic_ini_fail_at(ini, s->retention_line, "retention_size %s is less than two segments of %s "
	                         "(segment_size%s): the budget counts the segment being written and a recycled "
	                         "spare; use at least %s, or a smaller segment_size",
	                         basic_format_size(s->retention_bytes, ret, sizeof(ret)),
	                         basic_format_size(s->segment_bytes, seg, sizeof(seg)),
	                         s->segment_line ? "" : ", the default",
	                         basic_format_size(2 * s->segment_bytes, min, sizeof(min)));
}

/* The connection keys that go together, of [uplink] or [sparkplug]
   (section), said at line (the keys may be anywhere in the section). */
static int validate_uplink(struct basic_ini *ini, const char *section, int line, const struct conf_uplink *u)
{
	if (u->enabled && u->tls_insecure && !u->tls)
		return basic_ini_fail_at(ini, line, "[%s] tls_insecure only makes sense with mqtts:// or TLS files",
		                         section);
	if (u->tls && !u->ca_file[0])
		return basic_ini_fail_at(ini, line, "[%s]: TLS needs ca_file (the CA that signed the broker's "
		                         "certificate)", section);
	if (!u->cert_file[0] != !u->key_file[0])
		return basic_ini_fail_at(ini, line, "[%s]: cert_file and key_file go together (the device's identity)",
		                         section);
	if ((u->tls || u->username[0]) && !u->enabled)
		return basic_ini_fail_at(ini, line, "[%s]: no broker = mqtt[s]://host[:port]", section);
	return 0;
}

/* [sparkplug], when written: its connection as [uplink]'s, then what only
   it has.  The edge node defaults to the vehicle (a name the topics take:
   basic/name.h keeps '/', '+' and '#' out of it). */
static int validate_sparkplug(struct basic_ini *ini, struct parser *p)
{
	struct conf_sparkplug *sp = &p->cfg->sparkplug;
	int r;

	if (!p->seen_sparkplug)
		return 0;
	if ((r = validate_uplink(ini, "sparkplug", sp->line, &sp->mqtt)) < 0)
		return r;
	if (!sp->mqtt.enabled)
		return basic_ini_fail_at(ini, sp->line, "[sparkplug]: no broker = mqtt[s]://host[:port]");
	if (!sp->group_id[0])
		return basic_ini_fail_at(ini, sp->line, "[sparkplug]: missing 'group_id =' (the Sparkplug group)");
	if (!sp->edge_node[0])
		snprintf(sp->edge_node, sizeof(sp->edge_node), "%s", p->cfg->vehicle);
	for (size_t i = 0; i < sp->ndevices; i++)
		if (!find_bus(p, sp->devices[i]))
			return basic_ini_fail_at(ini, sp->devices_line, "[sparkplug] devices: no bus '%s' in the file",
			                         sp->devices[i]);
	return 0;
}

/* After the whole file: the checks across keys and sections. */
static int validate(struct basic_ini *ini)
{
	struct parser *p = basic_ini_user(ini);
	struct conf_board *c = p->cfg;
	int r;

	if (!c->vehicle[0])
		return basic_ini_fail_at(ini, 1, "missing [board] vehicle = ID");
	move_buses(p);
	/* before the channels: required_within_ms of [signal] sections came
	   first in the list (check's order) */
	for (size_t i = 0; i < p->nsigs; i++)
		if ((r = validate_signal(ini, p, &p->sigs[i])) < 0)
			return r;
	for (size_t i = 0; i < p->nchans; i++)
		if ((r = validate_channel(ini, p, &p->chans[i])) < 0)
			return r;
	r = assign_channels(p, (struct conf_private *)c);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nbuses; i++)
		if ((r = validate_bus(ini, p, &c->buses[i])) < 0)
			return r;
	if ((r = validate_storage(ini, &c->storage)) < 0)
		return r;
	for (size_t i = 0; i < c->ntriggers; i++)
		if (!c->triggers[i].when_line)
			return basic_ini_fail_at(ini, c->triggers[i].line, "[trigger %s]: missing 'when =' (CHANNEL OP "
			                         "VALUE or event NAME)", c->triggers[i].name);
	if ((r = validate_uplink(ini, "uplink", 1, &c->uplink)) < 0)
		return r;
	return validate_sparkplug(ini, p);
}

/* -------------------------------------------------------------- parse */

/* [board], [storage], [uplink] and [sparkplug] have their defaults when not written. */
static int single_defaults(struct conf_board *c, const char *name, char *err, size_t errlen)
{
	if (basic_ini_defaults(conf_schema_table(CONF_SEC_BOARD), c) < 0 ||
	    basic_ini_defaults(conf_schema_table(CONF_SEC_STORAGE), &c->storage) < 0 ||
	    basic_ini_defaults(conf_schema_table(CONF_SEC_UPLINK), &c->uplink) < 0 ||
	    basic_ini_defaults(conf_schema_table(CONF_SEC_SPARKPLUG), &c->sparkplug) < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s: internal error: a default of the board schema is refused", name);
		return -EINVAL;
	}
	return 0;
}

int conf_parse(const char *name, const char *text, struct conf_board **ret_cfg, char *err, size_t errlen)
{
	static const struct basic_ini_ops ops = { .section = open_section, .done = validate };
	struct conf_private *priv;
	struct parser p = { 0 };
	int r;

	if (!name || !text || !ret_cfg)
		return -EINVAL;
	priv = calloc(1, sizeof(*priv));
	p.buses = calloc(CONF_BUSES_MAX, sizeof(*p.buses));
	p.chans = calloc(CONF_CHANNELS_MAX, sizeof(*p.chans));
	p.sigs = calloc(SIGNALS_MAX, sizeof(*p.sigs));
	if (!priv || !p.buses || !p.chans || !p.sigs) {
		r = -ENOMEM;
		goto out;
	}
	p.cfg = &priv->pub;
	snprintf(p.cfg->path, sizeof(p.cfg->path), "%s", name);
	r = single_defaults(p.cfg, name, err, errlen);
	if (r == 0)
		r = basic_ini_parse(name, text, &ops, &p, err, errlen);
	if (r == 0) {
		priv->pub.hash = basic_fnv1a_str(text);
		*ret_cfg = &priv->pub;
		priv = NULL;
	}
out:
	free(p.sigs);
	free(p.chans);
	free(p.buses);
	conf_free(priv ? &priv->pub : NULL);
	return r;
}

struct conf_board *conf_free(struct conf_board *cfg)
{
	struct conf_private *priv = (struct conf_private *)cfg;

	if (!cfg)
		return NULL;
	free(priv->channels);
	free(priv);
	return NULL;
}

struct bus_cfg *conf_bus(struct conf_board *cfg, const char *name)
{
	if (!cfg || !name)
		return NULL;
	for (size_t i = 0; i < cfg->nbuses; i++)
		if (!strcmp(cfg->buses[i].name, name))
			return &cfg->buses[i];
	return NULL;
}
