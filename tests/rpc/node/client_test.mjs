// A real, third-party JSON-RPC client (npm vscode-jsonrpc) against the sessiond daemon.
//
// Runs one scenario over each transport: the Unix socket (SocketMessageReader/Writer on
// net.createConnection) and stdio through `sessiond connect` (StreamMessageReader/Writer on
// the spawned bridge). Prints a JSON summary of what was received on stdout; on any failure
// it says what failed on stderr and exits 1.
//
// Usage:
//   node client_test.mjs --socket PATH --connect-cmd '["python", "-m", "sessiond", "connect", ...]'
//        --big-socket SESSION_ID --big-stdio SESSION_ID [--transports socket,stdio] [--timeout-ms N]
//
// --connect-cmd is a JSON array (argv of the bridge; it inherits this process's environment,
// so SESSIOND_HOME must be set there). --big-* name a large session already in the store: the
// one the cancellation step loads (one per transport, so the second run cannot hit a cache).

import net from "node:net";
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import rpc from "vscode-jsonrpc/node";

const REQUEST_CANCELLED = -32800;
const INVALID_PARAMS = -32602;

const { values: opts } = parseArgs({
  options: {
    socket: { type: "string" },
    "connect-cmd": { type: "string" },
    "big-socket": { type: "string" },
    "big-stdio": { type: "string" },
    transports: { type: "string", default: "socket,stdio" },
    "timeout-ms": { type: "string", default: "15000" },
  },
});
const TIMEOUT_MS = Number(opts["timeout-ms"]);

class Failure extends Error {}

function check(condition, message, detail) {
  if (!condition) {
    const suffix = detail === undefined ? "" : `: ${JSON.stringify(detail)}`;
    throw new Failure(message + suffix);
  }
}

function withTimeout(promise, what, ms = TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Failure(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function describeError(err) {
  if (err instanceof rpc.ResponseError) {
    return { code: err.code, message: err.message, data: err.data ?? null };
  }
  return { message: String(err?.stack ?? err) };
}

/** A request that must succeed; a JSON-RPC error becomes a Failure naming the method. */
async function call(conn, method, ...args) {
  try {
    return await withTimeout(conn.sendRequest(method, ...args), `the answer to ${method}`);
  } catch (err) {
    if (err instanceof Failure) throw err;
    throw new Failure(`${method} failed: ${JSON.stringify(describeError(err))}`);
  }
}

/** A request that must fail; returns the ResponseError. */
async function callExpectingError(conn, method, ...args) {
  let result;
  try {
    result = await withTimeout(conn.sendRequest(method, ...args), `the answer to ${method}`);
  } catch (err) {
    if (err instanceof Failure) throw err;
    check(err instanceof rpc.ResponseError, `${method} rejected with a non-JSON-RPC error`, describeError(err));
    return err;
  }
  throw new Failure(`${method} was expected to fail but returned ${JSON.stringify(result)}`);
}

/** One vscode-jsonrpc connection with its received notifications. */
class Peer {
  constructor(name, conn, closed, cleanup) {
    this.name = name;
    this.conn = conn;
    this.closed = closed; // resolves once the transport is gone (and the bridge exited, for stdio)
    this.cleanup = cleanup;
    this.updates = []; // session/update params, in arrival order
    this.other = []; // any other notification: [method, params]
    this.errors = [];
    this.waiters = [];
    conn.onNotification("session/update", (params) => {
      this.updates.push(params);
      this.waiters = this.waiters.filter((w) => !w.poll());
    });
    conn.onUnhandledNotification((msg) => this.other.push([msg.method, msg.params ?? null]));
    conn.onError(([err]) => this.errors.push(String(err?.message ?? err)));
    conn.listen();
  }

  /** Wait for a session/update of `sessionId` whose `update` satisfies `predicate`. */
  waitForUpdate(sessionId, predicate, what) {
    const find = () =>
      this.updates.find((u) => u.sessionId === sessionId && predicate(u.update))?.update;
    return withTimeout(
      new Promise((resolve) => {
        const waiter = {
          poll: () => {
            const found = find();
            if (found !== undefined) resolve(found);
            return found !== undefined;
          },
        };
        if (!waiter.poll()) this.waiters.push(waiter);
      }),
      `${what} on ${this.name}`,
    );
  }

  /** The updates received for `sessionId`, in arrival order. */
  received(sessionId) {
    return this.updates.filter((u) => u.sessionId === sessionId).map((u) => u.update);
  }
}

function openSocket(name) {
  return new Promise((resolve, reject) => {
    const sock = net.createConnection(opts.socket);
    sock.once("error", reject);
    sock.once("connect", () => {
      sock.off("error", reject);
      sock.on("error", () => {}); // reported through the connection's onError/onClose
      const conn = rpc.createMessageConnection(
        new rpc.SocketMessageReader(sock, "utf-8"),
        new rpc.SocketMessageWriter(sock, "utf-8"),
      );
      const closed = new Promise((res) => sock.once("close", () => res({ socketClosed: true })));
      resolve(new Peer(name, conn, closed, () => sock.destroy()));
    });
  });
}

function openStdio(name) {
  const argv = JSON.parse(opts["connect-cmd"]);
  const child = spawn(argv[0], argv.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += chunk.toString();
  });
  const conn = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.StreamMessageWriter(child.stdin),
  );
  const closed = new Promise((res) =>
    child.once("exit", (code, signal) => res({ bridgeExitCode: code, bridgeSignal: signal, stderr })),
  );
  child.stdin.on("error", () => {}); // EPIPE after the bridge exits is reported by the checks
  return new Peer(name, conn, closed, () => child.kill("SIGTERM"));
}

