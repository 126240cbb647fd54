/* SPDX-License-Identifier: MIT */
/* keygen-cmd.c - `railmon keygen`: the vehicle's Ed25519 key pair; the options
   here, making the keys and the words cli/keygen-say.h's. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "cli/keygen-say.h"

static const char keygen_usage[] =
	"Usage: railmon keygen --output FILE [--public FILE]\n"
	"Make the vehicle's Ed25519 key pair for the evidence Seals (docs/evidence.md).\n"
	"The secret key goes to FILE (mode 0600; name it in the board file: [board] key = FILE),\n"
	"the public key to FILE.pub (or --public): it is what the ground and investigators\n"
	"hold to run `railmon verify --pubkey`.  An existing file is never overwritten.\n\n"
	"  -o, --output FILE   the secret key file (--out FILE: the same)\n"
	"  -p, --public FILE   the public key file (default: FILE.pub)\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  railmon keygen --output /etc/railmon/vehicle.key\n";

int cli_cmd_keygen(int argc, char **argv)
{
	static const struct option opts[] = { { "output", required_argument, NULL, 'o' },
		                              { "out", required_argument, NULL, 1 }, /* its old name */
		                              { "public", required_argument, NULL, 'p' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	const char *out = NULL, *pub = NULL;
	char pubname[4096];
	int c;

	while ((c = getopt_long(argc, argv, "o:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
		case 1: out = optarg; break;
		case 'p': pub = optarg; break;
		case 'h': fputs(keygen_usage, stdout); return 0;
		default: return cli_see_help("keygen");
		}
	}
	if (optind < argc)
		return cli_fail("keygen", "unexpected argument '%s'", argv[optind]);
	if (!out)
		return cli_fail("keygen", "--output FILE is required");
	if (!pub) {
		if ((size_t)snprintf(pubname, sizeof(pubname), "%s.pub", out) >= sizeof(pubname))
			return cli_fail("keygen", "--output: name too long");
		pub = pubname;
	}
	return cli_keygen(stdout, stderr, out, pub);
}
