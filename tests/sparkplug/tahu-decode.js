// SPDX-License-Identifier: MIT
// tahu-decode.js FILE... - decodes Sparkplug B payloads with Eclipse Tahu's
// JavaScript library (npm sparkplug-payload, as a Sparkplug host does) and
// prints them as one JSON object {file: payload}, plus Tahu's DataType
// numbers as "DataType".  64-bit integers (protobufjs Long) are printed
// as decimal strings, so no digit is lost to a JS number.
"use strict";
const sparkplug = require("sparkplug-payload").get("spBv1.0");
const proto = require("sparkplug-payload/lib/sparkplugPayloadProto.js");
const fs = require("fs");

const out = { DataType: proto.org.eclipse.tahu.protobuf.DataType };
for (const f of process.argv.slice(2))
	out[f] = sparkplug.decodePayload(new Uint8Array(fs.readFileSync(f)));
process.stdout.write(JSON.stringify(out, (k, v) => {
	if (v !== null && typeof v === "object" && typeof v.low === "number" && typeof v.high === "number")
		return require("long").fromValue(v).toString();
	if (typeof v === "number" && !Number.isFinite(v))
		return String(v);
	return v;
}) + "\n");
