#!/usr/bin/env node
// Pi's own views of a session after its tree was navigated, for differential tests of tree/navigate.
//   node pi_navigate.mjs SPEC.json
// SPEC: {"file": PATH, "targets": [ID...], "keep": N, "reserve": N, "append": [MESSAGE...]}
// For each target, on a fresh copy of the file: Pi's in-memory leaf move (SessionManager.branch,
// what Pi's /tree does for a target that is not a user message), then what Pi derives from the
// branch (context, context entries, usage estimate, prepareCompaction); then the same after
// appending SPEC.append below the target. Prints one JSON line per target.
// Env: PI_ORACLE_DIR = pi-oracle install (its node_modules holds Pi 1.6.0).
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = resolve(process.env.PI_ORACLE_DIR ?? ".cache/pi-oracle");
const pkg = join(oracle, "node_modules/@earendil-works/pi-coding-agent");
process.env.PI_CODING_AGENT_DIR = mkdtempSync(join(tmpdir(), "pi-navigate-agent-"));
process.env.PI_OFFLINE = "1";
const load = (p) => import(pathToFileURL(join(pkg, p)).href);
const { SessionManager } = await load("dist/core/session-manager.js");
const comp = await load("dist/core/compaction/compaction.js");

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const settings = { enabled: true, reserveTokens: spec.reserve, keepRecentTokens: spec.keep };

function views(manager) {
	const branch = manager.getBranch();
	const projection = manager.buildSessionProjection();
	const prep = comp.prepareCompaction(branch, settings);
	const last = branch[branch.length - 1];
	const firstKept = prep ? manager.getEntry(prep.firstKeptEntryId) : undefined;
	return {
		leafId: manager.getLeafId(),
		context: manager.buildSessionContext().messages,
		contextEntryIds: manager.buildContextEntries().map((e) => e.id),
		tokens: comp.estimateProjectedContextTokens(projection, branch).tokens,
		prepared: Boolean(prep),
		reason: prep ? null : last?.type === "compaction" ? "already_compacted" : "nothing_to_compact",
		firstKeptEntryId: prep ? prep.firstKeptEntryId : null,
		firstKeptMessage: firstKept?.message ?? null,
		isSplitTurn: prep ? prep.isSplitTurn : null,
		tokensBefore: prep ? prep.tokensBefore : null,
		messagesToSummarize: prep ? prep.messagesToSummarize : null,
	};
}

for (const target of spec.targets) {
	const work = mkdtempSync(join(tmpdir(), "pi-navigate-"));
	const copy = join(work, basename(spec.file));
	copyFileSync(spec.file, copy);
	let out;
	try {
		const manager = SessionManager.open(copy, work);
		manager.branch(target);
		const navigated = views(manager);
		for (const message of spec.append) manager.appendMessage(message);
		out = { target, navigated, appended: views(manager) };
	} catch (error) {
		out = { target, error: String(error?.message ?? error) };
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
	console.log(JSON.stringify(out));
}
rmSync(process.env.PI_CODING_AGENT_DIR, { recursive: true, force: true });
