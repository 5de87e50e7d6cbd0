// The session viewer in a webview panel, working wherever the extension host runs.
//
// The daemon's viewer is an HTTP page on a loopback port; its Host and Origin checks refuse any
// other name (DNS rebinding). Through VS Code's port forwarding (code-server, Remote-SSH,
// Codespaces) the browser would reach it under the forwarder's name, so the panel does not use
// HTTP at all: it loads the page's files (the daemon names their directory in ui.json) as the
// webview's own resources, and a small script replaces the page's WebSocket with messages to the
// extension, which relays each one to the daemon's Unix socket (where the extension already
// talks to it). Nothing about the daemon's HTTP rules changes; see docs/vscode.md and
// docs/security.md. A daemon too old to name its files gets the former frame (local only).

import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createConnection, type Socket } from "node:net";
import { join } from "node:path";
import type * as vscode from "vscode";
import type { Vscode } from "./api.js";

export interface ViewerInfo {
  url: string;
  tokenPath: string;
  /** The page's files (index.html, assets/): newer daemons only. */
  staticDir?: string;
}

export async function readViewerInfo(runDir: string): Promise<ViewerInfo | undefined> {
  try {
    const info = JSON.parse(await readFile(join(runDir, "ui.json"), "utf-8")) as Record<string, unknown>;
    if (typeof info["url"] === "string" && typeof info["tokenPath"] === "string") {
      const staticDir = typeof info["staticDir"] === "string" ? info["staticDir"] : undefined;
      return { url: info["url"], tokenPath: info["tokenPath"], ...(staticDir ? { staticDir } : {}) };
    }
  } catch {
    // no viewer (turned off, or an older daemon)
  }
  return undefined;
}

/** Where the viewer opens: the deep-link fragment's fields (docs/ui.md). */
export interface ViewerTarget {
  session?: string;
  entry?: string;
  view?: "search" | "usage";
  q?: string;
}

export function fragment(target: ViewerTarget, token: string): string {
  const params = new URLSearchParams({ token });
  for (const key of ["session", "entry", "view", "q"] as const) {
    const value = target[key];
    if (value) params.set(key, value);
  }
  return params.toString();
}

