/* SPDX-License-Identifier: MIT */
/*
 * test-board.c - board-file parsing: a full valid file, and every kind of
 * mistake giving "file:line: message" with the right line.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/hash.h"
#include "conf/config-schema.h"
#include "conf/config.h"
#include "conf/demo.h"
#include "conf/replay.h"
#include "pipeline/daemon.h"
#include "railmon-config.h"
#include "record/batch.h"

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
	struct conf_board *c;
	char err[CONF_ERR_MAX] = "";
	struct bus_cfg *b;

	assert(conf_parse("/etc/railmon/emu.ini", good, &c, err, sizeof(err)) == 0);
	assert(!strcmp(c->vehicle, "EMU-4021") && c->rt_priority == 80 && c->batch_ms == 250);
	assert(c->storage.segment_bytes == 8u << 20 && c->storage.retention_bytes == 2ull << 30);
	assert(c->storage.retention_age_s == 30 * 86400 && c->storage.sync_window_ms == 100);
	assert(!strcmp(c->storage.dir, "/var/lib/railmon"));
	assert(c->uplink.enabled && c->uplink.tls && c->uplink.port == 8883 && c->uplink.inflight == 32);
	assert(!strcmp(c->uplink.host, "ground.example"));
	assert(!strcmp(c->uplink.ca_file, "/etc/railmon/ca.pem")); /* relative to the board file */
	assert(c->nbuses == 2);
	b = conf_bus(c, "vehicle");
	assert(b && b->kind == BUS_KIND_CAN && b->index == 0 && b->can.driver == BUS_CAN_SOCKETCAN);
	assert(b->can.listen_only); /* read-only towards the train unless asked */
	assert(b->can.fd && b->can.bitrate == 500000 && b->can.nfilters == 2);
	assert(b->can.filters[0].id == 0x100 && b->can.filters[0].mask == 0x700);
	assert(b->can.filters[1].id == (0x18FF0000u | 0x80000000u));
	assert(!strcmp(b->can.dbc, "/etc/railmon/train.dbc"));
	b = conf_bus(c, "hvac");
	assert(b && b->kind == BUS_KIND_MODBUS && b->index == 1 && b->mb.rtu && b->mb.rs485);
	assert(b->mb.parity == 'E' && b->mb.baud == 19200 && b->mb.nchannels == 3);
	assert(!strcmp(b->mb.channels[0].name, "cabin_temp") && b->mb.channels[0].id == (1u << 16 | 0));
	assert(b->mb.channels[0].type == BUS_MB_S16 && b->mb.channels[0].scale == 0.1);
	assert(b->mb.channels[0].period_ms == 500); /* the link's default */
	assert(b->mb.channels[1].type == BUS_MB_BIT && b->mb.channels[1].table == BUS_MB_COIL);
	assert(b->mb.channels[2].table == BUS_MB_HOLDING && b->mb.channels[2].order == BUS_MB_CDAB);
	assert(b->mb.channels[2].period_ms == 2000 && b->mb.channels[2].id == (1u << 16 | 2));
	assert(c->hash != 0);
	assert(conf_bus(c, "nope") == NULL);
	conf_free(c);
}

