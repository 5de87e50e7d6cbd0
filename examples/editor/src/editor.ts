#!/usr/bin/env node
// The editor's side of sessiond with @sessiond/client: a session tree view (tree/get), a
// context-usage status line (usage_update) and a "rewind files" action (fileHistory/rewind,
// dry run then real).
//
//   node dist/editor.js [--stdio] [--socket PATH] [--workspace DIR] [--json]
//       demo: a simulated agent (a second connection) edits WORKSPACE/hello.txt over two
//       prompts while the editor watches, then the editor rewinds to before the second prompt.
//   node dist/editor.js [--stdio] [--socket PATH] --session ID [--rewind MESSAGE_ID] [--json]
//       an existing session: show its tree and usage (and rewind its files to a checkpoint).
//
// --stdio connects the way an editor extension should: it spawns `sessiond connect` (the
// program given by --sessiond, default `sessiond` on PATH), which starts the daemon if none
// runs; without it the example connects to the socket of a running daemon. --socket defaults
// to the daemon's own choice (defaultSocketPath()). --json prints a JSON summary as the last
// line (the CI test reads it).

import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  connectSocket,
  connectStdio,
  defaultSocketPath,
  SessiondError,
  type FileCheckpoint,
  type RewindFile,
  type RewindResult,
  type SessiondClient,
  type TreeResult,
  type UsageResult,
  type UsageUpdate,
} from "@sessiond/client";

const { values: opts } = parseArgs({
  options: {
    socket: { type: "string" },
    workspace: { type: "string" },
    session: { type: "string" },
    rewind: { type: "string" },
    stdio: { type: "boolean", default: false },
    sessiond: { type: "string", default: "sessiond" },
    json: { type: "boolean", default: false },
  },
});

const output: string[] = [];
function say(line: string): void {
  output.push(line);
  process.stdout.write(`${line}\n`);
}

// ---- tree view ------------------------------------------------------------------------

type TreeNode = TreeResult["nodes"][number];

/** Extension state (`custom` entries, e.g. file-history snapshots) is not shown by default. */
const hideCustom = (node: TreeNode) => node.type === "custom";

/**
 * The session tree as text: one line per entry, indented at forks; `*` the leaf, `>` the
 * entries on its branch. Hidden nodes are skipped; their children are still shown.
 */
export function renderTree(tree: TreeResult, hide: (node: TreeNode) => boolean = hideCustom): string[] {
  const children = new Map<string | null, TreeResult["nodes"]>();
  const ids = new Set(tree.nodes.map((n) => n.id));
  for (const node of tree.nodes) {
    const parent = node.parentId !== null && ids.has(node.parentId) ? node.parentId : null;
    children.set(parent, [...(children.get(parent) ?? []), node]);
  }
  const onBranch = new Set<string>();
  const byId = new Map(tree.nodes.map((n) => [n.id, n]));
  for (let id = tree.leafId; id !== null && !onBranch.has(id); id = byId.get(id)?.parentId ?? null) {
    onBranch.add(id);
  }
  // the leaf may be hidden (a snapshot written after the last message): mark its nearest shown ancestor
  let leaf = tree.leafId;
  while (leaf !== null && byId.has(leaf) && hide(byId.get(leaf)!)) leaf = byId.get(leaf)!.parentId;
  const lines: string[] = [];
  let hidden = 0;
  const stack: [TreeNode, number][] = (children.get(null) ?? []).map((n) => [n, 0]);
  stack.reverse();
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    const kids = children.get(node.id) ?? [];
    const next = kids.length > 1 ? depth + 1 : depth; // a chain stays in its column; a fork indents
    for (const kid of [...kids].reverse()) stack.push([kid, next]);
    if (hide(node)) {
      hidden += 1;
      continue;
    }
    const marker = node.id === leaf ? "*" : onBranch.has(node.id) ? ">" : " ";
    const what = node.role ?? node.type;
    const label = node.label ? ` [${node.label}]` : "";
    const preview = node.preview ? `: ${node.preview.slice(0, 60)}` : "";
    lines.push(`${"  ".repeat(depth)}${marker} ${what}${preview}${label}`);
  }
  if (hidden > 0) lines.push(`(${hidden} extension entries hidden)`);
  return lines;
}

// ---- status line ----------------------------------------------------------------------

function tokens(n: number): string {
  return n < 1000 ? String(n) : `${Number((n / 1000).toFixed(1))}k`; // 12000 and 12005 -> 12k, 12345 -> 12.3k
}

