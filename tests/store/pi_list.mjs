#!/usr/bin/env node
// Pi's own session listing, for the differential test in test_listing.py.
//
// Usage: PI_ORACLE_DIR=<oracle root> PI_CODING_AGENT_DIR=<store root> node pi_list.mjs [CWD ...]
//
// Deep-imports dist/core/session-manager.js of the pi-coding-agent package installed under
// $PI_ORACLE_DIR/node_modules (the root import does not load on Node 20) and prints one JSON
// object: {"all": SessionManager.listAll(), "byCwd": {CWD: SessionManager.list(CWD)}}.
// Dates are printed as getTime() numbers (null when invalid); undefined fields as null.
// Note: list(CWD) creates <store>/sessions/--<encoded CWD>-- when it is missing (Pi's side effect).
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = process.env.PI_ORACLE_DIR;
if (!oracle || !process.env.PI_CODING_AGENT_DIR) {
	console.error("set PI_ORACLE_DIR (oracle root) and PI_CODING_AGENT_DIR (store root)");
	process.exit(2);
}
const smPath = join(resolve(oracle), "node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js");
if (!existsSync(smPath)) {
	console.error(`Pi package not found: ${smPath}`);
	process.exit(2);
}
process.env.PI_OFFLINE = "1";
const { SessionManager } = await import(pathToFileURL(smPath).href);

const time = (d) => {
	const t = d instanceof Date ? d.getTime() : Number.NaN;
	return Number.isNaN(t) ? null : t;
};
const row = (info) => ({
	path: info.path,
	id: info.id ?? null,
	cwd: info.cwd ?? null,
	name: info.name ?? null,
	parentSessionPath: info.parentSessionPath ?? null,
	created: time(info.created),
	modified: time(info.modified),
	messageCount: info.messageCount,
	firstMessage: info.firstMessage,
});

const out = { all: (await SessionManager.listAll()).map(row), byCwd: {} };
for (const cwd of process.argv.slice(2)) {
	out.byCwd[cwd] = (await SessionManager.list(cwd)).map(row);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
