// The client: one vscode-jsonrpc connection to sessiond, typed from the generated protocol.

import {
  CancellationTokenSource,
  ResponseError,
  createMessageConnection,
  type CancellationToken,
  type Disposable,
  type Logger,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { ClientErrorCodes, SessiondError } from "./errors.js";
import { defaultSocketPath, type SocketDiscoveryOptions } from "./discovery.js";
import {
  ErrorCodes,
  METHODS,
  PROTOCOL_VERSION,
  bindMethods,
  type ClientCapabilities,
  type ClientInfo,
  type CompactionMethods,
  type ContextMethods,
  type DaemonMethods,
  type FileHistoryMethods,
  type InitializeParams,
  type InitializeResult,
  type MethodGroups,
  type MethodName,
  type MethodParams,
  type MethodResult,
  type NotificationName,
  type Notifications,
  type ProgressValue,
  type ServerRequestName,
  type ServerRequests,
  type SearchMethods,
  type SessionMethods,
  type SessionUpdate,
  type SessionUpdateName,
  type StatsMethods,
  type StatsUpdateResult,
  type SummarizeParams,
  type SummarizeResult,
  type TreeMethods,
  type UpdateOf,
} from "./generated/protocol.js";
import {
  socketTransport,
  stdioTransport,
  type StdioTransportOptions,
  type Transport,
  type TransportClosed,
  type TransportFactory,
} from "./transport.js";
import { CLIENT_VERSION } from "./version.js";

export type { CancellationToken, Disposable } from "vscode-jsonrpc/node";

/** Per-request options. */
export interface RequestOptions {
  /** vscode-jsonrpc cancellation: cancelling sends `$/cancelRequest`; the request then fails with -32800. */
  token?: CancellationToken;
  /** The same with an AbortSignal. */
  signal?: AbortSignal;
  /** Cancel the request (as above) when it has not been answered after this many milliseconds. */
  timeoutMs?: number;
  /** Long-running methods only: a `workDoneToken` is added and its `$/progress` values come here. */
  onProgress?: (value: ProgressValue) => void;
}

/** `request`'s arguments after the method: params may be left out when every field is optional. */
export type RequestArgs<M extends MethodName> =
  {} extends MethodParams<M>
    ? [params?: MethodParams<M>, options?: RequestOptions]
    : [params: MethodParams<M>, options?: RequestOptions];

/** Aliases: `Params<"session/new">` is `NewParams`, `Result<"session/new">` is `NewResult`. */
export type Params<M extends MethodName> = MethodParams<M>;
export type Result<M extends MethodName> = MethodResult<M>;

export interface InitializeOptions {
  /** Default `{name: "@sessiond/client", version}`. */
  clientInfo?: ClientInfo;
  /** `summarizer` defaults to whether an `onSummarize` handler is registered. */
  capabilities?: ClientCapabilities;
  /** Notification methods or `session/update` kinds not to receive (e.g. `["usage_update"]`). */
  optOut?: string[];
  /** TCP only: the content of the server's token file. */
  authToken?: string;
}

export interface ReconnectOptions {
  /** Give up after this long (default 30 000 ms). */
  timeoutMs?: number;
  /** First delay between attempts (default 100 ms), doubled up to `maxDelayMs` (default 2 000 ms). */
  delayMs?: number;
  maxDelayMs?: number;
  /** Subscribe again to the sessions this client was subscribed to (default true). */
  resubscribe?: boolean;
  signal?: AbortSignal;
}

export interface ReconnectResult {
  /** The new `initialize` answer (undefined when the client had not initialized). */
  initialize: InitializeResult | undefined;
  /** Sessions subscribed again. */
  resubscribed: string[];
  /** Sessions that could not be (deleted meanwhile...): dropped from the subscriptions. */
  failed: { sessionId: string; error: SessiondError }[];
  /**
   * The numbers now, when the client had called `stats/subscribe` (subscribed again with the
   * same params, so `stats_update` keeps coming); undefined otherwise.
   */
  stats?: StatsUpdateResult;
  /** Why `stats/subscribe` could not be made again (its session deleted meanwhile...): dropped. */
  statsError?: SessiondError;
  attempts: number;
}

export interface CloseEvent {
  /** True when `close()`/`dispose()` asked for it; false when the daemon or transport went away. */
  expected: boolean;
  transport: TransportClosed;
}

export interface ClientOptions {
  /** On an unexpected close, reconnect (and re-initialize, re-subscribe) on its own. */
  autoReconnect?: boolean | ReconnectOptions;
  /** vscode-jsonrpc's logger (default: silent). */
  logger?: Logger;
}

export type SummarizeHandler = (
  params: SummarizeParams,
  token: CancellationToken,
) => SummarizeResult | Promise<SummarizeResult>;

type Handler = (params: unknown) => void;
type RequestHandler = (params: unknown, token: CancellationToken) => unknown;

const SILENT: Logger = { error: () => {}, warn: () => {}, info: () => {}, log: () => {} };
const SUBSCRIBING = new Set<string>(["session/new", "session/load", "session/subscribe"]);
const UNSUBSCRIBING = new Set<string>(["session/unsubscribe", "session/close", "session/delete"]);

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** `promise`, or `fallback` after `ms` — the timer is cleared either way (nothing keeps Node alive). */
function within<T, F>(promise: Promise<T>, ms: number, fallback: F): Promise<T | F> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<F>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
}

