/* SPDX-License-Identifier: MIT */
/*
 * recv-cmd.c - `railmon recv`: the ground side.  Subscribes to the vehicles'
 * data topic, decodes and checks every Batch (gaps, duplicates and
 * conflicts by sequence number per vehicle and log id), writes the
 * records as `export` does (record/format.h: JSON lines, CSV or candump,
 * plus the vehicle and log each came from), and/or appends the Batches
 * unchanged to a local railmon log per (vehicle, log id), so `export`,
 * `stat` and `replay` work on the ground exactly as on the train.  A Batch
 * that is refused, or that a ground log cannot take, is kept as a file in
 * the refused directory, counted and said: nothing is dropped without a
 * word (ground/logs.c); the text output in time order per Batch is
 * ground/recv-text.c.  This file: the options; the receiver's wiring is
 * ground/receiver.c, what it says cli/recv-say.c.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "basic/parse.h"
#include "basic/timeparse.h"
#include "ground/receiver.h"
#include "record/order.h"
#include "cli/recv-say.h"

static const char recv_usage[] =
	"Usage: railmon recv --broker URL [OPTIONS]\n"
	"Receive railmon records from an MQTT broker (QoS 1, persistent session).\n\n"
	"  -B, --broker URL       mqtt://host[:port] or mqtts://host[:port]\n"
	"      --topic TOPIC      subscription (default railmon/+/data)\n"
	"      --client-id ID     session name (default railmon-recv-<host name>)\n"
	"  -f, --format FMT       jsonl (default), csv, candump (CAN frames only), influx\n"
	"                         (InfluxDB line protocol) or none;\n"
	"                         export's schema\n"
	"      --order ORDER      time (default: each vehicle log's records merged over\n"
	"                         --window across its Batches) or seq (as they come)\n"
	"      --window DUR       how far out of time order records may be (default 5s);\n"
	"                         a log's records wait at most that long\n"
	"  -o, --output FILE      records to FILE instead of stdout\n"
	"      --log DIR          also append every Batch to a railmon log per vehicle and\n"
	"                         log id: DIR/<vehicle>/<log id>/ (`export --data DIR/<vehicle>`)\n"
	"      --refused DIR      keep refused Batches here (default DIR/refused with --log,\n"
	"                         else ./railmon-refused)\n"
	"      --db URL           also commit every Batch to PostgreSQL (`railmon db init` first;\n"
	"                         docs/ground-schema.md); the format defaults to none then.\n"
	"                         A Batch is acknowledged to the broker only once committed,\n"
	"                         and while the database is down recv waits and reads nothing\n"
	"      --repair-after S   with --db: ask vehicles again (railmon/<vehicle>/resend) for\n"
	"                         the holes in the ledger known for S seconds (default 60;\n"
	"                         0: never); their \"gone\" answers are recorded\n"
	"      --share GROUP      subscribe as one of a group of receivers sharing the traffic:\n"
	"                         $share/GROUP/<topic> (MQTT shared subscription)\n"
	"      --max-vehicles N   vehicle ids tracked at most (default 10000); Batches of\n"
	"                         further ones are refused and counted\n"
	"      --refused-max SIZE refused Batches kept at most this many bytes per run\n"
	"                         (default 64M; each file at most 1 MiB: of a bigger one its start)\n"
	"      --max-age DUR      with --db: refuse Batches with records older than this\n"
	"                         behind the receiver's clock (default 366d; at least your\n"
	"                         `db prune --older-than`, so gap repair's old Batches pass)\n"
	"      --max-skew DUR     with --db: refuse Batches with records ahead of the receiver's\n"
	"                         clock, or this far from their Batch's base (default 1d);\n"
	"                         either option given: the ground logs (--log) refuse them too\n"
	"      --max-channels N   with --db: channels in one dictionary at most (default 20000)\n"
	"      --max-configs N    with --db: new dictionaries (config hashes) per vehicle and\n"
	"                         24 h at most (default 10); refusals are counted per vehicle\n"
	"                         and reason in table door_refusals\n"
	"      --ca FILE          CA certificate that signed the broker's (mqtts)\n"
	"      --cert FILE        client certificate (device / consumer identity)\n"
	"      --key FILE         its private key\n"
	"      --insecure         do not check the broker's host name (logged)\n"
	"  -u, --username NAME    MQTT user name; the password from --password-file FILE\n"
	"                         (first line) or the environment (RAILMON_MQTT_PASSWORD)\n"
	"      --password PASS    also works, but other users can see it (ps)\n"
	"  -n, --count N          stop after N new records\n"
	"  -t, --duration S       stop after S seconds (connected or not)\n"
	"  -q, --quiet            no progress line (on a terminal: records received, of\n"
	"                         --count if given, and their rate)\n"
	"  -h, --help             this text\n"
	"A summary (records, duplicates, missing, refused, per vehicle and log) goes to\n"
	"stderr at the end.  Exit status 1 if it never got connected.\n"
	"\n"
	"Examples:\n"
	"  railmon recv --broker mqtt://localhost --format csv -o records.csv\n"
	"  railmon recv --broker mqtts://broker:8883 --ca ca.pem --cert ground.pem --key ground.key \\\n"
	"      --db postgresql://railmon@dbhost/railmon --share ground\n";

/* ---- options ---- */

