/* SPDX-License-Identifier: MIT */
/*
 * config.c - board file parsing (libinih) and validation.
 *
 * inih does not tell its handler the line number, so we feed it through
 * ini_parse_stream() with our own line reader that counts lines: the
 * handler runs right after the line it is called for was read, so the
 * count is that line's number.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#define CH_MAX 4096
_Static_assert(CH_MAX <= BOARD_BUS_CHANNELS_MAX, "Modbus channel ids are bus << 16 | n");

struct pending_channel {
	struct bus_mb_channel ch;
	char bus[BUS_NAME_MAX];
	int line;
	int unit_line;         /* of 'unit_id =', 0 if not given */
	bool has_address, has_table;
};

struct parser {
	struct board_cfg *cfg;
	const char *name;      /* file name for messages */
	const char *text;      /* whole file */
	const char *pos;       /* reader position */
	int line;
	char err[BOARD_ERR_MAX];
	int bus_line[BOARD_BUSES_MAX];
	struct pending_channel *chans;
	size_t nchans;
	char section[128];     /* current section, for duplicate detection */
	bool seen_board, seen_storage, seen_uplink;
	char base_dir[BUS_PATH_MAX];
	uint64_t channel_default_period[BOARD_BUSES_MAX];
	/* the current section's keys, for duplicate detection: a section
	   cannot appear twice, and its keys are known names, so this never
	   fills (a fixed table of every key once stopped detecting after
	   16,384 keys) */
	struct { uint64_t hash; int line; } keys[64];
	bool header_pending;   /* a [section] line was read since the last key */
	int header_line;
	size_t nkeys;
};

struct board_cfg_private {
	struct board_cfg pub;
	struct bus_mb_channel *channels; /* all Modbus channels, grouped by bus */
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record the first error only: later ones are usually consequences. */
static int perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->err[0])
		return 0;
	n = snprintf(p->err, sizeof(p->err), "%s:%d: ", p->name, p->line);
	va_start(ap, fmt);
	vsnprintf(p->err + n, sizeof(p->err) - (size_t)n, fmt, ap);
	va_end(ap);
	return 0; /* inih: stop here */
}

/* ---------------------------------------------------------------- values */

static bool parse_u64(const char *v, uint64_t *ret, uint64_t max)
{
	char *end;
	unsigned long long x;

	if (!*v || *v == '-')
		return false;
	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || *end || x > max)
		return false;
	*ret = x;
	return true;
}

static bool parse_int(const char *v, int *ret, int min, int max)
{
	char *end;
	long x;

	errno = 0;
	x = strtol(v, &end, 0);
	if (errno || !*v || *end || x < min || x > max)
		return false;
	*ret = (int)x;
	return true;
}

static bool parse_double(const char *v, double *ret)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (errno || !*v || *end || !isfinite(x))
		return false;
	*ret = x;
	return true;
}

static bool parse_bool(const char *v, bool *ret)
{
	static const char *yes[] = { "true", "yes", "on", "1" }, *no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*ret = true;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*ret = false;
			return true;
		}
	}
	return false;
}

/* "64k", "16M", "2G" (powers of 1024) or plain bytes. */
static bool parse_size(const char *v, uint64_t *ret)
{
	char *end;
	unsigned long long x;
	uint64_t mul = 1;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *v == '-')
		return false;
	if (*end) {
		switch (toupper((unsigned char)*end)) {
		case 'K': mul = 1ull << 10; break;
		case 'M': mul = 1ull << 20; break;
		case 'G': mul = 1ull << 30; break;
		case 'T': mul = 1ull << 40; break;
		default: return false;
		}
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return false;
	}
	if (x > UINT64_MAX / mul)
		return false;
	*ret = x * mul;
	return true;
}

/* "30", "30s", "15m", "12h", "30d" -> seconds. */
static bool parse_duration(const char *v, uint64_t *ret)
{
	char *end;
	unsigned long long x;
	uint64_t mul = 1;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *v == '-')
		return false;
	if (*end) {
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return false;
		}
		if (end[1])
			return false;
	}
	if (x > UINT64_MAX / mul)
		return false;
	*ret = x * mul;
	return true;
}

static bool copy_str(char *dst, size_t len, const char *v)
{
	size_t n = strlen(v);

	if (n >= len)
		return false;
	memcpy(dst, v, n + 1);
	return true;
}

/* Relative paths in a board file are relative to the board file. */
static bool copy_path(struct parser *p, char *dst, size_t len, const char *v)
{
	int n;

	if (v[0] == '/' || !p->base_dir[0])
		return copy_str(dst, len, v);
	n = snprintf(dst, len, "%s/%s", p->base_dir, v);
	return n > 0 && (size_t)n < len;
}

#define BAD(key, what) perr(p, "%s: " what ": '%s'", key, value)

/* -------------------------------------------------------------- sections */

