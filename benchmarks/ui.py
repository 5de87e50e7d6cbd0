"""The session viewer in headless Chromium: first paint of the tree, and append -> visible.

A daemon (``python -m sessiond serve``) on a scratch store holding

* a 10,000-entry Pi session (a long conversation with a side branch every 500 entries),
* a 3 MB Claude Code transcript in the Claude root (``--quick``: 1 MB), and
* a 10-entry session: the reference, measured in the same run;

then ``ui_page.mjs`` (playwright-core driving Debian's Chromium) opens the viewer on each:

1. **first paint** - from navigation start to the tree's first paint (the page's
   ``sessiond-tree-painted`` mark, set after the frame showing the first rows: for a large
   session the newest entries, which ``session/tail`` reads from the file's end without
   opening the session), median of ``--runs`` loads, against the goal of 300 ms and the
   10-entry session's paint; then **whole tree** - to ``sessiond-tree-complete`` (every entry
   from ``tree/get``, after ``session/subscribe`` opened the session); beside them
   ``tree/get``'s round trip as the page saw it, the entry count and the DOM rows drawn (the
   tree is virtualised).
2. **append -> visible** - the Pi session: a second WebSocket connection in the page appends
   one message at a time (``session/append``); from the send to the tree's entry count
   changing (a MutationObserver), p50/p99, against the append's own round trip. The Claude
   Code transcript: this process appends a turn (4 lines) to the file; from the write to the
   count changing, against the time to the last ``entries_appended`` notification of that turn
   reaching the page (the daemon's part: its watcher and follow).

Run: ``.venv/bin/python -m benchmarks.ui [--quick] [--json] [--runs N] [--samples N]``; needs
``scripts/setup-web-tests``. Scratch files go to ``benchmarks/out/ui-tmp/`` (removed at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.harness import OUT_DIR, REPO, Bench, Daemon, Extract, Scratch, log, main, pct
from tests.builders import Ledger
from tests.web.stores import big_claude_transcript, big_pi_session

BENCH = Bench(
    "ui",
    "benchmarks.ui",
    "the session viewer in headless Chromium",
    "a 10-entry session's first paint; the append's own round trip; the daemon's notification",
    {"smoke": ("--samples", "5", "--runs", "1", "--quick"), "quick": ("--quick",), "full": ()},
    quick="a 1 MB transcript, 30 appends",
)
NODE_MODULES = REPO / "tests" / "web" / "node" / "node_modules"
PAGE_SCRIPT = REPO / "benchmarks" / "ui_page.mjs"
CHROMIUM = os.environ.get("SESSIOND_CHROMIUM") or "/usr/bin/chromium"
GOAL_MS = 300.0
"""Issue 28's goal for the first paint of a 10,000-entry session and of a 4 MB transcript."""


