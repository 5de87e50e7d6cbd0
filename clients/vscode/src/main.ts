// Wiring: connect (starting the daemon through `sessiond connect`), the Sessions view, the
// status bar, the commands. `activateWith` takes the VS Code API as a parameter so tests can
// run it against a real daemon with a stand-in API.

import { defaultSocketPath, type SessiondClient } from "@sessiond/client";
import type { ExtensionContextLike, Vscode } from "./api.js";
import { CHECKPOINT_SCHEME, Commands, describe } from "./commands.js";
import { connect, NotInstalledError, runDir, type Settings } from "./connection.js";
import { CostStatus } from "./cost.js";
import { SearchSessions } from "./search.js";
import { SessionsProvider, type Item } from "./sessions.js";
import { UsageStatus } from "./status.js";
import { ViewerPanel, type ViewerTarget } from "./viewer.js";

export interface Extension {
  readonly provider: SessionsProvider;
  readonly status: UsageStatus;
  readonly commands: Commands;
  readonly cost: CostStatus;
  readonly search: SearchSessions;
  /** Resolves once the first connection attempt ended (connected or not). */
  readonly ready: Promise<SessiondClient | undefined>;
  client(): SessiondClient | undefined;
  dispose(): Promise<void>;
}

export function readSettings(vs: Vscode): Settings {
  const config = vs.workspace.getConfiguration("sessiond");
  const command = config.get<string[]>("command") ?? ["sessiond", "connect"];
  return {
    command: command.length > 0 ? command : ["sessiond", "connect"],
    store: config.get<string>("store") ?? "",
    socket: config.get<string>("socket") ?? "",
    maxSessions: config.get<number>("maxSessions") ?? 200,
  };
}

/** The daemon's socket as the settings name it (the viewer's bridge connects there). */
export function socketPath(settings: Settings, env: NodeJS.ProcessEnv = process.env): string {
  return settings.socket || defaultSocketPath({ ...(settings.store ? { store: settings.store } : {}), env });
}

export function activateWith(vs: Vscode, context: ExtensionContextLike, env: NodeJS.ProcessEnv = process.env): Extension {
  const settings = readSettings(vs);
  let client: SessiondClient | undefined;
  const provider = new SessionsProvider(vs, () => client, settings.maxSessions);
  const status = new UsageStatus(vs);
  const showCost = () => vs.workspace.getConfiguration("sessiond").get<boolean>("statusBar.todaysCost") ?? true;
  const cost = new CostStatus(vs, showCost);
  const viewer = new ViewerPanel(vs, { runDir: () => runDir(settings, env), socketPath: () => socketPath(settings, env) });
  const commands = new Commands(vs, () => client, provider, status, viewer, () => settings, env);
  const workspaceFolder = () => vs.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file")?.uri.fsPath;
  const search = new SearchSessions(vs, () => client, (target) => commands.openViewer(target), workspaceFolder);
  const view = vs.window.createTreeView("sessiond.sessions", { treeDataProvider: provider, showCollapseAll: true });
  const subscriptions = [
    view,
    status,
    cost,
    viewer,
    vs.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, commands.contentProvider()),
    vs.commands.registerCommand("sessiond.refresh", () => {
      if (client === undefined) void start();
      else provider.refresh();
    }),
    vs.commands.registerCommand("sessiond.select", (item?: Item) => commands.select(item)),
    vs.commands.registerCommand("sessiond.fork", (item?: Item) => commands.fork(item)),
    vs.commands.registerCommand("sessiond.label", (item?: Item) => commands.label(item)),
    vs.commands.registerCommand("sessiond.compact", (item?: Item) => commands.compact(item)),
    vs.commands.registerCommand("sessiond.rewind", (item?: Item) => commands.rewind(item)),
    vs.commands.registerCommand("sessiond.openViewer", (item?: Item | string) => commands.openViewer(item)),
    vs.commands.registerCommand("sessiond.openEntry", (item?: Item) => commands.openEntry(item)),
    vs.commands.registerCommand("sessiond.resume", (item?: Item) => commands.resume(item)),
    vs.commands.registerCommand("sessiond.exportToPi", (item?: Item) => commands.exportToPi(item)),
    vs.commands.registerCommand("sessiond.search", (text?: string) => search.show(typeof text === "string" ? text : "")),
    vs.commands.registerCommand("sessiond.openUsage", () => commands.openViewer({ view: "usage" } satisfies ViewerTarget)),
    vs.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("sessiond.statusBar.todaysCost")) void cost.refresh();
    }),
  ];
  context.subscriptions.push(...subscriptions);

  async function start(): Promise<SessiondClient | undefined> {
    try {
      const connected = await connect(settings, env);
      client = connected;
      provider.error = undefined;
      context.subscriptions.push(provider.attach(connected));
      connected.onClose((event) => {
        if (!event.expected) void vs.window.showWarningMessage("sessiond: the daemon went away; reconnecting…");
      });
      provider.refresh();
      void cost.attach(connected);
      return connected;
    } catch (err) {
      provider.error = describe(err);
      provider.refresh();
      const actions = err instanceof NotInstalledError ? ["Open Settings"] : ["Retry"];
      void vs.window.showErrorMessage(`sessiond: ${describe(err)}`, ...actions).then((choice) => {
        if (choice === "Retry") void start();
        if (choice === "Open Settings") void vs.commands.executeCommand("workbench.action.openSettings", "sessiond.command");
      });
      return undefined;
    }
  }

  const ready = start();
  return {
    provider,
    status,
    commands,
    cost,
    search,
    ready,
    client: () => client,
    async dispose() {
      for (const s of subscriptions) s.dispose();
      await client?.close();
      client = undefined;
    },
  };
}
