// The reader's pure pieces: ANSI colours, the line diff of edit cards, the URL fragment, and
// search snippets. Run: npx tsc -p tsconfig.test.json && node --test test/

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hasAnsi, parseAnsi } from "../dist-test/web/src/ansi.js";
import { foldContext, lineDiff } from "../dist-test/web/src/diff.js";
import { formatRoute, parseRoute } from "../dist-test/web/src/route.js";
import { snippetPieces } from "../dist-test/web/src/snippet.js";

describe("parseAnsi", () => {
  it("colours, bold and reset; other escapes dropped", () => {
    const segs = parseAnsi("\x1b[32mok\x1b[0m plain \x1b[1;31mbad\x1b[0m\x1b[2K\x1b]0;title\x07 end");
    assert.deepEqual(
      segs.map((s) => [s.text, s.fg, s.bold]),
      [
        ["ok", "#0dbc79", false],
        [" plain ", null, false],
        ["bad", "#cd3131", true],
        [" end", null, false],
      ],
    );
    assert.equal(hasAnsi("no escapes"), false);
  });
  it("256 colours and true colour", () => {
    const [a, b] = parseAnsi("\x1b[38;5;196mred\x1b[48;2;1;2;3mbg");
    assert.equal(a.fg, "rgb(255,0,0)");
    assert.equal(b.bg, "rgb(1,2,3)");
  });
});

describe("lineDiff", () => {
  it("removals before additions, common lines kept", () => {
    const d = lineDiff("a\nb\nc\nd", "a\nB\nc\nd\ne");
    assert.deepEqual(
      d.map((l) => l.op + l.text),
      [" a", "-b", "+B", " c", " d", "+e"],
    );
  });
  it("a new file is all additions", () => {
    assert.deepEqual(lineDiff("", "x\ny").map((l) => l.op), ["+", "+"]);
  });
  it("folds long unchanged runs", () => {
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`).join("\n");
    const after = before.replace("l10", "L10");
    const folded = foldContext(lineDiff(before, after));
    assert.ok(folded.some((l) => l.op === "…"));
    assert.ok(folded.length < 12);
  });
});

describe("route", () => {
  it("round-trips the fragment contract", () => {
    const r = parseRoute("#session=s1&entry=e%2F1&view=search&q=a+b&tab=context");
    assert.deepEqual(r, { view: "search", session: "s1", entry: "e/1", tab: "context", q: "a b" });
    assert.deepEqual(parseRoute(formatRoute(r)), r);
    assert.deepEqual(parseRoute("#view=nonsense&tab=x"), { view: "sessions", session: null, entry: null, tab: "tree", q: "" });
  });
});

describe("snippetPieces", () => {
  it("turns the markers into matches and keeps every other character as text", () => {
    const pieces = snippetPieces("say \u0002<b>hello</b>\u0003 and \u0002bye\u0003!");
    assert.deepEqual(pieces, [
      { text: "say ", match: false },
      { text: "<b>hello</b>", match: true },
      { text: " and ", match: false },
      { text: "bye", match: true },
      { text: "!", match: false },
    ]);
  });
});
