/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-request.c - full-rate windows on demand (uplink/request.h):
 * the request line both ways and every malformed one refused; the
 * vehicle's pending-request file: a request survives a restart (the file
 * read again), an id taken twice is taken once (pending or served, also
 * after a restart), the limits, a damaged file refused with its line, and
 * a file that cannot be written leaves nothing half-taken.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlib.h"
#include "uplink/request.h"

static int parse(const char *line, struct upl_request *r)
{
	return upl_request_parse(line, strlen(line), r);
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", path);
}

static char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	CHECK(f, "%s", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static struct upl_request req(const char *id, int64_t from, int64_t to)
{
	struct upl_request r = { .from_ns = from, .to_ns = to };

	snprintf(r.id, sizeof(r.id), "%s", id);
	return r;
}

static void test_line(void)
{
	static const char *const bad[] = {
		"",
		"a",
		"a 1",
		"a 1 ",
		" a 1 2",                                  /* a blank before */
		"a  1 2",                                  /* two blanks */
		"a 1 2 ",                                  /* one after */
		"a 1 2\r",
		"a 1 2  Speed",                            /* channels: two blanks */
		"a 1 2 Speed ",                            /* one after the last */
		"a 1 2 Speed Speed",                       /* a name twice */
		"a 1 2 Sp\teed",                           /* a control character */
		("a 1 2 Sp\x80" "eed"),                       /* not ASCII */
		"a 1 2 c1 c2 c3 c4 c5 c6 c7 c8 c9",        /* 9 channels */
		"a 1 2 abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz01", /* 64 characters */
		"a 2 2",                                   /* empty range */
		"a 3 2",                                   /* to before from */
		"a -1 2",
		"a +1 2",
		"a 0x1 2",
		"a 1 9223372036854775808",                 /* INT64_MAX + 1 */
		"a 1 99999999999999999999999",
		". 1 2",                                   /* the name rule's exceptions */
		".. 1 2",
		"a/b 1 2",
		"a+ 1 2",
		"a# 1 2",
		"abcdefghijklmnopqrstuvwxyz0123456 1 2",   /* 33 characters */
	};
	struct upl_request r, keep;
	char line[UPL_REQUEST_LINE_MAX], small[8];

	CHECK(parse("inc-42 1764790000000000000 1764790060000000000", &r) == 0 && !strcmp(r.id, "inc-42") &&
	      r.from_ns == 1764790000000000000 && r.to_ns == 1764790060000000000);
	CHECK(parse("abcdefghijklmnopqrstuvwxyz012345 0 9223372036854775807", &r) == 0 &&
	      strlen(r.id) == UPL_REQUEST_ID_MAX && r.from_ns == 0 && r.to_ns == INT64_MAX, "the longest id, the widest range");
	keep = r;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(parse(bad[i], &r) == -EINVAL && !memcmp(&r, &keep, sizeof(r)), "refused, untouched: \"%s\"", bad[i]);
	CHECK(upl_request_parse(NULL, 3, &r) == -EINVAL && upl_request_parse("a 1 2", 5, NULL) == -EINVAL);
	/* channels (--channel): names after the times, in order; 8 of 63 the most */
	CHECK(parse("inc-42 5 7", &r) == 0 && r.nchannels == 0, "no channel: every record");
	CHECK(parse("inc-42 5 7 VehicleSpeed.Speed MotorCurrent", &r) == 0 && r.nchannels == 2 &&
	      !strcmp(r.channels[0], "VehicleSpeed.Speed") && !strcmp(r.channels[1], "MotorCurrent"));
	CHECK(upl_request_format(&r, line, sizeof(line)) > 0 &&
	      !strcmp(line, "inc-42 5 7 VehicleSpeed.Speed MotorCurrent\n"), "%s", line);
	{
		char longest[UPL_REQUEST_LINE_MAX], name[UPL_REQUEST_CHANNEL_NAME_MAX + 1];
		int n = snprintf(longest, sizeof(longest), "abcdefghijklmnopqrstuvwxyz012345 0 9223372036854775807");

		for (int k = 0; k < UPL_REQUEST_CHANNELS_MAX; k++) {
			memset(name, 'a' + k, UPL_REQUEST_CHANNEL_NAME_MAX);
			name[UPL_REQUEST_CHANNEL_NAME_MAX] = '\0';
			n += snprintf(longest + n, sizeof(longest) - (size_t)n, " %s", name);
		}
		CHECK(parse(longest, &r) == 0 && r.nchannels == UPL_REQUEST_CHANNELS_MAX, "8 channels of 63");
		CHECK(upl_request_format(&r, line, sizeof(line)) == n + 1 && !strncmp(line, longest, (size_t)n),
		      "the longest line fits UPL_REQUEST_LINE_MAX");
		r.nchannels = 2;
		snprintf(r.channels[1], sizeof(r.channels[1]), "%s", r.channels[0]);
		CHECK(upl_request_format(&r, line, sizeof(line)) == -EINVAL, "a channel twice");
		snprintf(r.channels[1], sizeof(r.channels[1]), "a b");
		CHECK(upl_request_format(&r, line, sizeof(line)) == -EINVAL, "a blank in a name");
	}

	/* written as parsed, '\n'-terminated; the longest fits the maximum */
	CHECK(upl_request_format(&keep, line, sizeof(line)) == (int)strlen(line) &&
	      !strcmp(line, "abcdefghijklmnopqrstuvwxyz012345 0 9223372036854775807\n"), "%s", line);
	r = req("inc-42", 5, 7);
	CHECK(upl_request_format(&r, line, sizeof(line)) == 11 && !strcmp(line, "inc-42 5 7\n"), "%s", line);
	CHECK(upl_request_format(&r, small, sizeof(small)) == -ENOSPC);
	CHECK(upl_request_format(&r, line, 11) == -ENOSPC, "no room for the NUL");
	r = req("inc-42", 7, 7);
	CHECK(upl_request_format(&r, line, sizeof(line)) == -EINVAL, "an empty range");
	r = req("inc-42", -1, 7);
	CHECK(upl_request_format(&r, line, sizeof(line)) == -EINVAL, "a negative time");
	r = req("..", 1, 7);
	CHECK(upl_request_format(&r, line, sizeof(line)) == -EINVAL, "an id outside the rule");
	printf("request line: %zu malformed lines refused\n", sizeof(bad) / sizeof(bad[0]));
}

static void test_file(const char *dir)
{
	char path[512];
	upl_requests_t *q;
	struct upl_request r1 = req("inc-1", 100, 200), r2 = req("inc-2", 300, 400), got;
	unsigned bad = 99;

	snprintf(path, sizeof(path), "%s/requests", dir);
	CHECK(upl_requests_open(path, &q, &bad) == 0 && bad == 0 && upl_requests_pending(q) == 0, "no file: none pending");
	CHECK(upl_requests_oldest(q, &got) == -ENOENT && upl_requests_done(q) == -ENOENT);
	CHECK(access(path, F_OK) < 0, "nothing written before a request");
	CHECK(upl_requests_add(q, &r1) == 1 && upl_requests_add(q, &r1) == 0 && upl_requests_add(q, &r2) == 1,
	      "new, the same id again (nothing), another");
	CHECK(upl_requests_pending(q) == 2);
	CHECK_STR(slurp(path), "railmon-requests 1\npending inc-1 100 200\npending inc-2 300 400\n");
	{
		/* a request naming channels keeps them across a restart */
		struct upl_request r3 = req("inc-3", 500, 600);
		upl_requests_t *q2;

		r3.nchannels = 1;
		snprintf(r3.channels[0], sizeof(r3.channels[0]), "Speed");
		CHECK(upl_requests_add(q, &r3) == 1);
		CHECK(upl_requests_open(path, &q2, &bad) == 0 && upl_requests_pending(q2) == 3);
		for (int k = 0; k < 2; k++)
			CHECK(upl_requests_done(q2) == 0);
		CHECK(upl_requests_oldest(q2, &got) == 0 && !strcmp(got.id, "inc-3") && got.nchannels == 1 &&
		      !strcmp(got.channels[0], "Speed"), "the channels read back");
		upl_requests_free(q2);
		/* the file back as it was for what follows */
		upl_requests_free(q);
		CHECK(unlink(path) == 0 && upl_requests_open(path, &q, &bad) == 0);
		CHECK(upl_requests_add(q, &r1) == 1 && upl_requests_add(q, &r2) == 1);
	}
	CHECK(access(strcat(strcpy((char[520]){ 0 }, path), ".tmp"), F_OK) < 0, "no temporary file left");
	upl_requests_free(q);

	/* the restart: both pending, oldest first; one served */
	CHECK(upl_requests_open(path, &q, &bad) == 0 && upl_requests_pending(q) == 2);
	CHECK(upl_requests_oldest(q, &got) == 0 && !strcmp(got.id, "inc-1") && got.from_ns == 100 && got.to_ns == 200);
	CHECK(upl_requests_done(q) == 0 && upl_requests_pending(q) == 1);
	CHECK(upl_requests_oldest(q, &got) == 0 && !strcmp(got.id, "inc-2"));
	CHECK_STR(slurp(path), "railmon-requests 1\npending inc-2 300 400\ndone inc-1\n");
	upl_requests_free(q);

	/* served, restarted: the same id once more is not served again */
	CHECK(upl_requests_open(path, &q, &bad) == 0 && upl_requests_pending(q) == 1);
	CHECK(upl_requests_add(q, &r1) == 0 && upl_requests_add(q, &r2) == 0 && upl_requests_pending(q) == 1,
	      "ids served or pending before the restart taken once");
	CHECK(upl_requests_done(q) == 0 && upl_requests_pending(q) == 0);
	upl_requests_free(q);
	unlink(path);

	/* the limits: 64 pending, then refused; the 256 served ids remembered,
	   the oldest forgotten first */
	CHECK(upl_requests_open(path, &q, &bad) == 0);
	for (int i = 0; i < UPL_REQUESTS_PENDING_MAX; i++) {
		char id[16];

		snprintf(id, sizeof(id), "p%d", i);
		got = req(id, i, i + 1);
		CHECK(upl_requests_add(q, &got) == 1, "%s", id);
	}
	got = req("one-more", 1, 2);
	CHECK(upl_requests_add(q, &got) == -ENOSPC && upl_requests_pending(q) == UPL_REQUESTS_PENDING_MAX, "full");
	for (int i = 0; i < UPL_REQUESTS_DONE_MAX + 1; i++) {
		char id[16];

		if (!upl_requests_pending(q)) {
			snprintf(id, sizeof(id), "p%d", i);
			got = req(id, i, i + 1);
			CHECK(upl_requests_add(q, &got) == 1, "%s", id);
		}
		CHECK(upl_requests_done(q) == 0);
	}
	got = req("p0", 0, 1);
	CHECK(upl_requests_add(q, &got) == 1, "the oldest served id (257 ago) forgotten: taken again");
	got = req("p1", 1, 2);
	CHECK(upl_requests_add(q, &got) == 0, "the 256th served id still known");
	upl_requests_free(q);
	CHECK(upl_requests_open(path, &q, &bad) == 0 && upl_requests_pending(q) == 1, "the full file read back");
	CHECK(upl_requests_add(q, &got) == 0, "p1 still known after the restart");
	upl_requests_free(q);
	unlink(path);
	printf("request file: restart, ids once, %d pending and %d served ids at most\n", UPL_REQUESTS_PENDING_MAX,
	       UPL_REQUESTS_DONE_MAX);
}

static void test_damaged(const char *dir)
{
	static const struct {
		const char *text;
		unsigned line;
	} cases[] = {
		{ "", 1 },
		{ "railmon-requests 2\n", 1 },
		{ "railmon-requests 1\npending a 1 2\npending b 1 2", 3 },   /* torn: no '\n' */
		{ "railmon-requests 1\npending a 1 2\npending a 3 4\n", 3 }, /* an id twice */
		{ "railmon-requests 1\ndone a\nsomething\n", 3 },
		{ "railmon-requests 1\npending a 2 1\n", 2 },
		{ "railmon-requests 1\ndone ..\n", 2 },
		{ "railmon-requests 1\ndone \n", 2 },
		{ "railmon-requests 1\n\n", 2 },
	};
	char path[512];
	upl_requests_t *q = NULL;
	unsigned bad;

	snprintf(path, sizeof(path), "%s/damaged", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put_file(path, cases[i].text);
		bad = 0;
		CHECK(upl_requests_open(path, &q, &bad) == -EBADMSG && bad == cases[i].line, "case %zu: line %u", i, bad);
	}
	put_file(path, "railmon-requests 1\n");
	CHECK(upl_requests_open(path, &q, &bad) == 0 && upl_requests_pending(q) == 0, "the header alone: none pending");
	upl_requests_free(q);
	unlink(path);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(upl_requests_open(path, &q, &bad) == -ESPIPE, "a FIFO refused, not waited on");
	unlink(path);
	CHECK(upl_requests_open(dir, &q, &bad) == -EISDIR);
	printf("damaged files: %zu refused with their line\n", sizeof(cases) / sizeof(cases[0]));
}

/* The directory goes away under it: a request not written is not taken,
   one not marked served stays pending. */
static void test_unwritable(const char *dir)
{
	char sub[512], path[600];
	upl_requests_t *q;
	struct upl_request r1 = req("inc-1", 1, 2), r2 = req("inc-2", 3, 4), got;
	unsigned bad;

	snprintf(sub, sizeof(sub), "%s/sub", dir);
	snprintf(path, sizeof(path), "%s/requests", sub);
	CHECK(mkdir(sub, 0700) == 0);
	CHECK(upl_requests_open(path, &q, &bad) == 0 && upl_requests_add(q, &r1) == 1);
	CHECK(unlink(path) == 0 && rmdir(sub) == 0);
	CHECK(upl_requests_add(q, &r2) == -ENOENT && upl_requests_pending(q) == 1, "not written: not taken");
	CHECK(upl_requests_done(q) == -ENOENT && upl_requests_pending(q) == 1 && upl_requests_oldest(q, &got) == 0 &&
	      !strcmp(got.id, "inc-1"), "not marked served: still pending");
	CHECK(upl_requests_add(q, &r1) == 0, "and still known");
	upl_requests_free(q);
}

int main(void)
{
	char dir[] = "/tmp/railmon-request-XXXXXX";

	CHECK(mkdtemp(dir));
	test_line();
	test_file(dir);
	test_damaged(dir);
	test_unwritable(dir);
	CHECK(rmdir(dir) == 0, "%s left empty", dir);
	return 0;
}
