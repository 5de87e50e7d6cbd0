#!/usr/bin/env node
// Times Pi's own load + context on one session file, in this (fresh) process.
// Used by benchmarks/inspect_bench.py; one `node` process per measured run.
//
// Usage: node benchmarks/pi_load.mjs PI_PACKAGE_DIR FILE.jsonl
//   PI_PACKAGE_DIR = .../node_modules/@earendil-works/pi-coding-agent (from a pi-oracle install)
//
// Like tests/oracle/harness.mjs it deep-imports dist/core/session-manager.js by file URL,
// points PI_CODING_AGENT_DIR at a throw-away dir and sets PI_OFFLINE=1. The file is copied
// into a temp dir first (outside the timed part) because SessionManager.open() may repair it.
// Timed ("core"): SessionManager.open(copy, dir) + manager.buildSessionContext().
// Prints one JSON object on stdout.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const bootMs = performance.now(); // time since process start (performance.timeOrigin)
const [pkgArg, fileArg] = process.argv.slice(2);
if (!pkgArg || !fileArg) {
	console.error("usage: node pi_load.mjs PI_PACKAGE_DIR FILE.jsonl");
	process.exit(2);
}
const pkgDir = resolve(pkgArg);
const smPath = join(pkgDir, "dist/core/session-manager.js");
if (!existsSync(smPath)) {
	console.error(`Pi package not found at ${pkgDir} (no dist/core/session-manager.js)`);
	process.exit(2);
}
const scratchAgentDir = mkdtempSync(join(tmpdir(), "pi-bench-agent-"));
process.env.PI_CODING_AGENT_DIR = scratchAgentDir;
process.env.PI_OFFLINE = "1";

const work = mkdtempSync(join(tmpdir(), "pi-bench-"));
const copy = join(work, basename(fileArg));
try {
	const tImport0 = performance.now();
	const { SessionManager } = await import(pathToFileURL(smPath).href);
	const tImport1 = performance.now();
	copyFileSync(resolve(fileArg), copy);
	const rssAfterImportKB = Math.round(process.memoryUsage().rss / 1024);
	const maxRssAfterImportKB = process.resourceUsage().maxRSS;

	const t0 = performance.now();
	const manager = SessionManager.open(copy, work);
	const t1 = performance.now();
	const ctx = manager.buildSessionContext();
	const t2 = performance.now();

	const result = {
		importMs: tImport1 - tImport0,
		bootMs,
		openMs: t1 - t0,
		contextMs: t2 - t1,
		coreMs: t2 - t0,
		entries: manager.getEntries().length,
		contextMessages: ctx.messages.length,
		leafId: manager.getLeafId(),
		rssAfterImportKB,
		maxRssAfterImportKB,
		maxRssKB: process.resourceUsage().maxRSS, // KiB on Linux
		node: process.version,
	};
	process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
	rmSync(work, { recursive: true, force: true });
	rmSync(scratchAgentDir, { recursive: true, force: true });
}
