// The usage chart's data, computed from the branch's entries (the protocol has no history of
// usage): each assistant message's provider usage, and where compactions happened.

export interface Point {
  index: number;
  entryId: string;
  used: number;
  timestamp: string | null;
}

export interface Mark {
  index: number;
  entryId: string;
  tokensBefore: number | null;
}

type Entry = Record<string, unknown>;

function contextTokens(usage: Entry): number {
  const total = usage["totalTokens"];
  if (typeof total === "number" && total > 0) return total;
  let sum = 0;
  for (const key of ["input", "output", "cacheRead", "cacheWrite"]) {
    const v = usage[key];
    if (typeof v === "number") sum += v;
  }
  return sum;
}

/** The points of the chart: each assistant message's provider usage along the branch, compactions marked. */
export function usageSeries(entries: Entry[]): { points: Point[]; marks: Mark[] } {
  const points: Point[] = [];
  const marks: Mark[] = [];
  entries.forEach((entry, index) => {
    const id = String(entry["id"]);
    if (entry["type"] === "compaction") {
      marks.push({ index, entryId: id, tokensBefore: typeof entry["tokensBefore"] === "number" ? entry["tokensBefore"] : null });
      return;
    }
    const message = entry["message"] as Entry | undefined;
    if (entry["type"] !== "message" || message?.["role"] !== "assistant") return;
    const usage = message["usage"] as Entry | undefined;
    if (usage === undefined || message["stopReason"] === "error" || message["stopReason"] === "aborted") return;
    const used = contextTokens(usage);
    if (used > 0) points.push({ index, entryId: id, used, timestamp: (entry["timestamp"] as string) ?? null });
  });
  return { points, marks };
}

