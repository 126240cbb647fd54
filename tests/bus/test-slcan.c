/* SPDX-License-Identifier: MIT */
/*
 * test-slcan PEER-SCRIPT: the slcan line parser, and the slcan driver
 * against a Python adapter (slcan-peer.py) over a socat pty pair.
 * The peer checks the init commands (listen-only "L", never "O"); this
 * program checks that every good frame arrives in order and that the
 * garbage count is exact.
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bus/bus.h"
#include "bus/slcan.h"
#include "tlib.h"

static void test_parse(void)
{
	static const struct {
		const char *line;
		uint32_t id;
		uint8_t flags, len;
	} good[] = {
		{ "t1230", 0x123, 0, 0 },
		{ "t7FF80011223344556677", 0x7ff, 0, 8 },
		{ "t0012aabb", 1, 0, 2 },
		{ "t0012AABB1234", 1, 0, 2 },
		{ "T1FFFFFFF1AA", 0x1fffffff, ACQ_CAN_EXT, 1 },
		{ "r1238", 0x123, ACQ_CAN_RTR, 8 },
		{ "R000000010", 1, ACQ_CAN_RTR | ACQ_CAN_EXT, 0 },
		{ "d1239000102030405060708090A0B", 0x123, ACQ_CAN_FD, 12 },
		{ "b123F" "00000000000000000000000000000000000000000000000000000000000000000000000000000000"
		  "000000000000000000000000000000000000000000000000", 0x123, ACQ_CAN_FD | ACQ_CAN_BRS, 64 },
		{ "D0000ABCD0", 0xabcd, ACQ_CAN_FD | ACQ_CAN_EXT, 0 },
		{ "B0000ABCD1FF", 0xabcd, ACQ_CAN_FD | ACQ_CAN_BRS | ACQ_CAN_EXT, 1 },
	};
	static const char *const bad[] = {
		"", "t", "t12", "t123", "t1239AABBCCDDEEFF0011", "t1232AA", "t1232AABBCC", "t1232AABBCCDDE",
		"t1232AABBZZZZ", "T2000000010", "T1234567", "tGGG0", "t8000", "r1239", "r1232AA", "x123",
		"d123900000000000000000000", "\x01\x02", "t12 0", "T12345678G", "R00000001F", "R000000019",
	};
	struct acq_item it;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		if (bus_slcan_parse(good[i].line, strlen(good[i].line), &it) != 0) {
			fprintf(stderr, "rejected %s\n", good[i].line);
			assert(0);
		}
		assert(it.kind == ACQ_ITEM_CAN && it.t_ns == 0 && it.can.id == good[i].id);
		assert(it.can.flags == good[i].flags && it.can.len == good[i].len);
	}
	assert(bus_slcan_parse("t0012aabb", 9, &it) == 0 && it.can.data[0] == 0xaa && it.can.data[1] == 0xbb);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		it.seq = 99;
		if (bus_slcan_parse(bad[i], strlen(bad[i]), &it) != -EBADMSG) {
			fprintf(stderr, "accepted %s\n", bad[i]);
			assert(0);
		}
		assert(it.seq == 99);
	}
	/* len bounds the line */
	assert(bus_slcan_parse("t1230xyz", 5, &it) == 0);
	assert(bus_slcan_parse(NULL, 5, &it) == -EINVAL);
	assert(bus_slcan_parse("t1230", 5, NULL) == -EINVAL);
}

static void test_open_errors(const char *dir)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN };
	bus_dev_t *dev = NULL;

	cfg.can.driver = BUS_CAN_SLCAN;
	cfg.can.listen_only = true;
	assert(bus_dev_new(&cfg, &dev) == -EINVAL); /* no tty */
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s/no-such-tty", dir);
	assert(bus_dev_new(&cfg, &dev) == -ENOENT);
	cfg.can.bitrate = 123456;
	assert(bus_dev_new(&cfg, &dev) == -EINVAL);
	cfg.can.bitrate = 500000;
	cfg.can.dbitrate = 2000000; /* no standard slcan command for it */
	assert(bus_dev_new(&cfg, &dev) == -EINVAL);
	cfg.can.dbitrate = 0;
	cfg.can.listen_only = false;
	assert(bus_dev_new(&cfg, &dev) == -EPERM); /* normal mode needs the explicit opt-in */
	assert(dev == NULL);
}

/* Receive until frames and garbage are complete; returns the frames. */
static struct acq_item *receive_all(bus_dev_t *dev, unsigned nframes, unsigned ngarbage, int64_t t0)
{
	struct acq_item *got = calloc(nframes + 1, sizeof(*got)), buf[64];
	unsigned frames = 0, garbage = 0;
	time_t deadline = time(NULL) + 30;

	assert(got);
	while ((frames < nframes || garbage < ngarbage) && time(NULL) < deadline) {
		int n = bus_dev_recv(dev, buf, 64, 500);

		assert(n >= 0);
		for (int i = 0; i < n; i++) {
			assert(buf[i].bus == 5 && buf[i].t_ns >= t0 && buf[i].t_ns <= basic_realtime_ns());
			if (buf[i].kind == ACQ_ITEM_EVENT) {
				assert(buf[i].event.code == ACQ_EV_CAN_BAD_LINE);
				assert(buf[i].event.arg == (int64_t)++garbage);
				continue;
			}
			assert(buf[i].kind == ACQ_ITEM_CAN && frames < nframes);
			assert(frames == 0 || buf[i].t_ns >= got[frames - 1].t_ns);
			got[frames++] = buf[i];
		}
	}
	if (frames != nframes || garbage != ngarbage) {
		fprintf(stderr, "got %u/%u frames, %u/%u garbage\n", frames, nframes, garbage, ngarbage);
		exit(1);
	}
	/* and nothing more */
	assert(bus_dev_recv(dev, buf, 64, 200) == 0);
	return got;
}

