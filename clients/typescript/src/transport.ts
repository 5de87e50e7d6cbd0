// Transports: the daemon's Unix socket, or stdio of a spawned `sessiond connect` bridge.

import { spawn } from "node:child_process";
import net from "node:net";
import {
  SocketMessageReader,
  SocketMessageWriter,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageReader,
  type MessageWriter,
} from "vscode-jsonrpc/node";
import { ClientErrorCodes, SessiondError } from "./errors.js";

/** How a transport ended. */
export interface TransportClosed {
  /** The bridge's exit code (stdio transports). */
  exitCode?: number | null;
  signal?: NodeJS.Signals | null;
  /** The last few kilobytes the bridge wrote on stderr (stdio transports). */
  stderr?: string;
}

/** One open connection's byte streams, as vscode-jsonrpc reads and writes them. */
export interface Transport {
  readonly reader: MessageReader;
  readonly writer: MessageWriter;
  /** Resolves once the transport is gone (socket closed; bridge exited). */
  readonly closed: Promise<TransportClosed>;
  /** Tears it down now (destroys the socket; ends the bridge's stdin, then kills it). */
  dispose(): void;
  /** For messages: `unix:/run/user/1000/sessiond/sessiond.sock`, `stdio:sessiond connect`. */
  readonly description: string;
}

/** Opens a new transport; a client calls it again to reconnect. */
export type TransportFactory = () => Promise<Transport>;

/** The daemon's Unix socket (LSP `Content-Length` framing). */
export function socketTransport(path: string): TransportFactory {
  return () =>
    new Promise<Transport>((resolve, reject) => {
      const socket = net.createConnection(path);
      const failed = (err: NodeJS.ErrnoException) => {
        socket.destroy();
        const hint =
          err.code === "ENOENT" || err.code === "ECONNREFUSED"
            ? " (is the daemon running? start it with `sessiond serve`, or use connectStdio(), which starts it)"
            : "";
        reject(
          new SessiondError(
            ClientErrorCodes.CONNECTION_INACTIVE,
            `cannot connect to sessiond at ${path}: ${err.code ?? err.message}${hint}`,
            { path, errorCode: err.code ?? null },
            undefined,
            { cause: err },
          ),
        );
      };
      socket.once("error", failed);
      socket.once("connect", () => {
        socket.off("error", failed);
        socket.on("error", () => {}); // surfaces as the reader's/writer's close
        const closed = new Promise<TransportClosed>((done) => socket.once("close", () => done({})));
        resolve({
          reader: new SocketMessageReader(socket, "utf-8"),
          writer: new SocketMessageWriter(socket, "utf-8"),
          closed,
          dispose: () => socket.destroy(),
          description: `unix:${path}`,
        });
      });
    });
}

export interface StdioTransportOptions {
  /** argv of the bridge (default `["sessiond", "connect"]`). */
  command?: readonly string[];
  /** Passed as `--store` to the bridge. */
  store?: string;
  /** Passed as `--socket` to the bridge. */
  socket?: string;
  /** The bridge's environment (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Receives what the bridge writes on stderr (it is also kept for error messages). */
  onStderr?: (text: string) => void;
}

const STDERR_TAIL = 8192;

/** stdio of a spawned `sessiond connect`, which bridges to the socket and starts the daemon if needed. */
export function stdioTransport(options: StdioTransportOptions = {}): TransportFactory {
  const [program, ...args] = options.command ?? ["sessiond", "connect"];
  if (program === undefined) throw new TypeError("stdio transport: empty command");
  if (options.store !== undefined) args.push("--store", options.store);
  if (options.socket !== undefined) args.push("--socket", options.socket);
  const description = `stdio:${[program, ...args].join(" ")}`;
  return () =>
    new Promise<Transport>((resolve, reject) => {
      const child = spawn(program, args, {
        stdio: ["pipe", "pipe", "pipe"],
        env: options.env ?? process.env,
        ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      });
      let stderr = "";
      child.stderr.setEncoding("utf-8");
      child.stderr.on("data", (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_TAIL);
        options.onStderr?.(chunk);
      });
      child.stdin.on("error", () => {}); // EPIPE once the bridge is gone: seen as a close
      const closed = new Promise<TransportClosed>((done) =>
        child.once("exit", (exitCode, signal) => done({ exitCode, signal, stderr })),
      );
      child.once("error", (err: NodeJS.ErrnoException) =>
        reject(
          new SessiondError(
            ClientErrorCodes.CONNECTION_INACTIVE,
            `cannot start ${program}: ${err.code ?? err.message}`,
            { command: [program, ...args], errorCode: err.code ?? null },
            undefined,
            { cause: err },
          ),
        ),
      );
      child.once("spawn", () =>
        resolve({
          reader: new StreamMessageReader(child.stdout),
          writer: new StreamMessageWriter(child.stdin),
          closed,
          dispose: () => {
            child.stdin.end();
            if (child.exitCode === null && child.signalCode === null) {
              const timer = setTimeout(() => child.kill("SIGTERM"), 2000);
              timer.unref();
              child.once("exit", () => clearTimeout(timer));
            }
          },
          description,
        }),
      );
    });
}
