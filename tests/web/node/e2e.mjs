// Drives the session viewer in Debian's headless Chromium through playwright-core, against the
// real daemon tests/web/test_viewer_e2e.py started. Usage: node e2e.mjs CONFIG.json
// It does what a person would (click, type, wait for the page to change), saves a screenshot
// of each view, and prints what it saw as one JSON object; the Python test checks that
// against the files on disk.

import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const TIMEOUT = 15_000;
const result = { console: [], steps: [] };
const profile = mkdtempSync(join(tmpdir(), "sessiond-chromium-"));

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
  viewport: { width: 1400, height: 820 },
});

async function shot(page, name) {
  await page.screenshot({ path: join(config.screenshots, `${name}.png`) });
}

/** The files' contents (null: missing), read between two clicks. */
function workspace(root, files) {
  const out = {};
  for (const rel of files) {
    try {
      out[rel] = readFileSync(join(root, rel), "utf-8");
    } catch {
      out[rel] = null;
    }
  }
  return out;
}

const step = (name) => result.steps.push(name);
const attr = (page, selector, name) => page.$eval(selector, (el, n) => el.getAttribute(n), name);

async function openSession(page, sessionId) {
  await page.click(`.session-list li[data-session="${sessionId}"]`);
  await page.waitForSelector(`.session[data-session="${sessionId}"] .tree[data-rows]`, { timeout: TIMEOUT });
}

async function clickNode(page, entryId) {
  await page.click(`.node[data-id="${entryId}"]`);
  await page.waitForSelector(`.entry-panel[data-entry="${entryId}"] .entry-body :is(pre, div)`, { timeout: TIMEOUT });
}

