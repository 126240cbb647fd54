/* SPDX-License-Identifier: MIT */
/*
 * test-dbc: load the demo DBC and decode frames of the demo trace to
 * values worked out by hand from the DBC text; malformed DBC files fail
 * with file:line; bad arguments give -EINVAL.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace/candump.h"
#include "dbc/dbc.h"
#include "dbc/j1939.h"
#include "railmon-config.h"

#define DEMO_DBC RAILMON_SOURCE_DIR "/cli/demo/train.dbc"
#define FULL_DBC RAILMON_SOURCE_DIR "/tests/dbc/full.dbc"

static struct acq_item frame(const char *line)
{
	struct acq_item it;

	assert(trace_candump_parse(line, strlen(line), &it, NULL, 0) == 0);
	it.bus = 2;
	return it;
}

struct expect {
	const char *name;
	double value;
	enum acq_quality q;
};

static void check(const dbc_t *dbc, const char *line, const struct expect *e, size_t ne)
{
	struct acq_item f = frame(line), out[64];
	int n = dbc_decode(dbc, &f, 1000, out, 64);

	if (n != (int)ne) {
		fprintf(stderr, "%s: %d samples, want %zu\n", line, n, ne);
		assert(0);
	}
	for (size_t i = 0; i < ne; i++) {
		struct dbc_signal_info info;
		int j;

		for (j = 0; j < n; j++) {
			assert(dbc_signal_info(dbc, out[j].sample.channel - 1000, &info) == 0);
			if (strcmp(info.name, e[i].name) == 0)
				break;
		}
		if (j == n || fabs(out[j].sample.value - e[i].value) > 1e-9 * fmax(1, fabs(e[i].value)) ||
		    out[j].sample.quality != e[i].q) {
			fprintf(stderr, "%s: %s = %g q%u, want %g q%d\n", line, e[i].name, j < n ? out[j].sample.value : NAN,
			        j < n ? out[j].sample.quality : 9, e[i].value, e[i].q);
			assert(0);
		}
		assert(out[j].kind == ACQ_ITEM_SAMPLE && out[j].t_ns == f.t_ns && out[j].bus == 2);
	}
}

static void test_demo(void)
{
	char err[256];
	dbc_t *dbc = NULL;
	struct dbc_signal_info info;
	const char *label;
	unsigned idx;

	if (dbc_load(DEMO_DBC, &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	assert(dbc_signal_count(dbc) == 32);
	assert(dbc_signal_info(dbc, 0, &info) == 0);
	assert(strcmp(info.name, "Speed") == 0 && strcmp(info.unit, "km/h") == 0 && info.msg_id == 0x100);
	assert(strcmp(info.message, "VehicleSpeed") == 0 && !info.ext && info.max == 250 && info.scale == 0.01);
	check(dbc, "(1.0) can0 100#0000FAFF04000001",
	      (const struct expect[]){ { "Speed", 0, 0 }, { "Acceleration", -0.006, 0 }, { "Direction", 0, 0 },
	                               { "SpeedValid", 1, 0 }, { "AliveCounter", 1, 0 } }, 5);
	/* Motorola: pipe 0x11FC, cylinders 0x0642/0x0644, reservoir 0x35C, EB bit 3, demand bits 2..0 */
	check(dbc, "(1.0) can0 120#11FC0642064435C2",
	      (const struct expect[]){ { "BrakePipePressure", 4.604, 0 }, { "BrakeCylinder1", 1.602, 0 },
	                               { "BrakeCylinder2", 1.604, 0 }, { "MainReservoir", 8.60, 0 },
	                               { "EmergencyBrake", 0, 0 }, { "BrakeDemand", 2, 0 } }, 6);
	/* multiplexed: car 0 gives Car1* only; car 1 Car2* only */
	check(dbc, "(1.0) can0 200#00E40100",
	      (const struct expect[]){ { "CarIndex", 0, 0 }, { "Car1Door1", 0, 0 }, { "Car1Door2", 1, 0 },
	                               { "Car1Door3", 2, 0 }, { "Car1Door4", 3, 0 }, { "DoorsReleased", 1, 0 },
	                               { "DoorsClosedLocked", 0, 0 }, { "ObstacleCount", 0, 0 } }, 8);
	check(dbc, "(1.0) can0 200#01AA0207",
	      (const struct expect[]){ { "CarIndex", 1, 0 }, { "Car2Door1", 2, 0 }, { "Car2Door2", 2, 0 },
	                               { "Car2Door3", 2, 0 }, { "Car2Door4", 2, 0 }, { "DoorsReleased", 0, 0 },
	                               { "DoorsClosedLocked", 1, 0 }, { "ObstacleCount", 7, 0 } }, 8);
	/* multiplexor out of its declared range [0|1]: no muxed signal matches */
	check(dbc, "(1.0) can0 200#02AA0207",
	      (const struct expect[]){ { "CarIndex", 2, ACQ_Q_OUT_OF_RANGE }, { "DoorsReleased", 0, 0 },
	                               { "DoorsClosedLocked", 1, 0 }, { "ObstacleCount", 7, 0 } }, 4);
	/* extended id, signed Intel effort -150.0 kN = 0xFA24, temp 0x56 - 40 */
	check(dbc, "(1.0) can0 18FF0121#24FA56DC05E80302",
	      (const struct expect[]){ { "TractiveEffort", -150.0, 0 }, { "MotorTemperature", 46, 0 },
	                               { "MotorCurrent", 150.0, 0 }, { "MotorSpeed", 1000, 0 },
	                               { "TractionMode", 2, 0 } }, 5);
	/* the same id as a standard frame is unknown */
	check(dbc, "(1.0) can0 121#24FA56DC05E80302", NULL, 0);
	check(dbc, "(1.0) can0 300#075BCD1500100000",
	      (const struct expect[]){ { "Odometer", 123456.789, 0 }, { "TripDistance", 4096, 0 } }, 2);
	/* signed Motorola: -12.3 A = 0xFF85; 0x7918 V = 31000 > max */
	check(dbc, "(1.0) can0 310#7918FF85",
	      (const struct expect[]){ { "CatenaryVoltage", 31000, ACQ_Q_OUT_OF_RANGE }, { "LineCurrent", -12.3, 0 } }, 2);
	/* a frame shorter than the message: only the signals it holds */
	check(dbc, "(1.0) can0 310#3A98", (const struct expect[]){ { "CatenaryVoltage", 15000, 0 } }, 1);
	{
		/* bytes past len are whatever the ring slot held: they must not matter */
		struct acq_item f = frame("(1.0) can0 310#3A98"), a[8], b[8];
		int na = dbc_decode(dbc, &f, 0, a, 8), nb;

		memset(f.can.data + f.can.len, 0xff, sizeof(f.can.data) - f.can.len);
		nb = dbc_decode(dbc, &f, 0, b, 8);
		assert(na == 1 && nb == 1 && a[0].sample.value == b[0].sample.value);
		assert(a[0].sample.channel == b[0].sample.channel && a[0].sample.quality == b[0].sample.quality);
	}
	assert(dbc_signal_find(dbc, 0x200, 0, "Car2Door3", &idx) == 0);
	assert(dbc_value_label(dbc, idx, 2.0, &label) == 0 && strcmp(label, "locked") == 0);
	assert(dbc_value_label(dbc, idx, 3.0, &label) == 0 && strcmp(label, "fault") == 0);
	assert(dbc_value_label(dbc, idx, 4.0, &label) == -ENOENT);
	assert(dbc_signal_find(dbc, 0x18ff0121, 1, "TractionMode", &idx) == 0);
	assert(dbc_value_label(dbc, idx, 2.0, &label) == 0 && strcmp(label, "electric brake") == 0);
	assert(dbc_signal_find(dbc, 0x18ff0121, 0, "TractionMode", &idx) == -ENOENT);
	assert(dbc_signal_find(dbc, 0x100, 0, "Speed", &idx) == 0);
	assert(dbc_value_label(dbc, idx, 2.0, &label) == -ENOENT);
	dbc_free(dbc);
}

