import { useEffect, useMemo, useState } from "preact/hooks";
import { RpcError, type Rpc } from "./rpc.ts";
import { Unavailable } from "./search.tsx";
import { rootName } from "./list.tsx";
import { tokens } from "./format.ts";

/** The token and cost fields of a `stats/query` row or total (contract of issue 27). */
export interface Totals {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
  totalTokens: number;
  cost: number | null;
}

export interface StatsRow extends Totals {
  period: string;
  agent: string | null;
  model: string | null;
  title?: string | null;
  cwd?: string | null;
}

interface StatsResult {
  rows: StatsRow[];
  totals: Totals;
  pricesAsOf: string | null;
  indexing?: { done: number; total: number } | null;
}

interface StatsUpdate {
  today?: Totals;
  sessionId?: string | null;
  session?: Totals | null;
}

export function money(cost: number | null | undefined, tokens?: number): string {
  if (tokens === 0) return "$0.00";
  if (cost === null || cost === undefined) return "unpriced";
  if (cost > 0 && cost < 0.01) return "< $0.01";
  return `$${cost.toFixed(2)}`;
}

const PALETTE = ["#2563eb", "#d97706", "#16a34a", "#7c3aed", "#dc2626", "#0891b2", "#db2777", "#65a30d", "#9ca3af"];
const W = 900;
const H = 260;
const PAD = { l: 56, r: 12, t: 12, b: 40 };

type Stack = "model" | "agent";
type Metric = "cost" | "tokens";

/** The days from the first to the last (a day without usage is a gap in the chart, not skipped). */
function everyDay(days: string[]): string[] {
  const first = days[0];
  const last = days.at(-1);
  if (first === undefined || last === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(first)) return days;
  const out: string[] = [];
  const end = Date.parse(`${last}T12:00:00Z`);
  for (let t = Date.parse(`${first}T12:00:00Z`); t <= end && out.length <= 400; t += 86_400_000) {
    out.push(new Date(t).toISOString().slice(0, 10));
  }
  return out.length > 400 ? days : out;
}