/** `ctx 24% · 48k/200k (api)`, from `context/usage` or a `usage_update`. */
export function formatUsage(u: Pick<UsageUpdate | UsageResult, "used" | "size" | "percent" | "source">): string {
  if (u.used === null || u.source === "unknown") return "ctx: no usage yet";
  const size = u.size !== null ? `/${tokens(u.size)}` : "";
  const percent = u.percent !== null ? `${Math.round(u.percent)}% · ` : "";
  return `ctx ${percent}${tokens(u.used)}${size} (${u.source})`;
}

/** Keeps a status line current for one session: `context/usage` once, then every `usage_update`. */
export async function watchUsage(client: SessiondClient, sessionId: string, show: (text: string) => void) {
  show(formatUsage(await client.context.usage({ sessionId })));
  return client.onUpdate("usage_update", (update) => show(formatUsage(update)), { sessionId });
}

// ---- rewind action --------------------------------------------------------------------

function describe(file: RewindFile): string {
  return `${file.path}: ${file.action} (${file.status}${file.reason ? `: ${file.reason}` : ""})`;
}

/**
 * Put the files back to a checkpoint: a dry run first (what an editor shows in its confirm
 * dialog), then — only when nothing would be left alone — the real rewind.
 */
export async function rewindFiles(
  client: SessiondClient,
  sessionId: string,
  checkpoint: FileCheckpoint,
): Promise<{ plan: RewindResult; done: RewindResult | null }> {
  const what = checkpoint.kind === "undo" ? `undo ${checkpoint.messageId}` : `before "${checkpoint.prompt}"`;
  say(`rewind files to ${what} (dry run):`);
  const plan = await client.fileHistory.rewind({ sessionId, messageId: checkpoint.messageId, dryRun: true });
  for (const file of plan.files as RewindFile[]) say(`  ${describe(file)}`);
  if (plan.conflicts > 0 || plan.refused > 0) {
    say(`  ${plan.conflicts} conflict(s), ${plan.refused} refused: not rewinding (an editor would offer force)`);
    return { plan, done: null };
  }
  const done = await client.fileHistory.rewind({ sessionId, messageId: checkpoint.messageId });
  say(`rewound: ${done.written} written, ${done.deleted} deleted, ${done.conflicts} conflicts; undo id ${done.undoId}`);
  return { plan, done };
}

// ---- the demo's agent -----------------------------------------------------------------

const USAGE = [12_000, 48_000];

