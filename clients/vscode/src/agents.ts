// What the extension knows about each root: the agent's name, its icon, how to resume one of its
// sessions in that agent, and a session's short title. One table, so every view (the Sessions
// tree, Search Sessions, the status bar) names an agent the same way.

import type { SessionSummary } from "@sessiond/client";

export interface Agent {
  /** The name a person knows the agent by. */
  readonly label: string;
  /** A codicon (https://code.visualstudio.com/api/references/icons-in-labels). */
  readonly icon: string;
  /** The command line that resumes a session in that agent, in the session's cwd (null: none). */
  resume(session: { sessionId: string; path: string }): string | null;
}

/** Quotes one argument for a POSIX shell (the terminal runs the resume command as typed). */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Pi (and sessiond's own store, whose sessions are Pi files) resumes a session file by path. */
const piResume = (s: { path: string }): string => `pi --session ${shellQuote(s.path)}`;

export const AGENTS: Readonly<Record<string, Agent>> = {
  sessiond: { label: "sessiond", icon: "database", resume: piResume },
  pi: { label: "Pi", icon: "symbol-constant", resume: piResume },
  claude: { label: "Claude Code", icon: "hubot", resume: (s) => `claude --resume ${shellQuote(s.sessionId)}` },
  codex: { label: "Codex", icon: "terminal", resume: (s) => `codex resume ${shellQuote(s.sessionId)}` },
  opencode: { label: "OpenCode", icon: "code", resume: (s) => `opencode --session ${shellQuote(s.sessionId)}` },
};

const FORMAT_ROOT: Readonly<Record<string, string>> = { "claude-code": "claude", codex: "codex", opencode: "opencode", pi: "pi" };

/** The root a session comes from: its `root`, else guessed from its format (older daemons). */
export function rootOf(session: Pick<SessionSummary, "root" | "format">): string {
  if (typeof session.root === "string" && session.root) return session.root;
  return (session.format && FORMAT_ROOT[session.format]) || "sessiond";
}

export function agentOf(session: Pick<SessionSummary, "root" | "format">): Agent {
  const root = rootOf(session);
  return AGENTS[root] ?? { label: root, icon: "comment-discussion", resume: () => null };
}

/** At most this many characters in a title (the rest is in the tooltip). */
export const TITLE_LENGTH = 80;

/**
 * A title for one line: the first non-empty line of the daemon's title (or the first message),
 * whitespace collapsed, cut at a word near TITLE_LENGTH with an ellipsis.
 */
export function shortTitle(text: string | null | undefined, fallback = ""): string {
  const line = (text ?? "").split(/\r?\n/).map((l) => l.replace(/\s+/g, " ").trim()).find((l) => l !== "") ?? "";
  if (line === "") return fallback;
  if (line.length <= TITLE_LENGTH) return line;
  const cut = line.slice(0, TITLE_LENGTH - 1);
  const space = cut.lastIndexOf(" ");
  return `${(space > TITLE_LENGTH / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

export function sessionTitle(session: Pick<SessionSummary, "title" | "firstMessage" | "sessionId">): string {
  return shortTitle(session.title || session.firstMessage, session.sessionId);
}
