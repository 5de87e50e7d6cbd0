import { useEffect, useState } from "preact/hooks";
import type { Rpc } from "./rpc.ts";
import { errorText, toast } from "./toast.tsx";
import { tokens } from "./format.ts";
import { usageSeries } from "./series.ts";

type Entry = Record<string, unknown>;

export interface Usage {
  used?: number | null;
  size?: number | null;
  percent?: number | null;
  source?: string;
}

/** The colour of a usage: warning near the compaction threshold, danger past it. */
export function usageLevel(percent: number | null | undefined, threshold: number | null): "ok" | "warn" | "danger" {
  if (percent === null || percent === undefined) return "ok";
  const limit = threshold !== null ? threshold * 100 : 90;
  if (percent >= limit) return "danger";
  if (percent >= limit - 10) return "warn";
  return "ok";
}

/** The live gauge: `context/usage` first, then every `usage_update`. */
export function Gauge({ usage, threshold }: { usage: Usage | null; threshold: number | null }) {
  const percent = usage?.percent ?? null;
  const level = usageLevel(percent, threshold);
  const text =
    usage === null
      ? "usage …"
      : `${tokens(usage.used)} / ${usage.size ? tokens(usage.size) : "?"}${percent !== null ? ` (${percent.toFixed(1)}%)` : ""}`;
  return (
    <div
      class={`gauge gauge-${level}`}
      data-testid="gauge"
      data-used={usage?.used ?? ""}
      data-percent={percent ?? ""}
      data-level={level}
      title={`context usage (${usage?.source ?? "?"}); compaction threshold ${threshold !== null ? `${Math.round(threshold * 100)}%` : "unknown"}`}
    >
      <div class="gauge-bar">
        <div class="gauge-fill" style={{ width: `${Math.min(100, Math.max(0, percent ?? 0))}%` }} />
        {threshold !== null ? <div class="gauge-threshold" style={{ left: `${threshold * 100}%` }} /> : null}
      </div>
      <div class="gauge-text">{text}</div>
    </div>
  );
}

const W = 900;
const H = 300;
const PAD = { l: 60, r: 16, t: 16, b: 30 };

/** Context used over the session's life (the current branch), against the window. */
export function UsageView({
  rpc,
  sessionId,
  version,
  usage,
}: {
  rpc: Rpc;
  sessionId: string;
  version: number;
  usage: Usage | null;
}) {
  const [entries, setEntries] = useState<Entry[] | null>(null);
  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      rpc.request("tree/branch", { sessionId, full: true }).then(
        (r) => live && setEntries((r.entries ?? []) as Entry[]),
        (err: unknown) => toast(errorText(err), "error"),
      );
    }, entries === null ? 0 : 200);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [rpc, sessionId, version]);

  if (entries === null) return <div class="empty">Loading the branch…</div>;
  const { points, marks } = usageSeries(entries);
  const size = usage?.size ?? null;
  const maxUsed = Math.max(0, ...points.map((p) => p.used), usage?.used ?? 0);
  const top = Math.max(size ?? 0, maxUsed, 1) * 1.05;
  const n = Math.max(entries.length - 1, 1);
  const x = (i: number) => PAD.l + (i / n) * (W - PAD.l - PAD.r);
  const y = (v: number) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * top);
  return (
    <div class="usage-view">
      <div class="usage-head">
        <span data-testid="usage-points">{points.length} provider usages</span>
        <span>{marks.length} compaction{marks.length === 1 ? "" : "s"}</span>
        <span>peak {tokens(maxUsed)}</span>
        <span>window {size ? tokens(size) : "unknown"}</span>
        <span>now {tokens(usage?.used)} ({usage?.source ?? "?"})</span>
      </div>
      {points.length === 0 ? (
        <div class="empty">No assistant message with a provider usage on this branch yet.</div>
      ) : null}
      <svg class="chart" viewBox={`0 0 ${W} ${H}`} role="img" aria-label="context usage over the session">
        {ticks.map((t) => (
          <g key={t}>
            <line x1={PAD.l} x2={W - PAD.r} y1={y(t)} y2={y(t)} class="grid" />
            <text x={PAD.l - 6} y={y(t) + 4} class="axis" text-anchor="end">
              {tokens(t)}
            </text>
          </g>
        ))}
        {size ? (
          <g>
            <line x1={PAD.l} x2={W - PAD.r} y1={y(size)} y2={y(size)} class="window" />
            <text x={PAD.l + 4} y={y(size) - 4} class="axis">
              window {tokens(size)}
            </text>
          </g>
        ) : null}
        {marks.map((m) => (
          <g key={m.entryId} class="compaction-mark" data-entry={m.entryId}>
            <line x1={x(m.index)} x2={x(m.index)} y1={PAD.t} y2={H - PAD.b} />
            <text x={x(m.index) + 4} y={PAD.t + 12} class="axis">
              ⟳ {m.tokensBefore !== null ? tokens(m.tokensBefore) : "compaction"}
            </text>
          </g>
        ))}
        <polyline class="used" points={points.map((p) => `${x(p.index)},${y(p.used)}`).join(" ")} />
        {points.map((p) => (
          <circle key={p.entryId} cx={x(p.index)} cy={y(p.used)} r={2.5} class="point">
            <title>
              {tokens(p.used)} tokens at {p.entryId}
            </title>
          </circle>
        ))}
        <text x={PAD.l} y={H - 8} class="axis">
          start
        </text>
        <text x={W - PAD.r} y={H - 8} class="axis" text-anchor="end">
          leaf (entry {entries.length})
        </text>
      </svg>
    </div>
  );
}
