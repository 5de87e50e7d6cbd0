// The session tree as the page keeps it: nodes by id, children in file order, the leaf, and
// the rows drawn (a flattened depth-first walk). Walks are loops, never recursion: a
// 200,000-entry linear session must not overflow the stack.

import type { TreeNode } from "../../typescript/src/generated/protocol.ts";

export interface Row {
  node: TreeNode;
  depth: number;
  /** Drawn with a branch mark: the first entry of a sibling among several. */
  fork: boolean;
  onBranch: boolean;
}

export class TreeModel {
  readonly byId = new Map<string, TreeNode>();
  readonly children = new Map<string | null, string[]>();
  order: string[] = [];
  leafId: string | null = null;
  private branchCache: Set<string> | undefined;

  static from(nodes: TreeNode[], leafId: string | null): TreeModel {
    const model = new TreeModel();
    model.leafId = leafId;
    for (const node of nodes) model.add(node);
    return model;
  }

  add(node: TreeNode): void {
    if (this.byId.has(node.id)) {
      this.byId.set(node.id, node);
      return;
    }
    this.byId.set(node.id, node);
    this.order.push(node.id);
    const parent = node.parentId !== null && node.parentId !== undefined ? node.parentId : null;
    let siblings = this.children.get(parent);
    if (siblings === undefined) {
      siblings = [];
      this.children.set(parent, siblings);
    }
    siblings.push(node.id);
    this.branchCache = undefined;
  }

  setLeaf(leafId: string | null): void {
    if (leafId !== this.leafId) {
      this.leafId = leafId;
      this.branchCache = undefined;
    }
  }

  setLabel(entryId: string, label: string | null): void {
    const node = this.byId.get(entryId);
    if (node !== undefined) this.byId.set(entryId, { ...node, label });
  }

  /**
   * Where the conversation continues: the leaf, or when the leaf only keeps books (the marker
   * `tree/navigate` appends, a label) the nearest entry above it that does not.
   */
  continuesFrom(): string | null {
    let id = this.leafId;
    const seen = new Set<string>();
    while (id !== null && !seen.has(id)) {
      seen.add(id);
      const node = this.byId.get(id);
      if (node === undefined || !isBookkeeping(node)) return id;
      id = node.parentId ?? null;
    }
    return id;
  }

  /** Ids root → leaf (a seen-set ends a parent cycle). */
  branch(): Set<string> {
    if (this.branchCache !== undefined) return this.branchCache;
    const ids = new Set<string>();
    let id = this.leafId;
    while (id !== null && !ids.has(id)) {
      const node = this.byId.get(id);
      if (node === undefined) break;
      ids.add(id);
      id = node.parentId ?? null;
    }
    this.branchCache = ids;
    return ids;
  }

  /**
   * Depth-first rows: a chain stays at one depth; below an entry with several children each
   * child's subtree is indented one more, the one on the current branch first. Entries whose
   * parent is missing are roots.
   */
  rows(hide?: (node: TreeNode) => boolean): Row[] {
    const onBranch = this.branch();
    const rows: Row[] = [];
    const roots: string[] = [];
    for (const id of this.order) {
      const node = this.byId.get(id)!;
      const parent = node.parentId ?? null;
      if (parent === null || !this.byId.has(parent)) roots.push(id);
    }
    const stack: { id: string; depth: number; fork: boolean }[] = [];
    const pushChildren = (ids: string[], depth: number, fork: boolean) => {
      const sorted = ids.length > 1 ? [...ids].sort((a, b) => Number(onBranch.has(a)) - Number(onBranch.has(b))) : ids;
      // pushed in reverse so the first pops first; the branch child sorts last -> pops first
      for (let i = 0; i < sorted.length; i++) stack.push({ id: sorted[i]!, depth, fork });
    };
    pushChildren([...roots].reverse(), 0, roots.length > 1);
    const seen = new Set<string>();
    while (stack.length > 0) {
      const { id, depth, fork } = stack.pop()!;
      if (seen.has(id)) continue;
      seen.add(id);
      const node = this.byId.get(id)!;
      if (hide === undefined || !hide(node)) {
        rows.push({ node, depth, fork, onBranch: onBranch.has(id) });
      }
      const kids = this.children.get(id) ?? [];
      if (kids.length === 1) pushChildren(kids, depth, false);
      else if (kids.length > 1) pushChildren([...kids].reverse(), depth + 1, true);
    }
    return rows;
  }

  get size(): number {
    return this.byId.size;
  }
}

/** Pi's preview rules (sessiond/model/preview.py), for entries the page learns of from updates. */
/** Entries that only keep books (file snapshots, leaf moves, labels, names): hidden unless asked for. */
export function isBookkeeping(node: TreeNode): boolean {
  return node.type === "custom" || node.type === "label" || node.type === "session_info";
}

export function previewOf(entry: Record<string, unknown>): { role: string | null; preview: string } {
  const type = entry["type"];
  let text = "";
  let role: string | null = null;
  const contentText = (content: unknown): string => {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) return "";
    return content
      .filter((b): b is { type: string; text: string } => typeof b === "object" && b !== null && b.type === "text")
      .map((b) => String(b.text))
      .join("\n");
  };
  if (type === "message") {
    const message = (entry["message"] ?? {}) as Record<string, unknown>;
    role = typeof message["role"] === "string" ? message["role"] : null;
    if (role === "bashExecution") text = `$ ${String(message["command"] ?? "")}`;
    else {
      text = contentText(message["content"]);
      const content = message["content"];
      if (!text.trim() && Array.isArray(content)) {
        const calls = content.filter((b) => b?.type === "toolCall").map((b) => String(b.name));
        if (calls.length) text = "→ " + calls.join(", ");
        else if (content.some((b) => b?.type === "image")) text = "[image]";
        else if (content.some((b) => b?.type === "thinking")) text = "[thinking]";
      }
      if (!text.trim() && typeof message["errorMessage"] === "string") text = `[error] ${message["errorMessage"]}`;
    }
  } else if (type === "custom_message") text = contentText(entry["content"]);
  else if (type === "compaction" || type === "branch_summary") text = String(entry["summary"] ?? "");
  else if (type === "model_change") text = `${String(entry["provider"])}/${String(entry["modelId"])}`;
  else if (type === "thinking_level_change") text = `thinking: ${String(entry["thinkingLevel"])}`;
  else if (type === "label")
    text = typeof entry["label"] === "string" ? `label ${String(entry["targetId"])}: ${entry["label"]}` : "label cleared";
  else if (type === "session_info") text = `name: ${String(entry["name"] ?? "")}`;
  else if (type === "context_edit")
    text = `${entry["replacement"] === null ? "hide" : "edit"} ${String(entry["targetId"])}`;
  else if (type === "custom") text = String(entry["customType"]);
  else if (type === "usage") text = `usage ${String(entry["kind"])}`;
  else text = typeof type === "string" ? type : "";
  const flat = text.split(/\s+/).filter(Boolean).join(" ");
  return { role, preview: flat.length > 80 ? flat.slice(0, 79) + "…" : flat };
}

export function nodeFromEntry(entry: Record<string, unknown>): TreeNode {
  const { role, preview } = previewOf(entry);
  return {
    id: String(entry["id"]),
    parentId: typeof entry["parentId"] === "string" ? entry["parentId"] : null,
    type: String(entry["type"]),
    role,
    preview,
    label: null,
    timestamp: typeof entry["timestamp"] === "string" ? entry["timestamp"] : null,
    childCount: 0,
  };
}
