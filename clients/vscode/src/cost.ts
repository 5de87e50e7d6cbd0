// The status-bar item beside the context gauge: what today's agent usage cost, every agent
// together (`stats/query` grouped daily, since today, in the local time zone), kept current by
// the daemon's `stats_update` notifications and, as a fallback, by re-asking (throttled) when a
// followed session grows. Hidden with a reason in its tooltip when the daemon has no stats.

import type { SessiondClient } from "@sessiond/client";
import type * as vscode from "vscode";
import type { Vscode } from "./api.js";
import { call, MissingMethodError } from "./untyped.js";

/** The token and cost fields of the stats contract (issue 27). */
export interface Totals {
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  cacheCreationTokens?: number;
  totalTokens?: number;
  cost?: number | null;
}

export function money(cost: number | null | undefined): string {
  if (cost === null || cost === undefined) return "$?";
  return cost >= 100 ? `$${Math.round(cost)}` : `$${cost.toFixed(2)}`;
}

function tokens(n: number | undefined): string {
  if (n === undefined) return "?";
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 10_000 ? `${Math.round(n / 1000)}k` : String(n);
}

/** Today's date (YYYY-MM-DD) where the editor runs. */
export function today(now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/** The editor's IANA time zone ("today" is cut there), when the runtime knows it. */
export function timeZone(): string | undefined {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || undefined;
  } catch {
    return undefined;
  }
}

export class CostStatus {
  readonly item: vscode.StatusBarItem;
  totals: Totals | undefined;
  /** Why there is nothing to show (no stats in this daemon, a failure). */
  problem: string | undefined;
  private offs: vscode.Disposable[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private periodic: ReturnType<typeof setInterval> | undefined;
  private client: SessiondClient | undefined;
  private missing = false;

  constructor(
    vs: Vscode,
    private readonly enabled: () => boolean,
  ) {
    this.item = vs.window.createStatusBarItem(vs.StatusBarAlignment.Left, 49);
    this.item.name = "sessiond: today's cost";
    this.item.command = "sessiond.openUsage";
  }

  /** Start following: ask now, then on every update; every 5 minutes in case the day turned. */
  async attach(client: SessiondClient): Promise<void> {
    this.detach();
    this.client = client;
    this.missing = false;
    const onStats = (params: unknown) => {
      const today = (params as { today?: Totals } | undefined)?.today;
      if (today !== undefined) this.show(today);
    };
    this.offs.push(
      client.onSessionUpdate(({ update }) => {
        const u = update as unknown as { sessionUpdate: string; today?: Totals };
        if (u.sessionUpdate === "stats_update") onStats(u);
        else if (u.sessionUpdate === "usage_update" || u.sessionUpdate === "entries_appended") this.soon();
      }),
      client.onNotification("stats_update", onStats),
      client.onNotification("stats/update", onStats),
      client.onReconnect(() => void this.subscribe().then(() => this.refresh())),
    );
    this.periodic = setInterval(() => void this.refresh(), 300_000);
    await this.subscribe();
    await this.refresh();
  }

  /** `stats/subscribe` where the daemon has it (the usage engineer's way of asking for updates). */
  private async subscribe(): Promise<void> {
    const client = this.client;
    if (client === undefined || !this.enabled()) return;
    await call(client, "stats/subscribe", { timezone: timeZone() }).catch(() => undefined);
  }

  /** Re-ask within two seconds (many appends, one query). */
  private soon(): void {
    if (this.timer !== undefined || this.missing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, 2000);
  }

  async refresh(): Promise<Totals | undefined> {
    const client = this.client;
    if (client === undefined || !this.enabled()) {
      this.item.hide();
      return undefined;
    }
    try {
      const result = await call<{ rows: Totals[]; totals: Totals; pricesAsOf?: string }>(client, "stats/query", {
        groupBy: "daily",
        since: today(),
        timezone: timeZone(),
      });
      this.problem = undefined;
      this.show(result.totals, result.pricesAsOf);
      return result.totals;
    } catch (err) {
      this.missing = err instanceof MissingMethodError;
      this.problem = err instanceof Error ? err.message : String(err);
      this.item.text = "$(credit-card) —";
      this.item.tooltip = `Today's cost: ${this.problem}`;
      if (this.missing) this.item.hide();
      else this.item.show();
      return undefined;
    }
  }

  show(totals: Totals, pricesAsOf?: string): void {
    if (!this.enabled()) return;
    this.totals = totals;
    // null: none of today's models has a price (a mix adds the priced ones; docs/usage.md)
    const unpriced = totals.cost === null;
    this.item.text = `$(credit-card) ${unpriced ? "unpriced" : money(totals.cost)} today`;
    this.item.tooltip =
      `Today, every agent: ${unpriced ? "unpriced (no model used today has a known price)" : money(totals.cost)}\n` +
      `${tokens(totals.totalTokens)} tokens: ${tokens(totals.inputTokens)} in, ${tokens(totals.outputTokens)} out, ` +
      `${tokens(totals.cacheReadTokens)} cache read, ${tokens(totals.cacheCreationTokens)} cache write` +
      (pricesAsOf ? `\nprices as of ${pricesAsOf}` : "") +
      "\nClick for the usage dashboard.";
    this.item.show();
  }

  private detach(): void {
    for (const off of this.offs) off.dispose();
    this.offs = [];
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.periodic !== undefined) clearInterval(this.periodic);
    this.timer = this.periodic = undefined;
  }

  dispose(): void {
    this.detach();
    this.item.dispose();
  }
}
