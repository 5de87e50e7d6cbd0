// The VS Code API the extension uses, passed in rather than imported: the extension's logic
// runs in tests against a real daemon with a recording stand-in for VS Code (test/vscode-mock.ts).

import type * as vscode from "vscode";

export type Vscode = typeof vscode;

/** What `activate` gets that matters here. */
export interface ExtensionContextLike {
  subscriptions: { dispose(): unknown }[];
}
