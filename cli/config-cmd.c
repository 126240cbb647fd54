/* SPDX-License-Identifier: MIT */
/*
 * config-cmd.c - `railmon config push`: a board file and the DBC/XML files
 * it names, checked as `check` does, signed with the ground key
 * (evidence/remote-config.h, docs/remote-config.md) and published retained
 * at QoS 1 on railmon/<vehicle>/config (uplink/publish.h), or written to a
 * file (--output).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "basic/clock.h"
#include "basic/name.h"
#include "basic/parse.h"
#include "cli/check-plan.h"
#include "conf/config.h"
#include "evidence/remote-config.h"
#include "pipeline/evidence.h"
#include "uplink/publish.h"

static const char config_usage[] =
	"Usage: railmon config push --vehicle V --board FILE --key FILE [OPTIONS]\n"
	"Send a vehicle a new board file, signed (docs/remote-config.md).  The board file\n"
	"and the DBC and XML files it names are checked as `railmon check` does, signed with\n"
	"the ground key and published retained (QoS 1) on railmon/<vehicle>/config; the\n"
	"vehicle takes it only if it is signed by the ground key it holds and its version is\n"
	"above the one it runs.\n\n"
	"Commands:\n"
	"  push     sign and publish a board file (the only one)\n\n"
	"      --vehicle V         the vehicle (the board file's [board] vehicle)\n"
	"  -b, --board FILE        the board file; the files it names must be below its directory\n"
	"      --key FILE          the ground's secret key (`railmon keygen`; the vehicle holds\n"
	"                          its public half: [uplink] config_pubkey)\n"
	"      --version N         the configuration's version, above the vehicle's current one\n"
	"                          (default: the time now in milliseconds since 1970; the push\n"
	"                          waits for that millisecond to pass, so each is above the last)\n"
	"      --by-hash           name the DBC and XML files by their content hash instead of\n"
	"                          sending them: they are on the vehicle already\n"
	"  -o, --output FILE       write the signed message to FILE instead of publishing it\n"
	"  -B, --broker URL        mqtt://host[:port] or mqtts://host[:port]\n"
	"      --client-id ID      MQTT client id (default: one the library makes)\n"
	"      --ca FILE           CA certificate that signed the broker's (mqtts)\n"
	"      --cert FILE         client certificate\n"
	"      --cert-key FILE     its private key (--key is the ground's signing key)\n"
	"      --insecure          do not check the broker's host name\n"
	"  -u, --username NAME     MQTT user name; the password from --password-file FILE\n"
	"                          (first line) or the environment (RAILMON_MQTT_PASSWORD)\n"
	"  -h, --help              this text\n"
	"\n"
	"Examples:\n"
	"  railmon keygen --output ground.key\n"
	"  railmon config push --vehicle TRAIN-042 --board TRAIN-042.ini --key ground.key \\\n"
	"      --broker mqtts://broker:8883 --ca ca.pem --cert ground.pem --cert-key ground-tls.key\n";

struct push_opts {
	const char *vehicle, *board, *key, *output, *password_file;
	uint64_t version;
	bool by_hash;
	struct upl_pub_cfg pub;
	char host[128];
	char *password;
};

/* The file contents the message points into: the caller frees each. */
struct push_files {
	uint8_t *data[EVD_RCONF_FILES_MAX];
	char name[EVD_RCONF_FILES_MAX][EVD_RCONF_NAME_MAX + 1];
};