async function initialize(peer) {
  const result = await call(peer.conn, "initialize", {
    protocolVersion: 1,
    clientInfo: { name: "vscode-jsonrpc-test", version: "1.0" },
    capabilities: {},
  });
  check(result?.protocolVersion === 1, "initialize: protocolVersion is not 1", result);
  check(result?.serverInfo?.name === "sessiond", "initialize: serverInfo.name is not sessiond", result);
  await peer.conn.sendNotification("initialized", {});
  return result;
}

function userMessage(text) {
  return { role: "user", content: [{ type: "text", text }], timestamp: Date.now() };
}

function assistantMessage(text, totalTokens) {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: {
      input: totalTokens - 100,
      output: 100,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: Date.now(),
  };
}

async function shutdownAndExit(peer) {
  const result = await call(peer.conn, "shutdown");
  check(result === null, `shutdown on ${peer.name} did not return null`, result);
  await peer.conn.sendNotification("exit");
  const closed = await withTimeout(peer.closed, `the server to close ${peer.name} after exit`);
  peer.conn.dispose();
  return closed;
}

async function scenario(transport, bigSession) {
  const open = transport === "socket" ? openSocket : openStdio;
  const out = { transport };
  const peers = [];
  try {
    // 1. connect, initialize + initialized
    const a = await open(`${transport}/A`);
    peers.push(a);
    out.initialize = await initialize(a);

    // 2. session/new, subscribed
    const created = await call(a.conn, "session/new", { cwd: `/node-client/${transport}`, subscribe: true });
    check(typeof created?.sessionId === "string" && created.sessionId.length > 0, "session/new: no sessionId", created);
    const sid = created.sessionId;
    out.session = created;

    // 3. append model_change + user + assistant (usage: 50 000 tokens)
    const appended = await call(a.conn, "session/append", {
      sessionId: sid,
      entries: [
        { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" },
        { type: "message", message: userMessage(`hello from vscode-jsonrpc over ${transport}`) },
        { type: "message", message: assistantMessage(`hi, ${transport}`, 50_000) },
      ],
    });
    check(Array.isArray(appended?.entryIds) && appended.entryIds.length === 3, "session/append: not 3 entryIds", appended);
    out.firstAppend = appended;

    // 4. the subscription's updates: entries_appended for those 3, and usage_update 50 000 / 200 000
    const ids = appended.entryIds;
    const entriesAppended = await a.waitForUpdate(
      sid,
      (u) => u.sessionUpdate === "entries_appended" && JSON.stringify(u.entryIds) === JSON.stringify(ids),
      "entries_appended for the first append",
    );
    check(
      JSON.stringify(entriesAppended.types) === JSON.stringify(["model_change", "message", "message"]),
      "entries_appended: wrong types",
      entriesAppended,
    );
    check(entriesAppended.leafId === ids[2], "entries_appended: leafId is not the last entry", entriesAppended);
    const usage = await a.waitForUpdate(
      sid,
      (u) => u.sessionUpdate === "usage_update" && u.used === 50_000,
      "usage_update with used 50000",
    );
    check(usage.size === 200_000, "usage_update: size is not 200000", usage);
    out.entriesAppended = entriesAppended;
    out.usageUpdate = usage;

    // 5. a second connection subscribes and sees an append made by the first
    const b = await open(`${transport}/B`);
    peers.push(b);
    await initialize(b);
    const subscribed = await call(b.conn, "session/subscribe", { sessionId: sid });
    check(subscribed?.sessionId === sid && subscribed.entryCount === 3, "session/subscribe: unexpected result", subscribed);
    const second = await call(a.conn, "session/append", {
      sessionId: sid,
      entries: [{ type: "message", message: userMessage("seen by the second connection") }],
    });
    const seenByB = await b.waitForUpdate(
      sid,
      (u) => u.sessionUpdate === "entries_appended" && u.entryIds.includes(second.entryIds[0]),
      "entries_appended for the second append",
    );
    check(
      seenByB.entryIds.length === 1 && seenByB.parentIds[0] === ids[2] && seenByB.leafId === second.entryIds[0],
      "second connection: unexpected entries_appended",
      seenByB,
    );
    await a.waitForUpdate(
      sid,
      (u) => u.sessionUpdate === "entries_appended" && u.entryIds.includes(second.entryIds[0]),
      "entries_appended for the second append (first connection)",
    );
    out.secondAppend = second;
    out.secondConnection = { subscribe: subscribed, entriesAppended: seenByB };

    // 6. cancellation: load a big session and cancel at once -> -32800, connection still usable
    const cts = new rpc.CancellationTokenSource();
    const started = Date.now();
    const loading = a.conn.sendRequest("session/load", { sessionId: bigSession }, cts.token);
    cts.cancel();
    let cancelError;
    try {
      const result = await withTimeout(loading, "the answer to the cancelled session/load", 60_000);
      throw new Failure(`the cancelled session/load succeeded (entryCount ${result?.entryCount})`);
    } catch (err) {
      if (err instanceof Failure) throw err;
      cancelError = err;
    }
    check(cancelError instanceof rpc.ResponseError, "cancelled session/load: not a ResponseError", describeError(cancelError));
    check(cancelError.code === REQUEST_CANCELLED, "cancelled session/load: wrong error code", describeError(cancelError));
    out.cancel = { ...describeError(cancelError), elapsedMs: Date.now() - started };

    // 7. requests without params: session/list is answered; session/load reports the missing field
    const listed = await call(a.conn, "session/list");
    check(Array.isArray(listed?.sessions), "session/list without params: no sessions array", listed);
    const listedIds = listed.sessions.map((s) => s.sessionId);
    check(listedIds.includes(sid), "session/list without params: the new session is missing", listedIds);
    const missing = await callExpectingError(a.conn, "session/load");
    check(
      missing.code === INVALID_PARAMS && missing.data?.field === "sessionId",
      "session/load without params: expected -32602 with data.field sessionId",
      describeError(missing),
    );
    out.listWithoutParams = { count: listed.sessions.length, sessionIds: listedIds };
    out.loadWithoutParams = describeError(missing);

    // 8. shutdown + exit on both connections
    out.close = {};
    for (const peer of [b, a]) {
      out.close[peer.name] = await shutdownAndExit(peer);
      if (transport === "stdio") {
        const closed = out.close[peer.name];
        check(closed.bridgeExitCode === 0, `sessiond connect (${peer.name}) exited badly`, closed);
      }
    }
    out.updates = { A: a.received(sid), B: b.received(sid) };
    out.otherNotifications = { A: a.other.map(([m]) => m), B: b.other.map(([m]) => m) };
    out.connectionErrors = [...a.errors, ...b.errors];
    return out;
  } finally {
    for (const peer of peers) {
      try {
        peer.conn.dispose();
      } catch {
        // already disposed
      }
      peer.cleanup();
    }
  }
}

async function main() {
  const summary = { ok: false, vscodeJsonrpc: true, runs: {} };
  const transports = opts.transports.split(",").filter(Boolean);
  let failed = false;
  for (const transport of transports) {
    try {
      if (transport === "socket") {
        check(opts.socket && opts["big-socket"], "--socket and --big-socket are required");
        summary.runs.socket = await scenario("socket", opts["big-socket"]);
      } else if (transport === "stdio") {
        check(opts["connect-cmd"] && opts["big-stdio"], "--connect-cmd and --big-stdio are required");
        summary.runs.stdio = await scenario("stdio", opts["big-stdio"]);
      } else {
        throw new Failure(`unknown transport ${transport}`);
      }
    } catch (err) {
      failed = true;
      const message = err instanceof Failure ? err.message : String(err?.stack ?? err);
      summary.runs[transport] = { transport, error: message };
      process.stderr.write(`FAIL [${transport}] ${message}\n`);
    }
  }
  summary.ok = !failed;
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n");
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  process.stderr.write(`FAIL ${String(err?.stack ?? err)}\n`);
  process.exitCode = 1;
});
