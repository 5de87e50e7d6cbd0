#!/usr/bin/env node
// sessiond's Pi oracle: what Pi's OWN code (npm @earendil-works/pi-coding-agent, pinned in
// package.json next to this file) derives from session files, printed as JSON, so that the
// differential tests and goldens can hold sessiond's answers against Pi's.
//
//   node tests/oracle/harness.mjs [--oracle DIR] [--leaf ID|null] [--cwd DIR] [--full] [--raw]
//        [--jsonl] [--compaction [--keep N] [--reserve N] [--window N]] [--emit DIR] FILE.jsonl...
//
// The keys, and the sessiond code that prints the same ones, are listed in tests/oracle/README.md.
// Pi is looked up in --oracle DIR (an install made by scripts/setup-oracle), else in
// $PI_ORACLE_DIR, else in <repo>/.cache/pi-oracle. Pi's dist/ is imported by file URL: the package root's entry point
// wants a newer Node than the session code itself needs.
//
// Pi's SessionManager.open() may write to the file it opens (a missing final newline, or a
// migration of v1/v2 files), so every input is opened from a private copy and the input is never
// touched; "fileRepair" reports what Pi did to the copy, and --emit DIR keeps the copies Pi
// changed (a migrated v1 file has random ids: feed the emitted copy to both implementations).
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const USAGE =
	"usage: node harness.mjs [--oracle DIR] [--leaf ID|null] [--cwd DIR] [--full] [--raw] [--jsonl]\n" +
	"                        [--compaction [--keep N] [--reserve N] [--window N]] [--emit DIR] FILE.jsonl...";
const PREVIEW = 120;

let serving = false;

function fail(message) {
	if (serving) throw new Error(message); // one request was wrong: answer it, keep serving
	process.stderr.write(`pi-oracle: ${message}\n`);
	process.exit(2);
}

// ------------------------------------------------------------------------------ options

function readOptions(argv) {
	let parsed;
	try {
		parsed = parseArgs({
			args: argv,
			allowPositionals: true,
			options: {
				oracle: { type: "string" },
				leaf: { type: "string" },
				cwd: { type: "string" },
				full: { type: "boolean", default: false },
				raw: { type: "boolean", default: false },
				jsonl: { type: "boolean", default: false },
				compaction: { type: "boolean", default: false },
				keep: { type: "string", default: "20000" },
				reserve: { type: "string", default: "16384" },
				window: { type: "string" },
				emit: { type: "string" },
				serve: { type: "boolean", default: false },
				help: { type: "boolean", short: "h", default: false },
			},
		});
	} catch (error) {
		fail(`${error.message}\n${USAGE}`);
	}
	const { values, positionals } = parsed;
	if (values.help) {
		process.stdout.write(`${USAGE}\n`);
		process.exit(0);
	}
	if (positionals.length === 0 && !values.serve) fail(`no session file given\n${USAGE}`);
	const count = (name) => {
		const n = Number(values[name]);
		if (!Number.isInteger(n) || n < 0) fail(`--${name} wants a non-negative integer, not ${JSON.stringify(values[name])}`);
		return n;
	};
	return {
		oracle: values.oracle,
		leaf: values.leaf,
		cwd: values.cwd,
		full: values.full,
		raw: values.raw,
		jsonl: values.jsonl,
		compaction: values.compaction,
		keep: count("keep"),
		reserve: count("reserve"),
		window: values.window === undefined ? undefined : count("window"),
		emit: values.emit === undefined ? undefined : resolve(values.emit),
		files: positionals,
		serve: values.serve,
	};
}

// ------------------------------------------------------------------------------ Pi

function piPackageDir(explicit) {
	const here = dirname(fileURLToPath(import.meta.url));
	const install = resolve(explicit ?? process.env.PI_ORACLE_DIR ?? join(here, "..", "..", ".cache", "pi-oracle"));
	const pkg = join(install, "node_modules", "@earendil-works", "pi-coding-agent");
	if (!existsSync(join(pkg, "dist", "core", "session-manager.js"))) {
		fail(`Pi is not installed in ${install} (run scripts/setup-oracle, or set PI_ORACLE_DIR)`);
	}
	return pkg;
}

async function loadPi(pkg) {
	const from = (rel) => import(pathToFileURL(join(pkg, "dist", ...rel.split("/"))).href);
	const [sessions, compaction, messages] = await Promise.all([
		from("core/session-manager.js"),
		from("core/compaction/index.js"),
		from("core/messages.js"),
	]);
	const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
	return { SessionManager: sessions.SessionManager, compaction, convertToLlm: messages.convertToLlm, version };
}

// ------------------------------------------------------------------------------ rendering

/** Message content as one readable string: texts as they are, other blocks as placeholders. */
function contentText(content) {
	if (content === null || content === undefined) return "";
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return JSON.stringify(content);
	const parts = [];
	for (const block of content) {
		const piece = blockText(block);
		if (piece) parts.push(piece);
	}
	return parts.join("\n");
}

