// The status-bar item: the active session's context usage, live, coloured near the compaction
// threshold (warning within 10 points of it, error past it).

import type { SessiondClient, UsageResult } from "@sessiond/client";
import type * as vscode from "vscode";
import type { Vscode } from "./api.js";

export interface Usage {
  used: number | null;
  size: number | null;
  percent: number | null;
  source: string;
}

export function level(percent: number | null, threshold: number | null): "ok" | "warning" | "error" {
  if (percent === null) return "ok";
  const limit = threshold !== null ? threshold * 100 : 90;
  if (percent >= limit) return "error";
  if (percent >= limit - 10) return "warning";
  return "ok";
}

function short(n: number | null): string {
  if (n === null) return "?";
  return n >= 10_000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

export class UsageStatus {
  readonly item: vscode.StatusBarItem;
  sessionId: string | undefined;
  title = "";
  usage: Usage | undefined;
  threshold: number | null = null;
  private off: vscode.Disposable | undefined;

  constructor(private readonly vs: Vscode) {
    this.item = vs.window.createStatusBarItem(vs.StatusBarAlignment.Left, 50);
    this.item.name = "sessiond usage";
    this.item.command = "sessiond.openViewer";
  }

  /** Follow this session's usage (`context/usage`, then its `usage_update`s). */
  async follow(client: SessiondClient, sessionId: string, title: string): Promise<void> {
    this.off?.dispose();
    this.sessionId = sessionId;
    this.title = title;
    await client.session.subscribe({ sessionId });
    this.off = client.onUpdate(
      "usage_update",
      (u) => {
        if (this.sessionId === sessionId) this.show({ used: u.used, size: u.size, percent: u.percent, source: u.source });
      },
      { sessionId },
    );
    const [usage, settings] = await Promise.all([
      client.context.usage({ sessionId }) as Promise<UsageResult>,
      client.compaction.settings({ sessionId }).catch(() => null),
    ]);
    const effective = (settings?.effective ?? {}) as Record<string, unknown>;
    const reserve = typeof effective["reserveTokens"] === "number" ? effective["reserveTokens"] : null;
    this.threshold = usage.size && reserve !== null ? Math.max(0, (usage.size - reserve) / usage.size) : null;
    if (this.sessionId === sessionId) this.show(usage);
  }

  show(usage: Usage): void {
    this.usage = usage;
    const vs = this.vs;
    const state = level(usage.percent, this.threshold);
    const percent = usage.percent !== null ? `${Math.round(usage.percent)}%` : "?";
    this.item.text = `$(pulse) ${percent} · ${short(usage.used)}/${short(usage.size)}`;
    this.item.tooltip =
      `${this.title}\ncontext: ${usage.used ?? "?"} of ${usage.size ?? "?"} tokens (${usage.source})` +
      (this.threshold !== null ? `\ncompaction at ${Math.round(this.threshold * 100)}%` : "");
    this.item.backgroundColor =
      state === "error"
        ? new vs.ThemeColor("statusBarItem.errorBackground")
        : state === "warning"
          ? new vs.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    this.item.show();
  }

  dispose(): void {
    this.off?.dispose();
    this.item.dispose();
  }
}
