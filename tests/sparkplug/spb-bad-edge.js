// SPDX-License-Identifier: MIT
// spb-bad-edge.js BROKER_URL - an edge node (npm mqtt, payloads encoded
// by Eclipse Tahu's sparkplug-payload) that breaks each session rule of
// spb-host.js a known number of times, for test-spb-host.py: what the
// host counts must be exactly these (the table at the end of this file's
// scenario, EXPECTED in test-spb-host.py).  Group Fleet, node E-1, device
// dev1; everything QoS 0 on one connection, so the host gets it in order.
//
// Where it waits for the host it publishes a mark, a DCMD to its device
// "rebirth-wait-<k>" (the host's k-th Rebirth: the 1st answered at once,
// the 2nd LATE_MS later), "state-wait-offline" or "state-wait-online"
// (the host's STATE, spBv1.0/STATE/scada, to say so), and "done" after its
// last message: commands the host leaves out of its rules, and in the
// broker's order after all it sent before, so the host has seen those
// when it sees the mark.
"use strict";
const mqtt = require("mqtt");
const sparkplug = require("sparkplug-payload").get("spBv1.0");

const LATE_MS = Number(process.env.SPB_BAD_EDGE_LATE_MS || "4000");
const G = "spBv1.0/Fleet/";
const T = 1733400000000;
const say = (line) => process.stdout.write(line + "\n");
const client = mqtt.connect(process.argv[2], { clientId: "spb-bad-edge-" + process.pid, protocolVersion: 4,
	reconnectPeriod: 0, will: { topic: G + "NDEATH/E-1", qos: 1, retain: false,
		payload: Buffer.from(sparkplug.encodePayload({ timestamp: T, metrics: [bdSeq(254)] })) } });

function bdSeq(b) {
	return { name: "bdSeq", alias: 0, type: "UInt64", value: b };
}
function send(kind, seq, metrics, dev) {
	const p = { timestamp: T, metrics };
	if (seq !== null)
		p.seq = seq;
	client.publish(G + kind + "/E-1" + (dev ? "/" + dev : ""), Buffer.from(sparkplug.encodePayload(p)), { qos: 0 });
}
const nbirth = (b, seq) => send("NBIRTH", seq, [bdSeq(b),
	{ name: "Node Control/Rebirth", alias: 1, type: "Boolean", value: false },
	{ name: "Events", alias: 2, type: "String", value: "" }]);
const dbirth = (seq) => send("DBIRTH", seq, [{ name: "Speed", alias: 10, type: "Double", value: 0 },
	{ name: "Door", alias: 11, type: "String", value: "" }], "dev1");
const speed = (t, v, hist) => ({ alias: 10, type: "Double", timestamp: T + t, value: v, isHistorical: hist === true });

// waits: the host's k-th NCMD, the host's STATE
let onNcmd = null, onState = null;
client.on("message", (topic, buf) => {
	if (topic.endsWith("/NCMD/E-1") && onNcmd) {
		const f = onNcmd;
		onNcmd = null;
		f();
	} else if (topic === "spBv1.0/STATE/scada" && onState) {
		onState(JSON.parse(buf.toString()).online === true);
	}
});
function mark(name) {
	client.publish(G + "DCMD/E-1/" + name, Buffer.from(sparkplug.encodePayload({ timestamp: T, metrics: [] })),
		{ qos: 0 });
	say(name);
}
const ncmd = (k) => new Promise((resolve) => {
	onNcmd = resolve;
	mark("rebirth-wait-" + k);
});
const state = (online) => new Promise((resolve) => {
	onState = (o) => {
		if (o === online) {
			onState = null;
			resolve();
		}
	};
	mark("state-wait-" + (online ? "online" : "offline"));
});

client.on("connect", () => client.subscribe([G + "NCMD/E-1", "spBv1.0/STATE/scada"], { qos: 1 }, async () => {
	send("NDATA", 0, [{ alias: 2, type: "String", timestamp: T, value: "x" }]); // before-birth 1
	nbirth(254, 0); // the first: nothing to compare
	send("DDATA", 1, [speed(1, 1)], "dev1"); // device-not-born 1 (no DBIRTH)
	dbirth(2);
	send("DDATA", 3, [speed(2, 2), { alias: 12, type: "Double", timestamp: T + 2, value: 0 }], "dev1"); // alias-undeclared 1
	send("DDATA", 5, [speed(3, 3)], "dev1"); // seq 1 (4 missing)
	send("DDATA", 6, [speed(100, 4, true), speed(90, 5, true)], "dev1"); // historical-order 1
	send("NDATA", 7, [{ alias: 2, type: "String", timestamp: T + 4, value: "y" },
		{ alias: 99, type: "String", timestamp: T + 4, value: "z" }]); // alias-undeclared 2
	send("DDEATH", 8, [], "dev1");
	send("DDATA", 9, [speed(5, 6)], "dev1"); // device-not-born 2 (after DDEATH)
	await ncmd(1); // answered at once: a Rebirth, same bdSeq
	nbirth(254, 0);
	dbirth(1);
	await ncmd(2);
	// the scenario's lateness, not a wait for a peer
	await new Promise((resolve) => setTimeout(resolve, LATE_MS)); // rebirth-late 1
	nbirth(254, 0);
	dbirth(1);
	send("NDEATH", null, [bdSeq(253)]); // ndeath-bdseq 1
	send("DDATA", 2, [speed(6, 7)], "dev1"); // before-birth 2 (after NDEATH)
	nbirth(255, 0); // + 1
	send("NDEATH", null, [bdSeq(255)]);
	nbirth(0, 0); // 255 + 1 wraps to 0
	send("NDEATH", null, [bdSeq(0)]);
	nbirth(2, 0); // bdseq-next 1 (1 skipped, the host connected throughout)
	nbirth(2, 5); // seq 2: a Rebirth's NBIRTH with seq 5
	await state(false);
	nbirth(2, 0); // birth-while-offline 1
	await state(true);
	nbirth(2, 0);
	send("NDEATH", null, [bdSeq(2)]);
	client.publish(G + "DDATA/E-1/dev1", Buffer.from([0xff, 0xff, 0xff, 0xff]), { qos: 0 }); // decode 1
	mark("done");
	client.end(false, {}, () => say("ended"));
}));
