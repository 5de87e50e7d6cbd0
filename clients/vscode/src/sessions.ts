// The Sessions view: folders (this workspace's first) → sessions of every agent in them →
// branches (one per leaf of the tree) → entries of that branch → for a prompt with a file-history
// checkpoint, the files changed since. Kept live by the daemon's updates.

import type { FileDiff, SessiondClient, SessionSummary, TreeNode } from "@sessiond/client";
import { homedir } from "node:os";
import { basename } from "node:path";
import type * as vscode from "vscode";
import { agentOf, sessionTitle, shortTitle } from "./agents.js";
import type { Vscode } from "./api.js";

export type Item =
  | { kind: "folder"; path: string; workspace: boolean; sessions: SessionSummary[] }
  | { kind: "session"; session: SessionSummary }
  | { kind: "branch"; sessionId: string; leafId: string; current: boolean; title: string; length: number }
  | { kind: "entry"; sessionId: string; node: TreeNode; readOnly: boolean; leaf: boolean; checkpoint?: boolean }
  | { kind: "file"; sessionId: string; messageId: string; file: FileDiff }
  | { kind: "message"; text: string };

const BOOKKEEPING = new Set(["custom", "label", "session_info"]);

/** The folder a cwd belongs to: the workspace folder holding it, else the cwd itself. */
export function folderOf(cwd: string, workspaceFolders: readonly string[]): { path: string; workspace: boolean } {
  const clean = (p: string) => (p.length > 1 ? p.replace(/\/+$/, "") : p);
  const dir = clean(cwd);
  for (const folder of workspaceFolders) {
    const f = clean(folder);
    if (dir === f || dir.startsWith(f.endsWith("/") ? f : `${f}/`)) return { path: f, workspace: true };
  }
  return { path: dir, workspace: false };
}

/**
 * Sessions grouped by folder: this workspace's folders first (in the workspace's order, shown
 * even when empty so the view says so), then every other folder, the most recently active first.
 */
export function groupByFolder(sessions: Iterable<SessionSummary>, workspaceFolders: readonly string[]): Extract<Item, { kind: "folder" }>[] {
  const groups = new Map<string, Extract<Item, { kind: "folder" }>>();
  for (const folder of workspaceFolders) {
    const path = folderOf(folder, []).path;
    groups.set(path, { kind: "folder", path, workspace: true, sessions: [] });
  }
  for (const session of sessions) {
    const { path, workspace } = folderOf(session.cwd || "", workspaceFolders);
    let group = groups.get(path);
    if (group === undefined) groups.set(path, (group = { kind: "folder", path, workspace, sessions: [] }));
    group.sessions.push(session);
  }
  const newest = (s: SessionSummary) => String(s.updatedAt ?? s.createdAt ?? "");
  for (const group of groups.values()) group.sessions.sort((a, b) => newest(b).localeCompare(newest(a)));
  const order = [...groups.values()];
  const others = order.filter((g) => !g.workspace).sort((a, b) => newest(b.sessions[0]!).localeCompare(newest(a.sessions[0]!)));
  return [...order.filter((g) => g.workspace), ...others];
}

/** `~/src/x` for a path under the home directory. */
export function tildify(path: string, home = homedir()): string {
  return home && (path === home || path.startsWith(`${home}/`)) ? `~${path.slice(home.length)}` : path;
}

/** A session's tree as the view needs it: the nodes by id and the leaves (one per branch). */
export class SessionTree {
  readonly byId = new Map<string, TreeNode>();
  readonly leaves: string[] = [];
  constructor(
    readonly nodes: TreeNode[],
    readonly leafId: string | null,
  ) {
    for (const node of nodes) this.byId.set(node.id, node);
    const parents = new Set(nodes.map((n) => n.parentId).filter((p): p is string => typeof p === "string"));
    for (const node of nodes) {
      if (!parents.has(node.id)) this.leaves.push(node.id);
    }
  }

