// The viewer opened the way `sessiond ui` opens it: with a one-time code in the URL's fragment.
// Usage: node one_time_code.mjs CONFIG.json ({url, code, chromium}). Prints one JSON object:
// what the tab kept (its viewer token, not the code), whether a reload reconnected with it,
// and what a second tab given the same (spent) code showed.

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const TIMEOUT = 15_000;
const profile = mkdtempSync(join(tmpdir(), "sessiond-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
});
const result = {};
try {
  const page = await context.newPage();
  await page.goto(`${config.url}#code=${encodeURIComponent(config.code)}`);
  // the code is exchanged at the first initialize: the tab then holds the viewer token
  await page.waitForFunction(
    (code) => {
      const kept = sessionStorage.getItem("sessiond-token");
      return kept !== null && kept !== code;
    },
    config.code,
    { timeout: TIMEOUT },
  );
  result.kept = await page.evaluate(() => sessionStorage.getItem("sessiond-token"));
  result.hashAfterLoad = await page.evaluate(() => location.hash);
  // a reload reconnects with the viewer token (the code is spent)
  await page.reload();
  await page.waitForTimeout(1500);
  result.keptAfterReload = await page.evaluate(() => sessionStorage.getItem("sessiond-token"));
  // another tab given the same code: refused
  const other = await context.newPage();
  await other.goto(`${config.url}#code=${encodeURIComponent(config.code)}`);
  await other.waitForTimeout(1500);
  result.otherText = await other.evaluate(() => document.body.innerText);
  result.otherKept = await other.evaluate(() => sessionStorage.getItem("sessiond-token"));
} catch (error) {
  result.error = String(error);
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result));
