export function basename(path: string): string {
  const parts = path.split("/").filter(Boolean);
  return parts[parts.length - 1] ?? path;
}

export function ago(iso: string | null | undefined): string {
  if (!iso) return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const s = Math.max(0, (Date.now() - t) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toISOString().slice(0, 10);
}

export function time(iso: string | null | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString().replace("T", " ").slice(0, 19);
}

export function tokens(n: number | null | undefined): string {
  if (n === null || n === undefined) return "?";
  if (n >= 1_000_000) return `${(n / 1_000_000).toFixed(1)}M`;
  if (n >= 10_000) return `${Math.round(n / 1000)}k`;
  if (n >= 1000) return `${(n / 1000).toFixed(1)}k`;
  return String(Math.round(n));
}

/** Pi's estimate (chars / 4, rounded up): what `context/usage` adds after the last provider usage. */
export function estimateTokens(message: Record<string, unknown>): number {
  let chars = 0;
  const role = message["role"];
  const add = (value: unknown) => {
    if (typeof value === "string") chars += value.length;
  };
  if (role === "compactionSummary" || role === "branchSummary") add(message["summary"]);
  if (role === "bashExecution") {
    add(message["command"]);
    add(message["output"]);
  }
  const content = message["content"];
  if (typeof content === "string") add(content);
  else if (Array.isArray(content)) {
    for (const block of content as Record<string, unknown>[]) {
      if (block["type"] === "text") add(block["text"]);
      else if (block["type"] === "thinking") add(block["thinking"]);
      else if (block["type"] === "toolCall") {
        add(block["name"]);
        chars += JSON.stringify(block["arguments"] ?? {}).length;
      } else if (block["type"] === "image") chars += 4800;
    }
  }
  return Math.ceil(chars / 4);
}