  /** Root → id, bookkeeping entries left out (a seen-set ends a parent cycle). */
  path(id: string): TreeNode[] {
    const out: TreeNode[] = [];
    const seen = new Set<string>();
    let current: string | null = id;
    while (current !== null && !seen.has(current)) {
      seen.add(current);
      const node = this.byId.get(current);
      if (node === undefined) break;
      out.push(node);
      current = node.parentId ?? null;
    }
    return out.reverse().filter((n) => !BOOKKEEPING.has(n.type));
  }

  /** The branch the leaf is on: the leaf whose path holds it. */
  currentBranchLeaf(): string | null {
    if (this.leafId === null) return null;
    if (this.leaves.includes(this.leafId)) return this.leafId;
    return this.leaves.find((leaf) => this.path(leaf).some((n) => n.id === this.leafId)) ?? this.leafId;
  }

  /** Where the conversation continues: the leaf, or the entry above a bookkeeping leaf. */
  continuesFrom(): string | null {
    let id = this.leafId;
    const seen = new Set<string>();
    while (id !== null && !seen.has(id)) {
      seen.add(id);
      const node = this.byId.get(id);
      if (node === undefined || !BOOKKEEPING.has(node.type)) return id;
      id = node.parentId ?? null;
    }
    return id;
  }
}

export class SessionsProvider implements vscode.TreeDataProvider<Item> {
  private readonly changed: vscode.EventEmitter<Item | undefined | void>;
  readonly onDidChangeTreeData: vscode.Event<Item | undefined | void>;
  private sessions = new Map<string, SessionSummary>();
  private readonly trees = new Map<string, SessionTree>();
  private readonly subscribed = new Set<string>();
  /** Per session: the prompts (message ids) that have a file-history checkpoint. */
  private readonly checkpoints = new Map<string, Set<string>>();
  private listed = false;
  error: string | undefined;

  constructor(
    private readonly vs: Vscode,
    private readonly client: () => SessiondClient | undefined,
    private readonly maxSessions: number,
  ) {
    this.changed = new vs.EventEmitter<Item | undefined | void>();
    this.onDidChangeTreeData = this.changed.event;
  }

  /** Wire the client's updates: the list and every session whose branches were expanded. */
  attach(client: SessiondClient): vscode.Disposable {
    const a = client.onSessionUpdate(({ sessionId, update }) => {
      switch (update.sessionUpdate) {
        case "session_list_update":
          if (update.change === "removed" || !update.session) {
            for (const [id, s] of this.sessions) if (s.path === update.path) this.sessions.delete(id);
          } else {
            const s = update.session as unknown as SessionSummary;
            this.sessions.set(s.sessionId, s);
          }
          this.changed.fire();
          break;
        case "entries_appended":
        case "leaf_changed":
        case "label_update":
        case "external_change":
        case "resync_required":
          // fire and forget, so its failure is handled here: the connection may close while the
          // request is out (the extension stopping, the daemon going away), and the tree is asked
          // again on the next change or reconnection; an unhandled rejection would be an error
          if (this.trees.has(sessionId)) this.reloadTree(sessionId).catch(() => undefined);
          break;
        default:
          break;
      }
    });
    const b = client.onReconnect(() => this.refresh());
    return { dispose: () => (a.dispose(), b.dispose()) };
  }

  refresh(): void {
    this.listed = false;
    this.trees.clear();
    this.changed.fire();
  }

