// SPDX-License-Identifier: MIT
// spb-host.js --broker URL --group G [--host-id H] [--username U --password P]
//             [--values FILE] [--state online|offline] [--rebirth-ms MS]
//
// A Sparkplug B host application (Eclipse Sparkplug 3.0) on npm `mqtt`
// and Eclipse Tahu's payload library (npm sparkplug-payload): the
// independent peer that checks railmon's edge node keeps the session
// rules.  It subscribes to spBv1.0/<group>/# and, with --host-id, plays
// the primary host: its spBv1.0/STATE/<host> retained, QoS 1, published
// online at every connect (or offline with --state offline) and with an
// offline will.  Every message is decoded by Tahu and checked, per edge
// node and device, against the rules of RULES below; each violation is
// printed as a line "VIOLATION <rule>: <what>", and at the end a table and
// a last line "verdict {JSON}" with the checks and violations per rule.
//
// Its stdout, one line each, in the order they happen (tests wait for
// them): "connected", "subscribed" (its SUBACK: the host sees all from
// here), "lost" (its connection), "state online|offline" (its STATE
// acknowledged by the broker), every message received as
// "<topic> seq=<n> bdSeq=<n> metrics=<n>" (STATE: "<topic> online=<bool>"),
// "rebirth <node> sent" and "rebirth <node> answered <ms> ms".
//
// Commands on stdin, one a line: "state online", "state offline",
// "rebirth <node>" (an NCMD Node Control/Rebirth = true, answered by an
// NBIRTH within --rebirth-ms, 1000 by default, or a violation), "quit".
// stdin's end or SIGTERM is "quit": STATE offline (with --host-id), the
// connection closed, the verdict, exit 0 (the verdict says the rest).
//
// --values FILE: every N/D message as a JSON line, its metrics' names
// resolved by alias from their BIRTH, for the Python tests to compare
// with `railmon export` of the same log: {"n", "topic", "kind", "node",
// "device", "session" (the node's NBIRTHs so far), "seq", "bytes" (the
// payload's), "metrics": [{"name",
// "alias", "type", "timestamp", "value", "historical", "properties":
// {key: {"type", "value"}}}]}.
// 64-bit integer values are decimal strings, so no digit is lost to a
// JS number; timestamps and aliases are numbers (below 2^53).
"use strict";
const mqtt = require("mqtt");
const sparkplug = require("sparkplug-payload").get("spBv1.0");
const fs = require("fs");
const readline = require("readline");

// the rules, in the order the verdict prints them; each counted per check
const RULES = {
	"decode": "every payload decodes with Tahu (each message)",
	"seq": "seq: NBIRTH's 0, then + 1 per message of the session, 255 wrapping to 0 (each message but NDEATH)",
	"ndeath-bdseq": "NDEATH's bdSeq = the node's last NBIRTH's (each NDEATH, a will too)",
	"bdseq-next": "a new connection's NBIRTH bdSeq = the last + 1, 255 wrapping to 0; after the host's own "
		+ "lost connection only a different one; a Rebirth the same (each NBIRTH after the first)",
	"before-birth": "no NDATA, DBIRTH, DDATA or DDEATH of a node without a live NBIRTH (each message)",
	"device-not-born": "DDATA and DDEATH only of a device born in the node's session and not dead since (each)",
	"alias-undeclared": "every NDATA/DDATA metric declared in its NBIRTH/DBIRTH, by alias or name (each metric)",
	"historical-order": "historical metrics in time order per node and device within a session (each one)",
	"birth-while-offline": "no NBIRTH while the host's STATE, in the broker's order, says offline (each NBIRTH)",
	"rebirth-late": "the host's Rebirth answered by an NBIRTH within the limit (each Rebirth)",
};
const checked = {}, violations = {};
for (const r of Object.keys(RULES))
	checked[r] = violations[r] = 0;

function arg(name, dflt) {
	const i = process.argv.indexOf("--" + name);
	return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : dflt;
}
const group = arg("group", "Fleet");
const hostId = arg("host-id", null);
const rebirthMs = Number(arg("rebirth-ms", "1000"));
const valuesFd = arg("values", null) ? fs.openSync(arg("values"), "w") : null;
let wantOnline = arg("state", "online") === "online";
const stateTopic = hostId ? "spBv1.0/STATE/" + hostId : null;

