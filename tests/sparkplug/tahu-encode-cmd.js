// SPDX-License-Identifier: MIT
// tahu-encode-cmd.js OUTDIR - writes NCMD payloads encoded by Eclipse
// Tahu's JavaScript library (npm sparkplug-payload), as a Tahu host sends
// them, for spb-sample --cmd (sparkplug/'s parser) to read:
//   ncmd-rebirth.bin        Node Control/Rebirth = true (the host's rebirth request)
//   ncmd-rebirth-alias.bin  the same by its alias (1) only
//   ncmd-false.bin          Node Control/Rebirth = false
//   ncmd-other.bin          Node Control/Reboot = true, and a String metric
"use strict";
const sparkplug = require("sparkplug-payload").get("spBv1.0");
const fs = require("fs");
const path = require("path");

const dir = process.argv[2];
const t = 1733400000000;
const write = (name, metrics) =>
	fs.writeFileSync(path.join(dir, name), sparkplug.encodePayload({ timestamp: t, metrics }));
write("ncmd-rebirth.bin", [{ name: "Node Control/Rebirth", type: "Boolean", value: true }]);
write("ncmd-rebirth-alias.bin", [{ alias: 1, type: "Boolean", value: true }]);
write("ncmd-false.bin", [{ name: "Node Control/Rebirth", type: "Boolean", value: false }]);
write("ncmd-other.bin", [{ name: "Node Control/Reboot", type: "Boolean", value: true },
                         { name: "Setpoint", type: "String", value: "x" }]);
