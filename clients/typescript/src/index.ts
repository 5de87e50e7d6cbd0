// @sessiond/client — a typed TypeScript client for sessiond, built on vscode-jsonrpc.

export {
  SessiondClient,
  connectSocket,
  connectStdio,
  type ClientOptions,
  type CloseEvent,
  type InitializeOptions,
  type Params,
  type ReconnectOptions,
  type ReconnectResult,
  type RequestArgs,
  type RequestOptions,
  type Result,
  type SocketConnectOptions,
  type StdioConnectOptions,
  type SummarizeHandler,
} from "./client.js";
export { SessiondError, ClientErrorCodes, type SessiondErrorData } from "./errors.js";
export { defaultSocketPath, defaultStore, type Env, type SocketDiscoveryOptions } from "./discovery.js";
export {
  socketTransport,
  stdioTransport,
  type StdioTransportOptions,
  type Transport,
  type TransportClosed,
  type TransportFactory,
} from "./transport.js";
export type { FileCheckpoint, FileDiff, FileState, RewindFile } from "./filehistory.js";
export { CLIENT_VERSION } from "./version.js";
export { CancellationTokenSource, type CancellationToken, type Disposable } from "vscode-jsonrpc/node";
export * from "./generated/protocol.js";
