// Fork / Label / Compact / Rewind… and the viewer panel. Every failure ends in a message that
// says what happened (the daemon's error message and code), never in silence.

import type { SessiondClient, SessionSummary, TreeNode } from "@sessiond/client";
import { SessiondError } from "@sessiond/client";
import type { FileCheckpoint, FileDiff, RewindFile } from "@sessiond/client";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import type * as vscode from "vscode";
import { agentOf, sessionTitle } from "./agents.js";
import type { Vscode } from "./api.js";
import type { Settings } from "./connection.js";
import { reverseApply } from "./patch.js";
import { call, MissingMethodError } from "./untyped.js";
import type { Item, SessionsProvider } from "./sessions.js";
import type { UsageStatus } from "./status.js";
import type { ViewerPanel, ViewerTarget } from "./viewer.js";

export const CHECKPOINT_SCHEME = "sessiond-checkpoint";

export function describe(err: unknown): string {
  if (err instanceof SessiondError) return `${err.message} [${err.code}]`;
  return err instanceof Error ? err.message : String(err);
}

export class Commands {
  /** Checkpoint contents for the diff editor, by URI query. */
  private readonly documents = new Map<string, string>();

  constructor(
    private readonly vs: Vscode,
    private readonly client: () => SessiondClient | undefined,
    private readonly sessions: SessionsProvider,
    private readonly status: UsageStatus,
    readonly viewer: ViewerPanel,
    /** The settings: the bridge's program (`sessiond connect`) also runs `sessiond export`. */
    private readonly settings: () => Settings,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Serves the checkpoint side of the rewind diffs. */
  contentProvider(): vscode.TextDocumentContentProvider {
    return { provideTextDocumentContent: (uri) => this.documents.get(uri.query) ?? "" };
  }

  private need(): SessiondClient {
    const client = this.client();
    if (client === undefined) throw new Error("not connected to sessiond (see the Sessions view)");
    return client;
  }

  /** The session an item names, else the one the status bar follows, else ask. */
  private async sessionOf(item?: Item): Promise<SessionSummary | undefined> {
    const id =
      item?.kind === "session"
        ? item.session.sessionId
        : item?.kind === "entry" || item?.kind === "branch"
          ? item.sessionId
          : this.status.sessionId;
    if (id !== undefined) return this.sessions.session(id) ?? (await this.lookup(id));
    if (this.sessions.allSessions().length === 0) await this.sessions.getChildren();
    const picked = await this.vs.window.showQuickPick(
      this.sessions
        .allSessions()
        .map((session) => ({ kind: "session" as const, session }))
        .map((i) => ({ label: sessionTitle(i.session), description: `${agentOf(i.session).label} · ${i.session.cwd}`, session: i.session })),
      { placeHolder: "Which session?" },
    );
    return picked?.session;
  }

  private async lookup(sessionId: string): Promise<SessionSummary | undefined> {
    const loaded = await this.need().session.load({ sessionId });
    return {
      sessionId,
      path: loaded.path,
      cwd: loaded.cwd,
      title: loaded.name ?? null,
      firstMessage: "",
      createdAt: null,
      updatedAt: null,
      messageCount: 0,
      parentSession: null,
      readOnly: loaded.readOnly ?? false,
    };
  }

  private async run<T>(what: string, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (err) {
      void this.vs.window.showErrorMessage(`sessiond: ${what} failed: ${describe(err)}`);
      return undefined;
    }
  }

  async select(item?: Item): Promise<void> {
    await this.run("showing usage", async () => {
      const session = await this.sessionOf(item);
      if (session) await this.status.follow(this.need(), session.sessionId, sessionTitle(session));
    });
  }

  /** Fork before a prompt: the entry chosen, or a prompt of the session picked from a list. */
  async fork(item?: Item): Promise<string | undefined> {
    return this.run("fork", async () => {
      const client = this.need();
      let sessionId: string;
      let node: TreeNode | undefined;
      if (item?.kind === "entry") {
        sessionId = item.sessionId;
        node = item.node;
      } else {
        const session = await this.sessionOf(item);
        if (!session) return undefined;
        sessionId = session.sessionId;
        const tree = await this.sessions.reloadTree(sessionId);
        const prompts = tree.nodes.filter((n) => n.role === "user");
        const picked = await this.vs.window.showQuickPick(
          prompts.map((n) => ({ label: n.preview, description: n.id, node: n })),
          { placeHolder: "Fork before which prompt?" },
        );
        node = picked?.node;
      }
      if (node === undefined) return undefined;
      const position = node.role === "user" ? "before" : "at";
      const result = await client.session.fork({ sessionId, entryId: node.id, position });
      this.sessions.refresh();
      const open = await this.vs.window.showInformationMessage(
        `Forked into ${result.sessionId}${position === "at" ? " (a copy up to this entry)" : ""}.`,
        "Open in Viewer",
      );
      if (open === "Open in Viewer") await this.openViewer(result.sessionId);
      return result.sessionId;
    });
  }

  async label(item?: Item): Promise<string | undefined> {
    return this.run("label", async () => {
      if (item?.kind !== "entry") {
        void this.vs.window.showInformationMessage("Label: choose an entry in the Sessions view (right-click → Label…).");
        return undefined;
      }
      const value = await this.vs.window.showInputBox({
        prompt: `Label for “${item.node.preview}” (empty clears it)`,
        value: item.node.label ?? "",
      });
      if (value === undefined) return undefined;
      await this.need().tree.label({ sessionId: item.sessionId, entryId: item.node.id, label: value.trim() || null });
      return value.trim();
    });
  }

  async compact(item?: Item): Promise<void> {
    await this.run("compaction", async () => {
      const session = await this.sessionOf(item);
      if (!session) return;
      const client = this.need();
      const result = await this.vs.window.withProgress(
        { location: this.vs.ProgressLocation.Notification, title: "Compacting the session…", cancellable: false },
        () => client.compaction.run({ sessionId: session.sessionId }),
      );
      void this.vs.window.showInformationMessage(
        `Compacted: ${result.tokensBefore} → ${result.tokensAfter ?? "?"} tokens (summary by ${result.summarizer ?? "?"}).`,
      );
    });
  }

  /**
   * Rewind the session's files to a prompt's checkpoint: the dry run first, each file that would
   * change opened in the diff editor (the checkpoint on the left, the file now on the right),
   * then a confirmation; afterwards an Undo.
   */
  async rewind(item?: Item): Promise<{ rewound: RewindFile[]; undoId: string | null } | undefined> {
    return this.run("rewind", async () => {
      const session = await this.sessionOf(item);
      if (!session) return undefined;
      const client = this.need();
      const sessionId = session.sessionId;
      const listed = await client.fileHistory.list({ sessionId });
      const checkpoints = (listed.checkpoints as unknown as FileCheckpoint[]).filter((c) => c.kind !== "undo");
      if (checkpoints.length === 0) {
        void this.vs.window.showInformationMessage("This session has no file-history checkpoints to rewind to.");
        return undefined;
      }
      const picked = await this.vs.window.showQuickPick(
        [...checkpoints].reverse().map((c) => ({
          label: c.prompt ?? c.messageId,
          description: `${c.timestamp ?? ""} · ${c.files} files`,
          checkpoint: c,
        })),
        { placeHolder: "Rewind the files to how they were at which prompt?" },
      );
      if (!picked) return undefined;
      const messageId = picked.checkpoint.messageId;
      const dry = await client.fileHistory.rewind({ sessionId, messageId, dryRun: true });
      const files = dry.files as unknown as RewindFile[];
      const changing = files.filter((f) => f.action !== "none" && f.status !== "refused");
      if (changing.length === 0) {
        void this.vs.window.showInformationMessage("The files are already as they were at that prompt.");
        return undefined;
      }
      for (const file of changing) await this.showDiff(client, session, messageId, file);
      const conflicts = files.filter((f) => f.status === "conflict");
      const question =
        `Rewind ${changing.length - conflicts.length} file(s) to “${picked.label}”?` +
        (conflicts.length
          ? ` ${conflicts.length} changed by someone else (${conflicts.map((f) => f.path).join(", ")}) will be left alone unless you overwrite them.`
          : "");
      const choices = conflicts.length ? ["Rewind", "Rewind and Overwrite Conflicts"] : ["Rewind"];
      const answer = await this.vs.window.showWarningMessage(question, { modal: true }, ...choices);
      if (answer === undefined) return undefined;
      const done = await client.fileHistory.rewind({ sessionId, messageId, force: answer !== "Rewind" });
      const summary = `Rewound: ${done.written} written, ${done.deleted} deleted, ${done.conflicts} left alone.`;
      if (done.undoId) {
        const undo = await this.vs.window.showInformationMessage(summary, "Undo");
        if (undo === "Undo") {
          const back = await client.fileHistory.rewind({ sessionId, messageId: done.undoId });
          void this.vs.window.showInformationMessage(`Undone: ${back.written} written, ${back.deleted} deleted.`);
        }
      } else {
        void this.vs.window.showInformationMessage(summary);
      }
      return { rewound: done.files as unknown as RewindFile[], undoId: done.undoId };
    });
  }

  private async showDiff(client: SessiondClient, session: SessionSummary, messageId: string, file: RewindFile) {
    const what = `${file.action}${file.status === "conflict" ? ", conflict" : ""}`;
    await this.diffEditor(client, session.sessionId, session.cwd, messageId, file.path, file.to.kind === "missing", what, false);
  }

  /**
   * VS Code's diff editor on one tracked file: as it was at the prompt's checkpoint (rebuilt
   * from `fileHistory/diff`, checkpoint → now, applied backwards) on the left, the file now on
   * the right.
   */
  private async diffEditor(
    client: SessiondClient,
    sessionId: string,
    cwd: string,
    messageId: string,
    file: string,
    missingThen: boolean,
    what: string,
    preview: boolean,
  ): Promise<void> {
    const vs = this.vs;
    const path = isAbsolute(file) ? file : join(cwd, file);
    let now = "";
    try {
      now = await readFile(path, "utf-8");
    } catch {
      // missing now: the checkpoint side is all there is
    }
    const diff = await client.fileHistory.diff({ sessionId, messageId, path: file });
    const entry = (diff.files as unknown as FileDiff[])[0];
    let before: string;
    if (missingThen || entry?.from?.kind === "missing") before = "";
    else if (entry?.diff) before = reverseApply(now, entry.diff);
    else if (entry?.binary) before = "(binary file: not shown)";
    else before = now;
    const key = `${sessionId}/${messageId}/${file}`;
    this.documents.set(key, before);
    const left = vs.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${file}`, query: key });
    const right = vs.Uri.file(path);
    await vs.commands.executeCommand("vscode.diff", left, right, `${file}: at the checkpoint ↔ now (${what})`, { preview });
  }

  /**
   * A click in the Sessions view: an entry opens the viewer at it; a file under a prompt opens
   * the diff editor on it (as at that prompt ↔ now).
   */
  async openEntry(item?: Item): Promise<void> {
    await this.run("opening the entry", async () => {
      if (item?.kind === "file") {
        const session = await this.sessionOf(item);
        if (!session) return;
        const what = item.file.changed === null ? "cannot be read now" : `+${item.file.added} −${item.file.removed}`;
        await this.diffEditor(this.need(), item.sessionId, session.cwd, item.messageId, item.file.path, false, what, true);
        return;
      }
      if (item?.kind === "entry") {
        await this.viewer.open({ session: item.sessionId, entry: item.node.id });
        return;
      }
      await this.openViewer(item);
    });
  }

  /**
   * Resume in terminal: the session's own agent's resume command (`claude --resume ID`, `codex
   * resume ID`, `pi --session FILE`…), typed into a new terminal in the session's cwd.
   */
  async resume(item?: Item): Promise<vscode.Terminal | undefined> {
    return this.run("resume", async () => {
      const session = await this.sessionOf(item);
      if (!session) return undefined;
      const agent = agentOf(session);
      const command = agent.resume(session);
      if (command === null) {
        void this.vs.window.showInformationMessage(`${agent.label} sessions cannot be resumed from here.`);
        return undefined;
      }
      const cwd = session.cwd && existsSync(session.cwd) ? session.cwd : undefined;
      const terminal = this.vs.window.createTerminal({
        name: `${agent.label}: ${sessionTitle(session)}`.slice(0, 60),
        ...(cwd ? { cwd } : {}),
      });
      terminal.show();
      terminal.sendText(command, true);
      if (cwd === undefined && session.cwd) {
        void this.vs.window.showWarningMessage(`The session's folder ${session.cwd} is gone: resuming in the default folder.`);
      }
      return terminal;
    });
  }

  /**
   * Export to Pi: the daemon's `session/export` (what `sessiond export ID` does: a new native Pi
   * session in the store, the source only read), or, on a daemon without it, `sessiond export`
   * run with the bridge's program; the new session is offered in the viewer.
   */
  async exportToPi(item?: Item): Promise<string | undefined> {
    return this.run("export", async () => {
      const session = await this.sessionOf(item);
      if (!session) return undefined;
      const client = this.need();
      const result = await this.vs.window.withProgress(
        { location: this.vs.ProgressLocation.Notification, title: "Exporting to Pi…", cancellable: false },
        async () => {
          try {
            return await call<Record<string, unknown>>(client, "session/export", { sessionId: session.sessionId });
          } catch (err) {
            if (!(err instanceof MissingMethodError)) throw err;
            // a daemon older than session/export: the CLI does the same in its own process
            const settings = this.settings();
            const [program, ...rest] = settings.command;
            // the bridge's argv ends in "connect"; what precedes it runs sessiond (python -m sessiond)
            const prefix = rest.at(-1) === "connect" ? rest.slice(0, -1) : [];
            const store = settings.store ? ["--store", settings.store] : [];
            return runJson(program!, [...prefix, "export", "--json", ...store, session.sessionId], this.env);
          }
        },
      );
      const id = typeof result["sessionId"] === "string" ? result["sessionId"] : undefined;
      this.sessions.refresh();
      const choice = await this.vs.window.showInformationMessage(
        `Exported to Pi: ${id ?? "a new session"}${typeof result["path"] === "string" ? ` (${result["path"]})` : ""}.`,
        "Open in Viewer",
      );
      if (choice === "Open in Viewer" && id) await this.openViewer(id);
      return id;
    });
  }

  /** The daemon's viewer in a webview panel (the same page `sessiond ui` opens). */
  async openViewer(sessionOrItem?: string | Item | ViewerTarget): Promise<void> {
    await this.run("opening the viewer", async () => {
      let target: ViewerTarget;
      if (typeof sessionOrItem === "string") target = { session: sessionOrItem };
      else if (sessionOrItem === undefined) target = this.status.sessionId ? { session: this.status.sessionId } : {};
      else if ("kind" in sessionOrItem) {
        const item = sessionOrItem;
        target =
          item.kind === "session"
            ? { session: item.session.sessionId }
            : item.kind === "entry"
              ? { session: item.sessionId, entry: item.node.id }
              : item.kind === "branch" || item.kind === "file"
                ? { session: item.sessionId }
                : {};
      } else target = sessionOrItem;
      await this.viewer.open(target);
    });
  }
}

/** Runs a sessiond subcommand with `--json` and returns its JSON output (its stderr on failure). */
export function runJson(program: string, args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf-8").on("data", (d: string) => (out += d));
    child.stderr.setEncoding("utf-8").on("data", (d: string) => (err += d));
    child.on("error", (e) => reject(e));
    child.on("close", (code) => {
      if (code !== 0) {
        reject(new Error(err.trim().split("\n").slice(-3).join(" ") || `${program} ${args.join(" ")} exited with ${code}`));
        return;
      }
      try {
        resolve(JSON.parse(out) as Record<string, unknown>);
      } catch {
        reject(new Error(`${program} ${args.join(" ")} printed no JSON: ${out.slice(0, 200)}`));
      }
    });
  });
}
