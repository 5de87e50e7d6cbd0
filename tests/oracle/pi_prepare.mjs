#!/usr/bin/env node
// Pi's own prepareCompaction + serializeConversation on session files, for differential tests.
//   node pi_prepare.mjs KEEP RESERVE FILE...
// Prints one JSON line per file: the preparation of the loaded branch with every field a
// summarizer sees (messages in full, serialized texts, file lists), or {prepared:false}.
// Env: PI_ORACLE_DIR = pi-oracle install (its node_modules holds Pi 1.6.0).
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const oracle = resolve(process.env.PI_ORACLE_DIR ?? ".cache/pi-oracle");
const pkg = join(oracle, "node_modules/@earendil-works/pi-coding-agent");
process.env.PI_CODING_AGENT_DIR = mkdtempSync(join(tmpdir(), "pi-prepare-agent-"));
process.env.PI_OFFLINE = "1";
const load = (p) => import(pathToFileURL(join(pkg, p)).href);
const { SessionManager } = await load("dist/core/session-manager.js");
const comp = await load("dist/core/compaction/compaction.js");
const utils = await load("dist/core/compaction/utils.js");
const msgs = await load("dist/core/messages.js");

const [keep, reserve, ...files] = process.argv.slice(2);
const settings = { enabled: true, reserveTokens: Number(reserve), keepRecentTokens: Number(keep) };
for (const file of files) {
	const work = mkdtempSync(join(tmpdir(), "pi-prepare-"));
	const copy = join(work, basename(file));
	copyFileSync(file, copy);
	let out;
	try {
		const manager = SessionManager.open(copy, work);
		const prep = comp.prepareCompaction(manager.getBranch(), settings);
		if (!prep) {
			out = { file, prepared: false };
		} else {
			const { readFiles, modifiedFiles } = utils.computeFileLists(prep.fileOps);
			out = {
				file,
				prepared: true,
				firstKeptEntryId: prep.firstKeptEntryId,
				isSplitTurn: prep.isSplitTurn,
				tokensBefore: prep.tokensBefore,
				previousSummary: prep.previousSummary ?? null,
				messagesToSummarize: prep.messagesToSummarize,
				turnPrefixMessages: prep.turnPrefixMessages,
				conversation: utils.serializeConversation(msgs.convertToLlm(prep.messagesToSummarize)),
				turnPrefix: prep.turnPrefixMessages.length
					? utils.serializeConversation(msgs.convertToLlm(prep.turnPrefixMessages))
					: null,
				readFiles,
				modifiedFiles,
				fileOps: { read: [...prep.fileOps.read], written: [...prep.fileOps.written], edited: [...prep.fileOps.edited] },
				fileSuffix: utils.formatFileOperations(readFiles, modifiedFiles),
			};
		}
	} catch (error) {
		out = { file, error: String(error?.message ?? error) };
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
	console.log(JSON.stringify(out));
}
rmSync(process.env.PI_CODING_AGENT_DIR, { recursive: true, force: true });
