// The page's pure logic: the tree's rows, previews of entries learnt from updates (the same as
// the daemon's tree/get previews: SESSIOND_PREVIEW_CASES, written by tests/web/test_page_model.py),
// the usage series. Run: npx tsc -p tsconfig.test.json && node --test test/

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { TreeModel, isBookkeeping, nodeFromEntry, previewOf } from "../dist-test/web/src/treemodel.js";
import { usageSeries } from "../dist-test/web/src/series.js";

const node = (id, parentId, extra = {}) => ({ id, parentId, type: "message", role: "user", preview: id, childCount: 0, ...extra });

describe("TreeModel.rows", () => {
  it("keeps a chain at one depth and indents each branch, the current one first", () => {
    const m = TreeModel.from(
      [node("a", null), node("b", "a"), node("c", "b"), node("x", "b"), node("y", "x")],
      "y",
    );
    const rows = m.rows().map((r) => [r.node.id, r.depth, r.fork, r.onBranch]);
    assert.deepEqual(rows, [
      ["a", 0, false, true],
      ["b", 0, false, true],
      ["x", 1, true, true], // on the branch: first
      ["y", 1, false, true],
      ["c", 1, true, false],
    ]);
  });

  it("hides bookkeeping entries but keeps their children, and finds where the conversation continues", () => {
    const m = TreeModel.from(
      [node("a", null), node("b", "a"), node("m", "b", { type: "custom", role: null, preview: "sessiond.leaf" })],
      "m",
    );
    assert.deepEqual(m.rows(isBookkeeping).map((r) => r.node.id), ["a", "b"]);
    assert.equal(m.continuesFrom(), "b");
  });

  it("walks a 200,000-entry chain without recursion", () => {
    const nodes = [];
    for (let i = 0; i < 200_000; i++) nodes.push(node(`e${i}`, i ? `e${i - 1}` : null));
    const m = TreeModel.from(nodes, "e199999");
    const rows = m.rows();
    assert.equal(rows.length, 200_000);
    assert.ok(rows.every((r) => r.depth === 0 && r.onBranch));
  });

  it("survives a parent cycle and entries whose parent is missing", () => {
    const m = TreeModel.from([node("a", "b"), node("b", "a"), node("o", "gone")], "a");
    assert.equal(m.rows().length, 1); // o is a root; the cycle has no root to start from
    assert.equal(m.branch().size, 2);
  });
});

describe("previews of live entries", () => {
  const file = process.env.SESSIOND_PREVIEW_CASES;
  it("match the daemon's", { skip: file ? false : "run by tests/web/test_page_model.py" }, () => {
    const cases = JSON.parse(readFileSync(file, "utf-8"));
    assert.ok(cases.length > 10);
    for (const { entry, preview, role } of cases) {
      assert.deepEqual(previewOf(entry), { preview, role }, JSON.stringify(entry).slice(0, 200));
      assert.equal(nodeFromEntry(entry).id, entry.id);
    }
  });
});

describe("usageSeries", () => {
  it("takes each assistant usage and marks compactions; errors and aborts do not count", () => {
    const usage = (total) => ({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: total });
    const msg = (id, role, extra = {}) => ({ type: "message", id, message: { role, ...extra } });
    const { points, marks } = usageSeries([
      msg("u1", "user"),
      msg("a1", "assistant", { usage: usage(1000) }),
      msg("a2", "assistant", { usage: { input: 10, output: 5, cacheRead: 100, cacheWrite: 1 } }),
      msg("a3", "assistant", { usage: usage(99999), stopReason: "error" }),
      { type: "compaction", id: "c1", tokensBefore: 5000 },
      msg("a4", "assistant", { usage: usage(300) }),
    ]);
    assert.deepEqual(points.map((p) => [p.entryId, p.used, p.index]), [["a1", 1000, 1], ["a2", 116, 2], ["a4", 300, 5]]);
    assert.deepEqual(marks, [{ index: 4, entryId: "c1", tokensBefore: 5000 }]);
  });
});
