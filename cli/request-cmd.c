/* SPDX-License-Identifier: MIT */
/*
 * request-cmd.c - `railmon request`: the ground asks a vehicle for the full
 * records of a time range (issue 32).  Options and words only: the line and
 * its publication are uplink/request.h's; the vehicle's forwarder serves
 * it through gap repair's path.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "basic/hash.h"
#include "basic/name.h"
#include "basic/parse.h"
#include "basic/timeparse.h"
#include "ground/db.h"
#include "uplink/request.h"

static const char request_usage[] =
	"Usage: railmon request --broker URL --vehicle V --from T --to T [OPTIONS]\n"
	"Ask a vehicle for the full records of a time range (ground side).  Published on\n"
	"railmon/<vehicle>/request (QoS 1: a vehicle offline gets it when it connects);\n"
	"its forwarder sends the stored Batches of [from, to) whole, flagged historical,\n"
	"at its re-send rate, and answers \"gone\" for what retention deleted.  The same id\n"
	"is served once (the vehicle keeps the ids it served), so asking again is safe.\n\n"
	"  -B, --broker URL       mqtt://host[:port] or mqtts://host[:port]\n"
	"      --vehicle NAME     the vehicle (its name in the board file)\n"
	"      --from TIME        the range's start: ISO 8601 (2026-12-03T07:00:00Z) or Unix seconds\n"
	"      --to TIME          its end (not included)\n"
	"      --db URL           the ground's database (PostgreSQL): record the asked seq ranges\n"
	"                         of the vehicle's logs there, as gap repair does, so the receiver\n"
	"                         takes a \"gone\" answer to this request (without it, it is refused)\n"
	"      --channel NAME     only this channel's records (its name, or a DBC signal's name\n"
	"                         without its message); again for more, up to 8.  The events\n"
	"                         come too, not the raw frames; the range stays \"on board\"\n"
	"                         in completeness for the other channels\n"
	"      --id ID            the request's id, 1-32 of A-Z a-z 0-9 . _ - (default: made\n"
	"                         from the vehicle and the range, so the same range is one request)\n"
	"      --ca FILE          CA certificate that signed the broker's (mqtts)\n"
	"      --cert FILE        client certificate (the ground's identity)\n"
	"      --key FILE         its private key\n"
	"  -u, --username NAME    MQTT user name (the broker's ACL lets only the ground publish\n"
	"                         requests); the password from --password-file FILE or\n"
	"                         RAILMON_MQTT_PASSWORD\n"
	"      --password-file FILE  the MQTT password, its first line\n"
	"  -h, --help             this text\n"
	"\n"
	"Examples:\n"
	"  railmon request --broker mqtt://localhost --vehicle emu1 \\\n"
	"      --from 2026-12-03T07:00:00Z --to 2026-12-03T07:10:00Z\n";

/* The default id: the same vehicle, range and channels give the same id,
   so running the command twice asks once (and other channels of the same
   range are another request). */
static void default_id(const char *vehicle, const struct upl_request *req, char *out, size_t len)
{
	uint64_t h = basic_fnv1a_str(vehicle);

	h = basic_fnv1a(h, &req->from_ns, sizeof(req->from_ns));
	h = basic_fnv1a(h, &req->to_ns, sizeof(req->to_ns));
	for (unsigned i = 0; i < req->nchannels; i++)
		h = basic_fnv1a(h, req->channels[i], strlen(req->channels[i]) + 1);
	snprintf(out, len, "r%016" PRIx64, h);
}

/* --db: the seq ranges a "gone" answer to req may name, recorded as gap
   repair records its asks, and said.  0 or the exit code. */
static int record_asked(const char *url, const char *vehicle, const struct upl_request *req)
{
	struct grd_db_cfg cfg = { .url = url };
	struct grd_hole asked[8];
	grd_db_t *db;
	int r;

	if ((r = grd_db_new(&cfg, &db)) < 0)
		return cli_fail("request", "--db: %s", strerror(-r));
	r = grd_db_request_asked(db, vehicle, req->from_ns, req->to_ns, asked, sizeof(asked) / sizeof(*asked));
	if (r < 0) {
		fprintf(stderr, "railmon request: --db: %s\n",
		        r == -ENOTSUP ? GRD_DB_NOT_BUILT : *grd_db_error(db) ? grd_db_error(db) : strerror(-r));
		grd_db_free(db);
		return 1;
	}
	if (r == 0)
		printf("--db: the database holds no Batch of %s: no range recorded, so a \"gone\" answer to this "
		       "request will be refused\n", vehicle);
	for (int i = 0; i < r; i++)
		printf("--db: asked %s log %s seq %" PRIu64 "..%" PRIu64 " (a \"gone\" answer there is taken)\n",
		       vehicle, asked[i].log_id, asked[i].first, asked[i].last);
	grd_db_free(db);
	return 0;
}