def ms(samples: list[float]) -> dict[str, float]:
    return {"p50": pct(samples, 0.5), "p99": pct(samples, 0.99), "max": max(samples), "n": len(samples)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=3, help="page loads per session for the paint (median)")
    parser.add_argument("--samples", type=int, default=0, help="appends per session (default 100, quick 30)")


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    samples = args.samples or (30 if args.quick else 100)
    if not (NODE_MODULES / "playwright-core").is_dir() or not Path(CHROMIUM).exists():
        raise SystemExit("benchmarks.ui needs scripts/setup-web-tests (chromium and playwright-core)")
    scratch = Scratch(Path(args.out or OUT_DIR) / "ui-tmp")
    try:
        base = scratch.new_dir("daemon")
        daemon = Daemon(base)
        store_dir = daemon.store / "sessions" / "--bench--"
        store_dir.mkdir(parents=True)
        small = Ledger("bench-small", "/bench")
        for i in range(5):
            small.user(f"question {i}")
            small.assistant(f"answer {i}")
        (store_dir / "2026-01-01T00-00-00-000Z_bench-small.jsonl").write_bytes(small.jsonl())
        log("generating a 10,000-entry Pi session and a Claude Code transcript")
        big_pi_session(store_dir / "2026-01-01T00-00-00-000Z_bench-10k.jsonl", "bench-10k", 10_000)
        claude_bytes = (1 if args.quick else 4) * 1_000_000
        claude = big_claude_transcript(daemon.claude_projects, "/bench/claude", claude_bytes)
        lines_file = base / "claude-more.jsonl"
        lines_file.write_bytes(claude.pending(samples))
        with daemon.start():
            info = json.loads((daemon.socket.parent / "ui.json").read_text())
            config = {
                "url": info["url"],
                "token": (daemon.store / "tcp.token").read_text().strip(),
                "chromium": CHROMIUM,
                "nodeModules": str(NODE_MODULES),
                "paintRuns": args.runs,
                "samples": samples,
                "sessions": [
                    {"name": "10 entries (reference)", "sessionId": "bench-small", "appendBy": "rpc"},
                    {"name": "Pi, 10,000 entries", "sessionId": "bench-10k", "appendBy": "rpc"},
                    {
                        "name": f"Claude Code, {claude.path.stat().st_size / 1e6:.1f} MB",
                        "sessionId": claude.session_id,
                        "appendBy": "file",
                        "path": str(claude.path),
                        "linesFile": str(lines_file),
                        "linesPerTurn": 4,
                    },
                ],
            }
            config_path = base / "page.json"
            config_path.write_text(json.dumps(config))
            log("driving the viewer in Chromium")
            page = subprocess.run(
                ["node", str(PAGE_SCRIPT), str(config_path)],
                capture_output=True,
                check=False,
                text=True,
                timeout=1800,
            )
        if page.returncode != 0:
            raise SystemExit(f"ui_page.mjs failed:\n{page.stderr}")
        seen = json.loads(page.stdout)
        if "error" in seen:
            raise SystemExit(f"ui_page.mjs failed:\n{seen['error']}")
    finally:
        scratch.cleanup()
    results: dict[str, Any] = {"sessions": {}}
    reference_paint = None
    for name, r in seen["sessions"].items():
        paint = statistics.median(p["paintMs"] for p in r["paints"])
        reference_paint = reference_paint or paint
        entry: dict[str, Any] = {
            "entries": r["paints"][-1]["entries"],
            "domRows": r["paints"][-1]["domRows"],
            "firstPaintMs": paint,
            "firstPaintGoalMs": GOAL_MS,
            "completeMs": statistics.median(p["completeMs"] for p in r["paints"]),
            "treeGetMs": statistics.median(p["treeGetMs"] for p in r["paints"]),
            "paintVsReference": paint / reference_paint,
            "appendToVisibleMs": ms(r["latencyMs"]),
            "appendBy": "file" if name.startswith("Claude") else "rpc",
        }
        if r["referenceMs"]:
            entry["referenceMs"] = ms(r["referenceMs"])
            entry["visibleVsReferenceP50"] = entry["appendToVisibleMs"]["p50"] / entry["referenceMs"]["p50"]
        results["sessions"][name] = entry
    return results


def report(results: dict[str, Any]) -> None:
    print(
        f"{'session':<28} {'entries':>8} {'DOM rows':>8} {'first paint':>12} {'goal':>6} {'× ref':>6} "
        f"{'whole tree':>11} {'tree/get':>9}"
    )
    for name, e in results["sessions"].items():
        verdict = "ok" if e["firstPaintMs"] <= e.get("firstPaintGoalMs", GOAL_MS) else "OVER"
        whole = e.get("completeMs", e["firstPaintMs"])
        print(
            f"{name:<28} {e['entries']:>8} {e['domRows']:>8} {e['firstPaintMs']:>10.0f}ms {verdict:>6} "
            f"{e['paintVsReference']:>6.2f} {whole:>9.0f}ms {e['treeGetMs']:>7.0f}ms"
        )
    print()
    print(
        f"{'append -> visible':<28} {'p50':>8} {'p99':>8} {'max':>8}   reference p50/p99 "
        "(RPC: the append's round trip; file: the notification reaching the page)"
    )
    for name, e in results["sessions"].items():
        v = e["appendToVisibleMs"]
        ref = e.get("referenceMs")
        tail = (
            f"   {ref['p50']:.1f} / {ref['p99']:.1f} ms (× {e['visibleVsReferenceP50']:.2f})" if ref else ""
        )
        print(f"{name:<28} {v['p50']:>6.1f}ms {v['p99']:>6.1f}ms {v['max']:>6.1f}ms{tail}")


def extract(results: dict[str, Any]) -> Extract:
    out = Extract()
    sessions = list(results["sessions"].items())
    ref_name, ref = sessions[0]
    for name, e in sessions[1:]:
        out.add(
            f"first paint, {name}", e["firstPaintMs"], "ms", f"first paint, {ref_name}", ref["firstPaintMs"]
        )
        if "completeMs" in e:
            out.add(
                f"whole tree painted, {name}",
                e["completeMs"],
                "ms",
                f"first paint, {name}",
                e["firstPaintMs"],
            )
    for name, e in sessions:
        r = e.get("referenceMs")
        what = "the append's round trip" if e["appendBy"] == "rpc" else "the daemon's notification"
        out.add(
            f"append -> visible p50, {name}",
            e["appendToVisibleMs"]["p50"],
            "ms",
            f"{what} p50" if r else None,
            r["p50"] if r else None,
        )
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
