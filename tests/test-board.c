/* SPDX-License-Identifier: MIT */
/*
 * test-board.c - board-file parsing: a full valid file, and every kind of
 * mistake giving "file:line: message" with the right line.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "board/config.h"

static const char good[] =
	"; a regional EMU\n"
	"[board]\n"
	"vehicle = EMU-4021\n"
	"rt_priority = 80\n"
	"batch_ms = 250\n"
	"\n"
	"[storage]\n"
	"dir = /var/lib/railmon\n"
	"segment_size = 8M\n"
	"retention_size = 2G\n"
	"retention_age = 30d\n"
	"sync_window_ms = 100\n"
	"\n"
	"[uplink]\n"
	"broker = mqtts://ground.example:8883\n"
	"ca_file = ca.pem\n"
	"inflight = 32\n"
	"\n"
	"[can vehicle]\n"
	"driver = socketcan\n"
	"interface = can0\n"
	"bitrate = 500000\n"
	"fd = true\n"
	"filter = 0x100/0x700\n"
	"filter = 0x18FF0000/0x1FFF0000\n"
	"dbc = train.dbc\n"
	"\n"
	"[modbus hvac]\n"
	"transport = rtu\n"
	"device = /dev/ttyS1\n"
	"baud = 19200\n"
	"parity = E\n"
	"rs485 = yes\n"
	"period_ms = 500\n"
	"\n"
	"[channel cabin_temp]\n"
	"bus = hvac\n"
	"unit_id = 2\n"
	"table = input\n"
	"address = 3\n"
	"type = s16\n"
	"scale = 0.1\n"
	"unit = degC\n"
	"\n"
	"[channel compressor_on]\n"
	"bus = hvac\n"
	"unit_id = 2\n"
	"table = coil\n"
	"address = 7\n"
	"\n"
	"[channel energy]\n"
	"bus = hvac\n"
	"unit_id = 3\n"
	"address = 100\n"
	"type = f32\n"
	"order = CDAB\n"
	"period_ms = 2000\n";

static void test_good(void)
{
	struct board_cfg *c;
	char err[BOARD_ERR_MAX] = "";
	struct bus_cfg *b;

	assert(board_cfg_parse("/etc/railmon/emu.ini", good, &c, err, sizeof(err)) == 0);
	assert(!strcmp(c->vehicle, "EMU-4021") && c->rt_priority == 80 && c->batch_ms == 250);
	assert(c->storage.segment_bytes == 8u << 20 && c->storage.retention_bytes == 2ull << 30);
	assert(c->storage.retention_age_s == 30 * 86400 && c->storage.sync_window_ms == 100);
	assert(!strcmp(c->storage.dir, "/var/lib/railmon"));
	assert(c->uplink.enabled && c->uplink.tls && c->uplink.port == 8883 && c->uplink.inflight == 32);
	assert(!strcmp(c->uplink.host, "ground.example"));
	assert(!strcmp(c->uplink.ca_file, "/etc/railmon/ca.pem")); /* relative to the board file */
	assert(c->nbuses == 2);
	b = board_cfg_bus(c, "vehicle");
	assert(b && b->kind == BUS_KIND_CAN && b->index == 0 && b->can.driver == BUS_CAN_SOCKETCAN);
	assert(b->can.listen_only); /* read-only towards the train unless asked */
	assert(b->can.fd && b->can.bitrate == 500000 && b->can.nfilters == 2);
	assert(b->can.filters[0].id == 0x100 && b->can.filters[0].mask == 0x700);
	assert(b->can.filters[1].id == (0x18FF0000u | 0x80000000u));
	assert(!strcmp(b->can.dbc, "/etc/railmon/train.dbc"));
	b = board_cfg_bus(c, "hvac");
	assert(b && b->kind == BUS_KIND_MODBUS && b->index == 1 && b->mb.rtu && b->mb.rs485);
	assert(b->mb.parity == 'E' && b->mb.baud == 19200 && b->mb.nchannels == 3);
	assert(!strcmp(b->mb.channels[0].name, "cabin_temp") && b->mb.channels[0].id == (1u << 16 | 0));
	assert(b->mb.channels[0].type == BUS_MB_S16 && b->mb.channels[0].scale == 0.1);
	assert(b->mb.channels[0].period_ms == 500); /* the link's default */
	assert(b->mb.channels[1].type == BUS_MB_BIT && b->mb.channels[1].table == BUS_MB_COIL);
	assert(b->mb.channels[2].table == BUS_MB_HOLDING && b->mb.channels[2].order == BUS_MB_CDAB);
	assert(b->mb.channels[2].period_ms == 2000 && b->mb.channels[2].id == (1u << 16 | 2));
	assert(c->hash != 0);
	assert(board_cfg_bus(c, "nope") == NULL);
	board_cfg_free(c);
}