static void test_bad_args(void)
{
	struct acq_item f = frame("(1.0) can0 100#00"), out[4];
	struct dbc_signal_info info;
	dbc_t *dbc = NULL;
	const char *label;
	unsigned idx;

	assert(dbc_load(NULL, &dbc, NULL, 0) == -EINVAL);
	assert(dbc_load("", &dbc, NULL, 0) == -EINVAL);
	assert(dbc_load(DEMO_DBC, NULL, NULL, 0) == -EINVAL);
	assert(dbc_load("/nonexistent/x.dbc", &dbc, NULL, 0) == -ENOENT);
	assert(dbc_free(NULL) == NULL);
	assert(dbc_load_buffer(NULL, "", 0, &dbc, NULL, 0) == -EINVAL);
	assert(dbc_load_buffer("x", NULL, 1, &dbc, NULL, 0) == -EINVAL);
	assert(dbc_load_buffer("x", "", 0, NULL, NULL, 0) == -EINVAL);
	/* an empty database is valid and decodes nothing */
	assert(dbc_load_buffer("x", NULL, 0, &dbc, NULL, 0) == 0 && dbc_signal_count(dbc) == 0);
	assert(dbc_decode(dbc, &f, 0, out, 4) == 0);
	dbc = dbc_free(dbc);
	{
		/* not NUL-terminated: the parser must stop at len */
		static const char txt[] = "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\nXX";
		char err[128];

		assert(dbc_load_buffer("mem", txt, sizeof(txt) - 3, &dbc, err, sizeof(err)) == 0);
		assert(dbc_signal_count(dbc) == 1);
		dbc = dbc_free(dbc);
		assert(dbc_load_buffer("mem", txt, sizeof(txt) - 1, &dbc, err, sizeof(err)) == -EBADMSG);
		assert(strcmp(err, "mem:3: unknown keyword 'XX'") == 0);
	}
	assert(dbc_signal_count(NULL) == 0);
	assert(dbc_load(DEMO_DBC, &dbc, NULL, 0) == 0);
	assert(dbc_signal_info(NULL, 0, &info) == -EINVAL);
	assert(dbc_signal_info(dbc, 32, &info) == -EINVAL);
	assert(dbc_signal_info(dbc, 0, NULL) == -EINVAL);
	assert(dbc_decode(NULL, &f, 0, out, 4) == -EINVAL);
	assert(dbc_decode(dbc, NULL, 0, out, 4) == -EINVAL);
	assert(dbc_decode(dbc, &f, 0, NULL, 4) == -EINVAL);
	assert(dbc_decode(dbc, &f, 0, out, 0) == 0);
	assert(dbc_decode(dbc, &f, 0, out, 2) == 0); /* 1-byte frame: no signal fits */
	f = frame("(1.0) can0 100#0000FAFF04000001");
	/* 5 signals do not fit in 2: an error, not 2 samples and 3 lost */
	assert(dbc_decode(dbc, &f, 0, out, 2) == -ENOBUFS);
	assert(dbc_decode_max(dbc) >= 5 && dbc_decode_max(NULL) == 0);
	f.can.len = 65;
	assert(dbc_decode(dbc, &f, 0, out, 4) == -EINVAL);
	f.can.len = 8;
	f.kind = ACQ_ITEM_EVENT;
	assert(dbc_decode(dbc, &f, 0, out, 4) == -EINVAL);
	f.kind = ACQ_ITEM_CAN;
	f.can.flags = ACQ_CAN_RTR;
	assert(dbc_decode(dbc, &f, 0, out, 4) == 0);
	assert(dbc_value_label(NULL, 0, 0, &label) == -EINVAL);
	assert(dbc_value_label(dbc, 99, 0, &label) == -EINVAL);
	assert(dbc_value_label(dbc, 0, NAN, &label) == -EINVAL);
	assert(dbc_value_label(dbc, 0, 0, NULL) == -EINVAL);
	assert(dbc_signal_find(NULL, 0x100, 0, "Speed", &idx) == -EINVAL);
	assert(dbc_signal_find(dbc, 0x100, 0, NULL, &idx) == -EINVAL);
	assert(dbc_signal_find(dbc, 0x100, 0, "Speed", NULL) == -EINVAL);
	dbc_free(dbc);
}

