"""Start-up of the ``sessiond`` command: ``sessiond --help``, against a bare interpreter.

Every call of the command line pays for the interpreter and its imports before it does anything
(issue 30 item 2: ``--help`` used to import rich, pydantic, the inspection, every format and the
compaction, ~190 ms). Two figures, each beside a reference measured in the same run:

* the wall time of ``sessiond --help > /dev/null`` (a fresh process; best of ``runs``) against
  ``python -c pass`` (the interpreter alone, the floor of any Python command);
* the Python imports of ``--help`` (``python -X importtime``: the summed self-time of every module
  it loads that a bare ``python -c pass`` does not) against the same sum for
  ``import argparse, json`` (what the smallest argparse command loads). The goal: <= 80 ms.

Which modules ``--help``, ``ls`` and ``connect`` load is asserted (not timed) by
``tests/cli/test_startup_imports.py``. The figures are rows of the ``inspect`` benchmark
(:mod:`benchmarks.inspect_bench`); run alone: ``.venv/bin/python -m benchmarks.startup [--runs 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def _wall_ms(argv: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Best and median wall time of ``argv`` (output to /dev/null), after one warm-up run."""
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        if i:
            times.append((time.perf_counter() - t0) * 1e3)
    return {"bestMs": min(times), "medianMs": statistics.median(times)}


def import_times(argv: list[str], env: dict[str, str]) -> dict[str, int]:
    """Module -> self import time in µs, from ``python -X importtime`` running ``argv``."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        check=True,
    )
    out: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        m = _LINE.match(line)
        if m:
            out[m.group(4)] = int(m.group(1))
    return out


def _imports_ms(argv: list[str], runs: int, env: dict[str, str]) -> dict[str, Any]:
    """The import time ``argv`` adds to a bare interpreter (best of ``runs``), and its modules."""
    bare = set(import_times(["-c", "pass"], env))
    best: float | None = None
    modules: list[str] = []
    for _ in range(runs):
        times = import_times(argv, env)
        extra = {m: t for m, t in times.items() if m not in bare}
        total = sum(extra.values()) / 1e3
        if best is None or total < best:
            best, modules = total, sorted(extra)
    heavy = [m for m in modules if m.split(".")[0] in HEAVY]
    return {"bestMs": best, "modules": len(modules), "heavy": heavy}


HEAVY = ("rich", "pydantic", "pydantic_core", "anyio", "mcp")
"""Third-party packages ``--help`` must not load (recorded in the results when it does)."""


def measure(runs: int = 5) -> dict[str, Any]:
    """``sessiond --help`` against ``python -c pass`` (wall) and ``import argparse, json`` (imports)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["NO_COLOR"] = "1"
    python = sys.executable
    return {
        "runs": runs,
        "helpWall": _wall_ms([python, "-m", "sessiond", "--help"], runs, env),
        "bareWall": _wall_ms([python, "-c", "pass"], runs, env),
        "helpImports": _imports_ms(["-m", "sessiond", "--help"], runs, env),
        "argparseImports": _imports_ms(["-c", "import argparse, json"], runs, env),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.chdir(Path(__file__).resolve().parent.parent)
    res = measure(max(1, args.runs))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    wall, imports = res["helpWall"], res["helpImports"]
    print(
        f"sessiond --help: {wall['bestMs']:.0f} ms wall (median {wall['medianMs']:.0f}), "
        f"python -c pass: {res['bareWall']['bestMs']:.0f} ms"
    )
    print(
        f"imports of --help: {imports['bestMs']:.1f} ms ({imports['modules']} modules), "
        f"import argparse, json: {res['argparseImports']['bestMs']:.1f} ms; "
        f"heavy modules loaded: {', '.join(imports['heavy']) or 'none'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
