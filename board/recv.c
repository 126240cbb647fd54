/* SPDX-License-Identifier: MIT */
/*
 * recv.c - `railmon recv`: the ground side.  Subscribes to the vehicles'
 * data topic, decodes and checks every Batch (gaps and duplicates by
 * sequence number per vehicle), writes JSON lines or CSV, and/or appends
 * the Batches unchanged to a local railmon log per vehicle, so `export`,
 * `stat` and `replay` work on the ground exactly as on the train.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "cli.h"
#include "storage/stor.h"
#include "uplink/recv.h"

#define RECV_VEHICLES_MAX 256

struct ground_log {
	char vehicle[64];
	stor_log_t *log;
};

struct ground {
	const char *dir;                 /* one log per vehicle below it */
	struct ground_log logs[RECV_VEHICLES_MAX];
	size_t nlogs;
	uint64_t appended, refused;
};

static const char recv_usage[] =
	"Usage: railmon recv --broker URL [OPTIONS]\n"
	"Receive railmon records from an MQTT broker (QoS 1, persistent session).\n\n"
	"  -B, --broker URL       mqtt://host[:port] or mqtts://host[:port]\n"
	"  -t, --topic TOPIC      subscription (default railmon/+/data)\n"
	"  -i, --client-id ID     session name (default railmon-recv-<host name>)\n"
	"  -f, --format FMT       jsonl (default), csv, or none\n"
	"  -o, --output FILE      records to FILE instead of stdout\n"
	"  -l, --log DIR          also append every Batch to DIR/<vehicle>/ (a railmon log)\n"
	"      --ca FILE          CA certificate that signed the broker's (mqtts)\n"
	"      --cert FILE        client certificate (device / consumer identity)\n"
	"      --key FILE         its private key\n"
	"      --insecure         do not check the broker's host name (logged)\n"
	"  -u, --username NAME    --password PASS: MQTT credentials\n"
	"  -n, --count N          stop after N new records\n"
	"  -T, --duration S       stop after S seconds\n"
	"  -h, --help             this text\n"
	"A summary (records, duplicates, missing, per vehicle) goes to stderr at the end.\n";

static stor_log_t *ground_log_for(struct ground *g, const char *vehicle)
{
	/* Every Batch durable as it arrives: the ground has no sync window to
	   lose, and batches come seconds apart per vehicle. */
	struct stor_log_cfg lc = { .vehicle = vehicle, .sync_window_ms = 0 };
	char dir[4096];
	size_t i;

	for (i = 0; i < g->nlogs; i++)
		if (!strcmp(g->logs[i].vehicle, vehicle))
			return g->logs[i].log;
	if (g->nlogs >= RECV_VEHICLES_MAX || strlen(vehicle) >= sizeof(g->logs[0].vehicle) || !*vehicle ||
	    strchr(vehicle, '/') || vehicle[0] == '.')
		return NULL; /* a vehicle id no board file would accept */
	snprintf(dir, sizeof(dir), "%s/%s", g->dir, vehicle);
	lc.dir = dir;
	if (stor_log_open(&lc, &g->logs[g->nlogs].log) < 0)
		return NULL;
	snprintf(g->logs[g->nlogs].vehicle, sizeof(g->logs[0].vehicle), "%s", vehicle);
	return g->logs[g->nlogs++].log;
}