/**
 * A connection to sessiond. Get one with `connectSocket()` or `connectStdio()`, then
 * `initialize()`. Every method is available typed, generically (`request("tree/get", {...})`)
 * and grouped (`client.tree.get({...})`).
 */
export class SessiondClient implements MethodGroups<RequestOptions> {
  readonly daemon: DaemonMethods<RequestOptions>;
  readonly session: SessionMethods<RequestOptions>;
  readonly tree: TreeMethods<RequestOptions>;
  readonly context: ContextMethods<RequestOptions>;
  readonly compaction: CompactionMethods<RequestOptions>;
  readonly fileHistory: FileHistoryMethods<RequestOptions>;
  readonly search: SearchMethods<RequestOptions>;
  readonly stats: StatsMethods<RequestOptions>;

  private conn: MessageConnection | undefined;
  private transport: Transport | undefined;
  private generation = 0;
  private open = false;
  private closing = false;
  private lastClose: TransportClosed = {};
  private reconnecting: Promise<ReconnectResult> | undefined;
  private initOptions: InitializeOptions | undefined;
  private progressCounter = 0;
  private readonly subscriptions = new Set<string>();
  private listSubscribed = false;
  /** The last `stats/subscribe` params (undefined: not subscribed), for `reconnect()`. */
  private statsSubscription: Record<string, unknown> | undefined;
  private readonly notificationHandlers = new Map<string, Set<Handler>>();
  private readonly requestHandlers = new Map<string, RequestHandler>();
  private readonly progressCallbacks = new Map<string | number, (value: ProgressValue) => void>();
  private readonly closeHandlers = new Set<(event: CloseEvent) => void>();
  private readonly reconnectHandlers = new Set<(result: ReconnectResult) => void>();
  private readonly errorHandlers = new Set<(error: Error) => void>();

  private constructor(
    private readonly factory: TransportFactory,
    private readonly options: ClientOptions,
  ) {
    const groups = bindMethods<RequestOptions>((method, params, opts) => this.send(method, params, opts));
    this.daemon = groups.daemon;
    this.session = groups.session;
    this.tree = groups.tree;
    this.context = groups.context;
    this.compaction = groups.compaction;
    this.fileHistory = groups.fileHistory;
    this.search = groups.search;
    this.stats = groups.stats;
  }

  /** Connects through any transport factory (what `connectSocket`/`connectStdio` use). */
  static async connect(factory: TransportFactory, options: ClientOptions = {}): Promise<SessiondClient> {
    const client = new SessiondClient(factory, options);
    await client.attach();
    return client;
  }

  /** Whether the connection is open (false while reconnecting and after close). */
  get connected(): boolean {
    return this.open;
  }

