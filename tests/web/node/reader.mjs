// Drives the viewer as a reader in Debian's headless Chromium (tests/web/test_reader_e2e.py):
// rendered transcripts (Claude Code and Codex fixtures), a hostile transcript (nothing may
// run), deep links, keyboard navigation, follow mode with a live append, a 360 px window, dark
// mode, the search page and the usage dashboard. Prints what it saw as one JSON object.
// Usage: node reader.mjs CONFIG.json

import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const TIMEOUT = 20_000;
const result = { console: [], dialogs: [], steps: [] };
const profile = mkdtempSync(join(tmpdir(), "sessiond-reader-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: config.chromium,
  headless: true,
  args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync"],
  viewport: { width: 1400, height: 860 },
});
const step = (name) => result.steps.push(name);
const shot = (page, name) => page.screenshot({ path: join(config.screenshots, `${name}.png`) });

/** Opens the page at a fragment (a full load, as a link from elsewhere would). */
async function open(page, fragment) {
  await page.goto("about:blank");
  await page.goto(`${config.url}#${fragment}`);
}

/** The rich renderer is loaded and every Markdown text on the page is rendered. */
async function rendered(page) {
  await page.waitForFunction(() => document.querySelector(".md") && !document.querySelector(".md.plain"));
}

/** What could have run: the flag the payloads set, scripts and handlers in the reader's DOM. */
async function xssState(page) {
  return page.evaluate(() => ({
    flag: window.__xss ?? null,
    scripts: document.querySelectorAll("main script, .page script").length,
    handlers: [...document.querySelectorAll("main *, .page *")].filter((el) =>
      [...el.attributes].some((a) => a.name.startsWith("on")),
    ).length,
    jsLinks: [...document.querySelectorAll("a[href]")].filter((a) => /^\s*javascript:/i.test(a.getAttribute("href")))
      .length,
    iframes: document.querySelectorAll("iframe").length,
    styled: document.querySelectorAll(".md [style]").length,
  }));
}

