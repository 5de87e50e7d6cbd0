// The viewer in headless Chromium for benchmarks/ui.py (python -m benchmarks.ui): first paint of a session's tree, and
// append -> visible latency. Usage: node benchmarks/ui_page.mjs CONFIG.json (prints JSON).
// playwright-core comes from tests/web/node (scripts/setup-web-tests installs it).

import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const require = createRequire(join(config.nodeModules, "noop.js"));
const { chromium } = require("playwright-core");

const profile = mkdtempSync(join(tmpdir(), "sessiond-bench-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync"],
  viewport: { width: 1400, height: 900 },
});
const now = () => performance.timeOrigin + performance.now();
const out = { sessions: {} };

async function open(page, sessionId) {
  await page.goto("about:blank");
  await page.goto(`${config.url}#token=${config.token}&session=${sessionId}`);
  await page.waitForFunction(() => performance.getEntriesByName("sessiond-tree-painted").length > 0, null, {
    timeout: 120_000,
  });
  const firstRows = await page.evaluate(() => document.querySelectorAll(".node").length);
  await page.waitForFunction(() => performance.getEntriesByName("sessiond-tree-complete").length > 0, null, {
    timeout: 120_000,
  });
  return page.evaluate((firstRows) => {
    const tree = document.querySelector(".tree");
    return {
      paintMs: performance.getEntriesByName("sessiond-tree-painted")[0].startTime,
      completeMs: performance.getEntriesByName("sessiond-tree-complete")[0].startTime,
      firstRows,
      treeGetMs: Number(tree.dataset.loadMs),
      entries: Number(tree.dataset.entries),
      domRows: document.querySelectorAll(".node").length,
    };
  }, firstRows);
}

/** Page side: record when the tree's entry count changes (epoch ms, sub-ms). */
async function watchRows(page) {
  await page.evaluate(() => {
    window.__seen = [];
    const tree = document.querySelector(".tree");
    new MutationObserver(() => {
      window.__seen.push({ at: performance.timeOrigin + performance.now(), entries: Number(tree.dataset.entries) });
    }).observe(tree, { attributes: true, attributeFilter: ["data-entries"] });
  });
}

async function seenAfter(page, entries, timeoutMs = 20_000) {
  const handle = await page.waitForFunction(
    (n) => window.__seen.find((s) => s.entries >= n)?.at,
    entries,
    { timeout: timeoutMs, polling: 5 },
  );
  return handle.jsonValue();
}

try {
  const page = await context.newPage();
  // every entries_appended the page receives, timed (epoch ms): the daemon's part of the latency
  await page.addInitScript(() => {
    window.__notified = [];
    const Original = window.WebSocket;
    window.WebSocket = class extends Original {
      constructor(...args) {
        super(...args);
        this.addEventListener("message", (e) => {
          if (typeof e.data === "string" && e.data.includes('"entries_appended"')) {
            window.__notified.push(performance.timeOrigin + performance.now());
          }
        });
      }
    };
  });
  await open(page, config.sessions[0].sessionId); // warm-up: the browser's first page load is slower
  for (const s of config.sessions) {
    const result = { paints: [] };
    for (let i = 0; i < config.paintRuns; i++) result.paints.push(await open(page, s.sessionId));
    await watchRows(page);
    let entries = result.paints.at(-1).entries;
    const latencies = [];
    const references = [];
    if (s.appendBy === "rpc") {
      // a second connection appends, as an agent would; the reference is its own round trip
      await page.evaluate(async ({ token, sessionId }) => {
        const ws = new WebSocket(`ws://${location.host}/rpc`);
        await new Promise((r) => (ws.onopen = r));
        let id = 0;
        const pending = new Map();
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          pending.get(m.id)?.(m);
        };
        window.__call = (method, params) =>
          new Promise((resolve) => {
            const n = ++id;
            pending.set(n, resolve);
            ws.send(JSON.stringify({ jsonrpc: "2.0", id: n, method, params }));
          });
        await window.__call("initialize", { protocolVersion: 1, authToken: token });
        window.__sessionId = sessionId;
      }, { token: config.token, sessionId: s.sessionId });
      for (let i = 0; i < config.samples; i++) {
        const [sent, answered] = await page.evaluate(async (n) => {
          const t0 = performance.timeOrigin + performance.now();
          await window.__call("session/append", {
            sessionId: window.__sessionId,
            entries: [{ type: "message", message: { role: "user", content: `bench ${n}`, timestamp: Date.now() } }],
          });
          return [t0, performance.timeOrigin + performance.now()];
        }, i);
        entries += 1;
        const visible = await seenAfter(page, entries);
        latencies.push(visible - sent);
        references.push(answered - sent);
        await page.waitForTimeout(20 + Math.random() * 30);
      }
    } else {
      // another program appends lines to the file; the reference is the daemon's own notice
      const lines = readFileSync(s.linesFile, "utf-8").split("\n").filter(Boolean);
      for (let i = 0; i < Math.min(config.samples, lines.length / s.linesPerTurn); i++) {
        const turn = lines.slice(i * s.linesPerTurn, (i + 1) * s.linesPerTurn).join("\n") + "\n";
        const already = await page.evaluate(() => window.__notified.length);
        const t0 = now();
        appendFileSync(s.path, turn);
        entries += s.linesPerTurn;
        latencies.push((await seenAfter(page, entries)) - t0);
        const notified = await page.evaluate((n) => window.__notified.slice(n), already);
        if (notified.length) references.push(notified[notified.length - 1] - t0);
        await page.waitForTimeout(30 + Math.random() * 40);
      }
    }
    result.latencyMs = latencies;
    result.referenceMs = references;
    out.sessions[s.name] = result;
  }
} catch (err) {
  out.error = String(err?.stack ?? err);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out) + "\n");