function blockText(block) {
	if (block === null || typeof block !== "object") return "";
	switch (block.type) {
		case "text":
			return block.text ?? "";
		case "image":
			return `[image ${block.mimeType ?? "?"}]`;
		case "thinking":
			return `[thinking ${String(block.thinking ?? "").length} chars]`;
		case "toolCall":
			return `[toolCall ${block.name}(${JSON.stringify(block.arguments ?? {})})]`;
		default:
			return `[${block.type}]`;
	}
}

/** One context message: its role, its text, the fields that tell messages of that role apart. */
function messageView(message, pi, clip) {
	const view = { role: message.role };
	const role = message.role;
	if (role === "bashExecution") {
		view.text = clip(`$ ${message.command}\n${message.output ?? ""}`);
		if (message.excludeFromContext) view.excludeFromContext = true;
	} else if (role === "compactionSummary") {
		view.text = clip(message.summary ?? "");
		view.tokensBefore = message.tokensBefore;
	} else if (role === "branchSummary") {
		view.text = clip(message.summary ?? "");
		view.fromId = message.fromId;
	} else {
		view.text = clip(contentText(message.content));
		if (role === "custom") {
			view.customType = message.customType;
			view.display = message.display;
		} else if (role === "assistant") {
			view.stopReason = message.stopReason;
			view.provider = message.provider;
			view.model = message.model;
			if (message.errorMessage) view.errorMessage = clip(message.errorMessage);
		} else if (role === "toolResult") {
			view.toolCallId = message.toolCallId;
			view.toolName = message.toolName;
			view.isError = message.isError;
		} else if (role === "system") {
			view.sections = Object.keys(message.sections ?? {});
			view.toolsAdded = (message.toolsAdded ?? []).map((tool) => tool.name);
			if (message.toolsRemoved) view.toolsRemoved = message.toolsRemoved.map((tool) => tool.name);
		}
	}
	view.estTokens = pi.compaction.estimateTokens(message);
	return view;
}

/** An entry of the branch: its links and type, plus what a reader needs to recognise it. */
function entryView(entry) {
	const view = { id: entry.id, parentId: entry.parentId, type: entry.type };
	switch (entry.type) {
		case "message":
			view.role = entry.message?.role;
			break;
		case "context_edit":
			view.targetId = entry.targetId;
			view.replacement = entry.replacement === null ? null : "content";
			break;
		case "label":
			view.targetId = entry.targetId;
			view.label = entry.label ?? null;
			break;
		case "compaction":
			view.firstKeptEntryId = entry.firstKeptEntryId;
			break;
		case "branch_summary":
			view.fromId = entry.fromId;
			break;
	}
	return view;
}

/** Roots, node count and labels of Pi's tree, labels in the order of a depth-first walk that
 * visits a node's children last-first (sessiond's inspect walks the same way). */
function treeView(roots) {
	const labels = {};
	let nodes = 0;
	const pending = [...roots];
	while (pending.length > 0) {
		const node = pending.pop();
		nodes += 1;
		if (node.label !== undefined) labels[node.entry.id] = node.label;
		for (const child of node.children) pending.push(child);
	}
	return { roots: roots.map((node) => node.entry.id), nodes, labels };
}

function compactionView(pi, options, clip, branch, context, projection) {
	const { compaction, convertToLlm } = pi;
	const settings = { enabled: true, reserveTokens: options.reserve, keepRecentTokens: options.keep };
	const projected = compaction.estimateProjectedContextTokens(projection, branch);
	const report = {
		settings,
		estimateContextTokens: compaction.estimateContextTokens(context.messages),
		estimateProjectedContextTokens: projected,
	};
	if (options.window) report.shouldCompact = compaction.shouldCompact(projected.tokens, options.window, settings);
	const prep = compaction.prepareCompaction(branch, settings);
	if (!prep) {
		report.preparation = null;
		return report;
	}
	const roles = (messages) => messages.map((m) => m.role);
	const sorted = (set) => [...set].sort();
	report.preparation = {
		firstKeptEntryId: prep.firstKeptEntryId,
		isSplitTurn: prep.isSplitTurn,
		tokensBefore: prep.tokensBefore,
		previousSummary: prep.previousSummary === undefined ? null : clip(prep.previousSummary),
		messagesToSummarize: roles(prep.messagesToSummarize),
		turnPrefixMessages: roles(prep.turnPrefixMessages),
		fileOps: { read: sorted(prep.fileOps.read), written: sorted(prep.fileOps.written), edited: sorted(prep.fileOps.edited) },
		serializedHistoryChars: compaction.serializeConversation(convertToLlm(prep.messagesToSummarize)).length,
	};
	return report;
}

// ------------------------------------------------------------------------------ one file

const digest = (bytes) => createHash("sha256").update(bytes).digest("hex");

