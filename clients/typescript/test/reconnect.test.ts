// Reconnecting after the daemon restarts. Run by the pytest wrapper, which waits for the file
// named by SESSIOND_TEST_READY, kills the daemon, starts it again on the same store and socket,
// and waits for this to finish.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { test } from "node:test";
import { connectSocket, SessiondError, type CloseEvent, type ReconnectResult } from "@sessiond/client";
import { assistant, socket, user } from "./helpers.js";

const READY = process.env["SESSIOND_TEST_READY"];

test(
  "clients reconnect after the daemon restarts",
  { skip: READY === undefined ? "SESSIOND_TEST_READY is not set (run through pytest)" : false, timeout: 90_000 },
  async () => {
    // A: the documented pattern, reconnect() when the connection closes unexpectedly
    const a = await connectSocket(socket());
    await a.initialize({ clientInfo: { name: "ts-reconnect-explicit" } });
    const closedA = new Promise<CloseEvent>((resolve) => a.onClose(resolve));
    // B: autoReconnect does the same on its own
    const b = await connectSocket(socket(), { autoReconnect: { timeoutMs: 30_000, delayMs: 50 } });
    await b.initialize({ clientInfo: { name: "ts-reconnect-auto" } });
    const reconnectedB = new Promise<ReconnectResult>((resolve) => b.onReconnect(resolve));

    const { sessionId } = await a.session.new({ cwd: "/ts-client/reconnect", subscribe: true });
    const before = await a.session.append({
      sessionId,
      entries: [
        { type: "message", message: user("before the restart") },
        { type: "message", message: assistant("noted", { total: 1000 }) },
      ],
    });
    await b.session.subscribe({ sessionId });
    assert.ok(b.subscribedSessions.has(sessionId));
    await b.stats.subscribe({ sessionId, timezone: "UTC" });

    writeFileSync(READY!, `${sessionId}\n`); // pytest now kills and restarts the daemon

    const closed = await closedA;
    assert.equal(closed.expected, false);
    assert.equal(a.connected, false);
    const offline = await a.session.list().then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.ok(SessiondError.is(offline) && offline.connectionClosed, String(offline));

    const result = await a.reconnect({ timeoutMs: 30_000, delayMs: 50 });
    assert.ok(a.connected);
    assert.equal(result.initialize?.serverInfo.name, "sessiond");
    assert.deepEqual(result.resubscribed, [sessionId]);
    assert.deepEqual(result.failed, []);

    const auto = await reconnectedB;
    assert.deepEqual(auto.resubscribed, [sessionId]);
    assert.ok(b.connected);
    // B's stats subscription was made again: the numbers now, then stats_update as usage arrives
    assert.ok(auto.stats !== undefined, "B subscribed to stats again");
    assert.equal(auto.statsError, undefined);
    assert.equal(result.stats, undefined, "A never subscribed to stats");

    // the session survived the restart, and both subscriptions work again
    const loaded = await a.session.load({ sessionId });
    assert.equal(loaded.leafId, before.leafId);
    assert.equal(loaded.entryCount, 2);
    const seenByA = a.nextUpdate("entries_appended", { sessionId });
    const seenByB = b.nextUpdate("entries_appended", { sessionId });
    const statsByB = b.nextUpdate("stats_update", {
      sessionId,
      where: (update) => update.session?.totalTokens === 1500,
      timeoutMs: 60_000, // "it happened at all", on a loaded machine
    });
    const next = await b.session.append({
      sessionId,
      entries: [
        { type: "message", message: user("after") },
        { type: "message", message: assistant("priced", { total: 500 }) },
      ],
    });
    assert.deepEqual((await seenByA).entryIds, next.entryIds);
    assert.deepEqual((await seenByB).entryIds, next.entryIds);
    assert.equal(typeof (await statsByB).today["totalTokens"], "number");
    assert.deepEqual((await a.tree.branch({ sessionId })).entryIds, [...before.entryIds, ...next.entryIds]);

    await a.close();
    await b.close();
  },
);