/* Each case: a board file and the exact start of the error expected. */
static const struct {
	const char *text;
	const char *want;
} bad[] = {
	{ "[board]\nvehicle = x\nbogus = 1\n", "t.ini:3: unknown key 'bogus' in [board]" },
	{ "[board]\nvehicle = has space\n", "t.ini:2: vehicle: may only contain" },
	{ "[board]\nrt_priority = 120\n", "t.ini:2: rt_priority: expected 0 (no realtime) to 99" },
	{ "[board]\nvehicle = a\n[storage]\nsegment_size = 12Q\n", "t.ini:4: segment_size:" },
	{ "[board]\nvehicle = a\nvehicle = b\n", "t.ini:3: 'vehicle' given twice in [board] (first at line 2)" },
	{ "[board]\nvehicle = a\n[weird]\nx = 1\n", "t.ini:3: unknown section [weird]" },
	{ "this is not ini\n", "t.ini:1: syntax error" },
	{ "[board]\nring_slots = 1000\n", "t.ini:2: ring_slots: expected a power of two" },
	{ "[board]\nvehicle = a\n[can x]\ndriver = pcan\n", "t.ini:4: driver: expected socketcan, slcan or trace" },
	{ "[board]\nvehicle = a\n[can x]\nfilter = 0x100\n", "t.ini:4: filter: expected ID/MASK" },
	{ "[board]\nvehicle = a\n[can x]\ndriver = socketcan\n", "t.ini:3: [can x]: driver socketcan needs 'interface ='" },
	{ "[board]\nvehicle = a\n[can x]\ninterface = can0\nlisten_only = false\n",
	  "t.ini:3: [can x]: listen_only = false also needs allow_normal_mode = true" },
	{ "[board]\nvehicle = a\n[modbus m]\ntransport = udp\n", "t.ini:4: transport: expected tcp or rtu" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n", "t.ini:3: [modbus m]: no [channel] uses this bus" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = n\naddress = 1\n",
	  "t.ini:5: channel 'c': no [modbus n] section" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\n",
	  "t.ini:5: channel 'c': missing 'address ='" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 65534\ntype = f64\n",
	  "t.ini:5: channel 'c': address + size runs past register 65535" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\ntype = f16\n",
	  "t.ini:8: type: expected u16" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\ntable = coil\ntype = f32\n",
	  "t.ini:5: channel 'c': coils and discrete inputs are bits" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\n[channel c]\naddress = 2\n",
	  "t.ini:8: channel 'c' is defined twice (first at line 5)" },
	{ "[board]\nvehicle = a\n[uplink]\nbroker = http://x\n", "t.ini:4: broker: scheme must be mqtt:// or mqtts://" },
	{ "[board]\nvehicle = a\n[uplink]\nbroker = x:99999\n", "t.ini:4: broker: bad port" },
	{ "[storage]\ndir = /x\n", "t.ini:1: missing [board] vehicle" },
	{ "[board]\nvehicle = a\n[can a]\ninterface=can0\n[modbus a]\nhost = h\n", "t.ini:5: bus 'a' is defined twice" },
	/* keys after a refused section must not reach a bus that was never made
	   (found by fuzz-board) */
	{ "[board]\nvehicle = a\n[can a]\ninterface=can0\n[can a]\nbitrate = 5\nfd = x\n",
	  "t.ini:5: bus 'a' is defined twice" },
	{ "[board]\nvehicle = a\n[channel c]\nbus = m\n[channel c]\naddress = 1\n",
	  "t.ini:5: channel 'c' is defined twice" },
	/* a byte budget below two segments can never be kept */
	{ "[board]\nvehicle = a\n[storage]\nsegment_size = 8M\nretention_size = 10M\n",
	  "t.ini:5: retention_size 10M is less than two segments of 8M (segment_size): the budget counts" },
	{ "[board]\nvehicle = a\n[storage]\nretention_size = 1M\nsegment_size = 1M\n",
	  "t.ini:4: retention_size 1M is less than two segments of 1M (segment_size)" },
	{ "[board]\nvehicle = a\n[storage]\nretention_size = 20M\nsync_window_ms = 10\n",
	  "t.ini:4: retention_size 20M is less than two segments of 16M (segment_size, the default): the budget counts the segment being written and a recycled spare; use at least 32M" },
	{ "[board]\nvehicle = a\n[storage]\nsegment_size = 1536K\nretention_size = 100K\n",
	  "t.ini:5: retention_size 100K is less than two segments of 1.5M (segment_size)" },
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct board_cfg *c = (struct board_cfg *)0x1;
		char err[BOARD_ERR_MAX] = "";
		int r = board_cfg_parse("t.ini", bad[i].text, &c, err, sizeof(err));
		if (r != -EINVAL || strncmp(err, bad[i].want, strlen(bad[i].want))) {
			fprintf(stderr, "case %zu: r=%d\n  got:  %s\n  want: %s\n", i, r, err, bad[i].want);
			assert(0);
		}
		assert(c == (struct board_cfg *)0x1); /* untouched on error */
	}
	printf("%zu malformed board files rejected with file:line\n", sizeof(bad) / sizeof(bad[0]));
}