static int set_board(struct parser *p, const char *name, const char *value)
{
	struct board_cfg *c = p->cfg;
	uint64_t u;

	if (!strcmp(name, "vehicle")) {
		if (!*value || !copy_str(c->vehicle, sizeof(c->vehicle), value))
			return BAD(name, "must be 1-63 characters");
		for (const char *s = value; *s; s++)
			if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
				return BAD(name, "may only contain letters, digits, '-', '_' and '.' (it is part of MQTT topics)");
	} else if (!strcmp(name, "rt_priority")) {
		if (!parse_int(value, &c->rt_priority, 0, 99))
			return BAD(name, "expected 0 (no realtime) to 99");
	} else if (!strcmp(name, "collector_cpu")) {
		if (!parse_int(value, &c->collector_cpu, -1, 1023))
			return BAD(name, "expected -1 (any) or a CPU number");
	} else if (!strcmp(name, "batch_ms")) {
		if (!parse_u64(value, &u, 60000) || !u)
			return BAD(name, "expected 1 to 60000");
		c->batch_ms = (uint32_t)u;
	} else if (!strcmp(name, "batch_max")) {
		if (!parse_u64(value, &u, 1u << 20) || u < 16)
			return BAD(name, "expected 16 to 1048576");
		c->batch_max = (uint32_t)u;
	} else if (!strcmp(name, "ring_slots")) {
		if (!parse_u64(value, &u, 1u << 24) || u < 16 || (u & (u - 1)))
			return BAD(name, "expected a power of two from 16 to 16777216");
		c->ring_slots = (uint32_t)u;
	} else if (!strcmp(name, "hw_watchdog")) {
		if (!*value || !copy_path(p, c->hw_watchdog, sizeof(c->hw_watchdog), value))
			return BAD(name, "expected a device like /dev/watchdog");
	} else if (!strcmp(name, "hw_watchdog_timeout_s")) {
		if (!parse_u64(value, &u, 3600) || u < 2)
			return BAD(name, "expected 2 to 3600");
		c->hw_watchdog_timeout_s = (uint32_t)u;
	} else if (!strcmp(name, "stat_socket")) {
		if (!*value || (value[0] == '@' ? !copy_str(c->stat_socket, sizeof(c->stat_socket), value)
		                                : !copy_path(p, c->stat_socket, sizeof(c->stat_socket), value)))
			return BAD(name, "expected a socket path of at most 107 characters");
	} else if (!strcmp(name, "health_interval_s")) {
		if (!parse_u64(value, &u, 86400) || !u)
			return BAD(name, "expected 1 to 86400");
		c->health_interval_s = (uint32_t)u;
	} else if (!strcmp(name, "meta_interval_s")) {
		if (!parse_u64(value, &u, 86400) || !u)
			return BAD(name, "expected 1 to 86400");
		c->meta_interval_s = (uint32_t)u;
	} else {
		return perr(p, "unknown key '%s' in [board]", name);
	}
	return 1;
}

static int set_storage(struct parser *p, const char *name, const char *value)
{
	struct board_storage *s = &p->cfg->storage;
	uint64_t u;

	if (!strcmp(name, "dir")) {
		if (!*value || !copy_path(p, s->dir, sizeof(s->dir), value))
			return BAD(name, "bad directory");
	} else if (!strcmp(name, "segment_size")) {
		if (!parse_size(value, &s->segment_bytes) || s->segment_bytes < 65536)
			return BAD(name, "expected a size of at least 64K, like 16M");
		s->segment_line = p->line;
	} else if (!strcmp(name, "sync_window_ms")) {
		if (!parse_u64(value, &u, 60000))
			return BAD(name, "expected 0 (sync every batch) to 60000");
		s->sync_window_ms = (uint32_t)u;
	} else if (!strcmp(name, "retention_size")) {
		if (!parse_size(value, &s->retention_bytes))
			return BAD(name, "expected a size like 2G (0 = unlimited)");
		s->retention_line = p->line;
	} else if (!strcmp(name, "retention_age")) {
		if (!parse_duration(value, &s->retention_age_s))
			return BAD(name, "expected a duration like 30d, 12h (0 = unlimited)");
	} else {
		return perr(p, "unknown key '%s' in [storage]", name);
	}
	return 1;
}

/* broker = mqtt://host:port | mqtts://host:port | host:port | host */
static int set_broker(struct parser *p, struct board_uplink *u, const char *value)
{
	const char *h = value, *colon;
	int port;

	if (!strncmp(h, "mqtts://", 8)) {
		u->tls = true;
		h += 8;
	} else if (!strncmp(h, "mqtt://", 7)) {
		h += 7;
	} else if (strstr(h, "://")) {
		return BAD("broker", "scheme must be mqtt:// or mqtts://");
	}
	u->port = u->tls ? 8883 : 1883;
	colon = strrchr(h, ':');
	if (colon) {
		if (!parse_int(colon + 1, &port, 1, 65535))
			return BAD("broker", "bad port");
		u->port = (uint16_t)port;
	}
	if (colon == h || !*h || (size_t)(colon ? colon - h : (long)strlen(h)) >= sizeof(u->host))
		return BAD("broker", "bad host");
	snprintf(u->host, sizeof(u->host), "%.*s", (int)(colon ? colon - h : (long)strlen(h)), h);
	u->enabled = true;
	return 1;
}