  /** The workspace folders' paths (the groups shown first). */
  private workspaceFolders(): string[] {
    return (this.vs.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
  }

  /** Every listed session (for Search Sessions' and the commands' pickers). */
  allSessions(): SessionSummary[] {
    return [...this.sessions.values()];
  }

  session(sessionId: string): SessionSummary | undefined {
    return this.sessions.get(sessionId);
  }

  tree(sessionId: string): SessionTree | undefined {
    return this.trees.get(sessionId);
  }

  async reloadTree(sessionId: string): Promise<SessionTree> {
    const client = this.client();
    if (client === undefined) throw new Error("not connected to sessiond");
    if (!this.subscribed.has(sessionId)) {
      await client.session.subscribe({ sessionId });
      this.subscribed.add(sessionId);
    }
    const result = await client.tree.get({ sessionId });
    const tree = new SessionTree(result.nodes, result.leafId);
    this.trees.set(sessionId, tree);
    if (!(this.sessions.get(sessionId)?.readOnly ?? false)) {
      // the prompts whose files can be compared (another agent's session has no file history here)
      const listed = await client.fileHistory.list({ sessionId }).catch(() => undefined);
      const ids = (listed?.checkpoints ?? [])
        .filter((c) => c["kind"] !== "undo" && typeof c["messageId"] === "string" && Number(c["files"] ?? 0) > 0)
        .map((c) => String(c["messageId"]));
      this.checkpoints.set(sessionId, new Set(ids));
    }
    this.changed.fire();
    return tree;
  }

  private async list(): Promise<void> {
    const client = this.client();
    if (client === undefined) return;
    const all = new Map<string, SessionSummary>();
    let cursor: string | null | undefined;
    do {
      const page = await client.session.list({
        subscribe: true,
        limit: Math.min(1000, this.maxSessions - all.size),
        ...(cursor ? { cursor } : {}),
      });
      for (const s of page.sessions) all.set(s.sessionId, s);
      cursor = page.nextCursor;
    } while (cursor && all.size < this.maxSessions);
    this.sessions = all;
    this.listed = true;
  }

  async getChildren(item?: Item): Promise<Item[]> {
    try {
      if (item === undefined) {
        if (this.client() === undefined) {
          return this.error ? [{ kind: "message", text: this.error }] : [];
        }
        if (!this.listed) await this.list();
        return groupByFolder(this.sessions.values(), this.workspaceFolders());
      }
      if (item.kind === "folder") {
        return item.sessions.map((session) => ({ kind: "session", session }));
      }
      if (item.kind === "session") {
        const id = item.session.sessionId;
        const tree = this.trees.get(id) ?? (await this.reloadTree(id));
        const current = tree.currentBranchLeaf();
        return tree.leaves
          .filter((leaf) => tree.path(leaf).length > 0)
          .map((leaf) => {
            const path = tree.path(leaf);
            const last = [...path].reverse().find((n) => n.type === "message") ?? path[path.length - 1]!;
            return {
              kind: "branch" as const,
              sessionId: id,
              leafId: leaf,
              current: leaf === current,
              title: last.preview,
              length: path.length,
            };
          })
          .sort((a, b) => Number(b.current) - Number(a.current));
      }
      if (item.kind === "branch") {
        const tree = this.trees.get(item.sessionId);
        if (tree === undefined) return [];
        const readOnly = this.sessions.get(item.sessionId)?.readOnly ?? false;
        const continues = tree.continuesFrom();
        const checkpoints = this.checkpoints.get(item.sessionId);
        return tree.path(item.leafId).map((node) => ({
          kind: "entry" as const,
          sessionId: item.sessionId,
          node,
          readOnly,
          leaf: node.id === continues,
          checkpoint: checkpoints?.has(node.id) ?? false,
        }));
      }
      if (item.kind === "entry" && item.checkpoint) {
        const client = this.client();
        if (client === undefined) return [];
        const diff = await client.fileHistory.diff({ sessionId: item.sessionId, messageId: item.node.id });
        const files = (diff.files as unknown as FileDiff[]).filter((f) => f.changed !== false);
        if (files.length === 0) return [{ kind: "message", text: "no file changed since this prompt" }];
        return files.map((file) => ({ kind: "file" as const, sessionId: item.sessionId, messageId: item.node.id, file }));
      }
      return [];
    } catch (err) {
      return [{ kind: "message", text: err instanceof Error ? err.message : String(err) }];
    }
  }

  getTreeItem(item: Item): vscode.TreeItem {
    const vs = this.vs;
    const None = vs.TreeItemCollapsibleState.None;
    const Collapsed = vs.TreeItemCollapsibleState.Collapsed;
    if (item.kind === "message") {
      const t = new vs.TreeItem(item.text, None);
      t.iconPath = new vs.ThemeIcon("warning");
      return t;
    }
    if (item.kind === "folder") {
      const name = basename(item.path) || item.path || "(no folder)";
      const t = new vs.TreeItem(name, item.workspace ? vs.TreeItemCollapsibleState.Expanded : Collapsed);
      t.id = `folder:${item.path}`;
      const count = `${item.sessions.length} session${item.sessions.length === 1 ? "" : "s"}`;
      t.description = item.workspace ? `this workspace · ${count}` : `${tildify(item.path)} · ${count}`;
      t.tooltip = `${item.path}\n${count}`;
      t.contextValue = item.workspace ? "folder-workspace" : "folder";
      t.iconPath = new vs.ThemeIcon(item.workspace ? "root-folder-opened" : "folder");
      return t;
    }
    if (item.kind === "session") {
      const s = item.session;
      const agent = agentOf(s);
      const t = new vs.TreeItem(sessionTitle(s), Collapsed);
      t.id = `session:${s.sessionId}`;
      t.description = `${agent.label} · ${s.messageCount} msg${s.readOnly ? " · read-only" : ""}`;
      const full = (s.title || s.firstMessage || "").trim();
      t.tooltip = `${full.length > 500 ? `${full.slice(0, 500)}…` : full}\n\n${agent.label} · ${s.sessionId}\n${s.cwd}\n${s.path}\n${s.updatedAt ?? ""}`;
      t.contextValue = s.readOnly ? "session-readonly" : "session";
      t.iconPath = new vs.ThemeIcon(agent.icon);
      t.command = { command: "sessiond.select", title: "Show usage", arguments: [item] };
      return t;
    }
    if (item.kind === "file") {
      const f = item.file;
      const t = new vs.TreeItem(basename(f.path), None);
      t.id = `file:${item.sessionId}:${item.messageId}:${f.path}`;
      t.description = f.changed === null ? `${f.path} · ${f.error ?? "cannot be read"}` : `${f.path} · +${f.added} −${f.removed}`;
      t.tooltip = `${f.path}: at this prompt ↔ now`;
      t.contextValue = "file";
      t.iconPath = new vs.ThemeIcon("diff");
      t.command = { command: "sessiond.openEntry", title: "Show the diff", arguments: [item] };
      return t;
    }
    if (item.kind === "branch") {
      const t = new vs.TreeItem(shortTitle(item.title, item.leafId), item.current ? vs.TreeItemCollapsibleState.Expanded : Collapsed);
      t.id = `branch:${item.sessionId}:${item.leafId}`;
      t.description = `${item.current ? "current branch · " : ""}${item.length} entries`;
      t.contextValue = "branch";
      t.iconPath = new vs.ThemeIcon(item.current ? "git-branch" : "git-commit");
      return t;
    }
    const n = item.node;
    const kind = n.type === "message" ? (n.role ?? "message") : n.type;
    const t = new vs.TreeItem(shortTitle(n.preview, kind), item.checkpoint ? Collapsed : None);
    t.id = `entry:${item.sessionId}:${n.id}`;
    t.command = { command: "sessiond.openEntry", title: "Open in the viewer", arguments: [item] };
    t.description = [kind, n.label ? `🏷 ${n.label}` : "", item.leaf ? "● continues here" : ""].filter(Boolean).join(" · ");
    t.tooltip = `${n.id} (${kind})${n.timestamp ? `\n${n.timestamp}` : ""}`;
    t.contextValue = `entry${n.role === "user" ? "-user" : ""}${item.readOnly ? "-readonly" : ""}`;
    t.iconPath = new vs.ThemeIcon(
      n.type === "compaction"
        ? "fold"
        : n.type === "branch_summary"
          ? "note"
          : n.role === "user"
            ? "account"
            : n.role === "assistant"
              ? "sparkle"
              : n.role === "toolResult"
                ? "tools"
                : "circle-small",
    );
    return t;
  }
}
