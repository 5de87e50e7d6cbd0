"""Cold ``inspect`` (load + context) of 1, 10 and 50 MB Pi sessions: sessiond vs. the floor vs. Pi.

For each generated session file, every method runs in a fresh process (best of ``--runs``):

* ``orjson floor`` - read the bytes, ``split(b"\\n")``, ``orjson.loads`` every non-empty line
  (objects kept in a list): what merely parsing every line costs, the reference.
* ``sessiond core`` - ``load_session`` + ``SessionTree`` + ``project(tree.context_path())``,
  timed inside the child after its imports (the imports are the separate "imports" figure).
* ``sessiond CLI`` - wall time of ``sessiond inspect --jsonl FILE > /dev/null`` (interpreter
  start, imports, the whole inspect report and its JSON output).
* ``Pi core`` - ``benchmarks/pi_load.mjs`` in a fresh ``node``: Pi 1.6.0's own
  ``SessionManager.open()`` + ``buildSessionContext()``, timed after its imports, from a
  pi-oracle install (``--oracle``; skipped with a note when there is none).

Goal (issue): 50 MB load + context no slower than Pi's own code (``core/Pi`` <= 1.0).

Also the command's start-up (:mod:`benchmarks.startup`, issue 30): ``sessiond --help``'s wall time
against ``python -c pass`` and its Python imports against ``import argparse, json`` (goal <= 80 ms).

Run: ``.venv/bin/python -m benchmarks.inspect_bench [--sizes 1,10,50] [--runs 3] [--quick] [--json]``.
Generated sessions (``benchmarks.pi_sessions``) are cached in ``benchmarks/out/`` (gitignored),
named by size, seed and generator version. See ``benchmarks/README.md`` for the columns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import startup
from benchmarks.harness import BENCH_DIR, MIB, REPO, Bench, Extract, Goal, find_oracle, log, main
from benchmarks.pi_sessions import ensure_session

G_INSPECT = Goal("inspect-vs-pi", 2, "50 MB load + context no slower than Pi's own code", "<=", 1.0, "ratio")
G_HELP = Goal("help-imports", 30, "`sessiond --help`: at most 80 ms of Python imports", "<=", 80.0, unit="ms")
BENCH = Bench(
    "inspect",
    "benchmarks.inspect_bench",
    "cold load + context of generated Pi sessions",
    "a bare orjson line scan; Pi's own SessionManager (pi-oracle)",
    {"smoke": ("--sizes", "1", "--runs", "1"), "quick": ("--quick",), "full": ()},
    (G_INSPECT, G_HELP),
    takes_oracle=True,
    quick="only 1 and 10 MiB, 1 run",
)

# --------------------------------------------------------------------------- child programs
# Each runs as ``python -c CODE FILE`` in a fresh interpreter with cwd = repo root and prints
# one JSON line. ru_maxrss is KiB on Linux. "base" = peak RSS right after the imports.

FLOOR_CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
import orjson
t1 = time.perf_counter()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = sys.argv[1]
t2 = time.perf_counter()
with open(path, "rb") as f:
    data = f.read()
loads = orjson.loads
values = [loads(line) for line in data.split(b"\n") if line]
t3 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stdout.write(orjson.dumps({
    "importMs": (t1 - t0) * 1e3, "coreMs": (t3 - t2) * 1e3, "lines": len(values),
    "baseRssKB": base, "maxRssKB": peak,
}).decode() + "\n")
"""

CORE_CHILD = r"""
import sys, time, resource
t0 = time.perf_counter()
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.model.projection import project
import orjson
t1 = time.perf_counter()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = sys.argv[1]
t2 = time.perf_counter()
loaded = load_session(path)
t3 = time.perf_counter()
tree = SessionTree(loaded.entries)
ctx_path = tree.context_path()
t4 = time.perf_counter()
projection = project(ctx_path)
t5 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sys.stdout.write(orjson.dumps({
    "importMs": (t1 - t0) * 1e3, "coreMs": (t5 - t2) * 1e3,
    "loadMs": (t3 - t2) * 1e3, "treeMs": (t4 - t3) * 1e3, "projectMs": (t5 - t4) * 1e3,
    "entries": len(loaded.entries), "contextMessages": len(projection.messages),
    "leafId": tree.leaf_id, "baseRssKB": base, "maxRssKB": peak,
}).decode() + "\n")
"""