static int set_uplink(struct parser *p, const char *name, const char *value)
{
	struct board_uplink *u = &p->cfg->uplink;
	uint64_t x;

	if (!strcmp(name, "broker"))
		return set_broker(p, u, value);
	if (!strcmp(name, "ca_file") || !strcmp(name, "cert_file") || !strcmp(name, "key_file")) {
		char *dst = name[0] == 'c' ? (name[1] == 'a' ? u->ca_file : u->cert_file) : u->key_file;
		if (!*value || !copy_path(p, dst, BUS_PATH_MAX, value))
			return BAD(name, "bad file name");
		u->tls = true;
	} else if (!strcmp(name, "tls_insecure")) {
		if (!parse_bool(value, &u->tls_insecure))
			return BAD(name, "expected true or false");
	} else if (!strcmp(name, "username")) {
		if (!copy_str(u->username, sizeof(u->username), value))
			return BAD(name, "too long");
	} else if (!strcmp(name, "password")) {
		if (!copy_str(u->password, sizeof(u->password), value))
			return BAD(name, "too long");
	} else if (!strcmp(name, "inflight")) {
		if (!parse_u64(value, &x, 65535) || x < 1)
			return BAD(name, "expected 1 to 65535");
		u->inflight = (uint32_t)x;
	} else if (!strcmp(name, "keepalive_s")) {
		if (!parse_u64(value, &x, 3600) || x < 5)
			return BAD(name, "expected 5 to 3600");
		u->keepalive_s = (uint32_t)x;
	} else if (!strcmp(name, "live_ahead")) {
		if (!parse_bool(value, &u->live_ahead))
			return BAD(name, "expected true or false");
	} else if (!strcmp(name, "rate_limit")) {
		if (!parse_size(value, &u->rate_bytes_s))
			return BAD(name, "expected bytes per second like 64K (0 = unlimited)");
	} else {
		return perr(p, "unknown key '%s' in [uplink]", name);
	}
	return 1;
}

/* filter = ID/MASK (hex or decimal); an id above 0x7ff or written with 8
   hex digits is extended, as in candump's filter syntax. */
static int add_filter(struct parser *p, struct bus_can_cfg *c, const char *value)
{
	char buf[64], *slash;
	uint64_t id, mask;
	bool ext;

	if (c->nfilters >= BUS_CAN_FILTERS_MAX)
		return perr(p, "filter: at most %d filters per bus", BUS_CAN_FILTERS_MAX);
	if (!copy_str(buf, sizeof(buf), value) || !(slash = strchr(buf, '/')))
		return BAD("filter", "expected ID/MASK like 0x100/0x7ff");
	*slash = 0;
	if (!parse_u64(buf, &id, 0x1fffffff) || !parse_u64(slash + 1, &mask, 0x1fffffff))
		return BAD("filter", "expected ID/MASK with 11 or 29 bit values");
	ext = id > 0x7ff || mask > 0x7ff || strlen(buf) > 5;
	c->filters[c->nfilters].id = (uint32_t)id | (ext ? 0x80000000u : 0);
	c->filters[c->nfilters].mask = (uint32_t)mask | (ext ? 0x80000000u : 0);
	c->nfilters++;
	return 1;
}

static int set_can(struct parser *p, struct bus_cfg *b, const char *name, const char *value)
{
	struct bus_can_cfg *c = &b->can;
	uint64_t u;
	int i;

	if (!strcmp(name, "driver")) {
		if (!strcmp(value, "socketcan"))
			c->driver = BUS_CAN_SOCKETCAN;
		else if (!strcmp(value, "slcan"))
			c->driver = BUS_CAN_SLCAN;
		else if (!strcmp(value, "trace"))
			c->driver = BUS_CAN_TRACE;
		else
			return BAD(name, "expected socketcan, slcan or trace");
	} else if (!strcmp(name, "interface")) {
		if (!*value || !copy_str(c->ifname, 16, value))
			return BAD(name, "expected an interface name of at most 15 characters");
	} else if (!strcmp(name, "device") || !strcmp(name, "file")) {
		if (!*value || !copy_path(p, c->device, sizeof(c->device), value))
			return BAD(name, "bad path");
	} else if (!strcmp(name, "dbc")) {
		if (!*value || !copy_path(p, c->dbc, sizeof(c->dbc), value))
			return BAD(name, "bad path");
		p->cfg->dbc_line[b->index] = p->line;
	} else if (!strcmp(name, "bitrate") || !strcmp(name, "dbitrate") || !strcmp(name, "serial_baud")) {
		if (!parse_u64(value, &u, 20000000) || u < 1000)
			return BAD(name, "expected a rate from 1000 to 20000000");
		*(name[0] == 'b' ? &c->bitrate : name[0] == 'd' ? &c->dbitrate : &c->serial_baud) = (uint32_t)u;
	} else if (!strcmp(name, "fd") || !strcmp(name, "listen_only") || !strcmp(name, "allow_normal_mode") ||
	           !strcmp(name, "loop")) {
		bool *dst = name[0] == 'f' ? &c->fd : name[0] == 'l' && name[1] == 'i' ? &c->listen_only
		          : name[0] == 'a' ? &c->allow_normal_mode : &c->trace_loop;
		if (!parse_bool(value, dst))
			return BAD(name, "expected true or false");
	} else if (!strcmp(name, "speed")) {
		if (!parse_double(value, &c->trace_speed) || c->trace_speed < 0 || c->trace_speed > 1000)
			return BAD(name, "expected 0 (as fast as possible) or a factor up to 1000");
	} else if (!strcmp(name, "filter")) {
		return add_filter(p, c, value);
	} else if (!strcmp(name, "cpu")) {
		if (!parse_int(value, &i, -1, 1023))
			return BAD(name, "expected -1 (any) or a CPU number");
		p->cfg->bus_cpu[b->index] = i;
	} else {
		return perr(p, "unknown key '%s' in [can %s]", name, b->name);
	}
	return 1;
}