const say = (line) => process.stdout.write(line + "\n"); // synchronous on a pipe (Linux)

function check(rule, ok, what) {
	checked[rule]++;
	if (!ok) {
		violations[rule]++;
		say("VIOLATION " + rule + ": " + what);
	}
	return ok;
}

// a Long (protobufjs) or a number as a number; null for none
const num = (v) => v === undefined || v === null ? null : typeof v === "number" ? v : Number(v.toString());
function jsonValue(v) {
	if (v !== null && typeof v === "object" && typeof v.low === "number" && typeof v.high === "number")
		return require("long").fromValue(v).toString();
	if (typeof v === "number" && !Number.isFinite(v))
		return String(v);
	return v === undefined ? null : v;
}

// per edge node: its session as the host sees it
const nodes = new Map();
function nodeOf(name) {
	if (!nodes.has(name))
		nodes.set(name, {
			born: false, bdSeq: null, seq: null, aliases: new Map(), names: new Set(),
			devices: new Map(), hist: new Map(), session: 0, blind: false, pendingRebirth: null,
		});
	return nodes.get(name);
}
let stateEcho = null; // the host's STATE as the broker sent it back: true, false, null (none yet)
let nmsg = 0;

function declare(target, metrics) {
	target.aliases = new Map();
	target.names = new Set();
	for (const m of metrics) {
		if (m.alias !== undefined && m.alias !== null)
			target.aliases.set(num(m.alias), m.name);
		if (m.name !== undefined)
			target.names.add(m.name);
	}
}

// each metric declared by its BIRTH (target: the node or a device); its name
function resolve(target, m, kind, where) {
	const alias = num(m.alias);
	let ok = alias !== null ? target.aliases.has(alias) : target.names.has(m.name);
	check("alias-undeclared", ok, kind + " " + where + " metric " + (alias !== null ? "alias " + alias : m.name)
		+ " not in its BIRTH");
	return alias !== null ? target.aliases.get(alias) : m.name;
}

function checkHistorical(n, key, m, where) {
	if (m.isHistorical !== true)
		return;
	const t = num(m.timestamp), last = n.hist.get(key);
	check("historical-order", last === undefined || t >= last,
		"historical " + where + " at " + t + " after one at " + last);
	n.hist.set(key, last === undefined ? t : Math.max(t, last));
}

function onBirth(n, node, p) {
	const bd = p.metrics.find((m) => m.name === "bdSeq");
	const b = bd ? num(bd.value) : null;
	if (hostId)
		check("birth-while-offline", stateEcho !== false, "NBIRTH of " + node + " while STATE says offline");
	check("seq", num(p.seq) === 0, "NBIRTH of " + node + " seq " + num(p.seq));
	if (n.bdSeq !== null) {
		if (n.born && b === n.bdSeq) {
			check("bdseq-next", true, ""); // a Rebirth: the same connection
		} else if (n.blind) {
			check("bdseq-next", b !== null && b !== n.bdSeq, "NBIRTH of " + node + " bdSeq " + b
				+ " after the host's lost connection, the last was " + n.bdSeq);
		} else {
			check("bdseq-next", b === (n.bdSeq + 1) % 256, "NBIRTH of " + node + " bdSeq " + b + " after "
				+ n.bdSeq + (n.born ? " (no NDEATH between)" : ""));
		}
	}
	if (n.pendingRebirth !== null) {
		const ms = Date.now() - n.pendingRebirth;
		say("rebirth " + node + " answered " + ms + " ms");
		check("rebirth-late", ms <= rebirthMs, "Rebirth of " + node + " answered in " + ms + " ms");
		n.pendingRebirth = null;
	}
	n.born = true;
	n.bdSeq = b;
	n.seq = 0;
	n.blind = false;
	n.devices = new Map();
	n.hist = new Map();
	n.session++;
	declare(n, p.metrics);
}