  /** `unix:PATH` or `stdio:COMMAND`. */
  get description(): string {
    return this.transport?.description ?? "closed";
  }

  /** The underlying vscode-jsonrpc connection (undefined when closed), for what this API lacks. */
  get connection(): MessageConnection | undefined {
    return this.conn;
  }

  /** The sessions this connection is subscribed to (as the client tracked it). */
  get subscribedSessions(): ReadonlySet<string> {
    return this.subscriptions;
  }

  // ---- lifecycle -----------------------------------------------------------------------

  /**
   * `initialize` then `initialized`. Register `onSummarize` first to be offered
   * `compaction/summarize` (or set `capabilities.summarizer`). Remembered for `reconnect()`.
   */
  async initialize(options: InitializeOptions = {}): Promise<InitializeResult> {
    const result = await this.sendInitialize(options, false);
    this.initOptions = options;
    return result;
  }

  private async sendInitialize(options: InitializeOptions, duringReconnect: boolean): Promise<InitializeResult> {
    const capabilities: ClientCapabilities = { ...options.capabilities };
    if (capabilities.summarizer === undefined) {
      capabilities.summarizer = this.requestHandlers.has("compaction/summarize");
    }
    if (options.optOut !== undefined) {
      capabilities.notifications = { optOut: [...(capabilities.notifications?.optOut ?? []), ...options.optOut] };
    }
    const params: InitializeParams = {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: options.clientInfo ?? { name: "@sessiond/client", version: CLIENT_VERSION },
      capabilities,
      ...(options.authToken !== undefined ? { authToken: options.authToken } : {}),
    };
    const result = await this.send("initialize", params, undefined, duringReconnect);
    if (result.protocolVersion !== PROTOCOL_VERSION) {
      // A daemon without the version rule accepted us but speaks another version: refuse it.
      const server = result.serverInfo;
      const newer = result.protocolVersion > PROTOCOL_VERSION;
      throw new SessiondError(
        ErrorCodes.PROTOCOL_VERSION_MISMATCH,
        `Protocol version mismatch: this client (@sessiond/client ${CLIENT_VERSION}) speaks version ` +
          `${PROTOCOL_VERSION}, the daemon (${server.name} ${server.version}) speaks version ` +
          `${result.protocolVersion}; upgrade the ${newer ? "client" : "daemon"}`,
        { clientVersion: PROTOCOL_VERSION, serverVersion: result.protocolVersion },
        "initialize",
      );
    }
    await this.conn?.sendNotification("initialized", {});
    return result;
  }