static int set_modbus_serial(struct parser *p, struct bus_mb_cfg *m, const char *name, const char *value)
{
	uint64_t u;

	if (!strcmp(name, "baud")) {
		if (!parse_u64(value, &u, 4000000) || u < 300)
			return BAD(name, "expected 300 to 4000000");
		m->baud = (uint32_t)u;
	} else if (!strcmp(name, "parity")) {
		if (strlen(value) != 1 || !strchr("NEO", toupper((unsigned char)value[0])))
			return BAD(name, "expected N, E or O");
		m->parity = (char)toupper((unsigned char)value[0]);
	} else if (!strcmp(name, "data_bits")) {
		if (!parse_u64(value, &u, 8) || u < 5)
			return BAD(name, "expected 5 to 8");
		m->data_bits = (uint8_t)u;
	} else if (!strcmp(name, "stop_bits")) {
		if (!parse_u64(value, &u, 2) || u < 1)
			return BAD(name, "expected 1 or 2");
		m->stop_bits = (uint8_t)u;
	} else if (!strcmp(name, "rs485")) {
		if (!parse_bool(value, &m->rs485))
			return BAD(name, "expected true or false");
	} else {
		return -1; /* not a serial key */
	}
	return 1;
}

static int set_modbus(struct parser *p, struct bus_cfg *b, const char *name, const char *value)
{
	struct bus_mb_cfg *m = &b->mb;
	uint64_t u;
	int r, i;

	r = set_modbus_serial(p, m, name, value);
	if (r >= 0)
		return r;
	if (!strcmp(name, "transport")) {
		if (strcmp(value, "tcp") && strcmp(value, "rtu"))
			return BAD(name, "expected tcp or rtu");
		m->rtu = !strcmp(value, "rtu");
	} else if (!strcmp(name, "host")) {
		if (!*value || !copy_str(m->host, sizeof(m->host), value))
			return BAD(name, "bad host");
	} else if (!strcmp(name, "port")) {
		if (!parse_u64(value, &u, 65535) || !u)
			return BAD(name, "expected 1 to 65535");
		m->port = (uint16_t)u;
	} else if (!strcmp(name, "device")) {
		if (!*value || !copy_path(p, m->device, sizeof(m->device), value))
			return BAD(name, "bad path");
	} else if (!strcmp(name, "response_timeout_ms") || !strcmp(name, "byte_timeout_ms")) {
		if (!parse_u64(value, &u, 60000) || !u)
			return BAD(name, "expected 1 to 60000");
		*(name[0] == 'r' ? &m->response_timeout_ms : &m->byte_timeout_ms) = (uint32_t)u;
	} else if (!strcmp(name, "max_gap")) {
		if (!parse_u64(value, &u, 124))
			return BAD(name, "expected 0 to 124 registers");
		m->max_gap = (uint16_t)u;
	} else if (!strcmp(name, "period_ms")) {
		if (!parse_u64(value, &u, 3600000) || !u)
			return BAD(name, "expected 1 to 3600000");
		p->channel_default_period[b->index] = u;
	} else if (!strcmp(name, "cpu")) {
		if (!parse_int(value, &i, -1, 1023))
			return BAD(name, "expected -1 (any) or a CPU number");
		p->cfg->bus_cpu[b->index] = i;
	} else {
		return perr(p, "unknown key '%s' in [modbus %s]", name, b->name);
	}
	return 1;
}

static const char *const mb_tables[] = { [0] = NULL, [BUS_MB_COIL] = "coil", [BUS_MB_DISCRETE] = "discrete",
                                         [BUS_MB_HOLDING] = "holding", [BUS_MB_INPUT] = "input" };
static const char *const mb_types[] = { "u16", "s16", "u32", "s32", "u64", "f32", "f64", "bit" };
static const char *const mb_orders[] = { "ABCD", "DCBA", "BADC", "CDAB" };

const char *board_mb_table_name(enum bus_mb_table t)
{
	return t >= BUS_MB_COIL && t <= BUS_MB_INPUT ? mb_tables[t] : "?";
}

const char *board_mb_type_name(enum bus_mb_type t)
{
	return (unsigned)t < BUS_MB_TYPE_MAX ? mb_types[t] : "?";
}

const char *board_mb_order_name(enum bus_mb_order o)
{
	return (unsigned)o < BUS_MB_ORDER_MAX ? mb_orders[o] : "?";
}

static int lookup(const char *const *names, size_t n, const char *v)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcasecmp(names[i], v))
			return (int)i;
	return -1;
}

