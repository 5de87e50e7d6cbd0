// Drives the extension inside real VS Code (code-server, started by
// tests/web/test_code_server.py) in Debian's headless Chromium through playwright-core, as a
// person would: the Sessions view, a session expanded, an entry clicked (the viewer opens at it,
// its data coming through the extension's bridge), a rewind (the diff editor opens), the
// status-bar gauge changing while the session grows. Usage: node code_server.mjs CONFIG.json
//
// It talks to the Python side on stdin/stdout: it prints `GROW` and waits for a line on stdin
// when the session should grow; its last line of output is one JSON object with what it saw.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const TIMEOUT = 60_000;
const result = { steps: [], console: [] };
const profile = mkdtempSync(join(tmpdir(), "sessiond-code-server-"));
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const step = (name, extra = {}) => {
  result.steps.push({ name, at: Math.round(performance.now()), ...extra });
  process.stderr.write(`code_server.mjs: ${name}\n`);
};

const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
  ],
  viewport: { width: 1440, height: 900 },
});

async function shot(page, name) {
  if (config.screenshots) await page.screenshot({ path: join(config.screenshots, `vscode-${name}.png`) });
}

/** A row of the Sessions view whose text contains `text`. */
const row = (page, text) => page.locator(".monaco-list-row", { hasText: text }).first();

async function palette(page, command, pickText) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${command}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: pickText ?? command }).first().waitFor();
  await page.keyboard.press("Enter");
}

/**
 * Run `command` from the palette and click its quick pick's row containing `rowText`. A quick
 * pick closes when the workbench's focus moves (VS Code's rule for pickers without
 * `ignoreFocusOut`): the viewer's webview, opened just before, can take the focus as it finishes
 * loading on a busy machine, and the picker was then hidden under the click (a clean-clone CI
 * run timed out on it). So a picker that is gone is asked for again, up to three times.
 */
async function paletteAndPick(page, command, rowText) {
  for (let attempt = 1; ; attempt++) {
    await palette(page, command);
    const rows = page.locator(".quick-input-list .monaco-list-row", { hasText: rowText });
    try {
      await rows.first().waitFor({ state: "visible", timeout: 15_000 });
      await rows.first().click({ timeout: 10_000 });
      return;
    } catch (err) {
      if (attempt >= 3) throw err;
      result.console.push(`${command}: the quick pick closed before the click (attempt ${attempt}), asking again`);
      await page.keyboard.press("Escape");
      await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 5_000 }).catch(() => undefined);
    }
  }
}

const page = await context.newPage();
try {
  page.setDefaultTimeout(TIMEOUT);
  page.on("pageerror", (e) => result.console.push(`pageerror: ${e.message}`));

  // ---- VS Code opens on the workspace; the Sessions view lists this workspace's sessions first
  await page.goto(`${config.url}/?folder=${encodeURIComponent(config.workspace)}`);
  await page.locator(".monaco-workbench").waitFor();
  step("workbench");
  await page.locator('.activitybar [aria-label^="Agent sessions"]').first().click();
  const folder = row(page, "this workspace");
  await folder.waitFor();
  const agentRow = row(page, config.agent.title);
  await agentRow.waitFor();
  result.rows = await page.locator(".monaco-list-row").allInnerTexts();
  step("sessions view", { rows: result.rows.length });
  await shot(page, "sessions");

  // ---- expand the agent's session: its branches, the current one expanded with its entries
  await agentRow.click(); // runs "Show usage" (the status bar follows it) and expands it
  const entry = row(page, config.agent.entryText);
  try {
    await entry.waitFor({ timeout: 10_000 });
  } catch {
    await agentRow.click();
    await page.keyboard.press("ArrowRight");
    await entry.waitFor();
  }
  step("expanded");
  const gauge = page.locator(".statusbar-item", { hasText: /\d+% · / }).first();
  await gauge.waitFor();
  result.gaugeBefore = (await gauge.innerText()).trim();
  await shot(page, "expanded");

  // ---- click an entry: the viewer opens at it, its data through the extension's bridge
  await entry.click();
  const webview = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
  await webview.locator(`.session[data-session="${config.agent.sessionId}"]`).waitFor();
  result.viewerSession = config.agent.sessionId;
  result.viewerEntry = await webview
    .locator(`[data-entry="${config.agent.entryId}"]`)
    .first()
    .waitFor({ timeout: 10_000 })
    .then(() => true)
    .catch(() => false);
  step("viewer", { atEntry: result.viewerEntry });
  await page.waitForTimeout(500);
  await shot(page, "viewer");

  // ---- Rewind… from the palette (the session the status bar follows): the diff editor opens
  await paletteAndPick(page, "sessiond: Rewind", config.agent.firstPromptText);
  await page.locator(".monaco-diff-editor").first().waitFor();
  // the modal question: leave the files alone
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor();
  result.rewindQuestion = (await dialog.innerText()).split("\n")[0];
  await shot(page, "rewind-dialog");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  result.diffTabs = await page.locator(".tabs-container .tab").allInnerTexts();
  step("rewind diff", { tabs: result.diffTabs.length });
  await shot(page, "rewind-diff");

  // ---- Search Sessions: live results from the daemon's search/query (or the reason there are none)
  await palette(page, "sessiond: Search Sessions");
  const query = page.locator(".quick-input-widget input");
  await query.waitFor({ state: "visible" });
  await query.fill(config.search);
  const answer = page.locator(".quick-input-list .monaco-list-row", { hasText: /«|Search failed|No session says that/ }).first();
  await answer.waitFor();
  result.search = await page.locator(".quick-input-list .monaco-list-row").allInnerTexts();
  step("search", { rows: result.search.length });
  await shot(page, "search");
  await page.keyboard.press("Escape");

  // ---- the session grows (the Python side appends through the daemon): the gauge follows
  process.stdout.write("GROW\n");
  await lines.next();
  await page.waitForFunction(
    (before) =>
      [...document.querySelectorAll(".statusbar-item")].some(
        (el) => /\d+% · /.test(el.textContent ?? "") && !(el.textContent ?? "").includes(before.replace(/^\S+ /, "")),
      ),
    result.gaugeBefore,
  );
  result.gaugeAfter = (await gauge.innerText()).trim();
  // today's cost beside it, where the daemon has stats/query. Until the grown answer (the day's
  // only priced model) is counted, today is "unpriced" (the scenario's other answers name a model
  // no registry knows); its stats_update may come after the gauge's update: wait for the price.
  const costItem = page.locator(".statusbar-item", { hasText: / today$/ }).first();
  result.cost = await page
    .locator(".statusbar-item", { hasText: /\$\d+(\.\d\d)? today$/ })
    .first()
    .innerText({ timeout: 15_000 })
    .catch(() => costItem.innerText({ timeout: 5_000 }))
    .then((t) => t.trim())
    .catch(() => null);
  step("gauge", { before: result.gaugeBefore, after: result.gaugeAfter });
  await shot(page, "gauge");
} catch (err) {
  result.error = String(err?.stack ?? err);
  await shot(page, "failure").catch(() => undefined);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  // stdin (the Python side's answers) would keep the process alive
  process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
}