function assistant(text: string, totalTokens: number) {
  return {
    role: "assistant" as const,
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: { input: totalTokens - 200, output: 200, cacheRead: 0, cacheWrite: 0, totalTokens, cost: { total: 0 } },
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

/** What a coding agent does per prompt: checkpoint, back a file up before writing it, answer. */
async function agentTurn(agent: SessiondClient, sessionId: string, workspace: string, turn: number) {
  const prompts = ["Add a greeting to hello.txt", "Make it louder"];
  const contents = ["hello v1\n", "HELLO V2!\n"];
  const { leafId: promptId } = await agent.session.append({
    sessionId,
    entries: [{ type: "message", message: { role: "user", content: prompts[turn]!, timestamp: Date.now() } }],
  });
  await agent.fileHistory.checkpoint({ sessionId, messageId: promptId });
  await agent.fileHistory.track({ sessionId, path: "hello.txt" }); // before writing: back it up
  writeFileSync(join(workspace, "hello.txt"), contents[turn]!);
  await agent.fileHistory.track({ sessionId, path: "hello.txt", phase: "after" });
  await agent.session.append({
    sessionId,
    entries: [{ type: "message", message: assistant(`Done: ${prompts[turn]}.`, USAGE[turn]!) }],
  });
}

// ---- main -----------------------------------------------------------------------------

/** Both connections of the demo go the same way: a `sessiond connect` bridge each, or the socket. */
function connect(socket: string): Promise<SessiondClient> {
  if (!opts.stdio) return connectSocket(socket);
  return connectStdio({ command: [opts.sessiond, "connect"], socket });
}

async function main(): Promise<void> {
  const socket = opts.socket ?? defaultSocketPath();
  const editor = await connect(socket);
  await editor.initialize({ clientInfo: { name: "editor-example", version: "1.0" } });
  const summary: Record<string, unknown> = { socket, transport: editor.description };
  const status: string[] = [];
  try {
    let sessionId = opts.session;
    let agent: SessiondClient | undefined;
    let workspace: string | undefined;
    if (sessionId === undefined) {
      workspace = opts.workspace ?? mkdtempSync(join(tmpdir(), "sessiond-editor-"));
      writeFileSync(join(workspace, "hello.txt"), "hello v0\n");
      agent = await connect(socket);
      await agent.initialize({ clientInfo: { name: "demo-agent" } });
      sessionId = (await agent.session.new({ cwd: workspace })).sessionId;
      say(`agent: session ${sessionId} in ${workspace}`);
    }
    summary["sessionId"] = sessionId;

    // the editor opens the session: subscribe, then keep a status line
    await editor.session.subscribe({ sessionId });
    const last = USAGE[USAGE.length - 1];
    const settled =
      agent !== undefined
        ? editor.nextUpdate("usage_update", { sessionId, where: (u) => u.used === last, timeoutMs: 15_000 })
        : undefined;
    await watchUsage(editor, sessionId, (text) => {
      status.push(text);
      say(`[status] ${text}`);
    });

    if (agent !== undefined && workspace !== undefined) {
      for (const turn of [0, 1]) await agentTurn(agent, sessionId, workspace, turn);
      await settled; // the status line has caught up with the agent's last answer
    }

    const tree = await editor.tree.get({ sessionId });
    const lines = renderTree(tree);
    say(`tree (${tree.nodes.length} entries):`);
    for (const line of lines) say(`  ${line}`);
    summary["tree"] = lines;

    const history = await editor.fileHistory.list({ sessionId });
    const all = history.checkpoints as FileCheckpoint[];
    const checkpoints = all.filter((c) => c.kind === "checkpoint"); // not the `undo` ones of earlier rewinds
    say(`checkpoints: ${checkpoints.map((c) => `"${c.prompt}" (${c.files} file(s))`).join(", ") || "none"}`);
    const target =
      opts.rewind !== undefined
        ? all.find((c) => c.messageId === opts.rewind) // a prompt's checkpoint, or an undo id

        : agent !== undefined
          ? checkpoints[checkpoints.length - 1] // the demo: undo the last prompt's edits
          : undefined;
    if (opts.rewind !== undefined && target === undefined) throw new Error(`no checkpoint ${opts.rewind}`);
    if (target !== undefined) {
      const announced = editor.nextUpdate("file_history_update", { sessionId, where: (u) => u.event === "rewind" });
      const { plan, done } = await rewindFiles(editor, sessionId, target);
      summary["dryRun"] = plan;
      summary["rewind"] = done;
      if (done !== null) {
        const update = await announced;
        say(`[files] rewind of ${(update.paths ?? []).join(", ")} announced to subscribers`);
      }
      if (workspace !== undefined) {
        summary["helloAfter"] = readFileSync(join(workspace, "hello.txt"), "utf8");
        say(`hello.txt now: ${JSON.stringify(summary["helloAfter"])}`);
      }
    }
    summary["status"] = status;
    await agent?.close();
  } finally {
    await editor.close();
  }
  if (opts.json) process.stdout.write(`${JSON.stringify({ ok: true, ...summary, output })}\n`);
}

/**
 * What to tell the user when the daemon cannot be reached: the two ways this example connects
 * fail for reasons a person can fix, and a stack trace helps with none of them.
 */
export function connectionHint(err: SessiondError): string | undefined {
  const data = err.data as { command?: unknown; path?: unknown; errorCode?: unknown };
  if (Array.isArray(data.command) && data.errorCode === "ENOENT") {
    const program = String(data.command[0]);
    return (
      `cannot run \`${program} connect\`: ${program.includes("/") ? `${program} does not exist` : `\`${program}\` is not on PATH`}.\n` +
      "  Install it (at the root of a checkout: `pipx install .`, or `scripts/bootstrap` for its .venv),\n" +
      "  then put its bin directory on PATH (for the .venv: `export PATH=\"$PWD/.venv/bin:$PATH\"` at the\n" +
      "  checkout's root), or name the program: --sessiond /path/to/sessiond"
    );
  }
  if (typeof data.path === "string" && (data.errorCode === "ENOENT" || data.errorCode === "ECONNREFUSED")) {
    return (
      `no sessiond daemon listens on ${data.path}.\n` +
      "  Start one (`sessiond serve`, or `scripts/run` in a checkout), or pass --stdio to let\n" +
      "  `sessiond connect` start it, as an editor extension does."
    );
  }
  return undefined;
}

main().catch((err: unknown) => {
  if (err instanceof SessiondError) {
    // An error the daemon or the connection reported: its message (and a hint), no stack.
    const hint = connectionHint(err);
    const detail = hint ?? `${err.message} (${err.codeName ?? err.code} ${JSON.stringify(err.data)})`;
    process.stderr.write(`editor example: ${detail}\n`);
  } else {
    process.stderr.write(`editor example failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  }
  process.exitCode = 1;
});
