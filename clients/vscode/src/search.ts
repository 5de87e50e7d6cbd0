// "sessiond: Search Sessions": a quick pick whose items are the daemon's `search/query` hits for
// what is typed, asked again as the text changes (debounced; an older answer never replaces a
// newer one). Choosing a hit opens the viewer at that entry.

import type { SessiondClient } from "@sessiond/client";
import type * as vscode from "vscode";
import { AGENTS } from "./agents.js";
import type { Vscode } from "./api.js";
import { call, MissingMethodError } from "./untyped.js";
import type { ViewerTarget } from "./viewer.js";

/** One hit, as the search contract (issue 26) defines it. */
export interface SearchHit {
  sessionId: string;
  entryId: string;
  agent: string;
  root: string;
  cwd: string;
  timestamp: string | null;
  role: string | null;
  kind: string;
  title: string;
  snippet: string;
  onBranch: boolean;
  resume: string | null;
}

export interface SearchResult {
  hits: SearchHit[];
  total: number;
  nextCursor: string | null;
  indexing: { done: number; total: number } | null;
}

const MARK_START = "\u0002";
const MARK_END = "\u0003";

/** The snippet as plain text for a quick pick (which has no markup): matches between «». */
export function plainSnippet(snippet: string): string {
  return snippet
    .replace(/[\u0000\u0001\u0004-\u001f]/g, " ")
    .split(MARK_START)
    .join("«")
    .split(MARK_END)
    .join("»")
    .replace(/\s+/g, " ")
    .trim();
}

export interface HitItem extends vscode.QuickPickItem {
  hit?: SearchHit;
}

/** The quick pick's button on a hit that can be resumed in its own agent. */
export const RESUME_TOOLTIP = "Resume in Terminal";

export function hitItem(hit: SearchHit, vs?: Vscode): HitItem {
  const agent = AGENTS[hit.root] ?? AGENTS[hit.agent];
  const when = hit.timestamp ? hit.timestamp.slice(0, 16).replace("T", " ") : "";
  return {
    label: `$(${agent?.icon ?? "comment-discussion"}) ${hit.title || hit.sessionId}`,
    description: [agent?.label ?? hit.agent, hit.role ?? hit.kind, when, hit.onBranch ? "" : "off the current branch"]
      .filter(Boolean)
      .join(" · "),
    detail: plainSnippet(hit.snippet),
    // the daemon matched it: VS Code's own filter on the label must not hide it
    alwaysShow: true,
    hit,
    ...(hit.resume && vs && vs.workspace.isTrusted !== false
      ? { buttons: [{ iconPath: new vs.ThemeIcon("terminal"), tooltip: RESUME_TOOLTIP }] }
      : {}),
  };
}

export class SearchSessions {
  constructor(
    private readonly vs: Vscode,
    private readonly client: () => SessiondClient | undefined,
    private readonly open: (target: ViewerTarget) => Promise<void>,
    private readonly cwd: () => string | undefined,
  ) {}

  /** One query (also what the quick pick runs); `thisFolder` limits it to the workspace. */
  async query(text: string, thisFolder = false): Promise<SearchResult> {
    const client = this.client();
    if (client === undefined) throw new Error("not connected to sessiond (see the Sessions view)");
    const cwd = thisFolder ? this.cwd() : undefined;
    return call<SearchResult>(client, "search/query", { query: text, limit: 50, ...(cwd ? { cwd } : {}) });
  }

  /** Shows the quick pick; resolves with the hit chosen (after opening it), or undefined. */
  show(initial = ""): Promise<SearchHit | undefined> {
    const vs = this.vs;
    const pick = vs.window.createQuickPick<HitItem>();
    pick.placeholder = "Search the sessions of every agent (words; \"quoted phrase\")";
    pick.title = "sessiond: Search Sessions";
    pick.matchOnDescription = false;
    pick.matchOnDetail = false;
    pick.value = initial;
    let asked = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = (text: string) => {
      const mine = ++asked;
      if (text.trim() === "") {
        pick.items = [];
        pick.busy = false;
        return;
      }
      pick.busy = true;
      this.query(text).then(
        (result) => {
          if (mine !== asked) return;
          pick.busy = false;
          const indexing = result.indexing ? ` (indexing: ${result.indexing.done}/${result.indexing.total})` : "";
          pick.title = `sessiond: Search Sessions — ${result.total}${result.nextCursor ? "+" : ""} hit${result.total === 1 ? "" : "s"}${indexing}`;
          pick.items = result.hits.length ? result.hits.map((hit) => hitItem(hit, vs)) : [{ label: "No session says that", alwaysShow: true }];
        },
        (err: unknown) => {
          if (mine !== asked) return;
          pick.busy = false;
          const text = err instanceof MissingMethodError ? err.message : err instanceof Error ? err.message : String(err);
          pick.items = [{ label: "$(warning) Search failed", detail: text, alwaysShow: true }];
        },
      );
    };
    return new Promise((resolve) => {
      let chosen: SearchHit | undefined;
      pick.onDidChangeValue((value) => {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(() => run(value), 150);
      });
      pick.onDidAccept(() => {
        chosen = pick.selectedItems[0]?.hit;
        if (chosen === undefined) return;
        pick.hide();
        void this.open({ session: chosen.sessionId, entry: chosen.entryId });
      });
      pick.onDidTriggerItemButton(({ item }) => {
        const hit = item.hit;
        if (!hit?.resume) return;
        pick.hide();
        const terminal = vs.window.createTerminal({ name: `resume ${hit.title || hit.sessionId}`.slice(0, 60), ...(hit.cwd ? { cwd: hit.cwd } : {}) });
        terminal.show();
        terminal.sendText(hit.resume, true);
      });
      pick.onDidHide(() => {
        if (timer !== undefined) clearTimeout(timer);
        pick.dispose();
        resolve(chosen);
      });
      pick.show();
      if (initial) run(initial);
    });
  }
}