const page = await context.newPage();
try {
  page.setDefaultTimeout(TIMEOUT);
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") result.console.push(`[after ${result.steps.at(-1) ?? "start"}] ${m.text()}`);
  });
  // a blocked attempt is a failure too: say what tried (the CSP stops it, the page must not need that)
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      const el = e.target instanceof Element ? e.target.outerHTML.slice(0, 200) : String(e.target);
      console.error(`CSP violation ${e.violatedDirective}: ${e.sample} on ${el}`);
    });
  });
  page.on("pageerror", (e) => result.console.push(`pageerror: ${e.message}`));
  page.on("dialog", (d) => {
    result.dialogs.push(d.message());
    void d.dismiss();
  });
  await open(page, `token=${config.token}`);
  await page.waitForSelector('.status[data-status="open"]');

  // ---- the hostile transcript, read: rendered, and nothing in it runs
  const h = config.hostile;
  await open(page, `session=${h.sessionId}&tab=context`);
  await page.waitForSelector(".ctx-msg");
  await rendered(page);
  await page.hover(".md");
  // every tool card, every fold opened: what is behind a click must not run either
  for (const button of await page.$$(".collapsible > button")) await button.click();
  await page.waitForTimeout(300);
  result.xssContext = await xssState(page);
  result.reader = await page.evaluate(() => {
    const card = (kind) => document.querySelector(`.tool-call[data-tool-kind="${kind}"]`);
    return {
      markdownBold: document.querySelectorAll(".md strong").length,
      codeHighlighted: document.querySelectorAll(".md pre.code .hljs-keyword").length,
      thinking: document.querySelectorAll(".collapsible.thinking").length,
      terminalColoured: card("shell")?.querySelectorAll(".term-out span[style*='color']").length ?? 0,
      terminalFolded: !!card("shell")?.querySelector(".fold"),
      terminalText: card("shell")?.querySelector(".term-out")?.textContent ?? "",
      diffAdded: card("edit")?.querySelectorAll(".diff .add").length ?? 0,
      diffRemoved: card("edit")?.querySelectorAll(".diff .del").length ?? 0,
      numbered: card("read")?.querySelector(".gutter")?.textContent ?? "",
      errors: document.querySelectorAll(".tool-call.tool-error").length,
      images: [...document.querySelectorAll("img.attached-image")].map((i) => i.naturalWidth),
      injected: [...document.querySelectorAll(".injected-tag, .collapsible.injected > button")].map((e) => e.textContent),
      links: [...document.querySelectorAll(".md a")].map((a) => [a.textContent, a.getAttribute("href"), a.getAttribute("target"), a.getAttribute("rel")]),
      remoteImages: [...document.querySelectorAll(".md img")].map((i) => i.getAttribute("src")),
    };
  });
  await page.click(".tool-call[data-tool-kind='edit'] .raw-toggle");
  result.rawJson = await page.textContent(".tool-call[data-tool-kind='edit'] pre.raw");
  await page.click(".tool-call[data-tool-kind='edit'] .raw-toggle");
  await page.evaluate(() => document.querySelector(".context-view").scrollTo(0, 0));
  await shot(page, "ui-reader-hostile");
  // the same entries in the tree's entry panel
  await page.click('.tabs [data-tab="tree"]');
  await page.click(`.node[data-id="${h.answer}"]`);
  await page.waitForSelector(`.entry-panel[data-entry="${h.answer}"] .md:not(.plain)`);
  await page.click(`.node[data-id="${h.prompt}"]`);
  await page.waitForSelector(`.entry-panel[data-entry="${h.prompt}"] .md:not(.plain)`);
  await page.click(`.node[data-id="${h.reminder}"]`);
  await page.waitForSelector(`.entry-panel[data-entry="${h.reminder}"] .injected-tag`);
  result.metaTag = await page.textContent(`.entry-panel[data-entry="${h.reminder}"] .injected-tag`);
  result.xssPanel = await xssState(page);
  step("hostile");

  // ---- the Claude Code fixture: context (cards of every kind), a deep link to an entry
  const c = config.claude;
  await open(page, `session=${c.sessionId}&tab=context`);
  await page.waitForSelector(".ctx-msg");
  await rendered(page);
  result.claudeKinds = await page.$$eval(".tool-call", (els) => [...new Set(els.map((e) => e.dataset.toolKind))].sort());
  await shot(page, "ui-reader-claude");
  await open(page, `session=${c.sessionId}&entry=${c.entry}`);
  await page.waitForSelector(`.node.selected[data-id="${c.entry}"]`);
  await page.waitForSelector(`.entry-panel[data-entry="${c.entry}"] .entry-body .tool-call, .entry-panel[data-entry="${c.entry}"] .entry-body .md`);
  result.deepLink = await page.evaluate((id) => {
    const row = document.querySelector(`.node[data-id="${id}"]`).getBoundingClientRect();
    const tree = document.querySelector(".tree").getBoundingClientRect();
    return { visible: row.top >= tree.top && row.bottom <= tree.bottom, hash: location.hash };
  }, c.entry);
  await shot(page, "ui-tree-entry");
  // context at that entry
  await page.click('.tabs [data-tab="context"]');
  await page.waitForSelector(`.ctx-msg.focused`);
  result.contextFocus = await page.$eval(".ctx-msg.focused", (el) => {
    const r = el.getBoundingClientRect();
    const box = document.querySelector(".context-view").getBoundingClientRect();
    return { entry: el.dataset.entry, visible: r.bottom > box.top && r.top < box.bottom };
  });
  step("claude");

  // ---- keyboard: arrows / j k move the selection, Escape closes the entry, / opens search
  await page.click('.tabs [data-tab="tree"]');
  await page.waitForSelector(".tree");
  await page.focus(".tree");
  const before = await page.$eval(".node.selected", (el) => el.dataset.id);
  await page.keyboard.press("ArrowDown");
  await page.waitForFunction((b) => document.querySelector(".node.selected")?.dataset.id !== b, before);
  const down = await page.$eval(".node.selected", (el) => el.dataset.id);
  await page.keyboard.press("k");
  await page.waitForFunction((d) => document.querySelector(".node.selected")?.dataset.id !== d, down);
  const up = await page.$eval(".node.selected", (el) => el.dataset.id);
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !document.querySelector(".entry-panel"));
  await page.keyboard.press("/");
  await page.waitForSelector(".search-box");
  result.keyboard = { before, down, up, hash: await page.evaluate(() => location.hash), searchFocused: await page.evaluate(() => document.activeElement?.classList.contains("search-box")) };
  // the session list: arrows move, Enter opens
  await open(page, "");
  await page.waitForSelector(".session-list li");
  await page.focus(".session-list li:first-child");
  await page.keyboard.press("ArrowDown");
  const second = await page.evaluate(() => document.activeElement?.dataset.session);
  await page.keyboard.press("Enter");
  await page.waitForSelector(`.session[data-session="${second}"] .tree[data-rows]`);
  result.keyboard.listOpened = { second, hash: await page.evaluate(() => location.hash) };
  step("keyboard");

  // ---- the Codex fixture
  const x = config.codex;
  await open(page, `session=${x.sessionId}&tab=context`);
  await page.waitForSelector(".ctx-msg");
  await rendered(page);
  result.codexKinds = await page.$$eval(".tool-call", (els) => [...new Set(els.map((e) => e.dataset.toolKind))].sort());
  await shot(page, "ui-reader-codex");
  step("codex");

  // ---- follow mode: the tree at its bottom stays there as the transcript grows
  const l = config.live;
  await open(page, `session=${l.sessionId}`);
  await page.waitForSelector(".tree[data-rows]");
  await page.waitForFunction(() => document.querySelector(".tree").dataset.partial === "false");
  const rowsBefore = await page.$eval(".tree", (el) => Number(el.dataset.entries));
  await page.evaluate(() => {
    const t = document.querySelector(".tree");
    t.scrollTop = t.scrollHeight;
    t.dispatchEvent(new Event("scroll"));
  });
  await page.waitForFunction(() => document.querySelector(".tree").dataset.following === "true");
  const turns = readFileSync(l.pendingFile, "utf-8").split("\n").filter(Boolean);
  appendFileSync(l.path, turns.slice(0, 4).join("\n") + "\n");
  await page.waitForFunction((n) => Number(document.querySelector(".tree").dataset.entries) >= n + 4, rowsBefore);
  await page.waitForFunction((id) => {
    const row = document.querySelector(`.node[data-id="${id}"]`);
    if (!row) return false;
    const r = row.getBoundingClientRect();
    const t = document.querySelector(".tree").getBoundingClientRect();
    return r.bottom <= t.bottom + 1 && r.top >= t.top;
  }, l.firstNewLeaf);
  result.follow = {
    fresh: await page.$$eval(".node.fresh", (els) => els.map((e) => e.dataset.id)),
    following: await page.$eval(".tree", (el) => el.dataset.following),
  };
  await shot(page, "ui-follow");
  // scrolled up: the view stays where the reader is, and says what arrived
  await page.evaluate(() => {
    const t = document.querySelector(".tree");
    t.scrollTop = 0;
    t.dispatchEvent(new Event("scroll"));
  });
  await page.waitForFunction(() => document.querySelector(".tree").dataset.following === "false");
  appendFileSync(l.path, turns.slice(4, 8).join("\n") + "\n");
  await page.waitForSelector(".follow-button");
  result.notFollowing = {
    scrollTop: await page.$eval(".tree", (el) => el.scrollTop),
    button: await page.textContent(".follow-button"),
  };
  // the context view follows too: at its bottom, a new turn comes into view, highlighted
  await page.click('.tabs [data-tab="context"]');
  await page.waitForSelector(".ctx-msg");
  await page.waitForFunction(() => {
    const v = document.querySelector(".context-view");
    return v.scrollHeight - v.scrollTop - v.clientHeight < 48;
  });
  const lastBefore = await page.$$eval(".ctx-msg", (els) => els.at(-1).dataset.entry);
  appendFileSync(l.path, turns.slice(8, 12).join("\n") + "\n");
  await page.waitForFunction((id) => [...document.querySelectorAll(".ctx-msg")].at(-1).dataset.entry !== id, lastBefore);
  await page.waitForFunction(() => {
    const v = document.querySelector(".context-view");
    const last = [...document.querySelectorAll(".ctx-msg")].at(-1).getBoundingClientRect();
    return last.bottom <= v.getBoundingClientRect().bottom + 1;
  });
  result.contextFollow = {
    fresh: await page.$$eval(".ctx-msg.fresh", (els) => els.length),
    following: await page.$eval(".context-view", (el) => el.dataset.following),
  };
  step("follow");

  // ---- a phone-sized window: every row keeps its text, nothing is cut or overflows
  await page.setViewportSize({ width: 360, height: 740 });
  await open(page, "");
  await page.waitForSelector(".session-list li");
  await shot(page, "ui-360-list");
  await open(page, `session=${c.sessionId}`);
  await page.waitForSelector(".tree[data-rows] .node");
  await page.waitForFunction(() => document.querySelector(".tree").dataset.partial === "false");
  await page.waitForTimeout(200);
  result.narrow = await page.evaluate(() => {
    const rows = [...document.querySelectorAll(".node")].filter((n) => n.getBoundingClientRect().height > 0);
    const stats = document.querySelector(".tree-stats");
    return {
      rows: rows.length,
      emptyPreviews: rows.filter((n) => {
        const p = n.querySelector(".preview");
        return p && p.textContent.trim() && p.getBoundingClientRect().width < 40;
      }).length,
      statsText: stats.textContent,
      statsCut: stats.scrollWidth > stats.clientWidth + 1 || stats.getBoundingClientRect().right > innerWidth + 1,
      pageOverflow: document.documentElement.scrollWidth > innerWidth + 1,
    };
  });
  await shot(page, "ui-360-tree");
  await page.click(".node:nth-child(3)");
  await page.waitForSelector(".entry-panel .entry-body :is(.md, .tool-call, pre, div)");
  result.narrowPanel = await page.evaluate(() => ({
    panelWidth: document.querySelector(".entry-panel").getBoundingClientRect().width,
    pageOverflow: document.documentElement.scrollWidth > innerWidth + 1,
  }));
  await shot(page, "ui-360-entry");
  await page.click('.tabs [data-tab="context"]');
  await page.waitForSelector(".ctx-msg");
  await rendered(page);
  result.narrowContextOverflow = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
  await shot(page, "ui-360-context");
  // the search page and the dashboard fit too
  result.narrowPages = {};
  for (const [name, fragment, ready] of [
    ["search", `view=search&q=${encodeURIComponent(config.search.query)}`, ".unavailable, .hit, .search-count"],
    ["usage", "view=usage", ".unavailable, .dash-cards .big"],
  ]) {
    await open(page, fragment);
    await page.waitForSelector(ready);
    await page.waitForTimeout(300);
    result.narrowPages[name] = await page.evaluate(() => document.documentElement.scrollWidth > innerWidth + 1);
  }
  await page.setViewportSize({ width: 1400, height: 860 });
  step("narrow");

  // ---- the empty entry panel takes no room
  await open(page, `session=${c.sessionId}`);
  await page.waitForSelector(".tree[data-rows] .node");
  result.noPanel = await page.evaluate(() => ({
    panel: !!document.querySelector(".entry-panel"),
    tree: document.querySelector(".tree-pane").getBoundingClientRect().width,
    split: document.querySelector(".tree-split").getBoundingClientRect().width,
  }));
  step("wide");

  // ---- dark mode: the system's choice, and the toggle
  await page.emulateMedia({ colorScheme: "dark" });
  await open(page, `session=${h.sessionId}&tab=context`);
  await page.waitForSelector(".ctx-msg");
  await rendered(page);
  const bg = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  result.dark = { system: await bg() };
  await shot(page, "ui-dark");
  await page.emulateMedia({ colorScheme: "light" });
  result.dark.light = await bg();
  await page.click(".theme-toggle");
  result.dark.toggled = await bg();
  result.dark.choice = await page.$eval(".theme-toggle", (el) => el.dataset.themeChoice);
  await page.reload();
  await page.waitForSelector(".ctx-msg");
  result.dark.afterReload = await bg();
  await page.click(".theme-toggle");
  await page.click(".theme-toggle");
  result.dark.back = await page.$eval(".theme-toggle", (el) => el.dataset.themeChoice);
  step("dark");

  // ---- search: a box across sessions; a hit opens the session at its entry
  await open(page, `view=search&q=${encodeURIComponent(config.search.query)}`);
  await page.waitForSelector(".unavailable, .hit, .search-count, .search-error");
  if (await page.$(".unavailable")) {
    result.search = { unavailable: await page.$eval(".unavailable", (el) => el.dataset.method) };
  } else {
    await page.waitForSelector(".hit");
    result.search = {
      marks: await page.$$eval(".hit mark", (els) => els.map((e) => e.textContent)),
      hits: await page.$$eval(".hit", (els) => els.map((e) => ({ session: e.dataset.session, entry: e.dataset.entry }))),
      snippetHtml: await page.$eval(".hit .snippet", (el) => el.innerHTML),
    };
    await shot(page, "ui-search");
    const first = result.search.hits[0];
    await page.click(".hit .hit-link");
    await page.waitForSelector(`.node.selected[data-id="${first.entry}"]`);
    result.search.opened = await page.evaluate(() => location.hash);
  }
  await open(page, `view=search&q=${encodeURIComponent("<img src=x onerror=window.__xss=1>")}`);
  await page.waitForSelector(".unavailable, .hit, .search-count, .search-error");
  await page.waitForTimeout(300);
  result.xssSearch = await xssState(page);
  if (result.search.unavailable) await shot(page, "ui-search");
  step("search");

  // ---- usage dashboard
  await open(page, `view=usage&session=${c.sessionId}`);
  await page.waitForSelector(".unavailable, .dash-cards .big");
  if (await page.$(".unavailable")) {
    result.usage = { unavailable: await page.$eval(".unavailable", (el) => el.dataset.method) };
  } else {
    // the fixtures are from earlier in the year: all time
    await page.selectOption('select[aria-label="period"]', "0");
    await page.waitForSelector(".bars .bar rect");
    const bars = () => page.$$eval(".bars .bar", (els) => els.filter((e) => e.querySelector("rect")).map((e) => e.dataset.period));
    result.usage = {
      bars: await bars(),
      rows: await page.$$eval(".usage-table tbody tr", (els) => els.length),
      total: await page.textContent("[data-testid=total] .big"),
      sessionCost: await page.textContent("[data-testid=session-cost] .big"),
      projects: await page.$$eval('select[aria-label="project"] option', (els) => els.map((e) => e.value).filter(Boolean)),
    };
    await page.selectOption('select[aria-label="stack by"]', "agent");
    await page.waitForFunction(() => [...document.querySelectorAll(".legend span")].some((e) => e.textContent.includes("Codex")));
    result.usage.legendByAgent = await page.$$eval(".legend > span", (els) => els.map((e) => e.textContent.trim()));
    await shot(page, "ui-usage-dashboard");
    await page.selectOption('select[aria-label="agent"]', "codex");
    await page.waitForFunction((n) => document.querySelectorAll(".usage-table tbody tr").length < n, result.usage.rows);
    result.usage.codexBars = await bars();
  }
  if (result.usage.unavailable) await shot(page, "ui-usage-dashboard");
  step("usage");
} catch (err) {
  result.error = String(err?.stack ?? err);
  try {
    await shot(page, "failure");
  } catch {}
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result) + "\n");
