// @sessiond/client against a real daemon (started by tests/clients/typescript/test_typescript_client.py).
// Over the Unix socket: initialize, sessions and typed updates, context, progress, errors.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  ErrorCodes,
  METHODS,
  SessiondClient,
  SessiondError,
  connectSocket,
  type CompactionUpdate,
  type InitializeResult,
  type ProgressValue,
  type SessionUpdate,
  type UsageUpdate,
} from "@sessiond/client";
import { NO_DAEMON, assistant, rejection, socket, user } from "./helpers.js";

const T = { timeout: 60_000 };

/** Compile-time checks only (never called): the build of the tests fails if typing regresses. */
export function typeChecks(client: SessiondClient): void {
  // @ts-expect-error cwd is required
  void client.request("session/new", {});
  // @ts-expect-error no such method
  void client.request("session/nope", {});
  // @ts-expect-error a typo in a params field is an error (params are closed types)
  void client.session.load({ sessionId: "s", subscrib: true });
  // params may be left out when no field is required
  void client.request("session/list");
  void client.request("shutdown");
  const result: Promise<number> = client.tree.get({ sessionId: "s" }).then((tree) => tree.nodes.length);
  void result;
  client.onSessionUpdate(({ update }) => {
    switch (update.sessionUpdate) {
      case "usage_update": {
        const percent: number | null = update.percent; // narrowed to UsageUpdate
        void percent;
        break;
      }
      case "entries_appended": {
        const ids: string[] = update.entryIds;
        void ids;
        break;
      }
      default:
        break;
    }
  });
  client.onUpdate("compaction_update", (u) => {
    const status: CompactionUpdate["status"] = u.status;
    void status;
  });
}

