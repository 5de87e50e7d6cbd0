// Where the page is, in its URL fragment (so a link opens the same view, and the VS Code
// extension can open the viewer at an entry): `session=<id>`, `entry=<entryId>`, `tab=` (a
// session's tree, context, usage or files), `view=search|usage` (the search page, the usage
// dashboard) and `q=` (the search query). The fragment never reaches the network.

export type View = "sessions" | "search" | "usage";
export type SessionTab = "tree" | "context" | "usage" | "files";

export interface Route {
  view: View;
  session: string | null;
  entry: string | null;
  tab: SessionTab;
  q: string;
}

const TABS: SessionTab[] = ["tree", "context", "usage", "files"];

export function parseRoute(hash: string): Route {
  const p = new URLSearchParams(hash.replace(/^#/, ""));
  const view = p.get("view");
  const tab = p.get("tab") as SessionTab | null;
  return {
    view: view === "search" || view === "usage" ? view : "sessions",
    session: p.get("session") || null,
    entry: p.get("entry") || null,
    tab: tab !== null && TABS.includes(tab) ? tab : "tree",
    q: p.get("q") ?? "",
  };
}

export function formatRoute(route: Route): string {
  const p = new URLSearchParams();
  if (route.view !== "sessions") p.set("view", route.view);
  if (route.session) p.set("session", route.session);
  if (route.entry) p.set("entry", route.entry);
  if (route.tab !== "tree") p.set("tab", route.tab);
  if (route.q) p.set("q", route.q);
  const text = p.toString();
  return text ? `#${text}` : "";
}

/** A link to a session (at an entry): what search hits and permalinks point to. */
export function sessionLink(session: string, entry?: string | null, tab?: SessionTab): string {
  return formatRoute({ view: "sessions", session, entry: entry ?? null, tab: tab ?? "tree", q: "" });
}