function repairOf(before, after) {
	const modified = digest(before) !== digest(after);
	const newlineOnly =
		modified && after.length === before.length + 1 && after.subarray(0, before.length).equals(before);
	return { modified, trailingNewlineAdded: newlineOnly, rewritten: modified && !newlineOnly };
}

function describe(file, pi, options) {
	const source = resolve(file);
	const out = { file: source, piVersion: pi.version };
	const clip = (text) => (options.full || text.length <= PREVIEW ? text : `${text.slice(0, PREVIEW - 3)}...`);
	const scratch = mkdtempSync(join(tmpdir(), "pi-oracle-"));
	const copy = join(scratch, basename(source));
	try {
		copyFileSync(source, copy);
		const before = readFileSync(copy);
		let manager;
		try {
			manager = pi.SessionManager.open(copy, scratch, options.cwd);
		} catch (error) {
			// Pi refused the file: its message, naming the input rather than the private copy.
			return { ...out, error: String(error?.message ?? error).split(copy).join(source) };
		}
		const after = readFileSync(copy);
		out.fileRepair = repairOf(before, after);
		if (options.emit && out.fileRepair.modified) {
			mkdirSync(options.emit, { recursive: true });
			out.fileRepair.emitted = join(options.emit, basename(source));
			writeFileSync(out.fileRepair.emitted, after);
		}

		out.header = manager.getHeader();
		out.sessionId = manager.getSessionId();
		out.entryCount = manager.getEntryCount();
		out.sessionName = manager.getSessionName() ?? null;
		out.loadedLeafId = manager.getLeafId();
		if (options.leaf === "null") manager.resetLeaf();
		else if (options.leaf !== undefined) manager.branch(options.leaf);
		out.leafId = manager.getLeafId();

		const branch = manager.getBranch();
		out.branchIds = branch.map((entry) => entry.id);
		out.branch = branch.map(entryView);
		out.contextEntryIds = manager.buildContextEntries().map((entry) => entry.id);
		const projection = manager.buildSessionProjection();
		out.projection = projection.entries.map((p) => ({
			id: p.sourceEntry.id,
			type: p.sourceEntry.type,
			messages: p.messages.length,
		}));
		const context = manager.buildSessionContext();
		out.context = {
			thinkingLevel: context.thinkingLevel,
			model: context.model,
			messages: context.messages.map((m) => messageView(m, pi, clip)),
			llmRoles: pi.convertToLlm(context.messages).map((m) => m.role),
		};
		if (options.raw) out.context.raw = context.messages;
		out.tree = treeView(manager.getTree());
		if (options.compaction) out.compaction = compactionView(pi, options, clip, branch, context, projection);
		return out;
	} catch (error) {
		// Pi failed part-way: what was derived so far, and where it failed.
		return { ...out, error: String(error?.stack ?? error) };
	} finally {
		rmSync(scratch, { recursive: true, force: true });
	}
}

// ------------------------------------------------------------------------------ main

const options = readOptions(process.argv.slice(2));
const pkg = piPackageDir(options.oracle);
// Pi reads its agent directory from the environment: point it at a throw-away one (never the
// user's ~/.pi) and keep it offline, before any of its modules is loaded.
const agentDir = mkdtempSync(join(tmpdir(), "pi-oracle-agent-"));
process.env.PI_CODING_AGENT_DIR = agentDir;
process.env.PI_OFFLINE = "1";
try {
	const pi = await loadPi(pkg);
	if (options.serve) {
		await serve(pi);
	} else {
		const results = options.files.map((file) => describe(file, pi, options));
		print(results, options);
	}
} finally {
	rmSync(agentDir, { recursive: true, force: true });
}

function print(results, options) {
	if (options.jsonl) {
		for (const result of results) process.stdout.write(`${JSON.stringify(result)}\n`);
	} else {
		process.stdout.write(`${JSON.stringify(results.length === 1 ? results[0] : results, null, 2)}\n`);
	}
}

// --serve: one Node process for many runs (a test worker asks it ~100 times; a start is ~0.3 s
// of CPU). Each stdin line is {"args": [the arguments of one run, files included, no --oracle],
// "cwd": the directory the run would have started in}; each answer is one line,
// {"results": [one per file, as --jsonl prints them]} or {"error": why the arguments were
// refused}. The same describe() as a run of its own: every file is opened from a private copy in
// a scratch directory of its own.
async function serve(pi) {
	serving = true;
	const { createInterface } = await import("node:readline");
	for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
		if (!line.trim()) continue;
		let answer;
		try {
			const { args, cwd } = JSON.parse(line);
			process.chdir(cwd); // Pi resolves an empty header cwd against the process's
			const request = readOptions(args);
			answer = { results: request.files.map((file) => describe(file, pi, request)) };
		} catch (error) {
			answer = { error: String(error?.message ?? error) };
		}
		process.stdout.write(`${JSON.stringify(answer)}\n`);
	}
}
