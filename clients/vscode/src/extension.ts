// The entry point VS Code loads (bundled into dist/extension.cjs by esbuild).

import * as vscode from "vscode";
import { activateWith, type Extension } from "./main.js";

let extension: Extension | undefined;

export function activate(context: vscode.ExtensionContext): void {
  extension = activateWith(vscode, context);
}

export async function deactivate(): Promise<void> {
  await extension?.dispose();
  extension = undefined;
}