static int read_all(const char *path, uint8_t **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		return -errno;
	do {
		if (len == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 65536;
			if (cap > EVD_RCONF_MAX || !(nb = realloc(buf, cap + 1))) {
				free(buf);
				fclose(f);
				return cap > EVD_RCONF_MAX ? -EFBIG : -ENOMEM;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The name the vehicle writes path under: relative to the board file's
   directory (conf resolved it as dir/value), and below it. */
static int relative_name(const char *board, const char *path, char *buf, size_t len)
{
	const char *slash = strrchr(board, '/');
	size_t dirlen = slash ? (size_t)(slash - board) : 0;
	const char *rel = path;

	if (dirlen && !strncmp(path, board, dirlen) && path[dirlen] == '/')
		rel = path + dirlen + 1;
	while (!strncmp(rel, "./", 2))
		rel += 2;
	if (rel[0] == '/' || !strcmp(rel, "..") || !strncmp(rel, "../", 3) || strstr(rel, "/../") ||
	    strlen(rel) > EVD_RCONF_NAME_MAX)
		return -EXDEV;
	snprintf(buf, len, "%s", rel);
	return 0;
}

/* One file of the message: its bytes, or with by_hash its content hash. */
static int add_file(struct evd_rconf *m, struct push_files *pf, const char *board, const char *path, bool by_hash)
{
	struct evd_rconf_file *f = &m->files[m->nfiles];
	size_t i = m->nfiles, len = 0;
	int r;

	if (i >= EVD_RCONF_FILES_MAX) {
		fprintf(stderr, "railmon config: %s: more than %d files to send\n", board, EVD_RCONF_FILES_MAX);
		return 1;
	}
	if (i == 0) {
		const char *base = strrchr(board, '/');

		snprintf(pf->name[0], sizeof(pf->name[0]), "%s", base ? base + 1 : board);
	} else if (relative_name(board, path, pf->name[i], sizeof(pf->name[i])) < 0) {
		fprintf(stderr, "railmon config: %s is not below the board file's directory: the vehicle writes the "
		        "files it is sent next to its board file, so name it by a relative path there\n", path);
		return 1;
	}
	for (size_t k = 1; k < i; k++)
		if (!strcmp(pf->name[k], pf->name[i]))
			return 0; /* two buses name one DBC: sent once (the vehicle installs each name once) */
	if ((r = read_all(path, &pf->data[i], &len)) < 0) {
		fprintf(stderr, "railmon config: %s: %s\n", path,
		        r == -EFBIG ? "over the 4 MiB a configuration message holds" : strerror(-r));
		return 1;
	}
	f->name = pf->name[i];
	if (i > 0 && by_hash) {
		f->kind = EVD_RCONF_HASH;
		evd_rconf_hash(pf->data[i], len, f->hash);
	} else {
		f->kind = EVD_RCONF_CONTENT;
		f->data = pf->data[i];
		f->len = len;
	}
	m->nfiles++;
	return 0;
}

/*
 * The board as `check` sees it: its plan kept, and said only if anything
 * is wrong.  The vehicle's own Seal key ([board] key) is a file on the
 * vehicle, not here: a key that cannot be read here is the vehicle's to
 * check (it runs this same check before it applies the file).
 */
static int push_check(const struct conf_board *cfg)
{
	struct cli_check_key key = { 0 };
	uint8_t secret[EVD_SECRET_LEN];
	char err[CONF_ERR_MAX], *text = NULL, *etext = NULL;
	size_t tl = 0, el = 0;
	FILE *out = open_memstream(&text, &tl), *errf = open_memstream(&etext, &el);
	int r = 1;

	if (out && errf) {
		key.r = pl_evidence_key(cfg, secret, err, sizeof(err));
		key.err = err;
		if (key.r > 0)
			evd_key_public_of(secret, key.public_key);
		else
			key.r = 0;
		explicit_bzero(secret, sizeof(secret));
		r = cli_check_board(out, errf, cfg, NULL, &key);
	}
	if (out)
		fclose(out);
	if (errf)
		fclose(errf);
	if (r)
		fprintf(stderr, "%s%srailmon config: %s fails `railmon check` (above): not sent\n", text ? text : "",
		        etext ? etext : "", cfg->path);
	free(text);
	free(etext);
	return r;
}

/* The message of o's board, signed; 0 or the exit code (said). */
static int push_message(const struct push_opts *o, uint8_t **ret_buf, size_t *ret_len)
{
	static struct evd_rconf m;
	struct push_files pf = { 0 };
	struct conf_board *cfg = NULL;
	uint8_t secret[EVD_SECRET_LEN];
	int r;

	if ((r = cli_load_board("config", o->board, &cfg)) != 0)
		return r;
	if (strcmp(cfg->vehicle, o->vehicle)) {
		fprintf(stderr, "railmon config: %s is the board of vehicle %s, not %s\n", o->board, cfg->vehicle,
		        o->vehicle);
		r = 1;
		goto out;
	}
	if ((r = push_check(cfg)) != 0)
		goto out;
	memset(&m, 0, sizeof(m));
	m.version = o->version;
	snprintf(m.vehicle, sizeof(m.vehicle), "%s", o->vehicle);
	r = add_file(&m, &pf, o->board, o->board, false);
	for (size_t i = 0; !r && i < cfg->nbuses; i++) {
		const struct bus_cfg *b = &cfg->buses[i];

		if (b->kind == BUS_KIND_CAN && b->can.dbc[0])
			r = add_file(&m, &pf, o->board, b->can.dbc, o->by_hash);
		else if (b->kind == BUS_KIND_TRDP && b->trdp.xml[0])
			r = add_file(&m, &pf, o->board, b->trdp.xml, o->by_hash);
	}
	if (r)
		goto out;
	if ((r = evd_key_load_secret(o->key, secret)) < 0) {
		fprintf(stderr, "railmon config: --key %s: %s\n", o->key,
		        r == -EPERM ? "readable or writable by others (chmod 600 it)" :
		        r == -EBADMSG ? "not a railmon secret key (`railmon keygen` makes one)" : strerror(-r));
		r = 1;
		goto out;
	}
	r = evd_rconf_encode(&m, secret, ret_buf, ret_len);
	explicit_bzero(secret, sizeof(secret));
	if (r < 0)
		fprintf(stderr, "railmon config: %s\n", r == -EMSGSIZE ? "the board file and its files are over "
		        "the 4 MiB a configuration message holds (--by-hash sends the DBC and XML files as hashes)" :
		        strerror(-r));
	r = r < 0;
out:
	for (size_t i = 0; i < EVD_RCONF_FILES_MAX; i++)
		free(pf.data[i]);
	conf_free(cfg);
	return r;
}

static int write_output(const char *path, const uint8_t *buf, size_t len)
{
	FILE *f = fopen(path, "we");

	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "railmon config: --output %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return 1;
	}
	return 0;
}

static int push_publish(const struct push_opts *o, const uint8_t *buf, size_t len)
{
	char topic[128], why[256];
	int r;

	snprintf(topic, sizeof(topic), "railmon/%s/config", o->vehicle);
	r = upl_publish_once(&o->pub, topic, buf, len, true, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "railmon config: %s:%d: %s\n", o->pub.host, o->pub.port, why);
		return 1;
	}
	printf("railmon config: version %" PRIu64 " for %s published on %s (%zu bytes, retained)\n", o->version,
	       o->vehicle, topic, len);
	return 0;
}

/* What the options lack or contradict, said. */
static int push_validate(struct push_opts *o)
{
	const struct upl_tls_cfg *t = &o->pub.tls;
	const char *env = getenv("RAILMON_MQTT_PASSWORD");
	int r;

	if (!o->vehicle || !o->board || !o->key)
		return cli_fail("config", "push needs --vehicle V, --board FILE and --key FILE");
	if (!basic_vehicle_name_ok(o->vehicle))
		return cli_fail("config", "--vehicle '%s': a vehicle name is letters, digits, '-', '_' and '.'",
		                o->vehicle);
	if (!o->output == !o->pub.host)
		return cli_fail("config", "give --broker URL to publish, or --output FILE to write the message");
	if (!o->pub.use_tls && (t->ca_file || t->cert_file || t->key_file || t->insecure))
		return cli_fail("config", "--ca, --cert, --cert-key and --insecure are for TLS: use an mqtts:// broker");
	if (o->pub.use_tls && !t->ca_file)
		return cli_fail("config", "mqtts:// needs --ca FILE: the CA certificate that signed the broker's");
	if (!t->cert_file != !t->key_file)
		return cli_fail("config", "--cert and --cert-key go together");
	if (o->password_file) {
		if ((r = cli_read_password(o->password_file, &o->password)) < 0)
			return cli_fail("config", "--password-file %s: %s", o->password_file,
			                r == -ENODATA ? "empty first line" : strerror(-r));
	} else if (env && *env && !(o->password = strdup(env))) {
		return cli_fail("config", "out of memory");
	}
	if (o->password && !o->pub.username)
		return cli_fail("config", "a password needs --username");
	o->pub.password = o->password;
	return 0;
}

/* Without --version: the time now in ms since 1970, and this push waits
   until that millisecond has passed, so the next push (a script's, in the
   same second: seconds made it "an old version" on the vehicle) reads a
   later one: strictly increasing while the clock does not step back. */
static uint64_t default_version(void)
{
	int64_t ms = basic_realtime_ns() / 1000000;

	basic_sleep_until(CLOCK_REALTIME, (ms + 1) * 1000000);
	return (uint64_t)ms;
}

static int push_option(int c, struct push_opts *o)
{
	uint16_t port;
	char *end;

	switch (c) {
	case 1: o->vehicle = optarg; break;
	case 'b': o->board = optarg; break;
	case 2: o->key = optarg; break;
	case 3:
		errno = 0;
		o->version = strtoull(optarg, &end, 10);
		/* at most bigint's: the ground's database keeps the vehicle's
		   outcome (vehicle_config_status.version) */
		if (end == optarg || *end || errno || optarg[0] == '-' || !o->version || o->version > (uint64_t)INT64_MAX)
			return cli_fail("config", "--version: expected a number from 1 to %" PRId64 ", not '%s'", INT64_MAX,
			                optarg);
		break;
	case 4: o->by_hash = true; break;
	case 'o': o->output = optarg; break;
	case 'B':
		if (basic_parse_mqtt_url(optarg, o->host, sizeof(o->host), &port, &o->pub.use_tls) < 0)
			return cli_fail("config", "--broker: expected mqtt://host[:port] or mqtts://host[:port], not '%s'",
			                optarg);
		o->pub.host = o->host;
		o->pub.port = port ? port : o->pub.use_tls ? 8883 : 1883;
		break;
	case 5: o->pub.client_id = optarg; break;
	case 6: o->pub.tls.ca_file = optarg; break;
	case 7: o->pub.tls.cert_file = optarg; break;
	case 8: o->pub.tls.key_file = optarg; break;
	case 9: o->pub.tls.insecure = true; break;
	case 'u': o->pub.username = optarg; break;
	case 10: o->password_file = optarg; break;
	case 'h': fputs(config_usage, stdout); return -1;
	default: return cli_see_help("config");
	}
	return 0;
}

static int config_push(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "vehicle", required_argument, NULL, 1 }, { "board", required_argument, NULL, 'b' },
		{ "key", required_argument, NULL, 2 }, { "version", required_argument, NULL, 3 },
		{ "by-hash", no_argument, NULL, 4 }, { "output", required_argument, NULL, 'o' },
		{ "broker", required_argument, NULL, 'B' }, { "client-id", required_argument, NULL, 5 },
		{ "ca", required_argument, NULL, 6 }, { "cert", required_argument, NULL, 7 },
		{ "cert-key", required_argument, NULL, 8 }, { "insecure", no_argument, NULL, 9 },
		{ "username", required_argument, NULL, 'u' }, { "password-file", required_argument, NULL, 10 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct push_opts o = { 0 };
	uint8_t *buf = NULL;
	size_t len = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, "b:o:B:u:h", opts, NULL)) != -1)
		if ((r = push_option(c, &o)) != 0)
			return r < 0 ? 0 : r;
	if (optind < argc)
		return cli_fail("config", "unexpected argument '%s'", argv[optind]);
	if (!o.version)
		o.version = default_version();
	if ((r = push_validate(&o)) != 0)
		goto out;
	if ((r = push_message(&o, &buf, &len)) != 0)
		goto out;
	r = o.output ? write_output(o.output, buf, len) : push_publish(&o, buf, len);
	if (!r && o.output)
		printf("railmon config: version %" PRIu64 " for %s written to %s (%zu bytes)\n", o.version, o.vehicle,
		       o.output, len);
out:
	free(buf);
	free(o.password);
	return r;
}

int cli_cmd_config(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(config_usage, stdout);
		return 0;
	}
	if (argc < 2 || strcmp(argv[1], "push")) {
		/* the sentence names what was given, then the --help pointer, as
		   every command's usage errors do (tests/cli/test-cli-usage.sh) */
		if (argc < 2)
			cli_fail("config", "expected a subcommand: push");
		else
			cli_fail("config", "'%s': expected the subcommand push", argv[1]);
		return cli_see_help("config");
	}
	return config_push(argc - 1, argv + 1);
}
