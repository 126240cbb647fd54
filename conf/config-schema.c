/* SPDX-License-Identifier: MIT */
/*
 * config-schema.c - every board-file key, its type, range, default and
 * help, one table per kind of section.  One job over ~600 lines, and data
 * more than code (most lines are one key each), so one file: the one
 * place where a key is looked up or added.  basic/ini-schema.c parses with
 * them, and `railmon check --keys` prints them (docs/board-keys.md).
 *
 * The error words of a key (.expect) are part of the interface: scripts
 * and tests/conf/test-board.c match them, so a key keeps its words when it
 * moves between tables or types.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "basic/name.h"
#include "basic/parse.h"
#include "config-schema.h"

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char cpu_expect[] = "expected -1 (any) or a CPU number";
static const char cpu_help[] = "CPU the bus's thread is pinned to; -1 = any.";

/* ------------------------------------------------------------ own code */

static int vehicle_chars(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	/* The one rule (basic/name.h): the ground refuses any other name. */
	if (!basic_vehicle_name_ok(value))
		return basic_ini_bad(ini, key, value, "may only contain letters, digits, '-', '_' and '.', "
		                     "1-59 of them, and not be '.' or '..' (it is part of MQTT topics, a "
		                     "directory name on the ground and kept in each log segment's header)");
	return 0;
}

/* A path, or "@name" in the abstract namespace (not a file: kept as is). */
static int set_stat_socket(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	char *dst = (char *)base + key->offset;

	if (!*value)
		return -EINVAL;
	if (value[0] != '@')
		return basic_ini_path(ini, value, dst, key->size);
	if (strlen(value) >= key->size)
		return -EINVAL;
	memcpy(dst, value, strlen(value) + 1);
	return 0;
}

/* strto*() skipped the blanks after the ':' of a broker and the '/' of a
   filter: they still may be there. */
static const char *skip_blanks(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return s;
}

/* broker = mqtt://host:port | mqtts://host:port | host:port | host */
static int set_broker(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct conf_uplink *u = base;
	uint16_t port;
	bool tls;

	switch (basic_parse_mqtt_url(value, u->host, sizeof(u->host), &port, &tls)) {
	case -EPROTONOSUPPORT: return basic_ini_bad(ini, key, value, "scheme must be mqtt:// or mqtts://");
	case -ERANGE: return basic_ini_bad(ini, key, value, "bad port");
	case -EINVAL: return basic_ini_bad(ini, key, value, "bad host");
	default: break;
	}
	u->tls = u->tls || tls; /* ca_file and friends turn it on too */
	u->port = port ? port : u->tls ? 8883 : 1883;
	u->enabled = true;
	return 0;
}

/* A TLS file turns TLS on (also for a broker = mqtt:// given after it). */
static int tls_on(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	((struct conf_uplink *)base)->tls = true;
	return 0;
}

/* filter = ID/MASK (hex or decimal); an id above 0x7ff or written with 8
   hex digits is extended, as in candump's filter syntax. */
static int add_filter(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct bus_can_cfg *c = &((struct conf_pending_bus *)base)->bus.can;
	char buf[64], *slash;
	uint64_t id, mask;
	bool ext;

	if (c->nfilters >= BUS_CAN_FILTERS_MAX)
		return basic_ini_fail(ini, "filter: at most %d filters per bus", BUS_CAN_FILTERS_MAX);
	if (strlen(value) >= sizeof(buf) || !strchr(value, '/'))
		return basic_ini_bad(ini, key, value, "expected ID/MASK like 0x100/0x7ff");
	memcpy(buf, value, strlen(value) + 1);
	slash = strchr(buf, '/');
	*slash = 0;
	if (basic_parse_u64(buf, 0, 0x1fffffff, &id) < 0 ||
	    basic_parse_u64(skip_blanks(slash + 1), 0, 0x1fffffff, &mask) < 0)
		return basic_ini_bad(ini, key, value, "expected ID/MASK with 11 or 29 bit values");
	ext = id > 0x7ff || mask > 0x7ff || strlen(buf) > 5;
	c->filters[c->nfilters].id = (uint32_t)id | (ext ? 0x80000000u : 0);
	c->filters[c->nfilters].mask = (uint32_t)mask | (ext ? 0x80000000u : 0);
	c->nfilters++;
	return 0;
}

/* An IPv4 address in dotted form, host order into *ret. */
static int ipv4(const char *value, uint32_t *ret)
{
	struct in_addr a;

	if (inet_pton(AF_INET, value, &a) != 1)
		return -EINVAL;
	*ret = ntohl(a.s_addr);
	return 0;
}

/* bind = ADDRESS: the local address TRDP telegrams are received on */
static int set_trdp_bind(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct bus_trdp_cfg *c = &((struct conf_pending_bus *)base)->bus.trdp;

	if (ipv4(value, &c->bind_ip) < 0 || (c->bind_ip >> 28) == 0xe)
		return basic_ini_bad(ini, key, value, "expected a unicast IPv4 address like 192.0.2.2");
	return 0;
}

/* group = ADDRESS: a multicast group joined (224.0.0.0/4) */
static int add_trdp_group(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct bus_trdp_cfg *c = &((struct conf_pending_bus *)base)->bus.trdp;
	uint32_t g;

	if (c->ngroups >= BUS_TRDP_GROUPS_MAX)
		return basic_ini_fail(ini, "group: at most %d groups per bus", BUS_TRDP_GROUPS_MAX);
	if (ipv4(value, &g) < 0 || (g >> 28) != 0xe)
		return basic_ini_bad(ini, key, value, "expected an IPv4 multicast group (224.0.0.0 to 239.255.255.255) "
		                     "like 239.193.0.1");
	for (unsigned i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g)
			return basic_ini_bad(ini, key, value, "given twice");
	c->groups[c->ngroups++] = g;
	return 0;
}

/* ------------------------------------------------------------- uplink = */

static const char policy_syntax[] = "all | change | deadband X | every DURATION | none";
static const char policy_words[] = "expected all, none, or change, deadband X, every DURATION combined with ',' "
                                   "(like 'deadband 0.5, every 10s')";

/* every DURATION: "10s", "5m", "1h" (basic_parse_duration) or "500ms". */
static int policy_every(const char *v, uint64_t *ret_ms)
{
	size_t n = strlen(v);
	uint64_t x;

	if (n > 2 && !strcmp(v + n - 2, "ms")) {
		char num[32];

		if (n - 2 >= sizeof(num))
			return -EINVAL;
		memcpy(num, v, n - 2);
		num[n - 2] = 0;
		if (basic_parse_u64(num, 1, UINT32_MAX, &x) < 0)
			return -EINVAL;
		*ret_ms = x;
		return 0;
	}
	if (basic_parse_duration(v, &x) < 0 || !x || x > 365 * 86400)
		return -EINVAL;
	*ret_ms = x * 1000;
	return 0;
}

/* One part of a policy ("change", "deadband 0.5", "every 10s"). */
static int policy_part(char *part, struct conf_uplink_policy *p)
{
	char word[16], arg[48], extra[2];
	int n = sscanf(part, "%15s %47s %1s", word, arg, extra);

	if (n == 1 && !strcmp(word, "change") && !(p->flags & CONF_UPLINK_CHANGE)) {
		p->flags |= CONF_UPLINK_CHANGE;
		return 0;
	}
	if (n == 2 && !strcmp(word, "deadband") && !(p->flags & CONF_UPLINK_DEADBAND)) {
		if (basic_parse_double(arg, &p->deadband) < 0 || !(p->deadband > 0) || p->deadband > 1e300)
			return -EINVAL;
		p->flags |= CONF_UPLINK_DEADBAND;
		return 0;
	}
	if (n == 2 && !strcmp(word, "every") && !(p->flags & CONF_UPLINK_EVERY)) {
		if (policy_every(arg, &p->every_ms) < 0)
			return -EINVAL;
		p->flags |= CONF_UPLINK_EVERY;
		return 0;
	}
	return -EINVAL;
}

