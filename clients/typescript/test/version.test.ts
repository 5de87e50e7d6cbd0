// The protocol version rule, from the client's side: a daemon refuses another major version
// (-32030 naming both), and the client refuses a daemon that accepted it but answered another one.

import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { test } from "node:test";
import { ErrorCodes, PROTOCOL_VERSION, SessiondError, connectSocket } from "@sessiond/client";
import { NO_DAEMON, rejection, socket, workspace } from "./helpers.js";

const T = { timeout: 60_000 };

/** A peer that answers `initialize` with protocol version `version` (Content-Length framing),
 * as a daemon built before the version rule would: it accepts whatever the client speaks. */
function olderDaemon(path: string, version: number): Promise<Server> {
  const answer = (conn: Socket, id: unknown): void => {
    const result = {
      protocolVersion: version,
      serverInfo: { name: "sessiond", version: "9.0.0" },
      capabilities: {},
    };
    const body = Buffer.from(JSON.stringify({ jsonrpc: "2.0", id, result }));
    conn.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  };
  const server = createServer((conn) => {
    let buffer = Buffer.alloc(0);
    conn.on("data", (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const length = Number(/Content-Length: *(\d+)/i.exec(buffer.subarray(0, end).toString())?.[1]);
        if (buffer.length < end + 4 + length) return;
        const message = JSON.parse(buffer.subarray(end + 4, end + 4 + length).toString()) as {
          id?: unknown;
          method?: string;
        };
        buffer = buffer.subarray(end + 4 + length);
        if (message.method === "initialize") answer(conn, message.id);
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

test("a daemon that answers another protocol version is refused by the client", T, async () => {
  const path = join(workspace("version-"), "older.sock");
  const server = await olderDaemon(path, PROTOCOL_VERSION + 1);
  try {
    const client = await connectSocket(path);
    const err = await rejection(client.initialize());
    assert.ok(SessiondError.is(err, ErrorCodes.PROTOCOL_VERSION_MISMATCH), String(err));
    assert.match(
      err.message,
      new RegExp(
        `speaks version ${PROTOCOL_VERSION}, the daemon \\(sessiond 9\\.0\\.0\\) speaks version ${PROTOCOL_VERSION + 1}`,
      ),
    );
    assert.deepEqual(err.data, { clientVersion: PROTOCOL_VERSION, serverVersion: PROTOCOL_VERSION + 1 });
    client.dispose();
  } finally {
    server.close();
  }
});

test("the daemon refuses an initialize for another protocol version", { ...T, skip: NO_DAEMON }, async () => {
  const client = await connectSocket(socket());
  try {
    const err = await rejection(client.request("initialize", { protocolVersion: PROTOCOL_VERSION + 1 }));
    assert.ok(SessiondError.is(err, ErrorCodes.PROTOCOL_VERSION_MISMATCH), String(err));
    assert.match(err.message, /the client speaks version 2, this server \(sessiond\) speaks version 1/);
    // the connection is still there, not initialized: the right version is accepted
    const result = await client.initialize();
    assert.equal(result.protocolVersion, PROTOCOL_VERSION);
  } finally {
    await client.close();
  }
});
