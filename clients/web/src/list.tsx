import { useEffect, useMemo, useState } from "preact/hooks";
import type { ListResult, SessionSummary } from "../../typescript/src/generated/protocol.ts";
import type { Rpc } from "./rpc.ts";
import { errorText, toast } from "./toast.tsx";
import { ago, basename } from "./format.ts";

const PAGE = 1000;
const MAX_PAGES = 20;

/** Every session of every root, newest first, kept current by `session_list_update`. */
export function SessionList({
  rpc,
  selected,
  onSelect,
}: {
  rpc: Rpc;
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const [sessions, setSessions] = useState<Map<string, SessionSummary>>(new Map());
  const [loading, setLoading] = useState(true);
  const [query, setQuery] = useState("");
  const [root, setRoot] = useState("");
  const [format, setFormat] = useState("");
  const [cwd, setCwd] = useState("");

  useEffect(() => {
    let live = true;
    const load = async () => {
      setLoading(true);
      const all = new Map<string, SessionSummary>();
      let cursor: string | null = null;
      try {
        for (let page = 0; page < MAX_PAGES; page++) {
          const result: ListResult = await rpc.request("session/list", {
            subscribe: page === 0,
            limit: PAGE,
            ...(cursor ? { cursor } : {}),
          });
          for (const s of result.sessions) all.set(s.path, s);
          cursor = result.nextCursor ?? null;
          if (cursor === null) break;
        }
      } catch (err) {
        toast(errorText(err), "error");
      }
      if (live) {
        setSessions(all);
        setLoading(false);
      }
    };
    void load();
    const offUpdate = rpc.onUpdate(({ update }) => {
      if (update.sessionUpdate !== "session_list_update") return;
      setSessions((prev) => {
        const next = new Map(prev);
        if (update.change === "removed" || update.session === null || update.session === undefined) {
          next.delete(update.path);
        } else {
          next.set(update.path, update.session as unknown as SessionSummary);
        }
        return next;
      });
    });
    const offReconnect = rpc.onReconnect(() => void load());
    return () => {
      live = false;
      offUpdate();
      offReconnect();
    };
  }, [rpc]);

  const all = useMemo(
    () =>
      [...sessions.values()].sort((a, b) =>
        String(b.updatedAt ?? b.createdAt ?? "").localeCompare(String(a.updatedAt ?? a.createdAt ?? "")),
      ),
    [sessions],
  );
  const cwds = useMemo(() => [...new Set(all.map((s) => s.cwd))].sort(), [all]);
  const shown = useMemo(() => {
    const q = query.trim().toLowerCase();
    return all.filter(
      (s) =>
        (!root || (s.root ?? "sessiond") === root) &&
        (!format || (s.format ?? "pi") === format) &&
        (!cwd || s.cwd === cwd) &&
        (!q ||
          (s.title ?? "").toLowerCase().includes(q) ||
          s.firstMessage.toLowerCase().includes(q) ||
          s.sessionId.toLowerCase().includes(q)),
    );
  }, [all, query, root, format, cwd]);

  return (
    <aside class="sessions">
      <div class="filters">
        <input
          type="search"
          placeholder="Search titles…"
          aria-label="search sessions"
          value={query}
          onInput={(e) => setQuery(e.currentTarget.value)}
        />
        <div class="row">
          <select aria-label="root" value={root} onChange={(e) => setRoot(e.currentTarget.value)}>
            <option value="">all roots</option>
            <option value="sessiond">sessiond</option>
            <option value="pi">Pi</option>
            <option value="claude">Claude Code</option>
            <option value="codex">Codex</option>
            <option value="opencode">OpenCode</option>
          </select>
          <select aria-label="format" value={format} onChange={(e) => setFormat(e.currentTarget.value)}>
            <option value="">all formats</option>
            <option value="pi">Pi</option>
            <option value="claude-code">Claude Code</option>
            <option value="codex">Codex</option>
            <option value="opencode">OpenCode</option>
          </select>
        </div>
        <select aria-label="cwd" value={cwd} onChange={(e) => setCwd(e.currentTarget.value)}>
          <option value="">all directories</option>
          {cwds.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      </div>
      <div class="count">
        {loading ? "loading…" : `${shown.length} of ${all.length} session${all.length === 1 ? "" : "s"}`}
      </div>
      <ul class="session-list" aria-label="sessions">
        {shown.map((s) => (
          <li
            key={s.path}
            class={s.sessionId === selected ? "selected" : ""}
            data-session={s.sessionId}
            data-root={s.root ?? "sessiond"}
            tabIndex={0}
            aria-current={s.sessionId === selected ? "true" : undefined}
            onClick={() => onSelect(s.sessionId)}
            onKeyDown={(e) => {
              // Enter opens; the arrows move between sessions
              const li = e.currentTarget;
              if (e.key === "Enter" || e.key === " ") {
                e.preventDefault();
                onSelect(s.sessionId);
              } else if (e.key === "ArrowDown" || e.key === "j") {
                e.preventDefault();
                (li.nextElementSibling as HTMLElement | null)?.focus();
              } else if (e.key === "ArrowUp" || e.key === "k") {
                e.preventDefault();
                (li.previousElementSibling as HTMLElement | null)?.focus();
              }
            }}
          >
            <div class="title">{s.title || s.firstMessage || "(no messages yet)"}</div>
            <div class="meta">
              <span class={`badge root-${s.root ?? "sessiond"}`}>{rootName(s.root ?? "sessiond")}</span>
              {s.readOnly ? <span class="badge ro">read-only</span> : null}
              <span title={s.cwd}>{basename(s.cwd)}</span>
              <span>{s.messageCount} msg</span>
              <span title={s.updatedAt ?? ""}>{ago(s.updatedAt ?? s.createdAt)}</span>
            </div>
          </li>
        ))}
      </ul>
    </aside>
  );
}

const ROOT_NAMES: Record<string, string> = { claude: "Claude Code", pi: "Pi", codex: "Codex", opencode: "OpenCode" };
const FORMAT_NAMES: Record<string, string> = { "claude-code": "Claude Code", codex: "Codex", opencode: "OpenCode" };

export function rootName(root: string): string {
  return ROOT_NAMES[root] ?? "sessiond";
}

export function formatName(format: string | undefined): string {
  return `${FORMAT_NAMES[format ?? "pi"] ?? "Pi"} format`;
}