struct recv_opts {
	struct upl_recv_cfg cfg;
	size_t max_vehicles;
	enum rec_format fmt;
	bool text;                /* --format other than none */
	uint64_t count;
	double duration;
	const char *output, *logdir, *keep_dir, *password_file, *db_url, *share;
	bool format_given, quiet;
	double repair_after;      /* gap repair's grace period, s; 0 = off */
	uint64_t keep_budget;     /* --refused-max */
	struct grd_db_cfg limits; /* --max-age, --max-skew, --max-channels, --max-configs */
	int64_t window_ns;        /* --order time's window */
	bool seq_order;           /* --order seq */
	char topic[256];
	char host[128], client_id[128];
	char *password;           /* ours: from a file, the environment or argv */
	bool password_argv;
	struct cli_recv_say say;
};

/* mqtt://host[:port] or mqtts://host[:port] */
static int parse_broker(const char *url, struct recv_opts *o)
{
	uint16_t port;
	bool tls;
	int r = basic_parse_mqtt_url(url, o->host, sizeof(o->host), &port, &tls);

	if (r < 0)
		return r;
	o->cfg.use_tls = tls;
	o->cfg.port = port ? port : tls ? 8883 : 1883;
	o->cfg.host = o->host;
	return 0;
}

static bool parse_count(const char *s, uint64_t min, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-' || v < min)
		return false;
	*ret = v;
	return true;
}

/* --password, --password-file or RAILMON_MQTT_PASSWORD, in plain words. */
static int recv_password(struct recv_opts *o)
{
	const char *env = getenv("RAILMON_MQTT_PASSWORD");
	int r;

	if (o->password_argv && o->password_file)
		return cli_fail("recv", "--password and --password-file: give one");
	if (o->password_file) {
		r = cli_read_password(o->password_file, &o->password);
		if (r < 0)
			return cli_fail("recv", "--password-file %s: %s", o->password_file,
			                r == -ENODATA ? "empty first line" :
			                r == -E2BIG ? "the first line is over 1024 bytes" : strerror(-r));
	} else if (!o->password && env && *env) {
		o->password = strdup(env);
		if (!o->password)
			return cli_fail("recv", "out of memory");
	}
	if (o->password && !o->cfg.username)
		return cli_fail("recv", "a password (%s) needs --username",
		                o->password_argv ? "--password" : o->password_file ? "--password-file" :
		                "RAILMON_MQTT_PASSWORD");
	if (o->password_argv)
		fprintf(stderr, "railmon recv: WARNING: --password is visible to other users (ps, /proc); "
		                "use --password-file FILE or RAILMON_MQTT_PASSWORD\n");
	o->cfg.password = o->password;
	return 0;
}

static int readable(const char *opt, const char *path)
{
	if (path && access(path, R_OK) < 0)
		return cli_fail("recv", "%s %s: %s", opt, path, strerror(errno));
	return 0;
}

/* What upl_recv_new() would refuse with a bare -EINVAL, said in words. */
static int recv_check(struct recv_opts *o)
{
	const struct upl_tls_cfg *t = &o->cfg.tls;

	if (!o->cfg.use_tls && (t->ca_file || t->cert_file || t->key_file))
		return cli_fail("recv", "--ca, --cert and --key are for TLS: use an mqtts:// broker");
	if (!o->cfg.use_tls && t->insecure)
		return cli_fail("recv", "--insecure skips the broker's host name check, which only TLS "
		                        "has: use an mqtts:// broker, or leave --insecure out");
	if (o->cfg.use_tls && !t->ca_file)
		return cli_fail("recv", "mqtts:// needs --ca FILE: the CA certificate that signed the broker's");
	if (t->key_file && !t->cert_file)
		return cli_fail("recv", "--key needs --cert: the client certificate that goes with the key");
	if (t->cert_file && !t->key_file)
		return cli_fail("recv", "--cert needs --key: the private key of the client certificate");
	if (readable("--ca", t->ca_file) || readable("--cert", t->cert_file) || readable("--key", t->key_file))
		return 2;
	if (o->cfg.client_id && !*o->cfg.client_id)
		return cli_fail("recv", "--client-id: empty");
	return recv_password(o);
}

