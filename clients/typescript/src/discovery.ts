// Where the daemon listens: the same rules as sessiond/service/config.py (Config.run_dir/socket)
// and sessiond/store/layout.py (default_root).

import { realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join } from "node:path";

export type Env = Readonly<Record<string, string | undefined>>;

function expandUser(path: string, env: Env): string {
  if (path !== "~" && !path.startsWith("~/")) return path;
  const home = env["HOME"] || homedir();
  return path === "~" ? home : join(home, path.slice(2));
}

/**
 * The store a daemon started with this environment uses: `$SESSIOND_HOME`, else
 * `$XDG_DATA_HOME/sessiond` (when absolute), else `~/.local/share/sessiond`.
 */
export function defaultStore(env: Env = process.env): string {
  const home = env["SESSIOND_HOME"];
  if (home) return expandUser(home, env);
  const xdg = env["XDG_DATA_HOME"];
  if (xdg && isAbsolute(xdg)) return join(xdg, "sessiond");
  return join(env["HOME"] || homedir(), ".local", "share", "sessiond");
}

/** Like Python's `Path.resolve()`: symlinks resolved as far as the path exists. */
function resolveLoosely(path: string): string {
  try {
    return realpathSync.native(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(resolveLoosely(parent), basename(path));
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export interface SocketDiscoveryOptions {
  /** The store (default: `defaultStore(env)`, i.e. what `sessiond serve` without `--store` uses). */
  store?: string;
  /** The environment to read (default `process.env`). */
  env?: Env;
}

/**
 * The daemon's socket path, as `sessiond serve` chooses it without `--socket`:
 * `$XDG_RUNTIME_DIR/sessiond/sessiond.sock` for the default store (when `XDG_RUNTIME_DIR` is an
 * absolute, existing directory), else `<store>/run/sessiond.sock` — so two stores never share
 * a socket.
 */
export function defaultSocketPath(options: SocketDiscoveryOptions = {}): string {
  const env = options.env ?? process.env;
  const store = options.store !== undefined ? expandUser(options.store, env) : defaultStore(env);
  const xdg = env["XDG_RUNTIME_DIR"];
  if (xdg && isAbsolute(xdg) && isDirectory(xdg)) {
    const withoutHome = { ...env };
    delete withoutHome["SESSIOND_HOME"];
    if (resolveLoosely(store) === resolveLoosely(defaultStore(withoutHome))) {
      return join(xdg, "sessiond", "sessiond.sock");
    }
  }
  return join(store, "run", "sessiond.sock");
}