/* Each case: a board file and the exact start of the error expected. */
static const struct {
	const char *text;
	const char *want;
} bad[] = {
	{ "[board]\nvehicle = x\nbogus = 1\n", "t.ini:3: unknown key 'bogus' in [board]" },
	{ "[board]\nvehicle = has space\n", "t.ini:2: vehicle: may only contain" },
	{ "[board]\nrt_priority = 120\n", "t.ini:2: rt_priority: expected 0 (no realtime) to 99" },
	{ "[board]\nvehicle = a\nrx_coalesce_us = 100001\n",
	  "t.ini:3: rx_coalesce_us: expected 0 (read at once) to 100000 microseconds: '100001'" },
	{ "[board]\nvehicle = a\nrx_coalesce_us = -1\n",
	  "t.ini:3: rx_coalesce_us: expected 0 (read at once) to 100000 microseconds: '-1'" },
	{ "[board]\nvehicle = a\nrx_coalesce_us = 1ms\n",
	  "t.ini:3: rx_coalesce_us: expected 0 (read at once) to 100000 microseconds: '1ms'" },
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
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\ntype = u8\nbyte = middle\n",
	  "t.ini:9: byte: expected high or low: 'middle'" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 65533\ntype = s64\n",
	  "t.ini:5: channel 'c': address + size runs past register 65535" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\ntable = coil\ntype = f32\n",
	  "t.ini:5: channel 'c': coils and discrete inputs are bits" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\n[channel c]\naddress = 2\n",
	  "t.ini:8: channel 'c' is defined twice (first at line 5)" },
	{ "[board]\nvehicle = a\n[uplink]\nbroker = http://x\n", "t.ini:4: broker: scheme must be mqtt:// or mqtts://" },
	{ "[board]\nvehicle = a\n[uplink]\nbroker = x:99999\n", "t.ini:4: broker: bad port" },
	/* uplink = (issue 32): each wrong policy said at its line */
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = deadband\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = all, change\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = deadband -1\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = deadband 0.5, deadband 1\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = every 0s\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = every 10 s\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = sometimes\n", "t.ini:8: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\nuplink = change,\n", "t.ini:5: uplink: expected all, none, or change, deadband X, every DURATION combined with ','" },
	{ "[board]\nvehicle = a\n[can x]\ninterface = can0\nuplink_frames = ids 0x300-0x200\n",
	  "t.ini:5: uplink_frames: expected identifiers like 0x100 or ranges like 0x200-0x2FF" },
	{ "[board]\nvehicle = a\n[can x]\ninterface = can0\nuplink_frames = some\n",
	  "t.ini:5: uplink_frames: expected all, none, or ids" },
	{ "[board]\nvehicle = a\n[can x]\ninterface = can0\nuplink_frames = ids\n",
	  "t.ini:5: uplink_frames: expected all, none, or ids" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nuplink = change\n[signal c]\nuplink = none\n", "t.ini:8: 'c' has two uplink policies (first at line 10)" },
	{ "[storage]\ndir = /x\n", "t.ini:1: missing [board] vehicle" },
	{ "[board]\nvehicle = a\n[can a]\ninterface=can0\n[modbus a]\nhost = h\n", "t.ini:5: bus 'a' is defined twice" },
	/* keys after a refused section must not reach a bus that was never made
	   (found by fuzz-board) */
	{ "[board]\nvehicle = a\n[can a]\ninterface=can0\n[can a]\nbitrate = 5\nfd = x\n",
	  "t.ini:5: bus 'a' is defined twice" },
	{ "[board]\nvehicle = a\n[channel c]\nbus = m\n[channel c]\naddress = 1\n",
	  "t.ini:5: channel 'c' is defined twice" },
	/* unit 0 is the broadcast address: never answered on a serial line */
	{ "[board]\nvehicle = a\n[modbus m]\ntransport = rtu\ndevice = /dev/ttyS1\n"
	  "[channel c]\nbus = m\nunit_id = 0\naddress = 1\n",
	  "t.ini:8: channel 'c': unit_id = 0 is the Modbus broadcast address, which no slave answers on a "
	  "serial line (use 1 to 247)" },
	{ "[board]\nvehicle = a\n[channel c]\nbus = m\naddress = 1\n"
	  "[modbus m]\ntransport = rtu\ndevice = /dev/ttyS1\n",
	  "t.ini:3: channel 'c': missing 'unit_id =' (1 to 247 on a serial line)" },
	/* a byte budget below two segments can never be kept */
	{ "[board]\nvehicle = a\n[storage]\nsegment_size = 8M\nretention_size = 10M\n",
	  "t.ini:5: retention_size 10M is less than two segments of 8M (segment_size): the budget counts" },
	{ "[board]\nvehicle = a\n[storage]\nretention_size = 1M\nsegment_size = 1M\n",
	  "t.ini:4: retention_size 1M is less than two segments of 1M (segment_size)" },
	{ "[board]\nvehicle = a\n[storage]\nretention_size = 20M\nsync_window_ms = 10\n",
	  "t.ini:4: retention_size 20M is less than two segments of 16M (segment_size, the default): the budget counts the segment being written and a recycled spare; use at least 32M" },
	{ "[board]\nvehicle = a\n[storage]\nsegment_size = 1536K\nretention_size = 100K\n",
	  "t.ini:5: retention_size 100K is less than two segments of 1.5M (segment_size)" },
	/* the keys with code of their own (config-schema.c), and the words of
	   keys whose type would say it otherwise */
	{ "[board]\nvehicle = 0123456789012345678901234567890123456789012345678901234567890123\n",
	  "t.ini:2: vehicle: must be 1-59 characters: '0123" },
	/* the one vehicle name rule (basic/name.h) at its limits: 60 bytes
	   (one past a segment header's room), "." and ".." */
	{ "[board]\nvehicle = 012345678901234567890123456789012345678901234567890123456789\n",
	  "t.ini:2: vehicle: must be 1-59 characters: '0123" },
	{ "[board]\nvehicle = .\n", "t.ini:2: vehicle: may only contain letters, digits, '-', '_' and '.', 1-59" },
	{ "[board]\nvehicle = ..\n", "t.ini:2: vehicle: may only contain letters, digits, '-', '_' and '.', 1-59" },
	{ "[board]\nvehicle = a\nstat_socket = @0123456789012345678901234567890123456789012345678901234567890123"
	  "4567890123456789012345678901234567890123456\n",
	  "t.ini:3: stat_socket: expected a socket path of at most 107 characters: '@0123" },
	{ "[board]\nvehicle = a\nstat_socket =\n", "t.ini:3: stat_socket: expected a socket path of at most 107" },
	{ "[board]\nvehicle = a\n[can x]\ninterface = can0\n"
	  "filter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\n"
	  "filter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\n"
	  "filter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\n"
	  "filter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\nfilter=1/1\n"
	  "filter=1/1\n", "t.ini:37: filter: at most 32 filters per bus" },
	{ "[board]\nvehicle = a\n[can x]\nfilter = 0x100/0x20000000\n",
	  "t.ini:4: filter: expected ID/MASK with 11 or 29 bit values: '0x100/0x20000000'" },
	{ "[board]\nvehicle = a\n[uplink]\nbroker = mqtt://:1883\n", "t.ini:4: broker: bad host: 'mqtt://:1883'" },
	{ "[board]\nvehicle = a\n[modbus m]\nparity = X\n", "t.ini:4: parity: expected N, E or O: 'X'" },
	{ "[board]\nvehicle = a\n[modbus m]\nstop_bits = 3\n", "t.ini:4: stop_bits: expected 1 or 2: '3'" },
	{ "[board]\nvehicle = a\n[can x]\nspeed = nan\n",
	  "t.ini:4: speed: expected 0 (as fast as possible) or a factor up to 1000: 'nan'" },
	{ "[board]\nvehicle = a\n[storage]\nretention_age = 1w\n",
	  "t.ini:4: retention_age: expected a duration like 30d, 12h (0 = unlimited): '1w'" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbus = m\naddress = 1\nunit = 0123456789abcdef\n",
	  "t.ini:8: unit: at most 15 characters: '0123456789abcdef'" },
	{ "[board]\nvehicle = a\n[modbus m]\nhost = h\n[channel c]\nbogus = 1\n",
	  "t.ini:6: unknown key 'bogus' in [channel c]" },
	{ "[board]\nvehicle = a\n[modbus  m]\nbogus = 1\n", "t.ini:4: unknown key 'bogus' in [modbus m]" },
	{ "[board]\nvehicle = a\n[uplink]\ninflight = 0\n", "t.ini:4: inflight: expected 1 to 65535: '0'" },
	/* [trdp NAME] */
	{ "[board]\nvehicle = a\n[trdp t]\ngroup = 192.0.2.1\n",
	  "t.ini:4: group: expected an IPv4 multicast group (224.0.0.0 to 239.255.255.255) like 239.193.0.1" },
	{ "[board]\nvehicle = a\n[trdp t]\ngroup = 239.193.0.1\ngroup = 239.193.0.1\n", "t.ini:5: group: given twice" },
	{ "[board]\nvehicle = a\n[trdp t]\nbind = 239.1.1.1\n", "t.ini:4: bind: expected a unicast IPv4 address" },
	{ "[board]\nvehicle = a\n[trdp t]\nbind = 192.0.2.300\n", "t.ini:4: bind: expected a unicast IPv4 address" },
	{ "[board]\nvehicle = a\n[trdp t]\npd_port = 0\nmd_port = 0\n",
	  "t.ini:3: [trdp t]: pd_port and md_port are both 0: nothing to receive" },
	{ "[board]\nvehicle = a\n[trdp t]\npd_port = 17225\n", "t.ini:3: [trdp t]: pd_port and md_port are the same" },
	{ "[board]\nvehicle = a\n[trdp t]\nbind = 192.0.2.2\ngroup = 239.193.0.1\n",
	  "t.ini:3: [trdp t]: bind = an address receives no multicast" },
	{ "[board]\nvehicle = a\n[trdp t]\npd_port = 70000\n", "t.ini:4: pd_port: expected 0 to 65535" },
	/* fewer than 4 ring blocks, or a size given in bytes */
	{ "[board]\nvehicle = a\n[trdp t]\ncapture_buffer_kib = 1023\n",
	  "t.ini:4: capture_buffer_kib: expected 1024 to 1048576: '1023'" },
	{ "[board]\nvehicle = a\n[trdp t]\ncapture_buffer_kib = 16777216\n",
	  "t.ini:4: capture_buffer_kib: expected 1024 to 1048576: '16777216'" },
	{ "[board]\nvehicle = a\n[trdp t]\ninterface = eth0\n[can t]\ninterface = can0\n",
	  "t.ini:5: bus 't' is defined twice" },
	/* [sparkplug] (issue 33): the connection checked as [uplink]'s, at the header's line */
	{ "[board]\nvehicle = a\n[sparkplug]\ngroup_id = g\n", "t.ini:3: [sparkplug]: no broker = mqtt[s]://host[:port]" },
	{ "[board]\nvehicle = a\n\n[sparkplug]\nbroker = mqtt://h\n",
	  "t.ini:4: [sparkplug]: missing 'group_id =' (the Sparkplug group)" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = http://h\n", "t.ini:4: broker: scheme must be mqtt:// or mqtts://" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = h:99999\n", "t.ini:4: broker: bad port" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtts://h\ngroup_id = g\n",
	  "t.ini:3: [sparkplug]: TLS needs ca_file" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ntls_insecure = true\n",
	  "t.ini:3: [sparkplug] tls_insecure only makes sense with mqtts:// or TLS files" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ncert_file = c.pem\nca_file = ca.pem\n",
	  "t.ini:3: [sparkplug]: cert_file and key_file go together" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = a/b\n",
	  "t.ini:5: group_id: may not contain '/', '+', '#' or control characters (it is an MQTT topic level): 'a/b'" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\nedge_node = n+\n",
	  "t.ini:6: edge_node: may not contain '/', '+', '#'" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\nprimary_host = #\n",
	  "t.ini:6: primary_host: may not contain '/', '+', '#'" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\nkeepalive_s = 1\n",
	  "t.ini:6: keepalive_s: expected 5 to 3600: '1'" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ninflight = 3\n",
	  "t.ini:6: unknown key 'inflight' in [sparkplug]" },
	{ "[board]\nvehicle = a\n[can v]\ninterface = can0\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\n"
	  "devices = v w\n", "t.ini:8: [sparkplug] devices: no bus 'w' in the file" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ndevices = all v\n",
	  "t.ini:6: devices: 'all' goes alone" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ndevices = v,v\n",
	  "t.ini:6: devices: a bus given twice" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\ngroup_id = g\ndevices = ,\n",
	  "t.ini:6: devices: expected all or bus names" },
	{ "[board]\nvehicle = a\n[sparkplug]\nbroker = mqtt://h\n[sparkplug]\ngroup_id = g\n",
	  "t.ini:5: section [sparkplug] appears twice" },
};