static int set_channel(struct parser *p, struct pending_channel *pc, const char *name, const char *value)
{
	struct bus_mb_channel *c = &pc->ch;
	uint64_t u;
	int i;

	if (!strcmp(name, "bus")) {
		if (!copy_str(pc->bus, sizeof(pc->bus), value))
			return BAD(name, "bad bus name");
	} else if (!strcmp(name, "unit_id")) {
		if (!parse_u64(value, &u, 247))
			return BAD(name, "expected 0 to 247");
		c->unit_id = (uint8_t)u;
		pc->unit_line = p->line;
	} else if (!strcmp(name, "table")) {
		if ((i = lookup(mb_tables, 5, value)) < 0)
			return BAD(name, "expected coil, discrete, holding or input");
		c->table = (enum bus_mb_table)i;
		pc->has_table = true;
	} else if (!strcmp(name, "address")) {
		if (!parse_u64(value, &u, 65535))
			return BAD(name, "expected 0 to 65535 (protocol address, 0-based)");
		c->addr = (uint16_t)u;
		pc->has_address = true;
	} else if (!strcmp(name, "type")) {
		if ((i = lookup(mb_types, BUS_MB_TYPE_MAX, value)) < 0)
			return BAD(name, "expected u16, s16, u32, s32, u64, f32, f64 or bit");
		c->type = (enum bus_mb_type)i;
	} else if (!strcmp(name, "order")) {
		if ((i = lookup(mb_orders, BUS_MB_ORDER_MAX, value)) < 0)
			return BAD(name, "expected ABCD, DCBA, BADC or CDAB");
		c->order = (enum bus_mb_order)i;
	} else if (!strcmp(name, "bit")) {
		if (!parse_u64(value, &u, 15))
			return BAD(name, "expected 0 to 15");
		c->bit = (uint8_t)u;
	} else if (!strcmp(name, "scale") || !strcmp(name, "offset")) {
		if (!parse_double(value, name[0] == 's' ? &c->scale : &c->offset))
			return BAD(name, "expected a number");
	} else if (!strcmp(name, "unit")) {
		if (!copy_str(c->unit, sizeof(c->unit), value))
			return BAD(name, "at most 15 characters");
	} else if (!strcmp(name, "period_ms")) {
		if (!parse_u64(value, &u, 3600000) || !u)
			return BAD(name, "expected 1 to 3600000");
		c->period_ms = (uint32_t)u;
	} else {
		return perr(p, "unknown key '%s' in [channel %s]", name, c->name);
	}
	return 1;
}

/* ---------------------------------------------------------- dispatcher */

static bool valid_name(const char *s)
{
	if (!*s || strlen(s) >= BUS_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("-_.", *s))
			return false;
	return true;
}

static struct bus_cfg *new_bus(struct parser *p, enum bus_kind kind, const char *name)
{
	struct board_cfg *c = p->cfg;
	struct bus_cfg *b;

	if (!valid_name(name)) {
		perr(p, "bad bus name '%s' (letters, digits, '-', '_', '.'; at most %d)", name, BUS_NAME_MAX - 1);
		return NULL;
	}
	if (board_cfg_bus(c, name)) {
		perr(p, "bus '%s' is defined twice", name);
		return NULL;
	}
	if (c->nbuses >= BOARD_BUSES_MAX) {
		perr(p, "at most %d buses", BOARD_BUSES_MAX);
		return NULL;
	}
	b = &c->buses[c->nbuses];
	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->index = (uint16_t)c->nbuses;
	strcpy(b->name, name);
	c->bus_cpu[c->nbuses] = -1;
	p->bus_line[c->nbuses] = p->line;
	if (kind == BUS_KIND_CAN) {
		b->can.listen_only = true; /* read-only towards the train by default */
		b->can.trace_speed = 1.0;
		b->can.serial_baud = 115200;
	} else {
		b->mb.port = 502;
		b->mb.baud = 19200;
		b->mb.parity = 'E';
		b->mb.data_bits = 8;
		b->mb.stop_bits = 1;
		b->mb.response_timeout_ms = 500;
		b->mb.byte_timeout_ms = 50;
		b->mb.max_gap = 8;
		p->channel_default_period[c->nbuses] = 1000;
	}
	c->nbuses++;
	return b;
}

static struct pending_channel *new_channel(struct parser *p, const char *name)
{
	struct pending_channel *pc;

	if (!valid_name(name) || strlen(name) >= sizeof(pc->ch.name)) {
		perr(p, "bad channel name '%s'", name);
		return NULL;
	}
	for (size_t i = 0; i < p->nchans; i++)
		if (!strcmp(p->chans[i].ch.name, name)) {
			perr(p, "channel '%s' is defined twice (first at line %d)", name, p->chans[i].line);
			return NULL;
		}
	if (p->nchans >= CH_MAX) {
		perr(p, "at most %d channels", CH_MAX);
		return NULL;
	}
	pc = &p->chans[p->nchans++];
	memset(pc, 0, sizeof(*pc));
	strcpy(pc->ch.name, name);
	pc->ch.scale = 1.0;
	pc->ch.type = BUS_MB_U16;
	pc->ch.table = BUS_MB_HOLDING;
	pc->line = p->line;
	return pc;
}

