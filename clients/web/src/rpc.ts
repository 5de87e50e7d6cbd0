// JSON-RPC 2.0 over the daemon's WebSocket: one message per WebSocket message. Typed by the
// protocol types generated for @sessiond/client (clients/typescript/src/generated/protocol.ts).

import type {
  MethodName,
  MethodParams,
  MethodResult,
  SessionUpdate,
  InitializeResult,
} from "../../typescript/src/generated/protocol.ts";

export type Status = "connecting" | "open" | "closed" | "unauthorized";

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data: Record<string, unknown> | undefined,
    readonly method: string,
  ) {
    super(message);
  }
  /** "tree/label failed (-32019 READ_ONLY): ..." — what the page shows. */
  describe(): string {
    const field = typeof this.data?.["field"] === "string" ? ` (field ${this.data["field"]})` : "";
    return `${this.method}: ${this.message}${field} [${this.code}]`;
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  method: string;
}

type UpdateHandler = (params: SessionUpdate) => void;

const CLIENT = { name: "sessiond-web", version: "0.1.0" };

/**
 * One WebSocket to the daemon, reconnected with backoff when it drops; after a reconnect
 * `onReconnect` handlers run so views subscribe again and reload what they show (updates sent
 * while disconnected are lost).
 */
export class Rpc {
  private ws: WebSocket | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly updateHandlers = new Set<UpdateHandler>();
  private readonly statusHandlers = new Set<(status: Status, detail: string) => void>();
  private readonly reconnectHandlers = new Set<() => void>();
  private readonly notificationHandlers = new Map<string, Set<(params: unknown) => void>>();
  private ready: Promise<void> | undefined;
  private delay = 250;
  private everOpened = false;
  status: Status = "connecting";
  detail = "";
  serverInfo: InitializeResult | undefined;

  constructor(
    private readonly url: string,
    private token: string,
  ) {}

  start(): Promise<void> {
    if (this.ready === undefined) this.ready = this.open();
    return this.ready;
  }

  private setStatus(status: Status, detail = ""): void {
    this.status = status;
    this.detail = detail;
    for (const handler of this.statusHandlers) handler(status, detail);
  }

  private open(): Promise<void> {
    this.setStatus("connecting");
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url);
      this.ws = ws;
      let initialized = false;
      ws.onopen = () => {
        this.call<"initialize">(
          "initialize",
          {
            protocolVersion: 1,
            clientInfo: CLIENT,
            authToken: this.token,
            capabilities: { notifications: { optOut: ["$/progress"] } },
          },
          ws,
        ).then(
          (result) => {
            initialized = true;
            this.serverInfo = result;
            // A one-time code was exchanged: the daemon's viewer token replaces it (the code is
            // spent), for this tab's reconnects only.
            if (typeof result.viewerToken === "string") {
              this.token = result.viewerToken;
              sessionStorage.setItem(TOKEN_KEY, result.viewerToken);
            }
            ws.send(JSON.stringify({ jsonrpc: "2.0", method: "initialized", params: {} }));
            this.delay = 250;
            const again = this.everOpened;
            this.everOpened = true;
            this.setStatus("open");
            resolve();
            if (again) for (const handler of this.reconnectHandlers) handler();
          },
          (error: unknown) => {
            const message = error instanceof RpcError ? error.message : String(error);
            this.setStatus("unauthorized", message);
            reject(error);
          },
        );
      };
      ws.onmessage = (event) => this.receive(String(event.data));
      ws.onclose = () => {
        for (const [, pending] of this.pending) {
          pending.reject(new RpcError(-32099, "the connection to sessiond closed", undefined, pending.method));
        }
        this.pending.clear();
        if (this.status === "unauthorized") return;
        this.setStatus("closed", "reconnecting…");
        if (!initialized) reject(new Error("cannot reach sessiond"));
        const delay = this.delay;
        this.delay = Math.min(this.delay * 2, 5000);
        setTimeout(() => {
          this.ready = this.open().catch(() => undefined);
        }, delay);
      };
    });
  }

  private receive(text: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    if (typeof message["method"] === "string") {
      if (message["method"] === "session/update") {
        const params = message["params"] as SessionUpdate;
        for (const handler of this.updateHandlers) {
          try {
            handler(params);
          } catch (err) {
            console.error(err);
          }
        }
      } else if (!("id" in message)) {
        for (const handler of this.notificationHandlers.get(message["method"]) ?? []) {
          try {
            handler(message["params"]);
          } catch (err) {
            console.error(err);
          }
        }
      } else {
        // a server request this page does not answer (it declares no summarizer capability)
        this.ws?.send(
          JSON.stringify({
            jsonrpc: "2.0",
            id: message["id"],
            error: { code: -32601, message: `${message["method"]} is not handled by the viewer` },
          }),
        );
      }
      return;
    }
    const id = message["id"];
    if (typeof id !== "number") return;
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    const error = message["error"] as { code: number; message: string; data?: Record<string, unknown> } | undefined;
    if (error !== undefined) pending.reject(new RpcError(error.code, error.message, error.data, pending.method));
    else pending.resolve(message["result"]);
  }

  private call<M extends MethodName>(method: M, params: MethodParams<M>, ws: WebSocket): Promise<MethodResult<M>> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, method });
      ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  /** A request, once the connection is open (waits while it reconnects). */
  async request<M extends MethodName>(method: M, params: MethodParams<M>): Promise<MethodResult<M>> {
    if (this.status !== "open") await this.ready;
    const ws = this.ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) {
      throw new RpcError(-32099, "not connected to sessiond", undefined, method);
    }
    return this.call(method, params, ws);
  }

  /**
   * A request for a method this page's generated types may not know yet (a daemon newer or
   * older than the page): the caller checks the result's shape; a daemon without the method
   * answers -32601.
   */
  async requestAny(method: string, params: Record<string, unknown>): Promise<unknown> {
    return this.request(method as MethodName, params as MethodParams<MethodName>);
  }

  /** Notifications other than session/update (e.g. stats_update), by method name. */
  onNotification(method: string, handler: (params: unknown) => void): () => void {
    let handlers = this.notificationHandlers.get(method);
    if (handlers === undefined) {
      handlers = new Set();
      this.notificationHandlers.set(method, handlers);
    }
    handlers.add(handler);
    return () => handlers.delete(handler);
  }

  onUpdate(handler: UpdateHandler): () => void {
    this.updateHandlers.add(handler);
    return () => this.updateHandlers.delete(handler);
  }

  onStatus(handler: (status: Status, detail: string) => void): () => void {
    this.statusHandlers.add(handler);
    return () => this.statusHandlers.delete(handler);
  }

  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }
}

const TOKEN_KEY = "sessiond-token";

/**
 * The credential from the URL fragment, kept for this tab only and taken out of the address bar:
 * `code=` (what `sessiond ui` puts there: good for one `initialize`, which answers with the
 * viewer token used from then on) or `token=` (the store's token, e.g. from the VS Code
 * extension or pasted by hand). Either is presented as `authToken`.
 */
export function takeToken(): { token: string | null; session: string | null } {
  const hash = new URLSearchParams(location.hash.replace(/^#/, ""));
  const fromHash = hash.get("code") ?? hash.get("token");
  if (fromHash) {
    sessionStorage.setItem(TOKEN_KEY, fromHash);
    hash.delete("code");
    hash.delete("token");
    const rest = hash.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return { token: fromHash ?? sessionStorage.getItem(TOKEN_KEY), session: hash.get("session") };
}

export function socketUrl(): string {
  return `ws://${location.host}/rpc`;
}
