// Reaching the daemon: through `sessiond connect` (which starts it when none runs), with a
// message that says what to do when sessiond is not installed or cannot start.

import { connectStdio, defaultSocketPath, SessiondError, type SessiondClient } from "@sessiond/client";
import { dirname } from "node:path";

export interface Settings {
  /** argv of the bridge (default ["sessiond", "connect"]). */
  command: string[];
  /** The store ("" for sessiond's default). */
  store: string;
  /** The daemon's socket ("" for the store's default). */
  socket: string;
  maxSessions: number;
}

export class NotInstalledError extends Error {}

export function explain(err: unknown, command: string[]): Error {
  const error = SessiondError.from(err);
  const code = (error.data as Record<string, unknown> | undefined)?.["errorCode"];
  if (code === "ENOENT") {
    return new NotInstalledError(
      `sessiond is not installed (\`${command[0]}\` was not found). It is not on a package index yet: ` +
        `install it from a clone with \`pipx install ./sessiond\` (or a wheel built by \`scripts/build-wheel\`: ` +
        `\`pipx install dist/sessiond-*.whl\`), or set "sessiond.command" to where it is.`,
    );
  }
  return new Error(`Cannot reach sessiond through \`${command.join(" ")}\`: ${error.message}`);
}

/** Connects, initializes and returns the client; throws an Error whose message a person can act on. */
export async function connect(settings: Settings, env: NodeJS.ProcessEnv = process.env): Promise<SessiondClient> {
  let client: SessiondClient | undefined;
  try {
    client = await connectStdio({
      command: settings.command,
      ...(settings.store ? { store: settings.store } : {}),
      ...(settings.socket ? { socket: settings.socket } : {}),
      env,
      autoReconnect: { timeoutMs: 60_000 },
    });
    await client.initialize({ clientInfo: { name: "sessiond-vscode", version: "0.1.0" } });
    return client;
  } catch (err) {
    client?.dispose();
    throw explain(err, settings.command);
  }
}

/** The directory of the daemon's socket, where it writes ui.json (the viewer's address). */
export function runDir(settings: Settings, env: NodeJS.ProcessEnv = process.env): string {
  if (settings.socket) return dirname(settings.socket);
  return dirname(defaultSocketPath({ ...(settings.store ? { store: settings.store } : {}), env }));
}
