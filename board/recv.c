/* SPDX-License-Identifier: MIT */
/*
 * recv.c - `railmon recv`: the ground side.  Subscribes to the vehicles'
 * data topic, decodes and checks every Batch (gaps, duplicates and
 * conflicts by sequence number per vehicle and log id), writes the
 * records as `export` does (record/format.h: JSON lines, CSV or candump,
 * plus the vehicle and log each came from), and/or appends the Batches
 * unchanged to a local railmon log per (vehicle, log id), so `export`,
 * `stat` and `replay` work on the ground exactly as on the train.  A Batch
 * that is refused, or that a ground log cannot take, is kept as a file in
 * the refused directory, counted and said: nothing is dropped without a
 * word (ground/logs.c); the text output in time order per Batch is
 * ground/text.c.  This file: the options, the output, the summary.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "cli.h"
#include "basic/parse.h"
#include "basic/timeparse.h"
#include "ground/ground.h"
#include "record/order.h"
#include "recv-say.h"
#include "basic/clock.h"

#define RECV_PASSWORD_MAX 1024

static const char recv_usage[] =
	"Usage: railmon recv --broker URL [OPTIONS]\n"
	"Receive railmon records from an MQTT broker (QoS 1, persistent session).\n\n"
	"  -B, --broker URL       mqtt://host[:port] or mqtts://host[:port]\n"
	"  -t, --topic TOPIC      subscription (default railmon/+/data)\n"
	"  -i, --client-id ID     session name (default railmon-recv-<host name>)\n"
	"  -f, --format FMT       jsonl (default), csv, candump (CAN frames only), influx\n"
	"                         (InfluxDB line protocol) or none;\n"
	"                         export's schema\n"
	"      --order ORDER      time (default: each vehicle log's records merged over\n"
	"                         --window across its Batches) or seq (as they come)\n"
	"      --window DUR       how far out of time order records may be (default 5s);\n"
	"                         a log's records wait at most that long\n"
	"  -o, --output FILE      records to FILE instead of stdout\n"
	"  -l, --log DIR          also append every Batch to a railmon log per vehicle and\n"
	"                         log id: DIR/<vehicle>/<log id>/ (`export --data DIR/<vehicle>`)\n"
	"      --refused DIR      keep refused Batches here (default DIR/refused with --log,\n"
	"                         else ./railmon-refused)\n"
	"  -d, --db URL           also commit every Batch to PostgreSQL (`railmon db init` first;\n"
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
	"      --ca FILE          CA certificate that signed the broker's (mqtts)\n"
	"      --cert FILE        client certificate (device / consumer identity)\n"
	"      --key FILE         its private key\n"
	"      --insecure         do not check the broker's host name (logged)\n"
	"  -u, --username NAME    MQTT user name; the password from --password-file FILE\n"
	"                         (first line) or the environment (RAILMON_MQTT_PASSWORD)\n"
	"      --password PASS    also works, but other users can see it (ps)\n"
	"  -n, --count N          stop after N new records\n"
	"  -T, --duration S       stop after S seconds (connected or not)\n"
	"  -h, --help             this text\n"
	"A summary (records, duplicates, missing, refused, per vehicle and log) goes to\n"
	"stderr at the end.  Exit status 1 if it never got connected.\n";

/* Each ground log holds two file descriptors: take what the system allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- options ---- */

struct recv_opts {
	struct upl_recv_cfg cfg;
	enum rec_format fmt;
	bool text;                /* --format other than none */
	FILE *out;
	uint64_t count;
	double duration;
	const char *output, *logdir, *keep_dir, *password_file, *db_url, *share;
	bool format_given;
	double repair_after;      /* gap repair's grace period, s; 0 = off */
	int64_t window_ns;        /* --order time's window */
	bool seq_order;           /* --order seq */
	grd_db_t *repair_db;      /* its own connection: g->db is the MQTT thread's */
	int64_t repair_next_ns;
	uint64_t repair_asked;
	char topic[256], gone_topic[256];
	char host[128], client_id[128], keep_default[PATH_MAX];
	char *password;           /* ours: from a file, the environment or argv */
	bool password_argv;
	struct recv_say say;
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

/* The first line of a file, without its line end. */
static int read_password(const char *path, char **ret)
{
	char buf[RECV_PASSWORD_MAX + 2];
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	n = strcspn(buf, "\r\n");
	if (n > RECV_PASSWORD_MAX)
		return -E2BIG;
	buf[n] = 0;
	if (!n)
		return -ENODATA;
	*ret = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *ret ? 0 : -ENOMEM;
}

/* --password, --password-file or RAILMON_MQTT_PASSWORD, in plain words. */
static int recv_password(struct recv_opts *o)
{
	const char *env = getenv("RAILMON_MQTT_PASSWORD");
	int r;

	if (o->password_argv && o->password_file)
		return cli_fail("recv", "--password and --password-file: give one");
	if (o->password_file) {
		r = read_password(o->password_file, &o->password);
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
	case 't': o->cfg.topic = optarg; break;
	case 'i': o->cfg.client_id = optarg; break;
	case 'd': o->db_url = optarg; break;
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
	case 'l': o->logdir = optarg; break;
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
		o->cfg.max_vehicles = (size_t)n;
		break;
	}
	case 'n':
		if (!parse_count(optarg, 1, &o->count))
			return cli_fail("recv", "--count: expected a number >= 1, not '%s'", optarg);
		break;
	case 'T':
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
	default: fputs(recv_usage, stderr); return 2;
	}
	return 0;
}

