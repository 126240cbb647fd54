/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the boards `railmon replay` runs (replay.h): a board file's
 * CAN buses turned into trace sources, or the one-bus board of a trace
 * and a DBC; its TRDP buses reading a packet capture, or the one-bus board
 * of a capture.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/replay.h"

void conf_replay_trace(struct conf_board *cfg, const char *path, double speed)
{
	size_t ncan = 0, k = 0;

	for (size_t i = 0; i < cfg->nbuses; i++)
		ncan += cfg->buses[i].kind == BUS_KIND_CAN;
	for (size_t i = 0; i < cfg->nbuses; i++) {
		struct bus_cfg b = cfg->buses[i];
		if (b.kind != BUS_KIND_CAN)
			continue;
		b.can.driver = BUS_CAN_TRACE;
		snprintf(b.can.device, sizeof(b.can.device), "%s", path);
		if (ncan == 1)
			b.can.ifname[0] = 0;
		else if (!b.can.trace_channel)
			b.can.trace_channel = (uint32_t)k + 1; /* the n-th bus: channel n, as Vector and PEAK number */
		b.can.trace_speed = speed;
		b.can.trace_loop = false;
		b.index = (uint16_t)k;
		cfg->buses[k++] = b;
	}
	cfg->nbuses = k;
}

size_t conf_replay_capture(struct conf_board *cfg, const char *path, double speed)
{
	size_t k = 0;

	for (size_t i = 0; i < cfg->nbuses; i++) {
		struct bus_cfg b = cfg->buses[i];
		if (b.kind != BUS_KIND_TRDP)
			continue;
		snprintf(b.trdp.capture, sizeof(b.trdp.capture), "%s", path);
		b.trdp.trace_speed = speed;
		b.index = (uint16_t)k;
		cfg->buses[k++] = b;
	}
	cfg->nbuses = k;
	/* several: each takes what is addressed to it (bus/trdp-trace.c) */
	for (size_t i = 0; k > 1 && i < k; i++) {
		cfg->buses[i].trdp.capture_buses = cfg->buses;
		cfg->buses[i].trdp.capture_nbuses = k;
	}
	return k;
}

int conf_replay_capture_board(const char *capture, const char *vehicle, struct conf_board **ret_cfg, char *err,
                              size_t errlen)
{
	char cwd[PATH_MAX], name[PATH_MAX + 16], why[CONF_ERR_MAX];
	char *text = NULL;
	int r;

	if (!getcwd(cwd, sizeof(cwd))) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", capture, strerror(-r));
		return r;
	}
	if (strpbrk(vehicle, "\n;#[]")) {
		snprintf(err, errlen, "--vehicle holds a character a board file cannot (newline ; # [ ])");
		return -EINVAL;
	}
	/* the ports of the standard; no XML: raw telegrams.  (A section
	   with no key would not be seen: the ini reader calls per key.) */
	if (asprintf(&text, "[board]\nvehicle = %s\nrt_priority = 0\n\n[storage]\ndir = railmon-data\n\n"
	             "[trdp trdp0]\npd_port = 17224\nmd_port = 17225\n", vehicle) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	snprintf(name, sizeof(name), "%s/(capture)", cwd);
	r = conf_parse(name, text, ret_cfg, why, sizeof(why));
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s", capture, why);
		return -EBADMSG;
	}
	return 0;
}

int conf_replay_dbc(const char *trace, const char *dbc, const char *vehicle, struct conf_board **ret_cfg, char *err,
                    size_t errlen)
{
	char tpath[PATH_MAX], dpath[PATH_MAX], cwd[PATH_MAX], name[PATH_MAX + 16], why[CONF_ERR_MAX];
	char *text = NULL;
	int r;

	if (!realpath(trace, tpath) || !realpath(dbc, dpath) || !getcwd(cwd, sizeof(cwd))) {
		r = -errno;
		snprintf(err, errlen, "%s: %s", realpath(trace, tpath) ? dbc : trace, strerror(-r));
		return r;
	}
	if (strpbrk(vehicle, "\n;#[]") || strpbrk(tpath, "\n;#") || strpbrk(dpath, "\n;#")) {
		snprintf(err, errlen, "--vehicle, the trace's or the DBC's path holds a character a board file "
		         "cannot (newline ; # [ ])");
		return -EINVAL;
	}
	if (asprintf(&text, "[board]\nvehicle = %s\nrt_priority = 0\n\n[storage]\ndir = railmon-data\n\n"
	             "[can can0]\ndriver = trace\nfile = %s\ndbc = %s\n", vehicle, tpath, dpath) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* relative names (the default data dir) from here, as a user expects */
	snprintf(name, sizeof(name), "%s/(--dbc)", cwd);
	r = conf_parse(name, text, ret_cfg, why, sizeof(why));
	free(text);
	if (r < 0) {
		snprintf(err, errlen, "--dbc %s: %s", dbc, why);
		return -EBADMSG;
	}
	return 0;
}