PROFILE_CHILD = r"""
import sys, cProfile, pstats
from sessiond.formats.pi import load_session
from sessiond.model.tree import SessionTree
from sessiond.model.projection import project
path, top = sys.argv[1], int(sys.argv[2])
def core():
    loaded = load_session(path)
    tree = SessionTree(loaded.entries)
    return project(tree.context_path())
prof = cProfile.Profile()
prof.runcall(core)
stats = pstats.Stats(prof, stream=sys.stdout)
stats.strip_dirs()
print("== by cumulative time ==")
stats.sort_stats("cumulative").print_stats(top)
print("== by own time ==")
stats.sort_stats("tottime").print_stats(top)
"""


# --------------------------------------------------------------------------- running children


# Linux keeps a process's peak RSS across execve(), and a spawned child starts from its
# parent's RSS: spawned directly from this (large) process, every child's ru_maxrss would be at
# least ours. So each run goes through this minimal launcher (python -S, ~8 MiB), which forks,
# execs the command and reports wall time and the child's ru_maxrss from wait4().
LAUNCHER = r"""
import os, sys, time
report, argv = sys.argv[1], sys.argv[2:]
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execv(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
t1 = time.perf_counter()
code = os.waitstatus_to_exitcode(status)
with open(report, "w") as f:
    f.write('{"wallMs": %r, "waitMaxRssKB": %d, "exit": %d}' % ((t1 - t0) * 1e3, ru.ru_maxrss, code))
sys.exit(code)
"""


