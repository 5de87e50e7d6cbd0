// A stand-in for the parts of the VS Code API the extension uses: it records what the
// extension shows and answers its questions from scripted replies. Only the editor is fake;
// the daemon the extension talks to is real.

import { EventEmitter as NodeEmitter } from "node:events";
import type { Vscode } from "../src/api.js";

export type Answer = (items: unknown, options?: unknown) => unknown;

export class EventEmitter<T> {
  private readonly emitter = new NodeEmitter();
  readonly event = (listener: (value: T) => void) => {
    this.emitter.on("e", listener);
    return { dispose: () => this.emitter.off("e", listener) };
  };
  fire(value?: T): void {
    this.emitter.emit("e", value);
  }
  dispose(): void {
    this.emitter.removeAllListeners();
  }
}

class Uri {
  constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query = "",
  ) {}
  get fsPath(): string {
    return this.path;
  }
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  static parse(text: string): Uri {
    const url = new URL(text);
    return new Uri(url.protocol.replace(":", ""), text);
  }
  static from(parts: { scheme: string; path: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path, parts.query ?? "");
  }
  toString(): string {
    return this.scheme === "http" || this.scheme === "https" ? this.path : `${this.scheme}:${this.path}`;
  }
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string;
  contextValue?: string;
  iconPath?: unknown;
  command?: unknown;
  constructor(
    readonly label: string,
    readonly collapsibleState: number,
  ) {}
}

export interface StatusItem {
  text: string;
  tooltip?: string;
  backgroundColor?: { id: string };
  command?: string;
  name?: string;
  shown: boolean;
}

export interface Panel {
  html: string;
  /** What the extension posted to the page. */
  posted: Record<string, unknown>[];
  /** Delivers a message as the page would post it. */
  receive(message: unknown): void;
  options: Record<string, unknown>;
}

export interface Terminal {
  name: string;
  cwd?: string;
  sent: string[];
  shown: boolean;
}

export interface QuickPick {
  value: string;
  items: Record<string, unknown>[];
  title?: string;
  busy: boolean;
  placeholder?: string;
  selectedItems: Record<string, unknown>[];
  shown: boolean;
  /** Types into it, as a person would (fires onDidChangeValue). */
  type(value: string): void;
  accept(item: Record<string, unknown>): void;
  /** Presses the item's first button. */
  pressButton(item: Record<string, unknown>): void;
  hide(): void;
}

export interface Recorded {
  messages: { kind: "info" | "warning" | "error"; text: string; items: string[] }[];
  executed: { command: string; args: unknown[] }[];
  panels: Panel[];
  /** Every status-bar item, in creation order (0: the context gauge, 1: today's cost). */
  statusItems: StatusItem[];
  status: StatusItem;
  quickPicks: unknown[][];
  liveQuickPicks: QuickPick[];
  terminals: Terminal[];
}

export interface MockOptions {
  settings: Record<string, unknown>;
  /** The workspace's folders (paths). */
  folders?: string[];
  /** Replies, by kind, taken in order: quick picks choose with a predicate over the items. */
  replies?: {
    quickPick?: ((item: Record<string, unknown>) => boolean)[];
    inputBox?: (string | undefined)[];
    /** The button to press on the next message that offers buttons (undefined: dismiss). */
    buttons?: (string | undefined)[];
  };
}

