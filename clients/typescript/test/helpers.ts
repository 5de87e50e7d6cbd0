// Shared by the tests: where the daemon under test is (set by the pytest wrapper) and
// builders for Pi messages.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentMessage, EntrySpec, SessiondClient } from "@sessiond/client";

/** The daemon's socket (`SESSIOND_TEST_SOCKET`); tests that need it skip without it. */
export const SOCKET = process.env["SESSIOND_TEST_SOCKET"];
/** argv of `sessiond connect` for that daemon (`SESSIOND_TEST_CONNECT`, JSON). */
export const CONNECT: string[] | undefined = process.env["SESSIOND_TEST_CONNECT"]
  ? (JSON.parse(process.env["SESSIOND_TEST_CONNECT"]) as string[])
  : undefined;
export const NO_DAEMON = SOCKET === undefined ? "SESSIOND_TEST_SOCKET is not set (run through pytest)" : false;

export function socket(): string {
  if (SOCKET === undefined) throw new Error("SESSIOND_TEST_SOCKET is not set");
  return SOCKET;
}

export function workspace(prefix = "ws-"): string {
  const base = process.env["SESSIOND_TEST_WORKDIR"] ?? tmpdir();
  return mkdtempSync(join(base, prefix));
}

export function user(text: string): AgentMessage {
  return { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
}

export function assistant(
  text: string,
  options: { total?: number; calls?: [string, Record<string, unknown>][] } = {},
): AgentMessage {
  const total = options.total ?? 0;
  const content: Record<string, unknown>[] = text ? [{ type: "text", text }] : [];
  (options.calls ?? []).forEach(([name, args], i) =>
    content.push({ type: "toolCall", id: `call_${i}`, name, arguments: args }),
  );
  return {
    role: "assistant",
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: {
      input: Math.max(total - 100, 0),
      output: Math.min(total, 100),
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: total,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

export function toolResult(text: string, callId = "call_0", name = "read"): AgentMessage {
  return {
    role: "toolResult",
    toolCallId: callId,
    toolName: name,
    content: [{ type: "text", text }],
    isError: false,
    timestamp: Date.now(),
  };
}

/** A user request, an assistant reading a file, the result and the answer (tests/rpc/test_compaction.py). */
export function turn(i: number, size = 400): EntrySpec[] {
  const body = `line ${i} `.repeat(Math.floor(size / 7));
  return [
    { type: "message", message: user(`Request ${i}: please look at src/mod${i}.py and fix the bug`) },
    { type: "message", message: assistant(`Reading mod${i}`, { calls: [["read", { path: `src/mod${i}.py` }]] }) },
    { type: "message", message: toolResult(body) },
    { type: "message", message: assistant(`Fixed the bug in src/mod${i}.py by checking for None.`) },
  ];
}

/** A subscribed session with `n` turns and keepRecentTokens 300, so that compaction has work. */
export async function sessionWithTurns(client: SessiondClient, n: number): Promise<string> {
  const { sessionId } = await client.session.new({ cwd: "/work/proj", subscribe: true });
  const settings = await client.compaction.settings({ sessionId, set: { keepRecentTokens: 300 } });
  if (settings.keepRecentTokens !== 300) throw new Error(`keepRecentTokens not set: ${JSON.stringify(settings)}`);
  for (let i = 0; i < n; i++) await client.session.append({ sessionId, entries: turn(i) });
  return sessionId;
}

/** Resolves with what `promise` rejects with; fails when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  let value: unknown;
  try {
    value = await promise;
  } catch (err) {
    return err;
  }
  throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
}
