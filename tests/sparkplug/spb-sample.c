/* SPDX-License-Identifier: MIT */
/*
 * spb-sample OUTDIR - writes the NDEATH, NBIRTH, DBIRTH and DDATA payloads
 * of a small train, built with sparkplug/'s encoder and session (bdSeq 7),
 * as OUTDIR/ndeath.bin, nbirth.bin, dbirth.bin, ddata.bin, for
 * test-spb-peers.py to decode with independent decoders (Eclipse Tahu's
 * npm sparkplug-payload, python3-protobuf).  The values are that
 * script's expectations: change both together.
 * spb-sample --cmd FILE... - parses each file as an NCMD with
 * spb_cmd_parse() and prints "FILE rebirth=0|1 metrics=N refused=N" (or
 * the error), for the script to check on Tahu's encodings.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sparkplug/spb-session.h"

#define T0 1733400000000ull

static int write_payload(const char *dir, const char *name, const spb_payload_t *pl)
{
	uint8_t buf[4096];
	char path[512];
	int n = spb_payload_encode(pl, buf, sizeof(buf));

	if (n < 0)
		return fprintf(stderr, "%s: encode: %s\n", name, strerror(-n)), 1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
		return fprintf(stderr, "%s: %s\n", path, strerror(errno)), 1;
	printf("%s %d bytes, %zu metrics\n", name, n, spb_payload_count(pl));
	return 0;
}

static const struct spb_birth_metric dbirth[] = {
	{ "EngineData.EngineSpeed", 10, T0 + 1, "rpm", { SPB_DT_DOUBLE, false, 1500.25, NULL }, NULL },
	{ "Traction.Fault", 11, T0 + 2, NULL, { SPB_DT_STRING, false, 0, "none" }, NULL },
	{ "Brake.Pressure", 12, T0 + 3, "bar", { SPB_DT_DOUBLE, true, 0, NULL }, NULL },
	{ "Door.Count", 13, T0 + 4, "", { SPB_DT_INT16, false, -3, NULL }, NULL },
	{ "Odometer", 14, T0 + 5, "m", { SPB_DT_INT64, false, -5000000000.0, NULL }, NULL },
	{ "Status.Byte", 15, T0 + 6, NULL, { SPB_DT_UINT8, false, 200, NULL }, "0 off\n200 on" },
	{ "Cab.Temperature", 16, T0 + 7, "\xc2\xb0" "C", { SPB_DT_FLOAT, false, 21.5, NULL }, "-40 sensor fault" },
	{ "Pantograph.Up", 17, T0 + 8, NULL, { SPB_DT_BOOLEAN, false, 1, NULL }, NULL },
};

static const struct spb_data_metric ddata[] = {
	{ 10, T0 + 100, false, { SPB_DT_DOUBLE, false, 1501.5, NULL }, NULL },
	{ 11, T0 + 100, false, { SPB_DT_STRING, false, 0, "overheat \xe2\x80\x94 u1" }, NULL },
	{ 12, T0 + 200, true, { SPB_DT_DOUBLE, false, 2.5, NULL }, "out_of_range" },
	{ 13, T0 + 300, false, { SPB_DT_INT16, false, -32768, NULL }, NULL },
	{ 14, T0 + 300, false, { SPB_DT_INT64, false, 5000000000.0, NULL }, NULL },
	{ 15, T0 + 300, false, { SPB_DT_UINT8, false, 255, NULL }, NULL },
	{ 16, T0 + 400, false, { SPB_DT_FLOAT, false, -0.25, NULL }, NULL },
	{ 17, T0 + 400, false, { SPB_DT_BOOLEAN, false, 0, NULL }, NULL },
};

static int parse_cmds(int n, char **files)
{
	static uint8_t buf[SPB_CMD_MAX_BYTES];

	for (int i = 0; i < n; i++) {
		FILE *f = fopen(files[i], "rb");
		if (!f)
			return fprintf(stderr, "%s: %s\n", files[i], strerror(errno)), 1;
		size_t len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		struct spb_cmd c;
		int r = spb_cmd_parse(buf, len, false, &c);
		if (r < 0)
			printf("%s error %s\n", files[i], strerror(-r));
		else
			printf("%s rebirth=%d metrics=%u refused=%u\n", files[i], c.rebirth, c.metrics, c.refused);
	}
	return 0;
}

int main(int argc, char **argv)
{
	spb_payload_t *pl = NULL;
	struct spb_session s;
	int rc = 0, r;

	if (argc >= 2 && !strcmp(argv[1], "--cmd"))
		return parse_cmds(argc - 2, argv + 2);
	if (argc != 2)
		return fprintf(stderr, "usage: spb-sample OUTDIR | --cmd FILE...\n"), 2;
	r = spb_payload_new(16, &pl);
	if (r < 0)
		return fprintf(stderr, "spb_payload_new: %s\n", strerror(-r)), 1;

	/* the will, then NBIRTH: the two metrics every edge node declares
	   (spec 6.4.18), by the session */
	spb_session_start(&s, 7);
	if ((r = spb_session_ndeath(&s, pl, T0 - 1)) < 0)
		return fprintf(stderr, "ndeath: %s\n", strerror(-r)), 1;
	rc |= write_payload(argv[1], "ndeath.bin", pl);
	if ((r = spb_session_nbirth(&s, pl, T0)) < 0)
		return fprintf(stderr, "nbirth: %s\n", strerror(-r)), 1;
	rc |= write_payload(argv[1], "nbirth.bin", pl);

	if ((r = spb_session_next(&s, pl, T0 + 10)) < 0)
		return fprintf(stderr, "dbirth: %s\n", strerror(-r)), 1;
	for (size_t i = 0; i < sizeof(dbirth) / sizeof(dbirth[0]); i++)
		if ((r = spb_payload_add_birth(pl, &dbirth[i])) < 0)
			return fprintf(stderr, "dbirth %s: %s\n", dbirth[i].name, strerror(-r)), 1;
	rc |= write_payload(argv[1], "dbirth.bin", pl);

	if ((r = spb_session_next(&s, pl, T0 + 500)) < 0)
		return fprintf(stderr, "ddata: %s\n", strerror(-r)), 1;
	for (size_t i = 0; i < sizeof(ddata) / sizeof(ddata[0]); i++)
		if ((r = spb_payload_add_data(pl, &ddata[i])) < 0)
			return fprintf(stderr, "ddata %zu: %s\n", i, strerror(-r)), 1;
	rc |= write_payload(argv[1], "ddata.bin", pl);
	spb_payload_free(pl);
	return rc;
}
