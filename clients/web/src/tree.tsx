import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { isBookkeeping, type Row, type TreeModel } from "./treemodel.ts";
import { time } from "./format.ts";

const ROW = 24;
const OVERSCAN = 20;

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
 * the leaf.
 */
export function TreeView({
  model,
  version,
  selected,
  onSelect,
  loadMs,
}: {
  model: TreeModel;
  version: number;
  selected: string | null;
  onSelect: (id: string) => void;
  loadMs: number | null;
}) {
  const [bookkeeping, setBookkeeping] = useState(false);
  const rows = useMemo(() => model.rows(bookkeeping ? undefined : isBookkeeping), [model, version, bookkeeping]);
  const box = useRef<HTMLDivElement>(null);
  const [scroll, setScroll] = useState(0);
  const [height, setHeight] = useState(600);
  const scrolledFor = useRef<TreeModel | null>(null);
  const [onlyBranch, setOnlyBranch] = useState(false);
  const shown = useMemo(() => (onlyBranch ? rows.filter((r) => r.onBranch) : rows), [rows, onlyBranch]);

  useEffect(() => {
    const el = box.current;
    if (el === null) return;
    const observer = new ResizeObserver(() => setHeight(el.clientHeight));
    observer.observe(el);
    setHeight(el.clientHeight);
    return () => observer.disconnect();
  }, []);

  useEffect(() => {
    const el = box.current;
    if (el === null || scrolledFor.current === model) return;
    scrolledFor.current = model;
    const continues = model.continuesFrom();
    const at = shown.findIndex((r) => r.node.id === continues);
    if (at >= 0) {
      el.scrollTop = Math.max(0, at * ROW - el.clientHeight / 2);
      setScroll(el.scrollTop);
    }
    performance.mark("sessiond-tree-painted");
  }, [model, shown]);

  useEffect(() => {
    // a selection made elsewhere (a test, the URL) is scrolled into view
    const el = box.current;
    if (el === null || selected === null) return;
    const at = shown.findIndex((r) => r.node.id === selected);
    if (at >= 0 && (at * ROW < el.scrollTop || (at + 1) * ROW > el.scrollTop + el.clientHeight)) {
      el.scrollTop = Math.max(0, at * ROW - el.clientHeight / 2);
      setScroll(el.scrollTop);
    }
  }, [selected]);

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
          bookkeeping entries
        </label>
        <span class="dim" data-testid="tree-stats">
          {model.size} entries · continues from {continues ? continues.slice(0, 8) : "the start"}
          {loadMs !== null ? ` · loaded in ${Math.round(loadMs)} ms` : ""}
        </span>
      </div>
      <div
        class="tree"
        ref={box}
        role="tree"
        data-rows={shown.length}
        data-entries={model.size}
        data-load-ms={loadMs !== null ? Math.round(loadMs) : ""}
        data-leaf={model.leafId ?? ""}
        data-continues={continues ?? ""}
        onScroll={(e) => setScroll(e.currentTarget.scrollTop)}
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
            ].join(" ");
            return (
              <div
                key={node.id}
                class={classes}
                role="treeitem"
                data-id={node.id}
                data-type={node.type}
                style={{ top: `${(first + i) * ROW}px`, paddingLeft: `${8 + row.depth * 16}px` }}
                onClick={() => onSelect(node.id)}
                title={`${node.id} · ${time(node.timestamp)}`}
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
      </div>
    </div>
  );
}