/* A [trdp] section into struct bus_trdp_cfg: defaults, groups in order,
   host-order addresses; the capture keys kept without receive = capture
   (unused then, as capture_block_ms). */
static void test_trdp(void)
{
	static const char text[] = "[board]\nvehicle = a\n[can c]\ninterface = can0\n[trdp ecn]\ninterface = eth1\n"
	                           "group = 239.193.0.1\ngroup = 239.255.0.7\nmd_port = 0\nxml = dev.xml\n"
	                           "[trdp uni]\nbind = 192.0.2.2\npd_port = 20000\ncapture_buffer_kib = 4096\n";
	struct conf_board *c = NULL;
	char err[CONF_ERR_MAX] = "";

	assert(conf_parse("/etc/railmon/t.ini", text, &c, err, sizeof(err)) == 0);
	assert(c->nbuses == 3 && c->buses[1].kind == BUS_KIND_TRDP && c->buses[1].index == 1);
	const struct bus_trdp_cfg *t = &c->buses[1].trdp;
	assert(!strcmp(c->buses[1].name, "ecn") && !strcmp(t->ifname, "eth1") && t->bind_ip == 0);
	assert(t->ngroups == 2 && t->groups[0] == 0xefc10001u && t->groups[1] == 0xefff0007u);
	assert(t->pd_port == 17224 && t->md_port == 0 && strstr(t->xml, "dev.xml"));
	assert(!t->receive_capture && t->capture_block_ms == 10 && t->capture_buffer_kib == 16384);
	t = &c->buses[2].trdp;
	assert(t->bind_ip == 0xc0000202u && t->pd_port == 20000 && t->md_port == 17225 && t->ngroups == 0);
	assert(t->ifname[0] == 0 && t->xml[0] == 0 && t->bytes == NULL);
	assert(!t->receive_capture && t->capture_buffer_kib == 4096);
	conf_free(c);
	printf("a board with two TRDP buses read\n");
}

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct conf_board *c = (struct conf_board *)0x1;
		char err[CONF_ERR_MAX] = "";
		int r = conf_parse("t.ini", bad[i].text, &c, err, sizeof(err));
		if (r != -EINVAL || strncmp(err, bad[i].want, strlen(bad[i].want))) {
			fprintf(stderr, "case %zu: r=%d\n  got:  %s\n  want: %s\n", i, r, err, bad[i].want);
			assert(0);
		}
		assert(c == (struct conf_board *)0x1); /* untouched on error */
	}
	printf("%zu malformed board files rejected with file:line\n", sizeof(bad) / sizeof(bad[0]));
}

/* A line longer than inih's buffer (200 bytes in Debian's libinih) once
   went on as more lines: an indented rest became a continuation of the
   key, reported as "given twice" on the wrong line. */
static void test_long_line(void)
{
	size_t len = 100000;
	char *text = malloc(len + 64), err[CONF_ERR_MAX] = "", want[128];
	struct conf_board *c = NULL;

	assert(text);
	strcpy(text, "[board]\nvehicle = ");
	for (size_t i = strlen(text); i < len; i += 2)
		memcpy(text + i, "x ", 2);
	strcpy(text + len, "\n[storage]\ndir = /x\n");
	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == -EINVAL && !c);
	snprintf(want, sizeof(want), "t.ini:2: line too long: %zu characters, at most ", len - strlen("[board]\n"));
	if (strncmp(err, want, strlen(want))) {
		fprintf(stderr, "long line: %s\n  want: %s\n", err, want);
		assert(0);
	}
	/* a long comment with words in it was "t.ini:2: 'vehicle' given twice
	   in [board] (first at line 2)": refused the same way, at its line */
	strcpy(text, "[board]\nvehicle = a\n;");
	for (size_t i = strlen(text); i < len; i += 6)
		memcpy(text + i, " lorem", 6);
	strcpy(text + len, "\n");
	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == -EINVAL);
	assert(!strncmp(err, "t.ini:3: line too long: ", 24));
	free(text);
	printf("long line: %s\n", err);
}

/* Indented lines are ordinary lines (inih would make them continuations of
   the previous value), and the last line counts without its newline. */
static void test_layout(void)
{
	struct conf_board *c = NULL;
	char err[CONF_ERR_MAX] = "";

	assert(conf_parse("t.ini", "[board]\n  vehicle = a\n\t\n[can x]\n\tinterface = can0\n"
	                       "\t  dbc = x.dbc\n  ; a comment\n", &c, err, sizeof(err)) == 0);
	assert(!strcmp(c->vehicle, "a") && !strcmp(c->buses[0].can.ifname, "can0"));
	assert(!strcmp(c->buses[0].can.dbc, "x.dbc") && c->dbc_line[0] == 6);
	conf_free(c);
	c = NULL;
	assert(conf_parse("t.ini", "[board]\nvehicle = a\nbogus = 1", &c, err, sizeof(err)) == -EINVAL);
	assert(!strcmp(err, "t.ini:3: unknown key 'bogus' in [board]"));
	assert(conf_parse("t.ini", "[board]\nvehicle = a\n  vehicle = b\n", &c, err, sizeof(err)) == -EINVAL);
	assert(!strcmp(err, "t.ini:3: 'vehicle' given twice in [board] (first at line 2)"));
}