/* Expected frames "id flags len hex" the peer wrote; std_only drops extended ones. */
static unsigned count_expected(const char *path, bool std_only)
{
	FILE *f = fopen(path, "r");
	char line[256];
	unsigned id, flags, n = 0;

	assert(f);
	while (fgets(line, sizeof(line), f)) {
		assert(sscanf(line, "%x %x", &id, &flags) == 2);
		n += !(std_only && (flags & ACQ_CAN_EXT));
	}
	fclose(f);
	return n;
}

static void compare_expected(const char *path, const struct acq_item *got, unsigned nframes, bool std_only)
{
	FILE *f = fopen(path, "r");
	char line[256], mine[256];
	unsigned id, flags;

	assert(f);
	for (unsigned i = 0; i < nframes; i++) {
		int n;

		do {
			assert(fgets(line, sizeof(line), f));
			assert(sscanf(line, "%x %x", &id, &flags) == 2);
		} while (std_only && (flags & ACQ_CAN_EXT));
		line[strcspn(line, "\n")] = '\0';
		n = snprintf(mine, sizeof(mine), "%x %x %u ", got[i].can.id, got[i].can.flags, got[i].can.len);
		for (unsigned j = 0; !(got[i].can.flags & ACQ_CAN_RTR) && j < got[i].can.len; j++)
			n += snprintf(mine + n, sizeof(mine) - (size_t)n, "%02x", got[i].can.data[j]);
		if (strcmp(line, mine) != 0) {
			fprintf(stderr, "frame %u: got '%s', peer sent '%s'\n", i, mine, line);
			exit(1);
		}
	}
	while (fgets(line, sizeof(line), f))
		assert(sscanf(line, "%x %x", &id, &flags) == 2 && std_only && (flags & ACQ_CAN_EXT));
	fclose(f);
}

/*
 * One session: the peer expects init (comma-separated commands) and then
 * streams frames and garbage; listen_only/bitrate configure the driver;
 * std_only sets a board-file filter passing standard-id frames only.
 */
static void test_driver(const char *peer, const char *dir, const char *init, bool listen_only,
                        uint32_t bitrate, bool std_only)
{
	char a[64], b[64], expected[64], line[256];
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN, .index = 5 };
	unsigned nframes, ngarbage;
	int status;
	struct acq_item *got;
	struct bus_stats st;
	bus_dev_t *dev = NULL;
	struct tlib_peer socat, adapter;
	int64_t t0;

	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(expected, sizeof(expected), "%s/expected", dir);
	tlib_socat_pty_pair(&socat, a, b);
	{
		char *peer_argv[] = { "/usr/bin/python3", (char *)peer, b, expected, (char *)init, NULL };

		CHECK(tlib_peer_start(&adapter, peer_argv, TLIB_PEER_STDOUT) == 0);
	}
	assert(tlib_peer_readline(&adapter, line, sizeof(line), 10000) == 0 && strcmp(line, "OPEN") == 0);

	cfg.can.driver = BUS_CAN_SLCAN;
	cfg.can.listen_only = listen_only;
	cfg.can.allow_normal_mode = !listen_only;
	cfg.can.bitrate = bitrate;
	cfg.can.serial_baud = 115200;
	if (std_only) {
		cfg.can.filters[0] = (struct bus_can_filter){ 0, 0x80000000u }; /* CAN_EFF_FLAG clear */
		cfg.can.nfilters = 1;
	}
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", a);
	t0 = basic_realtime_ns();
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(tlib_peer_readline(&adapter, line, sizeof(line), 10000) == 0);
	assert(sscanf(line, "SENDING %u %u", &nframes, &ngarbage) == 2 && nframes > 1000 && ngarbage > 10);
	/* the peer wrote the expected file before it said SENDING */
	nframes = count_expected(expected, std_only);
	assert(nframes > 500);

	got = receive_all(dev, nframes, ngarbage, t0);
	assert(bus_dev_stats(dev, &st) == 0 && st.rx_frames == nframes && st.bad_input == ngarbage);
	bus_dev_free(dev); /* sends the closing C the peer waits for */
	status = tlib_peer_finish(&adapter, 30000);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "slcan peer failed\n");
		exit(1);
	}
	compare_expected(expected, got, nframes, std_only);
	printf("slcan (init %s%s): %u frames in order, %u garbage lines counted\n", init,
	       std_only ? ", std ids only" : "", nframes, ngarbage);
	free(got);
	assert(tlib_peer_stop(&socat, 15000) >= 0);
	unlink(expected);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test-slcan-XXXXXX";

	assert(argc == 2);
	signal(SIGPIPE, SIG_IGN);
	assert(mkdtemp(dir));
	test_parse();
	test_open_errors(dir);
	/* the default: listen-only, the peer fails on any "O" */
	test_driver(argv[1], dir, "C,S6,L", true, 500000, false);
	/* normal mode only with the board file's explicit opt-in; bitrate left alone */
	test_driver(argv[1], dir, "C,O", false, 0, false);
	/* the board file's filters apply to slcan too */
	test_driver(argv[1], dir, "C,S6,L", true, 500000, true);
	assert(rmdir(dir) == 0);
	printf("test-slcan: ok\n");
	return 0;
}
