import { useEffect, useRef, useState } from "preact/hooks";
import { RpcError, type Rpc } from "./rpc.ts";
import { rootName } from "./list.tsx";
import { basename, time } from "./format.ts";
import { sessionLink } from "./route.ts";
import { snippetPieces } from "./snippet.ts";

/** One hit of `search/query` (the contract shared with the search engine, issue 26). */
export interface Hit {
  sessionId: string;
  entryId: string;
  agent: string;
  root?: string | null;
  cwd: string | null;
  timestamp: string | null;
  role: string | null;
  kind: string | null;
  title: string | null;
  snippet: string;
  onBranch: boolean;
  resume: string | null;
}

interface SearchResult {
  hits: Hit[];
  total: number;
  nextCursor: string | null;
  indexing: { done: number; total: number } | null;
}

/** A daemon without a method answers -32601: the page says so instead of failing. */
export function Unavailable({ method, what }: { method: string; what: string }) {
  return (
    <div class="unavailable" data-method={method}>
      <strong>{what} is not available from this daemon.</strong> It does not have <code>{method}</code> (JSON-RPC
      -32601: method not found) — it is older than this page. Update sessiond and restart the daemon (
      <code>sessiond stop</code>, then <code>sessiond ui</code>).
    </div>
  );
}

const AGENTS = ["", "claude", "codex", "pi", "sessiond", "opencode"];

/** Search across every session (`view=search&q=`): hits with their matches highlighted. */
export function SearchPage({ rpc, q, onQuery }: { rpc: Rpc; q: string; onQuery: (q: string) => void }) {
  const [text, setText] = useState(q);
  const [mode, setMode] = useState<"words" | "substring">("words");
  const [agent, setAgent] = useState("");
  const [result, setResult] = useState<SearchResult | null>(null);
  const [error, setError] = useState<RpcError | string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => input.current?.focus(), []);

  const run = async (cursor: string | null) => {
    const query = q.trim();
    if (!query) {
      setResult(null);
      setError(null);
      return;
    }
    setBusy(true);
    try {
      const params: Record<string, unknown> = { query, mode, limit: 50 };
      if (agent) params["root"] = agent;
      if (cursor) params["cursor"] = cursor;
      const r = (await rpc.requestAny("search/query", params)) as SearchResult;
      setError(null);
      setResult((prev) => (cursor && prev ? { ...r, hits: [...prev.hits, ...r.hits] } : r));
    } catch (err) {
      setError(err instanceof RpcError ? err : String(err));
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    setText(q);
    void run(null);
  }, [q, mode, agent]);

  useEffect(() => {
    // typing searches after a pause; Enter searches at once
    if (text === q) return;
    const timer = setTimeout(() => onQuery(text), 300);
    return () => clearTimeout(timer);
  }, [text]);

  return (
    <div class="search-page">
      <form
        class="search-form"
        onSubmit={(e) => {
          e.preventDefault();
          onQuery(text);
        }}
      >
        <input
          ref={input}
          type="search"
          class="search-box"
          aria-label="search every session"
          placeholder="Search every session…"
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
        />
        <select aria-label="match" value={mode} onChange={(e) => setMode(e.currentTarget.value as "words" | "substring")}>
          <option value="words">words</option>
          <option value="substring">exact text</option>
        </select>
        <select aria-label="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          {AGENTS.map((a) => (
            <option key={a} value={a}>
              {a ? rootName(a) : "all agents"}
            </option>
          ))}
        </select>
      </form>
      {error instanceof RpcError && error.code === -32601 ? (
        <Unavailable method="search/query" what="Search" />
      ) : error !== null ? (
        <div class="error-text search-error">{error instanceof RpcError ? error.describe() : error}</div>
      ) : null}
      {result?.indexing ? (
        <div class="dim indexing">
          indexing… {result.indexing.done} of {result.indexing.total} sessions (results so far)
        </div>
      ) : null}
      {result !== null && error === null ? (
        <div class="dim search-count" data-testid="search-count">
          {result.total === 0 ? "no match" : `${result.total}${result.nextCursor ? "+" : ""} match${result.total === 1 ? "" : "es"}`}
          {busy ? " · searching…" : ""}
        </div>
      ) : busy ? (
        <div class="dim">searching…</div>
      ) : !q ? (
        <div class="dim search-help">
          Words match whole words in any order; <em>exact text</em> matches the characters as typed. Press <kbd>/</kbd>{" "}
          anywhere to come back here.
        </div>
      ) : null}
      <ol class="hits">
        {(result?.hits ?? []).map((hit) => (
          <li key={`${hit.sessionId}/${hit.entryId}`} class="hit" data-session={hit.sessionId} data-entry={hit.entryId}>
            <a class="hit-link" href={sessionLink(hit.sessionId, hit.entryId)}>
              <div class="hit-title">{hit.title || hit.sessionId}</div>
              <div class="snippet">
                {snippetPieces(hit.snippet).map((p, i) => (p.match ? <mark key={i}>{p.text}</mark> : p.text))}
              </div>
            </a>
            <div class="meta">
              <span class={`badge root-${hit.root ?? hit.agent}`}>{rootName(hit.root ?? hit.agent)}</span>
              {hit.role ? <span>{hit.role}</span> : null}
              {hit.cwd ? <span title={hit.cwd}>{basename(hit.cwd)}</span> : null}
              <span>{time(hit.timestamp)}</span>
              {hit.onBranch ? null : <span class="dim">off the current branch</span>}
              {hit.resume ? (
                <code class="resume" title="resume this session in its own agent">
                  {hit.resume}
                </code>
              ) : null}
            </div>
          </li>
        ))}
      </ol>
      {result?.nextCursor ? (
        <button class="more" disabled={busy} onClick={() => void run(result.nextCursor)}>
          More results
        </button>
      ) : null}
    </div>
  );
}