/* recv's callback: a Batch with new records, payload as received. */
static int ground_append(void *ctx, const struct upl_batch_info *info, const void *payload, size_t len)
{
	struct ground *g = ctx;
	stor_log_t *log = ground_log_for(g, info->vehicle);
	struct stor_rec rec = { .first_seq = info->first_seq, .count = info->count, .payload = payload,
	                        .len = (uint32_t)len };
	upl_batch_t *b;
	int r;

	if (!log || !info->count) {
		g->refused++;
		return log ? 0 : -EINVAL;
	}
	/* Behind: a partial re-send (its new records are in the text output;
	   the log keeps whole Batches only).  Ahead: records that never came
	   are marked as a gap, so the log says so. */
	if (info->first_seq < stor_log_next_seq(log)) {
		g->refused++;
		return -EALREADY;
	}
	r = stor_log_skip(log, info->first_seq);
	if (r < 0)
		return r;
	r = upl_batch_decode(payload, len, &b);
	if (r < 0)
		return r;
	rec.t_first_ns = INT64_MAX;
	rec.t_last_ns = INT64_MIN;
	for (uint32_t i = 0; i < info->count; i++) {
		struct acq_item it;
		upl_batch_item(b, i, &it);
		rec.t_first_ns = it.t_ns < rec.t_first_ns ? it.t_ns : rec.t_first_ns;
		rec.t_last_ns = it.t_ns > rec.t_last_ns ? it.t_ns : rec.t_last_ns;
	}
	upl_batch_free(b);
	r = stor_log_append(log, &rec);
	if (r == 0)
		g->appended++;
	stor_log_tick(log);
	return r;
}

struct recv_opts {
	struct upl_recv_cfg cfg;
	uint64_t count;
	double duration;
	const char *output, *logdir;
	char host[128], client_id[128];
};

