#!/usr/bin/env node
// Times Pi's own prepareCompaction and the serialization a summarizer gets, on one session file.
// Used by benchmarks/compaction.py; one `node` process per file.
//
// Usage: node benchmarks/pi_prepare_timing.mjs PI_PACKAGE_DIR FILE.jsonl RUNS KEEP RESERVE
//   PI_PACKAGE_DIR = .../node_modules/@earendil-works/pi-coding-agent (from a pi-oracle install)
//
// Like pi_load.mjs it deep-imports Pi's dist/core modules by file URL, points
// PI_CODING_AGENT_DIR at a throw-away dir and sets PI_OFFLINE=1. The file is copied into a temp
// dir first because SessionManager.open() may repair it. Not timed: the import, the copy,
// SessionManager.open(copy, dir) (reported as openMs; with manager.buildSessionContext() after it,
// contextMs: Pi's load + context) and manager.getBranch(). Timed, RUNS times each (every sample
// is reported, and the median; the first prepare is prepareRuns[0]):
//   prepare   = prepareCompaction(branch, {enabled, reserveTokens: RESERVE, keepRecentTokens: KEEP})
//   serialize = serializeConversation(convertToLlm(prep.messagesToSummarize))
// Prints one JSON object on stdout.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [pkgArg, fileArg, runsArg, keepArg, reserveArg] = process.argv.slice(2);
if (!pkgArg || !fileArg) {
	console.error("usage: node pi_prepare_timing.mjs PI_PACKAGE_DIR FILE.jsonl [RUNS] [KEEP] [RESERVE]");
	process.exit(2);
}
const runs = Math.max(1, Number(runsArg ?? 5));
const settings = {
	enabled: true,
	reserveTokens: Number(reserveArg ?? 16384),
	keepRecentTokens: Number(keepArg ?? 20000),
};
const pkgDir = resolve(pkgArg);
if (!existsSync(join(pkgDir, "dist/core/compaction/compaction.js"))) {
	console.error(`Pi package not found at ${pkgDir} (no dist/core/compaction/compaction.js)`);
	process.exit(2);
}
const scratchAgentDir = mkdtempSync(join(tmpdir(), "pi-bench-agent-"));
process.env.PI_CODING_AGENT_DIR = scratchAgentDir;
process.env.PI_OFFLINE = "1";
const load = (p) => import(pathToFileURL(join(pkgDir, p)).href);

const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const n = s.length;
	return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

const work = mkdtempSync(join(tmpdir(), "pi-bench-"));
const copy = join(work, basename(fileArg));
try {
	const { SessionManager } = await load("dist/core/session-manager.js");
	const { prepareCompaction } = await load("dist/core/compaction/compaction.js");
	const { serializeConversation } = await load("dist/core/compaction/utils.js");
	const { convertToLlm } = await load("dist/core/messages.js");
	copyFileSync(resolve(fileArg), copy);

	const t0 = performance.now();
	const manager = SessionManager.open(copy, work);
	const openMs = performance.now() - t0;
	// Pi's load + context (what issue 30 compares Session.open with), then the branch (untimed).
	const t1 = performance.now();
	manager.buildSessionContext();
	const contextMs = performance.now() - t1;
	const branch = manager.getBranch();

	const prepareRuns = [];
	let prep;
	for (let i = 0; i < runs; i++) {
		const a = performance.now();
		prep = prepareCompaction(branch, settings);
		prepareRuns.push(performance.now() - a);
	}
	const serializeRuns = [];
	let conversation = "";
	if (prep) {
		for (let i = 0; i < runs; i++) {
			const a = performance.now();
			conversation = serializeConversation(convertToLlm(prep.messagesToSummarize));
			serializeRuns.push(performance.now() - a);
		}
	}
	const result = {
		openMs,
		contextMs,
		loadContextMs: openMs + contextMs,
		branchEntries: branch.length,
		prepared: Boolean(prep),
		prepareMs: median(prepareRuns),
		prepareRuns,
		serializeMs: serializeRuns.length ? median(serializeRuns) : null,
		serializeRuns,
		firstKeptEntryId: prep?.firstKeptEntryId ?? null,
		tokensBefore: prep?.tokensBefore ?? null,
		isSplitTurn: prep?.isSplitTurn ?? null,
		messagesToSummarize: prep?.messagesToSummarize.length ?? null,
		turnPrefixMessages: prep?.turnPrefixMessages.length ?? null,
		conversationChars: conversation.length,
		maxRssKB: process.resourceUsage().maxRSS,
		node: process.version,
	};
	process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
	rmSync(work, { recursive: true, force: true });
	rmSync(scratchAgentDir, { recursive: true, force: true });
}