/* Duplicate keys are found however many keys come before: a fixed table
   of every key once stopped looking after 16,384. */
static void test_many_keys(void)
{
	size_t cap = 4096 * 128 + 256, n = 0;
	char *text = malloc(cap), err[CONF_ERR_MAX] = "", want[128];
	struct conf_board *c = NULL;
	int line;

	assert(text);
	n += (size_t)snprintf(text + n, cap - n, "[board]\nvehicle = a\n[modbus m]\nhost = h\n");
	line = 4;
	for (int i = 0; i < 4096; i++) {
		n += (size_t)snprintf(text + n, cap - n, "[channel c%d]\nbus = m\nunit_id = 1\ntable = input\n"
		                      "type = u16\naddress = %d\n", i, i);
		line += 6;
	}
	n += (size_t)snprintf(text + n, cap - n, "address = 1\n");
	assert(n < cap);
	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == -EINVAL && !c);
	snprintf(want, sizeof(want), "t.ini:%d: 'address' given twice in [channel c4095] (first at line %d)", line + 1,
	         line);
	if (strcmp(err, want)) {
		fprintf(stderr, "many keys: %s\n  want: %s\n", err, want);
		assert(0);
	}
	free(text);
}

static char tmpdir[] = "/tmp/test-board-XXXXXX";

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

/*
 * The config hash covers the files the board refers to (conf_hash_files):
 * the ground keys a vehicle's channel dictionary by it, and TRDP channel
 * ids come from the XML, so one byte changed in the DBC or the XML under
 * the same board file must give another hash, the same files the same.
 */
static void test_config_hash(void)
{
	static const char dbc[] = "VERSION \"\"\nBO_ 256 M: 8 X\n SG_ S : 0|8@1+ (1,0) [0|0] \"\" X\n";
	static const char xml[] = "<device><data-set-list/></device>\n";
	static const char text[] = "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = h.dbc\n"
	                           "[trdp t]\nbind = 127.0.0.1\nxml = h.xml\n";
	char board[256], dpath[256], xpath[256], err[CONF_ERR_MAX] = "", changed[sizeof(xml)];
	struct conf_board *c = NULL;
	uint64_t h, h_board, h_xml, h_dbc, h_none;

	snprintf(board, sizeof(board), "%s/hash.ini", tmpdir);
	snprintf(dpath, sizeof(dpath), "%s/h.dbc", tmpdir);
	snprintf(xpath, sizeof(xpath), "%s/h.xml", tmpdir);
	write_file(board, text);
	write_file(dpath, dbc);
	write_file(xpath, xml);
#define LOAD(var)                                                                 \
	do {                                                                      \
		assert(conf_load(board, &c, err, sizeof(err)) == 0);              \
		var = c->hash;                                                    \
		c = conf_free(c);                                                 \
	} while (0)
	LOAD(h);
	LOAD(h_board);
	assert(h == h_board); /* same files, same hash */
	/* the board text alone (conf_parse reads no file) is not it */
	assert(conf_parse(board, text, &c, err, sizeof(err)) == 0 && c->hash == basic_fnv1a_str(text));
	assert(c->hash != h);
	conf_hash_files(c);
	assert(c->hash == h);
	c = conf_free(c);
	/* one byte of the XML */
	memcpy(changed, xml, sizeof(xml));
	changed[2] ^= 1;
	write_file(xpath, changed);
	LOAD(h_xml);
	assert(h_xml != h);
	write_file(xpath, xml);
	LOAD(h);
	assert(h == h_board); /* back: the same again */
	/* one byte of the DBC */
	{
		char d2[sizeof(dbc)];
		memcpy(d2, dbc, sizeof(dbc));
		d2[sizeof(dbc) - 3] ^= 1;
		write_file(dpath, d2);
	}
	LOAD(h_dbc);
	assert(h_dbc != h && h_dbc != h_xml);
	write_file(dpath, dbc);
	/* the XML's bytes moved into the DBC and the DBC's gone: not the same
	   (each file is delimited by its tag and length) */
	{
		char both[sizeof(dbc) + sizeof(xml)];
		snprintf(both, sizeof(both), "%s%s", dbc, xml);
		write_file(dpath, both);
		write_file(xpath, "");
		LOAD(h);
		assert(h != h_board && h != h_xml && h != h_dbc);
		write_file(dpath, dbc);
		write_file(xpath, xml);
	}
	/* a file missing: the board still loads (its loader says it), the
	   hash is defined and not that of the file there */
	assert(unlink(xpath) == 0);
	LOAD(h_none);
	LOAD(h);
	assert(h_none == h && h_none != h_board);
	write_file(xpath, xml);
	LOAD(h);
	assert(h == h_board);
#undef LOAD
	assert(unlink(xpath) == 0 && unlink(dpath) == 0 && unlink(board) == 0);
	printf("config hash: the board file, its DBC and its TRDP XML (one byte changed in either: another hash)\n");
}

/* A board file that is not a regular file: said, and a FIFO must not block
   (SIGALRM ends the test if it does). */
static void test_board_not_file(void)
{
	struct conf_board *c = NULL;
	char path[256], err[CONF_ERR_MAX] = "", want[300];

	alarm(20);
	assert(conf_load(tmpdir, &c, err, sizeof(err)) == -EISDIR && !c);
	snprintf(want, sizeof(want), "%s: is a directory", tmpdir);
	assert(!strcmp(err, want));
	snprintf(path, sizeof(path), "%s/board.fifo", tmpdir);
	assert(mkfifo(path, 0600) == 0);
	assert(conf_load(path, &c, err, sizeof(err)) == -EINVAL && !c);
	snprintf(want, sizeof(want), "%s: is a FIFO, not a regular file", path);
	assert(!strcmp(err, want));
	assert(unlink(path) == 0);
	assert(conf_load("/dev/null", &c, err, sizeof(err)) == -EINVAL);
	assert(!strcmp(err, "/dev/null: is a character device, not a regular file"));
	alarm(0);
}

/*
 * DBC files as `run` and `check` load them (pl_dbc_load): every problem
 * names the board file and the line of 'dbc =', or the DBC's own line.
 */