/* A new [section] header: create what it declares. */
static int enter_section(struct parser *p, const char *section)
{
	char kind[32], name[96];
	bool *seen = NULL;

	snprintf(p->section, sizeof(p->section), "%s", section);
	p->nkeys = 0;
	if (!strcmp(section, "board"))
		seen = &p->seen_board;
	else if (!strcmp(section, "storage"))
		seen = &p->seen_storage;
	else if (!strcmp(section, "uplink"))
		seen = &p->seen_uplink;
	if (seen) {
		if (*seen)
			return perr(p, "section [%s] appears twice", section);
		*seen = true;
		return 1;
	}
	if (sscanf(section, "%31s %95s", kind, name) != 2)
		return perr(p, "unknown section [%s] (expected board, storage, uplink, can NAME, modbus NAME, channel NAME)", section);
	if (!strcmp(kind, "can"))
		return new_bus(p, BUS_KIND_CAN, name) ? 1 : 0;
	if (!strcmp(kind, "modbus"))
		return new_bus(p, BUS_KIND_MODBUS, name) ? 1 : 0;
	if (!strcmp(kind, "channel"))
		return new_channel(p, name) ? 1 : 0;
	return perr(p, "unknown section [%s]", section);
}

static uint64_t fnv1a(const char *s);

/* A key given twice in one section is almost always a copy-paste slip that
   would silently win over the first: refuse it (filters may repeat). */
static bool duplicate_key(struct parser *p, const char *section, const char *name)
{
	uint64_t h = fnv1a(name);

	if (!strcmp(name, "filter"))
		return false;
	for (size_t i = 0; i < p->nkeys; i++)
		if (p->keys[i].hash == h) {
			perr(p, "'%s' given twice in [%s] (first at line %d)", name, section, p->keys[i].line);
			return true;
		}
	if (p->nkeys == sizeof(p->keys) / sizeof(p->keys[0])) {
		perr(p, "too many keys in [%s]", section);
		return true;
	}
	p->keys[p->nkeys].hash = h;
	p->keys[p->nkeys++].line = p->line;
	return false;
}

static int handle_key(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	char kind[32], sname[96];

	/* inih goes on after a handler error; we report the first one only, and
	   after it the parser state (current bus, channel) is not to be trusted. */
	if (p->err[0])
		return 0;
	/* inih does not report section headers (unless built to), but our
	   line reader saw it: open the section at its own line, so a bus or
	   channel defined twice is caught even when the two are adjacent. */
	if (p->header_pending || strcmp(section, p->section)) {
		int line = p->line, r;
		if (p->header_pending)
			p->line = p->header_line;
		p->header_pending = false;
		r = enter_section(p, section);
		p->line = line;
		if (!r)
			return 0;
	}
	if (!*section)
		return perr(p, "key '%s' outside any section", name);
	if (duplicate_key(p, section, name))
		return 0;
	if (!strcmp(section, "board"))
		return set_board(p, name, value);
	if (!strcmp(section, "storage"))
		return set_storage(p, name, value);
	if (!strcmp(section, "uplink"))
		return set_uplink(p, name, value);
	sscanf(section, "%31s %95s", kind, sname);
	if (!strcmp(kind, "channel"))
		return set_channel(p, &p->chans[p->nchans - 1], name, value);
	if (!strcmp(kind, "can"))
		return set_can(p, board_cfg_bus(p->cfg, sname), name, value);
	return set_modbus(p, board_cfg_bus(p->cfg, sname), name, value);
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
 *   values, which no board key has: "  dbc = x" after "interface = can0"
 *   was read as a second interface).
 */
static char *ini_read_line(char *str, int num, void *stream)
{
	struct parser *p = stream;
	const char *nl;
	size_t n, blank;

	if (!*p->pos || p->err[0])
		return NULL;
	nl = strchr(p->pos, '\n');
	n = nl ? (size_t)(nl - p->pos) + 1 : strlen(p->pos);
	p->line++;
	if (n > (size_t)num - 1) {
		perr(p, "line too long: %zu characters, at most %d", nl ? n - 1 : n, num - 2);
		return NULL; /* ends the parse: board_cfg_parse() sees the error */
	}
	blank = strspn(p->pos, " \t");
	if (blank == n - (nl != NULL))
		blank = 0; /* a blank line stays blank */
	memcpy(str, p->pos + blank, n - blank);
	str[n - blank] = 0;
	p->pos += n;
	if (str[0] == '[') {
		p->header_pending = true;
		p->header_line = p->line;
	}
	return str;
}

/* ------------------------------------------------------------ validate */

static int at_line(struct parser *p, int line, const char *fmt, const char *a, const char *b)
{
	p->line = line;
	return perr(p, fmt, a, b);
}

static unsigned mb_type_regs(enum bus_mb_type t)
{
	static const unsigned regs[] = { 1, 1, 2, 2, 4, 2, 4, 1 };

	return regs[t];
}