function onDeath(n, node, p) {
	const bd = p.metrics.find((m) => m.name === "bdSeq");
	const b = bd ? num(bd.value) : null;
	if (n.bdSeq === null)
		say("note: NDEATH of " + node + " (bdSeq " + b + ") before any NBIRTH: nothing to compare");
	else
		check("ndeath-bdseq", b === n.bdSeq, "NDEATH of " + node + " bdSeq " + b + ", its NBIRTH's " + n.bdSeq);
	n.born = false;
	n.devices = new Map();
}

// NDATA, DBIRTH, DDATA, DDEATH: within a live session, seq continuous
function onSessionMessage(n, kind, node, dev, p) {
	const where = dev ? node + "/" + dev : node;
	if (!check("before-birth", n.born, kind + " of " + where + " without a live NBIRTH"))
		return;
	const s = num(p.seq);
	if (n.seq === null) // the host lost its connection: the next seq is the base
		n.seq = s;
	else
		check("seq", s === (n.seq + 1) % 256, kind + " of " + where + " seq " + s + " after " + n.seq);
	n.seq = s;
	if (kind === "NDATA") {
		for (const m of p.metrics) {
			m.resolved = resolve(n, m, kind, where);
			checkHistorical(n, "", m, where);
		}
		return;
	}
	let d = n.devices.get(dev);
	if (kind === "DBIRTH") {
		d = { born: true };
		declare(d, p.metrics);
		n.devices.set(dev, d);
		n.hist.delete("/" + dev);
		return;
	}
	if (!check("device-not-born", d !== undefined && d.born, kind + " of " + where
		+ (d ? " after its DDEATH" : " without its DBIRTH")))
		return;
	if (kind === "DDEATH") {
		d.born = false;
		return;
	}
	for (const m of p.metrics) {
		m.resolved = resolve(d, m, kind, where);
		checkHistorical(n, "/" + dev, m, where);
	}
}

function writeValues(topic, kind, node, dev, n, p, bytes) {
	if (valuesFd === null)
		return;
	const metrics = (p.metrics || []).map((m) => {
		const props = {};
		for (const [k, v] of Object.entries(m.properties || {}))
			props[k] = { type: v.type === undefined ? null : v.type, value: jsonValue(v.value) };
		return {
			name: m.resolved !== undefined ? m.resolved : m.name === undefined ? null : m.name,
			alias: num(m.alias), type: m.type === undefined ? null : m.type, timestamp: num(m.timestamp),
			value: m.isNull ? null : jsonValue(m.value), historical: m.isHistorical === true, properties: props,
		};
	});
	fs.writeSync(valuesFd, JSON.stringify({ n: nmsg, topic, kind, node, device: dev || null, session: n.session,
		seq: num(p.seq), bytes, metrics }) + "\n");
}

function onMessage(topic, buf) {
	const lv = topic.split("/");
	nmsg++;
	if (lv[1] === "STATE") {
		let online = null;
		try {
			online = JSON.parse(buf.toString()).online;
		} catch (e) {
			online = null;
		}
		if (topic === stateTopic)
			stateEcho = online === true;
		say(topic + " online=" + online);
		return;
	}
	const [, , kind, node, dev] = lv;
	let p;
	try {
		p = sparkplug.decodePayload(new Uint8Array(buf));
		checked.decode++;
	} catch (e) {
		checked.decode++;
		violations.decode++;
		say("VIOLATION decode: " + topic + ": " + e.message);
		return;
	}
	p.metrics = p.metrics || [];
	const bd = p.metrics.find((m) => m.name === "bdSeq");
	say(topic + " seq=" + num(p.seq) + " bdSeq=" + (bd ? num(bd.value) : null) + " metrics=" + p.metrics.length);
	if (kind === "NCMD" || kind === "DCMD" || !node)
		return; // commands: a host's, not the edge node's
	const n = nodeOf(node);
	if (kind === "NBIRTH")
		onBirth(n, node, p);
	else if (kind === "NDEATH")
		onDeath(n, node, p);
	else if (["NDATA", "DBIRTH", "DDATA", "DDEATH"].includes(kind))
		onSessionMessage(n, kind, node, dev, p);
	writeValues(topic, kind, node, dev, n, p, buf.length);
}