def run_child(cmd: list[str], *, capture: bool = True) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process: wall ms and peak RSS (wait4), plus its JSON stdout."""
    with tempfile.TemporaryDirectory(prefix="sessiond-bench-") as tmp:
        report = os.path.join(tmp, "report.json")
        out_path = os.path.join(tmp, "stdout")
        err_path = os.path.join(tmp, "stderr")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.run(
                [sys.executable, "-S", "-c", LAUNCHER, report, *cmd],
                stdout=out if capture else subprocess.DEVNULL,
                stderr=err,
                cwd=REPO,
                check=False,
            )
        if proc.returncode != 0:
            with open(err_path, "rb") as f:
                tail = f.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{' '.join(cmd[:2])} ... exited {proc.returncode}:\n{tail}")
        with open(report) as f:
            result: dict[str, Any] = {}
            launched = json.load(f)
        if capture:
            with open(out_path, "rb") as f:
                result = json.loads(f.read().decode().strip().splitlines()[-1])
    result["wallMs"] = launched["wallMs"]
    result["waitMaxRssKB"] = launched["waitMaxRssKB"]
    return result


def find_cli() -> str | None:
    for c in (Path(sys.executable).parent / "sessiond", REPO / ".venv/bin/sessiond"):
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("sessiond")


METHODS = ("floor", "core", "cli", "pi")
LABELS = {"floor": "orjson floor", "core": "sessiond core", "cli": "sessiond CLI", "pi": "Pi core (node)"}


def measure(
    path: Path,
    runs: int,
    pi_pkg: Path | None,
    node: str | None,
    cli: str | None,
    log: Callable[[str], None],
) -> dict[str, list[dict[str, Any]]]:
    py = sys.executable
    cmds: dict[str, list[str]] = {
        "floor": [py, "-c", FLOOR_CHILD, str(path)],
        "core": [py, "-c", CORE_CHILD, str(path)],
    }
    if cli:
        cmds["cli"] = [cli, "inspect", "--jsonl", str(path)]
    if pi_pkg and node:
        cmds["pi"] = [node, str(BENCH_DIR / "pi_load.mjs"), str(pi_pkg), str(path)]
    with open(path, "rb") as f:  # the page cache is warm for every method alike
        while f.read(MIB):
            pass
    results: dict[str, list[dict[str, Any]]] = {m: [] for m in cmds}
    for i in range(runs):  # interleaved, so drift hits every method alike
        for m, cmd in cmds.items():
            results[m].append(run_child(cmd, capture=m != "cli"))
        log(
            f"  run {i + 1}/{runs}: "
            + ", ".join(f"{m} {r[-1].get('coreMs', r[-1]['wallMs']):.0f} ms" for m, r in results.items())
        )
    return results


def summarize(path: Path, meta: dict[str, Any], raw: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    size_mib = path.stat().st_size / MIB
    s: dict[str, Any] = {
        "file": str(path),
        "bytes": path.stat().st_size,
        "mib": size_mib,
        "generator": meta,
        "methods": {},
        "ratios": {},
        "checks": [],
    }
    for m, runs in raw.items():
        best = min(runs, key=lambda r: r.get("coreMs", r["wallMs"]))
        peak_kb = max(max(r.get("maxRssKB", 0), r["waitMaxRssKB"]) for r in runs)
        d: dict[str, Any] = {
            "timeMs": best.get("coreMs", best["wallMs"]),
            "wallMs": min(r["wallMs"] for r in runs),
            "peakRssMiB": peak_kb / 1024,
            "rssPerMiB": peak_kb / 1024 / size_mib,
            "runs": runs,
        }
        if "importMs" in best:
            d["importMs"] = min(r["importMs"] for r in runs)
            d["otherMs"] = min(r["wallMs"] - r["coreMs"] for r in runs)  # boot, imports, output, exit
        base_kb = best.get("baseRssKB", best.get("maxRssAfterImportKB"))
        if base_kb is not None:
            d["baseRssMiB"] = base_kb / 1024
            d["deltaRssPerMiB"] = (peak_kb - base_kb) / 1024 / size_mib
        for k in ("loadMs", "treeMs", "projectMs", "openMs", "contextMs"):
            if k in best:
                d[k] = best[k]
        for k in ("entries", "contextMessages", "leafId", "lines"):
            if k in best:
                d[k] = best[k]
        s["methods"][m] = d
    ms = s["methods"]
    s["entries"] = ms.get("core", {}).get("entries", meta.get("lines", 1) - 1)
    s["contextMessages"] = ms.get("core", {}).get("contextMessages")
    ratios = s["ratios"]
    if "core" in ms:
        ratios["coreOverFloor"] = ms["core"]["timeMs"] / ms["floor"]["timeMs"]
    if "core" in ms and "pi" in ms:
        ratios["coreOverPi"] = ms["core"]["timeMs"] / ms["pi"]["timeMs"]
        for k in ("entries", "contextMessages", "leafId"):
            if ms["core"].get(k) != ms["pi"].get(k):
                s["checks"].append(f"{k}: sessiond {ms['core'].get(k)!r} != Pi {ms['pi'].get(k)!r}")
    if "cli" in ms and "pi" in ms:
        ratios["cliWallOverPiWall"] = ms["cli"]["wallMs"] / ms["pi"]["wallMs"]
    if "core" in ms and "pi" in ms:
        ratios["coreRssOverPiRss"] = ms["core"]["peakRssMiB"] / ms["pi"]["peakRssMiB"]
    return s


# --------------------------------------------------------------------------- output


def _fmt(v: Any, spec: str = ".0f") -> str:
    return "-" if v is None else format(v, spec)


def print_table(results: list[dict[str, Any]], runs: int, pi_note: str, cli_note: str | None) -> None:
    p = print
    p(
        f"\nsessiond inspect benchmark: cold process per run, best of {runs} "
        f"(time = best run; RSS = max over runs); {pi_note}"
    )
    if cli_note:
        p(cli_note)
    for s in results:
        p(
            f"\n{Path(s['file']).name}: {s['mib']:.1f} MiB, {s['entries']} entries, "
            f"{s['contextMessages']} context messages"
        )
        p(
            f"  {'method':<15} {'time ms':>9} {'imports ms':>10} {'wall ms':>9} {'peak RSS MiB':>12} "
            f"{'base RSS MiB':>12} {'RSS/MiB':>8} {'ΔRSS/MiB':>9}   detail"
        )
        for m in METHODS:
            d = s["methods"].get(m)
            if d is None:
                p(f"  {LABELS[m]:<15} {'(skipped)':>9}")
                continue
            if m == "core":
                detail = f"load {d['loadMs']:.0f} + tree {d['treeMs']:.0f} + project {d['projectMs']:.0f}"
            elif m == "pi":
                detail = f"open {d['openMs']:.0f} + context {d['contextMs']:.0f}"
            elif m == "cli":
                detail = "inspect --jsonl > /dev/null, whole process"
            else:
                detail = f"{d['lines']} lines"
            p(
                f"  {LABELS[m]:<15} {d['timeMs']:>9.0f} {_fmt(d.get('importMs')):>10} {d['wallMs']:>9.0f} "
                f"{d['peakRssMiB']:>12.1f} {_fmt(d.get('baseRssMiB'), '.1f'):>12} {d['rssPerMiB']:>8.2f} "
                f"{_fmt(d.get('deltaRssPerMiB'), '.2f'):>9}   {detail}"
            )
        for c in s["checks"]:
            p(f"  MISMATCH {c}")
    p("\nsummary (ratios < 1.00 = sessiond faster / smaller)")
    p(
        f"  {'MiB':>5} {'entries':>8} {'floor ms':>9} {'core ms':>8} {'Pi ms':>7} {'core/floor':>10} "
        f"{'core/Pi':>8} {'CLI wall/Pi wall':>16} {'core RSS/Pi RSS':>15} "
        f"{'core RSS/MiB':>12} {'Pi RSS/MiB':>10}"
    )
    for s in results:
        ms, r = s["methods"], s["ratios"]
        pi = ms.get("pi", {})
        p(
            f"  {s['mib']:>5.1f} {s['entries']:>8} "
            f"{ms['floor']['timeMs']:>9.0f} {ms['core']['timeMs']:>8.0f} "
            f"{_fmt(pi.get('timeMs')):>7} {r['coreOverFloor']:>9.2f}x {_fmt(r.get('coreOverPi'), '.2f'):>7}x "
            f"{_fmt(r.get('cliWallOverPiWall'), '.2f'):>15}x {_fmt(r.get('coreRssOverPiRss'), '.2f'):>14}x "
            f"{ms['core']['rssPerMiB']:>12.2f} {_fmt(pi.get('rssPerMiB'), '.2f'):>10}"
        )
    big = max(results, key=lambda s: s["mib"])
    if "coreOverPi" in big["ratios"]:
        ok = big["ratios"]["coreOverPi"] <= 1.0
        p(
            f"\ngoal (largest file, {big['mib']:.0f} MiB: sessiond load+context no slower than Pi): "
            f"{'MET' if ok else 'NOT MET'} (core/Pi = {big['ratios']['coreOverPi']:.2f}x)"
        )


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--sizes", default="1,10,50", help="session sizes in MiB, comma-separated (default 1,10,50)"
    )
    ap.add_argument(
        "--runs", type=int, default=3, help="fresh-process runs per method and size; best is kept (default 3)"
    )
    ap.add_argument("--seed", type=int, default=1, help="generator seed (default 1)")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="also cProfile sessiond's core step on the largest file (top 10 functions)",
    )
    ap.add_argument("--generate-only", action="store_true", help="only generate the session files")


def run(args: argparse.Namespace) -> dict[str, Any] | None:
    sizes = [1.0, 10.0] if args.quick else [float(x) for x in args.sizes.split(",") if x.strip()]
    runs = 1 if args.quick else max(1, args.runs)

    files = [ensure_session(Path(args.out), size, args.seed, log) for size in sizes]
    if args.generate_only:
        for path, meta in files:
            print(f"{path}  {meta['bytes'] / MIB:.1f} MiB  {meta['lines']} lines")
        return None

    pi_pkg, pi_note = find_oracle(args.oracle)
    node = shutil.which("node")
    if pi_pkg and not node:
        pi_pkg, pi_note = None, "node not found on PATH: Pi column skipped"
    elif not pi_pkg:
        pi_note += ": Pi column skipped"
    cli = find_cli()
    cli_note = None if cli else "sessiond executable not found next to this Python: CLI row skipped"
    log(pi_note)

    results = []
    for path, meta in files:
        log(f"{path.name}:")
        raw = measure(path, runs, pi_pkg, node, cli, log)
        results.append(summarize(path, meta, raw))

    log("start-up: sessiond --help against python -c pass ...")
    started = startup.measure(max(3, runs))

    profile_text = None
    if args.profile:
        big = max(files, key=lambda f: f[1]["bytes"])[0]
        log(f"profiling sessiond core on {big.name} ...")
        proc = subprocess.run(
            [sys.executable, "-c", PROFILE_CHILD, str(big), "10"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        profile_text = proc.stdout

    return {
        "python": sys.version.split()[0],
        "runs": runs,
        "seed": args.seed,
        "pi": pi_note,
        "cli": cli_note,
        "results": results,
        "startup": started,
        "profile": profile_text,
    }


def report(res: dict[str, Any]) -> None:
    print_table(res["results"], res["runs"], res["pi"], res.get("cli"))
    if res.get("startup"):
        st = res["startup"]
        print(
            f"\nstart-up: sessiond --help {st['helpWall']['bestMs']:.0f} ms wall (python -c pass "
            f"{st['bareWall']['bestMs']:.0f} ms); imports {st['helpImports']['bestMs']:.1f} ms "
            f"(import argparse, json {st['argparseImports']['bestMs']:.1f} ms)"
        )
    if res.get("profile"):
        print("\ncProfile of sessiond core (load + tree + project) on the largest file:")
        print(res["profile"])


def extract(d: dict[str, Any]) -> Extract:
    """Load + context against the orjson floor and Pi; the goal on the largest file."""
    e = Extract(notes=[d["pi"]])
    results = d["results"]
    largest = max(results, key=lambda r: r["bytes"]) if results else None
    for r in results:
        m, size = r["methods"], f"{r['mib']:.0f} MiB"
        core = m["core"]
        e.add(f"load + context, {size}", core["timeMs"], "ms", "bare orjson line scan", m["floor"]["timeMs"])
        if "pi" in m:
            pi = m["pi"]
            goal = G_INSPECT if r is largest else None
            e.add(
                f"load + context, {size}",
                core["timeMs"],
                "ms",
                "Pi SessionManager.open + context",
                pi["timeMs"],
                goal,
            )
            e.add(f"peak RSS, {size}", core["peakRssMiB"], "MiB", "Pi (node process)", pi["peakRssMiB"])
            if "cli" in m:
                e.add(
                    f"`sessiond inspect` process, {size}",
                    m["cli"]["wallMs"],
                    "ms",
                    "Pi load process",
                    pi["wallMs"],
                )
        else:
            e.add(
                f"peak RSS, {size}",
                core["peakRssMiB"],
                "MiB",
                "bare orjson line scan",
                m["floor"]["peakRssMiB"],
            )
        e.mismatches += [f"{size}: {c}" for c in r.get("checks", [])]
    if not any(row.goal for row in e.rows):
        e.unmeasured[G_INSPECT.key] = f"needs Pi ({d['pi']})"
    st = d.get("startup")
    if st:
        wall, bare = st["helpWall"]["bestMs"], st["bareWall"]["bestMs"]
        e.add("`sessiond --help` process", wall, "ms", "`python -c pass` process", bare)
        e.add(
            "`sessiond --help` Python imports",
            st["helpImports"]["bestMs"],
            "ms",
            "`import argparse, json`",
            st["argparseImports"]["bestMs"],
            G_HELP,
        )
    else:
        e.unmeasured[G_HELP.key] = "not measured in this run"
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
