// What an editor sees: it spawned `sessiond connect`, which started the daemon; the daemon dies.
// Run by the pytest wrapper, which starts NO daemon itself, waits for the file named by
// SESSIOND_TEST_STDIO_READY, kills the daemon the bridge started (pid from <store>/daemon.lock)
// and waits for this to finish. The bridge exits with the daemon's connection; autoReconnect
// spawns a new bridge, which starts a new daemon on the same store; the client re-initializes
// and re-subscribes on its own.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { test } from "node:test";
import { connectStdio, type CloseEvent, type ReconnectResult } from "@sessiond/client";
import { CONNECT, assistant, user } from "./helpers.js";

const READY = process.env["SESSIOND_TEST_STDIO_READY"];

test(
  "a stdio client gets a new bridge and a new daemon after the daemon dies",
  {
    skip: READY === undefined || CONNECT === undefined ? "SESSIOND_TEST_STDIO_READY is not set (run through pytest)" : false,
    timeout: 90_000,
  },
  async () => {
    let stderr = "";
    const client = await connectStdio({
      command: CONNECT!,
      autoReconnect: { timeoutMs: 30_000, delayMs: 50 },
      onStderr: (text) => (stderr += text),
    });
    const closed = new Promise<CloseEvent>((resolve) => client.onClose(resolve));
    const reconnected = new Promise<ReconnectResult>((resolve) => client.onReconnect(resolve));
    await client.initialize({ clientInfo: { name: "ts-stdio-restart" } });

    const { sessionId } = await client.session.new({ cwd: "/ts-client/stdio-restart", subscribe: true });
    const before = await client.session.append({
      sessionId,
      entries: [
        { type: "message", message: user("before the crash") },
        { type: "message", message: assistant("noted", { total: 2000 }) },
      ],
    });

    writeFileSync(READY!, `${sessionId}\n`); // pytest now kills the daemon the bridge started

    const close = await closed;
    assert.equal(close.expected, false);

    const result = await reconnected;
    assert.ok(client.connected);
    assert.match(client.description, /^stdio:/);
    assert.equal(result.initialize?.serverInfo.name, "sessiond");
    assert.deepEqual(result.resubscribed, [sessionId]);
    assert.deepEqual(result.failed, []);

    // the new daemon serves the same session, and the re-established subscription works
    const loaded = await client.session.load({ sessionId });
    assert.equal(loaded.leafId, before.leafId);
    const seen = client.nextUpdate("entries_appended", { sessionId });
    const next = await client.session.append({ sessionId, entries: [{ type: "message", message: user("after") }] });
    assert.deepEqual((await seen).entryIds, next.entryIds);
    assert.deepEqual((await client.tree.branch({ sessionId })).entryIds, [...before.entryIds, ...next.entryIds]);

    await client.close();
    assert.equal(stderr.includes("Traceback"), false, stderr);
  },
);
