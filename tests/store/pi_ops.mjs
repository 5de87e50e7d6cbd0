#!/usr/bin/env node
// Runs Pi's own SessionManager operations for differential tests of sessiond's store.
//   node pi_ops.mjs branch FILE LEAF_ID    -> createBranchedSession(LEAF_ID) on a copy of FILE
//   node pi_ops.mjs forkfrom FILE CWD      -> SessionManager.forkFrom(copy of FILE, CWD, tmpdir)
// Prints {exists, lines} for the session file Pi created (lines parsed as JSON), or {error}.
// Env: PI_ORACLE_DIR = pi-oracle install (its node_modules holds Pi 1.6.0).
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = resolve(process.env.PI_ORACLE_DIR ?? ".cache/pi-oracle");
const pkg = join(oracle, "node_modules/@earendil-works/pi-coding-agent");
process.env.PI_CODING_AGENT_DIR = mkdtempSync(join(tmpdir(), "pi-ops-agent-"));
process.env.PI_OFFLINE = "1";
const { SessionManager } = await import(pathToFileURL(join(pkg, "dist/core/session-manager.js")).href);

const [op, file, arg] = process.argv.slice(2);
const work = mkdtempSync(join(tmpdir(), "pi-ops-"));
const copy = join(work, basename(file));
copyFileSync(file, copy);
const read = (p) => readFileSync(p, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
let out;
try {
	if (op === "branch") {
		const manager = SessionManager.open(copy, work);
		const created = manager.createBranchedSession(arg);
		out = { exists: existsSync(created), lines: existsSync(created) ? read(created) : null, source: copy, leafId: manager.getLeafId() };
	} else if (op === "forkfrom") {
		const manager = SessionManager.forkFrom(copy, arg, join(work, "target"));
		const created = manager.getSessionFile();
		out = { exists: existsSync(created), lines: read(created), source: copy };
	} else {
		out = { error: `unknown op ${op}` };
	}
} catch (error) {
	out = { error: String(error?.message ?? error) };
} finally {
	rmSync(work, { recursive: true, force: true });
	rmSync(process.env.PI_CODING_AGENT_DIR, { recursive: true, force: true });
}
console.log(JSON.stringify(out));