/** The HTML of the frame fallback: the daemon's page in a frame (local only). */
export function viewerHtml(frameUrl: string): string {
  const origin = new URL(frameUrl).origin;
  const src = frameUrl.replace(/"/g, "&quot;");
  return `<!doctype html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; style-src 'unsafe-inline'">
<style>html,body,iframe{margin:0;padding:0;border:0;width:100%;height:100%;overflow:hidden}</style>
</head><body><iframe src="${src}" title="sessiond session viewer"></iframe></body></html>`;
}

/**
 * Runs in the webview before the viewer's own script: puts the deep link in the fragment (where
 * the page reads it) and stands in for `WebSocket`, one message to the extension per frame.
 */
function bridgeScript(hash: string): string {
  return `(() => {
  const host = acquireVsCodeApi();
  history.replaceState(null, "", location.pathname + location.search + ${JSON.stringify(`#${hash}`).replace(/</g, "\\u003c")});
  const sockets = new Map();
  let next = 1;
  class BridgeSocket extends EventTarget {
    constructor(url) {
      super();
      this.url = String(url);
      this.readyState = 0;
      this.protocol = "";
      this.onopen = this.onmessage = this.onclose = this.onerror = null;
      this.id = next++;
      sockets.set(this.id, this);
      host.postMessage({ sessiondBridge: "open", id: this.id });
    }
    send(data) {
      if (this.readyState !== 1) throw new DOMException("the connection is not open", "InvalidStateError");
      host.postMessage({ sessiondBridge: "send", id: this.id, data: String(data) });
    }
    close() {
      if (this.readyState >= 2) return;
      host.postMessage({ sessiondBridge: "close", id: this.id });
      this.ended(1000, "");
    }
    fire(type, event) {
      this.dispatchEvent(event);
      const handler = this["on" + type];
      if (typeof handler === "function") handler.call(this, event);
    }
    ended(code, reason) {
      if (this.readyState === 3) return;
      this.readyState = 3;
      sockets.delete(this.id);
      this.fire("close", new CloseEvent("close", { code, reason, wasClean: code === 1000 }));
    }
  }
  for (const [name, value] of [["CONNECTING", 0], ["OPEN", 1], ["CLOSING", 2], ["CLOSED", 3]]) {
    BridgeSocket[name] = value;
    BridgeSocket.prototype[name] = value;
  }
  window.addEventListener("message", (event) => {
    const m = event.data;
    if (!m || typeof m !== "object" || typeof m.sessiondBridge !== "string") return;
    if (m.sessiondBridge === "navigate") {
      location.hash = m.hash;
      return;
    }
    const socket = sockets.get(m.id);
    if (!socket) return;
    if (m.sessiondBridge === "opened") {
      socket.readyState = 1;
      socket.fire("open", new Event("open"));
    } else if (m.sessiondBridge === "message") {
      socket.fire("message", new MessageEvent("message", { data: m.data }));
    } else if (m.sessiondBridge === "closed") {
      if (m.error) socket.fire("error", new Event("error"));
      socket.ended(m.code || 1006, m.reason || "");
    }
  });
  // a chunk's preload link is written against "/" (the page's own origin): the import itself is
  // relative and loads, so a failed preload is not an error here
  window.addEventListener("vite:preloadError", (event) => event.preventDefault());
  window.WebSocket = BridgeSocket;
})();`;
}

/**
 * The viewer's index.html made into the webview's page: asset URLs rewritten to the webview's
 * resource URIs, a Content-Security-Policy for the webview, the bridge script first.
 */
export function bridgedHtml(index: string, assetBase: string, cspSource: string, hash: string, nonce: string): string {
  const base = assetBase.replace(/\/+$/, "");
  const csp =
    `default-src 'none'; script-src ${cspSource} 'nonce-${nonce}'; style-src ${cspSource} 'unsafe-inline'; ` +
    `img-src ${cspSource} data: blob:; font-src ${cspSource} data:; connect-src 'none'; base-uri 'none'; form-action 'none'`;
  const head =
    `<meta http-equiv="Content-Security-Policy" content="${csp}">\n` +
    `<script nonce="${nonce}">${bridgeScript(hash)}</script>\n`;
  const rewritten = index
    .replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/gi, "")
    .replace(/(\s(?:src|href))="\/(?!\/)([^"]*)"/g, (_m, attr: string, rel: string) => `${attr}="${base}/${rel}"`)
    .replace(/<script\b(?![^>]*\bnonce=)/g, `<script nonce="${nonce}"`);
  const at = rewritten.search(/<script\b|<link\b/i);
  return at < 0 ? head + rewritten : rewritten.slice(0, at) + head + rewritten.slice(at);
}

interface Options {
  /** The run directory (ui.json) and the daemon's socket, as the settings name them. */
  runDir(): string;
  socketPath(): string;
}

export class ViewerPanel {
  private panel: vscode.WebviewPanel | undefined;
  private staticDir: string | undefined;
  /** The bridge's connections to the daemon, by the page's socket id. */
  private readonly sockets = new Map<number, Socket>();
  /** What the last page was made from (so a new target replaces the page). */
  html = "";

  constructor(
    private readonly vs: Vscode,
    private readonly options: Options,
  ) {}

  /** Opens (or reuses) the panel on this target. */
  async open(target: ViewerTarget): Promise<void> {
    const info = await readViewerInfo(this.options.runDir());
    if (info === undefined) {
      throw new Error(
        "the daemon serves no viewer (it was started with --ui off or [ui] enabled = false, or it is older); restart it with the viewer on",
      );
    }
    const staticDir = info.staticDir && existsSync(join(info.staticDir, "index.html")) ? info.staticDir : undefined;
    if (this.panel !== undefined && this.staticDir !== staticDir) this.panel.dispose();
    const panel = this.ensurePanel(staticDir);
    this.closeSockets();
    if (staticDir !== undefined) {
      // the page reaches the daemon through this bridge (Unix socket): the token is not needed
      // there, and never enters the webview
      const index = await readFile(join(staticDir, "index.html"), "utf-8");
      const base = panel.webview.asWebviewUri(this.vs.Uri.file(staticDir)).toString();
      const nonce = randomBytes(16).toString("base64url");
      this.html = bridgedHtml(index, base, panel.webview.cspSource, fragment(target, "vscode-bridge"), nonce);
    } else {
      const token = (await readFile(info.tokenPath, "utf-8")).trim();
      const external = await this.vs.env.asExternalUri(this.vs.Uri.parse(info.url));
      this.html = viewerHtml(`${external.toString(true)}#${fragment(target, token)}`);
    }
    panel.webview.html = this.html;
    panel.reveal();
  }

  private ensurePanel(staticDir: string | undefined): vscode.WebviewPanel {
    if (this.panel !== undefined) return this.panel;
    const vs = this.vs;
    const panel = vs.window.createWebviewPanel("sessiond.viewer", "Sessions", vs.ViewColumn.Active, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: staticDir !== undefined ? [vs.Uri.file(staticDir)] : [],
    });
    this.panel = panel;
    this.staticDir = staticDir;
    panel.onDidDispose(() => {
      this.closeSockets();
      if (this.panel === panel) this.panel = undefined;
    });
    panel.webview.onDidReceiveMessage((message: unknown) => this.receive(panel, message));
    return panel;
  }

  /** A message from the page's stand-in WebSocket. */
  private receive(panel: vscode.WebviewPanel, message: unknown): void {
    if (typeof message !== "object" || message === null) return;
    const m = message as { sessiondBridge?: unknown; id?: unknown; data?: unknown };
    if (typeof m.id !== "number") return;
    const id = m.id;
    const post = (reply: Record<string, unknown>) => void panel.webview.postMessage({ ...reply, id });
    if (m.sessiondBridge === "open") {
      const socket = createConnection(this.options.socketPath());
      this.sockets.set(id, socket);
      let buffered = "";
      let failed = false;
      socket.setEncoding("utf-8");
      socket.on("connect", () => post({ sessiondBridge: "opened" }));
      socket.on("data", (chunk: string) => {
        buffered += chunk;
        let end: number;
        while ((end = buffered.indexOf("\n")) >= 0) {
          const line = buffered.slice(0, end).trim();
          buffered = buffered.slice(end + 1);
          if (line) post({ sessiondBridge: "message", data: line });
        }
      });
      socket.on("error", () => void (failed = true));
      socket.on("close", () => {
        if (this.sockets.get(id) === socket) this.sockets.delete(id);
        post({ sessiondBridge: "closed", code: failed ? 1006 : 1000, error: failed });
      });
    } else if (m.sessiondBridge === "send" && typeof m.data === "string") {
      // newline-delimited JSON: the daemon tells the framing by the first byte; JSON.stringify
      // never writes a raw newline
      this.sockets.get(id)?.write(`${m.data.replace(/\n/g, " ")}\n`);
    } else if (m.sessiondBridge === "close") {
      this.sockets.get(id)?.destroy();
      this.sockets.delete(id);
    }
  }

  private closeSockets(): void {
    for (const socket of this.sockets.values()) socket.destroy();
    this.sockets.clear();
  }

  /** Connections the bridge holds open (tests). */
  get bridged(): number {
    return this.sockets.size;
  }

  /** The panel, for tests: its webview receives what the page would post. */
  get current(): vscode.WebviewPanel | undefined {
    return this.panel;
  }

  dispose(): void {
    this.closeSockets();
    this.panel?.dispose();
  }
}
