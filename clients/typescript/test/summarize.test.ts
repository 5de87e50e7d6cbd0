// @sessiond/client against a real daemon (started by tests/clients/typescript/test_typescript_client.py).
// The server -> client request `compaction/summarize`, and cancelling a run (-32800).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  CancellationTokenSource,
  ErrorCodes,
  SessiondError,
  connectSocket,
  type CompactionUpdate,
  type SessiondClient,
  type SummarizeParams,
} from "@sessiond/client";
import { NO_DAEMON, rejection, sessionWithTurns, socket } from "./helpers.js";

const T = { timeout: 60_000 };

describe("compaction/summarize answered by the TypeScript client", { skip: NO_DAEMON }, () => {
  let client: SessiondClient;
  const requests: SummarizeParams[] = [];
  let hang = false;
  let summarizerCancelled: () => void = () => {};
  const cancelledInSummarizer = new Promise<void>((resolve) => {
    summarizerCancelled = resolve;
  });
  let summarizeStarted: () => void = () => {};
  let started = new Promise<void>((resolve) => {
    summarizeStarted = resolve;
  });

  before(async () => {
    client = await connectSocket(socket());
    // registered before initialize: the client declares capabilities.summarizer
    client.onSummarize(async (params, token) => {
      requests.push(params);
      summarizeStarted();
      if (hang) {
        // a model that "thinks" until the daemon cancels this request
        await new Promise<void>((resolve) => token.onCancellationRequested(() => resolve()));
        summarizerCancelled();
        throw new SessiondError(ErrorCodes.REQUEST_CANCELLED, "summary cancelled");
      }
      return { summary: `## Goal\nSummary ${requests.length} from TypeScript.`, usage: { totalTokens: 120 } };
    });
    await client.initialize({ clientInfo: { name: "ts-summarizer" } });
  });

  after(async () => {
    await client?.close();
  });

  test("compaction/run with summarizer client", T, async () => {
    const sessionId = await sessionWithTurns(client, 6);
    const statuses: CompactionUpdate["status"][] = [];
    const sub = client.onUpdate("compaction_update", (u) => statuses.push(u.status), { sessionId });
    const completed = client.nextUpdate("compaction_update", { sessionId, where: (u) => u.status === "completed" });
    const result = await client.compaction.run({ sessionId, summarizer: "client" });
    assert.equal(result.summarizer, "client");
    assert.ok(requests.length >= 1);
    const request = requests[0]!;
    assert.equal(request.sessionId, sessionId);
    assert.equal(request.kind, "history");
    assert.equal(request.compactionId, result.compactionId);
    assert.ok(request.prompt.includes("Request 0"), request.prompt);
    assert.ok(result.summary.startsWith("## Goal\nSummary 1 from TypeScript."), result.summary);
    assert.ok((result.tokensAfter ?? Infinity) < result.tokensBefore);
    const done = await completed;
    assert.equal(done.entryId, result.entryId);
    assert.deepEqual(statuses.slice(0, 1), ["in_progress"]);
    sub.dispose();
    const context = await client.context.get({ sessionId });
    assert.equal(context.messages[0]?.message["role"], "compactionSummary");
    assert.equal(context.messages[1]?.entryId, result.firstKeptEntryId);
  });

  test("cancelling compaction/run (hanging summarizer) fails it with -32800", T, async () => {
    hang = true;
    requests.length = 0;
    started = new Promise<void>((resolve) => {
      summarizeStarted = resolve;
    });
    const sessionId = await sessionWithTurns(client, 6);
    const loaded = await client.session.load({ sessionId });
    const cancelledUpdate = client.nextUpdate("compaction_update", {
      sessionId,
      where: (u) => u.status === "cancelled",
    });
    const source = new CancellationTokenSource();
    const run = client.compaction.run({ sessionId, summarizer: "client" }, { token: source.token });
    await started; // the daemon is waiting for our summary
    source.cancel(); // -> $/cancelRequest for compaction/run
    const error = await rejection(run);
    assert.ok(error instanceof SessiondError, String(error));
    assert.equal(error.code, -32800);
    assert.ok(error.cancelled);
    await cancelledInSummarizer; // the daemon cancelled its compaction/summarize to us in turn
    const update = await cancelledUpdate;
    assert.match(update.error ?? "", /nothing was written/);
    const after = await client.session.load({ sessionId });
    assert.equal(after.entryCount, loaded.entryCount);
    assert.equal(after.leafId, loaded.leafId);
    // nothing is left armed: the next run works
    hang = false;
    const result = await client.compaction.run({ sessionId, summarizer: "client" });
    assert.equal(result.summarizer, "client");
  });

  test("timeoutMs cancels a request that takes too long", T, async () => {
    hang = true;
    const sessionId = await sessionWithTurns(client, 6);
    const error = await rejection(client.compaction.run({ sessionId, summarizer: "client" }, { timeoutMs: 300 }));
    assert.ok(SessiondError.is(error, ErrorCodes.REQUEST_CANCELLED), String(error));
    hang = false;
  });
});