static int recv_parse(int argc, char **argv, struct recv_opts *o)
{
	static const struct option opts[] = {
		{ "broker", required_argument, NULL, 'B' }, { "topic", required_argument, NULL, 't' },
		{ "client-id", required_argument, NULL, 'i' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "log", required_argument, NULL, 'l' },
		{ "ca", required_argument, NULL, 1 }, { "cert", required_argument, NULL, 2 },
		{ "key", required_argument, NULL, 3 }, { "insecure", no_argument, NULL, 4 },
		{ "username", required_argument, NULL, 'u' }, { "password", required_argument, NULL, 5 },
		{ "password-file", required_argument, NULL, 6 }, { "refused", required_argument, NULL, 7 },
		{ "max-vehicles", required_argument, NULL, 8 }, { "db", required_argument, NULL, 'd' },
		{ "share", required_argument, NULL, 9 }, { "repair-after", required_argument, NULL, 10 },
		{ "order", required_argument, NULL, 11 }, { "window", required_argument, NULL, 12 },
		{ "count", required_argument, NULL, 'n' }, { "duration", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	bool broker = false;
	int c, r;

	o->fmt = REC_FORMAT_JSONL;
	o->text = true;
	o->repair_after = 60;
	o->window_ns = REC_ORDER_WINDOW_NS;
	while ((c = getopt_long(argc, argv, "B:t:i:f:o:l:u:n:T:d:h", opts, NULL)) != -1) {
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

struct recv_thread {
	upl_recv_t *r;
	int ret;
	atomic_bool done;
};

static void *recv_thread(void *p)
{
	struct recv_thread *t = p;

	t->ret = upl_recv_run(t->r);
	atomic_store(&t->done, true);
	return NULL;
}

/* Connection trouble, said once when it starts or changes, then at most
   every RECV_PRINT_EVERY_NS while it lasts. */
struct conn_report {
	uint64_t seen;
	enum upl_recv_fail fail;
	char text[sizeof(((struct upl_recv_stats *)0)->fail_text)];
	int64_t printed_ns;
	bool subscribed;
};

static void report_connection(struct conn_report *c, const struct upl_recv_stats *st, const struct recv_opts *o)
{
	uint64_t n = st->connect_failures + st->disconnects;
	bool changed = st->fail != c->fail || strcmp(st->fail_text, c->text) != 0;
	int64_t now = basic_mono_ns();

	if (st->subscribed && !c->subscribed)
		fprintf(stderr, "railmon recv: subscribed to %s on %s:%d\n", o->cfg.topic ? o->cfg.topic : "railmon/+/data",
		        o->cfg.host, o->cfg.port);
	c->subscribed = st->subscribed;
	if (n == c->seen || (!changed && now - c->printed_ns < RECV_PRINT_EVERY_NS))
		return;
	if (st->fail == UPL_RECV_FAIL_RESOLVE)
		fprintf(stderr, "railmon recv: cannot resolve the broker's host name '%s': %s", o->cfg.host, st->fail_text);
	else if (st->fail == UPL_RECV_FAIL_LOST)
		fprintf(stderr, "railmon recv: connection to %s:%d lost: %s", o->cfg.host, o->cfg.port, st->fail_text);
	else if (st->fail == UPL_RECV_FAIL_TLS)
		fprintf(stderr, "railmon recv: TLS with %s:%d failed: %s (check --ca, the broker's certificate and "
		        "its host name)", o->cfg.host, o->cfg.port, st->fail_text);
	else
		fprintf(stderr, "railmon recv: cannot connect to %s:%d: %s", o->cfg.host, o->cfg.port, st->fail_text);
	if (st->connect_failures > 1)
		fprintf(stderr, " (%" PRIu64 " attempts so far, retrying)\n", st->connect_failures);
	else
		fputs(" (retrying)\n", stderr);
	c->seen = n;
	c->fail = st->fail;
	snprintf(c->text, sizeof(c->text), "%s", st->fail_text);
	c->printed_ns = now;
}

static void recv_summary(upl_recv_t *r, const struct grd *g)
{
	struct upl_recv_stats st;
	struct upl_recv_log l;

	upl_recv_stats(r, &st);
	recv_print_totals(&st);
	recv_print_ground(g);
	recv_print_db(g);
	for (size_t i = 0; upl_recv_log(r, i, &l) == 0; i++) {
		const struct grd_log *gl = l.log_ctx;
		char id[2 * REC_LOG_ID_LEN + 1];

		if (!l.next_seq)
			continue;
		grd_log_id_hex(l.log_id, l.log_id_len, id);
		fprintf(stderr, "railmon recv: %s log %s: seq %" PRIu64 "..%" PRIu64 ", %" PRIu64 " missing, %" PRIu64
		        " duplicates, %" PRIu64 " conflicts", l.vehicle, id[0] ? id : "(none)", l.first_seq,
		        l.next_seq - 1, l.missing, l.duplicates, l.conflicts);
		if (gl)
			fprintf(stderr, "; ground log %s: %" PRIu64 " Batches stored, %" PRIu64 " not", gl->dir,
			        gl->stored, gl->not_stored);
		fputc('\n', stderr);
	}
}

/* Gap repair every half grace period (at least 1 s): a database that
   cannot be reached is said by recv_report_db() already. */
static void recv_repair(upl_recv_t *r, struct recv_opts *o)
{
	unsigned grace = (unsigned)(o->repair_after + 0.5);
	int64_t now = basic_mono_ns();
	uint64_t asked = 0;

	if (!o->repair_db || now < o->repair_next_ns)
		return;
	o->repair_next_ns = now + (int64_t)(o->repair_after > 2 ? o->repair_after / 2 : 1) * 1000000000;
	grd_repair_pass(o->repair_db, r, grace ? grace : 1, &asked);
	o->repair_asked += asked;
}

/* Until stop, --count or --duration; connected or not. */
static void recv_wait(upl_recv_t *r, struct recv_thread *th, struct recv_opts *o, struct grd *g,
                      bool *ret_connected)
{
	int64_t end = o->duration > 0 ? basic_mono_ns() + (int64_t)(o->duration * 1e9) : INT64_MAX;
	struct conn_report rep = { 0 };
	struct db_report dbr = { 0 };
	struct upl_recv_stats st;

	while (!board_stop_requested && !atomic_load(&th->done) && basic_mono_ns() < end) {
		recv_report_db(&dbr, g->db);
		recv_repair(r, o);
		/* Busy: a Batch is being committed, perhaps waiting for the database. */
		if (upl_recv_stats_try(r, &st) < 0) {
			usleep(100000);
			continue;
		}
		report_connection(&rep, &st, o);
		*ret_connected = *ret_connected || st.connects > 0;
		if (o->count && st.records >= o->count)
			break;
		if (o->count)
			upl_recv_wait_records(r, o->count, 100);
		else
			usleep(100000);
	}
	upl_recv_stats(r, &st);
	*ret_connected = *ret_connected || st.connects > 0;
	if (!*ret_connected && st.fail != UPL_RECV_FAIL_NONE)
		fprintf(stderr, "railmon recv: never connected to %s:%d: %s\n", o->cfg.host, o->cfg.port, st.fail_text);
	else if (!*ret_connected)
		fprintf(stderr, "railmon recv: never connected to %s:%d\n", o->cfg.host, o->cfg.port);
}

/* The database: its schema must be this railmon's; one that cannot be
   reached now is waited for when the first Batch comes. */
static int recv_db(struct recv_opts *o, struct grd *g)
{
	struct grd_db_cfg cfg = { .url = o->db_url, .stop = &board_stop_requested };
	int r;

	r = grd_db_new(&cfg, &g->db);
	if (r < 0)
		return cli_fail("recv", "--db: %s", r == -ENOTSUP ? GRD_DB_NOT_BUILT : "out of memory");
	o->cfg.on_status = grd_on_status; /* online/offline for the dashboard; kept while the database is away */
	r = grd_db_check(g->db);
	if (r == -ECONNREFUSED || r == -EIO) {
		fprintf(stderr, "railmon recv: database: %s (retrying when Batches come; none is acknowledged "
		        "before it is committed)\n", grd_db_error(g->db));
		return 0;
	}
	if (r < 0)
		return cli_fail("recv", "--db: %s: %s", grd_db_error(g->db),
		                r == -ENOENT ? "run `railmon db init` first" :
		                r == -ESTALE ? "run `railmon db migrate` first" : "use a newer railmon");
	if (o->repair_after > 0 && grd_db_new(&cfg, &o->repair_db) < 0)
		return cli_fail("recv", "out of memory");
	/* The vehicles' "gone" answers, shared like the data. */
	snprintf(o->gone_topic, sizeof(o->gone_topic), "%s%s%srailmon/+/gone", o->share ? "$share/" : "",
	         o->share ? o->share : "", o->share ? "/" : "");
	o->cfg.aux_topic = o->gone_topic;
	o->cfg.on_aux = grd_on_gone;
	return 0;
}

static int recv_setup(struct recv_opts *o, struct grd *g)
{
	o->out = stdout;
	if (o->db_url && recv_db(o, g))
		return 2;
	if (o->output && !(o->out = fopen(o->output, "we")))
		return cli_fail("recv", "%s: %s", o->output, strerror(errno));
	if (o->text) {
		g->out = o->out;
		g->fmt = o->fmt;
		if (grd_text_new(g, o->seq_order ? -1 : o->window_ns) < 0)
			return cli_fail("recv", "out of memory");
		o->cfg.on_record = grd_text_record;
		o->cfg.on_tick = o->seq_order ? NULL : grd_text_tick;
		rec_format_header(g->out, g->fmt);
	}
	if (o->logdir && mkdir(o->logdir, 0755) < 0 && errno != EEXIST)
		return cli_fail("recv", "--log %s: %s", o->logdir, strerror(errno));
	if (!o->keep_dir) {
		snprintf(o->keep_default, sizeof(o->keep_default), "%s/refused", o->logdir ? o->logdir : ".");
		o->keep_dir = o->logdir ? o->keep_default : "railmon-refused";
	}
	g->dir = o->logdir;
	g->keep_dir = o->keep_dir;
	g->on_note = recv_note;
	g->note_ctx = &o->say;
	o->cfg.on_refused = grd_refused;
	o->cfg.ctx = g;
	o->cfg.on_channels = o->text || g->db ? grd_channels : NULL; /* retained dictionaries: names, configs */
	o->cfg.on_idle = grd_idle; /* a database group that is due is committed between messages */
	if (o->logdir || g->db)
		o->cfg.on_batch = grd_batch;
	if (o->logdir)
		raise_fd_limit();
	if (o->cfg.tls.insecure)
		fprintf(stderr, "railmon recv: WARNING: --insecure: the broker's host name is NOT checked\n");
	return 0;
}

static void recv_opts_free(struct recv_opts *o)
{
	grd_db_free(o->repair_db);
	free(o->password);
	if (o->output && o->out && o->out != stdout)
		fclose(o->out);
}

int board_cmd_recv(int argc, char **argv)
{
	struct recv_opts o = { 0 };
	struct grd g = { 0 };
	struct recv_thread th = { 0 };
	bool connected = false;
	pthread_t tid;
	int rc;

	rc = recv_parse(argc, argv, &o);
	if (rc == 0)
		rc = recv_setup(&o, &g);
	if (rc != 0) {
		grd_free(&g); /* the database, if set up */
		grd_text_free(&g);
		recv_opts_free(&o);
		return rc == 1 ? 0 : rc; /* 1: --help */
	}
	rc = upl_recv_new(&o.cfg, &th.r);
	if (rc < 0) {
		fprintf(stderr, "railmon recv: %s\n", strerror(-rc));
		grd_free(&g);
		grd_text_free(&g);
		recv_opts_free(&o);
		return 1;
	}
	board_install_signals();
	pthread_create(&tid, NULL, recv_thread, &th);
	recv_wait(th.r, &th, &o, &g, &connected);
	/* A commit waiting for the database gives up now (grd_db_store()). */
	board_stop_requested = 1;
	upl_recv_stop(th.r);
	pthread_join(tid, NULL);
	if (th.ret < 0)
		fprintf(stderr, "railmon recv: cannot set up the MQTT client: %s\n", strerror(-th.ret));
	grd_db_flush(g.db, true); /* the last group: one try (stopping), else counted as not committed */
	if (g.text)
		grd_text_drain(&g); /* what the logs still hold */
	if (g.text && grd_text_late(&g))
		fprintf(stderr, "railmon recv: %" PRIu64 " records were more than the window (--window %.3gs) out of "
		        "time order and came out late\n", grd_text_late(&g), (double)o.window_ns / 1e9);
	grd_text_free(&g);
	if (o.out)
		fflush(o.out);
	recv_summary(th.r, &g);
	if (o.repair_db)
		fprintf(stderr, "railmon recv: gap repair: %" PRIu64 " ranges asked for again; %" PRIu64 " \"gone\" "
		        "ranges recorded, %" PRIu64 " answers refused\n", o.repair_asked, g.gone, g.gone_bad);
	if (g.status_bad || g.status_lost)
		fprintf(stderr, "railmon recv: status topic: %" PRIu64 " states, %" PRIu64 " malformed messages refused, %"
		        PRIu64 " not recorded\n", g.status_seen, g.status_bad, g.status_lost);
	grd_free(&g);
	upl_recv_free(th.r);
	recv_opts_free(&o);
	return th.ret < 0 || !connected ? 1 : 0;
}