static void test_dbc_files(void)
{
	static const char sig[] = " SG_ S : 0|8@1+ (1,0) [0|0] \"\" B\n";
	struct {
		const char *name, *text; /* text NULL: made below */
		int r;
		const char *want;        /* after "<board>:<line>: [can x]: dbc <dir>/" */
	} cases[] = {
		{ "dir.dbc", NULL, -EISDIR, "dir.dbc: is a directory" },
		{ "fifo.dbc", NULL, -EINVAL, "fifo.dbc: is a FIFO, not a regular file" },
		{ "missing.dbc", NULL, -ENOENT, "missing.dbc: No such file or directory" },
	};
	char path[256], board[512], err[CONF_ERR_MAX], want[600];
	struct conf_board *c;
	dbc_t *dbc;

	alarm(20);
	snprintf(path, sizeof(path), "%s/dir.dbc", tmpdir);
	assert(mkdir(path, 0700) == 0);
	snprintf(path, sizeof(path), "%s/fifo.dbc", tmpdir);
	assert(mkfifo(path, 0600) == 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].text) {
			snprintf(path, sizeof(path), "%s/%s", tmpdir, cases[i].name);
			write_file(path, cases[i].text);
		}
		snprintf(board, sizeof(board), "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = %s\n",
		         cases[i].name);
		snprintf(path, sizeof(path), "%s/b.ini", tmpdir);
		write_file(path, board);
		assert(conf_load(path, &c, err, sizeof(err)) == 0);
		dbc = NULL;
		assert(pl_dbc_load(c, 0, &dbc, err, sizeof(err)) == cases[i].r && !dbc);
		snprintf(want, sizeof(want), "%s:6: [can x]: dbc %s/%s", path, tmpdir, cases[i].want);
		if (strncmp(err, want, strlen(want))) {
			fprintf(stderr, "%s: %s\n  want: %s\n", cases[i].name, err, want);
			assert(0);
		}
		printf("%s\n", err);
		conf_free(c);
	}
	/* a signal name the channel table would cut (two such names would
	   become one), on a 1 MB line */
	{
		size_t len = 1000000;
		char *text = malloc(len + 256), *p = text;

		assert(text);
		p += sprintf(p, "BO_ 256 M: 8 A\n SG_ ");
		memset(p, 'N', len);
		p += len;
		sprintf(p, "1 : 0|8@1+ (1,0) [0|0] \"\" B\n%s", sig);
		snprintf(path, sizeof(path), "%s/long.dbc", tmpdir);
		write_file(path, text);
		free(text);
		snprintf(path, sizeof(path), "%s/b.ini", tmpdir);
		write_file(path, "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = long.dbc\n");
		assert(conf_load(path, &c, err, sizeof(err)) == 0);
		assert(pl_dbc_load(c, 0, &dbc, err, sizeof(err)) == -EBADMSG);
		snprintf(want, sizeof(want), "%s/long.dbc:2: signal 'NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN...': "
		         "a qualified name (message.signal) of %zu characters (at most 127) (the dbc of [can x], %s:6)", tmpdir,
		         len + 3, path);
		if (strcmp(err, want)) {
			fprintf(stderr, "long name: %s\n  want: %s\n", err, want);
			assert(0);
		}
		printf("%s\n", err);
		conf_free(c);
	}
	/* no message: loads with a warning (cantools loads it), the bus logs
	   raw frames; a unit of 49 characters reaches the channel list whole
	   (both were refused) */
	{
		static const char *const nomsg[] = { "", "VERSION \"\"\nNS_ :\nBS_:\nBU_: A B\n" };
		static const char unit[] = "percent of rated continuous traction power [%]xyz";
		const struct pl_channel *list;
		pl_channels_t *ch;

		for (size_t i = 0; i < 2; i++) {
			snprintf(path, sizeof(path), "%s/nomsg.dbc", tmpdir);
			write_file(path, nomsg[i]);
			snprintf(path, sizeof(path), "%s/b.ini", tmpdir);
			write_file(path, "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = nomsg.dbc\n");
			assert(conf_load(path, &c, err, sizeof(err)) == 0);
			assert(pl_dbc_load(c, 0, &dbc, err, sizeof(err)) == 0 && dbc_message_count(dbc) == 0);
			snprintf(want, sizeof(want), "%s/nomsg.dbc:1: defines no message (BO_); nothing will be decoded", tmpdir);
			assert(dbc_warning_count(dbc) == 1 && !strcmp(dbc_warning(dbc, 0), want));
			dbc_free(dbc);
			conf_free(c);
		}
		snprintf(path, sizeof(path), "%s/unit.dbc", tmpdir);
		snprintf(board, sizeof(board), "BO_ 256 M: 8 A\n SG_ S : 0|8@1+ (1,0) [0|0] \"%s\" B\n", unit);
		write_file(path, board);
		snprintf(path, sizeof(path), "%s/b.ini", tmpdir);
		write_file(path, "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = unit.dbc\n");
		assert(conf_load(path, &c, err, sizeof(err)) == 0);
		if (pl_channels_new(c, &ch, err, sizeof(err)) != 0) {
			fprintf(stderr, "long unit: %s\n", err);
			assert(0);
		}
		assert(pl_channels_list(ch, &list) == 1 && !strcmp(list[0].unit, unit) && strlen(unit) == 49);
		assert(!strcmp(pl_channels_dictionary(ch)[0].unit, unit));
		pl_channels_free(ch);
		conf_free(c);
	}
	/* and a good one loads */
	snprintf(path, sizeof(path), "%s/good.dbc", tmpdir);
	snprintf(board, sizeof(board), "BO_ 256 M: 8 A\n%s", sig);
	write_file(path, board);
	snprintf(path, sizeof(path), "%s/b.ini", tmpdir);
	write_file(path, "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = good.dbc\n");
	assert(conf_load(path, &c, err, sizeof(err)) == 0);
	assert(pl_dbc_load(c, 0, &dbc, err, sizeof(err)) == 0 && dbc_signal_count(dbc) == 1);
	dbc_free(dbc);
	assert(pl_dbc_load(c, 1, &dbc, err, sizeof(err)) == -EINVAL);
	assert(pl_dbc_load(NULL, 0, &dbc, err, sizeof(err)) == -EINVAL);
	conf_free(c);
	alarm(0);
	for (const char *n = "dir.dbc\0fifo.dbc\0nomsg.dbc\0unit.dbc\0long.dbc\0good.dbc\0b.ini\0"; *n; n += strlen(n) + 1) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, n);
		assert((strcmp(n, "dir.dbc") ? unlink(path) : rmdir(path)) == 0);
	}
}

/* Modbus TCP keeps unit 0 (config.c says why). */
static void test_tcp_unit_zero(void)
{
	static const char text[] = "[board]\nvehicle = a\n[modbus m]\nhost = 10.0.0.2\n"
	                           "[channel c]\nbus = m\nunit_id = 0\naddress = 1\n";
	struct conf_board *c;
	char err[CONF_ERR_MAX] = "";

	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == 0);
	assert(c->buses[0].mb.nchannels == 1 && c->buses[0].mb.channels[0].unit_id == 0);
	conf_free(c);
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
		struct conf_board *c;
		char err[CONF_ERR_MAX] = "";
		if (conf_parse("t.ini", ok[i], &c, err, sizeof(err)) != 0) {
			fprintf(stderr, "refused: %s\n  %s\n", ok[i], err);
			assert(0);
		}
		conf_free(c);
	}
	assert(!strcmp(conf_size_text(16u << 20, buf, sizeof(buf)), "16M"));
	assert(!strcmp(conf_size_text(3ull << 39, buf, sizeof(buf)), "1.5T"));
	assert(!strcmp(conf_size_text(1023, buf, sizeof(buf)), "1023 bytes"));
	assert(!strcmp(conf_size_text(1024, buf, sizeof(buf)), "1K"));
}

