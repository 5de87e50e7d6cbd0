import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { isBookkeeping, type Row, type TreeModel } from "./treemodel.ts";
import { time } from "./format.ts";
import { loadRich } from "./markdown.tsx";

const ROW = 24;
const OVERSCAN = 20;
/** Indentation stops growing here: a deep fork must not push the text out of a narrow window. */
const MAX_INDENT = 6;

const ICONS: Record<string, string> = {
  compaction: "⟳",
  branch_summary: "↳",
  label: "🏷",
  model_change: "⚙",
  thinking_level_change: "⚙",
  session_info: "✎",
  custom: "·",
  custom_message: "✉",
};

function kindOf(row: Row): string {
  const { node } = row;
  if (node.type === "message") return node.role ?? "message";
  return node.type;
}

/**
 * The tree as rows, drawn only where visible (a 10,000-entry session paints as fast as a small
 * one). The current branch is highlighted and the leaf marked; on first paint it scrolls to
 * the leaf. While the reader is at the bottom, a growing session keeps it there (follow mode);
 * entries that arrive are highlighted for a moment. Arrow keys (or j/k) move the selection.
 */
export function TreeView({
  model,
  version,
  selected,
  onSelect,
  onClose,
  loadMs,
  fresh,
  partial,
}: {
  model: TreeModel;
  version: number;
  selected: string | null;
  onSelect: (id: string) => void;
  onClose: () => void;
  loadMs: number | null;
  fresh: Set<string>;
  /** Only the newest entries are here yet (the rest is on its way). */
  partial: boolean;
}) {
  const [bookkeeping, setBookkeeping] = useState(false);
  const rows = useMemo(() => model.rows(bookkeeping ? undefined : isBookkeeping), [model, version, bookkeeping]);
  const box = useRef<HTMLDivElement>(null);
  const [scroll, setScroll] = useState(0);
  const [height, setHeight] = useState(600);
  const scrolledFor = useRef<TreeModel | null>(null);
  const [onlyBranch, setOnlyBranch] = useState(false);
  const shown = useMemo(() => (onlyBranch ? rows.filter((r) => r.onBranch) : rows), [rows, onlyBranch]);
  const following = useRef(true);
  const [behind, setBehind] = useState(0);
  const lastCount = useRef(shown.length);

  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const observer = new ResizeObserver(() => setHeight(el.clientHeight));
    observer.observe(el);
    setHeight(el.clientHeight);
    return () => observer.disconnect();
  }, []);

  useLayoutEffect(() => {
    const el = box.current;
    if (el === null) return;
    if (scrolledFor.current !== model) {
      // first paint of this model: the leaf in view (selected entry first, when there is one)
      scrolledFor.current = model;
      lastCount.current = shown.length;
      const target = selected ?? model.continuesFrom();
      const at = shown.findIndex((r) => r.node.id === target);
      if (at >= 0) {
        el.scrollTop = Math.max(0, at * ROW - el.clientHeight / 2);
        setScroll(el.scrollTop);
      }
      following.current = el.scrollTop + el.clientHeight >= shown.length * ROW - ROW;
      if (!partial) {
        performance.mark("sessiond-tree-complete");
        // the reader's renderer (a chunk of its own) now that the tree is drawn, so opening an
        // entry does not wait for it
        setTimeout(() => void loadRich(), 300);
      }
      if (performance.getEntriesByName("sessiond-tree-painted").length === 0) {
        // after the frame is painted (as Preact runs effects): what the reader sees
        requestAnimationFrame(() => setTimeout(() => performance.mark("sessiond-tree-painted"), 0));
      }
      return;
    }
    const added = shown.length - lastCount.current;
    lastCount.current = shown.length;
    if (added <= 0) return;
    if (following.current) {
      el.scrollTop = shown.length * ROW;
      setScroll(el.scrollTop);
    } else setBehind((b) => b + added);
  }, [model, shown]);

  const reveal = (at: number) => {
    const el = box.current;
    if (el === null || at < 0) return;
    if (at * ROW < el.scrollTop || (at + 1) * ROW > el.scrollTop + el.clientHeight) {
      el.scrollTop = Math.max(0, at * ROW - el.clientHeight / 2);
      setScroll(el.scrollTop);
    }
  };

  useEffect(() => {
    // a selection made elsewhere (a link, a search hit, the keyboard) is scrolled into view
    if (selected !== null) reveal(shown.findIndex((r) => r.node.id === selected));
  }, [selected]);

  const onKey = (e: KeyboardEvent) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const at = selected === null ? -1 : shown.findIndex((r) => r.node.id === selected);
    const page = Math.max(1, Math.floor(height / ROW) - 1);
    let next: number | null = null;
    if (e.key === "ArrowDown" || e.key === "j") next = at < 0 ? 0 : at + 1;
    else if (e.key === "ArrowUp" || e.key === "k") next = at < 0 ? shown.length - 1 : at - 1;
    else if (e.key === "PageDown") next = at + page;
    else if (e.key === "PageUp") next = at - page;
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = shown.length - 1;
    else if (e.key === "Escape") {
      onClose();
      e.preventDefault();
      return;
    }
    if (next === null) return;
    e.preventDefault();
    const row = shown[Math.max(0, Math.min(shown.length - 1, next))];
    if (row !== undefined) onSelect(row.node.id);
  };

  const first = Math.max(0, Math.floor(scroll / ROW) - OVERSCAN);
  const last = Math.min(shown.length, Math.ceil((scroll + height) / ROW) + OVERSCAN);
  const visible = shown.slice(first, last);
  const continues = model.continuesFrom();

  return (
    <div class="tree-pane">
      <div class="tree-tools">
        <label>
          <input type="checkbox" checked={onlyBranch} onChange={(e) => setOnlyBranch(e.currentTarget.checked)} /> current
          branch only
        </label>
        <label>
          <input type="checkbox" checked={bookkeeping} onChange={(e) => setBookkeeping(e.currentTarget.checked)} />{" "}
          bookkeeping
        </label>
        <span class="dim tree-stats" data-testid="tree-stats">
          {model.size} entries{partial ? " (newest first, loading the rest…)" : ""} · continues from{" "}
          {continues ? continues.slice(0, 8) : "the start"}
          {loadMs !== null ? ` · loaded in ${Math.round(loadMs)} ms` : ""}
        </span>
      </div>
      <div
        class="tree"
        ref={box}
        role="tree"
        tabIndex={0}
        aria-label="entries"
        aria-activedescendant={selected ? `node-${selected}` : undefined}
        data-rows={shown.length}
        data-entries={model.size}
        data-partial={partial ? "true" : "false"}
        data-following={following.current ? "true" : "false"}
        data-load-ms={loadMs !== null ? Math.round(loadMs) : ""}
        data-leaf={model.leafId ?? ""}
        data-continues={continues ?? ""}
        onKeyDown={onKey}
        onScroll={(e) => {
          const el = e.currentTarget;
          setScroll(el.scrollTop);
          following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - ROW;
          el.dataset["following"] = String(following.current);
          if (following.current) setBehind(0);
        }}
      >
        <div style={{ height: `${shown.length * ROW}px`, position: "relative" }}>
          {visible.map((row, i) => {
            const { node } = row;
            const kind = kindOf(row);
            const isLeaf = node.id === continues;
            const classes = [
              "node",
              `kind-${kind}`,
              row.onBranch ? "on-branch" : "",
              isLeaf ? "leaf" : "",
              node.id === selected ? "selected" : "",
              fresh.has(node.id) ? "fresh" : "",
            ].join(" ");
            return (
              <div
                key={node.id}
                id={`node-${node.id}`}
                class={classes}
                role="treeitem"
                aria-selected={node.id === selected}
                data-id={node.id}
                data-type={node.type}
                style={{ top: `${(first + i) * ROW}px`, "--depth": String(Math.min(row.depth, MAX_INDENT)) }}
                onClick={() => onSelect(node.id)}
                title={`${node.id} · ${time(node.timestamp)}${row.depth > MAX_INDENT ? ` · depth ${row.depth}` : ""}`}
              >
                {row.fork ? <span class="fork">├</span> : null}
                <span class="icon">{ICONS[node.type] ?? ""}</span>
                <span class={`kind kind-label-${kind}`}>{kind}</span>
                <span class="preview">{node.preview}</span>
                {node.label ? <span class="label-pill">{node.label}</span> : null}
                {isLeaf ? <span class="leaf-mark">● leaf</span> : null}
              </div>
            );
          })}
        </div>
        {behind > 0 ? (
          <button
            class="follow-button"
            onClick={() => {
              const el = box.current;
              if (el) el.scrollTop = el.scrollHeight;
              setBehind(0);
            }}
          >
            ↓ {behind} new
          </button>
        ) : null}
      </div>
    </div>
  );
}
