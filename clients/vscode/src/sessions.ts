// The Sessions view: sessions (every root) → branches (one per leaf of the tree) → entries of
// that branch, kept live by the daemon's updates.

import type { SessiondClient, SessionSummary, TreeNode } from "@sessiond/client";
import type * as vscode from "vscode";
import type { Vscode } from "./api.js";

export type Item =
  | { kind: "session"; session: SessionSummary }
  | { kind: "branch"; sessionId: string; leafId: string; current: boolean; title: string; length: number }
  | { kind: "entry"; sessionId: string; node: TreeNode; readOnly: boolean; leaf: boolean }
  | { kind: "message"; text: string };

const BOOKKEEPING = new Set(["custom", "label", "session_info"]);

function roots(session: SessionSummary): string {
  const root = session.root ?? "sessiond";
  return root === "claude" ? "Claude Code" : root === "pi" ? "Pi" : "sessiond";
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
          if (this.trees.has(sessionId)) void this.reloadTree(sessionId);
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
        return [...this.sessions.values()]
          .sort((a, b) => String(b.updatedAt ?? "").localeCompare(String(a.updatedAt ?? "")))
          .map((session) => ({ kind: "session", session }));
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
        return tree.path(item.leafId).map((node) => ({
          kind: "entry" as const,
          sessionId: item.sessionId,
          node,
          readOnly,
          leaf: node.id === continues,
        }));
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
    if (item.kind === "session") {
      const s = item.session;
      const t = new vs.TreeItem(s.title || s.firstMessage || s.sessionId, Collapsed);
      t.id = `session:${s.sessionId}`;
      t.description = `${roots(s)} · ${s.messageCount} msg${s.readOnly ? " · read-only" : ""}`;
      t.tooltip = `${s.cwd}\n${s.path}\n${s.updatedAt ?? ""}`;
      t.contextValue = s.readOnly ? "session-readonly" : "session";
      t.iconPath = new vs.ThemeIcon(s.root === "claude" ? "hubot" : s.root === "pi" ? "symbol-constant" : "comment-discussion");
      t.command = { command: "sessiond.select", title: "Show usage", arguments: [item] };
      return t;
    }
    if (item.kind === "branch") {
      const t = new vs.TreeItem(item.title || item.leafId, item.current ? vs.TreeItemCollapsibleState.Expanded : Collapsed);
      t.id = `branch:${item.sessionId}:${item.leafId}`;
      t.description = `${item.current ? "current branch · " : ""}${item.length} entries`;
      t.contextValue = "branch";
      t.iconPath = new vs.ThemeIcon(item.current ? "git-branch" : "git-commit");
      return t;
    }
    const n = item.node;
    const kind = n.type === "message" ? (n.role ?? "message") : n.type;
    const t = new vs.TreeItem(n.preview || kind, None);
    t.id = `entry:${item.sessionId}:${n.id}`;
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