const page = await context.newPage();
try {
  page.setDefaultTimeout(TIMEOUT);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") result.console.push(m.text());
  });
  page.on("pageerror", (e) => result.console.push(`pageerror: ${e.message}`));

  // ---- without the token: the page says how to get it, and the daemon refuses a wrong one
  await page.goto(config.url);
  await page.waitForSelector(".notoken");
  result.noToken = await page.textContent(".notoken");
  await page.goto("about:blank");
  await page.goto(`${config.url}#token=wrong`);
  await page.waitForSelector('.status[data-status="unauthorized"]');
  result.wrongToken = await page.textContent(".status");
  step("token");

  // ---- the list: every root, live, filters
  await page.goto("about:blank");
  await page.goto(`${config.url}#token=${config.token}`);
  await page.waitForFunction(
    (n) => document.querySelectorAll(".session-list li[data-session]").length >= n,
    config.expectSessions,
  );
  result.hashAfterLoad = await page.evaluate(() => location.hash);
  result.list = await page.$$eval(".session-list li", (els) =>
    els.map((e) => ({ id: e.dataset.session, root: e.dataset.root, text: e.textContent })),
  );
  await shot(page, "list");
  await page.selectOption('select[aria-label="root"]', "claude");
  result.onlyClaude = await page.$$eval(".session-list li", (els) => els.map((e) => e.dataset.session));
  await page.selectOption('select[aria-label="root"]', "");
  await page.fill('input[aria-label="search sessions"]', config.searchFor);
  result.searched = await page.$$eval(".session-list li", (els) => els.map((e) => e.dataset.session));
  await page.fill('input[aria-label="search sessions"]', "");
  // another agent starts a session: it appears without a reload
  mkdirSync(dirname(config.newSession.path), { recursive: true });
  writeFileSync(config.newSession.path, readFileSync(config.newSession.source));
  await page.waitForSelector(`.session-list li[data-session="${config.newSession.sessionId}"]`);
  result.listAfterNewSession = await page.$$eval(".session-list li", (els) => els.map((e) => e.dataset.session));
  step("list");

  // ---- a Claude Code transcript growing on disk: the open tree and the gauge follow, no reload
  await openSession(page, config.claude.sessionId);
  await page.waitForFunction(() => document.querySelector('[data-testid="gauge"]')?.dataset.used !== "");
  await page.evaluate(() => {
    window.__sessiondMarker = "same page";
  });
  const before = {
    rows: Number(await attr(page, ".tree", "data-rows")),
    leaf: await attr(page, ".tree", "data-leaf"),
    used: Number(await attr(page, '[data-testid="gauge"]', "data-used")),
  };
  appendFileSync(config.claude.path, readFileSync(config.claude.pendingFile));
  await page.waitForFunction((n) => Number(document.querySelector(".tree")?.dataset.rows) > n, before.rows);
  await page.waitForFunction(
    (u) => Number(document.querySelector('[data-testid="gauge"]')?.dataset.used) !== u,
    before.used,
  );
  await page.waitForFunction(
    (leaf) => document.querySelector(".tree")?.dataset.leaf === leaf,
    config.claude.newLeaf,
  );
  result.live = {
    before,
    after: {
      rows: Number(await attr(page, ".tree", "data-rows")),
      leaf: await attr(page, ".tree", "data-leaf"),
      used: Number(await attr(page, '[data-testid="gauge"]', "data-used")),
    },
    marker: await page.evaluate(() => window.__sessiondMarker ?? null),
  };
  await clickNode(page, config.claude.newLeaf);
  result.claudeReadOnly = {
    navigate: await page.isDisabled('[data-action="navigate"]'),
    label: await page.isDisabled('[data-action="label"]'),
    clone: await page.isDisabled('[data-action="clone"]'),
  };
  await shot(page, "tree-claude-live");
  await page.click('[data-tab="context"]');
  await page.waitForSelector(".context-messages li");
  result.claudeContext = await page.$$eval(".ctx-msg", (els) => els.map((e) => e.className));
  step("claude");

  // ---- the agent's session: context, usage, tree actions
  await openSession(page, config.agent.sessionId);
  await page.click('[data-tab="context"]');
  await page.waitForSelector(".ctx-msg.summary");
  result.agentContext = await page.$$eval(".ctx-msg", (els) =>
    els.map((e) => ({ entry: e.dataset.entry, summary: e.classList.contains("summary"), text: e.textContent })),
  );
  await shot(page, "context");
  await page.click('[data-tab="usage"]');
  await page.waitForSelector(".chart .used");
  result.usage = {
    points: await page.$$eval(".chart .point", (els) => els.length),
    compactions: await page.$$eval(".chart .compaction-mark", (els) => els.map((e) => e.dataset.entry)),
    gauge: await attr(page, '[data-testid="gauge"]', "data-level"),
    percent: Number(await attr(page, '[data-testid="gauge"]', "data-percent")),
  };
  await shot(page, "usage");
  await page.click('[data-tab="tree"]');
  await page.waitForSelector(".tree[data-rows]");

  // label
  await clickNode(page, config.agent.labelTarget);
  await page.fill('input[aria-label="label"]', "e2e label");
  await page.click('[data-action="label"]');
  await page.waitForSelector(`.node[data-id="${config.agent.labelTarget}"] .label-pill`);
  result.label = await page.textContent(`.node[data-id="${config.agent.labelTarget}"] .label-pill`);
  // navigate (continue from an earlier answer)
  await clickNode(page, config.agent.navigateTarget);
  await page.click('[data-action="navigate"]');
  await page.waitForFunction(
    (id) => document.querySelector(".tree")?.dataset.continues === id,
    config.agent.navigateTarget,
  );
  result.leafAfterNavigate = await attr(page, ".tree", "data-leaf");
  result.continuesAfterNavigate = await attr(page, ".tree", "data-continues");
  // fork before a prompt
  await clickNode(page, config.agent.forkTarget);
  await page.click('[data-action="fork"]');
  await page.waitForSelector('[data-action="open-fork"]');
  result.forked = await attr(page, '[data-action="open-fork"]', "data-forked");
  await shot(page, "tree");
  step("tree");

  // ---- file history: preview (dry run), rewind, undo
  await page.click('[data-tab="files"]');
  await page.click(`li[data-checkpoint="${config.agent.rewindTo}"]`);
  await page.waitForSelector(".file-diff");
  const rows = (kind) =>
    page.$$eval(`.rewind-result[data-kind="${kind}"] tbody tr`, (els) =>
      els.map((e) => ({ path: e.dataset.path, action: e.dataset.action, status: e.dataset.status })),
    );
  await page.click('[data-action="preview-rewind"]');
  await page.waitForSelector('.rewind-result[data-kind="preview"]');
  result.dryRun = await rows("preview");
  await shot(page, "files");
  await page.click('[data-action="rewind"]');
  await page.waitForSelector('.rewind-result[data-kind="rewind"]');
  result.rewind = await rows("rewind");
  result.afterRewind = workspace(config.agent.workspace, config.agent.files);
  await page.click('[data-action="undo"]');
  await page.waitForSelector('.rewind-result[data-kind="undo"]');
  result.undo = await rows("undo");
  step("files");
  result.toasts = await page.$$eval(".toast", (els) => els.map((e) => e.textContent));
} catch (err) {
  result.error = String(err?.stack ?? err);
  try {
    await shot(page, "failure");
  } catch {
    // nothing more to show
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result) + "\n");