/* uplink = all | none | change, deadband X, every DURATION (any of the three) */
static int set_uplink(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct conf_uplink_policy p = { 0 };
	char buf[160];

	if (!strcmp(value, "all") || !strcmp(value, "none")) {
		p.flags = value[0] == 'n' ? CONF_UPLINK_NONE : CONF_UPLINK_ALL;
		memcpy((char *)base + key->offset, &p, sizeof(p));
		return 0;
	}
	if (strlen(value) >= sizeof(buf))
		return basic_ini_bad(ini, key, value, policy_words);
	memcpy(buf, value, strlen(value) + 1);
	/* strtok_r would take "change," or "change,,every 1s": an empty part
	   is a typo, not nothing */
	for (char *part = buf, *comma; part; part = comma ? comma + 1 : NULL) {
		comma = strchr(part, ',');
		if (comma)
			*comma = 0;
		if (policy_part(part, &p) < 0)
			return basic_ini_bad(ini, key, value, policy_words);
	}
	if (!p.flags)
		return basic_ini_bad(ini, key, value, policy_words);
	memcpy((char *)base + key->offset, &p, sizeof(p));
	return 0;
}

const char *conf_uplink_policy_text(const struct conf_uplink_policy *p, char *buf, size_t len)
{
	size_t k = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	if (!p->flags || p->flags & CONF_UPLINK_NONE) {
		snprintf(buf, len, "%s", p->flags ? "none" : "all");
		return buf;
	}
	if (p->flags & CONF_UPLINK_CHANGE)
		k += (size_t)snprintf(buf + k, len - k, "change");
	if (k < len && p->flags & CONF_UPLINK_DEADBAND) {
		/* The shortest text that reads back as the deadband (0.05, not
		   %.17g's 0.050000000000000003): what the board file said. */
		char num[32];

		for (int prec = 15; prec <= 17; prec++) {
			snprintf(num, sizeof(num), "%.*g", prec, p->deadband);
			if (strtod(num, NULL) == p->deadband)
				break;
		}
		k += (size_t)snprintf(buf + k, len - k, "%sdeadband %s", k ? ", " : "", num);
	}
	if (k < len && p->flags & CONF_UPLINK_EVERY) {
		if (p->every_ms % 1000)
			snprintf(buf + k, len - k, "%severy %" PRIu64 "ms", k ? ", " : "", p->every_ms);
		else
			snprintf(buf + k, len - k, "%severy %" PRIu64 "s", k ? ", " : "", p->every_ms / 1000);
	}
	return buf;
}

/* uplink_frames = all | none | ids ID|LO-HI ... (a CAN bus's raw frames) */
static int set_uplink_frames(struct basic_ini *ini, const struct basic_ini_key *key, void *base,
                             const char *value)
{
	static const char words[] = "expected all, none, or ids followed by identifiers and ranges "
	                            "(like 'ids 0x100 0x200-0x2FF')";
	struct conf_uplink_frames *f = &((struct conf_pending_bus *)base)->frames;
	char buf[512], *save = NULL, *tok;

	memset(f, 0, sizeof(*f));
	if (!strcmp(value, "all"))
		return 0;
	if (!strcmp(value, "none")) {
		f->none = true;
		return 0;
	}
	if (strlen(value) >= sizeof(buf))
		return basic_ini_bad(ini, key, value, "is too long");
	memcpy(buf, value, strlen(value) + 1);
	tok = strtok_r(buf, " \t", &save);
	if (!tok || strcmp(tok, "ids"))
		return basic_ini_bad(ini, key, value, words);
	while ((tok = strtok_r(NULL, " \t", &save))) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;

		if (dash)
			*dash = 0;
		if (basic_parse_u64(tok, 0, 0x1fffffff, &lo) < 0 ||
		    basic_parse_u64(dash ? dash + 1 : tok, lo, 0x1fffffff, &hi) < 0)
			return basic_ini_bad(ini, key, value, "expected identifiers like 0x100 or ranges like "
			                     "0x200-0x2FF (low first, 29 bits at most)");
		if (f->nranges >= CONF_FRAME_RANGES_MAX)
			return basic_ini_fail(ini, "uplink_frames: at most %d identifiers and ranges",
			                      CONF_FRAME_RANGES_MAX);
		f->ranges[f->nranges].lo = (uint32_t)lo;
		f->ranges[f->nranges].hi = (uint32_t)hi;
		f->nranges++;
	}
	if (!f->nranges)
		return basic_ini_bad(ini, key, value, words);
	return 0;
}

/* -------------------------------------------------------------- tables */

#define B(member) BASIC_INI_FIELD(struct conf_board, member)

