// The usage dashboard, live: opens `view=usage&session=ID` in Debian's headless Chromium
// (playwright-core with the system executable), reads the open session's cost card, writes
// the file named by config.ready, and waits for the card to change without a reload (the
// pytest side appends a priced response to the session's transcript meanwhile).
// Usage: node usage_live.mjs CONFIG.json  (driven by tests/usage/test_dashboard_live.py)
// Prints what it saw as one JSON object.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const TIMEOUT = 60_000; // "it happened at all" on a loaded machine; the latency is reported
const result = { console: [], steps: [] };
const profile = mkdtempSync(join(tmpdir(), "sessiond-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  viewport: { width: 1200, height: 800 },
});
const page = await context.newPage();
/** A card's big number (the cost) and its small print (tokens, the session's link). */
const card = (id) =>
  page.evaluate((t) => {
    const el = document.querySelector(`[data-testid=${t}]`);
    if (!el) return null;
    return {
      cost: el.querySelector(".big")?.textContent ?? null,
      text: [...el.querySelectorAll(".dim")].map((e) => e.textContent).join(" | "),
    };
  }, id);
try {
  page.setDefaultTimeout(TIMEOUT);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") result.console.push(m.text());
  });
  page.on("pageerror", (e) => result.console.push(`pageerror: ${e.message}`));
  await page.goto(`${config.url}#token=${config.token}`);
  await page.waitForSelector(".session-list");
  await page.goto("about:blank");
  await page.goto(`${config.url}#view=usage&session=${config.sessionId}`);
  // the card shows the session's cost (not the "…" of a pending query) and today's card is there
  await page.waitForFunction(() => {
    const big = document.querySelector("[data-testid=session-cost] .big");
    return big && big.textContent.startsWith("$") && document.querySelector("[data-testid=today] .big");
  });
  await page.evaluate(() => (window.__samePage = "same page"));
  result.before = { session: await card("session-cost"), today: await card("today") };
  step("before");
  writeFileSync(config.ready, "");
  await page.waitForFunction(
    (before) => document.querySelector("[data-testid=session-cost] .big")?.textContent !== before,
    result.before.session.cost,
  );
  result.seenAt = Date.now();
  await page.waitForFunction(
    (before) => document.querySelector("[data-testid=today] .big")?.textContent !== before,
    result.before.today.cost,
  );
  result.after = { session: await card("session-cost"), today: await card("today") };
  result.marker = await page.evaluate(() => window.__samePage ?? null);
  step("after");
  await page.screenshot({ path: join(config.screenshots, "usage-dashboard-live.png") });
} catch (err) {
  result.error = String(err?.stack ?? err);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));

function step(name) {
  result.steps.push(name);
}