int cli_cmd_request(int argc, char **argv)
{
	enum { OPT_ID = 256, OPT_CHANNEL, OPT_CA, OPT_CERT, OPT_KEY, OPT_PWFILE, OPT_DB, OPT_VEHICLE, OPT_FROM, OPT_TO };
	static const struct option opts[] = {
		{ "broker", required_argument, NULL, 'B' }, { "vehicle", required_argument, NULL, OPT_VEHICLE },
		{ "from", required_argument, NULL, OPT_FROM }, { "to", required_argument, NULL, OPT_TO },
		{ "id", required_argument, NULL, OPT_ID },  { "ca", required_argument, NULL, OPT_CA },
		{ "cert", required_argument, NULL, OPT_CERT }, { "key", required_argument, NULL, OPT_KEY },
		{ "username", required_argument, NULL, 'u' }, { "password-file", required_argument, NULL, OPT_PWFILE },
		{ "db", required_argument, NULL, OPT_DB }, { "channel", required_argument, NULL, OPT_CHANNEL },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *broker = NULL, *from = NULL, *to = NULL, *id = NULL, *pwfile = NULL, *env, *db_url = NULL;
	struct upl_request_pub pub = { 0 };
	struct upl_request req = { .id = "" };
	char host[256], why[256], *password = NULL;
	uint16_t port;
	bool tls;
	int c, r;

	while ((c = getopt_long(argc, argv, "B:u:h", opts, NULL)) != -1) {
		switch (c) {
		case 'B': broker = optarg; break;
		case OPT_VEHICLE: pub.vehicle = optarg; break;
		case OPT_FROM: from = optarg; break;
		case OPT_TO: to = optarg; break;
		case 'u': pub.username = optarg; break;
		case OPT_ID: id = optarg; break;
		case OPT_CA: pub.tls.ca_file = optarg; break;
		case OPT_CERT: pub.tls.cert_file = optarg; break;
		case OPT_KEY: pub.tls.key_file = optarg; break;
		case OPT_PWFILE: pwfile = optarg; break;
		case OPT_DB: db_url = optarg; break;
		case OPT_CHANNEL:
			if (req.nchannels == UPL_REQUEST_CHANNELS_MAX)
				return cli_fail("request", "--channel: at most %d", UPL_REQUEST_CHANNELS_MAX);
			if (!upl_request_channel_ok(optarg, strlen(optarg)))
				return cli_fail("request", "--channel '%s': 1-%d characters of ASCII without blanks", optarg,
				                UPL_REQUEST_CHANNEL_NAME_MAX);
			for (unsigned i = 0; i < req.nchannels; i++)
				if (!strcmp(req.channels[i], optarg))
					return cli_fail("request", "--channel '%s' given twice", optarg);
			snprintf(req.channels[req.nchannels++], sizeof(req.channels[0]), "%s", optarg);
			break;
		case 'h': fputs(request_usage, stdout); return 0;
		default: return cli_see_help("request");
		}
	}
	if (optind < argc)
		return cli_fail("request", "unexpected argument '%s'", argv[optind]);
	if (!broker || !pub.vehicle || !from || !to)
		return cli_fail("request", "--broker, --vehicle, --from and --to are all needed");
	if (basic_parse_mqtt_url(broker, host, sizeof(host), &port, &tls) < 0)
		return cli_fail("request", "--broker '%s': not mqtt://host[:port] or mqtts://host[:port]", broker);
	if (!basic_vehicle_name_ok(pub.vehicle))
		return cli_fail("request", "--vehicle '%s': 1-%d characters of A-Z a-z 0-9 . _ - (not . or ..)", pub.vehicle,
		                BASIC_VEHICLE_NAME_MAX);
	if (basic_parse_time(from, &req.from_ns) < 0 || req.from_ns < 0)
		return cli_fail("request", "--from '%s': not a time (2026-12-03T07:00:00Z or Unix seconds)", from);
	if (basic_parse_time(to, &req.to_ns) < 0)
		return cli_fail("request", "--to '%s': not a time (2026-12-03T07:00:00Z or Unix seconds)", to);
	if (req.to_ns <= req.from_ns)
		return cli_fail("request", "--to must be after --from");
	if (id && (strlen(id) > UPL_REQUEST_ID_MAX || !basic_vehicle_name_ok(id)))
		return cli_fail("request", "--id '%s': 1-%d characters of A-Z a-z 0-9 . _ - (not . or ..)", id,
		                UPL_REQUEST_ID_MAX);
	if (id)
		snprintf(req.id, sizeof(req.id), "%s", id);
	else
		default_id(pub.vehicle, &req, req.id, sizeof(req.id));
	if (tls && !pub.tls.ca_file)
		return cli_fail("request", "mqtts needs --ca FILE (the CA that signed the broker's certificate)");
	if (!pub.tls.cert_file != !pub.tls.key_file)
		return cli_fail("request", "--cert and --key go together");
	if (pwfile) {
		r = cli_read_password(pwfile, &password);
		if (r < 0)
			return cli_fail("request", "--password-file %s: %s", pwfile,
			                r == -ENODATA ? "empty first line" :
			                r == -E2BIG ? "the first line is over 1024 bytes" : strerror(-r));
	} else if ((env = getenv("RAILMON_MQTT_PASSWORD")) && *env && !(password = strdup(env))) {
		return cli_fail("request", "out of memory");
	}
	if (password && !pub.username) {
		free(password);
		return cli_fail("request", "a password (%s) needs --username",
		                pwfile ? "--password-file" : "RAILMON_MQTT_PASSWORD");
	}
	/* before publishing: an answer may come at once */
	if (db_url && (r = record_asked(db_url, pub.vehicle, &req)) != 0) {
		if (password) {
			explicit_bzero(password, strlen(password));
			free(password);
		}
		return r;
	}
	pub.host = host;
	pub.port = port ? port : tls ? 8883 : 1883;
	pub.use_tls = tls;
	pub.password = password;
	r = upl_request_publish(&pub, &req, why, sizeof(why));
	if (password) {
		explicit_bzero(password, strlen(password));
		free(password);
	}
	if (r < 0) {
		fprintf(stderr, "railmon request: %s: %s\n", broker, why);
		return 1;
	}
	printf("request %s: %s [%s, %s)%s published on railmon/%s/request; its Batches come to the ground as "
	       "historical%s\n", req.id, pub.vehicle, from, to, req.nchannels ? " of the channels named" : "",
	       pub.vehicle, req.nchannels ? ", reduced to those channels and the events" : "");
	return 0;
}