static const struct basic_ini_key board_keys[] = {
	{ "vehicle", BASIC_INI_STRING, BASIC_INI_NONEMPTY | BASIC_INI_REQUIRED, B(vehicle), .max = BASIC_VEHICLE_NAME_MAX,
	  .hook = vehicle_chars, .expect = "must be 1-59 characters",
	  .help = "The vehicle's id: letters, digits, '-', '_' and '.'. It names the MQTT topics "
	          "(railmon/VEHICLE/...) and every Batch." },
	{ "rt_priority", BASIC_INI_INT, 0, B(rt_priority), .min = 0, .max = 99, .def = "0",
	  .expect = "expected 0 (no realtime) to 99",
	  .help = "SCHED_FIFO priority of the bus threads (needs CAP_SYS_NICE); 0 = no realtime." },
	{ "cpu_latency_us", BASIC_INI_INT, 0, B(cpu_latency_us), .min = -1, .max = 1000000, .def = "0",
	  .expect = "expected -1 (leave idle states alone) or 0 to 1000000 microseconds",
	  .help = "With rt_priority > 0, `run` keeps every CPU out of idle states slower to leave than this "
	          "(PM QoS, /dev/cpu_dma_latency, as cyclictest does): a deep idle state delays the poll "
	          "threads' wakeups on a quiet board. 0 = CPUs poll when idle (lowest latency, more power); "
	          "-1 = no request." },
	{ "rx_coalesce_us", BASIC_INI_UINT, 0, B(rx_coalesce_us), .min = 0, .max = CONF_RX_COALESCE_US_MAX,
	  .def = "1000", .expect = "expected 0 (read at once) to 100000 microseconds",
	  .help = "After a wakeup that did not fill its batch, a live CAN bus's RX thread (socketcan, slcan; "
	          "also a TRDP bus's sockets) lets frames gather this long before it reads again: one wakeup "
	          "per burst instead of per frame, for up to this much added latency per frame. 0 = read at "
	          "once after every wakeup (lowest latency, a wakeup per frame: more CPU on a busy bus). "
	          "Not Modbus (polled), TRDP receive = capture (the kernel's blocks) or traces." },
	{ "collector_cpu", BASIC_INI_INT, 0, B(collector_cpu), .min = -1, .max = 1023, .def = "-1",
	  .expect = cpu_expect, .help = "CPU the collector thread is pinned to; -1 = any." },
	{ "batch_ms", BASIC_INI_UINT, 0, B(batch_ms), .min = 1, .max = 60000, .def = "1000",
	  .help = "A Batch is closed at least this often (milliseconds)." },
	{ "batch_max", BASIC_INI_UINT, 0, B(batch_max), .min = 16, .max = 1u << 20, .def = "4096",
	  .help = "Records per Batch at most (a Batch is also closed at 1 MiB)." },
	{ "ring_slots", BASIC_INI_UINT, BASIC_INI_POW2, B(ring_slots), .min = 16, .max = 1u << 24, .def = "8192",
	  .help = "Slots of each bus's ring between its thread and the collector." },
	{ "hw_watchdog", BASIC_INI_PATH, BASIC_INI_NONEMPTY, B(hw_watchdog), .doc_def = "none",
	  .expect = "expected a device like /dev/watchdog",
	  .help = "Watchdog device kicked while the pipeline is alive." },
	{ "hw_watchdog_timeout_s", BASIC_INI_UINT, 0, B(hw_watchdog_timeout_s), .min = 2, .max = 3600,
	  .doc_def = "the driver's", .help = "Timeout set on hw_watchdog (seconds)." },
	{ "stat_socket", BASIC_INI_CUSTOM, 0, B(stat_socket), .hook = set_stat_socket, .syntax = "path or @name",
	  .expect = "expected a socket path of at most 107 characters", .doc_def = "DATA/railmon.sock",
	  .help = "Unix socket `railmon stat` reads the daemon's health from; @name is in the abstract "
	          "namespace. DATA is the log directory." },
	{ "key", BASIC_INI_PATH, BASIC_INI_NONEMPTY | BASIC_INI_LINE, B(key), BASIC_INI_LINE_AT(struct conf_board, key_line),
	  .expect = "bad file name", .doc_def = "none (seals unsigned)",
	  .help = "The vehicle's Ed25519 secret key (`railmon keygen`, mode 0600): every Seal of the log's "
	          "hash chain is signed with it. Without it the log is still chained (tamper-evident) but "
	          "not signed, and `check` says so." },
	{ "seal_interval_s", BASIC_INI_UINT, 0, B(seal_interval_s), .min = 1, .max = 86400, .def = "60",
	  .help = "A Seal (the hash chain's head, signed) goes into the log this often (seconds), and also "
	          "before every segment closes and at a clean stop." },
	{ "clock_step_ms", BASIC_INI_UINT, 0, B(clock_step_ms), .min = 1, .max = 3600000, .def = "10",
	  .help = "CLOCK_REALTIME moving against CLOCK_MONOTONIC by this much (ms) between two collector passes "
	          "(20 ms apart, less for a short batch_ms) is a clock step: an EVENT_CLOCK_STEP with its size. Slewing (NTP) never is "
	          "(docs/time.md)." },
	{ "health_interval_s", BASIC_INI_UINT, 0, B(health_interval_s), .min = 1, .max = 86400, .def = "10",
	  .help = "Health entries (counters of every bus, the collector and the log) go into a Batch this "
	          "often (seconds)." },
	{ "meta_interval_s", BASIC_INI_UINT, 0, B(meta_interval_s), .min = 1, .max = 86400, .def = "60",
	  .help = "The channel dictionary (names, units, sources) goes into a Batch this often (seconds), "
	          "and into the first Batch of a run." },
};

#undef B
#define S(member) BASIC_INI_FIELD(struct conf_storage, member)

static const struct basic_ini_key storage_keys[] = {
	{ "dir", BASIC_INI_PATH, BASIC_INI_NONEMPTY, S(dir), .expect = "bad directory", .doc_def = "railmon-data",
	  .help = "The log directory (`--data` overrides it)." },
	{ "segment_size", BASIC_INI_SIZE, BASIC_INI_LINE, S(segment_bytes), BASIC_INI_LINE_AT(struct conf_storage,
	  segment_line), .min = 65536, .max = UINT64_MAX, .def = "16M",
	  .expect = "expected a size of at least 64K, like 16M",
	  .help = "Size of a log segment file (preallocated). Two must fit in the log's filesystem." },
	{ "sync_window_ms", BASIC_INI_UINT, 0, S(sync_window_ms), .min = 0, .max = 60000, .def = "200",
	  .expect = "expected 0 (sync every batch) to 60000",
	  .help = "Batches are synced to flash at most this long after they were written; 0 = every Batch." },
	{ "retention_size", BASIC_INI_SIZE, BASIC_INI_LINE, S(retention_bytes), BASIC_INI_LINE_AT(struct conf_storage,
	  retention_line), .def = "0", .doc_def = "0 (unlimited)", .expect = "expected a size like 2G (0 = unlimited)",
	  .help = "The log's byte budget: the oldest segments go beyond it. At least two segments." },
	{ "retention_age", BASIC_INI_DURATION, 0, S(retention_age_s), .def = "0", .doc_def = "0 (unlimited)",
	  .expect = "expected a duration like 30d, 12h (0 = unlimited)",
	  .help = "Segments older than this are deleted." },
	{ "retention_min_age", BASIC_INI_DURATION, BASIC_INI_LINE, S(retention_min_age_s),
	  BASIC_INI_LINE_AT(struct conf_storage, min_age_line), .def = "0", .doc_def = "0 (no floor)",
	  .expect = "expected a duration like 48h (0 = no floor)",
	  .help = "The window the recorder guarantees (49 CFR 229.135: 48h): retention never deletes younger "
	          "data, `check` refuses a board whose rate cannot keep it in the space, and at run time a "
	          "rate that will not fit raises an event, a health alarm and a message." },
};

#undef S
#define U(member) BASIC_INI_FIELD(struct conf_uplink, member)

/*
 * The MQTT connection's keys, one list for [uplink] and [sparkplug]: the
 * same words, checks and help (a broker or a TLS file is parsed once, by
 * one hook).  [sparkplug]'s struct starts with its struct conf_uplink, so
 * these offsets are right in both.
 */
#define UPLINK_CONNECTION_KEYS(broker_def, broker_help) \
	{ "broker", BASIC_INI_CUSTOM, 0, .hook = set_broker, .syntax = "mqtt[s]://host[:port]", \
	  .doc_def = broker_def, .help = broker_help " mqtts:// is TLS (port 8883 by default, 1883 without TLS)." }, \
	{ "ca_file", BASIC_INI_PATH, BASIC_INI_NONEMPTY, U(ca_file), .hook = tls_on, .expect = "bad file name", \
	  .doc_def = "none", .help = "The CA that signed the broker's certificate (PEM). Turns TLS on." }, \
	{ "cert_file", BASIC_INI_PATH, BASIC_INI_NONEMPTY, U(cert_file), .hook = tls_on, .expect = "bad file name", \
	  .doc_def = "none", .help = "The device's certificate (PEM), with key_file. Turns TLS on." }, \
	{ "key_file", BASIC_INI_PATH, BASIC_INI_NONEMPTY, U(key_file), .hook = tls_on, .expect = "bad file name", \
	  .doc_def = "none", .help = "The device's private key (PEM), with cert_file. Turns TLS on." }, \
	{ "tls_insecure", BASIC_INI_BOOL, 0, U(tls_insecure), .def = "false", \
	  .help = "Do not verify the broker's certificate (warned about at every start)." }, \
	{ "username", BASIC_INI_STRING, 0, U(username), .expect = "too long", .doc_def = "none", \
	  .help = "MQTT user name." }, \
	{ "password", BASIC_INI_STRING, 0, U(password), .expect = "too long", .doc_def = "none", \
	  .help = "MQTT password." }, \
	{ "keepalive_s", BASIC_INI_UINT, 0, U(keepalive_s), .min = 5, .max = 3600, .def = "20", \
	  .help = "MQTT keepalive (seconds)." }