/* Every table is sound, its defaults are the ones board files always had,
   and the reference names every key. */
static void test_schema(void)
{
	static const char text[] = "[board]\nvehicle = a\n[can c]\ninterface = x\n[modbus m]\nhost = h\n"
	                           "[channel ch]\nbus = m\naddress = 1\n";
	struct conf_board *c;
	char err[CONF_ERR_MAX] = "", *ref = NULL;
	size_t reflen = 0;
	FILE *f;

	for (enum conf_section s = 0; s < CONF_SEC_MAX; s++) {
		if (basic_ini_table_check(conf_schema_table(s), err, sizeof(err)) < 0) {
			fprintf(stderr, "board schema: %s\n", err);
			assert(0);
		}
	}
	assert(conf_schema_table(CONF_SEC_MAX) == NULL);
	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == 0);
	assert(c->collector_cpu == -1 && c->batch_ms == 1000 && c->batch_max == 4096 && c->ring_slots == 8192);
	assert(c->meta_interval_s == 60 && c->health_interval_s == 10 && !c->rt_priority && !c->hw_watchdog[0]);
	assert(c->rx_coalesce_us == 1000); /* the 1 ms live buses always waited */
	assert(c->storage.sync_window_ms == 200 && c->storage.segment_bytes == 16u << 20);
	assert(!c->storage.retention_bytes && !c->storage.retention_age_s && !c->storage.segment_line);
	assert(c->uplink.inflight == 20 && c->uplink.keepalive_s == 20 && !c->uplink.enabled);
	assert(c->buses[0].can.listen_only && c->buses[0].can.trace_speed == 1.0 && !c->buses[0].can.fd);
	assert(c->buses[0].can.serial_baud == 115200 && c->buses[0].can.driver == BUS_CAN_SOCKETCAN);
	assert(c->bus_cpu[0] == -1 && c->bus_cpu[1] == -1 && !c->dbc_line[0]);
	assert(c->buses[1].mb.port == 502 && c->buses[1].mb.baud == 19200 && c->buses[1].mb.parity == 'E');
	assert(c->buses[1].mb.data_bits == 8 && c->buses[1].mb.stop_bits == 1 && !c->buses[1].mb.rtu);
	assert(c->buses[1].mb.response_timeout_ms == 500 && c->buses[1].mb.byte_timeout_ms == 50);
	assert(c->buses[1].mb.max_gap == 8 && c->buses[1].mb.nchannels == 1);
	assert(c->buses[1].mb.channels[0].scale == 1.0 && c->buses[1].mb.channels[0].type == BUS_MB_U16);
	assert(c->buses[1].mb.channels[0].table == BUS_MB_HOLDING && c->buses[1].mb.channels[0].period_ms == 1000);
	conf_free(c);
	/* strtol skipped a blank after the broker's ':' and the filter's '/' */
	assert(conf_parse("t.ini", "[board]\nvehicle = a\n[uplink]\nbroker = h: 80\n[can x]\ninterface = c\n"
	                       "filter = 0x100/ 0x7ff\n", &c, err, sizeof(err)) == 0);
	assert(c->uplink.port == 80 && c->buses[0].can.filters[0].mask == 0x7ff);
	conf_free(c);
	/* rx_coalesce_us: 0 turns the wait off; the bound, 100 ms, is the source's */
	assert(conf_parse("t.ini", "[board]\nvehicle = a\nrx_coalesce_us = 0\n", &c, err, sizeof(err)) == 0);
	assert(c->rx_coalesce_us == 0);
	conf_free(c);
	assert(conf_parse("t.ini", "[board]\nvehicle = a\nrx_coalesce_us = 2000\n", &c, err, sizeof(err)) == 0);
	assert(c->rx_coalesce_us == 2000);
	conf_free(c);
	assert(conf_parse("t.ini", "[board]\nvehicle = a\nrx_coalesce_us = 100000\n", &c, err, sizeof(err)) == 0);
	assert(c->rx_coalesce_us == CONF_RX_COALESCE_US_MAX);
	conf_free(c);
	f = open_memstream(&ref, &reflen);
	assert(f && conf_print_keys(f, false) == 0 && fclose(f) == 0);
	for (enum conf_section s = 0; s < CONF_SEC_MAX; s++) {
		const struct basic_ini_table *t = conf_schema_table(s);
		for (size_t i = 0; i < t->nkeys; i++) {
			char want[64];
			snprintf(want, sizeof(want), "\n  %s: ", t->keys[i].name);
			assert(strstr(ref, want));
		}
	}
	free(ref);
	assert(conf_print_keys(NULL, true) == -EINVAL);
	assert(!strcmp(conf_mb_table_name(BUS_MB_INPUT), "input") && !strcmp(conf_mb_table_name(0), "?"));
	assert(!strcmp(conf_mb_type_name(BUS_MB_BIT), "bit") && !strcmp(conf_mb_type_name(BUS_MB_TYPE_MAX), "?"));
	assert(!strcmp(conf_mb_order_name(BUS_MB_CDAB), "CDAB") && !strcmp(conf_mb_order_name(BUS_MB_ORDER_MAX), "?"));
}

static void test_files(void)
{
	struct conf_board *c;
	char err[CONF_ERR_MAX];

	assert(conf_load("/nonexistent/board.ini", &c, err, sizeof(err)) == -ENOENT);
	assert(strstr(err, "/nonexistent/board.ini: No such file"));
	assert(conf_load(NULL, &c, err, sizeof(err)) == -EINVAL);
	assert(conf_parse("x", NULL, &c, err, sizeof(err)) == -EINVAL);
	assert(conf_free(NULL) == NULL);
	assert(conf_bus(NULL, "x") == NULL);
}

/* replay's boards (conf/replay.c): the good board's CAN bus as a trace
   source, its Modbus link left out; and --dbc's board refused in words. */
