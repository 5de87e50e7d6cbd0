// Builds the viewer into the Python package (sessiond/web/static), where the daemon serves it.
// The output is committed: `sessiond ui` works on an install without Node. tests/web checks
// that a fresh build equals what is committed.
import { defineConfig } from "vite";

export default defineConfig({
  base: "/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env["SESSIOND_WEB_OUT"] ?? "../../sessiond/web/static",
    emptyOutDir: true,
    target: "es2022",
    sourcemap: false,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
    chunkSizeWarningLimit: 400,
  },
});
