/* SPDX-License-Identifier: MIT */
/*
 * main.c - railmon's entry point: subcommand dispatch.  The only globals
 * of the program live here: the flags the signal handlers set (cli.c
 * installs them, for the commands that stop or reload on a signal).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "basic/nearest.h"
#include "cli.h"
#include "railmon-config.h"

volatile sig_atomic_t cli_stop_requested;
volatile sig_atomic_t cli_reload_requested;

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{ "demo", cli_cmd_demo, "a simulated train on this machine, end to end" },
	{ "run", cli_cmd_run, "acquire the buses of a board file and log them (the onboard daemon)" },
	{ "check", cli_cmd_check, "validate a board file and print the acquisition plan" },
	{ "replay", cli_cmd_replay, "feed a candump trace or a railmon log through decode and storage" },
	{ "export", cli_cmd_export, "print the log as CSV, JSON lines or candump" },
	{ "decode", cli_cmd_decode, "decode a candump log with a DBC (no board file)" },
	{ "channels", cli_cmd_channels, "list the channels of a board file or a log (id, unit, range, values)" },
	{ "plot", cli_cmd_plot, "draw channels over time: a PNG, an SVG or a zoomable HTML page" },
	{ "summary", cli_cmd_summary, "per channel: count, first/last, min/max/mean, gaps, bad samples" },
	{ "recv", cli_cmd_recv, "ground side: receive records over MQTT, check gaps, write or log them" },
	{ "db", cli_cmd_db, "ground side: create, migrate and prune the PostgreSQL database" },
	{ "request", cli_cmd_request, "ground side: ask a vehicle for the full records of a time range" },
	{ "serve", cli_cmd_serve, "ground side: the fleet dashboard in the browser over the database" },
	{ "stat", cli_cmd_stat, "health of a running daemon or of a recorded log" },
	{ "watch", cli_cmd_watch, "the live values of a running daemon's channels" },
	{ "monitor", cli_cmd_monitor, "the live decoded values of a CAN bus or trace with only a DBC" },
	{ "keygen", cli_cmd_keygen, "make the vehicle's key pair for the evidence Seals" },
	{ "verify", cli_cmd_verify, "check a log against its signed Seals (evidence)" },
	{ "hold", cli_cmd_hold, "list or release the event holds retention keeps (triggers)" },
	{ "config", cli_cmd_config, "ground side: send a vehicle a new board file, signed" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: railmon COMMAND [OPTIONS]\n"
	             "Train-monitoring data acquisition: CAN and Modbus into a crash-safe log.\n\n"
	             "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'railmon COMMAND --help' describes each command's options.\n"
	             "  -h, --help     this text\n"
	             "  -V, --version  print the version\n");
}

/* A mistyped command: the sentence and the nearest command, not the
   whole usage (which buries the sentence). */
static int unknown_command(const char *name)
{
	enum { N = sizeof(commands) / sizeof(commands[0]) };
	const char *names[N];
	char near[256];
	size_t first;

	for (size_t i = 0; i < N; i++)
		names[i] = commands[i].name;
	basic_nearest_names(name, names, N, near, sizeof(near));
	first = strcspn(near, ",");
	if (first)
		fprintf(stderr, "railmon: unknown command '%s'; did you mean %.*s?\n", name, (int)first, near);
	else
		fprintf(stderr, "railmon: unknown command '%s'\n", name);
	fputs("see 'railmon --help'\n", stderr);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("railmon %s\n", RAILMON_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return unknown_command(argv[1]);
}