const url = arg("broker", "mqtt://127.0.0.1:1883");
const stateJson = (online) => JSON.stringify({ online, timestamp: Date.now() });
const client = mqtt.connect(url, {
	clientId: "railmon-spb-host-" + process.pid,
	username: arg("username", undefined),
	password: arg("password", undefined),
	protocolVersion: 4,
	clean: true,
	resubscribe: false, // subscribed again at each connect, below, before the STATE
	reconnectPeriod: 200,
	connectTimeout: 5000,
	will: stateTopic ? { topic: stateTopic, payload: stateJson(false), qos: 1, retain: true } : undefined,
});

function publishState() {
	const online = wantOnline;
	client.publish(stateTopic, stateJson(online), { qos: 1, retain: true }, (err) => {
		if (!err)
			say("state " + (online ? "online" : "offline"));
	});
}

client.on("connect", () => {
	up = true;
	say("connected");
	const topics = ["spBv1.0/" + group + "/#"];
	if (stateTopic)
		topics.push(stateTopic);
	// the host subscribes before its STATE goes (Sparkplug 3.0 host
	// session establishment), so it sees every birth its STATE causes
	client.subscribe(topics, { qos: 1 }, (err) => {
		if (err) {
			say("subscribe failed: " + err.message);
			return;
		}
		say("subscribed");
		if (stateTopic)
			publishState();
	});
});
let up = false; // connected since the last "lost": each reconnect attempt closes too
client.on("close", () => {
	if (quitting || !up)
		return;
	up = false;
	say("lost");
	// messages may have gone by unseen: a node's seq is taken anew and a
	// new connection's bdSeq may be more than + 1 (its attempts meanwhile)
	for (const n of nodes.values()) {
		n.blind = true;
		n.seq = null;
	}
});
client.on("error", (e) => say("mqtt error: " + e.message));
client.on("message", onMessage);

function rebirth(node) {
	const payload = sparkplug.encodePayload({ timestamp: Date.now(),
		metrics: [{ name: "Node Control/Rebirth", type: "Boolean", value: true }] });
	nodeOf(node).pendingRebirth = Date.now();
	client.publish("spBv1.0/" + group + "/NCMD/" + node, Buffer.from(payload), { qos: 0 });
	say("rebirth " + node + " sent");
}

let quitting = false;
function verdict() {
	for (const [node, n] of nodes)
		if (n.pendingRebirth !== null)
			check("rebirth-late", false, "Rebirth of " + node + " never answered");
	let total = 0;
	for (const r of Object.keys(RULES)) {
		say("rule " + r + ": " + (checked[r] - violations[r]) + "/" + checked[r] + " passed, "
			+ violations[r] + " violations - " + RULES[r]);
		total += violations[r];
	}
	say("verdict " + JSON.stringify({ violations_total: total, violations, checked }));
}

function quit() {
	if (quitting)
		return;
	quitting = true;
	let done = false;
	const finish = () => {
		if (done)
			return;
		done = true;
		verdict();
		if (valuesFd !== null)
			fs.closeSync(valuesFd);
		process.exit(0);
	};
	const end = () => client.end(false, {}, finish);
	// a broker that is gone or frozen answers nothing: the verdict anyway
	setTimeout(finish, 5000).unref();
	// a clean stop: the host's STATE offline first (Sparkplug 3.0)
	if (stateTopic && client.connected)
		client.publish(stateTopic, stateJson(false), { qos: 1, retain: true }, end);
	else
		end();
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
	const w = line.trim().split(/\s+/);
	if (w[0] === "state" && (w[1] === "online" || w[1] === "offline") && stateTopic) {
		wantOnline = w[1] === "online";
		if (client.connected)
			publishState();
	} else if (w[0] === "rebirth" && w[1]) {
		rebirth(w[1]);
	} else if (w[0] === "quit") {
		quit();
	} else if (w[0]) {
		say("unknown command: " + line);
	}
}).on("close", quit);
process.on("SIGTERM", quit);
