#!/usr/bin/env python3
"""The session viewer in headless Chromium: first paint of the tree, and append -> visible.

A daemon (``python -m sessiond serve``) on a scratch store holding

* a 10,000-entry Pi session (a long conversation with a side branch every 500 entries),
* a 3 MB Claude Code transcript in the Claude root (``--quick``: 1 MB), and
* a 10-entry session: the reference, measured in the same run;

then ``ui_page.mjs`` (playwright-core driving Debian's Chromium) opens the viewer on each:

1. **first paint** - from navigation start to the tree's first paint (the page's
   ``sessiond-tree-painted`` mark, set after the first render of the rows), median of
   ``--runs`` loads; beside it ``tree/get``'s round trip as the page saw it, the entry count and
   the DOM rows drawn (the tree is virtualised). Ratio: against the 10-entry session's paint.
2. **append -> visible** - the Pi session: a second WebSocket connection in the page appends
   one message at a time (``session/append``); from the send to the tree's entry count
   changing (a MutationObserver), p50/p99, against the append's own round trip. The Claude
   Code transcript: this process appends a turn (4 lines) to the file; from the write to the
   count changing, against the time to the last ``entries_appended`` notification of that turn
   reaching the page (the daemon's part: its watcher and follow).

Run: ``.venv/bin/python benchmarks/ui.py [--quick] [--json] [--runs N] [--samples N]``; needs
``scripts/setup-web-tests``. Scratch files go to ``benchmarks/out/ui-tmp/`` (removed at the end).
"""

# The sibling ``inspect.py`` is named like the stdlib module: keep this directory off sys.path.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.append(_HERE)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from measure import Scratch, pct  # noqa: E402

REPO = Path(_HERE).parent
sys.path.insert(0, str(REPO))
from tests.builders import Ledger  # noqa: E402
from tests.web.stores import big_claude_transcript, big_pi_session  # noqa: E402

NODE_MODULES = REPO / "tests" / "web" / "node" / "node_modules"
CHROMIUM = os.environ.get("SESSIOND_CHROMIUM") or "/usr/bin/chromium"


def start(base: Path) -> tuple[subprocess.Popen[bytes], Path]:
    socket = base / "run" / "sessiond.sock"
    env = {
        **os.environ,
        "SESSIOND_HOME": str(base / "store"),
        "CLAUDE_CONFIG_DIR": str(base / "claude"),
        "PI_CODING_AGENT_DIR": str(base / "pi"),
        "SESSIOND_CONFIG": str(base / "config.toml"),
    }
    (base / "config.toml").write_text("")
    log = open(base / "daemon.log", "ab")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sessiond", "serve", "--socket", str(socket), "--log-level", "warning"],
        stdout=log,
        stderr=log,
        env=env,
    )
    deadline = time.monotonic() + 30
    while not socket.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError((base / "daemon.log").read_text())
        time.sleep(0.02)
    return proc, socket


def ms(samples: list[float]) -> dict[str, float]:
    return {"p50": pct(samples, 0.5), "p99": pct(samples, 0.99), "max": max(samples), "n": len(samples)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 1 MB transcript, fewer samples")
    parser.add_argument("--runs", type=int, default=3, help="page loads per session for the paint (median)")
    parser.add_argument("--samples", type=int, default=0, help="appends per session (default 100, quick 30)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    samples = args.samples or (30 if args.quick else 100)
    if not (NODE_MODULES / "playwright-core").is_dir() or not Path(CHROMIUM).exists():
        print("needs scripts/setup-web-tests (chromium and playwright-core)", file=sys.stderr)
        return 2
    scratch = Scratch(Path(_HERE) / "out" / "ui-tmp")
    base = scratch.new_dir("daemon")
    store_dir = base / "store" / "sessions" / "--bench--"
    store_dir.mkdir(parents=True)
    small = Ledger("bench-small", "/bench")
    for i in range(5):
        small.user(f"question {i}")
        small.assistant(f"answer {i}")
    (store_dir / "2026-01-01T00-00-00-000Z_bench-small.jsonl").write_bytes(small.jsonl())
    big_path = store_dir / "2026-01-01T00-00-00-000Z_bench-10k.jsonl"
    big_pi_session(big_path, "bench-10k", 10_000)
    claude_bytes = (1 if args.quick else 3) * 1_000_000
    claude = big_claude_transcript(base / "claude" / "projects", "/bench/claude", claude_bytes)
    lines_file = base / "claude-more.jsonl"
    lines_file.write_bytes(claude.pending(samples))
    proc, socket = start(base)
    try:
        info = json.loads((socket.parent / "ui.json").read_text())
        config = {
            "url": info["url"],
            "token": (base / "store" / "tcp.token").read_text().strip(),
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
        run = subprocess.run(
            ["node", str(Path(_HERE) / "ui_page.mjs"), str(config_path)],
            capture_output=True,
            check=False,
            text=True,
            timeout=1800,
        )
        if run.returncode != 0:
            print(run.stderr, file=sys.stderr)
            return 1
        seen = json.loads(run.stdout)
        if "error" in seen:
            print(seen["error"], file=sys.stderr)
            return 1
    finally:
        proc.terminate()
        proc.wait(30)
        scratch.cleanup()

    report: dict[str, Any] = {"sessions": {}}
    reference_paint = None
    for name, r in seen["sessions"].items():
        paint = statistics.median(p["paintMs"] for p in r["paints"])
        tree_get = statistics.median(p["treeGetMs"] for p in r["paints"])
        reference_paint = reference_paint or paint
        entry: dict[str, Any] = {
            "entries": r["paints"][-1]["entries"],
            "domRows": r["paints"][-1]["domRows"],
            "firstPaintMs": paint,
            "treeGetMs": tree_get,
            "paintVsReference": paint / reference_paint,
            "appendToVisibleMs": ms(r["latencyMs"]),
        }
        if r["referenceMs"]:
            entry["referenceMs"] = ms(r["referenceMs"])
            entry["visibleVsReferenceP50"] = entry["appendToVisibleMs"]["p50"] / entry["referenceMs"]["p50"]
        report["sessions"][name] = entry
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{'session':<28} {'entries':>8} {'DOM rows':>8} {'first paint':>12} {'× ref':>6} {'tree/get':>9}")
    for name, e in report["sessions"].items():
        print(
            f"{name:<28} {e['entries']:>8} {e['domRows']:>8} {e['firstPaintMs']:>10.0f}ms "
            f"{e['paintVsReference']:>6.2f} {e['treeGetMs']:>7.0f}ms"
        )
    print()
    print(
        f"{'append -> visible':<28} {'p50':>8} {'p99':>8} {'max':>8}   reference p50/p99 "
        "(RPC: the append's round trip; file: the notification reaching the page)"
    )
    for name, e in report["sessions"].items():
        v = e["appendToVisibleMs"]
        ref = e.get("referenceMs")
        tail = (
            f"   {ref['p50']:.1f} / {ref['p99']:.1f} ms (× {e['visibleVsReferenceP50']:.2f})"
            if ref
            else "   (file append)"
        )
        print(f"{name:<28} {v['p50']:>6.1f}ms {v['p99']:>6.1f}ms {v['max']:>6.1f}ms{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