/* mqtt://host[:port] or mqtts://host[:port] */
static int parse_broker(const char *url, struct recv_opts *o)
{
	const char *h = url, *colon;

	o->cfg.use_tls = !strncmp(h, "mqtts://", 8);
	if (o->cfg.use_tls)
		h += 8;
	else if (!strncmp(h, "mqtt://", 7))
		h += 7;
	else if (strstr(h, "://"))
		return -EINVAL;
	o->cfg.port = o->cfg.use_tls ? 8883 : 1883;
	colon = strrchr(h, ':');
	if (colon) {
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end || p < 1 || p > 65535)
			return -EINVAL;
		o->cfg.port = (int)p;
	}
	snprintf(o->host, sizeof(o->host), "%.*s", (int)(colon ? colon - h : (long)strlen(h)), h);
	o->cfg.host = o->host;
	return o->host[0] ? 0 : -EINVAL;
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
		{ "count", required_argument, NULL, 'n' }, { "duration", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	bool broker = false;
	int c;

	o->cfg.format = UPL_RECV_JSONL;
	while ((c = getopt_long(argc, argv, "B:t:i:f:o:l:u:n:T:h", opts, NULL)) != -1) {
		switch (c) {
		case 'B':
			if (parse_broker(optarg, o) < 0)
				return cli_fail("recv", "--broker: expected mqtt://host[:port] or mqtts://..., not '%s'", optarg);
			broker = true;
			break;
		case 't': o->cfg.topic = optarg; break;
		case 'i': o->cfg.client_id = optarg; break;
		case 'f':
			if (!strcmp(optarg, "jsonl") || !strcmp(optarg, "json"))
				o->cfg.format = UPL_RECV_JSONL;
			else if (!strcmp(optarg, "csv"))
				o->cfg.format = UPL_RECV_CSV;
			else if (!strcmp(optarg, "none"))
				o->cfg.format = UPL_RECV_NONE;
			else
				return cli_fail("recv", "--format: expected jsonl, csv or none, not '%s'", optarg);
			break;
		case 'o': o->output = optarg; break;
		case 'l': o->logdir = optarg; break;
		case 1: o->cfg.tls.ca_file = optarg; break;
		case 2: o->cfg.tls.cert_file = optarg; break;
		case 3: o->cfg.tls.key_file = optarg; break;
		case 4: o->cfg.tls.insecure = true; break;
		case 'u': o->cfg.username = optarg; break;
		case 5: o->cfg.password = optarg; break;
		case 'n': o->count = strtoull(optarg, NULL, 10); break;
		case 'T': o->duration = strtod(optarg, NULL); break;
		case 'h': fputs(recv_usage, stdout); return 1;
		default: fputs(recv_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("recv", "unexpected argument '%s'", argv[optind]);
	if (!broker)
		return cli_fail("recv", "--broker URL is required");
	if ((o->cfg.tls.ca_file || o->cfg.tls.cert_file) && !o->cfg.use_tls)
		return cli_fail("recv", "--ca/--cert need an mqtts:// broker");
	if (!o->cfg.client_id) {
		char host[64] = "ground";
		gethostname(host, sizeof(host) - 1);
		snprintf(o->client_id, sizeof(o->client_id), "railmon-recv-%s", host);
		o->cfg.client_id = o->client_id;
	}
	return 0;
}

static void *recv_thread(void *p)
{
	upl_recv_run(p);
	return NULL;
}

static void recv_summary(upl_recv_t *r, const struct ground *g)
{
	struct upl_recv_stats st;

	upl_recv_stats(r, &st);
	fprintf(stderr, "railmon recv: %" PRIu64 " messages, %" PRIu64 " records, %" PRIu64 " duplicates skipped, %"
	        PRIu64 " missing, %" PRIu64 " malformed payloads, %" PRIu64 " vehicles\n", st.messages, st.records,
	        st.duplicates, st.missing, st.bad, st.vehicles);
	for (size_t i = 0; i < g->nlogs; i++) {
		struct upl_recv_vehicle v;
		if (upl_recv_vehicle(r, g->logs[i].vehicle, &v) == 0)
			fprintf(stderr, "railmon recv: %s: seq %" PRIu64 "..%" PRIu64 ", %" PRIu64 " missing; log %s/%s\n",
			        g->logs[i].vehicle, v.first_seq, v.next_seq - 1, v.missing, g->dir, g->logs[i].vehicle);
	}
}

int board_cmd_recv(int argc, char **argv)
{
	struct recv_opts o = { 0 };
	struct ground *g = NULL;
	upl_recv_t *r = NULL;
	pthread_t th;
	int64_t t0;
	int rc;

	rc = recv_parse(argc, argv, &o);
	if (rc)
		return rc == 1 ? 0 : rc;
	o.cfg.out = stdout;
	if (o.output && !(o.cfg.out = fopen(o.output, "we")))
		return cli_fail("recv", "%s: %s", o.output, strerror(errno));
	if (o.logdir) {
		if (mkdir(o.logdir, 0755) < 0 && errno != EEXIST)
			return cli_fail("recv", "--log %s: %s", o.logdir, strerror(errno));
		g = calloc(1, sizeof(*g));
		if (!g)
			return cli_fail("recv", "out of memory");
		g->dir = o.logdir;
		o.cfg.on_batch = ground_append;
		o.cfg.ctx = g;
	}
	if (o.cfg.tls.insecure)
		fprintf(stderr, "railmon recv: WARNING: --insecure: the broker's host name is NOT checked\n");
	rc = upl_recv_new(&o.cfg, &r);
	if (rc < 0) {
		fprintf(stderr, "railmon recv: %s\n", strerror(-rc));
		free(g);
		return 1;
	}
	board_install_signals();
	pthread_create(&th, NULL, recv_thread, r);
	t0 = acq_mono_ns();
	/* Tell whoever waits on us (a test, a supervisor) when records can flow. */
	while (!board_stop_requested && upl_recv_wait_subscribed(r, 200) < 0)
		;
	if (!board_stop_requested)
		fprintf(stderr, "railmon recv: subscribed to %s on %s:%d\n", o.cfg.topic ? o.cfg.topic : "railmon/+/data",
		        o.cfg.host, o.cfg.port);
	while (!board_stop_requested) {
		struct upl_recv_stats st;
		if (o.duration > 0 && acq_mono_ns() - t0 >= (int64_t)(o.duration * 1e9))
			break;
		if (o.count && upl_recv_wait_records(r, o.count, 100) == 0)
			break;
		if (!o.count)
			usleep(100000);
		upl_recv_stats(r, &st);
	}
	upl_recv_stop(r);
	pthread_join(th, NULL);
	fflush(o.cfg.out);
	recv_summary(r, g ? g : &(struct ground){ 0 });
	if (g) {
		for (size_t i = 0; i < g->nlogs; i++)
			stor_log_free(g->logs[i].log); /* syncs */
		free(g);
	}
	upl_recv_free(r);
	if (o.output)
		fclose(o.cfg.out);
	return 0;
}