  /**
   * `shutdown` + `exit`, then closes the transport (waiting for a spawned bridge to exit).
   * Never rejects; pending requests fail with CONNECTION_CLOSED.
   */
  async close(timeoutMs = 3000): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const conn = this.conn;
    const transport = this.transport;
    let exited = false;
    if (conn !== undefined && this.open) {
      const cts = new CancellationTokenSource();
      const timer = setTimeout(() => cts.cancel(), timeoutMs);
      try {
        await conn.sendRequest("shutdown", {}, cts.token);
        await conn.sendNotification("exit");
        exited = true;
      } catch {
        // not initialized, already gone, too slow...: closing anyway
      } finally {
        clearTimeout(timer);
        cts.dispose();
      }
    }
    if (transport !== undefined && exited) {
      // the daemon closes the connection after `exit` (a bridge then exits)
      await within(transport.closed, timeoutMs, undefined);
    }
    this.teardown();
  }

  /** Closes at once, without `shutdown`. */
  dispose(): void {
    this.closing = true;
    this.teardown();
  }

  private teardown(): void {
    const wasOpen = this.open;
    this.open = false;
    this.conn?.dispose();
    this.transport?.dispose();
    if (wasOpen) this.emitClose({ expected: true, transport: this.lastClose });
  }

  /**
   * Opens a new connection through the same transport (a restarted daemon's socket, a new
   * `sessiond connect`), retrying until `timeoutMs`; then initializes with the same options
   * and subscribes again to the sessions this client was subscribed to. Requests made
   * meanwhile wait for it. Updates sent while disconnected are lost: reload what you show.
   */
  reconnect(options: ReconnectOptions = {}): Promise<ReconnectResult> {
    if (this.reconnecting === undefined) {
      this.closing = false;
      this.reconnecting = this.doReconnect(options).finally(() => {
        this.reconnecting = undefined;
      });
    }
    return this.reconnecting;
  }

  private async doReconnect(options: ReconnectOptions): Promise<ReconnectResult> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    let delay = options.delayMs ?? 100;
    let attempts = 0;
    this.open = false;
    this.conn?.dispose();
    this.transport?.dispose();
    let initialize: InitializeResult | undefined;
    for (;;) {
      attempts += 1;
      try {
        await this.attach();
        if (this.initOptions !== undefined) initialize = await this.sendInitialize(this.initOptions, true);
        break;
      } catch (err) {
        this.open = false;
        this.conn?.dispose();
        this.transport?.dispose();
        const error = SessiondError.from(err);
        if (options.signal?.aborted || Date.now() + delay > deadline) {
          throw new SessiondError(
            error.code,
            `could not reconnect to sessiond after ${attempts} attempt(s): ${error.message}`,
            error.data,
            undefined,
            { cause: err },
          );
        }
        await sleep(delay, options.signal);
        delay = Math.min(delay * 2, options.maxDelayMs ?? 2000);
      }
    }
    const result: ReconnectResult = { initialize, resubscribed: [], failed: [], attempts };
    if (options.resubscribe ?? true) {
      for (const sessionId of [...this.subscriptions]) {
        try {
          await this.send("session/subscribe", { sessionId }, undefined, true);
          result.resubscribed.push(sessionId);
        } catch (err) {
          this.subscriptions.delete(sessionId);
          result.failed.push({ sessionId, error: SessiondError.from(err, "session/subscribe") });
        }
      }
      if (this.listSubscribed) {
        await this.send("session/list", { subscribe: true, limit: 1 }, undefined, true).catch(() => {});
      }
      if (this.statsSubscription !== undefined) {
        try {
          result.stats = await this.send("stats/subscribe", this.statsSubscription, undefined, true);
        } catch (err) {
          this.statsSubscription = undefined;
          result.statsError = SessiondError.from(err, "stats/subscribe");
        }
      }
    }
    for (const handler of this.reconnectHandlers) this.safely(() => handler(result));
    return result;
  }

  private async attach(): Promise<void> {
    const transport = await this.factory();
    const conn = createMessageConnection(transport.reader, transport.writer, this.options.logger ?? SILENT);
    const generation = ++this.generation;
    this.transport = transport;
    this.conn = conn;
    this.lastClose = {};
    conn.onNotification((method: string, params: unknown) => this.dispatchNotification(method, params));
    // vscode-jsonrpc routes `$/progress` itself: what no `onProgress(type, token)` claimed comes here
    conn.onUnhandledProgress((params) => this.dispatchNotification("$/progress", params));
    conn.onRequest((method: string, params: unknown, token: CancellationToken) =>
      this.dispatchRequest(method, params, token),
    );
    conn.onError(([error]) => {
      for (const handler of this.errorHandlers) this.safely(() => handler(error));
    });
    conn.onClose(() => void this.connectionClosed(generation));
    conn.listen();
    this.open = true;
  }

  private async connectionClosed(generation: number): Promise<void> {
    if (generation !== this.generation || !this.open) return;
    this.open = false;
    const transport = this.transport;
    this.conn?.dispose(); // rejects the pending requests (CONNECTION_CLOSED)
    this.lastClose = transport ? await within(transport.closed, 500, {}) : {};
    if (generation !== this.generation) return;
    transport?.dispose();
    const expected = this.closing;
    this.emitClose({ expected, transport: this.lastClose });
    const auto = this.options.autoReconnect;
    if (!expected && auto) {
      this.reconnect(auto === true ? {} : auto).catch((err: unknown) => {
        const error = SessiondError.from(err);
        for (const handler of this.errorHandlers) this.safely(() => handler(error));
      });
    }
  }

  private emitClose(event: CloseEvent): void {
    for (const handler of this.closeHandlers) this.safely(() => handler(event));
  }

  // ---- requests ------------------------------------------------------------------------

  /** Any method, typed by the schema: `await client.request("context/get", {sessionId})`. */
  request<M extends MethodName>(method: M, ...args: RequestArgs<M>): Promise<MethodResult<M>> {
    const [params, options] = args;
    return this.send(method, params as MethodParams<M>, options);
  }

  private async send<M extends MethodName>(
    method: M,
    params: MethodParams<M> | undefined,
    options?: RequestOptions,
    duringReconnect = false,
  ): Promise<MethodResult<M>> {
    if (this.reconnecting !== undefined && !duringReconnect) await this.reconnecting.catch(() => undefined);
    const conn = this.conn;
    if (conn === undefined || !this.open) {
      throw new SessiondError(
        ClientErrorCodes.CONNECTION_INACTIVE,
        `not connected to sessiond (${method}); reconnect() first`,
        undefined,
        method,
      );
    }
    if (options?.signal?.aborted || options?.token?.isCancellationRequested) {
      // Not sent at all: vscode-jsonrpc sends the request, then its $/cancelRequest once written,
      // and a daemon that answered first gave a result to a caller who had already cancelled.
      throw new SessiondError(ErrorCodes.REQUEST_CANCELLED, `${method} was cancelled before it was sent`, undefined, method);
    }
    let body: Record<string, unknown> = { ...record(params) };
    let progressToken: string | number | undefined;
    if (options?.onProgress !== undefined) {
      if (!METHODS[method].longRunning) throw new TypeError(`${method} does not report progress`);
      const given = body["workDoneToken"];
      progressToken =
        typeof given === "string" || typeof given === "number" ? given : `sessiond-client-${++this.progressCounter}`;
      body = { ...body, workDoneToken: progressToken };
      this.progressCallbacks.set(progressToken, options.onProgress);
    }
    const { token, release } = this.tokenFor(options);
    try {
      const result = (await (token !== undefined
        ? conn.sendRequest(method, body, token)
        : conn.sendRequest(method, body))) as MethodResult<M>;
      this.track(method, body, result);
      return result;
    } catch (err) {
      throw await this.failure(err, method);
    } finally {
      release();
      if (progressToken !== undefined) this.progressCallbacks.delete(progressToken);
    }
  }

  private async failure(err: unknown, method: string): Promise<SessiondError> {
    const error = SessiondError.from(err, method);
    if (!error.connectionClosed) return error;
    // say why the transport went away when it knows (e.g. `sessiond connect` could not start a daemon)
    const transport = this.transport;
    const closed = transport ? await within(transport.closed, 200, undefined) : undefined;
    const info = closed ?? this.lastClose;
    if (info.exitCode === undefined && !info.stderr) return error;
    const why = `${this.description} exited with ${info.exitCode ?? info.signal}${info.stderr ? `: ${info.stderr.trim()}` : ""}`;
    return new SessiondError(error.code, `${error.message} (${why})`, error.data, method, { cause: err });
  }

  private tokenFor(options?: RequestOptions): { token: CancellationToken | undefined; release: () => void } {
    if (options === undefined) return { token: undefined, release: () => {} };
    const { token, signal, timeoutMs } = options;
    if (signal === undefined && timeoutMs === undefined) return { token, release: () => {} };
    const source = new CancellationTokenSource();
    const cancel = () => source.cancel();
    const linked = token?.onCancellationRequested(cancel);
    if (token?.isCancellationRequested) cancel();
    if (signal?.aborted) cancel();
    signal?.addEventListener("abort", cancel);
    const timer = timeoutMs !== undefined ? setTimeout(cancel, timeoutMs) : undefined;
    return {
      token: source.token,
      release: () => {
        linked?.dispose();
        signal?.removeEventListener("abort", cancel);
        if (timer !== undefined) clearTimeout(timer);
        source.dispose();
      },
    };
  }

  /** Keeps the set of subscribed sessions (and the stats subscription) for `reconnect()`. */
  private track(method: string, params: Record<string, unknown>, result: unknown): void {
    if (method === "stats/subscribe") {
      this.statsSubscription = { ...params };
      return;
    }
    if (method === "stats/unsubscribe") {
      this.statsSubscription = undefined;
      return;
    }
    if (SUBSCRIBING.has(method) && (method === "session/subscribe" || params["subscribe"] === true)) {
      const sessionId = method === "session/new" ? record(result)["sessionId"] : params["sessionId"];
      if (typeof sessionId === "string") this.subscriptions.add(sessionId);
    } else if (UNSUBSCRIBING.has(method) && typeof params["sessionId"] === "string") {
      this.subscriptions.delete(params["sessionId"]);
    } else if (method === "session/list" && params["subscribe"] === true) {
      this.listSubscribed = true;
    }
  }

  // ---- notifications -------------------------------------------------------------------

  /** A notification by method, typed for the protocol's: `session/update`, `$/progress`, `window/logMessage`. */
  onNotification<N extends NotificationName>(method: N, handler: (params: Notifications[N]) => void): Disposable;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  onNotification(method: string, handler: Handler): Disposable {
    let handlers = this.notificationHandlers.get(method);
    if (handlers === undefined) {
      handlers = new Set();
      this.notificationHandlers.set(method, handlers);
    }
    const set = handlers;
    set.add(handler);
    return { dispose: () => void set.delete(handler) };
  }

  /**
   * Every `session/update` of the sessions this connection subscribed to. `params.update` is
   * a union discriminated by `sessionUpdate`: `switch (params.update.sessionUpdate) {...}`.
   */
  onSessionUpdate(handler: (params: SessionUpdate) => void): Disposable {
    return this.onNotification("session/update", handler);
  }

  /** The updates of one kind, e.g. `onUpdate("usage_update", (u) => u.percent)`; optionally of one session. */
  onUpdate<K extends SessionUpdateName>(
    kind: K,
    handler: (update: UpdateOf<K>, sessionId: string) => void,
    filter: { sessionId?: string } = {},
  ): Disposable {
    return this.onSessionUpdate(({ sessionId, update }) => {
      if (update.sessionUpdate !== kind) return;
      if (filter.sessionId !== undefined && filter.sessionId !== sessionId) return;
      handler(update as UpdateOf<K>, sessionId);
    });
  }

  /**
   * The next update of one kind (of one session, matching `where`): subscribe first, then
   * do what causes it. Rejects after `timeoutMs` (default 10 000) or when `signal` aborts.
   */
  nextUpdate<K extends SessionUpdateName>(
    kind: K,
    options: {
      sessionId?: string;
      where?: (update: UpdateOf<K>) => boolean;
      timeoutMs?: number;
      signal?: AbortSignal;
    } = {},
  ): Promise<UpdateOf<K>> {
    return new Promise((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? 10_000;
      const finish = (fn: () => void) => {
        subscription.dispose();
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", aborted);
        fn();
      };
      const subscription = this.onUpdate(
        kind,
        (update) => {
          if (options.where === undefined || options.where(update)) finish(() => resolve(update));
        },
        options.sessionId !== undefined ? { sessionId: options.sessionId } : {},
      );
      const timer = setTimeout(
        () => finish(() => reject(new Error(`no ${kind} update within ${timeoutMs} ms`))),
        timeoutMs,
      );
      const aborted = () => finish(() => reject(new Error(`waiting for ${kind} was aborted`)));
      if (options.signal?.aborted) aborted();
      options.signal?.addEventListener("abort", aborted);
    });
  }

  /** Every `$/progress` (requests with `onProgress` also get their own). */
  onProgress(handler: (params: Notifications["$/progress"]) => void): Disposable {
    return this.onNotification("$/progress", handler);
  }

  /** `window/logMessage` from the daemon (e.g. a fallback summarizer was used). */
  onLogMessage(handler: (params: Notifications["window/logMessage"]) => void): Disposable {
    return this.onNotification("window/logMessage", handler);
  }

  private dispatchNotification(method: string, params: unknown): void {
    if (method === "$/progress") {
      const progress = record(params);
      const token = progress["token"];
      if (typeof token === "string" || typeof token === "number") {
        const callback = this.progressCallbacks.get(token);
        if (callback !== undefined) this.safely(() => callback(progress["value"] as ProgressValue));
      }
    }
    for (const handler of this.notificationHandlers.get(method) ?? []) this.safely(() => handler(params));
  }

  // ---- server -> client requests -------------------------------------------------------

  /**
   * Answer `compaction/summarize` (write a compaction summary with your own model). Register
   * before `initialize()` so the client declares `capabilities.summarizer`. The token is
   * cancelled when the daemon cancels (the run was cancelled, or timed out). Throw a
   * `SessiondError` to answer with its code; any other error answers -32603.
   */
  onSummarize(handler: SummarizeHandler): Disposable {
    return this.onServerRequest("compaction/summarize", handler);
  }

  /** A handler for a server->client request (one per method). */
  onServerRequest<R extends ServerRequestName>(
    method: R,
    handler: (
      params: ServerRequests[R]["params"],
      token: CancellationToken,
    ) => ServerRequests[R]["result"] | Promise<ServerRequests[R]["result"]>,
  ): Disposable {
    const h = handler as RequestHandler;
    this.requestHandlers.set(method, h);
    return {
      dispose: () => {
        if (this.requestHandlers.get(method) === h) this.requestHandlers.delete(method);
      },
    };
  }

  private async dispatchRequest(method: string, params: unknown, token: CancellationToken): Promise<unknown> {
    const handler = this.requestHandlers.get(method);
    if (handler === undefined) {
      return new ResponseError(-32601, `${method} is not handled by this client`);
    }
    try {
      return await handler(params, token);
    } catch (err) {
      if (err instanceof SessiondError) return err.toResponseError();
      if (err instanceof ResponseError) return err;
      if (token.isCancellationRequested) return new ResponseError(-32800, `${method} was cancelled`);
      return new ResponseError(-32603, err instanceof Error ? err.message : String(err));
    }
  }

  // ---- connection events ---------------------------------------------------------------

  /** The connection closed: `expected` false means the daemon (or bridge) went away. */
  onClose(handler: (event: CloseEvent) => void): Disposable {
    this.closeHandlers.add(handler);
    return { dispose: () => void this.closeHandlers.delete(handler) };
  }

  /** A `reconnect()` (or an automatic one) succeeded. */
  onReconnect(handler: (result: ReconnectResult) => void): Disposable {
    this.reconnectHandlers.add(handler);
    return { dispose: () => void this.reconnectHandlers.delete(handler) };
  }

  /** Transport errors, failed automatic reconnects, exceptions thrown by handlers. */
  onError(handler: (error: Error) => void): Disposable {
    this.errorHandlers.add(handler);
    return { dispose: () => void this.errorHandlers.delete(handler) };
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      for (const handler of this.errorHandlers) {
        try {
          handler(error);
        } catch {
          // an error handler that throws is not reported again
        }
      }
    }
  }
}

export interface SocketConnectOptions extends ClientOptions, SocketDiscoveryOptions {}

/**
 * Connects to the daemon's Unix socket: `path`, else where `sessiond serve` puts it for the
 * store (`defaultSocketPath`). The daemon must be running (use `connectStdio` to start it).
 */
export function connectSocket(path?: string, options: SocketConnectOptions = {}): Promise<SessiondClient> {
  const socket = path ?? defaultSocketPath(options);
  return SessiondClient.connect(socketTransport(socket), options);
}

export interface StdioConnectOptions extends ClientOptions, StdioTransportOptions {}

/**
 * Spawns `sessiond connect` (or `options.command`) and talks over its stdio; the bridge starts
 * the daemon when none runs. `reconnect()` spawns a new bridge.
 */
export function connectStdio(options: StdioConnectOptions = {}): Promise<SessiondClient> {
  return SessiondClient.connect(stdioTransport(options), options);
}