static bool validate_channel(struct parser *p, struct pending_channel *pc)
{
	struct board_cfg *c = p->cfg;
	struct bus_cfg *b = board_cfg_bus(c, pc->bus);
	struct bus_mb_channel *ch = &pc->ch;

	if (!pc->bus[0])
		return at_line(p, pc->line, "channel '%s': missing 'bus ='%s", ch->name, "");
	if (!b || b->kind != BUS_KIND_MODBUS)
		return at_line(p, pc->line, "channel '%s': no [modbus %s] section", ch->name, pc->bus);
	if (!pc->has_address)
		return at_line(p, pc->line, "channel '%s': missing 'address ='%s", ch->name, "");
	/* On a serial line 0 is the broadcast address, which no slave ever
	   answers.  Modbus TCP keeps 0: a device on its own IP address
	   ignores the unit id or takes 0 as "this device", and gateways that
	   route by unit id answer 0 themselves or map it to a slave; one that
	   forwarded it as a broadcast would only give timeouts, never a value
	   from the wrong device. */
	if (b->mb.rtu && !ch->unit_id && pc->unit_line)
		return at_line(p, pc->unit_line, "channel '%s': unit_id = 0 is the Modbus broadcast address, "
		               "which no slave answers on a serial line%s (use 1 to 247)", ch->name, "");
	if (b->mb.rtu && !ch->unit_id)
		return at_line(p, pc->line, "channel '%s': missing 'unit_id =' (1 to 247 on a serial line)%s",
		               ch->name, "");
	if ((ch->table == BUS_MB_COIL || ch->table == BUS_MB_DISCRETE) && ch->type != BUS_MB_BIT) {
		if (pc->has_table && ch->type != BUS_MB_U16)
			return at_line(p, pc->line, "channel '%s': coils and discrete inputs are bits: use 'type = bit'%s", ch->name, "");
		ch->type = BUS_MB_BIT;
	}
	if ((unsigned)ch->addr + mb_type_regs(ch->type) > 65536)
		return at_line(p, pc->line, "channel '%s': address + size runs past register 65535%s", ch->name, "");
	if (!ch->period_ms)
		ch->period_ms = (uint32_t)p->channel_default_period[b->index];
	return true;
}

static bool validate_bus(struct parser *p, struct bus_cfg *b)
{
	int line = p->bus_line[b->index];

	if (b->kind == BUS_KIND_CAN) {
		struct bus_can_cfg *c = &b->can;
		if (c->driver == BUS_CAN_SOCKETCAN && !c->ifname[0])
			return at_line(p, line, "[can %s]: driver socketcan needs 'interface ='%s", b->name, "");
		if (c->driver != BUS_CAN_SOCKETCAN && !c->device[0])
			return at_line(p, line, "[can %s]: driver %s needs 'device =' (or 'file =')", b->name,
			               c->driver == BUS_CAN_SLCAN ? "slcan" : "trace");
		if (!c->listen_only && !c->allow_normal_mode && c->driver != BUS_CAN_TRACE)
			return at_line(p, line, "[can %s]: listen_only = false also needs allow_normal_mode = true "
			               "(railmon is read-only towards the train)%s", b->name, "");
		return true;
	}
	if (b->mb.rtu && !b->mb.device[0])
		return at_line(p, line, "[modbus %s]: transport rtu needs 'device ='%s", b->name, "");
	if (!b->mb.rtu && !b->mb.host[0])
		return at_line(p, line, "[modbus %s]: transport tcp needs 'host ='%s", b->name, "");
	if (!b->mb.nchannels)
		return at_line(p, line, "[modbus %s]: no [channel] uses this bus%s", b->name, "");
	return true;
}

/* Copy the channels into one array grouped by bus, number them
   bus << 16 | index (stable for a given board file). */
