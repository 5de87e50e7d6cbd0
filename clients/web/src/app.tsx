import { useEffect, useState } from "preact/hooks";
import type { LoadResult } from "../../typescript/src/generated/protocol.ts";
import { RpcError, type Rpc, type Status } from "./rpc.ts";
import { SessionList } from "./list.tsx";
import { SessionView } from "./session.tsx";
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

export function App({ rpc, initialSession }: { rpc: Rpc; initialSession: string | null }) {
  const [selected, setSelected] = useState<string | null>(initialSession);
  const [loaded, setLoaded] = useState<LoadResult | null>(null);

  useEffect(() => {
    const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
    if (selected) hash.set("session", selected);
    else hash.delete("session");
    const text = hash.toString();
    history.replaceState(null, "", location.pathname + (text ? `#${text}` : ""));
  }, [selected]);

  useEffect(() => {
    if (selected === null) {
      setLoaded(null);
      return;
    }
    let live = true;
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

  return (
    <div class="app">
      <header>
        <span class="brand">sessiond</span>
        <StatusDot rpc={rpc} />
      </header>
      <div class="body">
        <SessionList rpc={rpc} selected={selected} onSelect={setSelected} />
        <main>
          {selected === null ? (
            <div class="empty">Choose a session on the left.</div>
          ) : loaded === null || loaded.sessionId !== selected ? (
            <div class="empty">Loading {selected}…</div>
          ) : (
            <SessionView key={selected} rpc={rpc} session={loaded} onOpen={setSelected} />
          )}
        </main>
      </div>
      <Toasts />
    </div>
  );
}