static int recv_option(int c, struct recv_opts *o)
{
	switch (c) {
	case 18: o->cfg.topic = optarg; break;
	case 19: o->cfg.client_id = optarg; break;
	case 21: o->db_url = optarg; break;
	case 9: o->share = optarg; break;
	case 10:
		if (!cli_parse_seconds(optarg, &o->repair_after))
			return cli_fail("recv", "--repair-after: expected seconds, not '%s'", optarg);
		break;
	case 'f':
		o->format_given = true;
		o->text = strcmp(optarg, "none") != 0;
		if (o->text && rec_format_parse(optarg, &o->fmt) < 0)
			return cli_fail("recv", "--format: expected jsonl, csv, candump, influx or none, not '%s'", optarg);
		break;
	case 'o': o->output = optarg; break;
	case 20: o->logdir = optarg; break;
	case 1: o->cfg.tls.ca_file = optarg; break;
	case 2: o->cfg.tls.cert_file = optarg; break;
	case 3: o->cfg.tls.key_file = optarg; break;
	case 4: o->cfg.tls.insecure = true; break;
	case 'u': o->cfg.username = optarg; break;
	case 5:
		/* Keep a copy and blank the argument, so ps shows it only until here. */
		free(o->password);
		o->password = strdup(optarg);
		if (!o->password)
			return cli_fail("recv", "out of memory");
		memset(optarg, 'x', strlen(optarg));
		o->password_argv = true;
		break;
	case 6: o->password_file = optarg; break;
	case 7: o->keep_dir = optarg; break;
	case 8: {
		uint64_t n;
		if (!parse_count(optarg, 1, &n) || n > SIZE_MAX)
			return cli_fail("recv", "--max-vehicles: expected a number >= 1, not '%s'", optarg);
		o->max_vehicles = (size_t)n;
		break;
	}
	case 13:
		if (basic_parse_size(optarg, &o->keep_budget) < 0)
			return cli_fail("recv", "--refused-max: expected a size like 64M, not '%s'", optarg);
		break;
	case 14:
	case 15: {
		uint64_t sec; /* whole seconds, as db prune --older-than takes them */
		if (basic_parse_duration(optarg, &sec) < 0 || !sec || sec > UINT64_C(100) * 366 * 86400)
			return cli_fail("recv", "%s: expected a duration like 3600, 12h or 30d (at most 100 years), "
			                "not '%s'", c == 14 ? "--max-age" : "--max-skew", optarg);
		*(c == 14 ? &o->limits.max_age_ns : &o->limits.max_skew_ns) = (int64_t)sec * 1000000000;
		break;
	}
	case 16:
	case 17: {
		uint64_t n;
		if (!parse_count(optarg, 1, &n) || n > 1000000)
			return cli_fail("recv", "%s: expected a number from 1 to 1000000, not '%s'",
			                c == 16 ? "--max-channels" : "--max-configs", optarg);
		*(c == 16 ? &o->limits.max_channels : &o->limits.max_configs_day) = (unsigned)n;
		break;
	}
	case 'q': o->quiet = true; break;
	case 'n':
		if (!parse_count(optarg, 1, &o->count))
			return cli_fail("recv", "--count: expected a number >= 1, not '%s'", optarg);
		break;
	case 't':
		if (!cli_parse_seconds(optarg, &o->duration))
			return cli_fail("recv", "--duration: expected seconds, not '%s'", optarg);
		break;
	case 11:
		if (strcmp(optarg, "time") && strcmp(optarg, "seq"))
			return cli_fail("recv", "--order: expected time or seq, not '%s'", optarg);
		o->seq_order = !strcmp(optarg, "seq");
		break;
	case 12:
		if (basic_parse_duration_ns(optarg, &o->window_ns) < 0)
			return cli_fail("recv", "--window: expected a duration like 500ms or 5s, not '%s'", optarg);
		break;
	case 'h': fputs(recv_usage, stdout); return 1;
	default: return cli_see_help("recv");
	}
	return 0;
}

