import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import type { LoadResult, UsageResult } from "../../typescript/src/generated/protocol.ts";
import type { Rpc } from "./rpc.ts";
import { RpcError } from "./rpc.ts";
import { TreeModel, nodeFromEntry } from "./treemodel.ts";
import { TreeView } from "./tree.tsx";
import { EntryPanel } from "./entry.tsx";
import { ContextView } from "./context.tsx";
import { UsageView, Gauge, type Usage } from "./usage.tsx";
import { FilesView } from "./files.tsx";
import { errorText, toast } from "./toast.tsx";
import { formatName, rootName } from "./list.tsx";

export type Tab = "tree" | "context" | "usage" | "files";
export const TABS: Tab[] = ["tree", "context", "usage", "files"];

/** Sessions larger than this paint their newest entries first, then load the whole tree. */
const TAIL_FIRST = 400;
const TAIL = 200;
/** How long an arrived entry stays highlighted. */
const FRESH_MS = 4000;

/** One session: its tree (live), the context, usage and file history. */
export function SessionView({
  rpc,
  session,
  onOpen,
  tab,
  onTab,
  entry,
  onEntry,
  preview,
}: {
  rpc: Rpc;
  session: LoadResult;
  /** The newest entries, from `session/tail`: drawn before the whole tree is loaded. */
  preview: Record<string, unknown>[] | null;
  onOpen: (sessionId: string) => void;
  tab: Tab;
  onTab: (tab: Tab) => void;
  /** The entry selected (and scrolled to): from the URL, a search hit, or a click. */
  entry: string | null;
  onEntry: (entryId: string | null) => void;
}) {
  const sessionId = session.sessionId;
  const readOnly = session.readOnly ?? false;
  const selected = entry;
  const setSelected = onEntry;
  const [partial, setPartial] = useState(false);
  const [fresh, setFresh] = useState<Set<string>>(new Set());
  const freshTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const [title, setTitle] = useState(session.name ?? null);
  useEffect(() => setTitle(session.name ?? null), [session.name]);
  const model = useRef<TreeModel | null>(null);
  const [version, setVersion] = useState(0);
  const [usage, setUsage] = useState<Usage | null>(null);
  const [threshold, setThreshold] = useState<number | null>(null);
  const [fileVersion, setFileVersion] = useState(0);
  const [loadMs, setLoadMs] = useState<number | null>(null);
  const busy = useRef<Promise<void>>(Promise.resolve());
  const bump = () => setVersion((v) => v + 1);

  const reload = useCallback(async () => {
    const started = performance.now();
    try {
      const tree = await rpc.request("tree/get", { sessionId });
      model.current = TreeModel.from(tree.nodes, tree.leafId);
      setLoadMs(performance.now() - started);
      setPartial(false);
      bump();
    } catch (err) {
      toast(errorText(err), "error");
    }
  }, [rpc, sessionId]);

  /**
   * First paint of a large session: its newest entries (one small `session/entries` page at the
   * end of the file), drawn at once; the whole tree follows after the frame is painted.
   */
  const firstLoad = useCallback(async () => {
    const started = performance.now();
    if (preview !== null) {
      const m = TreeModel.from([], session.leafId);
      for (const e of preview) m.add(nodeFromEntry(e));
      model.current = m;
      setPartial(true);
      setLoadMs(performance.now() - started);
      bump();
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      return reload();
    }
    const total = session.entryCount;
    if (total <= TAIL_FIRST) return reload();
    try {
      const page = await rpc.request("session/entries", { sessionId, offset: Math.max(0, total - TAIL), limit: TAIL });
      if (model.current === null) {
        const m = TreeModel.from([], session.leafId);
        for (const e of page.entries) m.add(nodeFromEntry(e as Record<string, unknown>));
        model.current = m;
        setPartial(true);
        setLoadMs(performance.now() - started);
        bump();
      }
    } catch {
      // the whole tree below says what went wrong
    }
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    await reload();
  }, [rpc, sessionId, reload]);

  const markFresh = (ids: string[]) => {
    if (ids.length === 0) return;
    setFresh((prev) => new Set([...prev, ...ids]));
    clearTimeout(freshTimer.current);
    freshTimer.current = setTimeout(() => setFresh(new Set()), FRESH_MS);
  };

  const reloadUsage = useCallback(async () => {
    try {
      const [u, settings] = await Promise.all([
        rpc.request("context/usage", { sessionId }),
        rpc.request("compaction/settings", { sessionId }).catch(() => null),
      ]);
      setUsage(u as UsageResult);
      const effective = (settings?.effective ?? {}) as Record<string, unknown>;
      const reserve = typeof effective["reserveTokens"] === "number" ? effective["reserveTokens"] : null;
      setThreshold(u.size && reserve !== null ? Math.max(0, (u.size - reserve) / u.size) : null);
    } catch (err) {
      toast(errorText(err), "error");
    }
  }, [rpc, sessionId]);

  /** New entries after the last one the page has (file order): costs what was appended. */
  const fetchNew = useCallback(async () => {
    const m = model.current;
    if (m === null) return;
    let afterId = m.order[m.order.length - 1];
    try {
      for (;;) {
        const page = await rpc.request("session/entries", {
          sessionId,
          limit: 5000,
          ...(afterId !== undefined ? { afterId } : { offset: 0 }),
        });
        const added: string[] = [];
        for (const entry of page.entries) {
          const e = entry as Record<string, unknown>;
          if (!m.byId.has(String(e["id"]))) added.push(String(e["id"]));
          m.add(nodeFromEntry(e));
          if (e["type"] === "label" && typeof e["targetId"] === "string") {
            m.setLabel(e["targetId"], typeof e["label"] === "string" && e["label"] ? e["label"] : null);
          }
        }
        markFresh(added);
        if (page.nextOffset === null || page.entries.length === 0) break;
        afterId = m.order[m.order.length - 1];
      }
    } catch (err) {
      if (err instanceof RpcError && err.code === -32011) return reload();
      toast(errorText(err), "error");
    }
    bump();
  }, [rpc, sessionId, reload]);

  useEffect(() => {
    // the tree first: the gauge's numbers (context/usage) are asked for once it is drawn, so the
    // daemon answers tree/get before computing them (session/subscribe's usage_update comes
    // meanwhile)
    void firstLoad().then(reloadUsage);
    const serial = (work: () => Promise<void>) => {
      busy.current = busy.current.then(work, work);
    };
    const off = rpc.onUpdate(({ sessionId: id, update }) => {
      if (id !== sessionId) return;
      switch (update.sessionUpdate) {
        case "entries_appended":
          serial(async () => {
            await fetchNew();
            model.current?.setLeaf(update.leafId);
            bump();
          });
          break;
        case "leaf_changed":
          serial(async () => {
            model.current?.setLeaf(update.leafId);
            bump();
          });
          break;
        case "label_update":
          serial(async () => {
            model.current?.setLabel(update.entryId, update.label);
            bump();
          });
          break;
        case "session_info_update":
          setTitle(update.title);
          break;
        case "usage_update":
          setUsage((prev) => ({ ...(prev ?? {}), ...update }));
          break;
        case "compaction_update":
          if (update.status === "completed") toast(`Compacted: ${update.tokensBefore} → ${update.tokensAfter} tokens`);
          else if (update.status === "failed") toast(`Compaction failed: ${update.error ?? "?"}`, "error");
          break;
        case "external_change":
          toast(`The session file was ${update.reason} by another program; reloaded.`);
          serial(reload);
          break;
        case "resync_required":
          serial(reload);
          void reloadUsage();
          break;
        case "file_history_update":
          setFileVersion((v) => v + 1);
          break;
        default:
          break;
      }
    });
    const offReconnect = rpc.onReconnect(() => {
      void reload();
      void reloadUsage();
    });
    return () => {
      off();
      offReconnect();
    };
  }, [rpc, sessionId, reload, firstLoad, reloadUsage, fetchNew]);

  const m = model.current;
  const positions = useMemo(() => new Map((m?.order ?? []).map((id, i) => [id, i])), [m, version, tab]);
  // The title and the count the session list shows (one definition, the daemon's: the name, else
  // the first real prompt, injected context skipped); the tree's first prompt only for a daemon
  // that does not send them.
  const listed = (session.firstMessage ?? "").split("\n").find((line) => line.trim()) ?? "";
  const firstPrompt =
    listed || (partial ? undefined : m?.order.map((id) => m.byId.get(id)!).find((n) => n.role === "user")?.preview);
  return (
    <div class="session" data-session={sessionId}>
      <div class="session-head">
        <div class="session-title">
          <h2 title={session.sessionId}>{title || firstPrompt || session.sessionId}</h2>
          <div class="meta">
            <span class={`badge root-${session.root ?? "sessiond"}`}>{rootName(session.root ?? "sessiond")}</span>
            <span class="badge">{formatName(session.format)}</span>
            {readOnly ? (
              <span class="badge ro" title="Another agent's session: sessiond reads it, never writes it">
                read-only
              </span>
            ) : null}
            <span class="cwd" title={session.path}>
              {session.cwd}
            </span>
            {typeof session.messageCount === "number" ? (
              <span data-testid="message-count">{session.messageCount} messages</span>
            ) : null}
            {m ? <span data-testid="entry-count">{m.size} entries</span> : null}
          </div>
        </div>
        <Gauge usage={usage} threshold={threshold} />
      </div>
      <nav class="tabs" role="tablist">
        {TABS.map((t) => (
          <button key={t} role="tab" aria-selected={tab === t} class={tab === t ? "active" : ""} data-tab={t} onClick={() => onTab(t)}>
            {t === "tree" ? "Tree" : t === "context" ? "Context" : t === "usage" ? "Usage" : "File history"}
          </button>
        ))}
      </nav>
      <div class="tab-body">
        {tab === "tree" ? (
          m === null ? (
            <div class="empty">Loading the tree…</div>
          ) : (
            <div class="tree-split">
              <TreeView
                model={m}
                version={version}
                selected={selected}
                onSelect={setSelected}
                onClose={() => setSelected(null)}
                loadMs={loadMs}
                fresh={fresh}
                partial={partial}
              />
              {selected !== null && m.byId.has(selected) ? (
                <EntryPanel
                  rpc={rpc}
                  sessionId={sessionId}
                  model={m}
                  entryId={selected}
                  readOnly={readOnly}
                  onOpen={onOpen}
                  onClose={() => setSelected(null)}
                />
              ) : null}
            </div>
          )
        ) : tab === "context" ? (
          <ContextView
            rpc={rpc}
            sessionId={sessionId}
            version={version}
            focus={selected}
            positionOf={(id) => positions.get(id) ?? -1}
          />
        ) : tab === "usage" ? (
          <UsageView rpc={rpc} sessionId={sessionId} version={version} usage={usage} />
        ) : (
          <FilesView rpc={rpc} sessionId={sessionId} cwd={session.cwd} readOnly={readOnly} version={fileVersion} />
        )}
      </div>
    </div>
  );
}