function daysAgo(n: number): string {
  const d = new Date(Date.now() - n * 86_400_000);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

/**
 * Usage across sessions (`view=usage`): stacked bars per day by model or agent, a table of
 * the days, filters by project and agent, and the cost of the session open in the viewer
 * (live through `stats_update`).
 */
export function Dashboard({ rpc, session }: { rpc: Rpc; session: string | null }) {
  const [days, setDays] = useState(30);
  const [agent, setAgent] = useState("");
  const [cwd, setCwd] = useState("");
  const [stack, setStack] = useState<Stack>("model");
  const [metric, setMetric] = useState<Metric>("cost");
  const [daily, setDaily] = useState<StatsResult | null>(null);
  const [projects, setProjects] = useState<string[]>([]);
  const [own, setOwn] = useState<Totals | null>(null);
  const [today, setToday] = useState<Totals | null>(null);
  const [error, setError] = useState<RpcError | string | null>(null);
  const [version, setVersion] = useState(0);
  const timezone = Intl.DateTimeFormat().resolvedOptions().timeZone;

  useEffect(() => {
    let live = true;
    const filters: Record<string, unknown> = { timezone };
    if (days > 0) filters["since"] = daysAgo(days - 1);
    if (agent) filters["agent"] = agent;
    if (cwd) filters["cwd"] = cwd;
    Promise.all([
      rpc.requestAny("stats/query", { groupBy: "daily", breakdown: stack === "model", ...filters }) as Promise<StatsResult>,
      rpc.requestAny("stats/query", { groupBy: "session", timezone, ...(days > 0 ? { since: daysAgo(days - 1) } : {}) }) as Promise<StatsResult>,
    ]).then(
      ([d, bySession]) => {
        if (!live) return;
        setDaily(d);
        setProjects([...new Set(bySession.rows.map((r) => r.cwd).filter((c): c is string => !!c))].sort());
        setError(null);
      },
      (err: unknown) => live && setError(err instanceof RpcError ? err : String(err)),
    );
    return () => {
      live = false;
    };
  }, [rpc, days, agent, cwd, stack, version]);

  useEffect(() => {
    if (session === null) {
      setOwn(null);
      return;
    }
    let live = true;
    (rpc.requestAny("stats/query", { groupBy: "session", sessionId: session, timezone }) as Promise<StatsResult>).then(
      (r) => live && setOwn(r.totals),
      () => undefined, // the page-level error above says why
    );
    return () => {
      live = false;
    };
  }, [rpc, session, version]);

  useEffect(() => {
    // live: today's totals and the open session's, as usage arrives (stats/subscribe answers
    // with the numbers now, then stats_update follows, throttled by the daemon)
    let timer: ReturnType<typeof setTimeout> | undefined;
    const take = (p: StatsUpdate, chart: boolean) => {
      if (p.today) setToday(p.today);
      if (p.session && session !== null && (p.sessionId ?? session) === session) setOwn(p.session);
      if (!chart) return;
      clearTimeout(timer);
      timer = setTimeout(() => setVersion((v) => v + 1), 2000); // the chart, once per burst
    };
    const params: Record<string, unknown> = { timezone };
    if (session) params["sessionId"] = session;
    rpc.requestAny("stats/subscribe", params).then(
      (r) => take(r as StatsUpdate, false),
      () => undefined, // no live numbers from a daemon without it: the page still shows the query
    );
    const offUpdate = rpc.onUpdate(({ sessionId, update }) => {
      const u = update as unknown as StatsUpdate & { sessionUpdate: string };
      if (u.sessionUpdate === "stats_update") take({ ...u, sessionId: u.sessionId ?? sessionId }, true);
    });
    const offNotification = rpc.onNotification("stats_update", (p) => take(p as StatsUpdate, true));
    return () => {
      offUpdate();
      offNotification();
      clearTimeout(timer);
      rpc.requestAny("stats/unsubscribe", {}).catch(() => undefined);
    };
  }, [rpc, session]);

  const { periods, series, byPeriod, max } = useMemo(() => {
    const rows = daily?.rows ?? [];
    const key = (r: StatsRow) => (stack === "model" ? (r.model ?? "unknown model") : rootName(r.agent ?? "sessiond"));
    const value = (r: StatsRow) => (metric === "cost" ? (r.cost ?? 0) : r.totalTokens);
    const periods = everyDay([...new Set(rows.map((r) => r.period))].sort());
    const totalsBySeries = new Map<string, number>();
    for (const r of rows) totalsBySeries.set(key(r), (totalsBySeries.get(key(r)) ?? 0) + value(r));
    const series = [...totalsBySeries.entries()].sort((a, b) => b[1] - a[1]).map(([k]) => k);
    const byPeriod = new Map<string, Map<string, number>>();
    for (const r of rows) {
      const m = byPeriod.get(r.period) ?? new Map<string, number>();
      m.set(key(r), (m.get(key(r)) ?? 0) + value(r));
      byPeriod.set(r.period, m);
    }
    let max = 0;
    for (const m of byPeriod.values()) max = Math.max(max, [...m.values()].reduce((a, b) => a + b, 0));
    return { periods, series, byPeriod, max };
  }, [daily, stack, metric]);

  if (error instanceof RpcError && error.code === -32601) {
    return (
      <div class="dashboard">
        <h2>Usage</h2>
        <Unavailable method="stats/query" what="The usage dashboard" />
      </div>
    );
  }
  const color = (s: string) => PALETTE[Math.min(series.indexOf(s), PALETTE.length - 1)] ?? PALETTE[0];
  const fmt = (v: number) => (metric === "cost" ? money(v) : tokens(v));
  const bw = periods.length ? (W - PAD.l - PAD.r) / periods.length : 0;
  const y = (v: number) => (max > 0 ? ((H - PAD.t - PAD.b) * v) / max : 0);
  return (
    <div class="dashboard">
      <div class="dash-filters">
        <select aria-label="period" value={days} onChange={(e) => setDays(Number(e.currentTarget.value))}>
          <option value={7}>last 7 days</option>
          <option value={30}>last 30 days</option>
          <option value={90}>last 90 days</option>
          <option value={0}>all time</option>
        </select>
        <select aria-label="project" value={cwd} onChange={(e) => setCwd(e.currentTarget.value)}>
          <option value="">all projects</option>
          {projects.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
        <select aria-label="agent" value={agent} onChange={(e) => setAgent(e.currentTarget.value)}>
          <option value="">all agents</option>
          <option value="claude">Claude Code</option>
          <option value="codex">Codex</option>
          <option value="pi">Pi</option>
          <option value="sessiond">sessiond</option>
          <option value="opencode">OpenCode</option>
        </select>
        <select aria-label="stack by" value={stack} onChange={(e) => setStack(e.currentTarget.value as Stack)}>
          <option value="model">by model</option>
          <option value="agent">by agent</option>
        </select>
        <select aria-label="measure" value={metric} onChange={(e) => setMetric(e.currentTarget.value as Metric)}>
          <option value="cost">cost</option>
          <option value="tokens">tokens</option>
        </select>
      </div>
      {error !== null ? <div class="error-text">{error instanceof RpcError ? error.describe() : error}</div> : null}
      {daily?.indexing ? (
        <div class="dim indexing">
          reading usage… {daily.indexing.done} of {daily.indexing.total} files (the numbers grow until it is done)
        </div>
      ) : null}
      <div class="dash-cards">
        <div class="card" data-testid="total">
          <div class="dim">{days > 0 ? `${days} days` : "all time"}</div>
          <div class="big">{daily ? money(daily.totals.cost, daily.totals.totalTokens) : error !== null ? "—" : "…"}</div>
          <div class="dim">{daily ? `${tokens(daily.totals.totalTokens)} tokens` : ""}</div>
        </div>
        {today ? (
          <div class="card" data-testid="today">
            <div class="dim">today</div>
            <div class="big">{money(today.cost, today.totalTokens)}</div>
            <div class="dim">{tokens(today.totalTokens)} tokens</div>
          </div>
        ) : null}
        {session ? (
          <div class="card" data-testid="session-cost">
            <div class="dim">open session</div>
            <div class="big">{own ? money(own.cost, own.totalTokens) : error !== null ? "—" : "…"}</div>
            <div class="dim">
              {own ? `${tokens(own.totalTokens)} tokens` : ""} · <a href={`#session=${encodeURIComponent(session)}`}>{session.slice(0, 8)}</a>
            </div>
          </div>
        ) : null}
      </div>
      {daily && periods.length === 0 ? <div class="empty">No usage in this period.</div> : null}
      {periods.length ? (
        <>
          <svg class="chart bars" viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${metric} per day, stacked by ${stack}`}>
            {[0, 0.5, 1].map((f) => (
              <g key={f}>
                <line x1={PAD.l} x2={W - PAD.r} y1={H - PAD.b - y(max * f)} y2={H - PAD.b - y(max * f)} class="grid" />
                <text x={PAD.l - 6} y={H - PAD.b - y(max * f) + 4} class="axis" text-anchor="end">
                  {fmt(max * f)}
                </text>
              </g>
            ))}
            {periods.map((p, i) => {
              let base = H - PAD.b;
              const values = byPeriod.get(p) ?? new Map<string, number>();
              return (
                <g key={p} class="bar" data-period={p}>
                  {series.map((s) => {
                    const v = values.get(s) ?? 0;
                    if (v <= 0) return null;
                    const h = y(v);
                    base -= h;
                    return (
                      <rect key={s} x={PAD.l + i * bw + 1} y={base} width={Math.max(1, bw - 2)} height={h} fill={color(s)}>
                        <title>
                          {p} · {s}: {fmt(v)}
                        </title>
                      </rect>
                    );
                  })}
                  {periods.length <= 16 || i % Math.ceil(periods.length / 12) === 0 ? (
                    <text x={PAD.l + i * bw + bw / 2} y={H - PAD.b + 14} class="axis" text-anchor="middle">
                      {p.slice(5)}
                    </text>
                  ) : null}
                </g>
              );
            })}
          </svg>
          <div class="legend">
            {series.map((s) => (
              <span key={s}>
                <span class="swatch" style={{ background: color(s) }} /> {s}
              </span>
            ))}
          </div>
          <div class="table-wrap">
            <table class="files-table usage-table">
              <thead>
                <tr>
                  <th>day</th>
                  <th>input</th>
                  <th>output</th>
                  <th>cache read</th>
                  <th>cache write</th>
                  <th>total</th>
                  <th>cost</th>
                </tr>
              </thead>
              <tbody>
                {[...periods].reverse().map((p) => {
                  const rows = (daily?.rows ?? []).filter((r) => r.period === p);
                  if (rows.length === 0) return null;
                  const sum = (f: (r: StatsRow) => number) => rows.reduce((a, r) => a + f(r), 0);
                  const priced = rows.some((r) => r.cost !== null);
                  return (
                    <tr key={p} data-period={p}>
                      <td>{p}</td>
                      <td>{tokens(sum((r) => r.inputTokens))}</td>
                      <td>{tokens(sum((r) => r.outputTokens))}</td>
                      <td>{tokens(sum((r) => r.cacheReadTokens))}</td>
                      <td>{tokens(sum((r) => r.cacheCreationTokens))}</td>
                      <td>{tokens(sum((r) => r.totalTokens))}</td>
                      <td>{priced ? money(sum((r) => r.cost ?? 0)) : "unpriced"}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          {daily?.pricesAsOf ? <div class="dim">prices as of {daily.pricesAsOf}</div> : null}
        </>
      ) : null}
    </div>
  );
}