static void test_replay_boards(void)
{
	struct conf_board *c;
	char err[CONF_ERR_MAX + 4096] = "", vehicle[200] = "";

	assert(conf_parse("/etc/railmon/emu.ini", good, &c, err, sizeof(err)) == 0);
	assert(c->nbuses == 2);
	conf_replay_trace(c, "/tmp/t.log", 2.5);
	assert(c->nbuses == 1 && c->buses[0].kind == BUS_KIND_CAN && c->buses[0].can.driver == BUS_CAN_TRACE);
	assert(!strcmp(c->buses[0].can.device, "/tmp/t.log") && c->buses[0].can.trace_speed == 2.5);
	assert(!c->buses[0].can.ifname[0] && c->buses[0].index == 0); /* one CAN bus: every frame */
	conf_free(c);

	c = NULL;
	assert(conf_replay_dbc("/nonexistent/t.log", "x.dbc", "V", &c, err, sizeof(err)) == -ENOENT && !c);
	assert(!strcmp(err, "/nonexistent/t.log: No such file or directory"));
	assert(conf_replay_dbc("/", "/", "V;1", &c, err, sizeof(err)) == -EINVAL && !c);
	assert(strstr(err, "holds a character a board file cannot"));
	/* a vehicle id the board file refuses: said with --dbc and the line */
	memset(vehicle, 'V', sizeof(vehicle) - 1);
	assert(conf_replay_dbc("/", "/", vehicle, &c, err, sizeof(err)) == -EBADMSG && !c);
	assert(!strncmp(err, "--dbc /: ", 9) && strstr(err, "(--dbc):2:"));
	assert(conf_replay_dbc("/", "/", "V1", &c, err, sizeof(err)) == 0 && c && c->nbuses == 1);
	assert(!strcmp(c->vehicle, "V1") && c->buses[0].can.driver == BUS_CAN_TRACE);
	conf_free(c);
}

/* conf/demo.c: where `railmon demo` finds its board, and its Modbus
   devices put on the simulator's port. */
static void test_demo_board(void)
{
	char buf[PATH_MAX], err[CONF_ERR_MAX], huge[5000];
	const char *why = NULL;
	struct conf_board *cfg = NULL;
	size_t nmb = 0;

	setenv("RAILMON_PKGDATADIR", "/opt/x", 1);
	assert(conf_demo_board_path(buf, sizeof(buf), &why) == 0);
	assert(!strcmp(buf, "/opt/x/demo.ini") && !strcmp(why, "RAILMON_PKGDATADIR"));
	memset(huge, 'x', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = 0;
	setenv("RAILMON_PKGDATADIR", huge, 1);
	why = NULL;
	assert(conf_demo_board_path(buf, sizeof(buf), &why) == -ENAMETOOLONG && !why);
	assert(conf_demo_board(NULL, buf, sizeof(buf), err, sizeof(err)) == -ENAMETOOLONG);
	assert(!strcmp(err, "the demo board's path is too long (RAILMON_PKGDATADIR)"));
	setenv("RAILMON_PKGDATADIR", "/nonexistent", 1);
	assert(conf_demo_board(NULL, buf, sizeof(buf), err, sizeof(err)) == -ENOENT);
	assert(!strcmp(err, "no demo board /nonexistent/demo.ini (RAILMON_PKGDATADIR): No such file or directory; "
	               "give one with --board FILE"));
	/* --board is taken as it is: conf_load says what is wrong with it */
	assert(conf_demo_board("my.ini", buf, sizeof(buf), err, sizeof(err)) == 0 && !strcmp(buf, "my.ini"));
	/* this test runs from the build tree: the board of its source tree */
	unsetenv("RAILMON_PKGDATADIR");
	assert(conf_demo_board_path(buf, sizeof(buf), &why) == 0);
	assert(!strcmp(buf, RAILMON_SOURCE_DIR "/cli/demo.ini") && !strcmp(why, "the source tree of this build"));
	assert(conf_demo_board(NULL, buf, sizeof(buf), err, sizeof(err)) == 0);
	assert(!strcmp(buf, RAILMON_SOURCE_DIR "/cli/demo.ini"));

	assert(conf_demo_load(buf, 40123, &cfg, err, sizeof(err)) == 0);
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->buses[b].kind == BUS_KIND_MODBUS && !cfg->buses[b].mb.rtu) {
			assert(cfg->buses[b].mb.port == 40123);
			nmb++;
		}
	assert(nmb >= 1);
	conf_free(cfg);
	cfg = NULL;
	assert(conf_demo_load("/nonexistent/demo.ini", 40123, &cfg, err, sizeof(err)) < 0 && !cfg);
	assert(strstr(err, "/nonexistent/demo.ini"));
}

/* The dictionary carries each channel's decimal resolution (record/format.h):
   a Modbus channel's from its scale and offset, a DBC signal's from its
   factor and offset; a float register or signal has none.  Catches a
   dictionary that leaves it out (export of a log would fall back to the
   shortest form) or gives a float channel one (its values cut). */
static void test_resolution(void)
{
	static const struct { const char *name; bool has; unsigned dec; } want[] = {
		{ "m.S", true, 2 }, { "m.T", true, 3 }, { "m.F", false, 0 },
		{ "tenth", true, 1 }, { "quarter", true, 2 }, { "flt", false, 0 }, { "coil", true, 0 },
	};
	char path[512], err[CONF_ERR_MAX];
	struct conf_board *c;
	pl_channels_t *ch;
	const struct rec_channel *d;

	snprintf(path, sizeof(path), "%s/res.dbc", tmpdir);
	write_file(path, "BO_ 256 m: 8 A\n SG_ S : 0|16@1+ (0.05,0) [0|0] \"\" B\n"
	                 " SG_ T : 16|16@1+ (0.001,-40.5) [0|0] \"\" B\n SG_ F : 32|32@1+ (0.05,0) [0|0] \"\" B\n"
	                 "SIG_VALTYPE_ 256 F : 1;\n");
	snprintf(path, sizeof(path), "%s/res.ini", tmpdir);
	write_file(path, "[board]\nvehicle = a\n[can x]\ndriver = trace\nfile = t.log\ndbc = res.dbc\n"
	                 "[modbus h]\ntransport = tcp\nhost = 127.0.0.1\n"
	                 "[channel tenth]\nbus = h\ntable = input\naddress = 0\ntype = s16\nscale = 0.1\n"
	                 "[channel quarter]\nbus = h\ntable = input\naddress = 1\nscale = 0.25\noffset = -40.5\n"
	                 "[channel flt]\nbus = h\naddress = 2\ntype = f32\n"
	                 "[channel coil]\nbus = h\ntable = coil\naddress = 3\n");
	if (conf_load(path, &c, err, sizeof(err)) != 0 || pl_channels_new(c, &ch, err, sizeof(err)) != 0) {
		fprintf(stderr, "resolution board: %s\n", err);
		assert(0);
	}
	assert(pl_channels_list(ch, &(const struct pl_channel *){ NULL }) == sizeof(want) / sizeof(want[0]));
	d = pl_channels_dictionary(ch);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (strcmp(d[i].name, want[i].name) || d[i].has_decimals != want[i].has || d[i].decimals != want[i].dec) {
			fprintf(stderr, "resolution: %s has %d decimals %u, want %s %d %u\n", d[i].name, d[i].has_decimals,
			        d[i].decimals, want[i].name, want[i].has, want[i].dec);
			assert(0);
		}
	}
	pl_channels_free(ch);
	conf_free(c);
	assert(unlink(path) == 0);
	snprintf(path, sizeof(path), "%s/res.dbc", tmpdir);
	assert(unlink(path) == 0);
	puts("resolution: the dictionary's decimals: ok");
}

/* uplink = and uplink_frames = as the forwarder gets them, and as check
   says them back.  Catches: parts not combined, every in the wrong unit,
   a bus default not copied to conf_board, frame ranges lost. */
