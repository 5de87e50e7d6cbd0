// Fork / Label / Compact / Rewind… and the viewer panel. Every failure ends in a message that
// says what happened (the daemon's error message and code), never in silence.

import type { SessiondClient, SessionSummary, TreeNode } from "@sessiond/client";
import { SessiondError } from "@sessiond/client";
import type { FileCheckpoint, RewindFile } from "@sessiond/client";
import { readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import type * as vscode from "vscode";
import type { Vscode } from "./api.js";
import { reverseApply } from "./patch.js";
import type { Item, SessionsProvider } from "./sessions.js";
import type { UsageStatus } from "./status.js";

export const CHECKPOINT_SCHEME = "sessiond-checkpoint";

export function describe(err: unknown): string {
  if (err instanceof SessiondError) return `${err.message} [${err.code}]`;
  return err instanceof Error ? err.message : String(err);
}

export interface ViewerInfo {
  url: string;
  tokenPath: string;
}

export async function readViewerInfo(runDir: string): Promise<ViewerInfo | undefined> {
  try {
    const info = JSON.parse(await readFile(join(runDir, "ui.json"), "utf-8")) as Record<string, unknown>;
    if (typeof info["url"] === "string" && typeof info["tokenPath"] === "string") {
      return { url: info["url"], tokenPath: info["tokenPath"] };
    }
  } catch {
    // no viewer (turned off, or an older daemon)
  }
  return undefined;
}

/** The HTML of the webview: the daemon's viewer in a frame (same origin as its WebSocket). */
export function viewerHtml(frameUrl: string): string {
  const origin = new URL(frameUrl).origin;
  const src = frameUrl.replace(/"/g, "&quot;");
  return `<!doctype html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; style-src 'unsafe-inline'">
<style>html,body,iframe{margin:0;padding:0;border:0;width:100%;height:100%;overflow:hidden}</style>
</head><body><iframe src="${src}" title="sessiond session viewer"></iframe></body></html>`;
}

export class Commands {
  /** Checkpoint contents for the diff editor, by URI query. */
  private readonly documents = new Map<string, string>();
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly vs: Vscode,
    private readonly client: () => SessiondClient | undefined,
    private readonly sessions: SessionsProvider,
    private readonly status: UsageStatus,
    private readonly runDir: () => string,
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
    const picked = await this.vs.window.showQuickPick(
      (await this.sessions.getChildren())
        .filter((i): i is Extract<Item, { kind: "session" }> => i.kind === "session")
        .map((i) => ({ label: i.session.title || i.session.firstMessage, description: i.session.cwd, session: i.session })),
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
      if (session) await this.status.follow(this.need(), session.sessionId, session.title || session.firstMessage);
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
    const vs = this.vs;
    const path = isAbsolute(file.path) ? file.path : join(session.cwd, file.path);
    let now = "";
    try {
      now = await readFile(path, "utf-8");
    } catch {
      // missing now: the checkpoint side is all there is
    }
    const diff = await client.fileHistory.diff({ sessionId: session.sessionId, messageId, path: file.path });
    const entry = (diff.files as unknown as { diff?: string | null; binary?: boolean }[])[0];
    let before: string;
    if (file.to.kind === "missing") before = "";
    else if (entry?.diff) before = reverseApply(now, entry.diff);
    else if (entry?.binary) before = "(binary file: not shown)";
    else before = now;
    const key = `${session.sessionId}/${messageId}/${file.path}`;
    this.documents.set(key, before);
    const left = vs.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${file.path}`, query: key });
    const right = vs.Uri.file(path);
    await vs.commands.executeCommand(
      "vscode.diff",
      left,
      right,
      `${file.path}: at the checkpoint ↔ now (${file.action}${file.status === "conflict" ? ", conflict" : ""})`,
      { preview: false },
    );
  }

  /** The daemon's viewer in a webview panel (the same page `sessiond ui` opens). */
  async openViewer(sessionOrItem?: string | Item): Promise<void> {
    await this.run("opening the viewer", async () => {
      const sessionId =
        typeof sessionOrItem === "string"
          ? sessionOrItem
          : sessionOrItem?.kind === "session"
            ? sessionOrItem.session.sessionId
            : (this.status.sessionId ?? undefined);
      const info = await readViewerInfo(this.runDir());
      if (info === undefined) {
        throw new Error(
          "the daemon serves no viewer (it was started with --ui off or [ui] enabled = false, or it is older); restart it with the viewer on",
        );
      }
      const token = (await readFile(info.tokenPath, "utf-8")).trim();
      const external = await this.vs.env.asExternalUri(this.vs.Uri.parse(info.url));
      const fragment = new URLSearchParams({ token, ...(sessionId ? { session: sessionId } : {}) });
      const frame = `${external.toString(true)}#${fragment.toString()}`;
      if (this.panel === undefined) {
        this.panel = this.vs.window.createWebviewPanel("sessiond.viewer", "Sessions", this.vs.ViewColumn.Active, {
          enableScripts: true,
          retainContextWhenHidden: true,
        });
        this.panel.onDidDispose(() => (this.panel = undefined));
      }
      this.panel.webview.html = viewerHtml(frame);
      this.panel.reveal();
    });
  }
}