static const struct basic_ini_key uplink_keys[] = {
	UPLINK_CONNECTION_KEYS("none (no uplink)", "The MQTT broker the log is forwarded to with QoS 1."),
	{ "inflight", BASIC_INI_UINT, 0, U(inflight), .min = 1, .max = 65535, .def = "20",
	  .help = "Messages in flight (published, no PUBACK yet) at most." },
	{ "live_ahead", BASIC_INI_BOOL, 0, U(live_ahead), .def = "false",
	  .help = "Send live records ahead of a backlog that is being drained." },
	{ "rate_limit", BASIC_INI_SIZE, 0, U(rate_bytes_s), .def = "0", .doc_def = "0 (unlimited)",
	  .expect = "expected bytes per second like 64K (0 = unlimited)",
	  .help = "Bytes per second the backlog is sent at, at most (leave room on a cellular link)." },
	{ "config_pubkey", BASIC_INI_PATH, BASIC_INI_NONEMPTY | BASIC_INI_LINE, U(config_pubkey),
	  BASIC_INI_LINE_AT(struct conf_uplink, config_pubkey_line), .expect = "bad file name",
	  .doc_def = "none (remote configuration refused)",
	  .help = "The ground's Ed25519 public key (`railmon keygen`): a board sent by `railmon config push` "
	          "is taken only when signed with it. Without it the vehicle takes no remote configuration. "
	          "docs/remote-config.md." },
};


/* A Sparkplug id (group, edge node, host): a topic level, so none of the
   MQTT wildcards and separators the specification forbids in it. */
static int sparkplug_id(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	for (const char *c = value; *c; c++)
		if (strchr("/+#", *c) || (unsigned char)*c < 0x20 || *c == 0x7f)
			return basic_ini_bad(ini, key, value, "may not contain '/', '+', '#' or control characters "
			                     "(it is an MQTT topic level)");
	return 0;
}

/* devices = all | BUS ... (blanks or ','): the buses are checked against
   the file's sections after the whole file (config.c). */
