// @sessiond/client against a real daemon (started by tests/clients/typescript/test_typescript_client.py).
// `sessiond connect` over stdio, and what connection failures look like.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ClientErrorCodes, SessiondError, connectSocket, connectStdio } from "@sessiond/client";
import { CONNECT, NO_DAEMON, rejection, user } from "./helpers.js";

const T = { timeout: 60_000 };

describe("connectStdio through `sessiond connect`", { skip: NO_DAEMON || (CONNECT ? false : "no connect command") }, () => {
  test("initialize, a request, close (the bridge exits)", T, async () => {
    let stderr = "";
    const client = await connectStdio({ command: CONNECT!, onStderr: (t) => (stderr += t) });
    const closed: boolean[] = [];
    client.onClose((e) => closed.push(e.expected));
    assert.match(client.description, /^stdio:/);
    const init = await client.initialize();
    assert.equal(init.serverInfo.name, "sessiond");
    const { sessionId } = await client.session.new({ cwd: "/ts-client/stdio", subscribe: true });
    const appended = client.nextUpdate("entries_appended", { sessionId });
    await client.session.append({ sessionId, entries: [{ type: "message", message: user("over stdio") }] });
    assert.deepEqual((await appended).types, ["message"]);
    await client.close();
    assert.deepEqual(closed, [true]);
    assert.equal(client.connected, false);
    const after = await rejection(client.session.list());
    assert.ok(SessiondError.is(after, ClientErrorCodes.CONNECTION_INACTIVE), String(after));
    assert.ok(after.connectionClosed);
    assert.equal(stderr.includes("Traceback"), false, stderr);
  });
});

describe("connection failures", () => {
  test("connecting to a socket nobody listens on", async () => {
    const error = await rejection(connectSocket("/nonexistent/sessiond.sock"));
    assert.ok(SessiondError.is(error, ClientErrorCodes.CONNECTION_INACTIVE), String(error));
    assert.match(error.message, /cannot connect to sessiond at \/nonexistent\/sessiond.sock: ENOENT/);
  });

  test("a bridge that cannot start", async () => {
    const error = await rejection(connectStdio({ command: ["/nonexistent/sessiond", "connect"] }));
    assert.ok(SessiondError.is(error, ClientErrorCodes.CONNECTION_INACTIVE), String(error));
  });

  test("a bridge that exits: pending requests fail with CONNECTION_CLOSED and its stderr", async () => {
    const script = "process.stderr.write('no daemon here\\n'); process.exit(4)";
    const client = await connectStdio({ command: [process.execPath, "-e", script] });
    const error = await rejection(client.initialize());
    assert.ok(error instanceof SessiondError, String(error));
    assert.ok(error.connectionClosed, `${error.code} ${error.message}`);
    assert.match(error.message, /exited with 4: no daemon here/);
    client.dispose();
  });
});