/* Two segments is the smallest byte budget; 0 is unlimited. */
static void test_retention_limit(void)
{
	static const char *const ok[] = {
		"[board]\nvehicle = a\n[storage]\nsegment_size = 8M\nretention_size = 16M\n",
		"[board]\nvehicle = a\n[storage]\nretention_size = 32M\n",
		"[board]\nvehicle = a\n[storage]\nsegment_size = 1T\nretention_size = 0\n",
	};
	char buf[32];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct board_cfg *c;
		char err[BOARD_ERR_MAX] = "";
		if (board_cfg_parse("t.ini", ok[i], &c, err, sizeof(err)) != 0) {
			fprintf(stderr, "refused: %s\n  %s\n", ok[i], err);
			assert(0);
		}
		board_cfg_free(c);
	}
	assert(!strcmp(board_size_text(16u << 20, buf, sizeof(buf)), "16M"));
	assert(!strcmp(board_size_text(3ull << 39, buf, sizeof(buf)), "1.5T"));
	assert(!strcmp(board_size_text(1023, buf, sizeof(buf)), "1023 bytes"));
	assert(!strcmp(board_size_text(1024, buf, sizeof(buf)), "1K"));
}

static void test_files(void)
{
	struct board_cfg *c;
	char err[BOARD_ERR_MAX];

	assert(board_cfg_load("/nonexistent/board.ini", &c, err, sizeof(err)) == -ENOENT);
	assert(strstr(err, "/nonexistent/board.ini: No such file"));
	assert(board_cfg_load(NULL, &c, err, sizeof(err)) == -EINVAL);
	assert(board_cfg_parse("x", NULL, &c, err, sizeof(err)) == -EINVAL);
	assert(board_cfg_free(NULL) == NULL);
	assert(board_cfg_bus(NULL, "x") == NULL);
}

int main(void)
{
	test_good();
	test_bad();
	test_retention_limit();
	test_files();
	puts("test-board: ok");
	return 0;
}