static char tmpdir[] = "/tmp/test-dbc-XXXXXX";

struct bad_dbc {
	const char *text;
	unsigned line;
	const char *what; /* substring of the message */
	const char *warn; /* lenient: the warning after "path:line: ", NULL = refused too */
};

#define HDR "VERSION \"\"\nNS_ :\n\tCM_\n\nBS_:\nBU_: A B\n"
/* HDR is 6 lines; the statement under test starts on line 7 */
static const struct bad_dbc bad_dbcs[] = {
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|16@1+ (1,0) [0|0] \"\" B\n SG_ S : 16|8@1+ (1,0) [0|0] \"\" B\n", 9, "duplicate signal", NULL },
	{ HDR "BO_ 256 M: 8 A\nBO_ 256 N: 8 A\n", 8, "duplicate message", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 60|8@1+ (1,0) [0|0] \"\" B\n", 8, "does not fit",
	  "signal 'S' does not fit in the 8 bytes of message M; signal skipped" },
	{ HDR "BO_ 256 M: 2 A\n SG_ S : 7|24@0+ (1,0) [0|0] \"\" B\n", 8, "does not fit",
	  "signal 'S' does not fit in the 2 bytes of message M; signal skipped" },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|0@1+ (1,0) [0|0] \"\" B\n", 8, "size", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|65@1+ (1,0) [0|0] \"\" B\n", 8, "bad integer", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@2+ (1,0) [0|0] \"\" B\n", 8, "byte order", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1* (1,0) [0|0] \"\" B\n", 8, "byte order", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0 [0|0] \"\" B\n", 8, "expected ')'", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (x,0) [0|0] \"\" B\n", 8, "bad number", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (0,0) [0|0] \"\" B\n", 8, "scale", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] B\n", 8, "unit string", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S x : 0|8@1+ (1,0) [0|0] \"\" B\n", 8, "multiplexer indicator", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S m1 : 0|8@1+ (1,0) [0|0] \"\" B\n", 8, "no multiplexor",
	  "signal 'S': m1 but message M has no multiplexor (M); read as a plain signal" },
	{ HDR " SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\n", 7, "outside a message", NULL },
	{ HDR "BO_ 2048 M: 8 A\n", 7, "out of range",
	  "standard id 2048 out of range (extended ids need bit 31); read as an extended (29-bit) id" },
	{ HDR "BO_ 1075054137 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\nBO_ 256 N: 8 A\n", 7, "not a CAN id",
	  "message id 1075054137 is not a CAN id (more than 29 bits); message skipped" },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 1.0|8@1+ (1,0) [0|0] \"\" B\n", 8, "bad integer '1.0'", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|1e3@1+ (1,0) [0|0] \"\" B\n", 8, "bad integer '1e3'", NULL },
	{ HDR "BO_ 256 M: 8 A\nBA_ \"GenMsgCycleTime\" BO_ 256 -5;\n", 8, "cycle time -5 ms out of range", NULL },
	{ HDR "BO_ 256 M: 65 A\n", 7, "bad integer", NULL },
	{ HDR "BO_ 256 M: 8 A\nCM_ SG_ 256 S \"never closed;\n\n\n", 8, "unterminated string", NULL },
	{ HDR "BO_ 256 M: 8 A\nVAL_ 257 S 0 \"x\" ;\n", 8, "unknown message",
	  "VAL_: unknown message id 257; statement skipped" },
	{ HDR "BO_ 256 M: 8 A\nVAL_ 256 S 0 \"x\" ;\n", 8, "unknown signal",
	  "VAL_: unknown signal 'S' in message 256; statement skipped" },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|16@1+ (1,0) [0|0] \"\" B\nSIG_VALTYPE_ 256 S : 1;\n", 9, "float", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\nVAL_ 256 S 0 \"x\" 1 ;\n", 9, "value description", NULL },
	{ HDR "BA_DEF_ BO_ \"GenMsgCycleTime\" INT 0 10000\n", 7, "not terminated", NULL },
	{ HDR "BO_ 256 M: 8 A\nFOO bar\n", 8, "unknown keyword", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\n\x01\n", 9, "unexpected byte", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ S m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      "SG_MUL_VAL_ 256 S Y 1-1;\n", 10, "not the multiplexor",
	  "SG_MUL_VAL_: 'Y' is not the multiplexor of message M (its only M is 'X'); SG_MUL_VAL_ ignored" },
	/* cantools loads these and never decodes S: neither do we */
	{ HDR "BO_ 256 M: 8 A\n SG_ P : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ S m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      "SG_MUL_VAL_ 256 S P 1-1;\n", 10, "not a multiplexor",
	  "'P' is not a multiplexor of message M (no M indicator); signal 'S' skipped" },
	{ HDR "BO_ 256 M: 8 A\n SG_ P : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ S m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      "SG_MUL_VAL_ 256 S Nope 1-1;\n", 10, "not a multiplexor",
	  "'Nope' is not a multiplexor of message M (no such signal); signal 'S' skipped" },
	{ HDR "BO_ 256 M: 8 A\n SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ S : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      "SG_MUL_VAL_ 256 S X 1-1;\n", 10, "no multiplexer indicator",
	  "SG_MUL_VAL_ for signal 'S', which has no multiplexer indicator (mN); SG_MUL_VAL_ ignored, decoded in every frame" },
	{ HDR "BO_ 256 M: 8 A\n SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ S m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      "SG_MUL_VAL_ 256 S X 3-1;\n", 10, "empty multiplexor range", NULL },
	{ HDR "BO_ 256 M: 8 A\n SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n SG_ Y M : 8|8@1+ (1,0) [0|0] \"\" B\n"
	      " SG_ S m1 : 16|8@1+ (1,0) [0|0] \"\" B\n", 10, "2 multiplexors",
	  "signal 'S': m1 but message M has 2 multiplexors (M) and no SG_MUL_VAL_ names the one of this signal; "
	  "read as a plain signal" },
};

