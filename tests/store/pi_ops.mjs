#!/usr/bin/env node
// Runs Pi's own SessionManager operations for differential tests of sessiond's store.
//   node pi_ops.mjs branch FILE LEAF_ID    -> createBranchedSession(LEAF_ID) on a copy of FILE
//   node pi_ops.mjs forkfrom FILE CWD      -> SessionManager.forkFrom(copy of FILE, CWD, tmpdir)
//   node pi_ops.mjs --serve                -> the same for each stdin line [op, file, arg, cwd]
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

// One operation on a private copy of `file` in a scratch directory of its own.
function run(op, file, arg) {
	const work = mkdtempSync(join(tmpdir(), "pi-ops-"));
	const copy = join(work, basename(file));
	copyFileSync(file, copy);
	try {
		if (op === "branch") {
			const manager = SessionManager.open(copy, work);
			const created = manager.createBranchedSession(arg);
			return { exists: existsSync(created), lines: existsSync(created) ? read(created) : null, source: copy, leafId: manager.getLeafId() };
		}
		if (op === "forkfrom") {
			const manager = SessionManager.forkFrom(copy, arg, join(work, "target"));
			const created = manager.getSessionFile();
			return { exists: existsSync(created), lines: read(created), source: copy };
		}
		return { error: `unknown op ${op}` };
	} catch (error) {
		return { error: String(error?.message ?? error) };
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

const read = (p) => readFileSync(p, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
try {
	if (process.argv[2] === "--serve") {
		// one process for a test file's operations: each stdin line is [op, file, arg, cwd], each
		// answer the line a run of its own prints (Pi is loaded once: a start is ~0.3 s of CPU)
		const { createInterface } = await import("node:readline");
		for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
			if (!line.trim()) continue;
			const [op, file, arg, cwd] = JSON.parse(line);
			process.chdir(cwd);
			console.log(JSON.stringify(run(op, file, arg)));
		}
	} else {
		const [op, file, arg] = process.argv.slice(2);
		console.log(JSON.stringify(run(op, file, arg)));
	}
} finally {
	rmSync(process.env.PI_CODING_AGENT_DIR, { recursive: true, force: true });
}