static void test_uplink_policy(void)
{
	static const char text[] =
		"[board]\nvehicle = a\n[can v]\ninterface = can0\nuplink = every 1m\n"
		"uplink_frames = ids 0x100 0x200-0x2FF\n"
		"[modbus m]\nhost = h\nuplink = none\n[channel c]\nbus = m\naddress = 1\n"
		"uplink = deadband 0.5, every 10s\n[channel d]\nbus = m\naddress = 2\n"
		"[signal Speed]\nuplink = change, every 250ms\n[signal Brake]\nrequired_within_ms = 100\n";
	struct conf_board *c;
	char err[CONF_ERR_MAX], t[96];

	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == 0);
	assert(c->bus_uplink[0].flags == CONF_UPLINK_EVERY && c->bus_uplink[0].every_ms == 60000);
	assert(c->bus_frames[0].nranges == 2 && !c->bus_frames[0].none && c->bus_frames[0].ranges[0].lo == 0x100 &&
	       c->bus_frames[0].ranges[0].hi == 0x100 && c->bus_frames[0].ranges[1].lo == 0x200 &&
	       c->bus_frames[0].ranges[1].hi == 0x2ff);
	assert(c->bus_uplink[1].flags == CONF_UPLINK_NONE && !c->bus_frames[1].nranges);
	/* the signals' first (their section order), then the channels' */
	assert(c->npolicies == 2);
	assert(!strcmp(c->policies[0].channel, "Speed") && c->policies[0].line == 18 &&
	       c->policies[0].pol.flags == (CONF_UPLINK_CHANGE | CONF_UPLINK_EVERY) && c->policies[0].pol.every_ms == 250);
	assert(!strcmp(c->policies[1].channel, "c") && c->policies[1].line == 13 &&
	       c->policies[1].pol.flags == (CONF_UPLINK_DEADBAND | CONF_UPLINK_EVERY) &&
	       c->policies[1].pol.deadband == 0.5 && c->policies[1].pol.every_ms == 10000);
	assert(!strcmp(conf_uplink_policy_text(&c->policies[1].pol, t, sizeof(t)), "deadband 0.5, every 10s"));
	assert(!strcmp(conf_uplink_policy_text(&c->policies[0].pol, t, sizeof(t)), "change, every 250ms"));
	assert(!strcmp(conf_uplink_policy_text(&c->bus_uplink[1], t, sizeof(t)), "none"));
	assert(!strcmp(conf_uplink_policy_text(&c->bus_uplink[2], t, sizeof(t)), "all"));
	/* the deadband in the shortest text that reads back as it: catches
	   %.17g (0.050000000000000003) and a fixed %.15g (0.3 for the
	   double 0.30000000000000004, a different one) */
	{
		struct conf_uplink_policy d = { CONF_UPLINK_DEADBAND, 0.05, 0 };

		assert(!strcmp(conf_uplink_policy_text(&d, t, sizeof(t)), "deadband 0.05"));
		d.deadband = 0.1 + 0.2;
		assert(!strcmp(conf_uplink_policy_text(&d, t, sizeof(t)), "deadband 0.30000000000000004"));
		d.deadband = 2.5e-7;
		assert(!strcmp(conf_uplink_policy_text(&d, t, sizeof(t)), "deadband 2.5e-07"));
	}
	/* a [signal] with required_within_ms only is required, as before */
	assert(c->nrequired == 1 && !strcmp(c->required[0].channel, "Brake") && c->required[0].within_ms == 100);
	conf_free(c);
	puts("uplink policies: parsed, combined, said back");
}

/* [sparkplug] (issue 33): the connection parsed by [uplink]'s keys into
   its own struct (not into [uplink]'s), the edge node defaulting to the
   vehicle, devices in the file's order. */
static void test_sparkplug(void)
{
	static const char text[] =
		"[board]\nvehicle = train-7\n[uplink]\nbroker = mqtt://ground:1884\n[can v]\ninterface = can0\n"
		"[can m]\ninterface = can1\n[sparkplug]\nbroker = mqtts://scada.example\nca_file = /etc/ca.pem\n"
		"username = edge\ngroup_id = Fleet A\ndevices = m, v\nprimary_host = ignition\nkeepalive_s = 30\n";
	struct conf_board *c;
	char err[CONF_ERR_MAX];

	assert(conf_parse("t.ini", text, &c, err, sizeof(err)) == 0);
	assert(c->sparkplug.mqtt.enabled && c->sparkplug.mqtt.tls && c->sparkplug.mqtt.port == 8883);
	assert(!strcmp(c->sparkplug.mqtt.host, "scada.example") && !strcmp(c->sparkplug.mqtt.username, "edge"));
	assert(!strcmp(c->sparkplug.mqtt.ca_file, "/etc/ca.pem") && c->sparkplug.mqtt.keepalive_s == 30);
	/* [uplink] kept its own */
	assert(!c->uplink.tls && c->uplink.port == 1884 && !strcmp(c->uplink.host, "ground") && !c->uplink.username[0]);
	assert(c->uplink.keepalive_s == 20);
	assert(!strcmp(c->sparkplug.group_id, "Fleet A") && !strcmp(c->sparkplug.edge_node, "train-7"));
	assert(!strcmp(c->sparkplug.primary_host, "ignition") && c->sparkplug.line == 9);
	assert(c->sparkplug.ndevices == 2 && !strcmp(c->sparkplug.devices[0], "m") &&
	       !strcmp(c->sparkplug.devices[1], "v") && c->sparkplug.devices_line == 14);
	conf_free(c);
	assert(conf_parse("t.ini", "[board]\nvehicle = a\n[sparkplug]\nbroker = h\ngroup_id = g\nedge_node = e1\n"
	                  "devices = all\n", &c, err, sizeof(err)) == 0);
	assert(!strcmp(c->sparkplug.edge_node, "e1") && c->sparkplug.ndevices == 0 && c->sparkplug.mqtt.port == 1883);
	assert(!c->sparkplug.primary_host[0] && c->sparkplug.mqtt.keepalive_s == 20 && !c->uplink.enabled);
	conf_free(c);
	/* no section: no edge node */
	assert(conf_parse("t.ini", "[board]\nvehicle = a\n", &c, err, sizeof(err)) == 0);
	assert(!c->sparkplug.mqtt.enabled && !c->sparkplug.group_id[0] && !c->sparkplug.edge_node[0]);
	conf_free(c);
	puts("sparkplug: parsed beside [uplink], edge node = vehicle by default");
}

int main(void)
{
	assert(mkdtemp(tmpdir));
	test_good();
	test_bad();
	test_trdp();
	test_long_line();
	test_layout();
	test_many_keys();
	test_board_not_file();
	test_dbc_files();
	test_config_hash();
	test_tcp_unit_zero();
	test_retention_limit();
	test_schema();
	test_replay_boards();
	test_files();
	test_demo_board();
	test_resolution();
	test_uplink_policy();
	test_sparkplug();
	assert(rmdir(tmpdir) == 0);
	puts("test-board: ok");
	return 0;
}