static void test_malformed(void)
{
	char path[512], err[512], want[600];

	for (size_t i = 0; i < sizeof(bad_dbcs) / sizeof(bad_dbcs[0]); i++) {
		dbc_t *dbc = NULL;
		FILE *f;
		int r;

		snprintf(path, sizeof(path), "%s/bad%zu.dbc", tmpdir, i);
		f = fopen(path, "w");
		assert(f && fputs(bad_dbcs[i].text, f) >= 0 && fclose(f) == 0);
		r = dbc_load_flags(path, DBC_STRICT, &dbc, err, sizeof(err));
		snprintf(want, sizeof(want), "%s:%u: ", path, bad_dbcs[i].line);
		if (r != -EBADMSG || dbc || strncmp(err, want, strlen(want)) != 0 || !strstr(err, bad_dbcs[i].what)) {
			fprintf(stderr, "case %zu: r=%d err='%s', want '%s...%s'\n", i, r, err, want, bad_dbcs[i].what);
			assert(0);
		}
		/* lenient: the same error, or a load with exactly one warning */
		r = dbc_load(path, &dbc, err, sizeof(err));
		if (bad_dbcs[i].warn) {
			snprintf(want, sizeof(want), "%s:%u: %s", path, bad_dbcs[i].line, bad_dbcs[i].warn);
			if (r != 0 || dbc_warning_count(dbc) != 1 || strcmp(dbc_warning(dbc, 0), want) != 0) {
				fprintf(stderr, "case %zu lenient: r=%d '%s', want '%s'\n", i, r,
				        dbc ? dbc_warning(dbc, 0) : err, want);
				assert(0);
			}
			assert(dbc_warning(dbc, 1) == NULL && dbc_warning(NULL, 0) == NULL);
			dbc = dbc_free(dbc);
		} else if (r != -EBADMSG || dbc || strncmp(err, want, strlen(want)) != 0) {
			fprintf(stderr, "case %zu lenient: r=%d err='%s', want '%s'\n", i, r, err, want);
			assert(0);
		}
		unlink(path);
	}
}