describe("@sessiond/client over the Unix socket", { skip: NO_DAEMON }, () => {
  let client: SessiondClient;
  let result: InitializeResult;

  before(async () => {
    client = await connectSocket(socket());
    result = await client.initialize({ clientInfo: { name: "ts-client-test", version: "1" } });
  });

  after(async () => {
    await client?.close();
  });

  test("initialize", T, async () => {
    assert.equal(result.protocolVersion, 1);
    assert.equal(result.serverInfo.name, "sessiond");
    assert.ok(client.connected);
    assert.match(client.description, /^unix:/);
  });

  test("session/new, session/append and typed session/update notifications", T, async () => {
    const updates: SessionUpdate[] = [];
    const usage: UsageUpdate[] = [];
    const sub1 = client.onSessionUpdate((params) => updates.push(params));
    const sub2 = client.onUpdate("usage_update", (u) => usage.push(u));
    const created = await client.session.new({ cwd: "/ts-client/updates", subscribe: true });
    const sessionId = created.sessionId;
    assert.ok(client.subscribedSessions.has(sessionId));
    const appended = client.nextUpdate("entries_appended", { sessionId });
    const used = client.nextUpdate("usage_update", { sessionId, where: (u) => u.used === 50_000 });
    const result = await client.session.append({
      sessionId,
      entries: [
        { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" },
        { type: "message", message: user("hello from TypeScript") },
        { type: "message", message: assistant("hi", { total: 50_000 }) },
      ],
    });
    assert.equal(result.entryIds.length, 3);
    assert.equal(result.leafId, result.entryIds[2]);
    const update = await appended;
    assert.deepEqual(update.entryIds, result.entryIds);
    assert.deepEqual(update.types, ["model_change", "message", "message"]);
    assert.equal(update.leafId, result.leafId);
    const usageUpdate = await used;
    assert.deepEqual(
      { used: usageUpdate.used, size: usageUpdate.size, percent: usageUpdate.percent, source: usageUpdate.source },
      { used: 50_000, size: 200_000, percent: 25, source: "api" },
    );
    const mine = updates.filter((u) => u.sessionId === sessionId).map((u) => u.update.sessionUpdate);
    assert.deepEqual(mine.slice(0, 2), ["entries_appended", "usage_update"]);
    assert.ok(usage.some((u) => u.used === 50_000));
    sub1.dispose();
    sub2.dispose();

    // the generic typed request and the grouped wrappers are the same calls
    const listed = await client.request("session/list");
    assert.ok(listed.sessions.some((s) => s.sessionId === sessionId));
    const loaded = await client.request("session/load", { sessionId });
    assert.equal(loaded.entryCount, 3);
    assert.equal(loaded.leafId, result.leafId);
  });

  test("context/get and context/usage", T, async () => {
    const { sessionId } = await client.session.new({ cwd: "/ts-client/context" });
    const appended = await client.session.append({
      sessionId,
      entries: [
        { type: "message", message: user("what is in the context?") },
        { type: "message", message: assistant("this", { total: 1234 }) },
      ],
    });
    const context = await client.context.get({ sessionId });
    assert.deepEqual(context.entryIds, appended.entryIds);
    assert.deepEqual(
      context.messages.map((m) => m.message["role"]),
      ["user", "assistant"],
    );
    assert.equal(context.messages[0]?.entryId, appended.entryIds[0]);
    const usage = await client.context.usage({ sessionId });
    assert.equal(usage.used, 1234);
    assert.equal(usage.source, "api");
  });

  test("tree/get with progress", T, async () => {
    const { sessionId } = await client.session.new({ cwd: "/ts-client/tree" });
    await client.session.append({ sessionId, entries: [{ type: "message", message: user("root") }] });
    const progress: ProgressValue[] = [];
    const tree = await client.tree.get({ sessionId }, { onProgress: (v) => progress.push(v) });
    assert.equal(tree.nodes.length, 1);
    assert.equal(tree.leafId, tree.nodes[0]?.id);
    assert.equal(tree.nodes[0]?.role, "user");
    assert.deepEqual(
      progress.map((p) => p.kind),
      ["begin", "end"],
    );
    assert.ok(METHODS["tree/get"].longRunning);
    await assert.rejects(client.context.get({ sessionId }, { onProgress: () => {} }), TypeError);
  });

  test("errors are SessiondError with code and data", T, async () => {
    const missing = await rejection(client.session.load({ sessionId: "no-such-session" }));
    assert.ok(missing instanceof SessiondError, String(missing));
    assert.equal(missing.code, ErrorCodes.SESSION_NOT_FOUND);
    assert.equal(missing.codeName, "SESSION_NOT_FOUND");
    assert.equal(missing.data.sessionId, "no-such-session");
    assert.equal(missing.method, "session/load");
    assert.ok(SessiondError.is(missing, ErrorCodes.SESSION_NOT_FOUND));

    const { sessionId } = await client.session.new({ cwd: "/ts-client/errors" });
    const first = await client.session.append({ sessionId, entries: [{ type: "message", message: user("one") }] });
    await client.session.append({ sessionId, entries: [{ type: "message", message: user("two") }] });
    const stale = await rejection(
      client.session.append({
        sessionId,
        expectLeafId: first.leafId,
        entries: [{ type: "message", message: user("three") }],
      }),
    );
    assert.ok(SessiondError.is(stale, ErrorCodes.LEAF_MISMATCH), String(stale));
    assert.notEqual(stale.data.currentLeafId, first.leafId);

    const invalid = await rejection(client.session.append({ sessionId, entries: [] }));
    assert.ok(SessiondError.is(invalid, ErrorCodes.INVALID_PARAMS), String(invalid));
    assert.equal(invalid.data.field, "entries");
  });

  test("a request with an aborted signal is cancelled", T, async () => {
    const controller = new AbortController();
    controller.abort();
    const aborted = await rejection(client.session.list({}, { signal: controller.signal }));
    assert.ok(SessiondError.is(aborted, ErrorCodes.REQUEST_CANCELLED), String(aborted));
  });
});