static int set_sparkplug_devices(struct basic_ini *ini, const struct basic_ini_key *key, void *base,
                                 const char *value)
{
	struct conf_sparkplug *sp = base;
	char buf[512], *save = NULL;

	if (strlen(value) >= sizeof(buf))
		return basic_ini_bad(ini, key, value, "too long");
	memcpy(buf, value, strlen(value) + 1);
	sp->ndevices = 0;
	if (!strcmp(buf, "all"))
		return 0;
	for (char *w = strtok_r(buf, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		if (!strcmp(w, "all"))
			return basic_ini_bad(ini, key, value, "'all' goes alone");
		if (sp->ndevices >= CONF_BUSES_MAX || strlen(w) >= BUS_NAME_MAX)
			return basic_ini_bad(ini, key, value, "expected all or at most 16 bus names");
		for (size_t i = 0; i < sp->ndevices; i++)
			if (!strcmp(sp->devices[i], w))
				return basic_ini_bad(ini, key, value, "a bus given twice");
		memcpy(sp->devices[sp->ndevices++], w, strlen(w) + 1);
	}
	if (!sp->ndevices)
		return basic_ini_bad(ini, key, value, "expected all or bus names");
	return 0;
}

#define SP(member) BASIC_INI_FIELD(struct conf_sparkplug, member)

static const char sparkplug_id_expect[] = "expected 1 to 63 characters";

/* The connection's keys come first, parsed into .mqtt (offset 0). */
_Static_assert(offsetof(struct conf_sparkplug, mqtt) == 0, "UPLINK_CONNECTION_KEYS' offsets are conf_uplink's");

static const struct basic_ini_key sparkplug_keys[] = {
	UPLINK_CONNECTION_KEYS("required", "The MQTT broker of the Sparkplug host applications."),
	{ "group_id", BASIC_INI_STRING, BASIC_INI_NONEMPTY | BASIC_INI_REQUIRED, SP(group_id), .max = 63,
	  .hook = sparkplug_id, .expect = sparkplug_id_expect,
	  .help = "The Sparkplug group the edge node belongs to (spBv1.0/<group_id>/...)." },
	{ "edge_node", BASIC_INI_STRING, BASIC_INI_NONEMPTY, SP(edge_node), .max = 63, .hook = sparkplug_id,
	  .expect = sparkplug_id_expect, .doc_def = "the vehicle",
	  .help = "The edge node id in the topics (spBv1.0/<group_id>/NBIRTH/<edge_node>)." },
	{ "devices", BASIC_INI_CUSTOM, BASIC_INI_LINE, BASIC_INI_LINE_AT(struct conf_sparkplug, devices_line),
	  .hook = set_sparkplug_devices, .syntax = "all | BUS ...", .doc_def = "all",
	  .help = "The buses published, each a Sparkplug device named as the bus (DBIRTH/DDATA/<edge_node>/<bus>)." },
	{ "primary_host", BASIC_INI_STRING, BASIC_INI_NONEMPTY, SP(primary_host), .max = 63, .hook = sparkplug_id,
	  .expect = sparkplug_id_expect, .doc_def = "none (publish at once)",
	  .help = "The primary host application whose spBv1.0/STATE/<primary_host> must say online for the edge node "
	          "to publish." },
};

#undef SP
#undef U
#define P(member) BASIC_INI_FIELD(struct conf_pending_bus, member)

static const struct basic_ini_name can_drivers[] = {
	{ "socketcan", BUS_CAN_SOCKETCAN }, { "slcan", BUS_CAN_SLCAN }, { "trace", BUS_CAN_TRACE }, { NULL, 0 },
};

static const char rate_expect[] = "expected a rate from 1000 to 20000000";

static const struct basic_ini_key can_keys[] = {
	{ "driver", BASIC_INI_ENUM, 0, P(bus.can.driver), .names = can_drivers, .def = "socketcan",
	  .help = "socketcan: a kernel interface; slcan: a serial (USB) adapter; trace: a trace file "
	          "read as a bus (candump, Vector ASC or BLF, PEAK TRC; told apart by content)." },
	{ "interface", BASIC_INI_STRING, BASIC_INI_NONEMPTY, P(bus.can.ifname), .max = 15,
	  .expect = "expected an interface name of at most 15 characters", .doc_def = "none",
	  .help = "socketcan: the interface (can0). trace: only the frames of this interface in the log." },
	{ "device", BASIC_INI_PATH, BASIC_INI_NONEMPTY, P(bus.can.device), .doc_def = "none",
	  .help = "slcan: the tty; trace: the trace file (candump, ASC, BLF or TRC)." },
	{ "file", BASIC_INI_PATH, BASIC_INI_NONEMPTY, P(bus.can.device), .doc_def = "none",
	  .help = "The same as device." },
	{ "dbc", BASIC_INI_PATH, BASIC_INI_NONEMPTY | BASIC_INI_LINE, P(bus.can.dbc),
	  BASIC_INI_LINE_AT(struct conf_pending_bus, dbc_line), .doc_def = "none (raw frames only)",
	  .help = "The DBC file that decodes the bus's frames into channels." },
	{ "dbc_strict", BASIC_INI_BOOL, 0, P(bus.can.dbc_strict), .def = "false",
	  .help = "Refuse a DBC with a reference to a message or signal that does not exist, a signal that does "
	          "not fit its message, an 'mN' without 'M', a bare 'm' or a text that is not UTF-8, instead of "
	          "loading it with a warning for each (railmon check lists them)." },
	{ "j1939", BASIC_INI_BOOL, 0, P(bus.can.j1939), .def = "false",
	  .help = "A J1939 bus: multi-frame messages (TP.CM BAM and RTS/CTS) reassembled and decoded, the DBC's "
	          "messages matched by PGN whatever the source address and priority, DM1 trouble codes recorded "
	          "as events when they appear and clear." },
	{ "bitrate", BASIC_INI_UINT, 0, P(bus.can.bitrate), .min = 1000, .max = 20000000, .expect = rate_expect,
	  .doc_def = "as set up", .help = "Bit rate set on the interface (socketcan, through libsocketcan; slcan)." },
	{ "dbitrate", BASIC_INI_UINT, 0, P(bus.can.dbitrate), .min = 1000, .max = 20000000, .expect = rate_expect,
	  .doc_def = "as set up", .help = "CAN FD data phase bit rate." },
	{ "serial_baud", BASIC_INI_UINT, 0, P(bus.can.serial_baud), .min = 1000, .max = 20000000,
	  .expect = rate_expect, .def = "115200", .help = "slcan: the tty's baud rate." },
	{ "fd", BASIC_INI_BOOL, 0, P(bus.can.fd), .def = "false", .help = "Accept CAN FD frames." },
	{ "listen_only", BASIC_INI_BOOL, 0, P(bus.can.listen_only), .def = "true",
	  .help = "Never ACK or send on the bus. false also needs allow_normal_mode = true." },
	{ "allow_normal_mode", BASIC_INI_BOOL, 0, P(bus.can.allow_normal_mode), .def = "false",
	  .help = "The explicit consent to open a physical interface not listen-only." },
	{ "loop", BASIC_INI_BOOL, 0, P(bus.can.trace_loop), .def = "false",
	  .help = "trace: start over at the end of the file (the demo)." },
	{ "channel", BASIC_INI_UINT, 0, P(bus.can.trace_channel), .min = 0, .max = 255, .def = "0",
	  .expect = "expected a channel number from 1 to 255, or 0 for every channel",
	  .help = "trace: only the frames of this channel of an ASC, BLF or TRC file (numbered from 1 as Vector "
	          "and PEAK tools number them); 0 = every channel. replay with several CAN buses: the n-th bus "
	          "takes channel n unless set." },
	{ "speed", BASIC_INI_DOUBLE, 0, P(bus.can.trace_speed), .min = 0, .max = 1000, .def = "1",
	  .expect = "expected 0 (as fast as possible) or a factor up to 1000",
	  .help = "trace: pace at this many times real time; 0 = as fast as possible." },
	{ "filter", BASIC_INI_CUSTOM, BASIC_INI_REPEAT, .hook = add_filter, .syntax = "ID/MASK",
	  .doc_def = "none (every frame)",
	  .help = "A hardware filter, like candump's (0x100/0x7ff); may be given up to 32 times. An id above "
	          "0x7ff or written with 8 hex digits is extended." },
	{ "uplink", BASIC_INI_CUSTOM, 0, P(uplink), .hook = set_uplink, .syntax = policy_syntax, .doc_def = "all",
	  .help = "What the uplink sends of the bus's channels' samples (the log keeps every record): all (every sample, the stored Batches as they are), none, or change, deadband X (moved by X or more since the last value sent), every DURATION (that long since the last sent; s, m, h or ms) combined with ',' ('deadband 0.5, every 10s': when any says so). Events and Health always go. The Sparkplug B edge node ([sparkplug]) sends its DDATA by the same policy (its own reducer, started again at every birth: each metric's first sample after one goes). uplink/README.md, \"Reduction\"." },
	{ "uplink_frames", BASIC_INI_CUSTOM, 0, .hook = set_uplink_frames, .syntax = "all | none | ids ID|LO-HI ...",
	  .doc_def = "all",
	  .help = "The bus's raw frames on the uplink (the log keeps them all): all, none, or ids and ranges "
	          "('ids 0x100 0x200-0x2FF'). Only when a policy of the board is not all: else the stored Batches "
	          "go as they are." },
	{ "cpu", BASIC_INI_INT, 0, P(cpu), .min = -1, .max = 1023, .def = "-1", .expect = cpu_expect,
	  .help = cpu_help },
};

static const struct basic_ini_name trdp_receive[] = { { "socket", 0 }, { "capture", 1 }, { NULL, 0 } };

static const struct basic_ini_key trdp_keys[] = {
	{ "interface", BASIC_INI_STRING, BASIC_INI_NONEMPTY, P(bus.trdp.ifname), .max = 15, .doc_def = "none",
	  .help = "The Ethernet interface the multicast groups are joined on (eth1); without it the kernel "
	          "picks one by its routes.  With it the bus is gone (CAN_GONE) while the interface is down, "
	          "without a carrier or removed, and back (CAN_BACK, the groups joined again) as soon as "
	          "rtnetlink says it is up." },
	{ "bind", BASIC_INI_CUSTOM, 0, .hook = set_trdp_bind, .syntax = "ADDRESS", .doc_def = "any",
	  .help = "Receive only telegrams sent to this local IPv4 address (unicast only: a socket bound to "
	          "an address gets no multicast)." },
	{ "group", BASIC_INI_CUSTOM, BASIC_INI_REPEAT, .hook = add_trdp_group, .syntax = "ADDRESS",
	  .doc_def = "none (unicast only)",
	  .help = "A multicast group to join (239.193.0.1); may be given up to 16 times." },
	{ "pd_port", BASIC_INI_UINT, 0, P(bus.trdp.pd_port), .min = 0, .max = 65535, .def = "17224",
	  .help = "UDP port of process data; 0 = none." },
	{ "md_port", BASIC_INI_UINT, 0, P(bus.trdp.md_port), .min = 0, .max = 65535, .def = "17225",
	  .help = "Port of message data: UDP, and a TCP listener (MD over TCP, never answered); 0 = none." },
	{ "receive", BASIC_INI_ENUM, 0, P(bus.trdp.receive_capture), .names = trdp_receive, .def = "socket",
	  .help = "socket: UDP sockets, recvmmsg. capture: the interface's packet ring (libpcap, as tcpdump; "
	          "needs interface and CAP_NET_RAW), less CPU per telegram; a telegram may wait up to "
	          "capture_block_ms for its block. MD over TCP is read from its listener in both. trdp/README.md, "
	          "\"Receiving through a packet ring\"." },
	{ "capture_block_ms", BASIC_INI_UINT, 0, P(bus.trdp.capture_block_ms), .min = 1, .max = 1000, .def = "10",
	  .help = "receive = capture: the kernel hands the ring's block to the bus thread when it is full or this "
	          "long after it was opened. Longer: fewer wakeups, less CPU per telegram; shorter: a telegram "
	          "waits less before it is recorded (its time is the kernel's receive time either way), but the "
	          "ring (capture_buffer_kib / 256 blocks, 64 at its default) lasts only that many of these while "
	          "the bus thread is held up at low rates. When the interface goes and at stop, the block still "
	          "filling is waited for (up to two of these) and recorded." },
	/* At least 4 blocks: one the kernel fills while the bus thread reads
	   others; fewer and any pause of the thread loses packets.  At most
	   1 GiB (4,096 blocks, 41 s at 10 ms): kernel memory held for the
	   bus's life, and a larger value is more likely bytes given for KiB
	   (16777216) than a ring anyone wants; it also keeps the byte size
	   within libpcap's int. */
	{ "capture_buffer_kib", BASIC_INI_UINT, 0, P(bus.trdp.capture_buffer_kib), .min = 1024, .max = 1048576,
	  .def = "16384",
	  .help = "receive = capture: the packet ring's size in KiB (as tcpdump -B), cut by libpcap into blocks of "
	          "256 KiB (rounded down to whole blocks). At low rates the kernel hands over a block at each "
	          "capture_block_ms however few packets it holds, so the ring covers a stall of the bus thread (a "
	          "busy collector, a slow disk, a stopped process) of (this / 256) x capture_block_ms: 64 x 10 ms "
	          "= 640 ms at the defaults; telegrams past it are dropped by the kernel (counted in rx_dropped). "
	          "Costs this much kernel memory (not swapped) per bus while it runs; if the kernel cannot give "
	          "it all, libpcap takes a smaller ring." },
	{ "xml", BASIC_INI_PATH, BASIC_INI_NONEMPTY | BASIC_INI_LINE, P(bus.trdp.xml),
	  BASIC_INI_LINE_AT(struct conf_pending_bus, dbc_line), .doc_def = "none (raw telegrams only)",
	  .help = "The device's TRDP XML configuration (its telegrams and data sets)." },
	{ "cpu", BASIC_INI_INT, 0, P(cpu), .min = -1, .max = 1023, .def = "-1", .expect = cpu_expect,
	  .help = cpu_help },
};

static const struct basic_ini_name mb_transports[] = { { "tcp", 0 }, { "rtu", 1 }, { NULL, 0 } };
static const struct basic_ini_name mb_parities[] = { { "N", 'N' }, { "E", 'E' }, { "O", 'O' }, { NULL, 0 } };

static const struct basic_ini_key modbus_keys[] = {
	{ "transport", BASIC_INI_ENUM, 0, P(bus.mb.rtu), .names = mb_transports, .def = "tcp",
	  .help = "tcp: Modbus TCP; rtu: a serial line." },
	{ "host", BASIC_INI_STRING, BASIC_INI_NONEMPTY, P(bus.mb.host), .expect = "bad host", .doc_def = "none",
	  .help = "tcp: the server's name or address." },
	{ "port", BASIC_INI_UINT, 0, P(bus.mb.port), .min = 1, .max = 65535, .def = "502", .help = "tcp: its port." },
	{ "device", BASIC_INI_PATH, BASIC_INI_NONEMPTY, P(bus.mb.device), .doc_def = "none",
	  .help = "rtu: the serial device." },
	{ "baud", BASIC_INI_UINT, 0, P(bus.mb.baud), .min = 300, .max = 4000000, .def = "19200",
	  .help = "rtu: baud rate." },
	{ "parity", BASIC_INI_ENUM, BASIC_INI_NOCASE, P(bus.mb.parity), .names = mb_parities, .def = "E",
	  .help = "rtu: none, even or odd." },
	{ "data_bits", BASIC_INI_UINT, 0, P(bus.mb.data_bits), .min = 5, .max = 8, .def = "8",
	  .help = "rtu: bits per character." },
	{ "stop_bits", BASIC_INI_UINT, 0, P(bus.mb.stop_bits), .min = 1, .max = 2, .def = "1",
	  .expect = "expected 1 or 2", .help = "rtu: stop bits." },
	{ "rs485", BASIC_INI_BOOL, 0, P(bus.mb.rs485), .def = "false",
	  .help = "rtu: set the tty's RS-485 mode (TIOCSRS485)." },
	{ "response_timeout_ms", BASIC_INI_UINT, 0, P(bus.mb.response_timeout_ms), .min = 1, .max = 60000,
	  .def = "500", .help = "How long a request waits for its reply." },
	{ "byte_timeout_ms", BASIC_INI_UINT, 0, P(bus.mb.byte_timeout_ms), .min = 1, .max = 60000, .def = "50",
	  .help = "Silence between two bytes of a reply that ends it." },
	{ "max_gap", BASIC_INI_UINT, 0, P(bus.mb.max_gap), .min = 0, .max = 124, .def = "8",
	  .expect = "expected 0 to 124 registers",
	  .help = "Registers a merged request may read and throw away between two channels." },
	{ "period_ms", BASIC_INI_UINT, 0, P(period_ms), .min = 1, .max = 3600000, .def = "1000",
	  .help = "Poll period of the channels that do not set their own." },
	{ "uplink", BASIC_INI_CUSTOM, 0, P(uplink), .hook = set_uplink, .syntax = policy_syntax, .doc_def = "all",
	  .help = "What the uplink sends of the bus's channels' samples (the log keeps every record): all (every sample, the stored Batches as they are), none, or change, deadband X (moved by X or more since the last value sent), every DURATION (that long since the last sent; s, m, h or ms) combined with ',' ('deadband 0.5, every 10s': when any says so). Events and Health always go. The Sparkplug B edge node ([sparkplug]) sends its DDATA by the same policy (its own reducer, started again at every birth: each metric's first sample after one goes). uplink/README.md, \"Reduction\"." },
	{ "cpu", BASIC_INI_INT, 0, P(cpu), .min = -1, .max = 1023, .def = "-1", .expect = cpu_expect,
	  .help = cpu_help },
};

#undef P
#define C(member) BASIC_INI_FIELD(struct conf_pending_channel, member)

static const struct basic_ini_name mb_tables[] = {
	{ "coil", BUS_MB_COIL }, { "discrete", BUS_MB_DISCRETE }, { "holding", BUS_MB_HOLDING },
	{ "input", BUS_MB_INPUT }, { NULL, 0 },
};
static const struct basic_ini_name mb_types[] = {
	{ "u16", BUS_MB_U16 }, { "s16", BUS_MB_S16 }, { "u32", BUS_MB_U32 }, { "s32", BUS_MB_S32 },
	{ "u64", BUS_MB_U64 }, { "f32", BUS_MB_F32 }, { "f64", BUS_MB_F64 }, { "bit", BUS_MB_BIT },
	{ "s64", BUS_MB_S64 }, { "u8", BUS_MB_U8 }, { "s8", BUS_MB_S8 }, { "string", BUS_MB_STRING }, { NULL, 0 },
};
static const struct basic_ini_name mb_bytes[] = {
	{ "high", BUS_MB_BYTE_HIGH }, { "low", BUS_MB_BYTE_LOW }, { NULL, 0 },
};
static const struct basic_ini_name mb_orders[] = {
	{ "ABCD", BUS_MB_ABCD }, { "DCBA", BUS_MB_DCBA }, { "BADC", BUS_MB_BADC }, { "CDAB", BUS_MB_CDAB }, { NULL, 0 },
};
_Static_assert(LEN(mb_types) == BUS_MB_TYPE_MAX + 1 && LEN(mb_orders) == BUS_MB_ORDER_MAX + 1 &&
               LEN(mb_bytes) == BUS_MB_BYTE_MAX + 1,
               "one name per Modbus type and byte order");

static const struct basic_ini_key channel_keys[] = {
	{ "bus", BASIC_INI_STRING, BASIC_INI_REQUIRED, C(bus), .expect = "bad bus name",
	  .help = "The [modbus NAME] section the channel is read from." },
	{ "unit_id", BASIC_INI_UINT, BASIC_INI_LINE, C(ch.unit_id), BASIC_INI_LINE_AT(struct conf_pending_channel,
	  unit_line), .min = 0, .max = 247, .def = "0",
	  .help = "The slave's unit id: 1 to 247 on a serial line (0 is the broadcast address); TCP takes 0." },
	{ "table", BASIC_INI_ENUM, BASIC_INI_NOCASE | BASIC_INI_LINE, C(ch.table),
	  BASIC_INI_LINE_AT(struct conf_pending_channel, table_line), .names = mb_tables, .def = "holding",
	  .help = "The Modbus table, read with function code 1, 2, 3 or 4. Coils and discrete inputs are bits." },
	{ "address", BASIC_INI_UINT, BASIC_INI_LINE | BASIC_INI_REQUIRED, C(ch.addr),
	  BASIC_INI_LINE_AT(struct conf_pending_channel, address_line), .min = 0, .max = 65535,
	  .expect = "expected 0 to 65535 (protocol address, 0-based)",
	  .help = "The first register: the protocol address, 0-based, as on the wire (Modicon 40001 is holding "
	          "address 0, 30001 input address 0; `check` warns for 30001 and above)." },
	{ "type", BASIC_INI_ENUM, BASIC_INI_NOCASE, C(ch.type), .names = mb_types, .def = "u16",
	  .help = "How the registers are read: u16, s16, u32, s32, u64, s64 integers, f32 or f64 floats, one bit, "
	          "one byte (u8, s8: see byte), or string: count registers of ASCII text (a vehicle number, a "
	          "software version, a fault text), two characters each, high byte first (BADC or DCBA: low "
	          "first), up to the first NUL, trailing spaces trimmed, stored when it changes and once a "
	          "minute." },
	{ "order", BASIC_INI_ENUM, BASIC_INI_NOCASE, C(ch.order), .names = mb_orders, .def = "ABCD",
	  .help = "Byte order on the wire, A = the most significant byte." },
	{ "bit", BASIC_INI_UINT, 0, C(ch.bit), .min = 0, .max = 15, .def = "0",
	  .help = "type = bit on a register: the bit's number." },
	{ "byte", BASIC_INI_ENUM, BASIC_INI_NOCASE, C(ch.byte), .names = mb_bytes, .def = "high",
	  .help = "type = u8 or s8: the register's high (most significant) or low byte, after order's byte swap." },
	{ "count", BASIC_INI_UINT, 0, C(ch.count), .min = 0, .max = BUS_MB_STRING_REGS_MAX, .doc_def = "none",
	  .expect = "expected 1 to 32 registers",
	  .help = "type = string: the registers of text (1 to 32: up to 64 characters)." },
	{ "scale", BASIC_INI_DOUBLE, 0, C(ch.scale), .def = "1", .help = "value = raw * scale + offset." },
	{ "offset", BASIC_INI_DOUBLE, 0, C(ch.offset), .def = "0", .help = "value = raw * scale + offset." },
	{ "unit", BASIC_INI_STRING, 0, C(ch.unit), .max = 15, .doc_def = "none", .help = "The value's unit." },
	{ "period_ms", BASIC_INI_UINT, 0, C(ch.period_ms), .min = 1, .max = 3600000,
	  .doc_def = "the bus's period_ms", .help = "Poll period (milliseconds)." },
	{ "required_within_ms", BASIC_INI_UINT, BASIC_INI_LINE, C(required_ms),
	  BASIC_INI_LINE_AT(struct conf_pending_channel, required_line), .min = 1, .max = 86400000,
	  .doc_def = "not required",
	  .help = "The channel must be read at least this often (milliseconds): a CHANNEL_STALE event names it "
	          "when it was not, CHANNEL_FRESH when it is back." },
	{ "uplink", BASIC_INI_CUSTOM, BASIC_INI_LINE, C(uplink), BASIC_INI_LINE_AT(struct conf_pending_channel,
	  uplink_line), .hook = set_uplink, .syntax = policy_syntax, .doc_def = "the bus's uplink",
	  .help = "What the uplink sends of this channel's samples (the log keeps every record): all (every sample, the stored Batches as they are), none, or change, deadband X (moved by X or more since the last value sent), every DURATION (that long since the last sent; s, m, h or ms) combined with ',' ('deadband 0.5, every 10s': when any says so). Events and Health always go. The Sparkplug B edge node ([sparkplug]) sends its DDATA by the same policy (its own reducer, started again at every birth: each metric's first sample after one goes). uplink/README.md, \"Reduction\"." },
};

#undef C

/* ------------------------------------------------------------ triggers */

static const char *const op_words[CONF_OP_MAX] = { "==", "!=", ">", ">=", "<", "<=", "event" };

/* when = CHANNEL OP VALUE | event NAME */
static int set_when(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct conf_trigger *t = base;
	char a[160], op[8], b[80], extra[2];
	int n;

	if (strlen(value) >= sizeof(t->when))
		return basic_ini_bad(ini, key, value, "is too long");
	snprintf(t->when, sizeof(t->when), "%s", value);
	if (sscanf(value, "event %79s %1s", b, extra) == 1) {
		if (strlen(b) >= sizeof(t->value))
			return basic_ini_bad(ini, key, value, "bad event name");
		t->op = CONF_OP_EVENT;
		t->channel[0] = 0;
		snprintf(t->value, sizeof(t->value), "%s", b);
		return 0;
	}
	n = sscanf(value, "%159s %7s %79s %1s", a, op, b, extra);
	if (n != 3)
		return basic_ini_bad(ini, key, value, "expected CHANNEL OP VALUE (OP one of == != > >= < <=) "
		                     "or event NAME");
	for (int i = 0; i < CONF_OP_EVENT; i++) {
		if (strcmp(op, op_words[i]))
			continue;
		if (strlen(a) >= sizeof(t->channel) || strlen(b) >= sizeof(t->value))
			return basic_ini_bad(ini, key, value, "name too long");
		t->op = (enum conf_trigger_op)i;
		snprintf(t->channel, sizeof(t->channel), "%s", a);
		snprintf(t->value, sizeof(t->value), "%s", b);
		return 0;
	}
	return basic_ini_bad(ini, key, value, "expected CHANNEL OP VALUE (OP one of == != > >= < <=) "
	                     "or event NAME");
}

#define T(member) BASIC_INI_FIELD(struct conf_trigger, member)

static const struct basic_ini_key trigger_keys[] = {
	{ "when", BASIC_INI_CUSTOM, BASIC_INI_REQUIRED | BASIC_INI_LINE, .hook = set_when,
	  BASIC_INI_LINE_AT(struct conf_trigger, when_line), .syntax = "CHANNEL OP VALUE | event NAME",
	  .help = "The condition: a channel compared with a number or a label of its DBC value table "
	          "(`EmergencyBrake == 1`, `Speed > 160`, `Direction == Reverse`), or an event of the log "
	          "(`event CAN_BUS_OFF`, `event J1939_DTC_ACTIVE`, `event LOG_FAULT`). A channel condition "
	          "fires when it becomes true, an event each time it happens (once per post window)." },
	{ "pre", BASIC_INI_DURATION, 0, T(pre_s), .def = "5m", .max = 7 * 86400,
	  .help = "The held window starts this long before the trigger. The log keeps its newest data, "
	          "the longest `pre` of all triggers + 10 s, undeletable for `retention_size` and "
	          "`retention_age`, so a trigger firing while holds fill the budget still finds the start "
	          "of its window (`check` says what the holds need)." },
	{ "post", BASIC_INI_DURATION, 0, T(post_s), .def = "5m", .max = 7 * 86400,
	  .help = "The held window ends this long after the trigger." },
	{ "hold", BASIC_INI_DURATION, 0, T(hold_s), .def = "0", .doc_def = "0 (until released)",
	  .help = "The hold ends by itself this long after it was made; else at `railmon hold release ID`." },
};

#undef T

static const struct basic_ini_key signal_keys[] = {
	{ "required_within_ms", BASIC_INI_UINT, 0, BASIC_INI_FIELD(struct conf_pending_signal, within_ms),
	  .min = 1, .max = 86400000, .doc_def = "not required",
	  .help = "The signal must be received at least this often (milliseconds): a CHANNEL_STALE event "
	          "names it when it was not, CHANNEL_FRESH when it is back." },
	{ "uplink", BASIC_INI_CUSTOM, BASIC_INI_LINE, BASIC_INI_FIELD(struct conf_pending_signal, uplink),
	  BASIC_INI_LINE_AT(struct conf_pending_signal, uplink_line), .hook = set_uplink, .syntax = policy_syntax,
	  .doc_def = "the bus's uplink", .help = "What the uplink sends of this signal's samples (the log keeps every record): all (every sample, the stored Batches as they are), none, or change, deadband X (moved by X or more since the last value sent), every DURATION (that long since the last sent; s, m, h or ms) combined with ',' ('deadband 0.5, every 10s': when any says so). Events and Health always go. The Sparkplug B edge node ([sparkplug]) sends its DDATA by the same policy (its own reducer, started again at every birth: each metric's first sample after one goes). uplink/README.md, \"Reduction\"." },
};

static const struct basic_ini_table tables[CONF_SEC_MAX] = {
	[CONF_SEC_BOARD] = { "board", "The vehicle computer. Required, once.", board_keys, LEN(board_keys) },
	[CONF_SEC_STORAGE] = { "storage", "The flash log. Once at most.", storage_keys, LEN(storage_keys) },
	[CONF_SEC_UPLINK] = { "uplink", "Forwarding the log to the ground over MQTT. Once at most.", uplink_keys,
	                       LEN(uplink_keys) },
	[CONF_SEC_CAN] = { "can NAME", "A CAN bus. Up to 16 buses (CAN and Modbus) per board file.", can_keys,
	                    LEN(can_keys) },
	[CONF_SEC_TRDP] = { "trdp NAME", "A TRDP bus (IEC 61375-2-3, the train's Ethernet): process and message "
	                     "data received over UDP, message data also over TCP, recorded raw.", trdp_keys, LEN(trdp_keys) },
	[CONF_SEC_MODBUS] = { "modbus NAME", "A Modbus link (TCP or RTU) and the defaults of its channels.",
	                       modbus_keys, LEN(modbus_keys) },
	[CONF_SEC_CHANNEL] = { "channel NAME", "A Modbus value read periodically. Up to 4096 per board file.",
	                        channel_keys, LEN(channel_keys) },
	[CONF_SEC_TRIGGER] = { "trigger NAME", "A condition that holds the log around the moment it becomes true "
	                        "(an event record; retention keeps [t - pre, t + post]). Up to 64.",
	                        trigger_keys, LEN(trigger_keys) },
	[CONF_SEC_SIGNAL] = { "signal NAME", "A signal of a CAN bus's DBC (its name, or Message.Signal): that it must "
	                       "be received in time, what the uplink sends of it.", signal_keys, LEN(signal_keys) },
	[CONF_SEC_SPARKPLUG] = { "sparkplug", "A Sparkplug B edge node beside the uplink (sparkplug/README.md): its "
	                          "broker, TLS and credentials as [uplink]'s; its DDATA reduced by the buses', "
	                          "channels' and signals' uplink = as the uplink's Batches. Once at most.", sparkplug_keys,
	                          LEN(sparkplug_keys) },
};

const struct basic_ini_table *conf_schema_table(enum conf_section s)
{
	return (unsigned)s < CONF_SEC_MAX ? &tables[s] : NULL;
}

/* ------------------------------------------------------------- names */

static const char *enum_name(const struct basic_ini_name *names, int64_t v)
{
	for (; names->name; names++)
		if (names->value == v)
			return names->name;
	return "?";
}

const char *conf_mb_table_name(enum bus_mb_table t)
{
	return enum_name(mb_tables, t);
}

const char *conf_mb_type_name(enum bus_mb_type t)
{
	return enum_name(mb_types, t);
}

const char *conf_mb_order_name(enum bus_mb_order o)
{
	return enum_name(mb_orders, o);
}

/* ----------------------------------------------------------- reference */

static const char keys_intro[] =
	"A board file is an INI file: `[section]` headers, `key = value` lines, comment lines\n"
	"starting with `;` or `#`, and comments after a value (` ; why`, with a blank before\n"
	"the `;`). Every error names the file and the line.\n"
	"A key may be given once per section (`filter` more often).\n\n"
	"Values:\n"
	"- bool: `true`, `yes`, `on`, `1` or `false`, `no`, `off`, `0`.\n"
	"- integer: decimal or `0x` hex (a leading `0` is octal).\n"
	"- size: bytes, or with K, M, G or T (powers of 1024): `64K`, `16M`, `2G`.\n"
	"- duration: seconds, or with s, m, h or d: `90`, `15m`, `12h`, `30d`.\n"
	"- path: a file name; a relative one is relative to the board file's directory.\n"
	"- enum: one of the names given (driver and transport in lower case; the Modbus\n"
	"  names in any case).\n";

/* One Markdown table cell: a '|' would end it. */
static void md_cell(FILE *f, const char *s, bool code)
{
	const char *q = code && *s ? "`" : "";

	fprintf(f, "| %s", q);
	for (; *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	fprintf(f, "%s ", q);
}

static void print_key(FILE *f, const struct basic_ini_key *k, bool markdown)
{
	bool required = k->flags & BASIC_INI_REQUIRED;
	const char *def = required ? "required" : basic_ini_default_text(k);
	char range[160];

	basic_ini_range_text(k, range, sizeof(range));
	if (!markdown) {
		fprintf(f, "  %s: %s%s%s%s%s%s\n      %s\n", k->name, basic_ini_type_name(k), range[0] ? ", " : "", range,
		        required ? " (required" : def[0] ? " (default " : "", def[0] && !required ? def : "",
		        def[0] ? ")" : "", k->help);
		return;
	}
	md_cell(f, k->name, true);
	md_cell(f, basic_ini_type_name(k), false);
	md_cell(f, range, false);
	md_cell(f, def, k->def && !k->doc_def);
	md_cell(f, k->help, false);
	fputs("|\n", f);
}

int conf_print_keys(FILE *f, bool markdown)
{
	if (!f)
		return -EINVAL;
	if (markdown)
		fprintf(f, "# Board file keys\n\n<!-- Generated by `railmon check --keys --markdown` from "
		        "conf/config-schema.c: do not edit. -->\n\n%s\nThe `board-keys` test fails when this page is "
		        "not current; regenerate it with\n`build/cli/railmon check --keys --markdown > "
		        "docs/board-keys.md`.\n", keys_intro);
	for (size_t s = 0; s < CONF_SEC_MAX; s++) {
		const struct basic_ini_table *t = &tables[s];
		if (markdown)
			fprintf(f, "\n## [%s]\n\n%s\n\n| key | type | range | default | meaning |\n|---|---|---|---|---|\n",
			        t->section, t->help);
		else
			fprintf(f, "%s[%s]  %s\n", s ? "\n" : "", t->section, t->help);
		for (size_t i = 0; i < t->nkeys; i++)
			print_key(f, &t->keys[i], markdown);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