/*
 * Multiplexing as cantools reads it (dbc/dbc.h), worked out by hand from
 * its rules: Ext has two signals marked M ("M", "m3M") and no SG_MUL_VAL_,
 * so cantools decodes every signal of it in every frame (railmon used to
 * hang A and B from Top, and a production file lost 50 signals that way);
 * Solo's only multiplexor is "m2M"; Union's E is selected by its m1 and
 * by its SG_MUL_VAL_ ranges under the message's only M.  A multiplexor
 * cycle is skipped, loading the rest.
 */
static void test_cantools_mux(void)
{
	static const char text[] = HDR
		"BO_ 512 Ext: 8 A\n"
		" SG_ Top M : 0|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ Sub m3M : 8|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ A m1 : 16|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ Bb m7 : 24|8@1+ (1,0) [0|0] \"\" B\n"
		"BO_ 513 Solo: 8 A\n"
		" SG_ Sel m2M : 0|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ C m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ D m2 : 16|8@1+ (1,0) [0|0] \"\" B\n"
		"BO_ 514 Union: 8 A\n"
		" SG_ Sel M : 0|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ E m1 : 8|8@1+ (1,0) [0|0] \"\" B\n"
		"BO_ 515 Cycle: 8 A\n"
		" SG_ X m0M : 0|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ Y m0M : 8|8@1+ (1,0) [0|0] \"\" B\n"
		" SG_ Z : 16|8@1+ (1,0) [0|0] \"\" B\n"
		"SG_MUL_VAL_ 514 E Sel 4-5;\n"
		"SG_MUL_VAL_ 515 X Y 0-0;\n"
		"SG_MUL_VAL_ 515 Y X 0-0;\n";
	static const char *const warns[] = {
		"t.dbc:9: signal 'Sub': m3 but message Ext has 2 multiplexors (M) and no SG_MUL_VAL_ names the one of "
		"this signal; read as a multiplexor at the top",
		"t.dbc:10: signal 'A': m1 but message Ext has 2 multiplexors (M) and no SG_MUL_VAL_ names the one of "
		"this signal; read as a plain signal",
		"t.dbc:11: signal 'Bb': m7 but message Ext has 2 multiplexors (M) and no SG_MUL_VAL_ names the one of "
		"this signal; read as a plain signal",
		"t.dbc:20: signal 'X': multiplexor cycle in message Cycle; signal skipped",
		"t.dbc:21: signal 'Y': multiplexor cycle in message Cycle; signal skipped",
	};
	char err[256];
	dbc_t *dbc = NULL;

	if (dbc_load_buffer("t.dbc", text, strlen(text), &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	for (unsigned i = 0; i < sizeof(warns) / sizeof(warns[0]); i++)
		if (!dbc_warning(dbc, i) || strcmp(dbc_warning(dbc, i), warns[i]) != 0) {
			fprintf(stderr, "warning %u: '%s', want '%s'\n", i, dbc_warning(dbc, i), warns[i]);
			assert(0);
		}
	assert(dbc_warning_count(dbc) == sizeof(warns) / sizeof(warns[0]));
	check(dbc, "(1.0) can0 200#0102030400000000",
	      (const struct expect[]){ { "Top", 1, 0 }, { "Sub", 2, 0 }, { "A", 3, 0 }, { "Bb", 4, 0 } }, 4);
	check(dbc, "(1.0) can0 201#0102030000000000", (const struct expect[]){ { "Sel", 1, 0 }, { "C", 2, 0 } }, 2);
	check(dbc, "(1.0) can0 201#0202030000000000", (const struct expect[]){ { "Sel", 2, 0 }, { "D", 3, 0 } }, 2);
	check(dbc, "(1.0) can0 202#0109000000000000", (const struct expect[]){ { "Sel", 1, 0 }, { "E", 9, 0 } }, 2);
	check(dbc, "(1.0) can0 202#0509000000000000", (const struct expect[]){ { "Sel", 5, 0 }, { "E", 9, 0 } }, 2);
	check(dbc, "(1.0) can0 202#0209000000000000", (const struct expect[]){ { "Sel", 2, 0 } }, 1);
	check(dbc, "(1.0) can0 203#0000070000000000", (const struct expect[]){ { "Z", 7, 0 } }, 1);
	/* strict: the first of them is the error */
	assert(dbc_load_buffer_flags("t.dbc", text, strlen(text), DBC_STRICT, &dbc, err, sizeof(err)) == -EBADMSG);
	assert(strncmp(err, warns[0], strlen("t.dbc:9: signal 'Sub': m3 but")) == 0);
	dbc_free(dbc);
	/* 255 SG_MUL_VAL_ ranges and an N none covers: 256 would wrap the
	   op's 8-bit count to 0 and silently never decode S */
	{
		char big[8192], *p = big;
		dbc_t *d = NULL;

		p += sprintf(p, HDR "BO_ 256 M: 8 A\n SG_ X M : 0|8@1+ (1,0) [0|0] \"\" B\n"
		             " SG_ S m1000 : 8|8@1+ (1,0) [0|0] \"\" B\nSG_MUL_VAL_ 256 S X 0-0");
		for (int i = 1; i < 255; i++)
			p += sprintf(p, ", %d-%d", 2 * i, 2 * i);
		strcpy(p, ";\n");
		assert(dbc_load_buffer("r.dbc", big, strlen(big), &d, err, sizeof(err)) == -EBADMSG && !d);
		assert(strcmp(err, "r.dbc:10: too many multiplexor ranges") == 0);
	}
}

/*
 * Numbers as cantools takes them: "+5" where an integer goes is 5 (its
 * int()); a cycle time may be written 100.0, 1e3 or "250" (its
 * int(Decimal(text))).  Generated files have each.
 */
static void test_numbers(void)
{
	static const char text[] = HDR
		"BO_ +256 P: +8 A\n"
		" SG_ S : +0|+8@1+ (1,0) [0|0] \"\" B\n"
		"BO_ 257 Q: 8 A\n"
		"BO_ 258 R: 8 A\n"
		"BA_ \"GenMsgCycleTime\" BO_ 256 100.0;\n"
		"BA_ \"GenMsgCycleTime\" BO_ 257 1e3;\n"
		"BA_ \"GenMsgCycleTime\" BO_ 258 \"250.9\";\n"
		"VAL_ 256 S +1 \"one\";\n";
	struct dbc_message_info mi;
	const char *label;
	char err[256];
	dbc_t *dbc = NULL;

	if (dbc_load_buffer_flags("n.dbc", text, strlen(text), DBC_STRICT, &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	assert(dbc_message_info(dbc, 0, &mi) == 0 && mi.id == 256 && mi.dlc == 8 && mi.cycle_ms == 100);
	assert(dbc_message_info(dbc, 1, &mi) == 0 && mi.cycle_ms == 1000);
	assert(dbc_message_info(dbc, 2, &mi) == 0 && mi.cycle_ms == 250);
	check(dbc, "(1.0) can0 100#0100000000000000", (const struct expect[]){ { "S", 1, 0 } }, 1);
	assert(dbc_value_label(dbc, 0, 1, &label) == 0 && strcmp(label, "one") == 0);
	dbc_free(dbc);
}

/* The demo DBC with a UTF-8 BOM and CRLF line ends loads the same. */
static void test_bom_crlf(void)
{
	FILE *in = fopen(DEMO_DBC, "r"), *out;
	char path[512], err[256];
	dbc_t *dbc = NULL;
	int c;

	snprintf(path, sizeof(path), "%s/crlf.dbc", tmpdir);
	out = fopen(path, "w");
	assert(in && out && fputs("\xef\xbb\xbf", out) >= 0);
	while ((c = fgetc(in)) != EOF)
		assert((c == '\n' ? fputc('\r', out) : 0) != EOF && fputc(c, out) != EOF);
	fclose(in);
	assert(fclose(out) == 0);
	if (dbc_load(path, &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	assert(dbc_signal_count(dbc) == 32);
	check(dbc, "(1.0) can0 300#075BCD1500100000",
	      (const struct expect[]){ { "Odometer", 123456.789, 0 }, { "TripDistance", 4096, 0 } }, 2);
	dbc_free(dbc);
	unlink(path);
}

/*
 * Scaled multiplexors (tests/dbc/full.dbc, messages 201 and 0x80000201):
 * per the DBC convention a multiplexor selects by its RAW value, never the
 * physical one.  Worked out by hand from the DBC text.
 */
static void test_scaled_mux(void)
{
	char err[256];
	dbc_t *dbc = NULL;
	const char *label;
	unsigned idx;

	if (dbc_load(FULL_DBC, &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	/* Page (2,-10): raw 3 = -4 selects PageA (m3) = 10 * 0.5 */
	check(dbc, "(1.0) can0 0C9#030A000000000007",
	      (const struct expect[]){ { "Page", -4, 0 }, { "PageA", 5, 0 }, { "Common", 7, 0 } }, 3);
	/* raw 7 is physical 4: a decoder comparing physical values would take
	   PageB (m4) here */
	check(dbc, "(1.0) can0 0C9#07FFFF0000000001", (const struct expect[]){ { "Page", 4, 0 }, { "Common", 1, 0 } }, 2);
	/* raw 250 = 490 selects PageC (m250) */
	check(dbc, "(1.0) can0 0C9#FA2A0000000000FF",
	      (const struct expect[]){ { "Page", 490, 0 }, { "PageC", 42, 0 }, { "Common", 255, 0 } }, 3);
	/* raw 4 = -2 selects PageB (m4), signed -3 */
	check(dbc, "(1.0) can0 0C9#04FDFF0000000000",
	      (const struct expect[]){ { "Page", -2, 0 }, { "PageB", -3, 0 }, { "Common", 0, 0 } }, 3);
	/* the value table is keyed by raw values too */
	assert(dbc_signal_find(dbc, 201, 0, "Page", &idx) == 0);
	assert(dbc_value_label(dbc, idx, -4, &label) == 0 && !strcmp(label, "page A"));
	assert(dbc_value_label(dbc, idx, 490, &label) == 0 && !strcmp(label, "page C"));
	assert(dbc_value_label(dbc, idx, 3, &label) == -ENOENT);
	/* SMux: Motorola, signed, (0.1,-1.5).  0xC8 is raw 200 (signed -56,
	   physical -7.1): Q200 (m200), big-endian signed 0xFF38 = -200 */
	check(dbc, "(1.0) can0 00000201#C8FF380000000000",
	      (const struct expect[]){ { "SMux", -7.1, 0 }, { "Q200", -200, 0 } }, 2);
	/* 0x80 is raw 128 (-14.3): Sub (SG_MUL_VAL_ 128-130), itself scaled
	   (0.25,1): raw 3 = 1.75, selects Deep (Sub 2-3) by the raw 3 */
	check(dbc, "(1.0) can0 00000201#800000003F2A0000",
	      (const struct expect[]){ { "SMux", -14.3, 0 }, { "Sub", 1.75, 0 }, { "Deep", 42, 0 } }, 3);
	/* 0xFF: a signed multiplexor matches by its raw bit pattern (mN values
	   are never negative): 255 is in QR's 250-255, physical -1.6 */
	check(dbc, "(1.0) can0 00000201#FF00005500000000",
	      (const struct expect[]){ { "SMux", -1.6, 0 }, { "QR", 0x55, 0 } }, 2);
	/* raw 1 (-1.4): Q1 (m1) */
	check(dbc, "(1.0) can0 00000201#0112340000000000",
	      (const struct expect[]){ { "SMux", -1.4, 0 }, { "Q1", 0x1234, 0 } }, 2);
	dbc_free(dbc);
}

/*
 * A CAN FD message of 64 bytes holding 512 one-bit signals: every one is
 * decoded, in a buffer sized with dbc_decode_max() (the daemon once
 * decoded into 256 and silently lost the rest of the frame).
 */
static void test_wide_message(void)
{
	size_t cap = 64 + 512 * 64, len = 0;
	char *txt = malloc(cap), err[256];
	struct acq_item f = { .kind = ACQ_ITEM_CAN, .t_ns = 42, .bus = 3 }, *out;
	dbc_t *dbc = NULL;

	assert(txt);
	len += (size_t)snprintf(txt + len, cap - len, "BO_ 291 Wide: 64 ECU\n");
	for (unsigned i = 0; i < 512; i++)
		len += (size_t)snprintf(txt + len, cap - len, " SG_ Bit%03u : %u|1@1+ (1,0) [0|0] \"\" LOGGER\n", i, i);
	assert(len < cap);
	if (dbc_load_buffer("wide", txt, len, &dbc, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		assert(0);
	}
	assert(dbc_signal_count(dbc) == 512 && dbc_decode_max(dbc) == 512);
	out = calloc(512, sizeof(*out));
	assert(out);
	f.can.id = 0x123;
	f.can.flags = ACQ_CAN_FD;
	f.can.len = 64;
	for (unsigned i = 0; i < 64; i++)
		f.can.data[i] = (uint8_t)(i * 37 + 11);
	assert(dbc_decode(dbc, &f, 7u << 16, out, 512) == 512);
	for (unsigned i = 0; i < 512; i++) {
		assert(out[i].kind == ACQ_ITEM_SAMPLE && out[i].t_ns == 42 && out[i].bus == 3);
		assert(out[i].sample.channel == (7u << 16 | i) && out[i].sample.quality == ACQ_Q_GOOD);
		assert(out[i].sample.value == (double)((f.can.data[i / 8] >> (i % 8)) & 1));
	}
	/* one short: refused, never 511 of 512 */
	assert(dbc_decode(dbc, &f, 0, out, 511) == -ENOBUFS);
	/* a shorter frame holds fewer signals: those fit in less room */
	f.can.len = 32;
	assert(dbc_decode(dbc, &f, 0, out, 256) == 256);
	free(out);
	free(txt);
	dbc_free(dbc);
	printf("512 one-bit signals of a 64-byte frame decoded\n");
}

/* J1939: decoding by PGN and the DM1 tracker's limits; bad arguments. */
static void test_j1939(void)
{
	static const char txt[] = "BO_ 2566841600 EngineHours: 16 ECU\n SG_ Tail : 96|32@1+ (1,0) [0|0] \"\" B\n"
	                          " SG_ Head : 0|8@1+ (1,0) [0|0] \"\" B\n"
	                          "BO_ 2566841617 Again: 8 ECU\n SG_ X : 0|8@1+ (1,0) [0|0] \"\" B\n";
	struct dbc_j1939_dtc dtc[DBC_J1939_DTC_EVENTS];
	struct dbc_j1939_stats st;
	struct dbc_j1939_fault f;
	struct dbc_j1939_msg m;
	struct acq_item out[4], it = { .kind = ACQ_ITEM_CAN };
	uint8_t data[DBC_J1939_TP_MAX + 1] = { 0x2a };
	dbc_t *dbc = NULL;
	dbc_j1939_t *j = NULL;
	char err[256];

	assert(dbc_load_buffer("j.dbc", txt, sizeof(txt) - 1, &dbc, err, sizeof(err)) == 0);
	data[12] = 0x78;
	/* PGN 0xFEE5 from any source: the first message of the PGN; Tail
	   (bytes 12-15) only in a message long enough */
	assert(dbc_decode_pgn(dbc, 0xFEE5, data, 16, 5, 3, 0x30000, out, 4) == 2);
	assert(out[0].sample.channel == 0x30000 && out[0].sample.value == 0x78 && out[0].t_ns == 5 && out[0].bus == 3);
	assert(out[1].sample.channel == 0x30001 && out[1].sample.value == 0x2a);
	assert(dbc_decode_pgn(dbc, 0xFEE5, data, 8, 5, 3, 0, out, 4) == 1);
	assert(dbc_decode_pgn(dbc, 0xFEE5, data, 16, 5, 3, 0, out, 1) == -ENOBUFS);
	assert(dbc_decode_pgn(dbc, 0xFEE6, data, 16, 5, 3, 0, out, 4) == 0);
	assert(dbc_decode_pgn(NULL, 0xFEE5, data, 16, 5, 3, 0, out, 4) == -EINVAL);
	assert(dbc_decode_pgn(dbc, 0xFEE5, NULL, 16, 5, 3, 0, out, 4) == -EINVAL);
	assert(dbc_decode_pgn(dbc, 0xFEE5, data, 16, 5, 3, 0, NULL, 4) == -EINVAL);
	assert(dbc_decode_pgn(dbc, 0xFEE5, data, DBC_J1939_TP_MAX + 1, 5, 3, 0, out, 4) == -EINVAL);
	assert(dbc_load_buffer_flags("j.dbc", txt, sizeof(txt) - 1, 2, &dbc, err, sizeof(err)) == -EINVAL);
	assert(dbc_warning_count(NULL) == 0 && dbc_warning(NULL, 0) == NULL);
	dbc_free(dbc);

	assert(dbc_j1939_new(NULL) == -EINVAL);
	assert(dbc_j1939_new(&j) == 0);
	assert(dbc_j1939_feed(NULL, &it, &m, &f) == -EINVAL && dbc_j1939_feed(j, NULL, &m, &f) == -EINVAL);
	assert(dbc_j1939_feed(j, &it, NULL, &f) == -EINVAL && dbc_j1939_feed(j, &it, &m, NULL) == -EINVAL);
	assert(dbc_j1939_feed(j, &it, &m, &f) == 0); /* a standard frame: not J1939 */
	assert(dbc_j1939_expire(NULL, 0, &f) == -EINVAL && dbc_j1939_expire(j, 0, NULL) == -EINVAL);
	assert(dbc_j1939_dm1(NULL, 0, data, 6, dtc, 4) == -EINVAL && dbc_j1939_dm1(j, 0, NULL, 6, dtc, 4) == -EINVAL);
	assert(dbc_j1939_dm1(j, 0, data, 6, NULL, 4) == -EINVAL);
	/* 300 codes from one source: 256 tracked, 64 reported, the rest counted */
	memset(data, 0, sizeof(data));
	for (unsigned i = 0; i < 300; i++) {
		data[2 + 4 * i] = (uint8_t)(i + 1);
		data[3 + 4 * i] = (uint8_t)((i + 1) >> 8);
		data[4 + 4 * i] = 5;
	}
	assert(dbc_j1939_dm1(j, 7, data, 2 + 4 * 300, dtc, DBC_J1939_DTC_EVENTS) == DBC_J1939_DTC_EVENTS);
	assert(dtc[0].spn == 1 && dtc[0].fmi == 5 && dtc[0].sa == 7 && dtc[0].active);
	dbc_j1939_stats(j, &st);
	assert(st.dtc_lost == (256 - DBC_J1939_DTC_EVENTS) + (300 - 256));
	/* the same DM1 again: nothing new; then none: the 256 tracked clear */
	assert(dbc_j1939_dm1(j, 7, data, 2 + 4 * 300, dtc, DBC_J1939_DTC_EVENTS) == 0);
	assert(dbc_j1939_dm1(j, 7, data, 2, dtc, DBC_J1939_DTC_EVENTS) == DBC_J1939_DTC_EVENTS);
	assert(!dtc[0].active);
	/* another source's codes are its own: room again */
	data[2] = 9;
	assert(dbc_j1939_dm1(j, 8, data, 6, dtc, DBC_J1939_DTC_EVENTS) == 1 && dtc[0].sa == 8 && dtc[0].spn == 9);
	dbc_j1939_free(j);
}

int main(void)
{
	test_j1939();
	assert(mkdtemp(tmpdir));
	test_demo();
	test_bad_args();
	test_scaled_mux();
	test_wide_message();
	test_malformed();
	test_cantools_mux();
	test_numbers();
	test_bom_crlf();
	assert(rmdir(tmpdir) == 0);
	printf("test-dbc: ok\n");
	return 0;
}