static int assign_channels(struct parser *p, struct board_cfg_private *priv)
{
	struct board_cfg *c = p->cfg;
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
static bool validate_storage(struct parser *p)
{
	const struct board_storage *s = &p->cfg->storage;
	char ret[32], seg[32], min[32];

	if (!s->retention_bytes || s->retention_bytes / 2 >= s->segment_bytes)
		return true;
	p->line = s->retention_line;
	board_size_text(s->retention_bytes, ret, sizeof(ret));
	board_size_text(s->segment_bytes, seg, sizeof(seg));
	board_size_text(2 * s->segment_bytes, min, sizeof(min));
	perr(p, "retention_size %s is less than two segments of %s (segment_size%s): the budget counts the "
	     "segment being written and a recycled spare; use at least %s, or a smaller segment_size",
	     ret, seg, s->segment_line ? "" : ", the default", min);
	return false;
}

static int validate(struct parser *p, struct board_cfg_private *priv)
{
	struct board_cfg *c = p->cfg;
	int r;

	p->line = 1;
	if (!c->vehicle[0])
		return perr(p, "missing [board] vehicle = ID"), -EINVAL;
	for (size_t i = 0; i < p->nchans; i++)
		if (!validate_channel(p, &p->chans[i]))
			return -EINVAL;
	r = assign_channels(p, priv);
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nbuses; i++)
		if (!validate_bus(p, &c->buses[i]))
			return -EINVAL;
	if (!validate_storage(p))
		return -EINVAL;
	if (c->uplink.enabled && c->uplink.tls_insecure && !c->uplink.tls)
		return perr(p, "[uplink] tls_insecure only makes sense with mqtts:// or TLS files"), -EINVAL;
	if (c->uplink.tls && !c->uplink.ca_file[0])
		return perr(p, "[uplink]: TLS needs ca_file (the CA that signed the broker's certificate)"), -EINVAL;
	if (!c->uplink.cert_file[0] != !c->uplink.key_file[0])
		return perr(p, "[uplink]: cert_file and key_file go together (the device's identity)"), -EINVAL;
	if ((c->uplink.tls || c->uplink.username[0]) && !c->uplink.enabled)
		return perr(p, "[uplink]: no broker = mqtt[s]://host[:port]"), -EINVAL;
	return 0;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static void set_defaults(struct board_cfg *c)
{
	c->collector_cpu = -1;
	c->batch_ms = 1000;
	c->batch_max = 4096;
	c->ring_slots = 8192;
	c->meta_interval_s = 60;
	c->health_interval_s = 10;
	c->storage.sync_window_ms = 200;
	c->storage.segment_bytes = 16ull << 20;
	c->uplink.inflight = 20;
	c->uplink.keepalive_s = 20;
}

int board_cfg_parse(const char *name, const char *text, struct board_cfg **ret_cfg, char *err, size_t errlen)
{
	struct board_cfg_private *priv;
	struct parser p = { .name = name, .text = text, .pos = text };
	const char *slash;
	int r;

	if (!name || !text || !ret_cfg)
		return -EINVAL;
	priv = calloc(1, sizeof(*priv));
	p.chans = calloc(CH_MAX, sizeof(*p.chans));
	if (!priv || !p.chans) {
		free(priv);
		free(p.chans);
		return -ENOMEM;
	}
	p.cfg = &priv->pub;
	set_defaults(p.cfg);
	snprintf(p.cfg->path, sizeof(p.cfg->path), "%s", name);
	slash = strrchr(name, '/');
	if (slash)
		snprintf(p.base_dir, sizeof(p.base_dir), "%.*s", (int)(slash - name), name);
	r = ini_parse_stream(ini_read_line, &p, handle_key, &p);
	if (r > 0 && !p.err[0]) {
		p.line = r;
		perr(&p, "syntax error (expected [section], key = value, or ; comment)");
	}
	/* the line reader may have stopped the parse with an error (r == 0) */
	r = r || p.err[0] ? -EINVAL : validate(&p, priv);
	if (r == 0 && p.err[0])
		r = -EINVAL;
	if (r < 0) {
		if (err && errlen)
			snprintf(err, errlen, "%s", p.err[0] ? p.err : strerror(-r));
		free(p.chans);
		board_cfg_free(&priv->pub);
		return r;
	}
	priv->pub.hash = fnv1a(text);
	free(p.chans);
	*ret_cfg = &priv->pub;
	return 0;
}

/* What a path is when it is not a regular file, for messages. */
static const char *not_regular(mode_t m)
{
	return S_ISDIR(m) ? "is a directory" : S_ISFIFO(m) ? "is a FIFO, not a regular file"
	     : S_ISCHR(m) ? "is a character device, not a regular file" : "is not a regular file";
}

/*
 * The whole board file, NUL-terminated.  Opened with O_NONBLOCK and checked
 * to be a regular file first: a FIFO would block `run` until a writer came,
 * and a directory read as an empty file ("missing [board] vehicle").
 */
static int read_board_file(const char *path, char **ret_text, size_t *ret_len, char *err, size_t errlen)
{
	char *text = NULL;
	size_t cap = 0, n = 0;
	struct stat st;
	ssize_t k = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		snprintf(err, errlen, "%s: %s", path, not_regular(st.st_mode));
	}
	while (r == 0) {
		if (n + 4096 + 1 > cap) {
			size_t ncap = cap * 2 + 8192;
			char *t = ncap <= (16u << 20) ? realloc(text, ncap) : NULL;
			if (!t) {
				r = ncap <= (16u << 20) ? -ENOMEM : -EFBIG;
				snprintf(err, errlen, "%s: %s", path, r == -EFBIG ? "too large for a board file" : strerror(-r));
				break;
			}
			text = t;
			cap = ncap;
		}
		k = read(fd, text + n, 4096);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			r = -errno;
			snprintf(err, errlen, "%s: %s", path, strerror(-r));
		} else if (k == 0) {
			break;
		}
		n += k > 0 ? (size_t)k : 0;
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		free(text);
		return r;
	}
	text[n] = 0;
	*ret_text = text;
	*ret_len = n;
	return 0;
}

int board_cfg_load(const char *path, struct board_cfg **ret_cfg, char *err, size_t errlen)
{
	char *text = NULL, dummy[1];
	size_t n = 0;
	int r;

	if (!path || !ret_cfg)
		return -EINVAL;
	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	r = read_board_file(path, &text, &n, err, errlen);
	if (r < 0)
		return r;
	if (strlen(text) != n) {
		free(text);
		snprintf(err, errlen, "%s: contains a NUL byte (not a text file)", path);
		return -EINVAL;
	}
	r = board_cfg_parse(path, text, ret_cfg, err, errlen);
	free(text);
	return r;
}

struct board_cfg *board_cfg_free(struct board_cfg *cfg)
{
	struct board_cfg_private *priv = (struct board_cfg_private *)cfg;

	if (!cfg)
		return NULL;
	free(priv->channels);
	free(priv);
	return NULL;
}

char *board_size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && bytes >= 1024ull << (10 * (u + 1)))
		u++;
	if (u < 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else if (bytes % (1ull << (10 * (u + 1))) == 0)
		snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> (10 * (u + 1))), units[u]);
	else
		snprintf(buf, len, "%.1f%c", (double)bytes / (double)(1ull << (10 * (u + 1))), units[u]);
	return buf;
}

struct bus_cfg *board_cfg_bus(struct board_cfg *cfg, const char *name)
{
	if (!cfg || !name)
		return NULL;
	for (size_t i = 0; i < cfg->nbuses; i++)
		if (!strcmp(cfg->buses[i].name, name))
			return &cfg->buses[i];
	return NULL;
}