export function createVscode(options: MockOptions): { vscode: Vscode; recorded: Recorded; commands: Map<string, (...a: unknown[]) => unknown>; providers: Map<string, { provideTextDocumentContent(uri: Uri): string }> } {
  const recorded: Recorded = {
    messages: [],
    executed: [],
    panels: [],
    statusItems: [],
    status: { text: "", shown: false },
    quickPicks: [],
    liveQuickPicks: [],
    terminals: [],
  };
  const replies = { quickPick: [...(options.replies?.quickPick ?? [])], inputBox: [...(options.replies?.inputBox ?? [])], buttons: [...(options.replies?.buttons ?? [])] };
  const commands = new Map<string, (...a: unknown[]) => unknown>();
  const providers = new Map<string, { provideTextDocumentContent(uri: Uri): string }>();
  const message = (kind: "info" | "warning" | "error") => async (text: string, ...rest: unknown[]) => {
    const items = rest.filter((r): r is string => typeof r === "string");
    recorded.messages.push({ kind, text, items });
    return items.length ? replies.buttons.shift() : undefined;
  };
  const api = {
    EventEmitter,
    TreeItem,
    Uri,
    TreeItemCollapsibleState: { None: 0, Collapsed: 1, Expanded: 2 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
    ViewColumn: { Active: -1, Beside: -2, One: 1 },
    ThemeIcon: class {
      constructor(readonly id: string) {}
    },
    ThemeColor: class {
      constructor(readonly id: string) {}
    },
    window: {
      createStatusBarItem: () => {
        const item = (recorded.statusItems.length === 0 ? recorded.status : { text: "", shown: false }) as StatusItem & {
          show(): void;
          hide(): void;
          dispose(): void;
        };
        recorded.statusItems.push(item);
        item.show = () => void (item.shown = true);
        item.hide = () => void (item.shown = false);
        item.dispose = () => undefined;
        return item;
      },
      createTreeView: () => ({ dispose: () => undefined }),
      showQuickPick: async (items: Record<string, unknown>[] | Promise<Record<string, unknown>[]>) => {
        const list = await items;
        recorded.quickPicks.push(list);
        const choose = replies.quickPick.shift();
        return choose ? list.find(choose) : undefined;
      },
      showInputBox: async () => replies.inputBox.shift(),
      showInformationMessage: message("info"),
      showWarningMessage: async (text: string, ...rest: unknown[]) => message("warning")(text, ...rest),
      showErrorMessage: message("error"),
      withProgress: async (_options: unknown, task: (progress: unknown) => Promise<unknown>) =>
        task({ report: () => undefined }),
      createWebviewPanel: (_type: string, _title: string, _column: unknown, panelOptions: Record<string, unknown>) => {
        const listeners: ((m: unknown) => void)[] = [];
        const disposed: (() => void)[] = [];
        const panel: Panel = { html: "", posted: [], receive: (m) => listeners.forEach((l) => l(m)), options: panelOptions };
        recorded.panels.push(panel);
        return {
          webview: {
            set html(value: string) {
              panel.html = value;
            },
            get html() {
              return panel.html;
            },
            cspSource: "https://webview.test",
            asWebviewUri: (uri: Uri) => ({ toString: () => `https://webview.test${uri.path}` }),
            onDidReceiveMessage: (listener: (m: unknown) => void) => {
              listeners.push(listener);
              return { dispose: () => undefined };
            },
            postMessage: async (message: Record<string, unknown>) => {
              panel.posted.push(message);
              return true;
            },
          },
          reveal: () => undefined,
          onDidDispose: (listener: () => void) => {
            disposed.push(listener);
            return { dispose: () => undefined };
          },
          dispose: () => disposed.forEach((l) => l()),
        };
      },
      createTerminal: (terminalOptions: { name: string; cwd?: string }) => {
        const terminal: Terminal = { name: terminalOptions.name, sent: [], shown: false, ...(terminalOptions.cwd ? { cwd: terminalOptions.cwd } : {}) };
        recorded.terminals.push(terminal);
        return {
          show: () => void (terminal.shown = true),
          sendText: (text: string) => void terminal.sent.push(text),
          dispose: () => undefined,
        };
      },
      createQuickPick: () => {
        const change = new EventEmitter<string>();
        const accept = new EventEmitter<void>();
        const hidden = new EventEmitter<void>();
        const button = new EventEmitter<{ item: Record<string, unknown>; button: unknown }>();
        const pick: QuickPick & Record<string, unknown> = {
          value: "",
          items: [],
          busy: false,
          selectedItems: [],
          shown: false,
          type(value: string) {
            pick.value = value;
            change.fire(value);
          },
          accept(item: Record<string, unknown>) {
            pick.selectedItems = [item];
            accept.fire();
          },
          hide() {
            if (!pick.shown) return;
            pick.shown = false;
            hidden.fire();
          },
          show() {
            pick.shown = true;
          },
          dispose: () => undefined,
          onDidChangeValue: change.event,
          onDidAccept: accept.event,
          onDidHide: hidden.event,
          onDidTriggerItemButton: button.event,
          pressButton(item: Record<string, unknown>) {
            button.fire({ item, button: (item["buttons"] as unknown[] | undefined)?.[0] });
          },
        };
        recorded.liveQuickPicks.push(pick);
        return pick;
      },
    },
    commands: {
      registerCommand: (name: string, fn: (...a: unknown[]) => unknown) => {
        commands.set(name, fn);
        return { dispose: () => commands.delete(name) };
      },
      executeCommand: async (command: string, ...args: unknown[]) => {
        recorded.executed.push({ command, args });
        return commands.get(command)?.(...args);
      },
    },
    workspace: {
      isTrusted: true,
      workspaceFolders: (options.folders ?? []).map((path, index) => ({ uri: Uri.file(path), name: path.split("/").pop(), index })),
      onDidChangeConfiguration: () => ({ dispose: () => undefined }),
      getConfiguration: () => ({ get: (key: string) => options.settings[key] }),
      registerTextDocumentContentProvider: (scheme: string, provider: { provideTextDocumentContent(uri: Uri): string }) => {
        providers.set(scheme, provider);
        return { dispose: () => providers.delete(scheme) };
      },
    },
    env: { asExternalUri: async (uri: Uri) => uri },
  };
  return { vscode: api as unknown as Vscode, recorded, commands, providers };
}
