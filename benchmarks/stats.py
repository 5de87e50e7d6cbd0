"""Usage reports (``sessiond stats daily``) over a generated corpus, beside ccusage on the same files.

Rows:

* ``cold`` - ``sessiond stats daily --json`` in a fresh process on a fresh store: the first
  build (every transcript read into ``usage.sqlite3``) and the report. Reference: ccusage
  20.0.24 (``scripts/setup-ccusage``), ``ccusage claude daily --offline --json``, on the same
  files (it re-reads every file on each run). Both whole processes, wall time.
* ``warm`` - the same command again (nothing changed): the process, and the report itself
  measured in-process (``report.run`` over the existing records, after the unchanged-file
  check). Reference: ccusage again.
* ``append`` - CPU (user + system of this process) to reflect one appended response: one
  assistant line appended to a transcript, then ``UsageIndex.update_path`` (stat, read the new
  bytes, parse, upsert, commit), averaged over ``--appends``.
* ``append, handed over`` - the same with the line handed to ``UsageIndex.feed`` as the daemon
  does when an open session's ingest read it or the daemon wrote it (stat, parse, upsert,
  commit: the file is not read).

The corpus (``benchmarks/out/stats-<N>mb/claude/projects``, cached) repeats the Claude Code
fixtures' transcripts with unique message ids, one session per copy, dates spread over a year.
The goals (issue 27): cold <= 1x ccusage's time, warm <= 50 ms, an appended response reflected
with <= 1 ms CPU.

Run: ``.venv/bin/python -m benchmarks.stats [--size-mb 1024] [--appends 200] [--quick] [--json]``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import FIXTURES, MIB, REPO, Bench, Extract, Goal, log, main
from sessiond.service.config import load_config
from sessiond.service.usage import open_index
from sessiond.usage.index import Source, UsageIndex
from sessiond.usage.prices import PriceBook
from sessiond.usage.report import Query
from sessiond.usage.report import run as report_run

GOALS = (
    Goal("stats-cold", 27, "cold (first build) <= 1x ccusage's time", "<=", 1.0, on="ratio"),
    Goal("stats-warm", 27, "warm report <= 50 ms", "<=", 50.0, unit="ms"),
    Goal("stats-append", 27, "an appended response reflected with <= 1 ms CPU", "<=", 1.0, unit="ms"),
)
BENCH = Bench(
    "stats",
    "benchmarks.stats",
    "Usage reports: cold and warm daily report, CPU per appended response",
    "ccusage 20.0.24 (`claude daily --offline --json`) on the same files",
    {
        "smoke": ("--size-mb", "5", "--appends", "20"),
        "quick": ("--quick",),
        "full": (),
    },
    goals=GOALS,
    quick="a 100 MiB corpus, 50 appends",
)
CCUSAGE = REPO / ".cache" / "ccusage" / "node_modules" / "ccusage" / "src" / "cli.js"
SOURCES = sorted((FIXTURES / "claude-code").glob("*/*.jsonl"))
MSG_ID = re.compile(rb'"id":"msg_')
DAY = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\d)')


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--size-mb", type=int, default=1024, help="corpus size in MiB (1024)")
    ap.add_argument("--appends", type=int, default=200, help="appended responses timed (200)")


def make_corpus(out: Path, size_mb: int) -> Path:
    """Claude Code projects of about ``size_mb`` MiB (cached): fixture transcripts, copied with
    unique message ids and their days moved, one session per copy."""
    home = out / f"stats-{size_mb}mb" / "claude"
    projects = home / "projects"
    done = home / ".complete"
    if done.exists():
        return home
    shutil.rmtree(home, ignore_errors=True)
    projects.mkdir(parents=True)
    sources = [(p, p.read_bytes()) for p in SOURCES if not p.name.startswith("agent-")]
    written, copy = 0, 0
    base = dt.date(2025, 12, 1)
    while written < size_mb * MIB:
        for path, data in sources:
            copy += 1
            shift = dt.timedelta(days=copy % 365)

            def moved(m: re.Match[bytes], shift: dt.timedelta = shift) -> bytes:
                day = (base + shift).isoformat().encode()
                return b'"timestamp":"' + day

            body = MSG_ID.sub(b'"id":"msg_%d_' % copy, data)
            body = DAY.sub(moved, body)
            project = projects / f"-work-project-{copy % 40}"
            project.mkdir(exist_ok=True)
            target = project / f"{path.stem[:-8]}{copy:08d}.jsonl"
            target.write_bytes(body)
            written += len(body)
            if written >= size_mb * MIB:
                break
    done.write_text(str(written))
    return home


def _env(home: Path, store: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(home),
        "SESSIOND_HOME": str(store),
        "CODEX_HOME": str(store / "no-codex"),
        "PI_CODING_AGENT_DIR": str(store / "no-pi"),
        "XDG_DATA_HOME": str(store / "no-data"),
        "TZ": "UTC",
        "NO_COLOR": "1",
    }


CPU: dict[tuple[str, ...], float] = {}
"""CPU seconds (user + system, the process and the workers it waited for) of each command run."""


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, Any]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[tuple(argv)] = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, json.loads(done.stdout)


def _cpu_of_last() -> float:
    return list(CPU.values())[-1]


def _ours(env: dict[str, str]) -> tuple[float, Any]:
    cmd = [sys.executable, "-m", "sessiond", "stats", "daily", "--json", "--timezone", "UTC"]
    return _timed(cmd, env)


def _theirs(env: dict[str, str]) -> tuple[float, Any] | None:
    if not CCUSAGE.is_file() or shutil.which("node") is None:
        return None
    return _timed(["node", str(CCUSAGE), "claude", "daily", "--offline", "--json", "-z", "UTC"], env)


def run(args: argparse.Namespace) -> dict[str, Any]:
    size = 100 if args.quick and args.size_mb == 1024 else args.size_mb
    appends = 50 if args.quick and args.appends == 200 else args.appends
    t0 = time.perf_counter()
    home = make_corpus(args.out, size)
    corpus_bytes = sum(p.stat().st_size for p in (home / "projects").rglob("*.jsonl"))
    store = args.out / f"stats-{size}mb-store"
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    env = _env(home, store)
    log(f"stats: corpus {corpus_bytes / MIB:.0f} MiB; ccusage (cold)")
    theirs = _theirs(env)
    theirs_cpu = _cpu_of_last() if theirs else None
    log("stats: sessiond cold")
    cold_s, ours = _ours(env)
    cold_cpu = _cpu_of_last()
    log("stats: sessiond warm")
    warm_s, ours_again = _ours(env)
    warm_cpu = _cpu_of_last()
    theirs_warm = _theirs(env)
    theirs_warm_cpu = _cpu_of_last() if theirs_warm else None
    equal = None
    if theirs is not None:
        mine = {r["period"]: r["totalTokens"] for r in ours["rows"]}
        their = {d["date"]: d["totalTokens"] for d in theirs[1]["daily"]}
        equal = mine == their
    report_ms = _in_process_report(store, env)
    append_ms = _append_cpu(store, home, appends)
    fed_ms = _append_cpu(store, home, appends, fed=True)
    return {
        "corpusBytes": corpus_bytes,
        "files": sum(1 for _ in (home / "projects").rglob("*.jsonl")),
        "records": ours["totals"]["totalTokens"],
        "coldSeconds": cold_s,
        "coldCpuSeconds": cold_cpu,
        "warmSeconds": warm_s,
        "warmCpuSeconds": warm_cpu,
        "ccusageColdCpuSeconds": theirs_cpu,
        "ccusageWarmCpuSeconds": theirs_warm_cpu,
        "warmReportMs": report_ms,
        "ccusageColdSeconds": theirs[0] if theirs else None,
        "ccusageWarmSeconds": theirs_warm[0] if theirs_warm else None,
        "sameDailyTotals": equal,
        "sameAsBefore": ours_again["totals"] == ours["totals"],
        "appendCpuMs": append_ms,
        "fedCpuMs": fed_ms,
        "appends": appends,
        "totalSeconds": time.perf_counter() - t0,
    }


def _in_process_report(store: Path, env: dict[str, str]) -> float:
    """The warm report in this process: open, check every file unchanged, query (best of 5)."""

    config = load_config(env, root=store)
    best = float("inf")
    index = open_index(config)
    try:
        for _ in range(5):
            start = time.perf_counter()
            report_run(index, Query("daily", timezone="UTC"))
            best = min(best, time.perf_counter() - start)
    finally:
        index.close()
    return best * 1e3


def _append_cpu(store: Path, home: Path, appends: int, *, fed: bool = False) -> float:
    """CPU of ``update_path`` after each appended response, on a copy of one transcript of the
    corpus in its own root and records file (the cached corpus is never written); ``fed``:
    of ``feed`` with the line written instead (nothing read from the file)."""

    source = next((home / "projects").rglob("*.jsonl"))
    root = store / ("fed-root" if fed else "append-root")
    (root / "p").mkdir(parents=True, exist_ok=True)
    target = root / "p" / source.name
    shutil.copyfile(source, target)
    records = store / ("fed.sqlite3" if fed else "append.sqlite3")
    index = UsageIndex(records, [Source("claude", "claude-code", root)], PriceBook())
    line = {
        "type": "assistant",
        "sessionId": target.stem,
        "timestamp": "2026-06-01T12:00:00.000Z",
        "message": {
            "model": "claude-sonnet-4-5",
            "role": "assistant",
            "content": [{"type": "text", "text": "ok " * 40}],
            "usage": {"input_tokens": 3, "output_tokens": 200, "cache_read_input_tokens": 50_000},
        },
    }
    try:
        index.refresh()
        total = 0.0
        for n in range(appends):
            line["message"]["id"] = f"msg_bench_append_{time.time_ns()}_{n}"  # type: ignore[index]
            data = json.dumps(line).encode() + b"\n"
            with open(target, "ab") as f:
                start = f.tell()
                f.write(data)
            before = time.process_time()
            changed = index.feed(target, [(start, data)]) if fed else index.update_path(target)
            total += time.process_time() - before
            assert changed, "the appended response was not read"
    finally:
        index.close()
    return total / appends * 1e3


def report(d: dict[str, Any]) -> None:
    print(f"corpus: {d['corpusBytes'] / MIB:.0f} MiB in {d['files']} Claude Code transcripts")

    def secs(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}s"

    rows = [
        ("cold (first build) + daily", d["coldSeconds"], d["ccusageColdSeconds"]),
        ("warm daily (process)", d["warmSeconds"], d["ccusageWarmSeconds"]),
        ("cold, CPU (user + system)", d["coldCpuSeconds"], d["ccusageColdCpuSeconds"]),
        ("warm, CPU (user + system)", d["warmCpuSeconds"], d["ccusageWarmCpuSeconds"]),
    ]
    print(f"{'':32} {'sessiond':>10} {'ccusage':>10}")
    for name, ours, theirs in rows:
        print(f"{name:32} {secs(ours):>10} {secs(theirs):>10}")
    print(f"{'warm daily (report, in-process)':32} {d['warmReportMs']:>8.1f}ms")
    print(f"CPU to reflect one appended response: {d['appendCpuMs']:.3f} ms (mean of {d['appends']})")
    print(f"  handed over (UsageIndex.feed, not read): {d['fedCpuMs']:.3f} ms")
    print(f"same daily totals as ccusage: {d['sameDailyTotals']}; warm == cold: {d['sameAsBefore']}")


def extract(d: dict[str, Any]) -> Extract:
    size = f"{d['corpusBytes'] / MIB:.0f} MiB"
    e = Extract()
    e.add(
        f"daily report cold (first build), {size}",
        d["coldSeconds"] * 1e3,
        "ms",
        "ccusage, same files",
        None if d["ccusageColdSeconds"] is None else d["ccusageColdSeconds"] * 1e3,
        GOALS[0],
    )
    e.add(
        f"daily report warm (process), {size}",
        d["warmSeconds"] * 1e3,
        "ms",
        "ccusage, same files",
        None if d["ccusageWarmSeconds"] is None else d["ccusageWarmSeconds"] * 1e3,
    )
    e.add(
        f"daily report cold, CPU, {size}",
        d["coldCpuSeconds"] * 1e3,
        "ms",
        "ccusage, same files",
        None if d["ccusageColdCpuSeconds"] is None else d["ccusageColdCpuSeconds"] * 1e3,
    )
    e.add(f"daily report warm (in-process), {size}", d["warmReportMs"], "ms", goal=GOALS[1])
    e.add("CPU to reflect one appended response", d["appendCpuMs"], "ms", goal=GOALS[2])
    e.add("CPU to reflect one appended response, handed over", d["fedCpuMs"], "ms")
    if d["sameDailyTotals"] is False:
        e.mismatches.append("sessiond's daily totals differ from ccusage's on the corpus")
    if d["ccusageColdSeconds"] is None:
        e.unmeasured["stats-cold"] = "ccusage is not installed (scripts/setup-ccusage)"
    return e


if __name__ == "__main__":
    raise SystemExit(main(sys.modules[__name__]))
