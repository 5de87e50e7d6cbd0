// defaultSocketPath follows sessiond/service/config.py: the shared runtime dir only for the default store.

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { defaultSocketPath, defaultStore } from "@sessiond/client";

const base = mkdtempSync(join(tmpdir(), "sessiond-discovery-"));
const home = join(base, "home");
const runtime = join(base, "runtime");
mkdirSync(runtime, { recursive: true });

test("the default store", () => {
  assert.equal(defaultStore({ HOME: home }), join(home, ".local/share/sessiond"));
  assert.equal(defaultStore({ HOME: home, XDG_DATA_HOME: "/data" }), "/data/sessiond");
  assert.equal(defaultStore({ HOME: home, XDG_DATA_HOME: "relative" }), join(home, ".local/share/sessiond"));
  assert.equal(defaultStore({ HOME: home, SESSIOND_HOME: "~/store" }), join(home, "store"));
});

test("the default store uses $XDG_RUNTIME_DIR/sessiond", () => {
  assert.equal(
    defaultSocketPath({ env: { HOME: home, XDG_RUNTIME_DIR: runtime } }),
    join(runtime, "sessiond", "sessiond.sock"),
  );
  // SESSIOND_HOME naming the default store (through a symlink) is still the default store
  mkdirSync(join(home, ".local/share/sessiond"), { recursive: true });
  symlinkSync(join(home, ".local/share/sessiond"), join(base, "link"));
  assert.equal(
    defaultSocketPath({ env: { HOME: home, XDG_RUNTIME_DIR: runtime, SESSIOND_HOME: join(base, "link") } }),
    join(runtime, "sessiond", "sessiond.sock"),
  );
});

test("another store uses <store>/run", () => {
  const env = { HOME: home, XDG_RUNTIME_DIR: runtime, SESSIOND_HOME: join(base, "other") };
  assert.equal(defaultSocketPath({ env }), join(base, "other", "run", "sessiond.sock"));
  assert.equal(
    defaultSocketPath({ env: { HOME: home, XDG_RUNTIME_DIR: runtime }, store: join(base, "s2") }),
    join(base, "s2", "run", "sessiond.sock"),
  );
});

test("no usable XDG_RUNTIME_DIR: <store>/run", () => {
  const store = join(home, ".local/share/sessiond");
  assert.equal(defaultSocketPath({ env: { HOME: home } }), join(store, "run", "sessiond.sock"));
  assert.equal(defaultSocketPath({ env: { HOME: home, XDG_RUNTIME_DIR: "relative" } }), join(store, "run", "sessiond.sock"));
  assert.equal(
    defaultSocketPath({ env: { HOME: home, XDG_RUNTIME_DIR: join(base, "missing") } }),
    join(store, "run", "sessiond.sock"),
  );
});