static int recv_parse(int argc, char **argv, struct recv_opts *o)
{
	static const struct option opts[] = {
		{ "broker", required_argument, NULL, 'B' }, { "topic", required_argument, NULL, 18 },
		{ "client-id", required_argument, NULL, 19 }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "log", required_argument, NULL, 20 },
		{ "ca", required_argument, NULL, 1 }, { "cert", required_argument, NULL, 2 },
		{ "key", required_argument, NULL, 3 }, { "insecure", no_argument, NULL, 4 },
		{ "username", required_argument, NULL, 'u' }, { "password", required_argument, NULL, 5 },
		{ "password-file", required_argument, NULL, 6 }, { "refused", required_argument, NULL, 7 },
		{ "max-vehicles", required_argument, NULL, 8 }, { "db", required_argument, NULL, 21 },
		{ "share", required_argument, NULL, 9 }, { "repair-after", required_argument, NULL, 10 },
		{ "order", required_argument, NULL, 11 }, { "window", required_argument, NULL, 12 },
		{ "refused-max", required_argument, NULL, 13 }, { "max-age", required_argument, NULL, 14 },
		{ "max-skew", required_argument, NULL, 15 }, { "max-channels", required_argument, NULL, 16 },
		{ "max-configs", required_argument, NULL, 17 },
		{ "count", required_argument, NULL, 'n' }, { "quiet", no_argument, NULL, 'q' }, { "duration", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	bool broker = false;
	int c, r;

	o->fmt = REC_FORMAT_JSONL;
	o->text = true;
	o->repair_after = 60;
	o->window_ns = REC_ORDER_WINDOW_NS;
	while ((c = getopt_long(argc, argv, "B:f:o:u:n:t:qh", opts, NULL)) != -1) {
		if (c == 'B') {
			if (parse_broker(optarg, o) < 0)
				return cli_fail("recv", "--broker: expected mqtt://host[:port] or mqtts://..., not '%s'", optarg);
			broker = true;
		} else if ((r = recv_option(c, o)) != 0) {
			return r;
		}
	}
	if (optind < argc)
		return cli_fail("recv", "unexpected argument '%s'", argv[optind]);
	if (!broker)
		return cli_fail("recv", "--broker URL is required");
	if (o->db_url && !o->format_given)
		o->text = false;
	if (o->share && (!*o->share || strpbrk(o->share, "/+#")))
		return cli_fail("recv", "--share: a group name without '/', '+' or '#', not '%s'", o->share);
	if (o->share) {
		int k = snprintf(o->topic, sizeof(o->topic), "$share/%s/%s", o->share,
		                 o->cfg.topic ? o->cfg.topic : "railmon/+/data");
		if (k < 0 || (size_t)k >= sizeof(o->topic))
			return cli_fail("recv", "--share: the group name is too long");
		o->cfg.topic = o->topic;
	}
	r = recv_check(o);
	if (r)
		return r;
	if (!o->cfg.client_id) {
		char host[64] = "ground";
		gethostname(host, sizeof(host) - 1);
		snprintf(o->client_id, sizeof(o->client_id), "railmon-recv-%s", host);
		o->cfg.client_id = o->client_id;
	}
	return 0;
}

/* ---- running ---- */

int cli_cmd_recv(int argc, char **argv)
{
	struct recv_opts o = { 0 };
	grd_receiver_t *rc = NULL;
	int r = recv_parse(argc, argv, &o);
	struct grd_receiver_cfg cfg = {
		.recv = o.cfg, .max_vehicles = o.max_vehicles, .db_url = o.db_url, .repair_after = o.repair_after, .share = o.share,
		.out = stdout, .output = o.output, .text = o.text, .fmt = o.fmt,
		.window_ns = o.seq_order ? -1 : o.window_ns, .logdir = o.logdir, .keep_dir = o.keep_dir,
		.keep_budget = o.keep_budget, .limits = o.limits,
		.on_note = cli_recv_note, .note_ctx = &o.say, .stop = &cli_stop_requested,
	};
	struct cli_recv x = {
		.err = stderr, .host = o.cfg.host, .port = o.cfg.port, .topic = o.cfg.topic,
		.insecure = o.cfg.tls.insecure, .count = o.count, .duration_s = o.duration, .window_ns = o.window_ns,
		.quiet = o.quiet,
	};

	o.say.err = stderr;
	if (r != 0) {
		free(o.password);
		return r == 1 ? 0 : r; /* 1: --help */
	}
	r = cli_recv_open(&x, &cfg, &rc);
	if (r == 0) {
		cli_install_signals();
		r = cli_recv_run(&x, rc);
	}
	grd_receiver_free(rc);
	free(o.password);
	return r;
}
