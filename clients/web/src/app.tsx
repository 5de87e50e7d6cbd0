import { useEffect, useState } from "preact/hooks";
import type { LoadResult, TailResult } from "../../typescript/src/generated/protocol.ts";
import { RpcError, type Rpc, type Status } from "./rpc.ts";
import { SessionList } from "./list.tsx";
import { SessionView } from "./session.tsx";
import { SearchPage } from "./search.tsx";
import { Dashboard } from "./dashboard.tsx";
import { formatRoute, parseRoute, type Route, type View } from "./route.ts";
import { applyTheme, currentTheme, nextTheme, type Theme } from "./theme.ts";
import { Toasts, toast } from "./toast.tsx";

export function NoToken() {
  const [value, setValue] = useState("");
  return (
    <div class="notoken">
      <h1>sessiond</h1>
      <p>
        This page needs the daemon's access token. Open it with <code>sessiond ui</code>, which starts the daemon if
        needed and opens this page with the token, or paste the content of <code>&lt;store&gt;/tcp.token</code>:
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (value.trim()) {
            location.hash = `token=${encodeURIComponent(value.trim())}`;
            location.reload();
          }
        }}
      >
        <input type="password" value={value} onInput={(e) => setValue(e.currentTarget.value)} placeholder="token" />
        <button type="submit">Connect</button>
      </form>
    </div>
  );
}

function StatusDot({ rpc }: { rpc: Rpc }) {
  const [status, setStatus] = useState<Status>(rpc.status);
  const [detail, setDetail] = useState(rpc.detail);
  useEffect(
    () =>
      rpc.onStatus((s, d) => {
        setStatus(s);
        setDetail(d);
      }),
    [rpc],
  );
  const text =
    status === "open"
      ? "connected"
      : status === "unauthorized"
        ? `refused: ${detail} (open the page again with sessiond ui)`
        : status === "closed"
          ? "disconnected, reconnecting…"
          : "connecting…";
  return (
    <span class={`status status-${status}`} data-status={status} title={text}>
      <span class="dot" /> {text}
    </span>
  );
}

/** How many of the newest entries the page asks for before the session is open. */
const TAIL = 200;

/** What the page shows of a session before `session/subscribe` answers: what the tail told. */
function provisional(tail: TailResult): LoadResult {
  const last = tail.entries.at(-1) as { id?: string } | undefined;
  return {
    sessionId: tail.sessionId,
    path: tail.path,
    cwd: tail.cwd,
    name: null,
    leafId: last?.id ?? null,
    entryCount: tail.entries.length,
    header: {},
    saved: true,
    diagnostics: {},
    format: tail.format,
    root: tail.root,
    readOnly: tail.readOnly,
  };
}

export function App({ rpc }: { rpc: Rpc }) {
  const [route, setRoute] = useState<Route>(() => parseRoute(location.hash));
  const [loaded, setLoaded] = useState<LoadResult | null>(null);
  const [preview, setPreview] = useState<TailResult | null>(null);
  const [theme, setTheme] = useState<Theme>(currentTheme);
  const selected = route.session;

  useEffect(() => {
    // links inside the page (permalinks, search hits) and Back / Forward change the fragment
    const follow = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", follow);
    addEventListener("popstate", follow);
    return () => {
      removeEventListener("hashchange", follow);
      removeEventListener("popstate", follow);
    };
  }, []);

  /** A new place: a new history step when the view or session changes, else the same one. */
  const go = (change: Partial<Route>) => {
    setRoute((prev) => {
      const next = { ...prev, ...change };
      const url = location.pathname + location.search + formatRoute(next);
      if (next.view !== prev.view || next.session !== prev.session) history.pushState(null, "", url);
      else history.replaceState(null, "", url);
      return next;
    });
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      if (target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT")) return;
      if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        if (route.view === "search") document.querySelector<HTMLInputElement>(".search-box")?.focus();
        else go({ view: "search" });
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [route.view]);

  useEffect(() => {
    if (selected === null) {
      setLoaded(null);
      return;
    }
    let live = true;
    setPreview(null);
    // the newest entries first (the daemon reads them from the file's end without opening the
    // session), so the page paints while session/subscribe loads the whole session
    rpc.request("session/tail", { sessionId: selected, limit: TAIL }).then(
      (result) => live && setPreview(result),
      () => undefined, // an older daemon: the page waits for the session to open
    );
    const subscribe = () =>
      rpc.request("session/subscribe", { sessionId: selected }).then(
        (result) => live && setLoaded(result),
        (err: unknown) => {
          if (live) toast(err instanceof RpcError ? err.describe() : String(err), "error");
        },
      );
    setLoaded(null);
    void subscribe();
    const off = rpc.onReconnect(() => void subscribe());
    return () => {
      live = false;
      off();
      rpc.request("session/unsubscribe", { sessionId: selected }).catch(() => undefined);
    };
  }, [rpc, selected]);

  const views: [View, string][] = [
    ["sessions", "Sessions"],
    ["search", "Search"],
    ["usage", "Usage"],
  ];
  return (
    <div class={`app view-${route.view}${selected ? " has-session" : ""}`}>
      <header>
        <span class="brand">sessiond</span>
        <nav class="views" aria-label="views">
          {views.map(([v, name]) => (
            <a
              key={v}
              href={formatRoute({ ...route, view: v, entry: v === "sessions" ? route.entry : null })}
              class={route.view === v ? "active" : ""}
              aria-current={route.view === v ? "page" : undefined}
              data-view={v}
            >
              {name}
            </a>
          ))}
        </nav>
        <StatusDot rpc={rpc} />
        <button
          class="theme-toggle"
          data-theme-choice={theme}
          title={`colours: ${theme === "auto" ? "as the system" : theme} (click to change)`}
          aria-label="toggle dark mode"
          onClick={() => {
            const next = nextTheme(theme);
            applyTheme(next);
            setTheme(next);
          }}
        >
          {theme === "dark" ? "☾" : theme === "light" ? "☀" : "◐"}
        </button>
      </header>
      {route.view === "search" ? (
        <main class="page">
          <SearchPage rpc={rpc} q={route.q} onQuery={(q) => go({ q })} />
        </main>
      ) : route.view === "usage" ? (
        <main class="page">
          <Dashboard rpc={rpc} session={selected} />
        </main>
      ) : (
        <div class="body">
          <SessionList rpc={rpc} selected={selected} onSelect={(id) => go({ session: id, entry: null, tab: "tree" })} />
          <main>
            {selected === null ? (
              <div class="empty">Choose a session on the left.</div>
            ) : (loaded ?? preview)?.sessionId !== selected ? (
              <div class="empty">Loading {selected}…</div>
            ) : (
              <>
                <button class="link back" onClick={() => go({ session: null, entry: null })}>
                  ← sessions
                </button>
                <SessionView
                  key={selected}
                  rpc={rpc}
                  session={loaded ?? provisional(preview!)}
                  preview={preview?.sessionId === selected ? preview.entries : null}
                  onOpen={(id) => go({ session: id, entry: null, tab: "tree" })}
                  tab={route.tab}
                  onTab={(tab) => go({ tab })}
                  entry={route.entry}
                  onEntry={(entry) => go({ entry })}
                />
              </>
            )}
          </main>
        </div>
      )}
      <Toasts />
    </div>
  );
}
